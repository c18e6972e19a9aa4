use std::time::Duration;

use super::{distribution, judge_experiment, FleetExperimentReport, Spread, VERDICT_FACT};
use crate::fleet::report::{FleetReport, NodeOutcome, NodeReport, NodeStatus};
use crate::remote::watched::{Ended, RemoteOutput};

const LIMIT: Duration = Duration::from_secs(60);

fn output(stdout: &str, stderr: &str, ended: Ended) -> RemoteOutput {
    RemoteOutput {
        stdout: stdout.to_owned(),
        stderr: stderr.to_owned(),
        ended,
    }
}

fn report(verdict: &str, relative_percent: Option<f64>) -> String {
    let effect = relative_percent.map_or("null".to_owned(), |p| {
        format!(
            r#"{{"a_median":100.0,"b_median":{},"difference":{p},"relative_percent":{p}}}"#,
            100.0 + p
        )
    });
    format!(
        r#"{{"knob":"env NCCL_ALGO","a":"Ring","b":"Tree","analysis":{{"verdict":"{verdict}","summary":"{verdict} because","effect":{effect}}}}}"#
    )
}

fn node(name: &str, outcome: NodeOutcome) -> NodeReport {
    NodeReport {
        name: name.to_owned(),
        agent: "unix:/x".to_owned(),
        status: outcome.status(),
        elapsed_ms: 1.0,
        problems: outcome.problems,
        facts: outcome.facts,
        compared: outcome.compared,
        skipped: outcome.skipped,
    }
}

#[test]
fn a_decided_experiment_passes_with_its_verdict_compared_and_its_report_kept() {
    for verdict in ["IMPROVEMENT", "REGRESSION", "NO_EFFECT"] {
        let judged = judge_experiment(
            &output(&report(verdict, Some(3.0)), "", Ended::Exited(Some(0))),
            LIMIT,
        );
        assert_eq!(judged.status(), NodeStatus::Pass, "{verdict}");
        assert_eq!(judged.compared[VERDICT_FACT], verdict);
        assert_eq!(
            judged.facts["knob"], "env NCCL_ALGO",
            "the host's report, whole"
        );
    }
}

#[test]
fn an_inconclusive_experiment_stays_inconclusive_with_its_reason() {
    let judged = judge_experiment(
        &output(&report("INCONCLUSIVE", None), "", Ended::Exited(Some(3))),
        LIMIT,
    );
    assert_eq!(judged.status(), NodeStatus::Inconclusive);
    assert_eq!(judged.problems[0].detail, "INCONCLUSIVE because");
    assert_eq!(judged.compared[VERDICT_FACT], "INCONCLUSIVE");
}

#[test]
fn no_report_is_never_a_verdict() {
    // ssh could not connect.
    let gone = judge_experiment(
        &output(
            "",
            "ssh: connect to host x: Connection refused",
            Ended::Exited(Some(255)),
        ),
        LIMIT,
    );
    assert_eq!(gone.status(), NodeStatus::Unreachable);
    assert!(gone.compared.is_empty(), "nothing to compare");
    // The host's dpuctl refused the plan (exit 2, its reason on stderr).
    let refused = judge_experiment(
        &output(
            "",
            "error: the plan /etc/x.toml is not valid\n  trials: is 1",
            Ended::Exited(Some(2)),
        ),
        LIMIT,
    );
    assert_eq!(refused.status(), NodeStatus::Fail);
    assert!(
        refused.problems[0].detail.contains("trials: is 1"),
        "{:?}",
        refused.problems
    );
    // JSON that is not an experiment report (another command's, or a truncated one).
    let other = judge_experiment(
        &output(r#"{"verdict":"PROVEN"}"#, "", Ended::Exited(Some(0))),
        LIMIT,
    );
    assert_eq!(other.status(), NodeStatus::Fail);
    // A verdict this dpuctl does not know is not taken for a pass.
    let unknown = judge_experiment(
        &output(&report("MAYBE", None), "", Ended::Exited(Some(0))),
        LIMIT,
    );
    assert_eq!(unknown.status(), NodeStatus::Fail);
    // Stopped at the deadline or cancelled: even a report printed before is not trusted.
    let late = judge_experiment(
        &output(&report("IMPROVEMENT", Some(1.0)), "", Ended::TimedOut),
        LIMIT,
    );
    assert_eq!(late.status(), NodeStatus::Unreachable);
    let stopped = judge_experiment(&output("", "", Ended::Cancelled), LIMIT);
    assert_eq!(stopped.status(), NodeStatus::Cancelled);
}

#[test]
fn the_distribution_counts_verdicts_and_spreads_effects_over_the_nodes_that_reported() {
    let judged = |verdict: &str, p: Option<f64>| {
        judge_experiment(
            &output(&report(verdict, p), "", Ended::Exited(Some(0))),
            LIMIT,
        )
    };
    let nodes = vec![
        node("gpu-01", judged("IMPROVEMENT", Some(4.0))),
        node("gpu-02", judged("IMPROVEMENT", Some(6.0))),
        node("gpu-03", judged("NO_EFFECT", Some(0.5))),
        node("gpu-04", judged("INCONCLUSIVE", None)),
        node(
            "gpu-05",
            judge_experiment(&output("", "refused", Ended::Exited(Some(255))), LIMIT),
        ),
    ];
    let fleet = FleetReport::new("experiment", nodes, 10.0, false);
    let d = distribution(&fleet);
    assert_eq!(
        d.verdicts
            .iter()
            .map(|(k, v)| (k.as_str(), *v))
            .collect::<Vec<_>>(),
        [("IMPROVEMENT", 2), ("INCONCLUSIVE", 1), ("NO_EFFECT", 1)]
    );
    assert_eq!(
        d.effect_percent,
        Some(Spread {
            nodes: 3,
            min: 0.5,
            median: 4.0,
            max: 6.0
        })
    );
    // The odd verdict out is the fleet's drift, named by node.
    let drift = fleet
        .drift
        .iter()
        .find(|d| d.fact == VERDICT_FACT)
        .expect("verdict drift");
    assert_eq!(drift.majority, "IMPROVEMENT");
    // And the JSON carries both the rows and the distribution.
    let json = serde_json::to_value(FleetExperimentReport::new(fleet)).expect("serializes");
    assert_eq!(json["nodes"].as_array().map(Vec::len), Some(5));
    assert_eq!(json["distribution"]["verdicts"]["IMPROVEMENT"], 2);
}

#[test]
fn a_spread_has_a_true_median_and_refuses_what_is_not_a_number() {
    assert_eq!(Spread::of(&[]), None);
    assert_eq!(Spread::of(&[1.0, f64::NAN]), None);
    let even = Spread::of(&[4.0, 1.0, 3.0, 2.0]).expect("four values");
    assert_eq!((even.min, even.median, even.max), (1.0, 2.5, 4.0));
}
