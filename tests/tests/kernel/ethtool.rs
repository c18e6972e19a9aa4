//! dpu-probe's `SIOCETHTOOL` reader (the only way to the driver-private per-priority PFC
//! counters `roce dcb` needs) against the anchor a user would run, `ethtool -S`, on a
//! veth pair inside namespaces the test creates.

use std::collections::BTreeMap;

use dpu_probe::ethtool_stats::read_ethtool_stats_in;
use dpu_tests::skip;

use crate::missing_prerequisite;
use crate::netlink::Pair;

/// `ethtool -S` lines: `     name: value`, after a `NIC statistics:` title.
fn parse_ethtool_s(text: &str) -> BTreeMap<String, u64> {
    text.lines()
        .filter_map(|l| l.trim().rsplit_once(": "))
        .filter_map(|(name, value)| Some((name.to_owned(), value.trim().parse().ok()?)))
        .collect()
}

#[test]
fn the_ioctl_reads_what_ethtool_s_prints_and_the_peer_index_is_right() {
    if let Some(reason) = missing_prerequisite() {
        skip!("{reason}");
    }
    if !std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default())
        .any(|d| d.join("ethtool").is_file())
    {
        skip!("`ethtool` is not installed (apt: ethtool), the anchor this test compares with");
    }
    let pair = Pair::create("ethtool").expect("namespaces and veth");
    // Loopback has no ethtool_ops: no statistics, not an error.
    let lo = read_ethtool_stats_in(&pair.a.path(), "lo").expect("lo");
    assert!(lo.is_empty(), "{lo:?}");
    let ours = read_ethtool_stats_in(&pair.a.path(), "va").expect("ioctl");
    assert!(!ours.is_empty(), "veth has driver statistics");
    let theirs = parse_ethtool_s(&pair.a.exec("ethtool", &["-S", "va"]).expect("ethtool -S"));
    let ours_map: BTreeMap<String, u64> = ours.iter().map(|s| (s.name.clone(), s.value)).collect();
    assert_eq!(ours.len(), ours_map.len(), "names are unique: {ours:?}");
    assert_eq!(ours_map, theirs, "the ioctl and ethtool -S disagree");
    // A value that could be wrong in a way a zero could not: veth's peer_ifindex is the
    // index of vb in the other namespace.
    let vb = pair.b.ip(&["-o", "link", "show", "vb"]).expect("ip link");
    let vb_index: u64 = vb
        .split(':')
        .next()
        .and_then(|n| n.trim().parse().ok())
        .expect("ifindex");
    assert_eq!(ours_map.get("peer_ifindex"), Some(&vb_index), "{ours:?}");
    // The interface is looked up in the namespace entered, not the caller's.
    let err = read_ethtool_stats_in(&pair.b.path(), "va").expect_err("va is not in b");
    assert!(err.to_string().contains("\"va\""), "{err}");
}
