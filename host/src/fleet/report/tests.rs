use std::collections::BTreeMap;

use super::{FleetReport, NodeOutcome, NodeReport, NodeStatus, Problem};

fn row(name: &str, problems: Vec<Problem>, compared: &[(&str, &str)]) -> NodeReport {
    let outcome = NodeOutcome {
        problems,
        compared: compared
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect(),
        ..NodeOutcome::default()
    };
    NodeReport {
        name: name.to_owned(),
        agent: format!("unix:/{name}"),
        status: outcome.status(),
        elapsed_ms: 1.0,
        problems: outcome.problems,
        facts: serde_json::Value::Null,
        compared: outcome.compared,
        skipped: None,
    }
}

fn port_down(detail: &str) -> Problem {
    Problem::new(
        NodeStatus::Fail,
        "dpu.rdma-port",
        "RDMA port not ACTIVE",
        detail,
    )
}

#[test]
fn problems_group_by_cause_and_healthy_nodes_are_in_no_group() {
    let report = FleetReport::new(
        "check",
        vec![
            row("a", vec![], &[]),
            row("b", vec![port_down("mlx5_0 port 1 is DOWN")], &[]),
            row(
                "c",
                vec![
                    port_down("mlx5_1 port 1 is DOWN"),
                    Problem::new(NodeStatus::Warn, "dpu.mtu", "MTU differs", "p0 1500"),
                ],
                &[],
            ),
            row(
                "d",
                vec![Problem::new(
                    NodeStatus::Unreachable,
                    "agent.reachable",
                    "agent unreachable",
                    "deadline",
                )],
                &[],
            ),
        ],
        10.0,
        false,
    );
    let groups: Vec<(&str, NodeStatus, Vec<&str>)> = report
        .groups
        .iter()
        .map(|g| {
            (
                g.cause.as_str(),
                g.status,
                g.nodes.iter().map(String::as_str).collect(),
            )
        })
        .collect();
    assert_eq!(
        groups,
        // The headline's order: FAIL groups before UNREACHABLE ones.
        [
            ("RDMA port not ACTIVE", NodeStatus::Fail, vec!["b", "c"]),
            ("agent unreachable", NodeStatus::Unreachable, vec!["d"]),
            ("MTU differs", NodeStatus::Warn, vec!["c"]),
        ]
    );
    assert_eq!(
        report.nodes[2].status,
        NodeStatus::Fail,
        "the worst problem"
    );
    assert_eq!(report.worst(), NodeStatus::Unreachable);
    assert_eq!(
        report.summary,
        BTreeMap::from([("FAIL", 2), ("PASS", 1), ("UNREACHABLE", 1)])
    );
}

#[test]
fn drift_names_the_minority_against_the_majority() {
    let report = FleetReport::new(
        "info",
        vec![
            row(
                "a",
                vec![],
                &[("firmware", "32.41.1000"), ("mtu p0", "9000")],
            ),
            row(
                "b",
                vec![],
                &[("firmware", "32.41.1000"), ("mtu p0", "9000")],
            ),
            row(
                "c",
                vec![],
                &[("firmware", "32.39.2048"), ("mtu p0", "9000")],
            ),
            // A node that does not report a fact is not counted either way.
            row("d", vec![], &[("firmware", "32.41.1000")]),
        ],
        1.0,
        false,
    );
    assert_eq!(report.drift.len(), 1, "MTU agrees: {:?}", report.drift);
    let firmware = &report.drift[0];
    assert_eq!(firmware.fact, "firmware");
    assert_eq!(firmware.majority, "32.41.1000");
    assert_eq!(firmware.majority_nodes, 3);
    assert_eq!(
        firmware.odd,
        BTreeMap::from([("c".to_owned(), "32.39.2048".to_owned())])
    );
}

fn status_row(name: &str, status: NodeStatus) -> NodeReport {
    let problems = match status {
        NodeStatus::Pass | NodeStatus::Skip => vec![],
        _ => vec![Problem::new(status, "x.check", "a cause", "a detail")],
    };
    let mut row = row(name, problems, &[]);
    if status == NodeStatus::Skip {
        row.skipped = Some("does not apply".into());
        row.status = NodeStatus::Skip;
    }
    row
}

#[test]
fn the_headline_counts_every_status_most_severe_first() {
    // Issue 35: 8 FAIL and 1 UNREACHABLE read "UNREACHABLE"; the headline now says how
    // many of each, FAIL first (what most needs a person), PASS last.
    let mut nodes: Vec<NodeReport> = (0..191)
        .map(|i| status_row(&format!("ok-{i:03}"), NodeStatus::Pass))
        .collect();
    nodes.extend((0..8).map(|i| status_row(&format!("bad-{i}"), NodeStatus::Fail)));
    nodes.push(status_row("gone", NodeStatus::Unreachable));
    let report = FleetReport::new("check", nodes, 1.0, false);
    assert_eq!(report.headline(), "8 FAIL, 1 UNREACHABLE, 191 PASS");
    // The exit code's input is unchanged: UNREACHABLE still ranks highest there.
    assert_eq!(report.worst(), NodeStatus::Unreachable);

    let every = [
        NodeStatus::Pass,
        NodeStatus::Skip,
        NodeStatus::Warn,
        NodeStatus::Inconclusive,
        NodeStatus::Fail,
        NodeStatus::Unreachable,
        NodeStatus::Cancelled,
    ];
    let nodes = every
        .iter()
        .enumerate()
        .map(|(i, s)| status_row(&format!("n{i}"), *s))
        .collect();
    let report = FleetReport::new("health", nodes, 1.0, false);
    assert_eq!(
        report.headline(),
        "1 FAIL, 1 UNREACHABLE, 1 CANCELLED, 1 INCONCLUSIVE, 1 WARN, 1 SKIP, 1 PASS"
    );
    let all_pass = FleetReport::new("info", vec![status_row("a", NodeStatus::Pass)], 1.0, false);
    assert_eq!(all_pass.headline(), "1 PASS");
    assert_eq!(
        FleetReport::new("info", vec![], 1.0, false).headline(),
        "no nodes"
    );
}

#[test]
fn nodes_by_severity_put_the_failing_first_then_go_by_name() {
    let report = FleetReport::new(
        "check",
        vec![
            status_row("a-pass", NodeStatus::Pass),
            status_row("z-fail", NodeStatus::Fail),
            status_row("b-skip", NodeStatus::Skip),
            status_row("m-unreachable", NodeStatus::Unreachable),
            status_row("c-fail", NodeStatus::Fail),
            status_row("k-warn", NodeStatus::Warn),
            status_row("d-inconclusive", NodeStatus::Inconclusive),
            status_row("0-pass", NodeStatus::Pass),
        ],
        1.0,
        false,
    );
    let order: Vec<&str> = report
        .nodes_by_severity()
        .iter()
        .map(|n| n.name.as_str())
        .collect();
    assert_eq!(
        order,
        [
            "c-fail",
            "z-fail",
            "m-unreachable",
            "d-inconclusive",
            "k-warn",
            "b-skip",
            "0-pass",
            "a-pass"
        ]
    );
    // The JSON's rows stay in target order.
    assert_eq!(report.nodes[0].name, "a-pass");
    assert_eq!(report.nodes[1].name, "z-fail");
}
