//! The percentile bootstrap of a difference of medians, with a seeded generator so that
//! the same trials always give the same interval.
//!
//! Method (Efron and Tibshirani, "An Introduction to the Bootstrap", 1993, ch. 13): draw
//! each group again with replacement, as many trials as it has, take the difference of the
//! two resampled medians, repeat R times, and read the interval off the sorted differences
//! at α/2 and 1 − α/2. No distribution is assumed for the trials, which suits benchmark
//! numbers (skewed, sometimes bimodal). With a handful of trials per group the resampled
//! medians can only take a few values, so the interval is coarse and somewhat too narrow;
//! that is why the verdict also needs at least three trials per phase and an A phase that
//! agrees with itself.

use serde::Serialize;

use super::rng::SplitMix64;
use super::robust::median_of_sorted;

/// A two-sided confidence interval.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Interval {
    /// The lower end.
    pub low: f64,
    /// The upper end.
    pub high: f64,
    /// Its confidence level, e.g. 0.95.
    pub confidence: f64,
}

impl Interval {
    /// Whether zero lies outside the interval (strictly: an end at exactly zero includes
    /// it), the one condition under which a difference is called real.
    pub fn excludes_zero(&self) -> bool {
        self.low > 0.0 || self.high < 0.0
    }
}

/// How to resample.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Resampling {
    /// How many resamples (R).
    pub resamples: u32,
    /// The confidence level, strictly between 0 and 1.
    pub confidence: f64,
    /// The generator's seed.
    pub seed: u64,
}

/// The percentile-bootstrap interval of `median(second) − median(first)`; None when a
/// group is empty, `resamples` is 0 or the confidence is not strictly between 0 and 1.
pub fn difference_of_medians(first: &[f64], second: &[f64], how: &Resampling) -> Option<Interval> {
    if first.is_empty()
        || second.is_empty()
        || how.resamples == 0
        || !(how.confidence > 0.0 && how.confidence < 1.0)
    {
        return None;
    }
    let mut rng = SplitMix64::new(how.seed);
    let mut scratch_first = vec![0.0; first.len()];
    let mut scratch_second = vec![0.0; second.len()];
    let mut differences: Vec<f64> = (0..how.resamples)
        .map(|_| {
            let m1 = resampled_median(first, &mut scratch_first, &mut rng);
            let m2 = resampled_median(second, &mut scratch_second, &mut rng);
            m2 - m1
        })
        .collect();
    differences.sort_by(f64::total_cmp);
    let alpha = 1.0 - how.confidence;
    Some(Interval {
        low: percentile(&differences, alpha / 2.0),
        high: percentile(&differences, 1.0 - alpha / 2.0),
        confidence: how.confidence,
    })
}

/// The median of one resample of `values` drawn into `scratch`.
fn resampled_median(values: &[f64], scratch: &mut [f64], rng: &mut SplitMix64) -> f64 {
    for slot in scratch.iter_mut() {
        *slot = values[rng.below(values.len())];
    }
    scratch.sort_by(f64::total_cmp);
    median_of_sorted(scratch)
}

/// The `q`-quantile of sorted, non-empty `sorted` by the nearest-rank rule: the smallest
/// value with at least a fraction `q` of the values at or below it (the usual reading of a
/// percentile interval; no interpolation between resampled medians that cannot occur).
fn percentile(sorted: &[f64], q: f64) -> f64 {
    let n = sorted.len();
    let rank = (q * n as f64).ceil() as usize;
    sorted[rank.clamp(1, n) - 1]
}

#[cfg(test)]
mod tests {
    use super::*;

    const HOW: Resampling = Resampling {
        resamples: 10_000,
        confidence: 0.95,
        seed: 1,
    };

    #[test]
    fn separated_groups_give_an_interval_that_excludes_zero() {
        let a = [99.0, 100.0, 101.0, 100.5, 99.5];
        let b = [109.0, 110.0, 111.0, 110.5, 109.5];
        let interval = difference_of_medians(&a, &b, &HOW).expect("the test input has a value");
        assert!(interval.excludes_zero(), "{interval:?}");
        // Every resampled difference lies between min(b) - max(a) and max(b) - min(a).
        assert!(interval.low >= 8.0 && interval.high <= 12.0, "{interval:?}");
    }

    #[test]
    fn identical_groups_give_an_interval_around_zero() {
        let a = [99.0, 100.0, 101.0, 100.5, 99.5];
        let interval = difference_of_medians(&a, &a, &HOW).expect("the test input has a value");
        assert!(!interval.excludes_zero(), "{interval:?}");
        assert!(interval.low < 0.0 && interval.high > 0.0, "{interval:?}");
    }

    #[test]
    fn the_same_seed_gives_the_same_interval_and_another_seed_may_not() {
        let a = [99.0, 100.0, 101.0, 100.5, 99.5, 98.7];
        let b = [100.0, 102.0, 101.0, 103.5, 99.0];
        let first = difference_of_medians(&a, &b, &HOW).expect("the test input has a value");
        let again = difference_of_medians(&a, &b, &HOW).expect("the test input has a value");
        assert_eq!(first, again);
        let other = Resampling { seed: 2, ..HOW };
        let differs = (3..40).any(|seed| {
            difference_of_medians(&a, &b, &Resampling { seed, ..other })
                .expect("the test input has a value")
                != first
        });
        assert!(differs, "the seed must matter, or it is not being used");
    }

    #[test]
    fn refuses_what_it_cannot_resample() {
        assert_eq!(difference_of_medians(&[], &[1.0], &HOW), None);
        assert_eq!(difference_of_medians(&[1.0], &[], &HOW), None);
        let none = Resampling {
            resamples: 0,
            ..HOW
        };
        assert_eq!(difference_of_medians(&[1.0], &[1.0], &none), None);
        let certain = Resampling {
            confidence: 1.0,
            ..HOW
        };
        assert_eq!(difference_of_medians(&[1.0], &[1.0], &certain), None);
    }

    #[test]
    fn an_end_at_exactly_zero_does_not_exclude_it() {
        let touching = Interval {
            low: 0.0,
            high: 2.0,
            confidence: 0.95,
        };
        assert!(!touching.excludes_zero());
        let below = Interval {
            low: -3.0,
            high: -0.1,
            confidence: 0.95,
        };
        assert!(below.excludes_zero());
    }

    #[test]
    fn percentile_uses_nearest_rank() {
        let sorted: Vec<f64> = (1..=100).map(f64::from).collect();
        assert_eq!(percentile(&sorted, 0.025), 3.0);
        assert_eq!(percentile(&sorted, 0.975), 98.0);
        assert_eq!(percentile(&sorted, 0.0), 1.0);
        assert_eq!(percentile(&sorted, 1.0), 100.0);
    }
}
