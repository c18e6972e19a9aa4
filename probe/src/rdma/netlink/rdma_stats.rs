//! [`RdmaStats`]: what the snapshot engine needs from RDMA netlink, as a trait so tests
//! substitute canned answers (as [`RouteStats`](crate::netlink::RouteStats) does for the
//! route socket); [`RdmaNetlink`] is the real one.

use super::devices::RdmaDevice;
use super::error::RdmaNetlinkError;
use super::handle::RdmaNetlink;
use super::hw_counters::PortHwCounters;

/// Device list and port hardware counters.
pub trait RdmaStats {
    /// Every RDMA device visible: kernel index, name, port count.
    fn devices(&mut self) -> Result<Vec<RdmaDevice>, RdmaNetlinkError>;

    /// The hardware counters of one port, checked to be about `dev_index` and `port`.
    fn port_hw_counters(
        &mut self,
        dev_index: u32,
        port: u32,
    ) -> Result<PortHwCounters, RdmaNetlinkError>;
}

impl RdmaStats for RdmaNetlink {
    fn devices(&mut self) -> Result<Vec<RdmaDevice>, RdmaNetlinkError> {
        RdmaNetlink::devices(self).execute()
    }

    fn port_hw_counters(
        &mut self,
        dev_index: u32,
        port: u32,
    ) -> Result<PortHwCounters, RdmaNetlinkError> {
        RdmaNetlink::port_hw_counters(self, dev_index, port).execute()
    }
}
