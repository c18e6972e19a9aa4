//! dpu-probe's netlink readers against the running kernel, inside namespaces the tests
//! create: link stats64 move with real pings, a namespace socket sees only its own
//! namespace, veth reports offload xstats as unsupported, and a software-only tc filter
//! counts software packets and nothing in hardware.

use std::collections::BTreeSet;

use dpu_probe::counters::{CounterSelector, Sampler};
use dpu_probe::netlink::{
    link_samples, offload_samples, tc_samples, LinkEvents, LinkStats, RouteSocket, RouteStats,
    TcFilter, TcParent,
};
use dpu_probe::snapshot::{diff, Change, CounterKey, Snapshot, Source, Unit};
use dpu_probe::SysRoot;
use dpu_tests::{skip, skip_kernel_feature};

use crate::{missing_prerequisite, Netns};

const PINGS: u64 = 5;
/// An echo request on the wire: 56 data + 8 ICMP + 20 IPv4 + 14 Ethernet bytes.
const FRAME_BYTES: u64 = 98;
/// What tc counts of it: the Ethernet header is already pulled at ingress.
const TC_BYTES: u64 = FRAME_BYTES - 14;
const COOKIE: &str = "d0c0ffee00000001";

/// Two namespaces joined by a veth pair: `va` 192.0.2.1 in `a`, `vb` 192.0.2.2 in `b`.
pub(crate) struct Pair {
    pub(crate) a: Netns,
    pub(crate) b: Netns,
}

impl Pair {
    pub(crate) fn create(purpose: &str) -> Result<Self, String> {
        let a = Netns::create(&format!("{purpose}-a"))?;
        let b = Netns::create(&format!("{purpose}-b"))?;
        a.ip(&[
            "link",
            "add",
            "va",
            "type",
            "veth",
            "peer",
            "name",
            "vb",
            "netns",
            b.name(),
        ])?;
        a.ip(&["addr", "add", "192.0.2.1/24", "dev", "va"])?;
        b.ip(&["addr", "add", "192.0.2.2/24", "dev", "vb"])?;
        a.ip(&["link", "set", "va", "up"])?;
        b.ip(&["link", "set", "vb", "up"])?;
        Ok(Self { a, b })
    }

    /// `PINGS` echo requests from `a` to `b`, all answered.
    fn ping(&self) -> Result<String, String> {
        let count = PINGS.to_string();
        self.a.exec(
            "ping",
            &["-c", &count, "-i", "0.2", "-W", "2", "-q", "192.0.2.2"],
        )
    }
}

fn link<'a>(links: &'a [LinkStats], name: &str) -> &'a LinkStats {
    links
        .iter()
        .find(|l| l.ifname == name)
        .unwrap_or_else(|| panic!("{name} missing from {links:?}"))
}

fn names(links: &[LinkStats]) -> BTreeSet<String> {
    links.iter().map(|l| l.ifname.clone()).collect()
}

/// The namespace of the calling thread, to prove `open_in_netns` never moves it.
fn own_netns() -> String {
    std::fs::read_link("/proc/thread-self/ns/net")
        .map(|p| p.display().to_string())
        .unwrap_or_default()
}

#[test]
fn link_counters_in_a_namespace_move_by_at_least_the_pings() {
    if let Some(reason) = missing_prerequisite() {
        skip!("{reason}");
    }
    let pair = Pair::create("stats").expect("namespaces and veth");
    let mut a = RouteSocket::open_in_netns(pair.a.path()).expect("socket in a");
    let mut b = RouteSocket::open_in_named_netns(pair.b.name()).expect("socket in b");
    let before_a = link(&a.links().expect("links a"), "va").clone();
    let before_b = link(&b.links().expect("links b"), "vb").clone();

    pair.ping().expect("ping across the veth");

    let after_a = link(&a.links().expect("links a"), "va").clone();
    let after_b = link(&b.links().expect("links b"), "vb").clone();
    assert!(
        after_a.is_admin_up() && after_a.is_lower_up(),
        "{after_a:?}"
    );
    assert_eq!(after_a.operstate, "up");
    assert_eq!(after_a.mtu, Some(1500));
    let (ca0, ca1) = (
        before_a.counters.expect("va"),
        after_a.counters.expect("va"),
    );
    let (cb0, cb1) = (
        before_b.counters.expect("vb"),
        after_b.counters.expect("vb"),
    );
    assert_eq!(ca1.width_bits, 64, "IFLA_STATS64 present on veth");
    assert!(
        ca1.tx_packets - ca0.tx_packets >= PINGS,
        "{ca0:?} -> {ca1:?}"
    );
    assert!(
        ca1.rx_packets - ca0.rx_packets >= PINGS,
        "replies: {ca0:?} -> {ca1:?}"
    );
    assert!(
        ca1.tx_bytes - ca0.tx_bytes >= PINGS * FRAME_BYTES,
        "{ca0:?} -> {ca1:?}"
    );
    assert!(
        cb1.rx_packets - cb0.rx_packets >= PINGS,
        "{cb0:?} -> {cb1:?}"
    );
    assert!(
        cb1.rx_bytes - cb0.rx_bytes >= PINGS * FRAME_BYTES,
        "{cb0:?} -> {cb1:?}"
    );

    let samples = link_samples(&after_a);
    let tx = samples
        .iter()
        .find(|s| s.key.counter == "tx_packets")
        .expect("tx_packets sample");
    assert_eq!(
        (tx.key.source, tx.key.object.as_str()),
        (Source::Netdev, "netdevs/va")
    );
    assert_eq!((tx.value, tx.unit), (ca1.tx_packets, Unit::Packets));
}

#[test]
fn a_namespace_socket_sees_only_its_own_links() {
    if let Some(reason) = missing_prerequisite() {
        skip!("{reason}");
    }
    let ns = Netns::create("isolation").expect("namespace");
    let (inner, peer) = (
        format!("dpi{}", std::process::id() % 100_000),
        format!("dpo{}", std::process::id() % 100_000),
    );
    ns.ip(&["link", "add", &inner, "type", "veth", "peer", "name", &peer])
        .expect("veth inside");
    let thread_ns = own_netns();

    let inside = RouteSocket::open_in_netns(ns.path())
        .expect("socket inside")
        .links()
        .expect("links inside");
    let host = RouteSocket::open()
        .expect("host socket")
        .links()
        .expect("host links");

    assert_eq!(
        own_netns(),
        thread_ns,
        "the calling thread never changes namespace"
    );
    let expected: BTreeSet<String> = ["lo".to_owned(), inner.clone(), peer.clone()].into();
    assert_eq!(names(&inside), expected);
    let host_names = names(&host);
    assert!(
        !host_names.contains(&inner) && !host_names.contains(&peer),
        "{host_names:?}"
    );
    for name in host_names.iter().filter(|n| *n != "lo") {
        assert!(
            !names(&inside).contains(name),
            "host link {name} visible inside"
        );
    }
}

#[test]
fn offload_xstats_on_veth_are_unsupported_not_an_error() {
    if let Some(reason) = missing_prerequisite() {
        skip!("{reason}");
    }
    let pair = Pair::create("offload").expect("namespaces and veth");
    let mut a = RouteSocket::open_in_netns(pair.a.path()).expect("socket in a");
    let links = a.links().expect("links");
    let offload = a
        .offload_stats()
        .expect("RTM_GETSTATS dump succeeds on veth");
    let va = link(&links, "va");
    let entry = offload
        .iter()
        .find(|o| o.ifindex == va.ifindex)
        .unwrap_or_else(|| panic!("no answer for va in {offload:?}"));
    assert!(!entry.is_supported(), "veth has no CPU_HIT: {entry:?}");
    assert!(offload_samples("va", entry).is_empty());
    assert_eq!(offload.len(), links.len(), "one answer per device");
}

/// Why `tc` refused, when the refusal means "this kernel lacks the module".
fn kernel_lacks(error: &str) -> bool {
    error.contains("not found") || error.contains("Unknown")
}

/// Adds a software-only ICMP filter on `vb` ingress, pings, and checks what the reader
/// reports. `prepare` are `ip` commands run in namespace `b` first (the mirror target of
/// the u32 case), `filter` the classifier part of `tc filter add`. Returns `Err` with
/// the reason when the kernel lacks a classifier, action or device type.
fn software_filter_counts_pings(
    purpose: &str,
    prepare: &[&[&str]],
    filter: &[&str],
    action_kind: &str,
) -> Result<(), String> {
    let pair = Pair::create(purpose).expect("namespaces and veth");
    let tolerate_missing = |result: Result<String, String>| match result {
        Err(e) if kernel_lacks(&e) => Err(e),
        Err(e) => panic!("{e}"),
        Ok(_) => Ok(()),
    };
    for command in prepare {
        tolerate_missing(pair.b.ip(command))?;
    }
    pair.b
        .tc(&["qdisc", "add", "dev", "vb", "clsact"])
        .expect("clsact");
    let mut args = vec![
        "filter", "add", "dev", "vb", "ingress", "prio", "10", "protocol", "ip",
    ];
    args.extend_from_slice(filter);
    args.extend_from_slice(&["cookie", COOKIE]);
    tolerate_missing(pair.b.tc(&args))?;
    let mut b = RouteSocket::open_in_netns(pair.b.path()).expect("socket in b");
    let vb = link(&b.links().expect("links"), "vb").ifindex;
    let with_actions = |filters: Vec<TcFilter>| -> TcFilter {
        let mut found: Vec<_> = filters
            .into_iter()
            .filter(|f| !f.actions.is_empty())
            .collect();
        assert_eq!(found.len(), 1, "one filter with actions: {found:?}");
        found.remove(0)
    };
    let before = with_actions(b.tc_filters(vb, TcParent::Ingress).expect("dump before"));

    pair.ping().expect("ping across the veth");

    let after = with_actions(b.tc_filters(vb, TcParent::Ingress).expect("dump after"));
    assert_eq!(
        (after.ifindex, after.parent, after.prio),
        (vb, TcParent::Ingress, 10)
    );
    assert_eq!(
        (after.protocol, after.chain, after.handle),
        (0x0800, 0, before.handle)
    );
    let flags = after.flags.expect("classifier flags");
    assert!(
        flags.skip_hw() && flags.not_in_hw() && !flags.in_hw(),
        "{flags:?}"
    );
    assert_eq!(after.in_hw_count.unwrap_or(0), 0, "{after:?}");
    let action = &after.actions[0];
    assert_eq!(action.kind, action_kind);
    assert_eq!(action.cookie_hex().as_deref(), Some(COOKIE));
    let (s0, s1) = (
        before.actions[0].stats.expect("stats before"),
        action.stats.expect("stats after"),
    );
    assert!(
        s1.total.packets - s0.total.packets >= PINGS,
        "{s0:?} -> {s1:?}"
    );
    assert!(
        s1.total.bytes - s0.total.bytes >= PINGS * TC_BYTES,
        "{s0:?} -> {s1:?}"
    );
    assert_eq!(
        s1.hw.map_or(0, |hw| hw.packets + hw.bytes),
        0,
        "nothing in hardware"
    );
    assert_eq!(s1.software().packets, s1.total.packets);
    let times = action.times.expect("tcf_t of the action");
    assert!(times.first_used_ago.is_some(), "{times:?}");

    let samples = tc_samples("vb", &after);
    let object = format!("netdevs/vb/tc/ingress/10/{:#x}", after.handle);
    let packets = samples
        .iter()
        .find(|s| s.key.counter == "packets")
        .expect("packets sample");
    assert_eq!(
        (packets.key.source, &packets.key.object),
        (Source::Tc, &object)
    );
    assert_eq!(packets.value, s1.total.packets);
    if let Some(hw) = samples.iter().find(|s| s.key.counter == "hw_packets") {
        assert_eq!(hw.value, 0);
    }

    assert!(
        b.tc_filters(vb, TcParent::Egress)
            .expect("egress dump")
            .is_empty(),
        "nothing on egress"
    );
    assert!(
        b.tc_filters(vb, TcParent::Handle(0xffff_fff1))
            .expect("qdisc-handle dump")
            .is_empty(),
        "the clsact qdisc handle itself is not a filter parent"
    );
    Ok(())
}

#[test]
fn tc_flower_skip_hw_filter_counts_software_packets() {
    if let Some(reason) = missing_prerequisite() {
        skip!("{reason}");
    }
    let filter = [
        "flower", "skip_hw", "ip_proto", "icmp", "action", "gact", "pass",
    ];
    if let Err(reason) = software_filter_counts_pings("flower", &[], &filter, "gact") {
        skip_kernel_feature!("cls_flower or act_gact: {reason}");
    }
}

/// The same with u32 and mirred, which kernels without flower (minimal configs) have.
#[test]
fn tc_u32_skip_hw_filter_counts_software_packets() {
    if let Some(reason) = missing_prerequisite() {
        skip!("{reason}");
    }
    // The mirror target: an ifb device drops what did not come from a redirect, so the
    // copies go nowhere and each ping is answered once.
    let prepare: [&[&str]; 2] = [
        &["link", "add", "ifbm", "type", "ifb"],
        &["link", "set", "ifbm", "up"],
    ];
    let filter = [
        "u32", "skip_hw", "match", "ip", "protocol", "1", "0xff", "action", "mirred", "egress",
        "mirror", "dev", "ifbm",
    ];
    if let Err(reason) = software_filter_counts_pings("u32", &prepare, &filter, "mirred") {
        skip_kernel_feature!("cls_u32, act_mirred or ifb: {reason}");
    }
}

/// A veth in `a` whose peer is in `b`, both up. With `quiet`, IPv6 is disabled on both
/// ends first, so no DAD, router solicitation or MLD packet ever crosses it: the negative
/// control. Kernels without IPv6 have no such sysctl and send nothing anyway.
fn add_veth(pair: &Pair, name: &str, peer: &str, quiet: bool) {
    pair.a
        .ip(&[
            "link",
            "add",
            name,
            "type",
            "veth",
            "peer",
            "name",
            peer,
            "netns",
            pair.b.name(),
        ])
        .expect("veth");
    if quiet {
        for (ns, dev) in [(&pair.a, name), (&pair.b, peer)] {
            let key = format!("net.ipv6.conf.{dev}.disable_ipv6=1");
            if let Err(e) = ns.exec("sysctl", &["-qw", &key]) {
                eprintln!("no IPv6 to disable on {dev}: {e}");
            }
        }
    }
    pair.a.ip(&["link", "set", name, "up"]).expect("up");
    pair.b.ip(&["link", "set", peer, "up"]).expect("peer up");
}

/// The interface names a snapshot reports, from its `netdevs/{ifname}` objects.
fn snapshot_names(snap: &Snapshot) -> BTreeSet<String> {
    snap.samples
        .iter()
        .filter_map(|s| s.key.object.strip_prefix("netdevs/"))
        .map(str::to_owned)
        .collect()
}

fn netdev_key(ifname: &str, counter: &str) -> CounterKey {
    CounterKey {
        source: Source::Netdev,
        object: format!("netdevs/{ifname}"),
        counter: counter.to_owned().into(),
    }
}

/// The whole counter path the agent uses (`Sampler` in a namespace: one `RTM_GETSTATS`
/// dump per snapshot, names from a cached map kept exact by `RTNLGRP_LINK`
/// notifications) against real traffic and real link changes.
#[test]
fn sampler_in_a_namespace_follows_traffic_renames_additions_and_deletions() {
    if let Some(reason) = missing_prerequisite() {
        skip!("{reason}");
    }
    let pair = Pair::create("sampler").expect("namespaces and veth");
    add_veth(&pair, "vq", "vqp", true);
    add_veth(&pair, "vd", "vdp", false);
    let dir = tempfile::tempdir().expect("tempdir");
    let boot_id = dir.path().join("proc/sys/kernel/random/boot_id");
    std::fs::create_dir_all(boot_id.parent().expect("parent")).expect("mkdir");
    std::fs::write(&boot_id, "kernel-tier\n").expect("boot_id");
    let mut sampler = Sampler::in_netns(SysRoot::new(dir.path()), pair.a.path());
    let every = [CounterSelector::Netdev { ifname: None }];
    let mut socket = RouteSocket::open_in_netns(pair.a.path()).expect("socket in a");
    let kernel_names = |socket: &mut RouteSocket| names(&socket.links().expect("links"));

    let before = sampler.snapshot(&every);
    assert!(before.errors.is_empty(), "{:?}", before.errors);
    assert_eq!(snapshot_names(&before), kernel_names(&mut socket));
    pair.ping().expect("ping across the veth");
    let after = sampler.snapshot(&every);
    assert!(after.errors.is_empty(), "{:?}", after.errors);

    let d = diff(&before, &after);
    assert!(!d.rebooted && !d.has_discontinuities(), "{d:?}");
    let delta = |ifname: &str, counter: &str| {
        d.get(&netdev_key(ifname, counter))
            .unwrap_or_else(|| panic!("{ifname}/{counter} missing"))
            .change
    };
    let grew = |ifname: &str, counter: &str, at_least: u64| match delta(ifname, counter) {
        Change::Delta(n) => assert!(n >= at_least, "{ifname}/{counter} grew by {n} only"),
        other => panic!("{ifname}/{counter}: {other:?}"),
    };
    grew("va", "tx_packets", PINGS);
    grew("va", "rx_packets", PINGS);
    grew("va", "tx_bytes", PINGS * FRAME_BYTES);
    grew("va", "rx_bytes", PINGS * FRAME_BYTES);
    for counter in ["rx_packets", "tx_packets", "rx_bytes", "tx_bytes"] {
        assert_eq!(
            delta("vq", counter),
            Change::Delta(0),
            "negative control vq/{counter}"
        );
    }
    let tx = after
        .get(Source::Netdev, "netdevs/va", "tx_packets")
        .expect("tx_packets");
    assert_eq!((tx.unit, tx.width_bits), (Unit::Packets, 64));
    assert!(
        after
            .samples
            .iter()
            .all(|s| s.key.source != Source::NetdevOffload),
        "veth has no CPU_HIT: no cpu_hit_* samples, not zeros"
    );

    // A rename alone keeps the ifindex: only the link notification can reveal it.
    pair.a.ip(&["link", "set", "vq", "down"]).expect("down");
    pair.a
        .ip(&["link", "set", "vq", "name", "vr"])
        .expect("rename");
    let renamed = snapshot_names(&sampler.snapshot(&every));
    assert!(
        renamed.contains("vr") && !renamed.contains("vq"),
        "stale name after a rename: {renamed:?}"
    );
    add_veth(&pair, "vn", "vnp", false);
    pair.a.ip(&["link", "del", "vd"]).expect("delete");
    let changed = sampler.snapshot(&every);
    assert!(changed.errors.is_empty(), "{:?}", changed.errors);
    let reported = snapshot_names(&changed);
    assert_eq!(
        reported,
        kernel_names(&mut socket),
        "no stale or missing names"
    );
    for gone in ["vq", "vd"] {
        assert!(
            !reported.contains(gone),
            "{gone} still reported: {reported:?}"
        );
    }
    for new in ["vr", "vn", "va", "lo"] {
        assert!(reported.contains(new), "{new} missing: {reported:?}");
    }
    let d = diff(&after, &changed);
    let change = |ifname: &str| d.get(&netdev_key(ifname, "rx_packets")).map(|x| x.change);
    assert_eq!(change("vq"), Some(Change::Vanished));
    assert_eq!(change("vd"), Some(Change::Vanished));
    assert_eq!(change("vr"), Some(Change::Appeared));
    assert_eq!(change("vn"), Some(Change::Appeared));

    // Named selectors resolve through the same map.
    let one = sampler.snapshot(&[CounterSelector::Netdev {
        ifname: Some("vr".to_owned()),
    }]);
    assert!(one.errors.is_empty(), "{:?}", one.errors);
    assert_eq!(snapshot_names(&one), ["vr".to_owned()].into());
    let old = sampler.snapshot(&[CounterSelector::Netdev {
        ifname: Some("vq".to_owned()),
    }]);
    assert!(old.samples.is_empty());
    assert_eq!(old.errors.len(), 1, "{:?}", old.errors);
    assert_eq!(old.errors[0].message, "no such interface");

    // Quiet again: the same names.
    let quiet = sampler.snapshot(&every);
    assert_eq!(snapshot_names(&quiet), reported);
}

/// The raw pieces: one stats dump answers for every link with 64-bit counters, and the
/// link watch starts `Unknown`, reports a change, then goes quiet.
#[test]
fn stats_dump_and_link_watch_on_a_real_namespace() {
    if let Some(reason) = missing_prerequisite() {
        skip!("{reason}");
    }
    let pair = Pair::create("watch").expect("namespaces and veth");
    let mut a = RouteSocket::open_in_netns(pair.a.path()).expect("socket in a");
    // The kernel reports va's carrier coming on through its link-watch work, up to a
    // second after both ends are up (`linkwatch_fire_event` batches non-urgent events by
    // HZ); the operstate turns "up" in the same step that notifies. Until then a
    // notification is still on its way, and the watch below would rightly see it.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while link(&a.links().expect("links"), "va").operstate != "up" {
        assert!(
            std::time::Instant::now() < deadline,
            "va never came up: {:?}",
            a.links()
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    assert_eq!(a.link_events().expect("watch"), LinkEvents::Unknown);
    assert_eq!(a.link_events().expect("watch"), LinkEvents::Quiet);

    let links = a.links().expect("links");
    let readings = a.link_counters().expect("RTM_GETSTATS dump");
    assert_eq!(
        readings.iter().map(|r| r.ifindex).collect::<BTreeSet<_>>(),
        links.iter().map(|l| l.ifindex).collect::<BTreeSet<_>>(),
        "one answer per link"
    );
    let va = link(&links, "va");
    let reading = readings
        .iter()
        .find(|r| r.ifindex == va.ifindex)
        .expect("va answered");
    let (from_stats, from_link) = (
        reading.counters.expect("stats64"),
        va.counters.expect("link stats"),
    );
    assert_eq!(from_stats.width_bits, 64);
    assert!(
        from_stats.rx_packets >= from_link.rx_packets,
        "{from_stats:?} vs {from_link:?}"
    );
    assert_eq!(reading.cpu_hit, None, "veth has no CPU_HIT");

    assert_eq!(
        a.link_events().expect("watch"),
        LinkEvents::Quiet,
        "reading is not a change"
    );
    pair.a
        .ip(&["link", "set", "va", "mtu", "1400"])
        .expect("mtu");
    assert_eq!(a.link_events().expect("watch"), LinkEvents::Changed);
    assert_eq!(
        a.link_events().expect("watch"),
        LinkEvents::Quiet,
        "drained"
    );
    // Another namespace's changes are not this namespace's.
    pair.b
        .ip(&["link", "set", "vb", "mtu", "1400"])
        .expect("mtu in b");
    assert_eq!(a.link_events().expect("watch"), LinkEvents::Quiet);

    // More notifications than the socket buffer holds (each takes well over 512 bytes of
    // it): the kernel drops some and says so with ENOBUFS, which must read as "anything
    // may have changed", not as the few that were kept.
    let rmem = std::fs::read_to_string("/proc/sys/net/core/rmem_default")
        .ok()
        .and_then(|v| v.trim().parse::<usize>().ok())
        .unwrap_or(212_992);
    let changes = (rmem / 512).max(1000);
    let batch: String = (0..changes)
        .map(|i| format!("link set va mtu {}\n", 1300 + i % 2))
        .collect();
    let file = tempfile::NamedTempFile::new().expect("batch file");
    std::fs::write(file.path(), batch).expect("write batch");
    let path = file.path().to_string_lossy().into_owned();
    pair.a.ip(&["-batch", &path]).expect("ip -batch");
    assert_eq!(
        a.link_events().expect("watch"),
        LinkEvents::Overflowed,
        "{changes} changes against rmem_default {rmem}"
    );
    assert_eq!(a.link_events().expect("watch"), LinkEvents::Quiet);
}
