//! RDMA devices, ports and GID tables from `/sys/class/infiniband`
//! (formats: `docs/reference/rdma-bluefield.md` §1.1 and §1.4).

pub mod counters;
mod devices;
mod gid;
pub mod ib;
pub mod netlink;

pub use devices::{list_rdma_devices, read_rdma_device, GidEntry, RdmaDeviceInfo, RdmaPortInfo};
pub use gid::{
    find_roce_v2_ipv4_gid, gid_candidates, perftest_default_gid_index, GidCandidate, GidType,
};

/// The RoCE path MTU implied by a netdev MTU: subtract the 96 bytes of RoCE headers, then
/// round down to an IB MTU (kernel `iboe_get_mtu`). 1500 -> 1024, 9000 -> 4096.
pub fn roce_path_mtu(netdev_mtu: u32) -> Option<u32> {
    let payload = netdev_mtu.checked_sub(96)?;
    [4096, 2048, 1024, 512, 256]
        .into_iter()
        .find(|&mtu| payload >= mtu)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn path_mtu_follows_the_kernel_rule() {
        assert_eq!(roce_path_mtu(1500), Some(1024));
        assert_eq!(roce_path_mtu(4200), Some(4096));
        assert_eq!(roce_path_mtu(9000), Some(4096));
        assert_eq!(roce_path_mtu(64), None);
    }
}
