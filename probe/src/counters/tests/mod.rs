use super::*;
use crate::snapshot::{diff, Change, Source, SourceErrorKind, Unit};
use crate::testing::SysTree;

/// A boot id, one RDMA port's counters (PMA and hw) and one disk's `stat`.
fn fixture() -> SysTree {
    let tree = SysTree::new();
    tree.attr("proc/sys/kernel/random/boot_id", "boot-1");
    tree.attrs(
        "sys/class/infiniband/mlx5_0/ports/1",
        &[
            ("counters/port_rcv_data", "1000"),
            ("counters/port_rcv_packets", "10"),
            ("counters/unicast_rcv_packets", "10"),
            ("hw_counters/np_cnp_sent", "3"),
        ],
    );
    tree.write(
        "sys/block/nvme0n1/stat",
        "     100        0     8000       50        0        0        0        0        0       40       50        0        0        0        0        0        0\n",
    );
    tree
}

#[test]
fn reads_every_selected_source_in_one_window() {
    let tree = fixture();
    let mut sampler = Sampler::new(tree.root());
    let snap = sampler.snapshot(&[
        "rdma:mlx5_0/1".parse().expect("selector"),
        "block".parse().expect("selector"),
    ]);
    assert!(snap.errors.is_empty(), "{:?}", snap.errors);
    let data = snap
        .get(Source::Rdma, "rdmaDevices/mlx5_0/ports/1", "port_rcv_data")
        .expect("port_rcv_data");
    assert_eq!((data.value, data.unit, data.scale), (4000, Unit::Bytes, 4));
    assert!(snap
        .get(Source::RdmaHw, "rdmaDevices/mlx5_0/ports/1", "np_cnp_sent")
        .is_some());
    let read = snap
        .get(Source::Block, "blockDevices/nvme0n1", "read_bytes")
        .expect("read_bytes");
    assert_eq!(read.value, 8000 * 512);
    assert_eq!(snap.boot_id.as_deref(), Some("boot-1"));
}

#[test]
fn the_window_is_the_reads_and_each_source_is_stamped() {
    let tree = fixture();
    let mut sampler = Sampler::new(tree.root());
    // One read whatever the machine's load: a preempted window past the default bound
    // would be read again (CI beside the lab did), which is another test's subject.
    sampler.set_window_bound(Duration::from_secs(3600));
    let snap = sampler.snapshot(&[
        "rdma:mlx5_0/1".parse().expect("selector"),
        "block".parse().expect("selector"),
    ]);
    let sources: Vec<_> = snap.read.windows.iter().map(|w| w.source).collect();
    assert_eq!(sources, [Source::Rdma, Source::Block]);
    let first = snap.read.windows.iter().map(|w| w.start).min();
    let last = snap.read.windows.iter().map(|w| w.end).max();
    assert_eq!(
        (Some(snap.monotonic_start), Some(snap.monotonic_end)),
        (first, last)
    );
    assert_eq!(snap.read.attempts, 1);
}

#[test]
fn a_placed_sampler_reads_the_same_counters_on_its_own_thread() {
    let tree = fixture();
    let selectors = ["rdma:mlx5_0/1".parse().expect("selector")];
    let mut plain = Sampler::new(tree.root());
    let mut placed = Sampler::new(tree.root()).placed(ReadPlacement {
        cpus: Some("0".parse().expect("cpu list")),
        priority: ReadPriority::Normal,
    });
    for _ in 0..2 {
        let (a, b) = (plain.snapshot(&selectors), placed.snapshot(&selectors));
        assert_eq!(a.samples, b.samples);
        assert!(b.errors.is_empty(), "{:?}", b.errors);
        assert_eq!(b.read.windows.len(), 1);
    }
    assert_eq!(placed.root(), plain.root());
}

#[test]
fn only_a_preempted_read_past_the_bound_is_read_again() {
    let tree = fixture();
    let mut snap = Sampler::new(tree.root()).snapshot(&[]);
    snap.monotonic_start = Duration::from_millis(10);
    snap.monotonic_end = Duration::from_millis(13);
    let bound = Duration::from_millis(2);
    snap.read.preempted = false;
    assert!(!read_again(&snap, bound), "long but not preempted");
    snap.read.preempted = true;
    assert!(read_again(&snap, bound));
    assert!(!read_again(&snap, Duration::from_millis(3)), "within bound");
}

#[test]
fn a_missing_device_is_an_error_entry_not_zeros() {
    let tree = fixture();
    let mut sampler = Sampler::new(tree.root());
    let snap = sampler.snapshot(&["rdma:mlx5_9".parse().expect("selector")]);
    assert!(snap.samples.is_empty());
    assert_eq!(snap.errors.len(), 1, "{:?}", snap.errors);
    assert!(
        snap.errors[0].message.contains("mlx5_9"),
        "{:?}",
        snap.errors
    );
    assert_eq!(snap.errors[0].kind, SourceErrorKind::NotFound);
    // A port the device does not have, and a netdev that is not there: missing too.
    for (selector, object) in [
        ("rdma:mlx5_0/9", "rdmaDevices/mlx5_0/ports/9"),
        ("netdev:nosuch", "netdevs/nosuch"),
        // tc under a sys root cannot be read at all, but a name it lacks is a typo.
        ("tc:nosuch", "netdevs/nosuch"),
    ] {
        let snap = sampler.snapshot(&[selector.parse().expect("selector")]);
        let errors: Vec<_> = snap
            .errors
            .iter()
            .map(|e| (e.object.as_str(), e.kind))
            .collect();
        assert_eq!(errors, [(object, SourceErrorKind::NotFound)], "{selector}");
    }
}

#[test]
fn tc_on_an_interface_the_sys_root_has_is_unreadable_not_missing() {
    let tree = fixture();
    tree.write("sys/class/net/pf0hpf/mtu", "1500\n");
    let mut sampler = Sampler::new(tree.root());
    let snap = sampler.snapshot(&["tc:pf0hpf".parse().expect("selector")]);
    assert!(snap.samples.is_empty());
    assert_eq!(snap.errors.len(), 1, "{:?}", snap.errors);
    assert_eq!(snap.errors[0].object, "netdevs/pf0hpf");
    assert_eq!(snap.errors[0].kind, SourceErrorKind::Unreadable);
    assert!(
        snap.errors[0].message.contains("netlink"),
        "{:?}",
        snap.errors
    );
    let snap = sampler.snapshot(&["tc:pf0hpg".parse().expect("selector")]);
    assert_eq!(snap.errors[0].kind, SourceErrorKind::NotFound);
    assert!(
        snap.errors[0].message.contains("no such interface under"),
        "{:?}",
        snap.errors
    );
}

#[test]
fn traffic_between_snapshots_shows_as_deltas_and_a_reset_as_a_reset() {
    let tree = fixture();
    let mut sampler = Sampler::new(tree.root());
    let selectors = ["rdma:mlx5_0/1".parse().expect("selector")];
    let before = sampler.snapshot(&selectors);
    let port = "sys/class/infiniband/mlx5_0/ports/1/counters";
    tree.write(&format!("{port}/port_rcv_data"), "1250\n");
    let after = sampler.snapshot(&selectors);
    let key = |s: &crate::snapshot::Snapshot| {
        s.get(Source::Rdma, "rdmaDevices/mlx5_0/ports/1", "port_rcv_data")
            .expect("sample")
            .key
            .clone()
    };
    let d = diff(&before, &after);
    assert_eq!(
        d.get(&key(&after)).expect("delta").change,
        Change::Delta(1000)
    );
    tree.write(&format!("{port}/port_rcv_data"), "5\n");
    let reset = sampler.snapshot(&selectors);
    let d = diff(&after, &reset);
    assert_eq!(d.get(&key(&reset)).expect("delta").change, Change::Reset);
}

mod recycle;
