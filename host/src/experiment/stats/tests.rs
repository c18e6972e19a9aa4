//! The statistics against synthetic series whose answer is known: generated from a seeded
//! generator (no clock, no entropy), so every run sees the same numbers.

use super::*;
use crate::experiment::rng::SplitMix64;

/// `n` draws of N(mean, sd) by Box–Muller from a seeded stream.
fn normal_series(seed: u64, mean: f64, sd: f64, n: usize) -> Vec<f64> {
    let mut rng = SplitMix64::new(seed);
    (0..n)
        .map(|_| {
            // 1 − unit() is in (0, 1], so the logarithm is finite.
            let u1 = 1.0 - rng.unit();
            let u2 = rng.unit();
            mean + sd * (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
        })
        .collect()
}

/// A B A phases of `n` trials: A ~ N(a, sd), B ~ N(b, sd), each phase its own stream.
fn aba(seed: u64, a: f64, b: f64, sd: f64, n: usize) -> Vec<Vec<f64>> {
    vec![
        normal_series(seed * 10 + 1, a, sd, n),
        normal_series(seed * 10 + 2, b, sd, n),
        normal_series(seed * 10 + 3, a, sd, n),
    ]
}

fn run(order: Order, phases: &[Vec<f64>], better: Direction) -> Analysis {
    analyse(order, phases, better, &StatsConfig::default()).expect("the test input has a value")
}

#[test]
fn a_real_effect_is_found_with_an_interval_that_excludes_zero() {
    let phases = aba(1, 100.0, 110.0, 2.0, 5);
    let analysis = run(Order::Aba, &phases, Direction::Higher);
    assert_eq!(
        analysis.verdict,
        ExperimentVerdict::Improvement,
        "{}",
        analysis.summary
    );
    let effect = analysis
        .effect
        .as_ref()
        .expect("the test input has a value");
    assert!(effect.interval.low > 0.0, "{:?}", effect.interval);
    assert!(
        (effect.difference - 10.0).abs() < 3.0,
        "the estimate should be near the true +10: {}",
        effect.difference
    );
    assert!(analysis.doubts.is_empty());
    assert!(analysis.trials_needed.is_none());
    assert!(
        analysis
            .summary
            .starts_with("B is better (higher is better)"),
        "{}",
        analysis.summary
    );
    assert!(
        analysis.summary.contains("excludes 0"),
        "{}",
        analysis.summary
    );
}

#[test]
fn a_real_effect_is_found_in_nearly_every_series_and_never_reversed() {
    // Now and then the two A phases disagree by chance (seed 3: A2 − A1 = +2.4, its
    // interval just above 0), and the verdict is INCONCLUSIVE: the price of the drift
    // check, about 3.4 % of same-distribution A pairs at 5 trials (measured over 3,000
    // seeded series while writing this; 3 of these 20 happen to). The effect is never
    // missed otherwise, nor called a regression.
    let verdicts: Vec<ExperimentVerdict> = (1..=20)
        .map(|seed| {
            run(
                Order::Aba,
                &aba(seed, 100.0, 110.0, 2.0, 5),
                Direction::Higher,
            )
            .verdict
        })
        .collect();
    let found = verdicts
        .iter()
        .filter(|&&v| v == ExperimentVerdict::Improvement)
        .count();
    assert!(found >= 16, "{verdicts:?}");
    assert!(
        verdicts.iter().all(|&v| matches!(
            v,
            ExperimentVerdict::Improvement | ExperimentVerdict::Inconclusive
        )),
        "{verdicts:?}"
    );
}

#[test]
fn no_effect_is_not_claimed_and_the_trials_needed_are_estimated() {
    let phases = aba(4, 100.0, 100.0, 2.0, 5);
    let analysis = run(Order::Aba, &phases, Direction::Higher);
    assert_eq!(
        analysis.verdict,
        ExperimentVerdict::NoEffect,
        "{}",
        analysis.summary
    );
    let effect = analysis
        .effect
        .as_ref()
        .expect("the test input has a value");
    assert!(!effect.interval.excludes_zero(), "{:?}", effect.interval);
    let needed = analysis
        .trials_needed
        .as_ref()
        .expect("the test input has a value");
    let k = needed.per_phase.expect("the test input has a value");
    assert!(k > 5, "more trials than were run must be needed: {k}");
    assert!(
        needed.sigma > 0.5 && needed.sigma < 5.0,
        "σ ≈ 2: {}",
        needed.sigma
    );
    assert_eq!(needed.delta, effect.difference.abs());
    assert!(needed.method.starts_with("estimate:"));
    assert!(
        analysis
            .summary
            .starts_with("no effect detected at this noise level"),
        "{}",
        analysis.summary
    );
    assert!(
        analysis
            .summary
            .contains(&format!("an estimated {k} trials per phase")),
        "{}",
        analysis.summary
    );
}

#[test]
fn same_distribution_is_rarely_called_an_effect() {
    // At 95 % an honest interval claims an effect in about 1 series of 20 (measured over
    // 3,000 seeded series of 5 trials while writing this: 3.3 %; at 3 trials 6.6 %, the
    // percentile bootstrap being too narrow there). What must never happen is a habit of
    // claiming.
    let claims = (1..=40)
        .map(|seed| {
            run(
                Order::Aba,
                &aba(seed + 100, 100.0, 100.0, 2.0, 5),
                Direction::Higher,
            )
        })
        .filter(|a| {
            matches!(
                a.verdict,
                ExperimentVerdict::Improvement | ExperimentVerdict::Regression
            )
        })
        .count();
    assert!(
        claims <= 6,
        "{claims} of 40 same-distribution series were called an effect"
    );
}

#[test]
fn trials_needed_follows_the_stated_formula() {
    // Residuals around each phase median: -1, 0, +1, -1, +1 -> MAD 1, σ = 1.4826; δ = 1.
    let a1 = vec![9.0, 10.0, 11.0, 9.0, 11.0];
    let b1 = vec![10.0, 11.0, 12.0, 10.0, 12.0];
    let needed = trials_needed(Order::Aba, &[&a1, &b1, &a1], 1.0, &StatsConfig::default());
    // (π/2)·((1.959964 + 0.841621)·1.482602)²·(1/2 + 1) = 40.65 -> 41.
    assert_eq!(needed.per_phase, Some(41));
    assert!((needed.sigma - 1.482_602).abs() < 1e-6);
    let needed = trials_needed(
        Order::Ababa,
        &[&a1, &b1, &a1, &b1, &a1],
        1.0,
        &StatsConfig::default(),
    );
    // Same, with (1/3 + 1/2): 22.58 -> 23.
    assert_eq!(needed.per_phase, Some(23));
    let none = trials_needed(Order::Aba, &[&a1, &b1, &a1], 0.0, &StatsConfig::default());
    assert_eq!(none.per_phase, None);
}

#[test]
fn an_exactly_zero_difference_says_no_estimate_is_possible() {
    let a = vec![99.0, 100.0, 101.0];
    let analysis = run(Order::Aba, &[a.clone(), a.clone(), a], Direction::Higher);
    assert_eq!(analysis.verdict, ExperimentVerdict::NoEffect);
    assert_eq!(
        analysis
            .trials_needed
            .as_ref()
            .expect("the test input has a value")
            .per_phase,
        None
    );
    assert!(
        analysis.summary.contains("exactly 0"),
        "{}",
        analysis.summary
    );
}

#[test]
fn drift_between_the_a_phases_is_caught_and_named() {
    let phases = vec![
        normal_series(11, 100.0, 2.0, 5),
        normal_series(12, 110.0, 2.0, 5),
        normal_series(13, 115.0, 2.0, 5),
    ];
    let analysis = run(Order::Aba, &phases, Direction::Higher);
    assert_eq!(
        analysis.verdict,
        ExperimentVerdict::Inconclusive,
        "{}",
        analysis.summary
    );
    assert_eq!(analysis.drift.len(), 1);
    let Doubt::Drift(drift) = &analysis.doubts[0] else {
        panic!("expected a drift doubt: {:?}", analysis.doubts);
    };
    assert_eq!((drift.first.as_str(), drift.second.as_str()), ("A1", "A2"));
    assert!(!drift.agrees);
    assert!(
        (drift.difference - 15.0).abs() < 4.0,
        "{}",
        drift.difference
    );
    assert!(drift.interval.low > 0.0, "{:?}", drift.interval);
    assert!(
        analysis
            .summary
            .starts_with("the baseline drifted: A2 − A1 = +"),
        "{}",
        analysis.summary
    );
    assert!(
        analysis.summary.contains("limit 5 %"),
        "{}",
        analysis.summary
    );
    // The effect is still reported, for the reader, but not judged.
    assert!(analysis.effect.is_some());
    assert!(analysis.trials_needed.is_none());
}

#[test]
fn drift_over_the_threshold_is_caught_even_when_its_interval_includes_zero() {
    // Noisy A phases 7 apart (about 7 % of A): the interval includes 0, the size does not
    // pass.
    let a1 = vec![90.0, 100.0, 110.0, 95.0, 105.0];
    let a2 = vec![97.0, 107.0, 117.0, 102.0, 112.0];
    let b1 = vec![100.0, 101.0, 102.0, 103.0, 104.0];
    let analysis = run(Order::Aba, &[a1, b1, a2], Direction::Higher);
    assert_eq!(
        analysis.verdict,
        ExperimentVerdict::Inconclusive,
        "{}",
        analysis.summary
    );
    let drift = &analysis.drift[0];
    assert!(!drift.interval.excludes_zero(), "{:?}", drift.interval);
    assert!(
        drift.relative_percent.expect("the test input has a value") > 5.0,
        "{drift:?}"
    );
    assert!(!drift.agrees);
    assert!(
        analysis.summary.contains("includes 0"),
        "{}",
        analysis.summary
    );
}

#[test]
fn too_few_trials_are_reported_per_phase() {
    let phases = vec![
        vec![100.0, 101.0, 99.0],
        vec![110.0, 111.0],
        vec![100.0, 101.0, 99.0],
    ];
    let analysis = run(Order::Aba, &phases, Direction::Higher);
    assert_eq!(analysis.verdict, ExperimentVerdict::Inconclusive);
    assert_eq!(
        analysis.doubts,
        [Doubt::TooFewTrials {
            phase: "B1".to_owned(),
            trials: 2,
            minimum: MIN_TRIALS,
        }]
    );
    assert_eq!(
        analysis.summary,
        "too few trials: B1 has 2, at least 3 per phase are needed"
    );
    assert!(analysis.effect.is_none());
    assert!(analysis.drift.is_empty());
    // Phases are still summarised, an empty one without a median.
    assert_eq!(analysis.phases[1].median, Some(110.5));
    let empty = run(
        Order::Aba,
        &[vec![1.0, 2.0, 3.0], vec![], vec![1.0, 2.0, 3.0]],
        Direction::Higher,
    );
    assert_eq!(empty.phases[1].median, None);
    assert_eq!(empty.verdict, ExperimentVerdict::Inconclusive);
}

#[test]
fn a_lower_is_better_metric_flips_the_words() {
    // Latency up from 10 to 12 µs.
    let phases = aba(5, 10.0, 12.0, 0.2, 5);
    let lower = run(Order::Aba, &phases, Direction::Lower);
    assert_eq!(
        lower.verdict,
        ExperimentVerdict::Regression,
        "{}",
        lower.summary
    );
    assert!(
        lower.summary.starts_with("B is worse (lower is better)"),
        "{}",
        lower.summary
    );
    let higher = run(Order::Aba, &phases, Direction::Higher);
    assert_eq!(
        higher.verdict,
        ExperimentVerdict::Improvement,
        "{}",
        higher.summary
    );
    // Latency down from 12 to 10 µs.
    let down = run(Order::Aba, &aba(6, 12.0, 10.0, 0.2, 5), Direction::Lower);
    assert_eq!(
        down.verdict,
        ExperimentVerdict::Improvement,
        "{}",
        down.summary
    );
    assert!(
        down.effect
            .expect("the test input has a value")
            .interval
            .high
            < 0.0
    );
}

#[test]
fn ababa_pools_both_b_phases_and_checks_every_pair_of_a_phases() {
    let phases = vec![
        normal_series(21, 100.0, 2.0, 5),
        normal_series(22, 108.0, 2.0, 5),
        normal_series(23, 100.0, 2.0, 5),
        normal_series(24, 108.0, 2.0, 5),
        normal_series(25, 100.0, 2.0, 5),
    ];
    let analysis = run(Order::Ababa, &phases, Direction::Higher);
    assert_eq!(
        analysis.verdict,
        ExperimentVerdict::Improvement,
        "{}",
        analysis.summary
    );
    let pairs: Vec<(&str, &str)> = analysis
        .drift
        .iter()
        .map(|d| (d.first.as_str(), d.second.as_str()))
        .collect();
    assert_eq!(pairs, [("A1", "A2"), ("A1", "A3"), ("A2", "A3")]);
    // Bonferroni: three pairs share the 5 %.
    let confidence = analysis.drift[0].interval.confidence;
    assert!(
        (confidence - (1.0 - 0.05 / 3.0)).abs() < 1e-12,
        "{confidence}"
    );
    // The effect is pooled: all 15 A trials against all 10 B trials.
    let all_a: Vec<f64> = [0, 2, 4].iter().flat_map(|&i| phases[i].clone()).collect();
    let all_b: Vec<f64> = [1, 3].iter().flat_map(|&i| phases[i].clone()).collect();
    let effect = analysis.effect.expect("the test input has a value");
    assert_eq!(
        effect.a_median,
        median(&all_a).expect("the test input has a value")
    );
    assert_eq!(
        effect.b_median,
        median(&all_b).expect("the test input has a value")
    );
    assert_eq!(effect.interval.confidence, 0.95);
}

#[test]
fn ababa_catches_a_last_baseline_that_moved() {
    let phases = vec![
        normal_series(31, 100.0, 1.0, 5),
        normal_series(32, 108.0, 1.0, 5),
        normal_series(33, 100.0, 1.0, 5),
        normal_series(34, 108.0, 1.0, 5),
        normal_series(35, 115.0, 1.0, 5),
    ];
    let analysis = run(Order::Ababa, &phases, Direction::Higher);
    assert_eq!(
        analysis.verdict,
        ExperimentVerdict::Inconclusive,
        "{}",
        analysis.summary
    );
    let named: Vec<(&str, &str)> = analysis
        .doubts
        .iter()
        .filter_map(|d| match d {
            Doubt::Drift(d) => Some((d.first.as_str(), d.second.as_str())),
            Doubt::TooFewTrials { .. } => None,
        })
        .collect();
    assert!(named.contains(&("A1", "A3")), "{named:?}");
    assert!(named.contains(&("A2", "A3")), "{named:?}");
    assert!(analysis.summary.contains("A3 − A1"), "{}", analysis.summary);
}

#[test]
fn the_bootstrap_is_deterministic() {
    let phases = aba(7, 100.0, 101.0, 2.0, 7);
    let first = run(Order::Aba, &phases, Direction::Higher);
    let second = run(Order::Aba, &phases, Direction::Higher);
    assert_eq!(first, second);
    assert_eq!(first.resampling.seed, StatsConfig::default().seed);
    // A different seed is a different, equally valid, resampling: the intervals move a
    // little, the point estimate not at all.
    let other = analyse(
        Order::Aba,
        &phases,
        Direction::Higher,
        &StatsConfig {
            seed: 99,
            ..StatsConfig::default()
        },
    )
    .expect("the test input has a value");
    let (e1, e2) = (
        first.effect.expect("the test input has a value"),
        other.effect.expect("the test input has a value"),
    );
    assert_eq!(e1.difference, e2.difference);
    assert_ne!(e1.interval, e2.interval);
}

#[test]
fn the_analysis_serialises_with_the_verdict_and_its_reasons() {
    let phases = vec![
        normal_series(11, 100.0, 2.0, 5),
        normal_series(12, 110.0, 2.0, 5),
        normal_series(13, 115.0, 2.0, 5),
    ];
    let json = serde_json::to_value(run(Order::Aba, &phases, Direction::Higher))
        .expect("the test input has a value");
    assert_eq!(json["verdict"], "INCONCLUSIVE");
    assert_eq!(json["order"], "ABA");
    assert_eq!(json["better"], "higher");
    assert_eq!(json["doubts"][0]["reason"], "drift");
    assert_eq!(json["doubts"][0]["first"], "A1");
    assert_eq!(json["doubts"][0]["second"], "A2");
    assert_eq!(json["phases"][1]["label"], "B1");
    assert_eq!(json["phases"][1]["arm"], "B");
    assert_eq!(json["resampling"]["resamples"], 10_000);
    assert!(json["effect"]["interval"]["low"].is_f64());
}

#[test]
fn input_that_cannot_be_analysed_is_refused() {
    let three = vec![1.0, 2.0, 3.0];
    let config = StatsConfig::default();
    assert_eq!(
        analyse(
            Order::Ababa,
            &[three.clone(), three.clone(), three.clone()],
            Direction::Higher,
            &config
        ),
        Err(StatsError::PhaseCount {
            order: "ABABA",
            expected: 5,
            got: 3
        })
    );
    let err = analyse(
        Order::Aba,
        &[three.clone(), vec![1.0, f64::NAN, 3.0], three.clone()],
        Direction::Higher,
        &config,
    )
    .expect_err("the test input is refused");
    assert!(
        matches!(&err, StatsError::NotFinite { phase, trial: 2, .. } if phase == "B1"),
        "{err}"
    );
    assert_eq!(
        err.to_string(),
        "trial 2 of phase B1 is NaN, not a finite number"
    );
    for (bad, field) in [
        (
            StatsConfig {
                resamples: 10,
                ..config
            },
            "resamples",
        ),
        (
            StatsConfig {
                confidence: 1.0,
                ..config
            },
            "confidence",
        ),
        (
            StatsConfig {
                power: 0.2,
                ..config
            },
            "power",
        ),
        (
            StatsConfig {
                max_drift: f64::NAN,
                ..config
            },
            "max_drift",
        ),
    ] {
        let err = analyse(
            Order::Aba,
            &[three.clone(), three.clone(), three.clone()],
            Direction::Higher,
            &bad,
        )
        .expect_err("the test input is refused");
        assert!(
            matches!(err, StatsError::Config { field: f, .. } if f == field),
            "{err}"
        );
    }
}
