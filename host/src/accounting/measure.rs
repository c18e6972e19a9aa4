//! The skeleton every proof runs, written once: an idle window (to measure background
//! traffic), then one or more trials, each a reading before the workload, the workload, a
//! pause for the counters to settle, and a reading after, with an idle gap between two
//! trials. The proof supplies how to read every side and what the workload is; the result
//! is the [`Evidence`] of each trial and gap that the expectations are judged on
//! ([`super::trials`] judges several trials together).

use std::future::Future;
use std::num::NonZeroU32;
use std::time::Duration;

use dpu_probe::snapshot::{diff, Snapshot};

use super::Evidence;

/// Both sides' counters at one moment.
#[derive(Debug, Clone)]
pub struct Observation {
    /// What dpuctl read on this host.
    pub host: Snapshot,
    /// What the agent read on the DPU, in its own snapshot window.
    pub dpu: Snapshot,
    /// What the far end's own agent read, when the proof has a far end to ask.
    pub far_end: Option<Snapshot>,
}

impl Observation {
    /// The far end's change from `self` to `later`, when both read it.
    pub fn far_end_diff(&self, later: &Observation) -> Option<dpu_probe::snapshot::SnapshotDiff> {
        Some(diff(self.far_end.as_ref()?, later.far_end.as_ref()?))
    }
}

/// How a proof reads both sides. One implementation per proof, holding its sampler and
/// the session's channel, so no reading dials or re-reads files.
pub trait Observe {
    /// Why a reading failed, in the proof's own terms (which agent call, which side), so
    /// the proof's error keeps it as it is.
    type Error;
    /// Reads both sides once.
    fn observe(&mut self) -> impl Future<Output = Result<Observation, Self::Error>>;
}

/// The timing of one measurement.
#[derive(Debug, Clone, Copy)]
pub struct Timing {
    /// The idle window before the workload, for background traffic.
    pub idle: Duration,
    /// The pause after the workload, for counters updated on completion or late.
    pub settle: Duration,
}

/// One trial: its readings and what its workload returned.
#[derive(Debug)]
pub struct TrialRun<T> {
    /// Just before the trial's workload.
    pub before: Observation,
    /// After it and the settle pause.
    pub after: Observation,
    /// The workload's own result (bytes read, packets sent ...).
    pub workload: T,
}

/// A measurement: the idle window for background, then each trial, a gap of the idle
/// window's length between two trials. A single-window proof is one trial. Made only by
/// [`measure`] (and the tests' fixture), so it always holds at least one trial.
#[derive(Debug)]
pub struct Trials<T> {
    /// The start of the idle window.
    quiet_start: Observation,
    /// Its end.
    quiet_end: Observation,
    /// The trials in the order they ran.
    runs: Vec<TrialRun<T>>,
}

impl<T> Trials<T> {
    fn window(&self, from: &Observation, to: &Observation) -> Evidence {
        Evidence {
            host: diff(&from.host, &to.host),
            dpu: diff(&from.dpu, &to.dpu),
            host_background: Some(diff(&self.quiet_start.host, &self.quiet_end.host)),
            dpu_background: Some(diff(&self.quiet_start.dpu, &self.quiet_end.dpu)),
            far_end: from.far_end_diff(to),
            far_end_background: self.quiet_start.far_end_diff(&self.quiet_end),
        }
    }

    /// Each trial's window, in order, with the idle window as background: what the
    /// expectations are judged on.
    pub fn windows(&self) -> Vec<Evidence> {
        self.runs
            .iter()
            .map(|run| self.window(&run.before, &run.after))
            .collect()
    }

    /// Each gap (a trial's after-reading to the next trial's before-reading), in order,
    /// with the idle window as background: one fewer than the trials.
    pub fn gaps(&self) -> Vec<Evidence> {
        self.runs
            .windows(2)
            .map(|pair| self.window(&pair[0].after, &pair[1].before))
            .collect()
    }

    /// The trials in the order they ran.
    pub fn runs(&self) -> &[TrialRun<T>] {
        &self.runs
    }

    /// The last trial's after-reading: with [`Self::first_before`], the whole run.
    pub fn last_after(&self) -> &Observation {
        // Never empty, as in `first_before`.
        &self.runs[self.runs.len() - 1].after
    }

    /// The first trial's before-reading: which counters exist then decides the
    /// expectations.
    pub fn first_before(&self) -> &Observation {
        // Never empty: `measure` runs at least one trial and the fixture builds one.
        &self.runs[0].before
    }
}

/// Runs the skeleton: the idle window, then `prepare` (outside every window: a warm-up),
/// then for each trial `i` in `0..count`: before → `workload(i)` → settle → after, with an
/// idle gap of `timing.idle` before every trial but the first. `count` is at least 1 by
/// its type. Generic over the proof's error `E`: a failed reading, warm-up or trial
/// returns its own error unchanged, so the proof's report of it keeps its cause.
pub async fn measure<O, P, F, W, T, E>(
    observer: &mut O,
    timing: Timing,
    prepare: P,
    count: NonZeroU32,
    mut workload: F,
) -> Result<Trials<T>, E>
where
    O: Observe,
    E: From<O::Error>,
    P: Future<Output = Result<(), E>>,
    F: FnMut(usize) -> W,
    W: Future<Output = Result<T, E>>,
{
    let count = count.get();
    let quiet_start = observer.observe().await?;
    tokio::time::sleep(timing.idle).await;
    let quiet_end = observer.observe().await?;
    prepare.await?;
    let mut runs = Vec::new();
    for i in 0..count as usize {
        if i > 0 {
            // The gap: nothing of the proof's runs, so what moves now is someone else's.
            tokio::time::sleep(timing.idle).await;
        }
        let before = observer.observe().await?;
        let workload = workload(i).await?;
        tokio::time::sleep(timing.settle).await;
        let after = observer.observe().await?;
        runs.push(TrialRun {
            before,
            after,
            workload,
        });
    }
    Ok(Trials {
        quiet_start,
        quiet_end,
        runs,
    })
}

/// In-memory measurements for the proofs' tests: each counter is given its value at the
/// readings, and [`Scenario::measured`] (one trial) or [`Scenario::trials`] builds the
/// observations a real run would
/// have taken (idle window 0 s → 1 s, workload 2 s → 3 s).
#[cfg(test)]
pub(crate) mod fixture {
    use std::time::{Duration, SystemTime};

    use dpu_probe::snapshot::{Sample, Snapshot, Source, Unit};

    use super::{Observation, TrialRun, Trials};
    use crate::accounting::Side;

    /// One counter's values at quiet start, quiet end, then before and after each trial (one
    /// trial for [`Scenario::measured`]); `None` where the reading does not have it.
    #[derive(Debug, Clone)]
    struct Row {
        side: Side,
        source: Source,
        object: String,
        counter: String,
        unit: Unit,
        values: Vec<Option<u64>>,
    }

    /// A counter's values at successive readings: `start`, then growing by each of
    /// `segments` in turn (the idle window, the step to the first trial, trial 1, gap 1 ...).
    pub(crate) fn readings(start: u64, segments: &[u64]) -> Vec<Option<u64>> {
        let mut at = start;
        std::iter::once(Some(start))
            .chain(segments.iter().map(|grow| {
                at += grow;
                Some(at)
            }))
            .collect()
    }

    /// The counters of a proof run, both sides.
    #[derive(Debug, Clone, Default)]
    pub(crate) struct Scenario {
        rows: Vec<Row>,
    }

    impl Scenario {
        /// A counter with these values at the four readings (`[None; 4]`: never read);
        /// replaces what an earlier call gave the same counter.
        pub(crate) fn row(
            self,
            side: Side,
            source: Source,
            object: &str,
            counter: &str,
            unit: Unit,
            values: [Option<u64>; 4],
        ) -> Self {
            self.series(side, source, object, counter, unit, &values)
        }

        /// A counter with these values at quiet start, quiet end, and before and after each
        /// trial in turn (2 + 2 x trials values); replaces what an earlier call gave it.
        pub(crate) fn series(
            mut self,
            side: Side,
            source: Source,
            object: &str,
            counter: &str,
            unit: Unit,
            values: &[Option<u64>],
        ) -> Self {
            self.rows.retain(|r| {
                (r.side, r.source, r.object.as_str(), r.counter.as_str())
                    != (side, source, object, counter)
            });
            self.rows.push(Row {
                side,
                source,
                object: object.to_owned(),
                counter: counter.to_owned(),
                unit,
                values: values.to_vec(),
            });
            self
        }

        /// A counter at `start` that is quiet over the idle window and grows by `by`
        /// over the workload.
        pub(crate) fn grows(
            self,
            side: Side,
            source: Source,
            object: &str,
            counter: &str,
            unit: Unit,
            (start, by): (u64, u64),
        ) -> Self {
            let values = [Some(start), Some(start), Some(start), Some(start + by)];
            self.row(side, source, object, counter, unit, values)
        }

        /// The four observations of one trial, with `workload` as the workload's result.
        pub(crate) fn measured<T>(&self, workload: T) -> Trials<T> {
            self.trials(vec![workload])
        }

        /// The readings of `workloads.len()` trials (at least one), trial `i` returning
        /// `workloads[i]`.
        pub(crate) fn trials<T>(&self, workloads: Vec<T>) -> Trials<T> {
            assert!(
                !workloads.is_empty(),
                "a measurement has at least one trial"
            );
            let at = |i: usize| self.observation(i);
            Trials {
                quiet_start: at(0),
                quiet_end: at(1),
                runs: workloads
                    .into_iter()
                    .enumerate()
                    .map(|(i, workload)| TrialRun {
                        before: at(2 + 2 * i),
                        after: at(3 + 2 * i),
                        workload,
                    })
                    .collect(),
            }
        }

        /// Every side's reading `i`; the far end only when a row is on it.
        fn observation(&self, i: usize) -> Observation {
            Observation {
                host: self.snapshot(Side::Host, i),
                dpu: self.snapshot(Side::Dpu, i),
                far_end: self
                    .rows
                    .iter()
                    .any(|r| r.side == Side::FarEnd)
                    .then(|| self.snapshot(Side::FarEnd, i)),
            }
        }

        fn snapshot(&self, side: Side, i: usize) -> Snapshot {
            let at = Duration::from_secs(i as u64);
            Snapshot {
                taken_at: SystemTime::UNIX_EPOCH + at,
                monotonic_start: at,
                monotonic_end: at,
                boot_id: Some(format!("{side:?}-boot")),
                samples: self
                    .rows
                    .iter()
                    .filter(|r| r.side == side)
                    .filter_map(|r| {
                        let value = r.values.get(i).copied().flatten()?;
                        let (object, counter) = (r.object.clone(), r.counter.clone());
                        Some(Sample::cumulative(r.source, object, counter, value, r.unit))
                    })
                    .collect(),
                errors: Vec::new(),
                read: dpu_probe::snapshot::ReadReport::default(),
            }
        }
    }
}

#[cfg(test)]
mod tests;
