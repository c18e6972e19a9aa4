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
        hw: crate::rdma::netlink::HwCounterReader,
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
mod tests;
