//! A scrape hands its samples back to its sampler once they are laid out
//! ([`Scraper::recycle`]), and keeps the layout of an unchanged tree: what it answers must
//! be exactly what a fresh sampler with a fresh layout answers of the same tree, whatever
//! changed in between (values, a port removed and one added, a netdev renamed, a role
//! changed, a counter that no longer reads), and the next snapshot must really be built
//! in the samples handed back.

use std::fs;
use std::path::Path;
use std::sync::Arc;

use dpu_probe::counters::{CounterSelector, Sampler};
use dpu_probe::SysRoot;

use super::super::*;
use crate::metrics::layout::LayoutCache;
use crate::metrics::roles::RoleReader;

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

/// A netdev with its representor name (`phys_port_name`, which gives its role) and two
/// statistics.
fn netdev(root: &Path, ifname: &str, rx_packets: u64) {
    let dir = format!("sys/class/net/{ifname}");
    write(
        root,
        &format!("{dir}/phys_port_name"),
        &format!("{ifname}\n"),
    );
    write(
        root,
        &format!("{dir}/statistics/rx_packets"),
        &format!("{rx_packets}\n"),
    );
    write(root, &format!("{dir}/statistics/tx_packets"), "3\n");
}

/// One scrape's counter families and source health, in both formats, as the scrape
/// builds them: the roles, a snapshot, [`add_snapshot`], the layout through `layouts`;
/// then the samples go back to `sampler` when `recycle` says so. Also the address of the
/// snapshot's sample vector.
fn scrape(
    root: &Path,
    sampler: &mut Sampler,
    layouts: &LayoutCache,
    recycle: bool,
) -> (String, *const Sample) {
    let roles = RoleReader::default().read(&SysRoot::new(root));
    let snapshot = sampler.snapshot(&CounterSelector::defaults());
    let vector = snapshot.samples.as_ptr();
    let (mut reading, mut errors) = (Reading::default(), Vec::new());
    add_snapshot(&mut reading, &mut errors, snapshot, &roles, false);
    for (source, _) in &errors {
        reading.read_named(source, false);
    }
    let (readout, samples) = reading.lay_out(layouts);
    if recycle {
        sampler.recycle_samples(samples);
    }
    let readout = Arc::new(readout);
    let mut out = String::new();
    for format in [Format::Text, Format::OpenMetrics] {
        readout.encode(format, &mut out).expect("encode");
    }
    (out, vector)
}

/// The kept scrape (one sampler, one layout cache, samples handed back) and a fresh one
/// (a new sampler and a new layout every time) over the same tree.
struct Pair<'a> {
    root: &'a Path,
    sampler: Sampler,
    layouts: LayoutCache,
}

impl Pair<'_> {
    /// Both scrapes, which must answer the same; the kept one's answer, and whether its
    /// snapshot was built in the vector handed back by the previous one.
    fn compare(&mut self, step: &str, handed_back: Option<*const Sample>) -> (String, bool) {
        let (kept, vector) = scrape(self.root, &mut self.sampler, &self.layouts, true);
        let mut fresh_sampler = Sampler::new(SysRoot::new(self.root));
        let (fresh, _) = scrape(
            self.root,
            &mut fresh_sampler,
            &LayoutCache::default(),
            false,
        );
        assert_eq!(
            kept, fresh,
            "{step}: the recycling scrape answers differently"
        );
        (kept, handed_back == Some(vector))
    }
}

#[test]
fn a_recycling_scrape_answers_what_a_fresh_one_answers() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path();
    write(root, "proc/sys/kernel/random/boot_id", "boot-1\n");
    port(root, "mlx5_0", 1, 100);
    port(root, "mlx5_0", 2, 200);
    port(root, "mlx5_1", 1, 300);
    for (ifname, rx) in [("p0", 10), ("pf0vf0", 20), ("pf0vf1", 30)] {
        netdev(root, ifname, rx);
    }
    let mut pair = Pair {
        root,
        sampler: Sampler::new(SysRoot::new(root)),
        layouts: LayoutCache::default(),
    };
    let (first, _) = pair.compare("first", None);
    assert!(
        first.contains("dpu_netdev_rx_packets_total{netdev=\"pf0vf1\",role=\"host_vf\"} 30\n"),
        "{first}"
    );
    // The vector the first scrape handed back is the one the second snapshot fills.
    let vector = scrape(root, &mut pair.sampler, &pair.layouts, true).1;
    let (again, reused) = pair.compare("again", Some(vector));
    assert!(
        reused,
        "the snapshot was not built in the samples handed back"
    );
    assert_eq!(again, first, "nothing changed");

    // New values, a port gone and a longer-named one added (as many series as before,
    // so only their names tell the trees apart): recycled strings now hold other
    // objects' names, and every value is read anew.
    port(root, "mlx5_0", 1, 150);
    fs::remove_dir_all(root.join("sys/class/infiniband/mlx5_0/ports/2")).expect("rm port");
    port(root, "mlx5_1", 12, 400);
    let (ports, _) = pair.compare("ports changed", None);
    for expected in [
        "dpu_rdma_port_rcv_data_bytes_total{device=\"mlx5_0\",port=\"1\"} 600\n",
        "dpu_rdma_hw_np_cnp_sent_total{device=\"mlx5_1\",port=\"12\"} 400\n",
    ] {
        assert!(ports.contains(expected), "{expected} missing: {ports}");
    }
    assert!(!ports.contains("port=\"2\""), "{ports}");

    // A netdev renamed to a longer name with the same role.
    fs::remove_dir_all(root.join("sys/class/net/pf0vf1")).expect("rm netdev");
    netdev(root, "pf0vf17", 31);
    let (renamed, _) = pair.compare("netdev renamed", None);
    assert!(
        renamed.contains("dpu_netdev_rx_packets_total{netdev=\"pf0vf17\",role=\"host_vf\"} 31\n"),
        "{renamed}"
    );
    assert!(!renamed.contains("netdev=\"pf0vf1\""), "{renamed}");

    // The same netdevs and counters, but a representor's role changes.
    write(root, "sys/class/net/pf0vf0/phys_port_name", "pf0hpf\n");
    let (moved, _) = pair.compare("role changed", None);
    assert!(
        moved.contains("dpu_netdev_rx_packets_total{netdev=\"pf0vf0\",role=\"host_pf\"} 20\n"),
        "{moved}"
    );

    // A counter that no longer reads as a number: its object is unreadable and its
    // series are absent, never the value the recycled sample held.
    write(
        root,
        "sys/class/infiniband/mlx5_0/ports/1/counters/port_rcv_data",
        "garbage\n",
    );
    let (broken, _) = pair.compare("unreadable", None);
    assert!(
        broken.contains("dpu_counters_source_up{source=\"rdma\"} 0\n"),
        "{broken}"
    );
    assert!(
        !broken.contains("port_rcv_data_bytes_total{device=\"mlx5_0\",port=\"1\"}"),
        "{broken}"
    );
}
