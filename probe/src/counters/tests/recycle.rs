//! [`Sampler::recycle`]: a snapshot built in the buffers of one handed back must be the
//! snapshot a sampler that never recycles takes of the same tree, whatever changed in
//! between (values, objects, names, a counter that no longer reads), and it must really
//! be built in them.

use std::fs;
use std::path::Path;
use std::sync::{Arc, Mutex, PoisonError};

use super::super::*;
use crate::netlink::{
    LinkCounters, LinkStats, NetlinkError, OffloadStats, RouteStats, TcFilter, TcParent,
};
use crate::snapshot::{Source, SourceErrorKind};

/// Links whose list and counters the test changes between snapshots.
#[derive(Clone, Default)]
struct Links(Arc<Mutex<Vec<LinkStats>>>);

impl Links {
    fn set(&self, links: &[(u32, &str, u64)]) {
        *self.0.lock().unwrap_or_else(PoisonError::into_inner) = links
            .iter()
            .map(|&(ifindex, ifname, rx_packets)| LinkStats {
                ifindex,
                ifname: ifname.to_owned(),
                flags: 1,
                operstate: "up".to_owned(),
                mtu: Some(1500),
                phys_port_name: None,
                counters: Some(LinkCounters {
                    width_bits: 64,
                    rx_packets,
                    ..LinkCounters::default()
                }),
            })
            .collect();
    }
}

impl RouteStats for Links {
    fn links(&mut self) -> Result<Vec<LinkStats>, NetlinkError> {
        Ok(self
            .0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone())
    }
    fn offload_stats(&mut self) -> Result<Vec<OffloadStats>, NetlinkError> {
        Ok(Vec::new())
    }
    fn tc_filters(&mut self, _: u32, _: TcParent) -> Result<Vec<TcFilter>, NetlinkError> {
        Ok(Vec::new())
    }
}

fn write(root: &Path, rel: &str, text: &str) {
    let path = root.join(rel);
    fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
    fs::write(path, text).expect("write");
}

fn port(root: &Path, dev: &str, port: u32, value: u64) {
    let dir = format!("sys/class/infiniband/{dev}/ports/{port}");
    write(
        root,
        &format!("{dir}/counters/port_rcv_data"),
        &format!("{value}\n"),
    );
    write(root, &format!("{dir}/counters/port_xmit_packets"), "7\n");
    write(
        root,
        &format!("{dir}/hw_counters/np_cnp_sent"),
        &format!("{value}\n"),
    );
}

fn selectors() -> Vec<CounterSelector> {
    vec![
        CounterSelector::Rdma {
            device: None,
            port: None,
        },
        CounterSelector::Netdev { ifname: None },
    ]
}

/// A recycling sampler and one that never recycles, on the same tree and links.
struct Pair {
    recycling: Sampler,
    plain: Sampler,
}

impl Pair {
    fn new(root: &Path, links: &Links) -> Self {
        let sampler = || Sampler::with_route_stats(SysRoot::new(root), Box::new(links.clone()));
        Self {
            recycling: sampler(),
            plain: sampler(),
        }
    }

    /// One snapshot from each, compared; the recycling one's is handed back.
    fn compare(&mut self, step: &str) -> Snapshot {
        let recycled = self.recycling.snapshot(&selectors());
        let fresh = self.plain.snapshot(&selectors());
        assert_eq!(recycled.samples, fresh.samples, "{step}: samples");
        assert_eq!(recycled.errors, fresh.errors, "{step}: errors");
        self.recycling.recycle(recycled);
        fresh
    }

    fn spares(&self) -> usize {
        self.recycling.state().spare.len()
    }
}

#[test]
fn a_snapshot_built_in_recycled_buffers_is_the_one_a_fresh_sampler_takes() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path();
    write(root, "proc/sys/kernel/random/boot_id", "boot-1\n");
    port(root, "mlx5_0", 1, 100);
    port(root, "mlx5_0", 2, 200);
    port(root, "mlx5_1", 1, 300);
    let links = Links::default();
    links.set(&[(1, "p0", 10), (2, "pf0vf0", 20), (3, "pf0vf1", 30)]);
    let mut pair = Pair::new(root, &links);

    let first = pair.compare("first");
    let counted = first.samples.len();
    assert_eq!(counted, 3 * 3 + 3 * 24, "three ports, three links");
    assert_eq!(pair.spares(), counted, "every object string handed back");
    let second = pair.compare("again");
    assert_eq!(
        pair.spares(),
        counted,
        "each sample took one and gave it back"
    );
    assert_eq!(second.samples, first.samples, "nothing changed");

    // New values, a port gone and a longer-named one added, links renamed and replaced:
    // recycled strings now hold other objects' names, and every value is read anew.
    port(root, "mlx5_0", 1, 150);
    fs::remove_dir_all(root.join("sys/class/infiniband/mlx5_0/ports/2")).expect("rm port");
    port(root, "mlx5_1", 12, 400);
    links.set(&[(1, "p0", 11), (4, "pf0vf0_renamed_long", 40)]);
    let changed = pair.compare("changed");
    let value = |object: &str, counter: &str| {
        let source = if counter == "np_cnp_sent" {
            Source::RdmaHw
        } else {
            Source::Rdma
        };
        changed.get(source, object, counter).map(|s| s.value)
    };
    assert_eq!(
        value("rdmaDevices/mlx5_0/ports/1", "port_rcv_data"),
        Some(600)
    );
    assert_eq!(value("rdmaDevices/mlx5_0/ports/2", "port_rcv_data"), None);
    assert_eq!(
        value("rdmaDevices/mlx5_1/ports/12", "np_cnp_sent"),
        Some(400)
    );
    let rx = changed.get(Source::Netdev, "netdevs/pf0vf0_renamed_long", "rx_packets");
    assert_eq!(rx.map(|s| s.value), Some(40));
    assert!(changed
        .samples
        .iter()
        .all(|s| !s.key.object.contains("pf0vf1")));

    // A counter that no longer reads as a number is an error entry and has no sample:
    // never the value the recycled snapshot held for it.
    write(
        root,
        "sys/class/infiniband/mlx5_0/ports/1/counters/port_rcv_data",
        "garbage\n",
    );
    let broken = pair.compare("unreadable");
    assert_eq!(broken.errors.len(), 1, "{:?}", broken.errors);
    assert_eq!(broken.errors[0].object, "rdmaDevices/mlx5_0/ports/1");
    assert_eq!(broken.errors[0].kind, SourceErrorKind::Unreadable);
    assert!(broken
        .samples
        .iter()
        .all(|s| s.key.object != "rdmaDevices/mlx5_0/ports/1"));
}

#[test]
fn a_snapshot_from_another_sampler_lends_its_buffers_not_its_values() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path();
    port(root, "mlx5_0", 1, 5);
    let links = Links::default();
    links.set(&[(1, "p0", 1)]);
    let mut pair = Pair::new(root, &links);

    let other_dir = tempfile::tempdir().expect("tempdir");
    port(other_dir.path(), "mlx5_7", 3, 999);
    let other_links = Links::default();
    other_links.set(&[(9, "other_uplink_with_a_long_name", 99)]);
    let mut other = Sampler::with_route_stats(
        SysRoot::new(other_dir.path()),
        Box::new(other_links.clone()),
    );
    let foreign = other.snapshot(&selectors());
    assert!(!foreign.samples.is_empty());
    pair.recycling.recycle(foreign);
    let mine = pair.compare("after a foreign recycle");
    assert!(mine
        .samples
        .iter()
        .all(|s| !s.key.object.contains("mlx5_7") && !s.key.object.contains("other")));
}

#[test]
fn spares_never_pile_up_past_one_snapshots_worth() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path();
    port(root, "mlx5_0", 1, 5);
    let links = Links::default();
    links.set(&[(1, "p0", 1), (2, "pf0vf0", 2)]);
    let mut pair = Pair::new(root, &links);
    let counted = pair.compare("first").samples.len();
    // Snapshots handed back without one taken in between: as a caller whose samples
    // come from readers that build no spares (sysfs netdevs, tc) does every time.
    for _ in 0..3 {
        let extra = pair.plain.snapshot(&selectors());
        pair.recycling.recycle(extra);
    }
    assert_eq!(pair.spares(), counted, "one snapshot's worth, not four");
    pair.compare("after the extra ones");
}
