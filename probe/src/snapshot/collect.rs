use std::time::{Duration, SystemTime};

use nix::time::{clock_gettime, ClockId};

use super::model::{
    ReadReport, ReadWindow, Sample, Snapshot, Source, SourceError, SourceErrorKind,
};
use crate::error::error_chain;
use crate::root::read_optional_attr;
use crate::ProbeError;
use crate::SysRoot;

/// `CLOCK_MONOTONIC` as a duration since boot. `std::time::Instant` hides its epoch, and
/// snapshot timestamps travel to other processes, so the raw clock is read instead.
pub fn monotonic_now() -> Duration {
    // CLOCK_MONOTONIC cannot fail on Linux with a valid clock id and timespec.
    clock_gettime(ClockId::CLOCK_MONOTONIC)
        .map(Duration::from)
        .unwrap_or_default()
}

/// The kernel's boot id, which changes on every boot (and so invalidates every counter).
pub fn read_boot_id(root: &SysRoot) -> Option<String> {
    read_optional_attr(&root.proc("sys/kernel/random/boot_id"))
}

/// What a reader's error says about its object: only [`ProbeError::NotFound`] means the
/// object is not there. A file missing inside an object that exists (an `ENOENT` read
/// error) is a failed read, not a missing object.
fn error_kind(err: &(dyn std::error::Error + 'static)) -> SourceErrorKind {
    match err.downcast_ref::<ProbeError>() {
        Some(ProbeError::NotFound { .. }) => SourceErrorKind::NotFound,
        _ => SourceErrorKind::Unreadable,
    }
}

/// Builds one [`Snapshot`]: start it, feed it samples and errors from the readers, finish
/// it. Readers that stamp their reads ([`Collector::window`]) give the snapshot its
/// window: from the first stamped read to the last, whatever was prepared before or
/// parsed after. Without stamps the window is [`Collector::start`] to
/// [`Collector::finish`], so do slow work (parsing selectors, opening sockets) before
/// starting.
#[derive(Debug)]
pub struct Collector {
    snapshot: Snapshot,
    spare: SpareStrings,
}

/// The samples a new snapshot's vector has room for before it grows.
const FIRST_CAPACITY: usize = 256;

/// Most object strings a sampler keeps for reuse: more than the largest DPU's snapshot
/// (5,040 samples with a representor per VF), few enough that the memory held stays
/// small (a few MiB at worst).
const MAX_SPARE_STRINGS: usize = 32_768;

/// The object strings of a sampler's earlier snapshots, handed back to it
/// ([`Sampler::recycle`](crate::counters::Sampler::recycle)): every sample owns its
/// object's name as a `String`, and a snapshot of a few thousand samples otherwise
/// allocates (and its caller frees) one per sample: `malloc` and `free` were a fifth of a
/// 1,712-sample snapshot's profile. A spare is cleared and refilled instead, so its
/// buffer is reused.
#[derive(Debug, Default)]
pub(crate) struct SpareStrings(Vec<String>);

impl SpareStrings {
    /// `text` as an owned string, in a spare buffer when one is left.
    pub(crate) fn string(&mut self, text: &str) -> String {
        match self.0.pop() {
            Some(mut spare) => {
                spare.clear();
                spare.push_str(text);
                spare
            }
            None => text.to_owned(),
        }
    }

    /// Keeps the object strings of `samples` for reuse and empties it, keeping its
    /// capacity. At most one snapshot's worth is kept (as many as `samples` holds, up to
    /// [`MAX_SPARE_STRINGS`]): samples whose readers do not build in spares (sysfs
    /// netdevs, tc, block) hand back strings that no snapshot takes, and without this
    /// bound they would pile up to the maximum, held for nothing.
    pub(crate) fn take_back(&mut self, samples: &mut Vec<Sample>) {
        let keep = samples.len().min(MAX_SPARE_STRINGS);
        for sample in samples.drain(..) {
            if self.0.len() < keep {
                self.0.push(sample.key.object);
            }
        }
    }

    /// How many spares are left.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.0.len()
    }
}

impl Collector {
    /// Starts a snapshot; reads the boot id first so it does not count against the skew.
    pub fn start(root: &SysRoot) -> Self {
        Self::start_reusing(root, Vec::new(), SpareStrings::default())
    }

    /// [`Collector::start`] in `samples` (emptied, its capacity kept: a vector handed
    /// back is not grown and copied again while thousands of samples come in) and with
    /// object strings to reuse ([`Collector::spare`]); the ones not used come back from
    /// [`Collector::finish_keeping`].
    pub(crate) fn start_reusing(
        root: &SysRoot,
        mut samples: Vec<Sample>,
        spare: SpareStrings,
    ) -> Self {
        samples.clear();
        if samples.capacity() == 0 {
            samples.reserve(FIRST_CAPACITY);
        }
        let boot_id = read_boot_id(root);
        let taken_at = SystemTime::now();
        Self {
            snapshot: Snapshot {
                taken_at,
                monotonic_start: monotonic_now(),
                monotonic_end: Duration::ZERO,
                boot_id,
                samples,
                errors: Vec::new(),
                read: ReadReport {
                    attempts: 1,
                    ..ReadReport::default()
                },
            },
            spare,
        }
    }

    /// The spare object strings for the samples being built (see [`SpareStrings`]).
    pub(crate) fn spare(&mut self) -> &mut SpareStrings {
        &mut self.spare
    }

    /// The samples so far and the spare object strings, together: for a reader that
    /// appends samples made with the spares.
    pub(crate) fn samples_and_spare(&mut self) -> (&mut Vec<Sample>, &mut SpareStrings) {
        (&mut self.snapshot.samples, &mut self.spare)
    }

    /// Records that `source` was read between `start` and `end` (`CLOCK_MONOTONIC`, from
    /// [`monotonic_now`]); a second window of the same source widens the first.
    pub fn window(&mut self, source: Source, start: Duration, end: Duration) {
        let windows = &mut self.snapshot.read.windows;
        match windows.iter_mut().find(|w| w.source == source) {
            Some(w) => {
                w.start = w.start.min(start);
                w.end = w.end.max(end);
            }
            None => windows.push(ReadWindow { source, start, end }),
        }
    }

    /// Records that a reading thread was switched out involuntarily while it read.
    pub fn preempted(&mut self) {
        self.snapshot.read.preempted = true;
    }

    /// Adds one reading.
    pub fn push(&mut self, sample: Sample) {
        self.snapshot.samples.push(sample);
    }

    /// Adds many readings.
    pub fn extend(&mut self, samples: impl IntoIterator<Item = Sample>) {
        self.snapshot.samples.extend(samples);
    }

    /// Records that a family could not be read for an object that exists (or could not
    /// be looked for): [`SourceErrorKind::Unreadable`].
    pub fn error(&mut self, source: Source, object: impl Into<String>, message: impl ToString) {
        self.push_error(
            source,
            object.into(),
            message.to_string(),
            SourceErrorKind::Unreadable,
        );
    }

    /// Records that the object a selector names does not exist:
    /// [`SourceErrorKind::NotFound`], which a client may refuse as a typo.
    pub fn not_found(&mut self, source: Source, object: impl Into<String>, message: impl ToString) {
        self.push_error(
            source,
            object.into(),
            message.to_string(),
            SourceErrorKind::NotFound,
        );
    }

    fn push_error(
        &mut self,
        source: Source,
        object: String,
        message: String,
        kind: SourceErrorKind,
    ) {
        self.snapshot.errors.push(SourceError {
            source,
            object,
            message,
            kind,
        });
    }

    /// Adds the samples of a reader's result, or its error: [`SourceErrorKind::NotFound`]
    /// when it is [`ProbeError::NotFound`] (the object is not there), otherwise
    /// [`SourceErrorKind::Unreadable`].
    pub fn record<E: std::error::Error + 'static>(
        &mut self,
        source: Source,
        object: &str,
        result: Result<Vec<Sample>, E>,
    ) {
        match result {
            Ok(samples) => self.extend(samples),
            Err(e) => {
                let kind = error_kind(&e);
                self.push_error(source, object.to_owned(), error_chain(&e), kind);
            }
        }
    }

    /// Stops the clock and returns the snapshot, whose window is its stamped reads' when
    /// there were any.
    pub fn finish(self) -> Snapshot {
        self.finish_keeping().0
    }

    /// [`Collector::finish`], with the spare object strings it did not use.
    pub(crate) fn finish_keeping(mut self) -> (Snapshot, SpareStrings) {
        self.snapshot.monotonic_end = monotonic_now();
        let windows = &self.snapshot.read.windows;
        if let (Some(start), Some(end)) = (
            windows.iter().map(|w| w.start).min(),
            windows.iter().map(|w| w.end).max(),
        ) {
            self.snapshot.monotonic_start = start;
            self.snapshot.monotonic_end = end;
        }
        (self.snapshot, self.spare)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::snapshot::Unit;

    #[test]
    fn brackets_the_reads_with_the_monotonic_clock() {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = SysRoot::new(dir.path());
        let mut c = Collector::start(&root);
        c.push(Sample::cumulative(
            Source::Block,
            "blockDevices/x",
            "reads",
            1,
            Unit::Operations,
        ));
        c.record::<std::io::Error>(
            Source::Rdma,
            "rdmaDevices/mlx5_0",
            Err(std::io::Error::other("gone")),
        );
        let snap = c.finish();
        assert!(snap.monotonic_end >= snap.monotonic_start);
        assert!(snap.monotonic_start > Duration::ZERO, "clock read");
        assert_eq!(snap.samples.len(), 1);
        assert_eq!(snap.errors[0].message, "gone");
        assert_eq!(snap.boot_id, None, "no proc in an empty root");
        assert_eq!(snap.read.attempts, 1);
        assert!(snap.read.windows.is_empty() && !snap.read.preempted);
    }

    #[test]
    fn only_a_missing_object_is_not_found_and_a_missing_file_inside_one_is_unreadable() {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut c = Collector::start(&SysRoot::new(dir.path()));
        c.record::<ProbeError>(
            Source::Netdev,
            "netdevs/nosuch",
            Err(ProbeError::NotFound {
                what: "netdev",
                name: "nosuch".to_owned(),
                root: dir.path().to_owned(),
            }),
        );
        c.record::<ProbeError>(
            Source::Netdev,
            "netdevs/p0",
            Err(ProbeError::read(
                dir.path().join("statistics"),
                std::io::Error::from(std::io::ErrorKind::NotFound),
            )),
        );
        c.record::<std::io::Error>(
            Source::Rdma,
            "rdmaDevices/mlx5_0",
            Err(std::io::Error::from(std::io::ErrorKind::NotFound)),
        );
        c.error(Source::Tc, "netdevs/p0", "not under a --sys-root");
        c.not_found(Source::Netdev, "netdevs/eth9", "no such interface");
        let kinds: Vec<_> = c
            .finish()
            .errors
            .iter()
            .map(|e| (e.object.clone(), e.kind))
            .collect();
        assert_eq!(
            kinds,
            [
                ("netdevs/nosuch".to_owned(), SourceErrorKind::NotFound),
                ("netdevs/p0".to_owned(), SourceErrorKind::Unreadable),
                ("rdmaDevices/mlx5_0".to_owned(), SourceErrorKind::Unreadable),
                ("netdevs/p0".to_owned(), SourceErrorKind::Unreadable),
                ("netdevs/eth9".to_owned(), SourceErrorKind::NotFound),
            ]
        );
    }

    #[test]
    fn stamped_reads_are_the_window_and_a_source_read_twice_widens_its_own() {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut c = Collector::start(&SysRoot::new(dir.path()));
        let ms = Duration::from_millis;
        c.window(Source::Netdev, ms(10), ms(11));
        c.window(Source::Rdma, ms(12), ms(15));
        c.window(Source::Netdev, ms(16), ms(17));
        c.preempted();
        let snap = c.finish();
        assert_eq!((snap.monotonic_start, snap.monotonic_end), (ms(10), ms(17)));
        assert_eq!(snap.skew(), ms(7));
        let windows: Vec<_> = snap
            .read
            .windows
            .iter()
            .map(|w| (w.source, w.length()))
            .collect();
        assert_eq!(windows, [(Source::Netdev, ms(7)), (Source::Rdma, ms(3))]);
        assert!(snap.read.preempted);
    }
}
