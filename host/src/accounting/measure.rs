//! The skeleton every proof runs, written once: an idle window (to measure background
//! traffic), a reading before the workload, the workload, a pause for the counters to
//! settle, and a reading after. The proof supplies how to read both sides and what the
//! workload is; the result is the [`Evidence`] the expectations are judged on.

use std::future::Future;
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
    /// Reads both sides once.
    fn observe(&mut self) -> impl Future<Output = anyhow::Result<Observation>>;
}

/// The timing of one measurement.
#[derive(Debug, Clone, Copy)]
pub struct Timing {
    /// The idle window before the workload, for background traffic.
    pub idle: Duration,
    /// The pause after the workload, for counters updated on completion or late.
    pub settle: Duration,
}

/// The four readings of a measurement and what the workload returned.
#[derive(Debug)]
pub struct Measured<T> {
    /// The start of the idle window.
    pub quiet_start: Observation,
    /// Its end.
    pub quiet_end: Observation,
    /// Just before the workload.
    pub before: Observation,
    /// After the workload and the settle pause.
    pub after: Observation,
    /// The workload's own result (bytes read, packets sent ...).
    pub workload: T,
}

impl<T> Measured<T> {
    /// The deltas the expectations are judged on: the workload's window, and the idle
    /// window as background.
    pub fn evidence(&self) -> Evidence {
        Evidence {
            host: diff(&self.before.host, &self.after.host),
            dpu: diff(&self.before.dpu, &self.after.dpu),
            host_background: Some(diff(&self.quiet_start.host, &self.quiet_end.host)),
            dpu_background: Some(diff(&self.quiet_start.dpu, &self.quiet_end.dpu)),
            far_end: self.before.far_end_diff(&self.after),
            far_end_background: self.quiet_start.far_end_diff(&self.quiet_end),
        }
    }
}

/// Runs the skeleton: idle window, then `prepare` (outside every window: a warm-up), then
/// before → `workload` → settle → after.
pub async fn measure<O, P, W, T>(
    observer: &mut O,
    timing: Timing,
    prepare: P,
    workload: W,
) -> anyhow::Result<Measured<T>>
where
    O: Observe,
    P: Future<Output = anyhow::Result<()>>,
    W: Future<Output = anyhow::Result<T>>,
{
    let quiet_start = observer.observe().await?;
    tokio::time::sleep(timing.idle).await;
    let quiet_end = observer.observe().await?;
    prepare.await?;
    let before = observer.observe().await?;
    let workload = workload.await?;
    tokio::time::sleep(timing.settle).await;
    let after = observer.observe().await?;
    Ok(Measured {
        quiet_start,
        quiet_end,
        before,
        after,
        workload,
    })
}

/// In-memory measurements for the proofs' tests: each counter is given its value at the
/// four readings, and [`Scenario::measured`] builds the observations a real run would
/// have taken (idle window 0 s → 1 s, workload 2 s → 3 s).
#[cfg(test)]
pub(crate) mod fixture {
    use std::time::{Duration, SystemTime};

    use dpu_probe::snapshot::{Sample, Snapshot, Source, Unit};

    use super::{Measured, Observation};
    use crate::accounting::trials::{TrialRun, Trials};
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

        /// The four observations, with `workload` as the workload's result.
        pub(crate) fn measured<T>(&self, workload: T) -> Measured<T> {
            let at = |i: usize| self.observation(i);
            Measured {
                quiet_start: at(0),
                quiet_end: at(1),
                before: at(2),
                after: at(3),
                workload,
            }
        }

        /// The readings of `workloads.len()` trials, trial `i` returning `workloads[i]`.
        pub(crate) fn trials<T>(&self, workloads: Vec<T>) -> Trials<T> {
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
            }
        }
    }
}
