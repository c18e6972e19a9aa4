//! Links from one `RTM_GETLINK` dump: identity, state and `rtnl_link_stats64`.

use netlink_packet_route::link::{LinkAttribute, LinkMessage, Stats, Stats64};

use crate::snapshot::Unit;

/// Declares [`LinkCounters`] once, so the field names, their units and both kernel layouts
/// (`rtnl_link_stats64`, `rtnl_link_stats`) cannot drift apart.
macro_rules! link_counters {
    ($($(#[doc = $doc:literal])+ $name:ident: $unit:ident,)+) => {
        /// The kernel's `rtnl_link_stats64` for one link, field for field, so counter names
        /// match `ip -s link`, `/sys/class/net/*/statistics/` and the kernel headers.
        ///
        /// `rx_otherhost_dropped` (Linux 6.9+) is left out: older kernels do not send it,
        /// sysfs does not show it, and a zero that means "absent" must not look like a
        /// reading.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
        pub struct LinkCounters {
            /// Width of the kernel's counters: 64 from `IFLA_STATS64`, 32 from the legacy
            /// `IFLA_STATS` (which wraps at 2^32 and is only used when stats64 is absent).
            pub width_bits: u32,
            $($(#[doc = $doc])+ pub $name: u64,)+
        }

        impl LinkCounters {
            /// Every counter as (kernel field name, value, unit), in `rtnl_link_stats64`
            /// order: the one list every sample converter walks.
            pub fn fields(&self) -> Vec<(&'static str, u64, Unit)> {
                self.field_array().to_vec()
            }

            /// [`fields`](Self::fields) without the allocation: what the sample
            /// converters walk once per link.
            pub(crate) fn field_array(&self) -> [(&'static str, u64, Unit); LINK_COUNTER_FIELDS] {
                [$((stringify!($name), self.$name, Unit::$unit),)+]
            }

            pub(crate) fn from_stats64(s: &Stats64) -> Self {
                Self { width_bits: 64, $($name: s.$name,)+ }
            }

            /// Reads a raw `struct rtnl_link_stats64` (native-endian `__u64`s in kernel
            /// order) as a kernel of any version sent it: the words present are read, in
            /// order; words past the ones this type knows (`rx_otherhost_dropped`, Linux
            /// 6.9+, and whatever later kernels append) are ignored; words missing from a
            /// shorter struct read as 0, as iproute2's `get_rtnl_link_stats_rta` does. The
            /// last case does not occur on a real kernel: `RTM_GETSTATS` (Linux 4.7) is
            /// younger than the 24th word, `rx_nohandler` (Linux 4.6). A trailing partial
            /// word is ignored.
            pub(crate) fn from_raw64(payload: &[u8]) -> Self {
                let mut words = payload.chunks_exact(8).map(|word| {
                    let mut bytes = [0u8; 8];
                    bytes.copy_from_slice(word);
                    u64::from_ne_bytes(bytes)
                });
                // Struct fields are initialised in the order written, which is kernel
                // order: each takes the next word.
                Self { width_bits: 64, $($name: words.next().unwrap_or(0),)+ }
            }

            fn from_stats32(s: &Stats) -> Self {
                Self { width_bits: 32, $($name: u64::from(s.$name),)+ }
            }
        }

        /// The unit of a `rtnl_link_stats64` field, by its kernel name; `None` for a name
        /// this crate does not know (a newer kernel's field).
        pub(crate) fn link_counter_unit(name: &str) -> Option<Unit> {
            match name {
                $(stringify!($name) => Some(Unit::$unit),)+
                _ => None,
            }
        }
    };
}

/// How many `rtnl_link_stats64` words [`LinkCounters`] holds (all up to `rx_nohandler`).
pub(crate) const LINK_COUNTER_FIELDS: usize = 24;

link_counters! {
    /// Packets received.
    rx_packets: Packets,
    /// Packets transmitted.
    tx_packets: Packets,
    /// Bytes received, Ethernet header included.
    rx_bytes: Bytes,
    /// Bytes transmitted, Ethernet header included.
    tx_bytes: Bytes,
    /// Bad packets received.
    rx_errors: Events,
    /// Packet transmit problems.
    tx_errors: Events,
    /// Received packets dropped (no buffer, filtered).
    rx_dropped: Events,
    /// Packets dropped on transmit.
    tx_dropped: Events,
    /// Multicast packets received.
    multicast: Packets,
    /// Collisions (half duplex media).
    collisions: Events,
    /// Received frames with a bad length.
    rx_length_errors: Events,
    /// Receive ring overflows.
    rx_over_errors: Events,
    /// Received frames with a CRC error.
    rx_crc_errors: Events,
    /// Received frame alignment errors.
    rx_frame_errors: Events,
    /// Receive FIFO overruns.
    rx_fifo_errors: Events,
    /// Packets the receiver missed.
    rx_missed_errors: Events,
    /// Transmit aborts.
    tx_aborted_errors: Events,
    /// Transmit carrier losses.
    tx_carrier_errors: Events,
    /// Transmit FIFO errors.
    tx_fifo_errors: Events,
    /// Transmit heartbeat errors.
    tx_heartbeat_errors: Events,
    /// Transmit window errors.
    tx_window_errors: Events,
    /// Compressed packets received (cslip, ppp).
    rx_compressed: Packets,
    /// Compressed packets transmitted.
    tx_compressed: Packets,
    /// Packets dropped because no protocol handler wanted them.
    rx_nohandler: Events,
}

/// `IFF_UP`: administratively up.
const IFF_UP: u32 = 1 << 0;
/// `IFF_LOWER_UP`: the driver signals carrier.
const IFF_LOWER_UP: u32 = 1 << 16;

/// One link as the kernel reports it in an `RTM_NEWLINK` answer: what a snapshot needs to
/// name the link and to count its traffic.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LinkStats {
    /// Kernel interface index (unique within the namespace only).
    pub ifindex: u32,
    /// Interface name (`IFLA_IFNAME`).
    pub ifname: String,
    /// `IFF_*` flags of `ifinfomsg`, raw; see [`LinkStats::is_admin_up`].
    pub flags: u32,
    /// `IFLA_OPERSTATE` spelled as sysfs `operstate` spells it ("up", "down",
    /// "lowerlayerdown", "unknown", ...), so both sources compare equal.
    pub operstate: String,
    /// `IFLA_MTU`.
    pub mtu: Option<u32>,
    /// `IFLA_PHYS_PORT_NAME` ("p0", "pf0hpf", "pf0vf1" on a BlueField eswitch): what tells a
    /// representor from an ordinary device.
    pub phys_port_name: Option<String>,
    /// The traffic counters; `None` when the kernel sent neither stats64 nor stats.
    pub counters: Option<LinkCounters>,
}

impl LinkStats {
    /// `IFF_UP`: the administrator set the link up.
    pub fn is_admin_up(&self) -> bool {
        self.flags & IFF_UP != 0
    }

    /// `IFF_LOWER_UP`: the driver reports carrier.
    pub fn is_lower_up(&self) -> bool {
        self.flags & IFF_LOWER_UP != 0
    }
}

/// Decodes one link message. `None` for a message without a name, which the kernel never
/// sends for a real link and which could not be turned into a resource name.
pub(crate) fn link_from_message(message: &LinkMessage) -> Option<LinkStats> {
    let mut ifname = None;
    let mut operstate = "unknown".to_owned();
    let mut mtu = None;
    let mut phys_port_name = None;
    let mut stats64 = None;
    let mut stats32 = None;
    for attribute in &message.attributes {
        match attribute {
            LinkAttribute::IfName(name) => ifname = Some(name.clone()),
            LinkAttribute::OperState(state) => operstate = operstate_name(u8::from(*state)),
            LinkAttribute::Mtu(value) => mtu = Some(*value),
            LinkAttribute::PhysPortName(name) => phys_port_name = Some(name.clone()),
            LinkAttribute::Stats64(stats) => stats64 = Some(LinkCounters::from_stats64(stats)),
            LinkAttribute::Stats(stats) => stats32 = Some(LinkCounters::from_stats32(stats)),
            _ => {}
        }
    }
    let Some(ifname) = ifname else {
        tracing::warn!(
            ifindex = message.header.index,
            "RTM_NEWLINK without IFLA_IFNAME skipped"
        );
        return None;
    };
    Some(LinkStats {
        ifindex: message.header.index,
        ifname,
        flags: message.header.flags.bits(),
        operstate,
        mtu,
        phys_port_name,
        counters: stats64.or(stats32),
    })
}

/// `IF_OPER_*` names as `net/core/net-sysfs.c` prints them.
fn operstate_name(value: u8) -> String {
    match value {
        0 => "unknown",
        1 => "notpresent",
        2 => "down",
        3 => "lowerlayerdown",
        4 => "testing",
        5 => "dormant",
        6 => "up",
        other => return format!("operstate-{other}"),
    }
    .to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use netlink_packet_route::link::{LinkFlags, State};
    use netlink_packet_route::RouteNetlinkMessage;

    /// Emits a link message into kernel wire format and parses it back, so the test covers
    /// the same decoding path as a real dump.
    fn round_trip(message: LinkMessage) -> LinkMessage {
        match super::super::tests::wire::round_trip(RouteNetlinkMessage::NewLink(message)) {
            RouteNetlinkMessage::NewLink(m) => m,
            other => panic!("unexpected {other:?}"),
        }
    }

    fn message(index: u32, attributes: Vec<LinkAttribute>) -> LinkMessage {
        let mut m = LinkMessage::default();
        m.header.index = index;
        m.header.flags = LinkFlags::Up | LinkFlags::LowerUp | LinkFlags::Running;
        m.attributes = attributes;
        m
    }

    #[test]
    fn stats64_is_read_field_for_field() {
        let mut stats = Stats64::default();
        stats.rx_packets = 5_000_000_000;
        stats.tx_bytes = 1 << 40;
        stats.rx_nohandler = 3;
        stats.multicast = 9;
        let m = round_trip(message(
            7,
            vec![
                LinkAttribute::IfName("pf0hpf".into()),
                LinkAttribute::Mtu(9000),
                LinkAttribute::OperState(State::Up),
                LinkAttribute::PhysPortName("pf0hpf".into()),
                LinkAttribute::Stats64(stats),
            ],
        ));
        let link = link_from_message(&m).expect("named");
        assert_eq!(link.ifindex, 7);
        assert_eq!(link.ifname, "pf0hpf");
        assert_eq!(link.mtu, Some(9000));
        assert_eq!(link.operstate, "up");
        assert!(link.is_admin_up() && link.is_lower_up());
        assert_eq!(link.phys_port_name.as_deref(), Some("pf0hpf"));
        let c = link.counters.expect("counters");
        assert_eq!(c.width_bits, 64);
        assert_eq!(c.rx_packets, 5_000_000_000, "no 32-bit truncation");
        assert_eq!(c.tx_bytes, 1 << 40);
        assert_eq!(c.rx_nohandler, 3);
        let fields = c.fields();
        assert_eq!(fields.len(), 24);
        assert_eq!(fields[0], ("rx_packets", 5_000_000_000, Unit::Packets));
        assert!(fields.contains(&("multicast", 9, Unit::Packets)));
    }

    #[test]
    fn a_link_without_stats64_falls_back_to_32_bit_stats() {
        let mut stats = Stats::default();
        stats.rx_packets = u32::MAX;
        stats.tx_dropped = 4;
        let m = round_trip(message(
            3,
            vec![
                LinkAttribute::IfName("old0".into()),
                LinkAttribute::OperState(State::LowerLayerDown),
                LinkAttribute::Stats(stats),
            ],
        ));
        let link = link_from_message(&m).expect("named");
        assert_eq!(link.operstate, "lowerlayerdown");
        let c = link.counters.expect("counters");
        assert_eq!(c.width_bits, 32, "legacy stats wrap at 2^32");
        assert_eq!(c.rx_packets, u64::from(u32::MAX));
        assert_eq!(c.tx_dropped, 4);
    }

    #[test]
    fn stats64_wins_over_stats_and_absence_is_none() {
        let mut s64 = Stats64::default();
        s64.rx_bytes = 10;
        let mut s32 = Stats::default();
        s32.rx_bytes = 99;
        let both = message(
            1,
            vec![
                LinkAttribute::IfName("eth0".into()),
                LinkAttribute::Stats(s32),
                LinkAttribute::Stats64(s64),
            ],
        );
        let c = link_from_message(&round_trip(both))
            .and_then(|l| l.counters)
            .expect("counters");
        assert_eq!((c.width_bits, c.rx_bytes), (64, 10));

        let none = message(2, vec![LinkAttribute::IfName("bare".into())]);
        let link = link_from_message(&round_trip(none)).expect("named");
        assert_eq!(link.counters, None);
        assert_eq!(link.operstate, "unknown");

        assert_eq!(link_from_message(&message(4, Vec::new())), None, "nameless");
    }

    #[test]
    fn units_by_kernel_name() {
        assert_eq!(link_counter_unit("rx_bytes"), Some(Unit::Bytes));
        assert_eq!(link_counter_unit("tx_compressed"), Some(Unit::Packets));
        assert_eq!(link_counter_unit("rx_crc_errors"), Some(Unit::Events));
        assert_eq!(link_counter_unit("rx_otherhost_dropped"), None);
    }
}
