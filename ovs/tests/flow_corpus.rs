//! The flow-dump parser against a corpus of realistic dumps: OVS 2.17 on a BlueField with
//! the kernel datapath and tc offload (`-m`), terse dumps (no `-m`), `--names`, and an
//! OVS-DOCA userspace dump with PMD thread headers. Asserts field values, the `type=`
//! filter counts OVS itself would print, and that every flow prints back to an equal flow.

use dpu_ovs::flow::{
    parse_dump, parse_dump_all, ActionKind, DatapathFlow, DpLayer, DumpType, FlowThread, Offloaded,
    PortRef, TypeFilter, Ufid, Used,
};

const KERNEL_TC: &str = include_str!("data/dump-flows-m-kernel-tc.txt");
const TERSE: &str = include_str!("data/dump-flows-terse.txt");
const NAMES: &str = include_str!("data/dump-flows-names.txt");
const DOCA_PMD: &str = include_str!("data/dump-flows-m-doca-pmd.txt");

fn flows(text: &str) -> Vec<DatapathFlow<'_>> {
    match parse_dump_all(text) {
        Ok(v) => v,
        Err(e) => panic!("{e}"),
    }
}

fn count(flows: &[DatapathFlow<'_>], t: DumpType) -> usize {
    flows.iter().filter(|f| t.matches(f) == Some(true)).count()
}

#[test]
fn kernel_tc_dump_fields() {
    let f = flows(KERNEL_TC);
    assert_eq!(f.len(), 10);
    let first = &f[0];
    assert_eq!(
        first.ufid,
        Ufid::parse("b5a6b6d8-3f0e-4b8e-8d6e-6f1c2d3e4f50")
    );
    assert_eq!(
        (first.packets, first.bytes, first.used),
        (10500, 1_028_916, Used::Millis(740))
    );
    assert_eq!(
        (first.offloaded, first.dp.clone()),
        (Offloaded::Yes, Some(DpLayer::Tc))
    );
    assert_eq!(first.in_port(), Some(PortRef::Name("pf0hpf")));
    assert_eq!(
        first.output_ports().collect::<Vec<_>>(),
        [PortRef::Name("p0")]
    );
    let eth = first.key_field("eth").expect("eth key");
    assert_eq!(eth.sub_field("dst"), Some("0c:42:a1:d1:d0:6b"));
    assert_eq!(
        first.key_field("skb_priority").map(|k| k.args()),
        Some(Some("0/0"))
    );

    // The tc-software-only conntrack flow: dp:tc without offloaded.
    let ct = &f[3];
    assert_eq!(
        (ct.offloaded, ct.used, ct.packets),
        (Offloaded::No, Used::Never, 0)
    );
    assert_eq!(ct.actions[1].kind(), ActionKind::Recirc(2));
    assert_eq!(
        ct.key_field("ct_state").and_then(|k| k.args()),
        Some("-new-est-rel-rpl-inv-trk-snat-dnat")
    );
    // The recirculated half, matching on recirc_id(0x2).
    assert_eq!(
        f[4].key_field("recirc_id").and_then(|k| k.args()),
        Some("0x2")
    );
    // Flood to two ports; VLAN pop; slow path; explicit drop.
    assert_eq!(f[5].output_ports().count(), 2);
    assert_eq!(f[7].actions[0].kind(), ActionKind::PopVlan);
    let encap = f[7].key_field("encap").expect("encap key");
    assert!(encap
        .args()
        .is_some_and(|a| a.starts_with("eth_type(0x0800),ipv4(")));
    assert_eq!(f[7].bytes, 3_611_213_834);
    assert_eq!(
        (f[8].flags.as_deref(), f[8].actions[0].kind()),
        (Some("SP."), ActionKind::Userspace)
    );
    assert!(f[9].is_drop());
    assert!(f.iter().all(|x| x.thread.is_none() && x.is_verbose()));

    assert_eq!(count(&f, DumpType::Offloaded), 5);
    assert_eq!(count(&f, DumpType::NonOffloaded), 5);
    assert_eq!(count(&f, DumpType::PartiallyOffloaded), 0);
    assert_eq!(count(&f, DumpType::Tc), 6);
    assert_eq!(count(&f, DumpType::Ovs), 4);
    assert_eq!(count(&f, DumpType::Dpdk), 0);
    assert_eq!(count(&f, DumpType::All), 10);
    let hw_or_ovs: TypeFilter = "offloaded,ovs".parse().expect("valid type list");
    assert_eq!(
        f.iter()
            .filter(|x| hw_or_ovs.matches(x) == Some(true))
            .count(),
        9
    );
}

#[test]
fn terse_dump_fields() {
    let f = flows(TERSE);
    assert_eq!(f.len(), 8);
    assert!(f.iter().all(|x| x.ufid.is_none() && x.dp.is_none()));
    assert!(f.iter().all(|x| x.offloaded == Offloaded::Unknown));
    assert_eq!(f[0].in_port(), Some(PortRef::Number(2)));
    assert_eq!(
        f[0].output_ports().collect::<Vec<_>>(),
        [PortRef::Number(3)]
    );
    assert_eq!(f[1].flags.as_deref(), Some("SFP."));
    assert_eq!(
        f[2].actions.iter().map(|a| a.kind()).collect::<Vec<_>>(),
        [ActionKind::Ct, ActionKind::Recirc(2)]
    );
    assert_eq!(
        f[4].output_ports().collect::<Vec<_>>(),
        [PortRef::Number(2), PortRef::Number(6)]
    );
    assert!(f[6].is_drop());
    let set = &f[7].actions[0];
    assert_eq!((set.kind(), set.name()), (ActionKind::Set, "set"));
    assert_eq!(
        f[7].key_field("tunnel").and_then(|k| k.sub_field("tun_id")),
        Some("0x2a")
    );
    // Without -m nothing tells the offload state: every filter but `all` is undecided.
    for t in DumpType::ALL {
        let expect = if t == DumpType::All { Some(true) } else { None };
        assert!(f.iter().all(|x| t.matches(x) == expect), "type={t}");
    }
}

#[test]
fn names_dump_fields() {
    let f = flows(NAMES);
    assert_eq!(f.len(), 4);
    assert_eq!(f[2].in_port(), Some(PortRef::Name("en3f0pf0sf0")));
    assert_eq!(
        f[2].output_ports().collect::<Vec<_>>(),
        [PortRef::Name("p0"), PortRef::Name("pf0hpf")]
    );
    let kinds: Vec<_> = f[3].actions.iter().map(|a| a.kind()).collect();
    assert_eq!(
        kinds,
        [
            ActionKind::PushVlan,
            ActionKind::Output,
            ActionKind::Meter,
            ActionKind::Trunc,
            ActionKind::Output
        ]
    );
    assert_eq!(f[3].actions[0].args(), Some("vid=100,pcp=3"));
}

#[test]
fn doca_pmd_dump_fields_and_threads() {
    let f = flows(DOCA_PMD);
    assert_eq!(f.len(), 6);
    let threads: Vec<_> = f.iter().map(|x| x.thread).collect();
    let (main, p2, p14) = (
        Some(FlowThread::Main),
        Some(FlowThread::Pmd(2)),
        Some(FlowThread::Pmd(14)),
    );
    assert_eq!(threads, [main, p2, p2, p14, p14, p14]);
    assert_eq!(
        (f[1].offloaded, f[1].dp.clone()),
        (Offloaded::Yes, Some(DpLayer::Doca))
    );
    assert_eq!(f[1].dp_extra_info.as_deref(), Some("miniflow_bits(4,1)"));
    assert_eq!(
        (f[2].offloaded, f[2].flags.as_deref()),
        (Offloaded::Partial, Some("SP."))
    );
    assert_eq!(
        (f[4].offloaded, f[4].dp.clone()),
        (Offloaded::Yes, Some(DpLayer::Dpdk))
    );
    let tnl: Vec<_> = f[5].actions.iter().map(|a| a.kind()).collect();
    assert_eq!(tnl, [ActionKind::TunnelPop, ActionKind::Clone]);
    assert_eq!(
        f[5].output_ports().count(),
        0,
        "outputs nested in clone() are not top-level"
    );

    assert_eq!(count(&f, DumpType::Offloaded), 2);
    assert_eq!(count(&f, DumpType::PartiallyOffloaded), 1);
    assert_eq!(count(&f, DumpType::NonOffloaded), 3);
    assert_eq!(count(&f, DumpType::Ovs), 4);
    assert_eq!(count(&f, DumpType::Dpdk), 1);
    assert_eq!(count(&f, DumpType::Tc), 0);
}

#[test]
fn every_corpus_flow_prints_back_to_an_equal_flow() {
    for text in [KERNEL_TC, TERSE, NAMES, DOCA_PMD] {
        for flow in flows(text) {
            let printed = flow.to_string();
            let mut again = DatapathFlow::parse(&printed).unwrap_or_else(|e| panic!("{e}"));
            again.thread = flow.thread;
            assert_eq!(again, flow);
            assert_eq!(flow.clone().into_owned(), flow);
        }
    }
    // OVS's own text comes back byte for byte (no non-canonical numbers in the corpus).
    for line in KERNEL_TC.lines() {
        assert_eq!(
            DatapathFlow::parse(line).map(|f| f.to_string()).as_deref(),
            Ok(line)
        );
    }
}

#[test]
fn a_dump_with_a_bad_line_names_it() {
    let mut text = String::from(TERSE);
    text.push_str("recirc_id(0),in_port(3), packets:1, bytes:60, used:sometime, actions:2\n");
    text.push_str(NAMES);
    let results: Vec<_> = parse_dump(&text).collect();
    assert_eq!(results.len(), 8 + 1 + 4);
    let bad = results[8].as_ref().expect_err("line 9 is malformed");
    assert_eq!((bad.line, bad.column), (9, 52));
    assert!(bad.to_string().contains("used:sometime"), "{bad}");
    assert_eq!(results.iter().filter(|r| r.is_ok()).count(), 12);
}
