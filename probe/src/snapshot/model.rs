use std::borrow::Cow;
use std::fmt;
use std::time::{Duration, SystemTime};

/// The family a counter comes from. Separate families because the same name means
/// different things in each (`rx_bytes` of a netdev counts Ethernet headers, a tc action's
/// `bytes` does not).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub enum Source {
    /// IB PMA port counters, `/sys/class/infiniband/*/ports/*/counters`.
    Rdma,
    /// Driver (mlx5, rxe) counters, `.../ports/*/hw_counters`.
    RdmaHw,
    /// Link statistics (`rtnl_link_stats64`), from netlink or `statistics/`.
    Netdev,
    /// Offload xstats: `cpu_hit`, the software-path count on representors.
    NetdevOffload,
    /// tc filter action statistics.
    Tc,
    /// OVS datapath flow statistics.
    OvsFlow,
    /// Storage volume (bdev) statistics from the storage backend.
    Volume,
    /// Block device statistics, `/sys/block/*/stat`.
    Block,
    /// OVS datapath lookup statistics (`dpctl/show`: hit, missed = upcalls, lost).
    OvsDatapath,
}

impl Source {
    /// The wire name used in `CounterSample.source`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Rdma => "rdma",
            Self::RdmaHw => "rdma_hw",
            Self::Netdev => "netdev",
            Self::NetdevOffload => "netdev_offload",
            Self::Tc => "tc",
            Self::OvsFlow => "ovs_flow",
            Self::Volume => "volume",
            Self::Block => "block",
            Self::OvsDatapath => "ovs_datapath",
        }
    }

    /// Every source, in wire order; lets callers parse a wire name back.
    pub const ALL: [Source; 9] = [
        Self::Rdma,
        Self::RdmaHw,
        Self::Netdev,
        Self::NetdevOffload,
        Self::Tc,
        Self::OvsFlow,
        Self::Volume,
        Self::Block,
        Self::OvsDatapath,
    ];

    /// Parses a wire name.
    pub fn from_wire(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|s| s.as_str() == name)
    }
}

impl fmt::Display for Source {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What a counter's value counts, after scaling. Proofs compare like with like, so a
/// byte count must never be mistaken for 4-byte words.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Unit {
    /// Not documented for this counter.
    Unspecified,
    /// Bytes.
    Bytes,
    /// Packets (or frames).
    Packets,
    /// I/O operations, requests, work completions.
    Operations,
    /// Events: errors, drops, retries, CNPs.
    Events,
    /// Milliseconds (block `io_ticks`, `time_in_queue`).
    Milliseconds,
    /// Driver-defined ticks.
    Ticks,
}

/// Whether a delta is meaningful.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Kind {
    /// Only ever grows (until reset or wrap): deltas are the signal.
    Cumulative,
    /// A level that goes up and down (block `in_flight`): compare values, not deltas.
    Gauge,
}

/// Identifies one counter across snapshots.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct CounterKey {
    /// Family.
    pub source: Source,
    /// The object as a resource name: `rdmaDevices/mlx5_0/ports/1`, `netdevs/pf0hpf`,
    /// `blockDevices/nvme0n1`.
    pub object: String,
    /// Counter name as the kernel or daemon spells it. Borrowed when the name is a
    /// compile-time constant (netlink fields, block stat fields): a 66-interface snapshot
    /// then allocates one string per object instead of one per counter.
    pub counter: Cow<'static, str>,
}

impl fmt::Display for CounterKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}/{}", self.source, self.object, self.counter)
    }
}

/// One counter reading.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sample {
    /// Which counter.
    pub key: CounterKey,
    /// The value in `unit`, i.e. the raw value times `scale`.
    pub value: u64,
    /// What `value` counts.
    pub unit: Unit,
    /// Cumulative or gauge.
    pub kind: Kind,
    /// Width of the raw counter in bits (32 or 64) so a wrap can be told from a reset;
    /// 0 when unknown, which the diff treats as "a decrease is a reset".
    pub width_bits: u32,
    /// Multiplier from the raw value to `value` (4 for `port_xmit_data` words, 512 for
    /// block sectors, 1 otherwise).
    pub scale: u32,
}

impl Sample {
    /// A cumulative 64-bit counter with no scaling: the common case.
    pub fn cumulative(
        source: Source,
        object: impl Into<String>,
        counter: impl Into<Cow<'static, str>>,
        value: u64,
        unit: Unit,
    ) -> Self {
        Self {
            key: CounterKey {
                source,
                object: object.into(),
                counter: counter.into(),
            },
            value,
            unit,
            kind: Kind::Cumulative,
            width_bits: 64,
            scale: 1,
        }
    }

    /// A gauge (a level, not a count).
    pub fn gauge(
        source: Source,
        object: impl Into<String>,
        counter: impl Into<Cow<'static, str>>,
        value: u64,
        unit: Unit,
    ) -> Self {
        Self {
            kind: Kind::Gauge,
            ..Self::cumulative(source, object, counter, value, unit)
        }
    }

    /// Sets the raw counter width (32 for IB PMA counters without the extended set).
    #[must_use]
    pub fn with_width(mut self, width_bits: u32) -> Self {
        self.width_bits = width_bits;
        self
    }

    /// Records that `value` is `raw * scale`. The raw value is what was passed in; the
    /// multiplication saturates instead of wrapping so a corrupt reading cannot alias to a
    /// small number.
    #[must_use]
    pub fn scaled(mut self, scale: u32) -> Self {
        self.value = self.value.saturating_mul(u64::from(scale));
        self.scale = scale;
        self
    }
}

/// A counter family that could not be read for one object. Reported instead of zeros,
/// because a silent zero makes a proof pass or fail for the wrong reason.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SourceError {
    /// Family.
    pub source: Source,
    /// The object that failed, or the selector text when no object was found.
    pub object: String,
    /// Why, with the file or call that failed.
    pub message: String,
    /// Whether the object does not exist or could not be read: a client refuses a
    /// selector that names nothing (a typo) but only reports a read that failed.
    pub kind: SourceErrorKind,
}

/// What a [`SourceError`] is. Kept apart from the message because a client acts on it: a
/// selector that names nothing is the caller's mistake (`dpuctl` exits 2), a counter that
/// could not be read this time is evidence missing (reported, never a usage error).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum SourceErrorKind {
    /// Not said: an agent that predates the distinction. Treated like
    /// [`Unreadable`](Self::Unreadable), so an old agent's errors never become usage
    /// errors.
    #[default]
    Unspecified,
    /// The object the selector names does not exist (no such interface, RDMA device or
    /// port, block device, volume or datapath).
    NotFound,
    /// The object exists, or could not even be looked for, but its counters could not be
    /// read (a file, a netlink dump or a backend failed).
    Unreadable,
}

/// When one source's reads ran inside a snapshot, so a report shows where the window's
/// time went (a slow netlink dump, thousands of RDMA files, a storage backend's answer).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReadWindow {
    /// The source read: `Rdma` for the counter files of RDMA devices (PMA and
    /// `hw_counters`), `RdmaHw` for the ports read over RDMA netlink.
    pub source: Source,
    /// `CLOCK_MONOTONIC` before its first read.
    pub start: Duration,
    /// `CLOCK_MONOTONIC` after its last read.
    pub end: Duration,
}

impl ReadWindow {
    /// How long the source's reads took.
    pub fn length(&self) -> Duration {
        self.end.saturating_sub(self.start)
    }
}

/// How a snapshot's reads went: what a caller needs to decide whether to trust its skew.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ReadReport {
    /// Each source's window, in the order the sources were first read.
    pub windows: Vec<ReadWindow>,
    /// A reading thread was switched out involuntarily while it read (the kernel's count
    /// of involuntary context switches for the thread grew): another task took its CPU
    /// mid-window, so the skew may hold a stranger's time slice.
    pub preempted: bool,
    /// Reads made for this snapshot: 2 when the first was preempted past the sampler's
    /// window bound and read again; 0 when unknown (a snapshot from an older agent).
    pub attempts: u32,
}

/// One set of counters, read as close together as possible.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Snapshot {
    /// Wall-clock time when reading started.
    pub taken_at: SystemTime,
    /// `CLOCK_MONOTONIC` before the first read.
    pub monotonic_start: Duration,
    /// `CLOCK_MONOTONIC` after the last read.
    pub monotonic_end: Duration,
    /// `/proc/sys/kernel/random/boot_id`: a different boot means every counter restarted.
    pub boot_id: Option<String>,
    /// The readings, in collection order.
    pub samples: Vec<Sample>,
    /// What could not be read.
    pub errors: Vec<SourceError>,
    /// Where the read window's time went, and whether it was preempted.
    pub read: ReadReport,
}

impl Snapshot {
    /// Time between the first and the last read: how far apart the counters are.
    pub fn skew(&self) -> Duration {
        self.monotonic_end.saturating_sub(self.monotonic_start)
    }

    /// The sample for a key, if present.
    pub fn get(&self, source: Source, object: &str, counter: &str) -> Option<&Sample> {
        self.samples
            .iter()
            .find(|s| s.key.source == source && s.key.object == object && s.key.counter == counter)
    }
}
