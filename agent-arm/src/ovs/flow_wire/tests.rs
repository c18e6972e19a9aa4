//! Flows and tc filters to the wire, and flows joined to their filters by ufid.

use std::time::Duration as StdDuration;

use dpu_ovs::flow::{parse_dump_all, Ufid};
use dpu_probe::netlink::{TcActionStats, TcActionTimes, TcCounts, TcFilterFlags, TcParent};

use super::*;

const TC_FLOW: &str = "ufid:25030bd6-7e33-4ba5-9c1b-aa4b6f0d2a11, skb_priority(0/0),\
in_port(pf0hpf),eth(src=0c:42:a1:00:00:01,dst=0c:42:a1:00:00:02),eth_type(0x0800),\
ipv4(src=10.0.0.1,dst=10.0.0.2,proto=1,frag=no), packets:36, bytes:3024, used:0.320s, \
offloaded:yes, dp:tc, vendor:thing, actions:set(eth(src=0c:42:a1:00:00:09)),p0\n";

const OVS_FLOW: &str = "ufid:9a8b7c6d-0000-4000-8000-000000000001, recirc_id(0),\
in_port(tp1),eth_type(0x0806), packets:0, bytes:0, used:never, flags:S., dp:ovs, \
actions:tp2, dp-extra-info:miniflow_bits(4,1)\n";

#[test]
fn flows_keep_key_and_actions_verbatim_and_unknown_fields() {
    let text = format!("{TC_FLOW}{OVS_FLOW}");
    let flows = parse_dump_all(&text).expect("parses");
    let tc = flow_to_wire(&flows[0]);
    assert_eq!(tc.ufid, "25030bd6-7e33-4ba5-9c1b-aa4b6f0d2a11");
    assert!(
        tc.r#match
            .starts_with("skb_priority(0/0),in_port(pf0hpf),eth(src="),
        "{}",
        tc.r#match
    );
    assert!(tc.r#match.ends_with("frag=no)"), "{}", tc.r#match);
    assert_eq!(tc.in_port, "pf0hpf");
    assert_eq!((tc.packets, tc.bytes), (36, 3024));
    assert_eq!(
        tc.used,
        Some(Duration {
            seconds: 0,
            nanos: 320_000_000
        })
    );
    assert_eq!(tc.offloaded, v1::OffloadStatus::Offloaded as i32);
    assert_eq!(tc.dp_layer, "tc");
    assert_eq!(tc.actions, "set(eth(src=0c:42:a1:00:00:09)),p0");
    assert_eq!(
        tc.extra_fields.get("vendor").map(String::as_str),
        Some("thing")
    );

    let sw = flow_to_wire(&flows[1]);
    assert_eq!(sw.used, None, "used:never");
    assert_eq!(sw.offloaded, v1::OffloadStatus::NotOffloaded as i32);
    assert_eq!(sw.tcp_flags, "S.");
    assert_eq!(sw.dp_extra_info, "miniflow_bits(4,1)");
    assert_eq!(used_to_wire(Used::Millis(-1)), Some(Duration::default()));
}

/// The cookie bytes OVS would write for `ufid` on this machine.
fn cookie_for(ufid: &str) -> Vec<u8> {
    let parsed = Ufid::parse(ufid).expect("ufid");
    parsed
        .words()
        .iter()
        .flat_map(|w| w.to_ne_bytes())
        .collect()
}

fn filter(handle: u32, cookie: Option<Vec<u8>>) -> TcFilter {
    let counts = |bytes, packets| TcCounts {
        bytes,
        packets,
        packets_width: 64,
    };
    TcFilter {
        ifindex: 7,
        parent: TcParent::Ingress,
        kind: "flower".to_owned(),
        prio: 2,
        protocol: 0x0800,
        handle,
        chain: 0,
        flags: Some(TcFilterFlags {
            bits: TcFilterFlags::IN_HW,
        }),
        in_hw_count: Some(1),
        actions: vec![TcFilterAction {
            order: 1,
            kind: "mirred".to_owned(),
            index: Some(2),
            cookie,
            in_hw_count: None,
            stats: Some(TcActionStats {
                total: counts(1_029_000, 10_500),
                hw: Some(counts(1_028_916, 10_499)),
                drops: Some(3),
                overlimits: Some(0),
            }),
            times: Some(TcActionTimes {
                installed_ago: StdDuration::from_secs(42),
                last_used_ago: StdDuration::from_millis(1500),
                first_used_ago: Some(StdDuration::from_secs(40)),
            }),
        }],
    }
}

#[test]
fn tc_filters_split_counters_and_decode_the_ufid_cookie() {
    let ufid = "25030bd6-7e33-4ba5-9c1b-aa4b6f0d2a11";
    let cookie = cookie_for(ufid);
    assert_eq!(cookie_ufid(&cookie).as_deref(), Some(ufid));
    assert_eq!(
        cookie_ufid(&cookie[..15]),
        None,
        "only 16-byte cookies are ufids"
    );

    let wire = tc_filter_to_wire("pf0hpf", &filter(1, Some(cookie.clone())));
    assert_eq!(wire.netdev, "pf0hpf");
    assert_eq!((wire.priority, wire.handle, wire.chain), (2, 1, 0));
    assert!(wire.in_hw && !wire.not_in_hw && !wire.skip_hw && !wire.skip_sw);
    assert_eq!(wire.in_hw_count, 1);
    assert_eq!(wire.cookie, hex(&cookie));
    assert_eq!(wire.ufid, ufid);
    let action = &wire.actions[0];
    assert_eq!((action.order, action.kind.as_str()), (1, "mirred"));
    assert_eq!(
        (action.packets, action.hw_packets, action.sw_packets),
        (10_500, 10_499, 1)
    );
    assert_eq!(
        (action.bytes, action.hw_bytes, action.sw_bytes),
        (1_029_000, 1_028_916, 84)
    );
    assert_eq!(action.drops, 3);
    assert_eq!((action.installed_sec, action.last_used_sec), (42, 1));

    let header = TcFilter {
        actions: Vec::new(),
        ..filter(0, None)
    };
    assert!(!is_real_filter(&header));
    assert!(is_real_filter(&filter(1, None)));
}

#[test]
fn flows_are_joined_to_tc_filters_by_ufid() {
    let text = format!("{TC_FLOW}{OVS_FLOW}");
    let mut flows: Vec<v1::Flow> = parse_dump_all(&text)
        .expect("parses")
        .iter()
        .map(flow_to_wire)
        .collect();
    assert_eq!(tc_ports(&flows), ["pf0hpf"], "only dp:tc flows need tc");
    let matching = tc_filter_to_wire(
        "pf0hpf",
        &filter(1, Some(cookie_for("25030bd6-7e33-4ba5-9c1b-aa4b6f0d2a11"))),
    );
    let other = tc_filter_to_wire(
        "pf0hpf",
        &filter(2, Some(cookie_for("11111111-2222-3333-4444-555555555555"))),
    );
    let no_cookie = tc_filter_to_wire("pf0hpf", &filter(3, None));
    join_tc_filters(&mut flows, vec![matching, other, no_cookie]);
    let joined: Vec<u32> = flows[0].tc_filters.iter().map(|f| f.handle).collect();
    assert_eq!(joined, [1]);
    assert!(flows[1].tc_filters.is_empty());
}
