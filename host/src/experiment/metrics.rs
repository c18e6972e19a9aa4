//! `--metrics-file`: an experiment's verdict and medians for node_exporter's textfile
//! collector, through the project's one writer ([`crate::textfile`]).

use std::time::{SystemTime, UNIX_EPOCH};

use super::run::RunReport;
use super::verdict::ExperimentVerdict;
use crate::textfile::Textfile;

/// The verdict as a state set, each phase's median, B's effect and its interval.
pub fn textfile(plan: &str, report: &RunReport, at: SystemTime) -> Textfile {
    let mut t = Textfile::default();
    let base = [("plan", plan), ("knob", report.knob.as_str())];
    let verdicts = [
        (ExperimentVerdict::Improvement, "improvement"),
        (ExperimentVerdict::Regression, "regression"),
        (ExperimentVerdict::NoEffect, "no_effect"),
        (ExperimentVerdict::Inconclusive, "inconclusive"),
    ];
    for (verdict, name) in verdicts {
        let mut labels = base.to_vec();
        labels.push(("verdict", name));
        t.count(
            "dpu_experiment_verdict",
            "The experiment's verdict: 1 for the state it reached",
            &labels,
            i64::from(report.analysis.verdict == verdict),
        );
    }
    for phase in &report.analysis.phases {
        if let Some(median) = phase.median {
            let mut labels = base.to_vec();
            labels.push(("phase", phase.label.as_str()));
            t.gauge(
                "dpu_experiment_phase_median",
                "The median of the phase's trials, in the metric's unit",
                &labels,
                median,
            );
        }
    }
    if let Some(effect) = &report.analysis.effect {
        for (end, value) in [
            ("estimate", effect.difference),
            ("low", effect.interval.low),
            ("high", effect.interval.high),
        ] {
            let mut labels = base.to_vec();
            labels.push(("end", end));
            t.gauge(
                "dpu_experiment_effect",
                "B's median minus A's, with the ends of its confidence interval",
                &labels,
                value,
            );
        }
    }
    let seconds = at.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
    t.count(
        "dpu_experiment_timestamp_seconds",
        "When the experiment ended",
        &base,
        i64::try_from(seconds).unwrap_or(i64::MAX),
    );
    t
}
