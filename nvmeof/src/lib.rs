//! NVMe over Fabrics control for the DPU agent.
//!
//! This crate owns everything NVMe-oF: the NVIDIA SNAP / SPDK JSON-RPC client (through
//! `dpu-jsonrpc`), the Linux nvmet configfs target, the nvme-fabrics initiator and I/O
//! statistics, plus the validation of NQNs and transport addresses that all of them share. It must not touch OVS, netlink or gRPC/proto types: the agent maps between
//! the API and these types, so this crate stays usable and testable on its own.
//!
//! - [`nqn`]: validated NVMe Qualified Names.
//! - [`address`]: `traddr`/`trsvcid` validation.
//! - [`kernel`]: the Linux kernel backend, an nvmet target through configfs and an
//!   nvme-fabrics initiator through `/dev/nvme-fabrics` and sysfs.
//! - [`snap`]: the SNAP/SPDK JSON-RPC client, dialect detection, typed SNAP 4 / SNAP 3 / SPDK
//!   bdev operations and [`NvmeEmulation`], one interface over both SNAP dialects.

pub mod address;
pub mod kernel;
pub mod nqn;
pub mod snap;

pub use address::{validate_traddr, validate_trsvcid, AddressError, AddressFamily};
pub use nqn::{Nqn, NqnError};
pub use snap::{
    NvmeEmulation, SnapClient, SnapDialect, SnapError, SnapErrorKind, SpdkVersion,
    DEFAULT_SNAP_SOCKET,
};
