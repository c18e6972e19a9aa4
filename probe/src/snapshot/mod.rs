//! The counter snapshot model: one timestamped set of counters read as close together as
//! possible, and the diff of two snapshots that every proof rests on.
//!
//! Readers (RDMA sysfs, netdev statistics, netlink, block stats) produce [`Sample`]s; the
//! [`Collector`] brackets them with monotonic timestamps so the skew between the first and
//! last read is known; [`diff()`] turns two snapshots into per-counter deltas that never go
//! negative or jump by a bogus 2^64 when a counter resets or wraps.

mod collect;
mod diff;
mod model;

pub(crate) use collect::SpareStrings;
pub use collect::{monotonic_now, read_boot_id, Collector};
pub use diff::{diff, Change, CounterDelta, SnapshotDiff};
pub use model::{
    CounterKey, Kind, ReadReport, ReadWindow, Sample, Snapshot, Source, SourceError,
    SourceErrorKind, Unit,
};
