//! Whether a datapath flow's match covers one IPv4 packet: the question "would this packet
//! have been counted by this flow?". A proof that sends a known workload counts only the
//! flows that cover it, so an unrelated flow that grew during the window (another tenant,
//! a neighbour's traffic through the same representor) proves nothing.
//!
//! A datapath flow is a megaflow: a key with a mask. Every field the key names must agree
//! with the packet under its mask (`ipv4(src=10.0.0.0/255.255.255.0,...)`,
//! `udp(src=1024/0xfc00,dst=9)`); a field the key does not name is wildcarded. The formats
//! are OVS's own printers (`lib/odp-util.c`: `format_ipv4()` prints addresses and masks
//! dotted, `format_be16()` ports decimal with hex masks, `format_u8x()` the protocol).

use std::net::Ipv4Addr;

use super::key::KeyField;
use super::line::DatapathFlow;

/// IP protocol numbers with a transport key of their own.
const TCP: u8 = 6;
const UDP: u8 = 17;
const SCTP: u8 = 132;
const ICMP: u8 = 1;

/// One IPv4 packet of a workload, as a flow match sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ipv4Packet {
    /// Source address.
    pub src: Ipv4Addr,
    /// Destination address.
    pub dst: Ipv4Addr,
    /// IP protocol (17 for UDP).
    pub proto: u8,
    /// Transport source port (ignored for protocols without ports).
    pub src_port: u16,
    /// Transport destination port.
    pub dst_port: u16,
}

impl DatapathFlow<'_> {
    /// Whether this flow's match covers `packet` (see the module doc). A key field this
    /// check does not model (`tunnel`, `ct_state`, `eth`, `vlan`, `icmp` type and code...)
    /// is not held against the packet: the flow was chosen by its representor already,
    /// and these do not tell one IPv4 5-tuple from another.
    pub fn covers(&self, packet: &Ipv4Packet) -> bool {
        self.key.iter().all(|field| field_covers(field, packet))
    }
}

fn field_covers(field: &KeyField<'_>, packet: &Ipv4Packet) -> bool {
    match field.name() {
        "eth_type" => field
            .value_and_mask()
            .is_some_and(|(value, mask)| masked_eq(u64::from(0x0800_u16), value, mask)),
        // Another network protocol than the packet's.
        "ipv6" | "arp" | "nd" | "mpls" => false,
        "ipv4" => field.sub_fields().all(|(name, value)| {
            let Some(value) = value else { return true };
            match name {
                "src" => address_covers(packet.src, value),
                "dst" => address_covers(packet.dst, value),
                "proto" => {
                    let (v, m) = split_mask(value);
                    masked_eq(u64::from(packet.proto), v, m)
                }
                _ => true,
            }
        }),
        "tcp" => transport_covers(field, packet, TCP),
        "udp" => transport_covers(field, packet, UDP),
        "sctp" => transport_covers(field, packet, SCTP),
        "icmp" => packet.proto == ICMP,
        _ => true,
    }
}

/// `tcp(src=..,dst=..)` and friends: the packet must be of that protocol and its ports
/// agree under the masks.
fn transport_covers(field: &KeyField<'_>, packet: &Ipv4Packet, proto: u8) -> bool {
    if packet.proto != proto {
        return false;
    }
    field.sub_fields().all(|(name, value)| {
        let Some(value) = value else { return true };
        let (v, m) = split_mask(value);
        match name {
            "src" => masked_eq(u64::from(packet.src_port), v, m),
            "dst" => masked_eq(u64::from(packet.dst_port), v, m),
            _ => true,
        }
    })
}

fn split_mask(text: &str) -> (&str, Option<&str>) {
    match text.split_once('/') {
        Some((value, mask)) => (value, Some(mask)),
        None => (text, None),
    }
}

/// A number as OVS prints it: decimal or `0x` hex.
fn number(text: &str) -> Option<u64> {
    match text.strip_prefix("0x").or_else(|| text.strip_prefix("0X")) {
        Some(hex) => u64::from_str_radix(hex, 16).ok(),
        None => text.parse().ok(),
    }
}

/// Whether `actual` equals `value` under `mask` (all ones when absent). A value this code
/// cannot read covers nothing: a flow it cannot judge is not counted for the workload.
fn masked_eq(actual: u64, value: &str, mask: Option<&str>) -> bool {
    let Some(value) = number(value) else {
        return false;
    };
    let mask = match mask {
        None => u64::MAX,
        Some(text) => match number(text) {
            Some(mask) => mask,
            None => return false,
        },
    };
    actual & mask == value & mask
}

/// `10.0.0.1`, `10.0.0.0/255.255.255.0` or `10.0.0.0/24` against an address.
fn address_covers(actual: Ipv4Addr, text: &str) -> bool {
    let (value, mask) = split_mask(text);
    let Ok(value) = value.parse::<Ipv4Addr>() else {
        return false;
    };
    let mask = match mask {
        None => u32::MAX,
        Some(text) => match (text.parse::<Ipv4Addr>(), text.parse::<u32>()) {
            (Ok(dotted), _) => u32::from(dotted),
            (_, Ok(bits)) if bits <= 32 => u32::MAX.checked_shl(32 - bits).unwrap_or(0),
            _ => return false,
        },
    };
    u32::from(actual) & mask == u32::from(value) & mask
}

#[cfg(test)]
mod tests {
    use super::*;

    const WORKLOAD: Ipv4Packet = Ipv4Packet {
        src: Ipv4Addr::new(10, 20, 0, 2),
        dst: Ipv4Addr::new(10, 20, 0, 1),
        proto: UDP,
        src_port: 40_001,
        dst_port: 9,
    };

    fn flow(key: &str) -> DatapathFlow<'_> {
        DatapathFlow::parse(key).expect("a flow line")
    }

    fn line(key: &str) -> String {
        format!(
            "ufid:11111111-2222-3333-4444-555555555555, {key}, packets:5, bytes:500, used:0.1s, dp:tc, actions:p0"
        )
    }

    #[test]
    fn a_flow_matching_the_workload_exactly_or_by_mask_covers_it() {
        for key in [
            "recirc_id(0),in_port(pf0hpf),eth_type(0x0800),ipv4(src=10.20.0.2,dst=10.20.0.1,proto=17,frag=no),udp(src=40001,dst=9)",
            "recirc_id(0),in_port(pf0hpf),eth(src=0c:42:a1:00:00:01,dst=0c:42:a1:00:00:02),eth_type(0x0800),ipv4(src=10.20.0.0/255.255.255.0,dst=10.20.0.1,proto=17/0xff,tos=0/0xfc,frag=no),udp(src=32768/0x8000,dst=9)",
            "recirc_id(0),in_port(pf0hpf),eth_type(0x0800),ipv4(dst=10.20.0.0/24,frag=no)",
            // Only the representor: a NORMAL flow that wildcards everything above L2.
            "recirc_id(0),in_port(pf0hpf),eth(src=0c:42:a1:00:00:01,dst=0c:42:a1:00:00:02),eth_type(0/0)",
        ] {
            let text = line(key);
            assert!(flow(&text).covers(&WORKLOAD), "{key}");
        }
    }

    #[test]
    fn unrelated_flows_through_the_same_representor_do_not() {
        for key in [
            // Another destination, another port, TCP, ARP, IPv6.
            "recirc_id(0),in_port(pf0hpf),eth_type(0x0800),ipv4(src=10.20.0.2,dst=10.20.0.9,proto=17,frag=no),udp(src=40001,dst=9)",
            "recirc_id(0),in_port(pf0hpf),eth_type(0x0800),ipv4(src=10.20.0.2,dst=10.20.0.1,proto=17,frag=no),udp(src=40001,dst=4791)",
            "recirc_id(0),in_port(pf0hpf),eth_type(0x0800),ipv4(src=10.20.0.2,dst=10.20.0.1,proto=6,frag=no),tcp(src=40001,dst=9)",
            "recirc_id(0),in_port(pf0hpf),eth_type(0x0806),arp(sip=10.20.0.2,tip=10.20.0.1,op=1/0xff)",
            "recirc_id(0),in_port(pf0hpf),eth_type(0x86dd),ipv6(src=fe80::1,dst=ff02::2,proto=58,frag=no)",
            // A mask that keeps the differing bits.
            "recirc_id(0),in_port(pf0hpf),eth_type(0x0800),ipv4(src=10.30.0.0/255.255.0.0,frag=no)",
            // A value this check cannot read is not counted for the workload.
            "recirc_id(0),in_port(pf0hpf),eth_type(0x0800),ipv4(src=ten.twenty,frag=no)",
        ] {
            let text = line(key);
            assert!(!flow(&text).covers(&WORKLOAD), "{key}");
        }
    }

    #[test]
    fn masks_read_as_ovs_prints_them() {
        assert!(address_covers(Ipv4Addr::new(10, 1, 2, 3), "10.1.0.0/16"));
        assert!(address_covers(Ipv4Addr::new(10, 1, 2, 3), "0.0.0.0/0"));
        assert!(!address_covers(
            Ipv4Addr::new(10, 1, 2, 3),
            "10.2.0.0/255.255.0.0"
        ));
        assert!(masked_eq(40_001, "32768", Some("0x8000")));
        assert!(!masked_eq(1_024, "32768", Some("0x8000")));
        assert!(masked_eq(0x0800, "0", Some("0")));
        assert_eq!(number("0x1f"), Some(31));
    }
}
