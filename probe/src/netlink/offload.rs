//! Offload xstats from `RTM_GETSTATS`: `IFLA_OFFLOAD_XSTATS_CPU_HIT`, the packets a
//! switchdev representor handled in software (on the Arm CPU) rather than in the eswitch.
//!
//! Link stats on a representor count hardware and software traffic together; `cpu_hit`
//! counts only the software path. Their difference is the offload proof's main signal
//! (reference: ovs-netlink.md §3.2, iproute2 `ip-stats(8)`).

use netlink_packet_route::stats::{OffloadXstat, StatsAttribute, StatsFilterMask, StatsMessage};

use super::link::LinkCounters;

/// One device's offload xstats.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OffloadStats {
    /// Kernel interface index; `RTM_NEWSTATS` carries no name, join with
    /// [`LinkStats::ifindex`](super::LinkStats::ifindex).
    pub ifindex: u32,
    /// The software-path counters (`rtnl_link_stats64` layout, rx/tx packets and bytes
    /// filled by the driver). `None` when the device does not report `CPU_HIT`, which is
    /// the normal answer for everything that is not a switchdev representor (veth, lo,
    /// virtio): "not supported", not an error and not zero.
    pub cpu_hit: Option<LinkCounters>,
}

impl OffloadStats {
    /// Whether the device reports a software-path count at all.
    pub fn is_supported(&self) -> bool {
        self.cpu_hit.is_some()
    }
}

/// The `RTM_GETSTATS` dump request for offload xstats of every device. A dump (ifindex 0)
/// is what strict-checking kernels require; one answer per device comes back.
pub(crate) fn offload_request() -> StatsMessage {
    let mut message = StatsMessage::default();
    message.header.ifindex = 0;
    message.header.filter_mask = StatsFilterMask::LinkOffloadXstats;
    message
}

/// Decodes one `RTM_NEWSTATS` answer. A device without `ndo_has_offload_stats` gets no
/// `IFLA_STATS_LINK_OFFLOAD_XSTATS` nest, or one holding only `HW_S_INFO` (Linux 5.18+):
/// both mean "not supported".
pub(crate) fn offload_from_message(message: &StatsMessage) -> OffloadStats {
    let cpu_hit = message
        .attributes
        .iter()
        .find_map(|attribute| match attribute {
            StatsAttribute::LinkOffloadXstats(xstats) => xstats.iter().find_map(|x| match x {
                OffloadXstat::CpuHit(stats) => Some(LinkCounters::from_stats64(stats)),
                _ => None,
            }),
            _ => None,
        });
    OffloadStats {
        ifindex: message.header.ifindex,
        cpu_hit,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use netlink_packet_route::link::Stats64;
    use netlink_packet_route::stats::HwStatsInfo;
    use netlink_packet_route::RouteNetlinkMessage;

    fn round_trip(message: StatsMessage) -> StatsMessage {
        match super::super::tests::wire::round_trip(RouteNetlinkMessage::NewStats(message)) {
            RouteNetlinkMessage::NewStats(m) => m,
            other => panic!("unexpected {other:?}"),
        }
    }

    fn answer(ifindex: u32, attributes: Vec<StatsAttribute>) -> StatsMessage {
        let mut m = StatsMessage::default();
        m.header.ifindex = ifindex;
        m.header.filter_mask = StatsFilterMask::LinkOffloadXstats;
        m.attributes = attributes;
        m
    }

    #[test]
    fn the_request_asks_for_offload_xstats_of_all_devices() {
        let request = offload_request();
        assert_eq!(request.header.ifindex, 0);
        assert_eq!(
            request.header.filter_mask.bits(),
            1 << 3,
            "IFLA_STATS_FILTER_BIT(4)"
        );
        assert!(request.attributes.is_empty());
    }

    #[test]
    fn cpu_hit_of_a_representor_is_read() {
        let mut hit = Stats64::default();
        hit.rx_packets = 3;
        hit.tx_packets = 2;
        hit.rx_bytes = 300;
        hit.tx_bytes = 200;
        let m = round_trip(answer(
            9,
            vec![StatsAttribute::LinkOffloadXstats(vec![
                OffloadXstat::CpuHit(hit),
            ])],
        ));
        let stats = offload_from_message(&m);
        assert_eq!(stats.ifindex, 9);
        assert!(stats.is_supported());
        let c = stats.cpu_hit.expect("cpu_hit");
        assert_eq!(
            (c.rx_packets, c.tx_packets, c.rx_bytes, c.tx_bytes),
            (3, 2, 300, 200)
        );
        assert_eq!(c.width_bits, 64);
    }

    #[test]
    fn a_device_without_cpu_hit_is_unsupported_not_zero() {
        let bare = offload_from_message(&round_trip(answer(2, Vec::new())));
        assert_eq!(bare.cpu_hit, None);
        assert!(!bare.is_supported());

        let mut info = HwStatsInfo::default();
        info.request = Some(0);
        info.used = Some(0);
        let hw_info_only = round_trip(answer(
            3,
            vec![StatsAttribute::LinkOffloadXstats(vec![
                OffloadXstat::HwStatsInfo(info),
            ])],
        ));
        assert!(!offload_from_message(&hw_info_only).is_supported());
    }
}
