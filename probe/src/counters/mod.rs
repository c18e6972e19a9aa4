//! The snapshot engine: turns counter selectors ("RDMA port mlx5_0/1", "every netdev",
//! "tc filters on pf0hpf", "NVMe block devices") into one [`Snapshot`], reading every
//! source back to back inside one monotonic window.
//!
//! Shared by the agent (`Counters.Snapshot` / `Watch` on the DPU) and `dpuctl` (host-side
//! snapshots for proofs). Netdev and tc counters come from netlink on a live system (one
//! dump for every link) and from `sys/class/net/*/statistics` when a `--sys-root` fixture
//! or mounted image is inspected, where netlink cannot see anything.

mod mild_nice;
mod netdev_source;
mod placement;
mod read;
mod read_threads;
#[cfg(test)]
mod recycle_tests;
mod selector;

use std::sync::{OnceLock, PoisonError, RwLock};
use std::time::Duration;

pub use crate::counter_file::{kept_file_budget, kept_file_budget_for};
pub use mild_nice::DEFAULT_READ_NICE;
pub use netdev_source::NetdevSource;
pub use placement::{CpuList, PlacementError, ReadPlacement, ReadPriority};
pub use selector::{CounterSelector, SelectorError};

use crate::netlink::{NetlinkAccess, RouteStats};
use crate::snapshot::{Collector, Sample, Snapshot, SpareStrings};
use crate::SysRoot;
use read_threads::ReadThreads;

/// How long a snapshot's reads may take when a reading thread was preempted before the
/// snapshot is read once more (see [`Sampler::set_window_bound`]).
pub const DEFAULT_WINDOW_BOUND: Duration = Duration::from_millis(2);

/// What new samplers start with: the process's placement and window bound, set once by
/// the agent from its `[counters]` settings.
#[derive(Debug, Clone)]
struct ReadDefaults {
    placement: ReadPlacement,
    window_bound: Duration,
}

fn read_defaults() -> &'static RwLock<ReadDefaults> {
    static DEFAULTS: OnceLock<RwLock<ReadDefaults>> = OnceLock::new();
    DEFAULTS.get_or_init(|| {
        RwLock::new(ReadDefaults {
            placement: ReadPlacement::default(),
            window_bound: DEFAULT_WINDOW_BOUND,
        })
    })
}

/// Sets where the reading threads of samplers made from now on run, after checking that
/// the kernel accepts it (see [`ReadPlacement::check`]): the agent's `[counters]`
/// settings, applied once at start so a placement the kernel refuses stops the agent
/// with the reason instead of being ignored.
pub fn set_read_placement(placement: ReadPlacement) -> Result<(), PlacementError> {
    placement.check()?;
    read_defaults()
        .write()
        .unwrap_or_else(PoisonError::into_inner)
        .placement = placement;
    Ok(())
}

/// The placement new samplers get.
pub fn read_placement() -> ReadPlacement {
    read_defaults()
        .read()
        .unwrap_or_else(PoisonError::into_inner)
        .placement
        .clone()
}

/// Sets the window bound of samplers made from now on (see
/// [`Sampler::set_window_bound`]).
pub fn set_default_window_bound(bound: Duration) {
    read_defaults()
        .write()
        .unwrap_or_else(PoisonError::into_inner)
        .window_bound = bound;
}

/// Takes snapshots. Holds what is worth keeping between snapshots of a `Watch` (the
/// netlink sockets and interface names, the open RDMA counter files, the RDMA netlink
/// socket that reads ports' `hw_counters` on the live system, the reading threads), so a
/// stream does not reopen or restart them every interval.
///
/// A snapshot is prepared (listings, descriptors, sockets), read, then parsed; its
/// window ([`Snapshot::skew`]) is the reads alone, each source's stamped in
/// [`Snapshot::read`](crate::snapshot::Snapshot). With a [`ReadPlacement`] the reads run
/// on the sampler's own placed threads; without one, on the calling thread and, for a big
/// RDMA tree, kept helper threads.
#[derive(Debug)]
pub struct Sampler {
    /// What the reads use; `None` only while a placed thread holds it for a snapshot.
    state: Option<Box<State>>,
    /// The placed thread that runs whole snapshots when there is a placement.
    lead: ReadThreads,
    window_bound: Duration,
}

/// A sampler's readers, handed to its lead thread by value for a placed snapshot.
#[derive(Debug)]
struct State {
    root: SysRoot,
    netdevs: read::NetdevReader,
    rdma_files: read::RdmaFiles,
    /// Threads for the parts of a big RDMA tree.
    helpers: ReadThreads,
    /// The vector and object strings of snapshots handed back ([`Sampler::recycle`]),
    /// for the next snapshot's samples.
    recycled: Vec<Sample>,
    spare: SpareStrings,
}

impl State {
    fn read(&mut self, selectors: &[CounterSelector]) -> Snapshot {
        let mut collector = Collector::start_reusing(
            &self.root,
            std::mem::take(&mut self.recycled),
            std::mem::take(&mut self.spare),
        );
        self.rdma_files.start_snapshot();
        let mut unparsed = Vec::new();
        for selector in selectors {
            unparsed.extend(read::collect(
                &self.root,
                &mut self.netdevs,
                &mut self.rdma_files,
                &mut self.helpers,
                selector,
                &mut collector,
            ));
        }
        for read in unparsed {
            read.parse(&self.root, &mut self.rdma_files, &mut collector);
        }
        let (snapshot, spare) = collector.finish_keeping();
        self.spare = spare;
        snapshot
    }
}

impl Sampler {
    fn build(root: SysRoot, netdevs: read::NetdevReader, rdma_files: read::RdmaFiles) -> Self {
        let ReadDefaults {
            placement,
            window_bound,
        } = read_defaults()
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        Self {
            state: Some(Box::new(State {
                root,
                netdevs,
                rdma_files,
                helpers: ReadThreads::new(placement.clone()),
                recycled: Vec::new(),
                spare: SpareStrings::default(),
            })),
            lead: ReadThreads::new(placement),
            window_bound,
        }
    }

    /// A sampler over `root`, reading netdev counters the way [`NetdevSource::for_root`]
    /// picks.
    pub fn new(root: SysRoot) -> Self {
        let source = NetdevSource::for_root(&root);
        Self::with_netdev_source(root, source)
    }

    /// A sampler with an explicit netdev source.
    /// Netlink requests go to the root's [`NetlinkAccess`]: the kernel for `/`, a
    /// capture's recording for a capture's reading (an error naming the root otherwise).
    pub fn with_netdev_source(root: SysRoot, source: NetdevSource) -> Self {
        let access = NetlinkAccess::for_root(&root);
        let rdma_files = read::RdmaFiles::for_access(&access);
        Self::build(root, read::NetdevReader::new(source, access), rdma_files)
    }

    /// A sampler whose netdev and tc counters come from the network namespace at
    /// `netns` (`/run/netns/NAME`, `/proc/PID/ns/net`): the lab's `dpu` namespace, or a
    /// container's. The socket is opened on a dedicated thread inside the namespace on
    /// first use; the caller's thread never changes namespace.
    pub fn in_netns(root: SysRoot, netns: impl Into<std::path::PathBuf>) -> Self {
        let rdma_files = read::RdmaFiles::for_access(&NetlinkAccess::for_root(&root));
        Self::build(root, read::NetdevReader::in_netns(netns.into()), rdma_files)
    }

    /// A sampler reading netdev and tc counters from the given [`RouteStats`]: a canned
    /// fake in tests, or a socket the caller opened.
    pub fn with_route_stats(root: SysRoot, stats: Box<dyn RouteStats + Send>) -> Self {
        let rdma_files = read::RdmaFiles::for_access(&NetlinkAccess::for_root(&root));
        Self::build(
            root,
            read::NetdevReader::with_route_stats(stats),
            rdma_files,
        )
    }

    /// A sampler whose ports' `hw_counters` come through `hw` (a fake RDMA netlink
    /// socket), whatever the root; netdevs from sysfs.
    #[cfg(test)]
    pub(crate) fn with_rdma_hw_reader(
        root: SysRoot,
        hw: crate::rdma_netlink::HwCounterReader,
    ) -> Self {
        Self::build(
            root,
            read::NetdevReader::new(NetdevSource::Sysfs, NetlinkAccess::Live),
            read::RdmaFiles::with_hw_reader(hw),
        )
    }

    /// The same sampler with its reads placed as `placement` says instead of the
    /// process's [`read_placement`] (a benchmark comparing placements, a test). Call it
    /// before the first snapshot; it is not checked here (see [`ReadPlacement::check`]).
    pub fn placed(mut self, placement: ReadPlacement) -> Self {
        if let Some(state) = &mut self.state {
            state.helpers = ReadThreads::new(placement.clone());
        }
        self.lead = ReadThreads::new(placement);
        self
    }

    /// How long a snapshot's reads may take when a reading thread was preempted during
    /// them before the snapshot is read again, once (the process's
    /// [`set_default_window_bound`], [`DEFAULT_WINDOW_BOUND`] unless set):
    /// a skewed snapshot is then replaced instead of handed out silently, and the one
    /// handed out says how many reads it took and whether it was preempted too
    /// ([`ReadReport`](crate::snapshot::ReadReport)).
    pub fn set_window_bound(&mut self, bound: Duration) {
        self.window_bound = bound;
    }

    /// Hands back a snapshot this sampler took once the caller is done with it (encoded,
    /// compared): the next snapshot builds its samples in its vector and object strings
    /// instead of allocating one string per sample (a few thousand on a DPU), which its
    /// caller would then free again. Optional: a snapshot not handed back is simply
    /// dropped. A snapshot from another sampler is accepted too; only its buffers are
    /// kept, never its values.
    pub fn recycle(&mut self, snapshot: Snapshot) {
        self.recycle_samples(snapshot.samples);
    }

    /// [`Sampler::recycle`] for samples a caller took out of their snapshot (the agent's
    /// metrics scrape keeps a snapshot's samples, not the snapshot, until it has laid
    /// them out): the vector and the samples' object strings are kept for the next
    /// snapshot, never their values. Samples from anywhere are accepted.
    pub fn recycle_samples(&mut self, mut samples: Vec<Sample>) {
        let Some(state) = self.state.as_deref_mut() else {
            return;
        };
        state.spare.take_back(&mut samples);
        if samples.capacity() > state.recycled.capacity() {
            state.recycled = samples;
        }
    }

    /// The root this sampler reads.
    pub fn root(&self) -> &SysRoot {
        &self.state().root
    }

    fn state(&self) -> &State {
        self.state
            .as_deref()
            .unwrap_or_else(|| unreachable!("the state is back after every snapshot"))
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
        let first = self.read_once(selectors);
        if read_again(&first, self.window_bound) {
            let mut second = self.read_once(selectors);
            second.read.attempts = 2;
            return second;
        }
        first
    }

    /// One read of the selectors: here, or on the placed lead thread.
    fn read_once(&mut self, selectors: &[CounterSelector]) -> Snapshot {
        let Some(mut state) = self.state.take() else {
            unreachable!("the state is back after every snapshot")
        };
        if self.lead.placement().is_default() {
            // The default's mild priority, on the caller's thread for this read only.
            let raised = mild_nice::RaisedWhileHeld::raise();
            let snapshot = state.read(selectors);
            drop(raised);
            self.state = Some(state);
            return snapshot;
        }
        let selectors = selectors.to_vec();
        let (state, snapshot) = self
            .lead
            .start(0, move || {
                let snapshot = state.read(&selectors);
                (state, snapshot)
            })
            .wait();
        self.state = Some(state);
        snapshot
    }
}

/// Whether a snapshot's reads should be made again: a reading thread was switched out
/// while it read, and the window came out longer than `bound`. Either alone is no reason:
/// a short preemption leaves the window within bound, and a long window without one is
/// what the reads cost on this machine (reading again would cost the same).
fn read_again(snapshot: &Snapshot, bound: Duration) -> bool {
    snapshot.read.preempted && snapshot.skew() > bound
}

#[cfg(test)]
mod tests {
    use std::fs;

    use super::*;
    use crate::snapshot::{diff, Change, Source, SourceErrorKind, Unit};

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
    fn the_window_is_the_reads_and_each_source_is_stamped() {
        let dir = fixture();
        let mut sampler = Sampler::new(SysRoot::new(dir.path()));
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
        let dir = fixture();
        let selectors = ["rdma:mlx5_0/1".parse().expect("selector")];
        let mut plain = Sampler::new(SysRoot::new(dir.path()));
        let mut placed = Sampler::new(SysRoot::new(dir.path())).placed(ReadPlacement {
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
        let dir = fixture();
        let mut snap = Sampler::new(SysRoot::new(dir.path())).snapshot(&[]);
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
        let dir = fixture();
        write(dir.path(), "sys/class/net/pf0hpf/mtu", "1500\n");
        let mut sampler = Sampler::new(SysRoot::new(dir.path()));
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
