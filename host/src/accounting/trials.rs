//! Dose–response: the workload run as several trials of different sizes (1, 2, 1 ... units
//! of work), with idle gaps between them, instead of one window. One window shows only that
//! counters moved while the workload ran; anything else that moved them then (another reader
//! of the same volume, a burst) is counted as the workload's. Trials make the counters
//! follow a pattern the proof chose: every trial is judged on its own window with its own
//! size, a witness's growth per unit of work must agree across trials, and every gap must
//! be quiet. A reader that is busy all the time shows in the gaps; one that is busy during
//! one trial shows as that trial's disagreement. Such a run is INCONCLUSIVE, naming the
//! trial or gap and the counter; a negative control that fails in any trial is NOT PROVEN.

use std::num::NonZeroU32;

use crate::param::{Field, ParamError};

use super::{evaluate, verdict_of, Evidence, Expectation, Line, Outcome, Verdict};

/// The most trials a proof runs.
pub const MAX_TRIALS: u32 = 9;

/// `trials` as the count [`super::measure::measure`] takes, or why it is not one: 1 to
/// [`MAX_TRIALS`], said about the trials field.
pub fn trial_count(trials: u32) -> Result<NonZeroU32, ParamError> {
    NonZeroU32::new(trials)
        .filter(|n| n.get() <= MAX_TRIALS)
        .ok_or_else(|| {
            ParamError::new(Field::Trials)
                .field(Field::Trials)
                .text(format!(" must be 1 to {MAX_TRIALS}, not {trials}"))
        })
}

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

/// `total` split into `count` trials in [`weights`]' proportions, each unit a whole number
/// of `step` (a block size; 1 for a count) and at least `min_unit`; `Err` with the fewest
/// `total` that splits so. What the rest of an uneven split would be is not run.
pub fn split(total: u64, count: u32, step: u64, min_unit: u64) -> Result<Vec<u64>, u64> {
    let weights = weights(count);
    let units: u64 = weights.iter().sum();
    let step = step.max(1);
    let unit = total / units.max(1) / step * step;
    if unit == 0 || unit < min_unit {
        return Err(units * min_unit.max(step));
    }
    Ok(weights.iter().map(|w| w * unit).collect())
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

/// A run concluded: each gap judged by `gap` ([`judge_gap`]) on its evidence, the verdict
/// over trials and gaps ([`verdict`]), each trial's own verdict, and every line in the
/// order it happened ([`in_order`]). `per_trial` is judged already (and held to agreement).
pub fn conclude(
    per_trial: Vec<Vec<Line>>,
    gap: &Expectation,
    gaps: &[Evidence],
) -> (Verdict, Vec<Verdict>, Vec<Line>) {
    let gaps: Vec<Vec<Line>> = gaps
        .iter()
        .map(|evidence| judge_gap(std::slice::from_ref(gap), evidence))
        .collect();
    let overall = verdict(&per_trial, &gaps);
    let each = per_trial.iter().map(|lines| verdict_of(lines)).collect();
    (overall, each, in_order(per_trial, &gaps))
}

/// Every line of a run in the order it happened: each trial's, then the gap after it. With
/// more than one trial each line is named by its trial or gap (`trial 2: ...`, `gap 1:
/// ...`); one trial is one window, its lines named as they are.
pub fn in_order(per_trial: Vec<Vec<Line>>, gaps: &[Vec<Line>]) -> Vec<Line> {
    let named = per_trial.len() > 1;
    let label = |mut line: Line, label: String| {
        line.expectation.name = format!("{label}: {}", line.expectation.name);
        line
    };
    let mut lines = Vec::new();
    for (i, trial) in per_trial.into_iter().enumerate() {
        if named {
            lines.extend(
                trial
                    .into_iter()
                    .map(|l| label(l, format!("trial {}", i + 1))),
            );
        } else {
            lines.extend(trial);
        }
        if let Some(gap) = gaps.get(i) {
            lines.extend(
                gap.iter()
                    .map(|l| label(l.clone(), format!("gap {}", i + 1))),
            );
        }
    }
    lines
}

#[cfg(test)]
mod tests;
