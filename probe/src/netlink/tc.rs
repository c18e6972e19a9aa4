//! tc filters and their per-action statistics: where OVS puts offloaded flows (flower on
//! the ingress of each representor) and where the proof reads software versus hardware
//! packet counts.

use std::fmt;
use std::time::Duration;

use netlink_packet_route::tc::{TcHandle, TcMessage};

/// Which filter list of a device to dump.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TcParent {
    /// The ingress hook, `ffff:fff2` (`TC_H_MAKE(TC_H_CLSACT, TC_H_MIN_INGRESS)`): what
    /// `tc filter show dev X ingress` and OVS (`TC_INGRESS_PARENT`) use. It works for both
    /// the `clsact` and the legacy `ingress` qdisc. The qdisc's own handle `ffff:fff1`
    /// does not: `clsact` answers a dump with that parent with nothing at all.
    Ingress,
    /// The egress hook of `clsact`, `ffff:fff3`.
    Egress,
    /// Any other parent (a classful qdisc's class), raw `major << 16 | minor`.
    Handle(u32),
}

impl TcParent {
    /// The raw `tcm_parent` of [`TcParent::Ingress`].
    pub const INGRESS_RAW: u32 = 0xFFFF_FFF2;
    /// The raw `tcm_parent` of [`TcParent::Egress`].
    pub const EGRESS_RAW: u32 = 0xFFFF_FFF3;

    /// The raw `tcm_parent` value sent to the kernel.
    pub fn raw(self) -> u32 {
        match self {
            Self::Ingress => Self::INGRESS_RAW,
            Self::Egress => Self::EGRESS_RAW,
            Self::Handle(raw) => raw,
        }
    }

    /// The parent a raw value denotes; the hook values map back to their names.
    pub fn from_raw(raw: u32) -> Self {
        match raw {
            Self::INGRESS_RAW => Self::Ingress,
            Self::EGRESS_RAW => Self::Egress,
            other => Self::Handle(other),
        }
    }

    /// The path segment used in counter object names: `ingress`, `egress`, or the raw
    /// value as 8 hex digits (a `:` would be awkward in resource names).
    pub fn segment(self) -> String {
        match self {
            Self::Ingress => "ingress".to_owned(),
            Self::Egress => "egress".to_owned(),
            Self::Handle(raw) => format!("{raw:08x}"),
        }
    }
}

impl fmt::Display for TcParent {
    /// tc's own notation, `ffff:fff2`, so messages can be pasted into `tc` commands.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let raw = self.raw();
        write!(f, "{:x}:{:x}", raw >> 16, raw & 0xffff)
    }
}

/// `TCA_CLS_FLAGS_*` of a filter (flower `TCA_FLOWER_FLAGS`, u32 `TCA_U32_FLAGS`, matchall,
/// bpf): what the user asked for (`skip_hw`, `skip_sw`) and what the driver did (`in_hw`,
/// `not_in_hw`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct TcFilterFlags {
    /// The raw bits.
    pub bits: u32,
}

impl TcFilterFlags {
    /// `TCA_CLS_FLAGS_SKIP_HW`.
    pub const SKIP_HW: u32 = 1 << 0;
    /// `TCA_CLS_FLAGS_SKIP_SW`.
    pub const SKIP_SW: u32 = 1 << 1;
    /// `TCA_CLS_FLAGS_IN_HW`.
    pub const IN_HW: u32 = 1 << 2;
    /// `TCA_CLS_FLAGS_NOT_IN_HW`.
    pub const NOT_IN_HW: u32 = 1 << 3;

    /// The filter must not be offloaded (OVS `tc-policy=skip_hw`).
    pub fn skip_hw(self) -> bool {
        self.bits & Self::SKIP_HW != 0
    }

    /// The filter exists only in hardware (OVS `tc-policy=skip_sw`).
    pub fn skip_sw(self) -> bool {
        self.bits & Self::SKIP_SW != 0
    }

    /// At least one driver accepted the filter. Not proof of hardware forwarding: mlx5
    /// keeps encap flows `in_hw` while pointing them at the slow path.
    pub fn in_hw(self) -> bool {
        self.bits & Self::IN_HW != 0
    }

    /// No driver holds the filter: every packet it matches is handled by the CPU.
    pub fn not_in_hw(self) -> bool {
        self.bits & Self::NOT_IN_HW != 0
    }
}

/// Byte and packet counts of one `TCA_STATS_BASIC` or `TCA_STATS_BASIC_HW` attribute.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct TcCounts {
    /// Bytes, without the Ethernet header (tc counts `skb->len` after the MAC header).
    pub bytes: u64,
    /// Packets: from the following `TCA_STATS_PKT64` when the kernel sent one, otherwise
    /// the 32-bit field of `gnet_stats_basic`.
    pub packets: u64,
    /// 64 when the packet count came from `TCA_STATS_PKT64`, else 32: older kernels wrap
    /// the 32-bit field, newer ones clamp it and add PKT64 past 2^32.
    pub packets_width: u32,
}

/// Statistics of one action.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TcActionStats {
    /// `TCA_STATS_BASIC`: software and hardware together.
    pub total: TcCounts,
    /// `TCA_STATS_BASIC_HW`: the hardware share of `total`; `None` when the kernel did not
    /// report it (then nothing can be said about the split).
    pub hw: Option<TcCounts>,
    /// `TCA_STATS_QUEUE` drops.
    pub drops: Option<u32>,
    /// `TCA_STATS_QUEUE` overlimits (police exceed, mirred to a down device).
    pub overlimits: Option<u32>,
}

impl TcActionStats {
    /// What the software path counted: `total - hw` (iproute2's `Sent software` line).
    pub fn software(&self) -> TcCounts {
        let hw = self.hw.unwrap_or_default();
        TcCounts {
            bytes: self.total.bytes.saturating_sub(hw.bytes),
            packets: self.total.packets.saturating_sub(hw.packets),
            packets_width: self.total.packets_width,
        }
    }
}

/// `struct tcf_t` of an action, converted from `USER_HZ` ticks: ages, not timestamps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TcActionTimes {
    /// Time since the action was installed.
    pub installed_ago: Duration,
    /// Time since a packet last used it (software or, with delayed hw stats, hardware).
    pub last_used_ago: Duration,
    /// Time since the first packet used it; `None` when never used.
    pub first_used_ago: Option<Duration>,
}

/// One action of a filter.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TcFilterAction {
    /// 1-based position in the filter's action list (`action order N`).
    pub order: u16,
    /// Action kind ("gact", "mirred", "tunnel_key", "ct", ...).
    pub kind: String,
    /// Kernel action index (per kind, so two actions of one filter may share it).
    pub index: Option<u32>,
    /// `TCA_ACT_COOKIE`: OVS stores the flow's ufid here, which joins a tc filter to a
    /// datapath flow.
    pub cookie: Option<Vec<u8>>,
    /// `TCA_ACT_IN_HW_COUNT`, for actions offloaded on their own.
    pub in_hw_count: Option<u32>,
    /// Counters; `None` when the kernel sent no `TCA_STATS_BASIC`.
    pub stats: Option<TcActionStats>,
    /// Install and use times, for the kinds whose `*_TM` attribute is known.
    pub times: Option<TcActionTimes>,
}

impl TcFilterAction {
    /// The cookie as lowercase hex, the way `tc` prints it and OVS logs ufids.
    pub fn cookie_hex(&self) -> Option<String> {
        self.cookie
            .as_ref()
            .map(|bytes| bytes.iter().map(|b| format!("{b:02x}")).collect())
    }
}

/// One filter of a device's filter list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TcFilter {
    /// The device.
    pub ifindex: u32,
    /// The parent it hangs from.
    pub parent: TcParent,
    /// Classifier kind ("flower", "u32", "matchall", "bpf").
    pub kind: String,
    /// Priority (`pref`), the high half of `tcm_info`.
    pub prio: u16,
    /// Ethertype in host order (0x0800 for IPv4, 0x0003 for all).
    pub protocol: u16,
    /// Filter handle (`tcm_handle`). 0 for the per-priority header entry that precedes a
    /// classifier's filters in a dump.
    pub handle: u32,
    /// Chain (`TCA_CHAIN`); OVS uses chains for recirculation.
    pub chain: u32,
    /// Offload flags; `None` when the classifier reported none.
    pub flags: Option<TcFilterFlags>,
    /// `TCA_FLOWER_IN_HW_COUNT`: how many drivers hold the filter.
    pub in_hw_count: Option<u32>,
    /// The actions, in order.
    pub actions: Vec<TcFilterAction>,
}

/// The dump request for the filters of one device under one parent, every chain.
pub(crate) fn filter_request(ifindex: i32, parent: TcParent) -> TcMessage {
    let mut message = TcMessage::with_index(ifindex);
    message.header.parent = TcHandle::from(parent.raw());
    message
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parents_round_trip_and_print_like_tc() {
        assert_eq!(TcParent::Ingress.raw(), 0xffff_fff2);
        assert_eq!(TcParent::from_raw(0xffff_fff3), TcParent::Egress);
        assert_eq!(
            TcParent::from_raw(0xffff_0000),
            TcParent::Handle(0xffff_0000)
        );
        assert_eq!(TcParent::Ingress.to_string(), "ffff:fff2");
        assert_eq!(TcParent::Handle(0x1_0001).to_string(), "1:1");
        assert_eq!(TcParent::Ingress.segment(), "ingress");
        assert_eq!(TcParent::Handle(0xffff_0000).segment(), "ffff0000");
    }

    #[test]
    fn software_share_is_total_minus_hardware() {
        let stats = TcActionStats {
            total: TcCounts {
                bytes: 1_029_000,
                packets: 10_500,
                packets_width: 32,
            },
            hw: Some(TcCounts {
                bytes: 1_028_916,
                packets: 10_499,
                packets_width: 32,
            }),
            drops: Some(0),
            overlimits: Some(0),
        };
        let sw = stats.software();
        assert_eq!((sw.bytes, sw.packets), (84, 1));
    }

    #[test]
    fn the_dump_request_names_device_and_parent() {
        let request = filter_request(7, TcParent::Ingress);
        assert_eq!(request.header.index, 7);
        assert_eq!(u32::from(request.header.parent), 0xffff_fff2);
        assert_eq!(u32::from(request.header.handle), 0);
        assert!(request.attributes.is_empty(), "no TCA_CHAIN: all chains");
    }
}
