//! Every link's counters from one `RTM_GETSTATS` dump: `IFLA_STATS_LINK_64` (the
//! `rtnl_link_stats64` that `RTM_GETLINK` also carries) and, in the same answer,
//! `IFLA_STATS_LINK_OFFLOAD_XSTATS` (`CPU_HIT`).
//!
//! Why not `RTM_GETLINK`: a link dump carries everything about a link (addresses, af_spec,
//! qdisc, xdp, ...), which the kernel must fill and netlink-packet-route must parse; on 66
//! links that is ~500 µs, against ~30 µs for a stats dump. And both families in one dump
//! means the plain and the software-path counters of a device are read back to back.
//!
//! Decoded by hand, straight from the datagram: netlink-packet-route 0.34 does decode
//! `IFLA_STATS_LINK_64` (into its `Stats64`, zero-filling a short struct), but it parses
//! every attribute of every answer into allocated values and fails the whole message when
//! any of them (a newer kernel's offload xstat) does not match its idea of the layout.
//! This reader walks the attributes, reads the two it needs and skips the rest.

use netlink_packet_core::{DecodeError, NlasIterator};
use netlink_packet_route::stats::{StatsFilterMask, StatsMessage};

use super::dump::HEADER_LEN;
use super::link::LinkCounters;

/// `RTM_NEWSTATS`: the message type of every answer to a stats dump.
const RTM_NEWSTATS: u16 = 92;
/// `struct if_stats_msg`: family, two pads, ifindex, filter_mask.
const IF_STATS_MSG_LEN: usize = 12;
/// `IFLA_STATS_LINK_64`: a `struct rtnl_link_stats64`.
const IFLA_STATS_LINK_64: u16 = 1;
/// `IFLA_STATS_LINK_OFFLOAD_XSTATS`: a nest of offload xstats.
const IFLA_STATS_LINK_OFFLOAD_XSTATS: u16 = 4;
/// `IFLA_OFFLOAD_XSTATS_CPU_HIT`, inside that nest: a `struct rtnl_link_stats64`.
const IFLA_OFFLOAD_XSTATS_CPU_HIT: u16 = 1;

/// One device's counters from a stats dump. `RTM_NEWSTATS` carries no name: join on
/// [`ifindex`](Self::ifindex) with [`LinkStats`](super::LinkStats) or a
/// [`LinkNames`](super::LinkNames) map.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LinkCounterReading {
    /// Kernel interface index (unique within the namespace only).
    pub ifindex: u32,
    /// The link's `rtnl_link_stats64` (width 64); `None` if the kernel left the attribute
    /// out, which a real kernel does not do.
    pub counters: Option<LinkCounters>,
    /// The software-path (`CPU_HIT`) counters; `None` when the device does not report
    /// them, the normal answer for anything that is not a switchdev representor: "not
    /// supported", not zero. Same meaning as [`OffloadStats::cpu_hit`](super::OffloadStats).
    pub cpu_hit: Option<LinkCounters>,
}

/// The `RTM_GETSTATS` dump request for link stats64 and offload xstats of every device.
pub(crate) fn counters_request() -> StatsMessage {
    let mut message = StatsMessage::default();
    message.header.ifindex = 0;
    message.header.filter_mask = StatsFilterMask::Link64 | StatsFilterMask::LinkOffloadXstats;
    message
}

/// Decodes one whole answer message (`nlmsghdr` included). `Ok(None)` for a message that
/// is not `RTM_NEWSTATS`; an error when the header or the attribute framing is broken.
///
/// Attributes other than the two wanted are skipped, so are the `IFLA_STATS_UNSPEC` pads
/// that `nla_reserve_64bit` inserts on architectures without efficient unaligned access;
/// a payload longer or shorter than this crate's `rtnl_link_stats64` is read as
/// [`LinkCounters::from_raw64`] describes.
pub(crate) fn reading_from_message(
    message: &[u8],
) -> Result<Option<LinkCounterReading>, DecodeError> {
    let message_type = message
        .get(4..6)
        .map(|b| u16::from_ne_bytes([b[0], b[1]]))
        .ok_or_else(|| DecodeError::buffer_too_small(message.len(), HEADER_LEN))?;
    if message_type != RTM_NEWSTATS {
        return Ok(None);
    }
    let payload = message.get(HEADER_LEN..).unwrap_or_default();
    let Some(header) = payload.get(..IF_STATS_MSG_LEN) else {
        return Err(DecodeError::buffer_too_small(
            payload.len(),
            IF_STATS_MSG_LEN,
        ));
    };
    let ifindex = u32::from_ne_bytes([header[4], header[5], header[6], header[7]]);
    let mut reading = LinkCounterReading {
        ifindex,
        counters: None,
        cpu_hit: None,
    };
    for attribute in NlasIterator::new(&payload[IF_STATS_MSG_LEN..]) {
        let attribute = attribute?;
        match attribute.kind() {
            IFLA_STATS_LINK_64 => {
                reading.counters = Some(LinkCounters::from_raw64(attribute.value()));
            }
            IFLA_STATS_LINK_OFFLOAD_XSTATS => {
                for xstat in NlasIterator::new(attribute.value()) {
                    let xstat = xstat?;
                    if xstat.kind() == IFLA_OFFLOAD_XSTATS_CPU_HIT {
                        reading.cpu_hit = Some(LinkCounters::from_raw64(xstat.value()));
                    }
                }
            }
            _ => {}
        }
    }
    Ok(Some(reading))
}

#[cfg(test)]
mod tests {
    use super::*;
    use netlink_packet_core::{Emitable, NetlinkHeader, NetlinkMessage, NetlinkPayload};
    use netlink_packet_route::link::Stats64;
    use netlink_packet_route::stats::{HwStatsInfo, OffloadXstat, StatsAttribute};
    use netlink_packet_route::RouteNetlinkMessage;

    /// One netlink attribute, padded to 4 bytes.
    fn nla(kind: u16, value: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        out.extend_from_slice(&((4 + value.len()) as u16).to_ne_bytes());
        out.extend_from_slice(&kind.to_ne_bytes());
        out.extend_from_slice(value);
        out.resize((out.len() + 3) & !3, 0);
        out
    }

    /// `words` u64s 1, 2, 3, ... as a raw `rtnl_link_stats64` of that many fields.
    fn stats(words: u64, base: u64) -> Vec<u8> {
        (1..=words)
            .flat_map(|i| (base + i).to_ne_bytes())
            .collect::<Vec<u8>>()
    }

    /// A whole `RTM_NEWSTATS` message as the kernel writes it.
    fn message(ifindex: u32, attributes: &[Vec<u8>]) -> Vec<u8> {
        let mut payload = vec![0u8, 0, 0, 0];
        payload.extend_from_slice(&ifindex.to_ne_bytes());
        payload.extend_from_slice(&(0b1001u32).to_ne_bytes());
        for a in attributes {
            payload.extend_from_slice(a);
        }
        let len = HEADER_LEN + payload.len();
        let mut out = Vec::new();
        out.extend_from_slice(&(len as u32).to_ne_bytes());
        out.extend_from_slice(&RTM_NEWSTATS.to_ne_bytes());
        out.extend_from_slice(&2u16.to_ne_bytes());
        out.extend_from_slice(&1u32.to_ne_bytes());
        out.extend_from_slice(&0u32.to_ne_bytes());
        out.extend_from_slice(&payload);
        out
    }

    fn decode(bytes: &[u8]) -> LinkCounterReading {
        reading_from_message(bytes)
            .expect("decodes")
            .expect("RTM_NEWSTATS")
    }

    #[test]
    fn the_request_asks_for_stats64_and_offload_xstats_of_all_devices() {
        let request = counters_request();
        assert_eq!(request.header.ifindex, 0);
        assert_eq!(
            request.header.filter_mask.bits(),
            (1 << 0) | (1 << 3),
            "IFLA_STATS_FILTER_BIT(1) | IFLA_STATS_FILTER_BIT(4)"
        );
        assert!(request.attributes.is_empty());
    }

    #[test]
    fn stats64_of_todays_kernel_is_read_in_kernel_order() {
        // Linux 6.9+: 25 words, the last (rx_otherhost_dropped) not kept.
        let m = message(7, &[nla(IFLA_STATS_LINK_64, &stats(25, 0))]);
        let r = decode(&m);
        assert_eq!(r.ifindex, 7);
        assert_eq!(r.cpu_hit, None, "no offload nest: unsupported");
        let c = r.counters.expect("counters");
        assert_eq!(c.width_bits, 64);
        let values: Vec<u64> = c.field_array().iter().map(|f| f.1).collect();
        assert_eq!(values, (1..=24).collect::<Vec<u64>>());
        assert_eq!(
            (c.rx_packets, c.tx_packets, c.rx_bytes, c.tx_bytes),
            (1, 2, 3, 4)
        );
        assert_eq!((c.multicast, c.rx_nohandler), (9, 24));
    }

    #[test]
    fn shorter_and_longer_structs_read_what_is_present() {
        // An older layout (23 words, before rx_nohandler): the missing word reads 0.
        let old = decode(&message(1, &[nla(IFLA_STATS_LINK_64, &stats(23, 100))]));
        let c = old.counters.expect("counters");
        assert_eq!(
            (c.rx_packets, c.tx_compressed, c.rx_nohandler),
            (101, 123, 0)
        );
        // A future layout with more words than this crate knows: they are ignored.
        let new = decode(&message(2, &[nla(IFLA_STATS_LINK_64, &stats(40, 100))]));
        let c = new.counters.expect("counters");
        assert_eq!((c.rx_packets, c.rx_nohandler), (101, 124));
        // A trailing partial word is ignored, not misread.
        let mut odd = stats(24, 0);
        odd.extend_from_slice(&[0xff; 4]);
        let c = decode(&message(3, &[nla(IFLA_STATS_LINK_64, &odd)]))
            .counters
            .expect("counters");
        assert_eq!(c.rx_nohandler, 24);
    }

    #[test]
    fn cpu_hit_is_read_from_the_offload_nest_and_pads_are_skipped() {
        let nest = [
            nla(0, &[0; 4]), // IFLA_OFFLOAD_XSTATS_UNSPEC pad
            nla(IFLA_OFFLOAD_XSTATS_CPU_HIT, &stats(24, 1000)),
            nla(3, &[7; 36]), // L3_STATS of another layout: skipped, not an error
        ]
        .concat();
        let m = message(
            9,
            &[
                nla(0, &[0; 4]), // IFLA_STATS_UNSPEC pad before a 64-bit attribute
                nla(IFLA_STATS_LINK_64, &stats(24, 0)),
                nla(IFLA_STATS_LINK_OFFLOAD_XSTATS, &nest),
                nla(5, &[1, 2, 3, 4]), // AF_SPEC: not asked for, skipped
            ],
        );
        let r = decode(&m);
        let hit = r.cpu_hit.expect("cpu_hit");
        assert_eq!(
            (hit.rx_packets, hit.tx_packets, hit.rx_bytes, hit.tx_bytes),
            (1001, 1002, 1003, 1004)
        );
        assert_eq!(r.counters.expect("counters").rx_packets, 1);
        // NLA_F_NESTED on the nest type does not hide it.
        let flagged = message(
            4,
            &[nla(
                IFLA_STATS_LINK_OFFLOAD_XSTATS | 0x8000,
                &nla(IFLA_OFFLOAD_XSTATS_CPU_HIT, &stats(24, 0)),
            )],
        );
        let r = decode(&flagged);
        assert!(r.cpu_hit.is_some() && r.counters.is_none());
    }

    #[test]
    fn agrees_with_netlink_packet_route_on_what_it_emits() {
        let mut link = Stats64::default();
        link.rx_packets = 5_000_000_000;
        link.tx_bytes = 1 << 40;
        link.rx_nohandler = 3;
        let mut hit = Stats64::default();
        hit.rx_packets = 3;
        hit.tx_bytes = 200;
        let mut info = HwStatsInfo::default();
        info.request = Some(1);
        info.used = Some(0);
        let mut m = StatsMessage::default();
        m.header.ifindex = 12;
        m.attributes = vec![
            StatsAttribute::Link64(link),
            StatsAttribute::LinkOffloadXstats(vec![
                OffloadXstat::HwStatsInfo(info),
                OffloadXstat::CpuHit(hit),
            ]),
        ];
        let mut packet = NetlinkMessage::new(
            NetlinkHeader::default(),
            NetlinkPayload::InnerMessage(RouteNetlinkMessage::NewStats(m)),
        );
        packet.finalize();
        let mut bytes = vec![0; packet.buffer_len()];
        packet.emit(&mut bytes);
        let r = decode(&bytes);
        assert_eq!(r.ifindex, 12);
        assert_eq!(r.counters, Some(LinkCounters::from_stats64(&link)));
        assert_eq!(r.cpu_hit, Some(LinkCounters::from_stats64(&hit)));
    }

    #[test]
    fn other_messages_are_skipped_and_broken_framing_is_an_error() {
        let mut not_stats = message(1, &[]);
        not_stats[4..6].copy_from_slice(&16u16.to_ne_bytes()); // RTM_NEWLINK
        assert_eq!(reading_from_message(&not_stats).expect("skipped"), None);

        let bare = decode(&message(5, &[]));
        assert_eq!((bare.counters, bare.cpu_hit), (None, None));

        let mut truncated_header = message(1, &[]);
        truncated_header.truncate(HEADER_LEN + 8);
        assert!(reading_from_message(&truncated_header).is_err());

        let mut bad_nla = message(1, &[nla(IFLA_STATS_LINK_64, &stats(24, 0))]);
        let at = HEADER_LEN + IF_STATS_MSG_LEN;
        bad_nla[at..at + 2].copy_from_slice(&2000u16.to_ne_bytes());
        assert!(
            reading_from_message(&bad_nla).is_err(),
            "length past the end"
        );
    }
}
