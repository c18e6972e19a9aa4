use std::collections::BTreeMap;
use std::time::Duration as StdDuration;

use dpu_ovs::flow::{parse_dump_all, Ufid};
use dpu_ovs::ovsdb::{Bridge, Interface, OpenVswitch, Port, Uuid};
use dpu_probe::netlink::{TcActionStats, TcActionTimes, TcCounts, TcFilterFlags, TcParent};

use super::*;

fn uuid(n: u8) -> Uuid {
    Uuid::parse(&format!("00000000-0000-4000-8000-0000000000{n:02x}")).expect("uuid")
}

fn interface(name: &str, kind: &str, ofport: Option<i64>) -> Interface {
    Interface {
        uuid: uuid(1),
        name: name.to_owned(),
        kind: kind.to_owned(),
        options: BTreeMap::from([("key".to_owned(), "5".to_owned())]),
        ofport,
        ifindex: None,
        mtu: None,
        mac_in_use: None,
        admin_state: Some("up".to_owned()),
        link_state: Some("down".to_owned()),
        error: None,
        other_config: BTreeMap::new(),
        external_ids: BTreeMap::new(),
    }
}

fn port(name: &str, iface: Interface) -> Port {
    Port {
        uuid: uuid(2),
        name: name.to_owned(),
        interfaces: vec![iface],
        tag: None,
        other_config: BTreeMap::new(),
        external_ids: BTreeMap::new(),
    }
}

fn bridge_with_local(datapath_type: &str, local: Interface) -> Bridge {
    Bridge {
        uuid: uuid(3),
        name: local.name.clone(),
        datapath_type: datapath_type.to_owned(),
        fail_mode: None,
        ports: vec![port(&local.name.clone(), local)],
        other_config: BTreeMap::new(),
        external_ids: BTreeMap::new(),
    }
}

#[test]
fn a_bridge_vswitchd_is_not_running_says_why() {
    // ofport -1 with OVS's text: the text, verbatim.
    let mut refused = interface("lo", "internal", Some(-1));
    refused.error = Some("could not open network device lo (Invalid argument)".to_owned());
    let wire = bridge_to_wire(&bridge_with_local("netdev", refused), true);
    assert_eq!(
        wire.error,
        "could not open network device lo (Invalid argument)"
    );
    assert_eq!(
        wire.ports[0].error,
        "could not open network device lo (Invalid argument)"
    );
    // No ofport although ovs-vswitchd caught up: the datapath was not opened.
    let skipped = bridge_with_local("", interface("br1", "internal", None));
    let text = bridge_error(&skipped, true);
    assert!(
        text.contains("did not create the bridge") && text.contains("type system"),
        "{text}"
    );
    // Not caught up yet: nothing to say.
    assert_eq!(bridge_error(&skipped, false), "");
}

#[test]
fn bridges_and_ports_get_resource_names_and_interface_state() {
    let bridge = Bridge {
        uuid: uuid(3),
        name: "br0".to_owned(),
        datapath_type: "netdev".to_owned(),
        fail_mode: None,
        ports: vec![
            port("br0", interface("br0", "internal", Some(65534))),
            port("vx0", interface("vx0", "vxlan", None)),
        ],
        other_config: BTreeMap::new(),
        external_ids: BTreeMap::new(),
    };
    let wire = bridge_to_wire(&bridge, true);
    assert_eq!(wire.error, "", "the local port is open");
    assert_eq!(wire.name, "bridges/br0");
    assert_eq!(wire.bridge, "br0");
    assert_eq!(wire.datapath_type, "netdev");
    assert_eq!(wire.uuid, "00000000-0000-4000-8000-000000000003");
    let local = &wire.ports[0];
    assert_eq!(local.name, "bridges/br0/ports/br0");
    assert_eq!(
        (local.interface_type.as_str(), local.ofport),
        ("internal", 65534)
    );
    assert_eq!(
        (local.admin_state.as_str(), local.link_state.as_str()),
        ("up", "down")
    );
    let vx = &wire.ports[1];
    assert_eq!(vx.ofport, -1, "not assigned yet");
    assert_eq!(vx.options.get("key").map(String::as_str), Some("5"));
}

#[test]
fn offload_settings_read_the_keys_and_keep_the_whole_map() {
    let root = OpenVswitch {
        uuid: uuid(4),
        other_config: BTreeMap::from([
            ("hw-offload".to_owned(), "true".to_owned()),
            ("tc-policy".to_owned(), "skip_sw".to_owned()),
            ("max-idle".to_owned(), "30000".to_owned()),
            ("vendor-knob".to_owned(), "x".to_owned()),
        ]),
        external_ids: BTreeMap::new(),
        next_cfg: 7,
        cur_cfg: 6,
        ovs_version: Some("3.1.0".to_owned()),
        db_version: None,
        datapath_types: Vec::new(),
        iface_types: Vec::new(),
    };
    let s = settings_to_wire(&root, false);
    assert!(s.hw_offload && !s.offload_active && !s.doca_init);
    assert_eq!(s.tc_policy, v1::TcPolicy::SkipSw as i32);
    assert_eq!(s.max_idle_ms, 30_000);
    assert_eq!((s.next_cfg, s.cur_cfg), (7, 6));
    assert_eq!(s.ovs_version, "3.1.0");
    assert_eq!(s.other_config.len(), 4);
    assert_eq!(tc_policy_from_config(None), v1::TcPolicy::None);
    assert_eq!(
        tc_policy_from_config(Some("bogus")),
        v1::TcPolicy::Unspecified
    );
    assert_eq!(tc_policy_value(v1::TcPolicy::SkipHw), Some("skip_hw"));
    assert_eq!(tc_policy_value(v1::TcPolicy::Unspecified), None);
}

#[test]
fn flow_filters_map_to_dump_types() {
    assert_eq!(dump_type(v1::FlowFilter::Unspecified), DumpType::All);
    assert_eq!(dump_type(v1::FlowFilter::Offloaded), DumpType::Offloaded);
    assert_eq!(
        dump_type(v1::FlowFilter::NonOffloaded),
        DumpType::NonOffloaded
    );
    assert_eq!(
        dump_type(v1::FlowFilter::PartiallyOffloaded),
        DumpType::PartiallyOffloaded
    );
}

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
