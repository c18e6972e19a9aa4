//! The statistics of an A/B/A experiment: from each phase's trials to a [`ExperimentVerdict`].
//!
//! In order, and stopping at the first step that cannot go on:
//!
//! 1. **Enough trials.** Every phase needs at least [`MIN_TRIALS`]; otherwise
//!    INCONCLUSIVE naming the phase. Fewer than three values have no median worth the name
//!    and no spread to speak of.
//! 2. **Drift.** Every pair of A phases is compared: median(later) − median(earlier) with
//!    its percentile-bootstrap interval. They agree when the interval includes 0 *and*
//!    |difference| / median(all A) is under [`StatsConfig::max_drift`]. With several pairs
//!    (A B A B A has three) each interval is Bonferroni-widened to confidence
//!    1 − α/pairs, so more A phases do not mean more false alarms. Any disagreement:
//!    INCONCLUSIVE naming the drift with its numbers, because a baseline that moved
//!    cannot tell B's effect from the movement.
//! 3. **Effect.** All A trials pooled against all B trials pooled: δ = median(B) −
//!    median(A), with its percentile-bootstrap interval ([`super::bootstrap`]).
//!    The interval excluding 0 is an IMPROVEMENT or a REGRESSION depending on the
//!    metric's [`Direction`]; including 0, NO_EFFECT.
//! 4. **Trials needed** (NO_EFFECT only), an estimate by the normal approximation for two
//!    groups: k ≈ (π/2) · ((z_{1−α/2} + z_{1−β}) · σ / δ)² · (1/a + 1/b) trials per
//!    phase, with a and b the number of A and B phases (so a group has a·k or b·k
//!    trials), σ the noise ([`super::robust::pooled_sigma`]), δ the observed |difference|,
//!    α = 1 − confidence and 1 − β the power (0.8). The π/2 is the large-sample variance
//!    of a median relative to a mean for normal noise, because medians are compared. For
//!    a = b = 1 and without π/2 this is the textbook n = 2 ((z_{α/2} + z_β) σ / δ)².

use std::f64::consts::FRAC_PI_2;

use super::bootstrap::{difference_of_medians, Interval, Resampling};
use super::design::{Arm, Direction, Order};
use super::normal;
use super::rng::derive_seed;
use super::robust::{mad, median, pooled_sigma};
use super::verdict::{
    number, signed, Analysis, Doubt, DriftCheck, Effect, ExperimentVerdict, PhaseSummary,
    ResamplingUsed, TrialsNeeded,
};

/// The fewest trials a phase may have for its median and spread to mean anything.
pub const MIN_TRIALS: usize = 3;

/// The method of [`TrialsNeeded`], as reports print it.
const TRIALS_METHOD: &str = "estimate: k = (π/2)·((z_{1−α/2} + z_{1−β})·σ/δ)²·(1/a + 1/b) \
    trials per phase (normal approximation for a difference of medians, power 1 − β = 0.8, \
    a and b the number of A and B phases, σ the phases' pooled scaled MAD, δ the observed \
    difference)";

/// The knobs of the statistics. The defaults are what the plan runs with; they are here,
/// not in the plan, so every experiment is judged by the same rules.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct StatsConfig {
    /// Bootstrap resamples per interval.
    pub resamples: u32,
    /// Confidence of the effect's interval (and, Bonferroni-shared, of the drift checks).
    pub confidence: f64,
    /// Power of the trials-needed estimate (1 − β).
    pub power: f64,
    /// The largest relative drift between A phases accepted, as a fraction of the A
    /// median (0.05 = 5 %).
    pub max_drift: f64,
    /// The bootstrap's seed; reported, so the intervals can be recomputed.
    pub seed: u64,
}

impl Default for StatsConfig {
    /// 10,000 resamples, 95 % confidence, 80 % power, 5 % drift, a fixed seed. 10,000
    /// resamples put the interval's ends within about ±0.5 % of their exact bootstrap
    /// value (the 250th and 9,750th of 10,000); 5 % drift is larger than the run-to-run
    /// noise of RDMA bandwidth on a quiet link and smaller than the effects worth tuning
    /// for (MTU 1500 → 4096 moves it by more).
    fn default() -> Self {
        Self {
            resamples: 10_000,
            confidence: 0.95,
            power: 0.80,
            max_drift: 0.05,
            seed: 0x00AB_A00A_BA00_ABA0,
        }
    }
}

/// Why trials could not be analysed at all: the caller's mistake, not the experiment's
/// outcome (that is a [`ExperimentVerdict`], INCONCLUSIVE included).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum StatsError {
    /// The number of phases does not match the order.
    #[error("{order} has {expected} phases, {got} were given")]
    PhaseCount {
        /// The order's name.
        order: &'static str,
        /// How many phases it has.
        expected: usize,
        /// How many were given.
        got: usize,
    },
    /// A measurement is NaN or infinite: a failed trial must be reported as failed, not
    /// averaged.
    #[error("trial {trial} of phase {phase} is {value}, not a finite number")]
    NotFinite {
        /// The phase, e.g. `B1`.
        phase: String,
        /// 1 for the first trial of the phase.
        trial: usize,
        /// The value.
        value: f64,
    },
    /// A setting of [`StatsConfig`] is out of range.
    #[error("statistics setting {field}: {reason}")]
    Config {
        /// The field.
        field: &'static str,
        /// What is wrong.
        reason: String,
    },
}

/// Analyses the trials of each phase, in the order they ran (`phases[i]` ran
/// `order.arms()[i]`), for a metric that is better in `better`'s direction.
pub fn analyse(
    order: Order,
    phases: &[Vec<f64>],
    better: Direction,
    config: &StatsConfig,
) -> Result<Analysis, StatsError> {
    check_config(config)?;
    let arms = order.arms();
    if phases.len() != arms.len() {
        return Err(StatsError::PhaseCount {
            order: order.name(),
            expected: arms.len(),
            got: phases.len(),
        });
    }
    let labels = order.labels();
    for (label, trials) in labels.iter().zip(phases) {
        if let Some((index, &value)) = trials.iter().enumerate().find(|(_, v)| !v.is_finite()) {
            return Err(StatsError::NotFinite {
                phase: label.clone(),
                trial: index + 1,
                value,
            });
        }
    }
    let summaries: Vec<PhaseSummary> = labels
        .iter()
        .zip(arms)
        .zip(phases)
        .map(|((label, &arm), trials)| PhaseSummary {
            label: label.clone(),
            arm,
            trials: trials.clone(),
            median: median(trials),
            mad: mad(trials),
        })
        .collect();
    let mut analysis = Analysis {
        verdict: ExperimentVerdict::Inconclusive,
        summary: String::new(),
        doubts: Vec::new(),
        order,
        better,
        phases: summaries,
        drift: Vec::new(),
        effect: None,
        trials_needed: None,
        resampling: ResamplingUsed {
            resamples: config.resamples,
            confidence: config.confidence,
            seed: config.seed,
        },
    };

    analysis.doubts = too_few(&analysis.phases);
    if !analysis.doubts.is_empty() {
        analysis.summary = join_doubts(&analysis.doubts);
        return Ok(analysis);
    }

    let pooled_a = pooled(&analysis.phases, Arm::A);
    let pooled_b = pooled(&analysis.phases, Arm::B);
    analysis.drift = drift_checks(&analysis.phases, &pooled_a, config);
    let effect = effect(&pooled_a, &pooled_b, config);

    analysis.doubts = analysis
        .drift
        .iter()
        .filter(|check| !check.agrees)
        .cloned()
        .map(Doubt::Drift)
        .collect();
    if !analysis.doubts.is_empty() {
        analysis.summary = format!(
            "{}; B cannot be judged against a baseline that moved",
            join_doubts(&analysis.doubts)
        );
        analysis.effect = Some(effect);
        return Ok(analysis);
    }

    let interval_words = interval_words(&effect.interval);
    let change = change_words(&effect);
    if effect.interval.excludes_zero() {
        // The interval's side, not the point estimate's, decides: they agree in practice,
        // and the interval is what the claim rests on.
        let positive = effect.interval.low > 0.0;
        let is_better = better.is_better(if positive { 1.0 } else { -1.0 });
        analysis.verdict = if is_better {
            ExperimentVerdict::Improvement
        } else {
            ExperimentVerdict::Regression
        };
        analysis.summary = format!(
            "B is {} ({} is better): B − A = {change}, median {} against {} for A; \
             {interval_words} excludes 0",
            if is_better { "better" } else { "worse" },
            better.name(),
            number(effect.b_median),
            number(effect.a_median),
        );
    } else {
        let all: Vec<&[f64]> = analysis
            .phases
            .iter()
            .map(|p| p.trials.as_slice())
            .collect();
        let needed = trials_needed(order, &all, effect.difference.abs(), config);
        analysis.verdict = ExperimentVerdict::NoEffect;
        analysis.summary = format!(
            "no effect detected at this noise level: B − A = {change}, {interval_words} \
             includes 0; {}",
            match needed.per_phase {
                Some(k) => format!(
                    "an estimated {k} trials per phase would be needed to detect a \
                     difference of {} (noise σ ≈ {})",
                    number(needed.delta),
                    number(needed.sigma)
                ),
                None => "the observed difference is exactly 0, so no number of trials \
                         can be estimated from it"
                    .to_owned(),
            }
        );
        analysis.trials_needed = Some(needed);
    }
    analysis.effect = Some(effect);
    Ok(analysis)
}

/// Refuses settings no interval can be built with.
fn check_config(config: &StatsConfig) -> Result<(), StatsError> {
    let bad = |field, reason: &str| {
        Err(StatsError::Config {
            field,
            reason: reason.to_owned(),
        })
    };
    if config.resamples < 1000 {
        return bad(
            "resamples",
            "must be at least 1000 (fewer leave the interval's ends to chance)",
        );
    }
    if !(config.confidence > 0.5 && config.confidence < 1.0) {
        return bad("confidence", "must be between 0.5 and 1, exclusive");
    }
    if !(config.power > 0.5 && config.power < 1.0) {
        return bad("power", "must be between 0.5 and 1, exclusive");
    }
    if !(config.max_drift > 0.0 && config.max_drift.is_finite()) {
        return bad("max_drift", "must be a positive fraction, e.g. 0.05");
    }
    Ok(())
}

/// A doubt for each phase with fewer than [`MIN_TRIALS`] trials.
fn too_few(phases: &[PhaseSummary]) -> Vec<Doubt> {
    phases
        .iter()
        .filter(|p| p.trials.len() < MIN_TRIALS)
        .map(|p| Doubt::TooFewTrials {
            phase: p.label.clone(),
            trials: p.trials.len(),
            minimum: MIN_TRIALS,
        })
        .collect()
}

/// Every trial of one arm, phases in order.
fn pooled(phases: &[PhaseSummary], arm: Arm) -> Vec<f64> {
    phases
        .iter()
        .filter(|p| p.arm == arm)
        .flat_map(|p| p.trials.iter().copied())
        .collect()
}

/// Compares every pair of A phases (earlier, later).
fn drift_checks(
    phases: &[PhaseSummary],
    pooled_a: &[f64],
    config: &StatsConfig,
) -> Vec<DriftCheck> {
    let a_phases: Vec<&PhaseSummary> = phases.iter().filter(|p| p.arm == Arm::A).collect();
    let mut pairs = Vec::new();
    for (i, first) in a_phases.iter().enumerate() {
        for second in &a_phases[i + 1..] {
            pairs.push((*first, *second));
        }
    }
    let alpha = 1.0 - config.confidence;
    let confidence = 1.0 - alpha / pairs.len().max(1) as f64;
    let a_median = median(pooled_a).unwrap_or(0.0);
    pairs
        .iter()
        .enumerate()
        .map(|(index, (first, second))| {
            let difference =
                median(&second.trials).unwrap_or(0.0) - median(&first.trials).unwrap_or(0.0);
            let how = Resampling {
                resamples: config.resamples,
                confidence,
                seed: derive_seed(config.seed, index as u64 + 1),
            };
            let interval = bootstrap(&first.trials, &second.trials, &how);
            let relative = relative(difference.abs(), a_median);
            let threshold = config.max_drift * 100.0;
            DriftCheck {
                first: first.label.clone(),
                second: second.label.clone(),
                difference,
                interval,
                relative_percent: relative,
                threshold_percent: threshold,
                agrees: !interval.excludes_zero() && relative.is_none_or(|r| r < threshold),
            }
        })
        .collect()
}

/// B's effect: pooled B against pooled A.
fn effect(pooled_a: &[f64], pooled_b: &[f64], config: &StatsConfig) -> Effect {
    let a_median = median(pooled_a).unwrap_or(0.0);
    let b_median = median(pooled_b).unwrap_or(0.0);
    let difference = b_median - a_median;
    let how = Resampling {
        resamples: config.resamples,
        confidence: config.confidence,
        seed: derive_seed(config.seed, 0),
    };
    Effect {
        a_median,
        b_median,
        difference,
        relative_percent: relative(difference, a_median),
        interval: bootstrap(pooled_a, pooled_b, &how),
    }
}

/// The bootstrap interval of `median(second) − median(first)`; both groups have trials
/// and the settings were checked, so the bootstrap always answers.
fn bootstrap(first: &[f64], second: &[f64], how: &Resampling) -> Interval {
    difference_of_medians(first, second, how).unwrap_or(Interval {
        low: f64::NEG_INFINITY,
        high: f64::INFINITY,
        confidence: how.confidence,
    })
}

/// `x` as a percentage of `base`; None when base is 0.
fn relative(x: f64, base: f64) -> Option<f64> {
    (base != 0.0).then(|| x / base.abs() * 100.0)
}

/// The trials-needed estimate (module docs, step 4).
fn trials_needed(
    order: Order,
    phases: &[&[f64]],
    delta: f64,
    config: &StatsConfig,
) -> TrialsNeeded {
    let sigma = pooled_sigma(phases).unwrap_or(0.0);
    let a = order.arms().iter().filter(|&&arm| arm == Arm::A).count() as f64;
    let b = order.arms().iter().filter(|&&arm| arm == Arm::B).count() as f64;
    let z_alpha = normal::quantile(1.0 - (1.0 - config.confidence) / 2.0).unwrap_or(1.96);
    let z_beta = normal::quantile(config.power).unwrap_or(0.84);
    let per_phase = (delta > 0.0).then(|| {
        let k = FRAC_PI_2 * ((z_alpha + z_beta) * sigma / delta).powi(2) * (1.0 / a + 1.0 / b);
        // `as` saturates: an effect far inside the noise says "u64::MAX", i.e. never.
        (k.ceil() as u64).max(MIN_TRIALS as u64)
    });
    TrialsNeeded {
        per_phase,
        sigma,
        delta,
        method: TRIALS_METHOD,
    }
}

/// `+9.8 (+9.8 %)`: the difference and, when defined, its percentage of A.
fn change_words(effect: &Effect) -> String {
    match effect.relative_percent {
        Some(percent) => format!("{} ({} %)", signed(effect.difference), signed(percent)),
        None => signed(effect.difference),
    }
}

/// `95 % interval [8.1, 11.2]`.
fn interval_words(interval: &Interval) -> String {
    format!(
        "{} % interval [{}, {}]",
        number(interval.confidence * 100.0),
        number(interval.low),
        number(interval.high)
    )
}

/// The doubts as one sentence.
fn join_doubts(doubts: &[Doubt]) -> String {
    doubts
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join("; ")
}

#[cfg(test)]
mod tests;
