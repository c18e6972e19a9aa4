//! RDMA netlink (`NETLINK_RDMA`, the `RDMA_NL_NLDEV` client that `rdma` of iproute2
//! speaks): the device list and each port's hardware counters in one request per port,
//! where sysfs needs one file per counter (a switchdev BlueField has thousands).
//!
//! Owns: the request encoding and answer decoding (on netlink-packet-core, framed and
//! error-checked by the reply reader shared with the route socket), one blocking socket
//! kept open across requests ([`RdmaNetlink`], `handle → request → execute()`), and the
//! sampler's per-port choice between netlink and sysfs (`HwCounterReader`). Must not:
//! change anything in the kernel (no `STAT_SET`, no counter binding), or read the IB PMA
//! `counters/`, which RDMA netlink does not carry.
//!
//! The kernel facts this relies on, with their sources, are in docs/counters.md, "RDMA
//! hardware counters over netlink".

mod abi;
mod decode;
mod devices;
mod error;
#[cfg(test)]
mod fake;
mod handle;
mod hw_counters;
mod hw_reader;
mod message;
mod rdma_stats;

pub use devices::{DevicesRequest, RdmaDevice};
pub use error::RdmaNetlinkError;
pub use handle::RdmaNetlink;
pub use hw_counters::{PortHwCounters, PortHwCountersRequest};
pub(crate) use hw_reader::HwCounterReader;
pub use rdma_stats::RdmaStats;

#[cfg(test)]
mod tests;
