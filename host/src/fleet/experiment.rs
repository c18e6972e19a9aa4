//! `dpuctl fleet experiment PLAN.toml`: the same A/B/A experiment (docs/experiments.md) on
//! a selection of hosts, each run by the host's own dpuctl over ssh, one host at a time or
//! in rounds, and the fleet's distribution of what they found.
//!
//! Why on each host, and whole: an experiment changes a knob of the machine it measures
//! and must put it back (its journal, its SIGTERM handling); only the host's own dpuctl
//! can do that, and a run that the fleet stops (Ctrl-C, the deadline) is stopped with
//! SIGTERM by the pair runner's watcher, so the host reverts as it would for a local
//! Ctrl-C. The fleet only reads the JSON report each host prints and judges it here.
//!
//! Every verdict an experiment can reach is a result, not a failure: IMPROVEMENT,
//! REGRESSION and NO_EFFECT are PASS (the experiment ran and decided) and compared across
//! the nodes, so a node whose verdict differs from the majority shows as drift;
//! INCONCLUSIVE stays INCONCLUSIVE, naming why.

use std::collections::BTreeMap;
use std::time::Duration;

use serde::Serialize;

use super::on_host::{ended_early, no_report, OnHost};
use super::report::{FleetReport, NodeOutcome, NodeStatus};
use super::target::Target;
use crate::remote::watched::{Cancel, RemoteOutput};

/// The check id of an experiment's result on a host.
pub const EXPERIMENT_CHECK: &str = "experiment";

/// The fact drift compares: each node's verdict.
pub const VERDICT_FACT: &str = "experiment verdict";

impl OnHost {
    /// Runs `experiment run PLAN ARGS...` on the target's host and judges its report.
    /// `plan` is the plan's path as the hosts see it. Blocking (the ssh session); the
    /// runner calls it on a blocking thread.
    pub fn experiment(
        &self,
        target: &Target,
        plan: &str,
        args: &[String],
        limit: Duration,
        cancel: &Cancel,
    ) -> NodeOutcome {
        let mut command = vec!["experiment".to_owned(), "run".to_owned(), plan.to_owned()];
        command.extend(args.iter().cloned());
        self.run_judged(target, &command, limit, cancel, |output| {
            judge_experiment(output, limit)
        })
    }
}

/// Judges what the host's `dpuctl -o json experiment run PLAN` printed and how it ended.
/// The host's report is kept whole as the node's facts.
pub fn judge_experiment(output: &RemoteOutput, limit: Duration) -> NodeOutcome {
    let code = match ended_early(output.ended, limit, "experiment") {
        Ok(code) => code,
        Err(outcome) => return outcome,
    };
    let report: Option<serde_json::Value> = serde_json::from_str(output.stdout.trim()).ok();
    let verdict = report
        .as_ref()
        .and_then(|r| r["analysis"]["verdict"].as_str())
        .map(str::to_owned);
    let (Some(report), Some(verdict)) = (report, verdict) else {
        return no_report(code, &output.stderr, "experiment");
    };
    let summary = report["analysis"]["summary"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    let problems = match verdict.as_str() {
        "IMPROVEMENT" | "REGRESSION" | "NO_EFFECT" => Vec::new(),
        "INCONCLUSIVE" => vec![super::report::Problem::new(
            NodeStatus::Inconclusive,
            EXPERIMENT_CHECK,
            "experiment INCONCLUSIVE",
            summary,
        )],
        other => vec![super::report::Problem::new(
            NodeStatus::Fail,
            "host.dpuctl",
            "the host's dpuctl printed a verdict this dpuctl does not know",
            format!("{other:?}: is the host's dpuctl another version?"),
        )],
    };
    NodeOutcome {
        problems,
        compared: [(VERDICT_FACT.to_owned(), verdict)].into(),
        facts: report,
        skipped: None,
    }
}

/// How the fleet's experiments came out, across the nodes that reported.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Distribution {
    /// How many nodes reached each verdict (`IMPROVEMENT`, `NO_EFFECT`, ...).
    pub verdicts: BTreeMap<String, usize>,
    /// B − A as a percentage of A's median, over the nodes whose experiment measured an
    /// effect (with or without a decided verdict); None when none did.
    pub effect_percent: Option<Spread>,
}

/// The spread of one number across nodes.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Spread {
    /// How many nodes it is over.
    pub nodes: usize,
    /// The least.
    pub min: f64,
    /// The median (the mean of the middle two for an even count).
    pub median: f64,
    /// The greatest.
    pub max: f64,
}

impl Spread {
    /// The spread of `values`; None when there are none (or any is not finite).
    pub fn of(values: &[f64]) -> Option<Self> {
        if values.is_empty() || values.iter().any(|v| !v.is_finite()) {
            return None;
        }
        let mut sorted = values.to_vec();
        sorted.sort_by(f64::total_cmp);
        let n = sorted.len();
        let median = if n % 2 == 1 {
            sorted[n / 2]
        } else {
            (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0
        };
        Some(Self {
            nodes: n,
            min: sorted[0],
            median,
            max: sorted[n - 1],
        })
    }
}

/// The distribution of the nodes' reports in `report` (nodes without a report, skipped or
/// unreachable, are not in it).
pub fn distribution(report: &FleetReport) -> Distribution {
    let mut verdicts = BTreeMap::new();
    let mut effects = Vec::new();
    for node in &report.nodes {
        let Some(verdict) = node.compared.get(VERDICT_FACT) else {
            continue;
        };
        *verdicts.entry(verdict.clone()).or_insert(0) += 1;
        if let Some(percent) = node.facts["analysis"]["effect"]["relative_percent"].as_f64() {
            effects.push(percent);
        }
    }
    Distribution {
        verdicts,
        effect_percent: Spread::of(&effects),
    }
}

/// A fleet experiment's report: the fleet's rows and what they add up to.
#[derive(Debug, Clone, Serialize)]
pub struct FleetExperimentReport {
    /// The rows, groups and drift every fleet command reports.
    #[serde(flatten)]
    pub fleet: FleetReport,
    /// The verdicts and effects across the nodes.
    pub distribution: Distribution,
}

impl FleetExperimentReport {
    /// The report of `fleet`, with its distribution.
    pub fn new(fleet: FleetReport) -> Self {
        let distribution = distribution(&fleet);
        Self {
            fleet,
            distribution,
        }
    }
}

#[cfg(test)]
mod tests;
