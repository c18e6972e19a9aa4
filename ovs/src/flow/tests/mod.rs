//! Line-level tests: every documented layout of a flow line, field by field.

use super::*;

fn parse(line: &str) -> DatapathFlow<'_> {
    match DatapathFlow::parse(line) {
        Ok(f) => f,
        Err(e) => panic!("{e}"),
    }
}

fn err(line: &str) -> FlowParseError {
    DatapathFlow::parse(line).expect_err("line is malformed")
}

/// The reference's community `-m` example (ovn-org/ovn#173), with the elided parts filled.
const OVN_TC: &str = "ufid:25030bd6-7e33-4ba5-9c1b-aa4b6f0d2a11, skb_priority(0/0),\
tunnel(tun_id=0x1,src=172.16.0.2,dst=172.16.0.1,ttl=64/0,tp_src=59246/0,tp_dst=6081/0,\
geneve({class=0x102,type=0x80,len=4,0x10002/0x7fffffff}),flags(-df+csum+key)),skb_mark(0/0),\
ct_state(0/0x21),ct_zone(0/0),ct_mark(0/0),ct_label(0/0),recirc_id(0),dp_hash(0/0),\
in_port(genev_sys_6081),packet_type(ns=0/0,id=0/0),\
eth(src=00:00:00:00:00:00/00:00:00:00:00:00,dst=0a:58:0a:f4:00:05),eth_type(0x0800),\
ipv4(src=10.244.0.6/0.0.0.0,dst=10.244.0.5,proto=6/0,tos=0/0x3,ttl=64/0,frag=no), \
packets:36, bytes:3024, used:0.320s, offloaded:yes, dp:tc, actions:ovn-k8s-mp0";

#[test]
fn verbose_tc_offloaded_flow() {
    let f = parse(OVN_TC);
    assert_eq!(
        f.ufid.map(|u| u.to_string()).as_deref(),
        Some("25030bd6-7e33-4ba5-9c1b-aa4b6f0d2a11")
    );
    assert_eq!((f.packets, f.bytes, f.used), (36, 3024, Used::Millis(320)));
    assert_eq!(
        (f.offloaded, f.dp.clone()),
        (Offloaded::Yes, Some(DpLayer::Tc))
    );
    assert_eq!(f.flags, None);
    assert_eq!(f.key.len(), 14);
    let tunnel = f.key_field("tunnel").expect("tunnel key");
    assert_eq!(tunnel.sub_field("tp_dst"), Some("6081/0"));
    assert!(tunnel.text().ends_with("flags(-df+csum+key))"));
    assert_eq!(
        f.key_field("ct_state").and_then(|k| k.value_and_mask()),
        Some(("0", Some("0x21")))
    );
    assert_eq!(f.in_port(), Some(PortRef::Name("genev_sys_6081")));
    let ipv4 = f.key_field("ipv4").expect("ipv4 key");
    assert_eq!(ipv4.sub_field("src"), Some("10.244.0.6/0.0.0.0"));
    assert_eq!(ipv4.sub_field("frag"), Some("no"));
    assert_eq!(
        f.output_ports().collect::<Vec<_>>(),
        [PortRef::Name("ovn-k8s-mp0")]
    );
    assert!(f.is_verbose() && !f.is_drop());
}

#[test]
fn tc_software_only_flow_has_no_offloaded_field() {
    let f = parse(
        "ufid:0f4e1c6a-2b43-4d1e-9a55-7c2d0e9b1a33, recirc_id(0),in_port(pf0vf0),eth_type(0x0800),\
         ipv4(frag=no), packets:0, bytes:0, used:never, dp:tc, \
         actions:ct(commit,zone=64000,mark=0x1/0x1,nat(src=10.0.0.1)),recirc(0x2)",
    );
    assert_eq!((f.offloaded, f.used), (Offloaded::No, Used::Never));
    assert_eq!(f.dp, Some(DpLayer::Tc));
    let kinds: Vec<_> = f.actions.iter().map(Action::kind).collect();
    assert_eq!(kinds, [ActionKind::Ct, ActionKind::Recirc(2)]);
    assert_eq!(
        f.actions[0].args(),
        Some("commit,zone=64000,mark=0x1/0x1,nat(src=10.0.0.1)")
    );
    assert_eq!(f.output_ports().count(), 0);
}

#[test]
fn terse_lines_leave_offload_unknown() {
    let f = parse(
        "recirc_id(0),in_port(2),eth(src=0c:42:a1:de:ad:01,dst=0c:42:a1:be:ef:02),\
         eth_type(0x0800),ipv4(src=10.0.0.1,dst=10.0.0.2,proto=6,frag=no), \
         packets:1000, bytes:98000, used:0.004s, flags:SFP., actions:3",
    );
    assert_eq!(
        (f.ufid, f.dp.clone(), f.offloaded),
        (None, None, Offloaded::Unknown)
    );
    assert_eq!(f.flags.as_deref(), Some("SFP."));
    assert_eq!(f.in_port(), Some(PortRef::Number(2)));
    assert_eq!(f.output_ports().collect::<Vec<_>>(), [PortRef::Number(3)]);
    assert!(!f.is_verbose());
}

#[test]
fn partial_dpdk_doca_and_extra_info() {
    let partial = parse(
        "ufid:c3a4b6d2-1111-2222-3333-444455556666, recirc_id(0),in_port(dpdk0),\
         packet_type(ns=0,id=0),eth_type(0x0800),ipv4(frag=no), packets:12, bytes:720, \
         used:0.001s, offloaded:partial, dp:ovs, actions:vhost0, dp-extra-info:miniflow_bits(4,1)",
    );
    assert_eq!(
        (partial.offloaded, partial.dp.clone()),
        (Offloaded::Partial, Some(DpLayer::Ovs))
    );
    assert_eq!(partial.dp_extra_info.as_deref(), Some("miniflow_bits(4,1)"));
    assert_eq!(partial.actions.len(), 1);
    let doca = parse(
        "ufid:1e2d3c4b-5a69-7887-96a5-b4c3d2e1f001, recirc_id(0),in_port(pf0hpf),\
         eth_type(0x0800),ipv4(frag=no), packets:10500, bytes:1029000, used:0.740s, \
         offloaded:yes, dp:doca, actions:p0",
    );
    assert_eq!(
        (doca.offloaded, doca.dp),
        (Offloaded::Yes, Some(DpLayer::Doca))
    );
}

#[test]
fn unknown_fields_are_kept_in_order() {
    let f = parse(
        "in_port(1), packets:1, bytes:2, used:never, hw_hits:7, offloaded:maybe, \
         dp:dummy, actions:drop, vendor-note:x(1, 2)",
    );
    let extra: Vec<_> = f.extra.iter().map(|x| (&*x.name, &*x.value)).collect();
    assert_eq!(
        extra,
        [
            ("hw_hits", "7"),
            ("offloaded", "maybe"),
            ("vendor-note", "x(1, 2)")
        ]
    );
    assert_eq!(f.offloaded, Offloaded::Unknown);
    assert_eq!(f.dp.as_ref().map(DpLayer::as_str), Some("dummy"));
    assert!(f.is_drop());
}

#[test]
fn nested_and_long_action_lists() {
    let outputs: Vec<String> = (1..=200).map(|p| p.to_string()).collect();
    let line = format!(
        "in_port(1), packets:1, bytes:1, used:1.000s, actions:push_vlan(vid=100,pcp=0),\
         set(tunnel(tun_id=0x5,dst=1.1.1.1,ttl=64,tp_dst=4789,flags(df|key))),\
         clone(tnl_push(tnl_port(4789),header(size=50,type=4,eth(dst=aa:bb:cc:dd:ee:ff,\
         src=11:22:33:44:55:66,dl_type=0x0800),ipv4(src=1.1.1.1,dst=2.2.2.2,proto=17,tos=0,\
         ttl=64,frag=0x4000),udp(src=0,dst=4789,csum=0x0),vxlan(flags=0x8000000,vni=0x5)),\
         out_port(2)),3),check_pkt_len(size=200,gt(4),le(5)),pop_vlan,{}",
        outputs.join(",")
    );
    let f = parse(&line);
    assert_eq!(f.actions.len(), 5 + 200);
    assert_eq!(f.actions[1].kind(), ActionKind::Set);
    assert_eq!(f.actions[2].kind(), ActionKind::Clone);
    assert_eq!(f.actions[3].kind(), ActionKind::CheckPktLen);
    assert_eq!(f.actions[4].kind(), ActionKind::PopVlan);
    assert_eq!(f.output_ports().last(), Some(PortRef::Number(200)));
}

#[test]
fn odd_but_printed_forms() {
    let empty = parse("<empty>, packets:0, bytes:0, used:never, actions:drop");
    assert_eq!(empty.key[0].name(), "<empty>");
    let no_key = parse(", packets:0, bytes:0, used:never, actions:drop");
    assert!(no_key.key.is_empty());
    let bad_len = parse("in_port(1), packets:0, bytes:0, used:never, actions:bad length 4, expected 8 for: action12(0102),2");
    assert_eq!(bad_len.actions.len(), 2);
    assert_eq!(bad_len.actions[0].kind(), ActionKind::Other);
    let quoted = parse("in_port(1), packets:0, bytes:0, used:never, actions:note(\"a, b: (c\"),1");
    assert_eq!(quoted.actions[0].args(), Some("\"a, b: (c\""));
    let spaces = parse("  in_port(1), packets:0, bytes:0, used:-0.001s, actions:1  \r");
    assert_eq!(spaces.used, Used::Millis(-1));
}

#[test]
fn malformed_lines_say_where_and_what() {
    let cases: [(&str, usize, &str); 12] = [
        ("in_port(1)", 11, "`, packets:` after the match key"),
        (
            "in_port(1, packets:1",
            21,
            "a closing `)` before the end of the line",
        ),
        (
            "ufid:1234, in_port(1)",
            6,
            "a ufid of 8-4-4-4-12 hex digits",
        ),
        (
            "in_port(1), packets:x, bytes:1, used:never, actions:1",
            21,
            "a packet count",
        ),
        (
            "in_port(1), packets:1, bytes:1, used:soon, actions:1",
            38,
            "`never` or seconds like `0.520s`",
        ),
        (
            "in_port(1), packets:1, bytes:1, actions:1",
            42,
            "a `used:` field",
        ),
        (
            "in_port(1), packets:1, bytes:1, used:never",
            43,
            "an `actions:` field",
        ),
        (
            "in_port(1), packets:1, bytes:1, used:never, actions:",
            53,
            "an action",
        ),
        (
            "in_port(1), packets:1, packets:1, bytes:1, used:never, actions:1",
            24,
            "only one `packets:`",
        ),
        (
            "in_port(1), packets:1, bytes:1, used:never, actions:1,,2",
            55,
            "an action",
        ),
        (
            "in_port(1), packets:1, bytes 1, used:never, actions:1",
            24,
            "a `name:value` field",
        ),
        (
            "in_port(1)x, packets:1, bytes:1, used:never, actions:1",
            11,
            "`,` or the end of the item after `)`",
        ),
    ];
    for (line, column, expected) in cases {
        let e = err(line);
        assert_eq!(
            (e.line, e.column, e.expected),
            (1, column, expected),
            "{line}"
        );
        assert_eq!(e.text, line);
    }
}

#[test]
fn display_round_trips_and_owned_copies_are_equal() {
    for line in [
        OVN_TC,
        "in_port(1), packets:1, bytes:2, used:1.5s, extra:1, actions:1,2",
    ] {
        let f = parse(line);
        let printed = f.to_string();
        assert_eq!(parse(&printed), f, "{printed}");
        assert_eq!(f.clone().into_owned(), f);
    }
    assert_eq!(parse(OVN_TC).to_string(), OVN_TC);
}

mod record;
mod scan_equivalence;
