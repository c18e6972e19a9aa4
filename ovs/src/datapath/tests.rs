use super::*;

/// OVS 3.1's `ovs-appctl dpctl/show` on a kernel datapath with two ports (the format of
/// `show_dpif`, lib/dpctl.c), and the userspace datapath after it.
const TWO_DATAPATHS: &str = "\
system@ovs-system:
  lookups: hit:38 missed:10 lost:1
  flows: 2
  masks: hit:58 total:2 hit/pkt:1.21
  cache: hit:28 hit-rate:58.33%
  caches:
    masks-cache: size:256
  port 0: ovs-system (internal)
  port 1: pf0hpf
netdev@ovs-netdev:
  lookups: hit:0 missed:0 lost:0
  flows: 0
  port 0: ovs-netdev (tap)
";

#[test]
fn each_datapath_has_its_lookups_and_flows() {
    let parsed = parse_show(TWO_DATAPATHS).expect("parses");
    assert_eq!(
        parsed,
        [
            DatapathStats {
                name: "system@ovs-system".to_owned(),
                lookups: Some(Lookups {
                    hit: 38,
                    missed: 10,
                    lost: 1
                }),
                flows: Some(2),
            },
            DatapathStats {
                name: "netdev@ovs-netdev".to_owned(),
                lookups: Some(Lookups {
                    hit: 0,
                    missed: 0,
                    lost: 0
                }),
                flows: Some(0),
            },
        ]
    );
}

#[test]
fn a_datapath_without_statistics_has_none_not_zero() {
    let parsed =
        parse_show("system@ovs-system:\n  port 0: ovs-system (internal)\n").expect("parses");
    assert_eq!(parsed.len(), 1);
    assert_eq!((parsed[0].lookups, parsed[0].flows), (None, None));
    assert!(parse_show("").expect("empty").is_empty());
}

#[test]
fn lines_that_are_not_what_ovs_prints_are_errors_naming_them() {
    for (text, line) in [
        ("  lookups: hit:1 missed:2 lost:3\n", 1),
        ("system@ovs-system:\n  lookups: hit:1 missed:2\n", 2),
        ("system@ovs-system:\n  lookups: hit:1 missed:x lost:0\n", 2),
        (
            "system@ovs-system:\n  lookups: hit:1 hit:1 missed:2 lost:0\n",
            2,
        ),
        (
            "system@ovs-system:\n  lookups: hit:1 missed:2 lost:0 extra:4\n",
            2,
        ),
        ("system@ovs-system:\n  lookups: hit:-1 missed:2 lost:0\n", 2),
        (
            "system@ovs-system:\n  lookups: hit:1 missed:2 lost:0\n  flows: many\n",
            3,
        ),
    ] {
        let err = parse_show(text).expect_err(text);
        assert_eq!(err.line, line, "{text}: {err}");
        assert!(err.to_string().contains("dpctl/show line"), "{err}");
    }
    // Counters at u64's edge are read exactly.
    let max = format!(
        "system@ovs-system:\n  lookups: hit:{m} missed:{m} lost:{m}\n",
        m = u64::MAX
    );
    assert_eq!(
        parse_show(&max).expect("max")[0].lookups.map(|l| l.missed),
        Some(u64::MAX)
    );
}
