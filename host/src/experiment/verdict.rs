//! What an experiment's statistics conclude, as typed values a report can render and a
//! script can read (`-o json`): the verdict, why it could not be decided, and every number
//! it was decided on.
//!
//! The words follow the proofs' vocabulary (docs/architecture.md §5): a **verdict** in
//! `SCREAMING_SNAKE_CASE` in JSON, like `accounting::Verdict`'s `PROVEN`/`NOT_PROVEN`/
//! `INCONCLUSIVE`, and INCONCLUSIVE meaning the same thing there and here: nothing was
//! shown false, but the evidence cannot decide, and the report says why.

use std::fmt;

use serde::Serialize;

use super::bootstrap::Interval;
use super::design::{Arm, Direction, Order};

/// The conclusion about B against A.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum ExperimentVerdict {
    /// B is better than A: the interval of B − A excludes zero on the better side.
    Improvement,
    /// B is worse than A: the interval excludes zero on the worse side.
    Regression,
    /// The interval includes zero: no effect detected at this noise level (which is not
    /// the same as "no effect"; the report says how many trials could tell).
    NoEffect,
    /// The trials cannot decide: too few of them, or the baseline moved ([`Doubt`]).
    Inconclusive,
}

impl ExperimentVerdict {
    /// The verdict as reports print it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Improvement => "IMPROVEMENT",
            Self::Regression => "REGRESSION",
            Self::NoEffect => "NO EFFECT",
            Self::Inconclusive => "INCONCLUSIVE",
        }
    }
}

/// Why a verdict is INCONCLUSIVE: each reason with its numbers.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "reason", rename_all = "snake_case")]
pub enum Doubt {
    /// A phase has fewer trials than any interval can be built on.
    TooFewTrials {
        /// The phase, e.g. `A2`.
        phase: String,
        /// How many trials it has.
        trials: usize,
        /// The least accepted per phase.
        minimum: usize,
    },
    /// Two A phases disagree: the system moved while the experiment ran, so B's
    /// difference from A cannot be told from the drift.
    Drift(DriftCheck),
}

impl fmt::Display for Doubt {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::TooFewTrials {
                phase,
                trials,
                minimum,
            } => write!(
                f,
                "too few trials: {phase} has {trials}, at least {minimum} per phase are needed"
            ),
            Self::Drift(d) => {
                write!(
                    f,
                    "the baseline drifted: {} − {} = {}",
                    d.second,
                    d.first,
                    signed(d.difference)
                )?;
                if let Some(relative) = d.relative_percent {
                    write!(
                        f,
                        " ({} % of A, limit {} %)",
                        signed(relative),
                        number(d.threshold_percent)
                    )?;
                }
                write!(
                    f,
                    ", {} % interval [{}, {}] {} 0",
                    number(d.interval.confidence * 100.0),
                    number(d.interval.low),
                    number(d.interval.high),
                    if d.interval.excludes_zero() {
                        "excludes"
                    } else {
                        "includes"
                    }
                )
            }
        }
    }
}

/// One phase: its trials and their median and spread.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PhaseSummary {
    /// `A1`, `B1`, `A2`, ... in the order the phases ran.
    pub label: String,
    /// Which value it ran.
    pub arm: Arm,
    /// Each trial's measurement, in the order taken.
    pub trials: Vec<f64>,
    /// Their median; None without trials.
    pub median: Option<f64>,
    /// Their median absolute deviation (unscaled); None without trials.
    pub mad: Option<f64>,
}

/// The comparison of two A phases.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DriftCheck {
    /// The earlier phase, e.g. `A1`.
    pub first: String,
    /// The later one, e.g. `A2`.
    pub second: String,
    /// median(second) − median(first).
    pub difference: f64,
    /// Its bootstrap interval (Bonferroni-widened when there are several pairs).
    pub interval: Interval,
    /// |difference| as a percentage of the pooled A median; None when that median is 0.
    pub relative_percent: Option<f64>,
    /// The largest relative drift accepted, in percent.
    pub threshold_percent: f64,
    /// Whether the two agree: the interval includes 0 and the relative drift is under the
    /// threshold.
    pub agrees: bool,
}

/// B's effect against A, all A phases pooled and all B phases pooled.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Effect {
    /// The median of every A trial.
    pub a_median: f64,
    /// The median of every B trial.
    pub b_median: f64,
    /// b_median − a_median, in the metric's unit.
    pub difference: f64,
    /// The difference as a percentage of a_median; None when a_median is 0.
    pub relative_percent: Option<f64>,
    /// The percentile-bootstrap interval of the difference.
    pub interval: Interval,
}

/// How many trials per phase would be needed to detect the observed difference: an
/// estimate, reported with a NO_EFFECT verdict.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TrialsNeeded {
    /// The estimated trials per phase; None when the observed difference is exactly zero
    /// (there is no effect size to aim for).
    pub per_phase: Option<u64>,
    /// The noise σ used: the scaled MAD of every trial around its phase's median.
    pub sigma: f64,
    /// The effect size δ aimed for: |observed difference|.
    pub delta: f64,
    /// The formula, in words, so the number is never taken for more than it is.
    pub method: &'static str,
}

/// The resampling the intervals came from, so anyone can recompute them.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct ResamplingUsed {
    /// How many resamples.
    pub resamples: u32,
    /// The confidence of the effect's interval.
    pub confidence: f64,
    /// The generator's seed.
    pub seed: u64,
}

/// Everything the statistics found: the verdict first, then every number behind it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Analysis {
    /// IMPROVEMENT, REGRESSION, NO_EFFECT or INCONCLUSIVE.
    pub verdict: ExperimentVerdict,
    /// The verdict in one sentence, with its numbers.
    pub summary: String,
    /// Why it is INCONCLUSIVE; empty otherwise.
    pub doubts: Vec<Doubt>,
    /// The order the phases ran in.
    pub order: Order,
    /// Which way the metric is better.
    pub better: Direction,
    /// Each phase.
    pub phases: Vec<PhaseSummary>,
    /// Every pair of A phases compared; empty with too few trials.
    pub drift: Vec<DriftCheck>,
    /// B against A; None with too few trials.
    pub effect: Option<Effect>,
    /// With NO_EFFECT: the trials per phase that could detect the observed difference.
    pub trials_needed: Option<TrialsNeeded>,
    /// The resampling behind every interval.
    pub resampling: ResamplingUsed,
}

/// `x` with four significant digits, no exponent for everyday magnitudes: reports mix
/// bytes per second (1e10) and microseconds (1.234).
pub fn number(x: f64) -> String {
    if x == 0.0 || !x.is_finite() {
        return format!("{x}");
    }
    let digits = (3 - x.abs().log10().floor() as i32).clamp(0, 12) as usize;
    let text = format!("{x:.digits$}");
    if text.contains('.') {
        text.trim_end_matches('0').trim_end_matches('.').to_owned()
    } else {
        text
    }
}

/// [`number`] with a `+` on positive values, for differences.
pub(crate) fn signed(x: f64) -> String {
    if x > 0.0 {
        format!("+{}", number(x))
    } else {
        number(x)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn verdicts_serialise_in_the_proofs_casing() {
        let json = serde_json::to_string(&[
            ExperimentVerdict::Improvement,
            ExperimentVerdict::Regression,
            ExperimentVerdict::NoEffect,
            ExperimentVerdict::Inconclusive,
        ])
        .expect("the test input has a value");
        assert_eq!(
            json,
            r#"["IMPROVEMENT","REGRESSION","NO_EFFECT","INCONCLUSIVE"]"#
        );
        assert_eq!(ExperimentVerdict::NoEffect.as_str(), "NO EFFECT");
    }

    #[test]
    fn doubts_serialise_tagged_by_reason() {
        let doubt = Doubt::TooFewTrials {
            phase: "B1".to_owned(),
            trials: 2,
            minimum: 3,
        };
        assert_eq!(
            serde_json::to_value(&doubt).expect("the test input has a value"),
            serde_json::json!({"reason": "too_few_trials", "phase": "B1", "trials": 2, "minimum": 3})
        );
        assert_eq!(
            doubt.to_string(),
            "too few trials: B1 has 2, at least 3 per phase are needed"
        );
    }

    #[test]
    fn numbers_keep_four_significant_digits() {
        assert_eq!(number(100.123_456), "100.1");
        assert_eq!(number(1.234_567), "1.235");
        assert_eq!(number(12_345_678.9), "12345679");
        assert_eq!(number(0.000_123_46), "0.0001235");
        assert_eq!(number(5.0), "5");
        assert_eq!(signed(2.5), "+2.5");
        assert_eq!(signed(-2.5), "-2.5");
        assert_eq!(signed(0.0), "0");
    }
}
