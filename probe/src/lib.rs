//! Read-only views of the local machine, shared by the agent (on the DPU Arm) and `dpuctl`
//! (on the host): procfs system facts, network devices and RDMA devices from sysfs, and
//! later PCI discovery, netlink stats, block stats and the counter snapshot model.
//!
//! Owns: reading `/sys`, `/proc` (and `/etc/os-release`) under an injectable root, so tests
//! and field engineers can point it at a fixture tree or a mounted image. Must not touch:
//! anything that writes to the machine, gRPC types, or daemons (SNAP, OVS).

pub mod block;
pub mod capture;
mod counter_file;
pub mod counters;
pub mod dcb;
pub mod disk_identity;
mod error;
pub mod ethtool_netlink;
pub mod ethtool_stats;
#[cfg(feature = "wire")]
pub mod fabric_wire;
pub mod fw_config;
pub mod gdr_env;
pub mod netdev;
pub mod netdev_stats;
pub mod netlink;
pub mod pci;
pub mod rdma;
mod root;
pub mod snapshot;
#[cfg(feature = "wire")]
pub mod snapshot_wire;
pub mod system;
#[cfg(any(test, feature = "testing"))]
pub mod testing;
pub mod virtualization;

pub use error::{error_chain, ProbeError};
pub use root::SysRoot;
