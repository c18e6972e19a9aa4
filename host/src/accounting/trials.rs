//! Dose–response: the workload run as several trials of different sizes (1, 2, 1 ... units
//! of work), with idle gaps between them, instead of one window. One window shows only that
//! counters moved while the workload ran; anything else that moved them then (another reader
//! of the same volume, a burst) is counted as the workload's. Trials make the counters
//! follow a pattern the proof chose: every trial is judged on its own window with its own
//! size, a witness's growth per unit of work must agree across trials, and every gap must
//! be quiet. A reader that is busy all the time shows in the gaps; one that is busy during
//! one trial shows as that trial's disagreement. Such a run is INCONCLUSIVE, naming the
//! trial or gap and the counter; a negative control that fails in any trial is NOT PROVEN.

use std::future::Future;

use dpu_probe::snapshot::diff;

use super::measure::{Observation, Observe, Timing};
use super::{evaluate, verdict_of, Evidence, Expectation, Line, Outcome, Verdict};

/// The most trials a proof runs.
pub const MAX_TRIALS: u32 = 9;

/// How far one trial's growth per unit of work may be from the median of all trials', as a
/// share of that median. The witnesses this is applied to count the work itself (a volume's
/// bytes read), so honest trials agree far more closely.
pub const AGREEMENT: f64 = 0.10;

/// The relative sizes of `count` trials: 1, 2, 1, 2 ... units (N, 2N, N for three), so no
/// two neighbours are alike.
pub fn weights(count: u32) -> Vec<u64> {
    (0..count)
        .map(|i| if i.is_multiple_of(2) { 1 } else { 2 })
        .collect()
}

/// One trial: its readings and what its workload returned.
#[derive(Debug)]
pub struct TrialRun<T> {
    /// Just before the trial's workload.
    pub before: Observation,
    /// After it and the settle pause.
    pub after: Observation,
    /// The workload's own result.
    pub workload: T,
}

/// A measurement as trials: the idle window for background, then each trial, a gap of the
/// idle window's length between two trials.
#[derive(Debug)]
pub struct Trials<T> {
    /// The start of the idle window.
    pub quiet_start: Observation,
    /// Its end.
    pub quiet_end: Observation,
    /// The trials in the order they ran.
    pub runs: Vec<TrialRun<T>>,
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

    /// Trial `i`'s window, with the idle window as background.
    pub fn trial(&self, i: usize) -> Option<Evidence> {
        let run = self.runs.get(i)?;
        Some(self.window(&run.before, &run.after))
    }

    /// The gap after trial `i` (its after-reading to the next trial's before-reading), with
    /// the idle window as background; `None` after the last trial.
    pub fn gap(&self, i: usize) -> Option<Evidence> {
        let (this, next) = (self.runs.get(i)?, self.runs.get(i + 1)?);
        Some(self.window(&this.after, &next.before))
    }
}

/// Runs the trials: the idle window, then `prepare` (outside every window), then for each
/// trial `i` in `0..count`: before → `workload(i)` → settle → after, with an idle gap of
/// `timing.idle` before every trial but the first.
pub async fn measure_trials<O, P, F, W, T>(
    observer: &mut O,
    timing: Timing,
    prepare: P,
    count: u32,
    mut workload: F,
) -> anyhow::Result<Trials<T>>
where
    O: Observe,
    P: Future<Output = anyhow::Result<()>>,
    F: FnMut(usize) -> W,
    W: Future<Output = anyhow::Result<T>>,
{
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

/// Judges a gap's expectations (upper bounds on the witnesses): a witness that moved while
/// no workload ran is not a failure of the offload but traffic the trials cannot be told
/// from, so a line not met there is INCONCLUSIVE.
pub fn judge_gap(expectations: &[Expectation], evidence: &Evidence) -> Vec<Line> {
    let (_, mut lines) = evaluate(expectations, evidence);
    for line in &mut lines {
        if let Outcome::NotMet(why) = &line.outcome {
            line.outcome = Outcome::Inconclusive(format!("moved while no workload ran: {why}"));
        }
    }
    lines
}

/// Holds the line named `witness` in every trial to the others: its net growth per unit of
/// work (`work[i]` for trial `i`) must be within [`AGREEMENT`] of the median over the
/// trials. A met line that is off becomes INCONCLUSIVE naming the trial and the counter:
/// something besides the workload moved it during that trial. Needs two trials with a
/// judged line; a line that is not met already keeps its outcome.
pub fn hold_to_agreement(trials: &mut [Vec<Line>], work: &[u64], witness: &str) {
    let ratios: Vec<Option<f64>> = trials
        .iter()
        .zip(work)
        .map(|(lines, &work)| {
            let line = lines.iter().find(|l| l.expectation.name == witness)?;
            let net = line.net?;
            (work > 0).then(|| net as f64 / work as f64)
        })
        .collect();
    let mut known: Vec<f64> = ratios.iter().flatten().copied().collect();
    if known.len() < 2 {
        return;
    }
    known.sort_by(f64::total_cmp);
    let mid = known.len() / 2;
    let median = if known.len().is_multiple_of(2) {
        (known[mid - 1] + known[mid]) / 2.0
    } else {
        known[mid]
    };
    for (i, (lines, ratio)) in trials.iter_mut().zip(&ratios).enumerate() {
        let Some(ratio) = ratio else { continue };
        if (ratio - median).abs() <= AGREEMENT * median {
            continue;
        }
        let Some(line) = lines.iter_mut().find(|l| l.expectation.name == witness) else {
            continue;
        };
        if line.outcome == Outcome::Met {
            line.outcome = Outcome::Inconclusive(format!(
                "trial {}: {} {} grew {ratio:.2} per unit of work where the trials' median \
                 is {median:.2} (more than {:.0}% apart): something besides the workload \
                 moved it during this trial",
                i + 1,
                line.expectation.select.objects.join(", "),
                line.expectation.select.counter,
                AGREEMENT * 100.0
            ));
        }
    }
}

/// The verdict over every trial and gap: NOT PROVEN when a negative control failed in any
/// trial (the workload went another way at least once) or when every trial failed;
/// PROVEN when every trial and every gap is; otherwise INCONCLUSIVE (some trials met and
/// others did not, or a gap was not quiet: the counters did not follow the workload).
pub fn verdict(trials: &[Vec<Line>], gaps: &[Vec<Line>]) -> Verdict {
    let control_failed = trials
        .iter()
        .flatten()
        .any(|l| l.expectation.is_negative_control() && matches!(l.outcome, Outcome::NotMet(_)));
    let verdicts: Vec<Verdict> = trials.iter().map(|lines| verdict_of(lines)).collect();
    if control_failed || (!verdicts.is_empty() && verdicts.iter().all(|v| *v == Verdict::NotProven))
    {
        Verdict::NotProven
    } else if verdicts.iter().all(|v| *v == Verdict::Proven)
        && gaps
            .iter()
            .all(|lines| verdict_of(lines) == Verdict::Proven)
        && !verdicts.is_empty()
    {
        Verdict::Proven
    } else {
        Verdict::Inconclusive
    }
}

#[cfg(test)]
#[path = "trials_tests.rs"]
mod tests;
