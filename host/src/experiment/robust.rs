//! Robust location and spread of a handful of trials: the median and the median absolute
//! deviation (MAD).
//!
//! Why the MAD and not the interquartile range: with 3 to 10 trials a phase, the IQR's
//! value depends on which of the competing quantile conventions is used (there are nine in
//! common use, and at n = 5 they disagree by a whole trial), and it ignores a quarter of
//! the data at each end, so one outlier in five moves it. The MAD is defined without
//! conventions, tolerates up to half the trials being outliers (breakdown point 50 %, the
//! IQR's is 25 %), and scaled by 1.4826 it estimates the standard deviation of normal
//! noise, which is what the trials-needed estimate needs.

/// 1 / Φ⁻¹(3/4): makes the MAD a consistent estimator of σ for normal data.
pub const MAD_TO_SIGMA: f64 = 1.482_602_218_505_602;

/// The median of `values`; None when empty. The mean of the two middle values for an even
/// count.
pub fn median(values: &[f64]) -> Option<f64> {
    if values.is_empty() {
        return None;
    }
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    Some(median_of_sorted(&sorted))
}

/// The median of already sorted, non-empty `sorted`.
pub fn median_of_sorted(sorted: &[f64]) -> f64 {
    let n = sorted.len();
    if n % 2 == 1 {
        sorted[n / 2]
    } else {
        (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0
    }
}

/// The median absolute deviation from the median (unscaled); None when empty.
pub fn mad(values: &[f64]) -> Option<f64> {
    let centre = median(values)?;
    let deviations: Vec<f64> = values.iter().map(|v| (v - centre).abs()).collect();
    median(&deviations)
}

/// The noise of several phases together, as a standard deviation: the scaled MAD of every
/// trial's distance from its own phase's median. Each phase is centred on itself first, so
/// a difference between phases (the effect, or drift) is not counted as noise. None when
/// no phase has a trial.
pub fn pooled_sigma(phases: &[&[f64]]) -> Option<f64> {
    let residuals: Vec<f64> = phases
        .iter()
        .filter_map(|phase| median(phase).map(|centre| phase.iter().map(move |v| v - centre)))
        .flatten()
        .collect();
    mad(&residuals).map(|m| m * MAD_TO_SIGMA)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_of_odd_even_and_empty() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(&[4.0, 1.0, 3.0, 2.0]), Some(2.5));
        assert_eq!(median(&[]), None);
    }

    #[test]
    fn mad_ignores_one_outlier_in_five() {
        // Deviations from 10: 0, 1, 1, 2, 990 -> median 1, whatever the outlier is.
        assert_eq!(mad(&[10.0, 9.0, 11.0, 12.0, 1000.0]), Some(1.0));
        assert_eq!(mad(&[10.0, 9.0, 11.0, 12.0, 13.0]), Some(1.0));
        assert_eq!(mad(&[]), None);
    }

    #[test]
    fn pooled_sigma_does_not_count_the_shift_between_phases() {
        let a = [99.0, 100.0, 101.0];
        let b = [199.0, 200.0, 201.0];
        // Residuals -1, 0, 1 twice: MAD 1.
        assert_eq!(pooled_sigma(&[&a, &b]), Some(MAD_TO_SIGMA));
        assert_eq!(pooled_sigma(&[&[], &[]]), None);
    }
}
