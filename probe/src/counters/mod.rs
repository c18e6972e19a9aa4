//! The snapshot engine: turns counter selectors ("RDMA port mlx5_0/1", "every netdev",
//! "tc filters on pf0hpf", "NVMe block devices") into one [`Snapshot`], reading every
//! source back to back inside one monotonic window.
//!
//! Shared by the agent (`Counters.Snapshot` / `Watch` on the DPU) and `dpuctl` (host-side
//! snapshots for proofs). Netdev and tc counters come from netlink on a live system (one
//! dump for every link) and from `sys/class/net/*/statistics` when a `--sys-root` fixture
//! or mounted image is inspected, where netlink cannot see anything.

mod netdev_source;
mod read;
mod selector;

pub use crate::counter_file::{kept_file_budget, kept_file_budget_for};
pub use netdev_source::NetdevSource;
pub use selector::{CounterSelector, SelectorError};

use crate::netlink::RouteStats;
use crate::snapshot::{Collector, Snapshot};
use crate::SysRoot;

/// Takes snapshots. Holds what is worth keeping between snapshots of a `Watch` (the
/// netlink sockets and interface names, the open RDMA counter files, the RDMA netlink
/// socket that reads ports' `hw_counters` on the live system), so a stream does not
/// reopen them every interval.
#[derive(Debug)]
pub struct Sampler {
    root: SysRoot,
    netdevs: read::NetdevReader,
    rdma_files: read::RdmaFiles,
}

impl Sampler {
    /// A sampler over `root`, reading netdev counters the way [`NetdevSource::for_root`]
    /// picks.
    pub fn new(root: SysRoot) -> Self {
        let source = NetdevSource::for_root(&root);
        Self::with_netdev_source(root, source)
    }

    /// A sampler with an explicit netdev source.
    pub fn with_netdev_source(root: SysRoot, source: NetdevSource) -> Self {
        Self {
            netdevs: read::NetdevReader::new(source),
            rdma_files: read::RdmaFiles::for_root(&root),
            root,
        }
    }

    /// A sampler whose netdev and tc counters come from the network namespace at
    /// `netns` (`/run/netns/NAME`, `/proc/PID/ns/net`): the lab's `dpu` namespace, or a
    /// container's. The socket is opened on a dedicated thread inside the namespace on
    /// first use; the caller's thread never changes namespace.
    pub fn in_netns(root: SysRoot, netns: impl Into<std::path::PathBuf>) -> Self {
        Self {
            netdevs: read::NetdevReader::in_netns(netns.into()),
            rdma_files: read::RdmaFiles::for_root(&root),
            root,
        }
    }

    /// A sampler reading netdev and tc counters from the given [`RouteStats`]: a canned
    /// fake in tests, or a socket the caller opened.
    pub fn with_route_stats(root: SysRoot, stats: Box<dyn RouteStats + Send>) -> Self {
        Self {
            netdevs: read::NetdevReader::with_route_stats(stats),
            rdma_files: read::RdmaFiles::for_root(&root),
            root,
        }
    }

    /// A sampler whose ports' `hw_counters` come through `hw` (a fake RDMA netlink
    /// socket), whatever the root; netdevs from sysfs.
    #[cfg(test)]
    pub(crate) fn with_rdma_hw_reader(
        root: SysRoot,
        hw: crate::rdma_netlink::HwCounterReader,
    ) -> Self {
        Self {
            netdevs: read::NetdevReader::new(NetdevSource::Sysfs),
            rdma_files: read::RdmaFiles::with_hw_reader(hw),
            root,
        }
    }

    /// The root this sampler reads.
    pub fn root(&self) -> &SysRoot {
        &self.root
    }

    /// One snapshot of everything the selectors name; an empty list means
    /// [`CounterSelector::defaults`]. What cannot be read becomes a source error in the
    /// snapshot, never a zero.
    pub fn snapshot(&mut self, selectors: &[CounterSelector]) -> Snapshot {
        let defaults;
        let selectors = if selectors.is_empty() {
            defaults = CounterSelector::defaults();
            &defaults
        } else {
            selectors
        };
        // Sequential on purpose: splitting netlink and sysfs reads across two threads was
        // measured slower on a 2-core VM (a thread start costs more than the ~120 µs the
        // netlink half takes); large RDMA trees are split across threads in `read`.
        let mut collector = Collector::start(&self.root);
        self.rdma_files.start_snapshot();
        for selector in selectors {
            read::collect(
                &self.root,
                &mut self.netdevs,
                &mut self.rdma_files,
                selector,
                &mut collector,
            );
        }
        collector.finish()
    }
}

#[cfg(test)]
mod tests {
    use std::fs;

    use super::*;
    use crate::snapshot::{diff, Change, Source, Unit};

    fn write(root: &std::path::Path, rel: &str, text: &str) {
        let path = root.join(rel);
        fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        fs::write(path, text).expect("write");
    }

    fn fixture() -> tempfile::TempDir {
        let dir = tempfile::tempdir().expect("tempdir");
        let r = dir.path();
        write(r, "proc/sys/kernel/random/boot_id", "boot-1\n");
        let port = "sys/class/infiniband/mlx5_0/ports/1";
        write(r, &format!("{port}/counters/port_rcv_data"), "1000\n");
        write(r, &format!("{port}/counters/port_rcv_packets"), "10\n");
        write(r, &format!("{port}/counters/unicast_rcv_packets"), "10\n");
        write(r, &format!("{port}/hw_counters/np_cnp_sent"), "3\n");
        write(
            r,
            "sys/block/nvme0n1/stat",
            "     100        0     8000       50        0        0        0        0        0       40       50        0        0        0        0        0        0\n",
        );
        dir
    }

    #[test]
    fn reads_every_selected_source_in_one_window() {
        let dir = fixture();
        let mut sampler = Sampler::new(SysRoot::new(dir.path()));
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
    fn a_missing_device_is_an_error_entry_not_zeros() {
        let dir = fixture();
        let mut sampler = Sampler::new(SysRoot::new(dir.path()));
        let snap = sampler.snapshot(&["rdma:mlx5_9".parse().expect("selector")]);
        assert!(snap.samples.is_empty());
        assert_eq!(snap.errors.len(), 1, "{:?}", snap.errors);
        assert!(
            snap.errors[0].message.contains("mlx5_9"),
            "{:?}",
            snap.errors
        );
    }

    #[test]
    fn traffic_between_snapshots_shows_as_deltas_and_a_reset_as_a_reset() {
        let dir = fixture();
        let mut sampler = Sampler::new(SysRoot::new(dir.path()));
        let selectors = ["rdma:mlx5_0/1".parse().expect("selector")];
        let before = sampler.snapshot(&selectors);
        let port = "sys/class/infiniband/mlx5_0/ports/1/counters";
        write(dir.path(), &format!("{port}/port_rcv_data"), "1250\n");
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
        write(dir.path(), &format!("{port}/port_rcv_data"), "5\n");
        let reset = sampler.snapshot(&selectors);
        let d = diff(&after, &reset);
        assert_eq!(d.get(&key(&reset)).expect("delta").change, Change::Reset);
    }
}
