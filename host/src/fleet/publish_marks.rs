//! What `--publish` writes onto each Kubernetes Node for a fleet report: a label per
//! command (`dpu-offload/check=FAIL`) and a condition (`DpuOffloadCheck`, False with the
//! first problem's cause) that the scheduler and people can read.
//!
//! Why labels and a condition: a label is what a nodeAffinity rule or a `kubectl get nodes
//! -l` selects on; a condition carries the reason and message for whoever looks at the
//! node (`kubectl describe node`).

use std::collections::BTreeMap;

use super::kube::{NodeConditionMark, NodeMarks};
use super::report::{FleetReport, NodeStatus};
use super::target::Target;

/// The label prefix every published label has.
pub const LABEL_PREFIX: &str = "dpu-offload/";

/// The marks for every node of the report whose target names a Kubernetes Node, and the
/// names of the targets that name none (not published, said so). CANCELLED nodes are not
/// published: the run said nothing about them.
pub fn marks_for(report: &FleetReport, targets: &[Target]) -> (Vec<NodeMarks>, Vec<String>) {
    let mut marks = Vec::new();
    let mut without_node = Vec::new();
    for (node, target) in report.nodes.iter().zip(targets) {
        if node.status == NodeStatus::Cancelled {
            continue;
        }
        let Some(kube_node) = &target.node else {
            without_node.push(target.name.clone());
            continue;
        };
        let healthy = matches!(
            node.status,
            NodeStatus::Pass | NodeStatus::Warn | NodeStatus::Skip
        );
        let (reason, message) = match node.problems.first() {
            Some(first) => (
                camel_case(&first.check),
                node.problems
                    .iter()
                    .map(|p| format!("{}: {}", p.check, p.detail))
                    .collect::<Vec<_>>()
                    .join("; "),
            ),
            None => (
                "AllPassed".to_owned(),
                format!("dpuctl fleet {}: PASS", report.command),
            ),
        };
        // A proof's label says its verdict (`dpu-offload/storage-proof=NOT_PROVEN`).
        let proof = report
            .command
            .strip_suffix("-proof")
            .and_then(|p| node.compared.get(&format!("{p} proof")));
        let value = proof.map_or_else(|| node.status.label().to_owned(), |v| v.replace(' ', "_"));
        marks.push(NodeMarks {
            node: kube_node.clone(),
            labels: BTreeMap::from([(format!("{LABEL_PREFIX}{}", report.command), value)]),
            condition: Some(NodeConditionMark {
                kind: format!("DpuOffload{}", camel_case(&report.command)),
                healthy,
                reason,
                message,
            }),
        });
    }
    (marks, without_node)
}

/// `dpu.rdma-port` → `DpuRdmaPort`: a condition reason is CamelCase.
fn camel_case(text: &str) -> String {
    text.split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(|w| {
            let mut chars = w.chars();
            chars.next().map_or(String::new(), |first| {
                first.to_ascii_uppercase().to_string() + chars.as_str()
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use dpu_proto::Endpoint;

    use super::marks_for;
    use crate::fleet::report::{FleetReport, NodeOutcome, NodeReport, NodeStatus, Problem};
    use crate::fleet::target::Target;

    #[test]
    fn each_node_gets_its_label_and_condition_and_nodeless_targets_are_named() {
        let targets: Vec<Target> = ["a", "b", "c"]
            .iter()
            .map(|n| {
                let mut t = Target::new(*n, Endpoint::Unix(format!("/{n}").into()));
                t.node = (*n != "c").then(|| format!("node-{n}"));
                t
            })
            .collect();
        let outcomes = [
            NodeOutcome::default(),
            NodeOutcome {
                problems: vec![Problem::new(
                    NodeStatus::Fail,
                    "dpu.rdma-port",
                    "RDMA port not ACTIVE",
                    "mlx5_0 port 1 is DOWN",
                )],
                ..NodeOutcome::default()
            },
            NodeOutcome::default(),
        ];
        let nodes = targets
            .iter()
            .zip(outcomes)
            .map(|(t, o)| NodeReport {
                name: t.name.clone(),
                agent: t.agent.to_string(),
                status: o.status(),
                elapsed_ms: 1.0,
                problems: o.problems,
                facts: serde_json::Value::Null,
                compared: Default::default(),
                skipped: None,
            })
            .collect();
        let report = FleetReport::new("check", nodes, 1.0, false);
        let (marks, without) = marks_for(&report, &targets);
        assert_eq!(without, ["c"]);
        assert_eq!(marks.len(), 2);
        assert_eq!(marks[0].labels["dpu-offload/check"], "PASS");
        let bad = &marks[1];
        assert_eq!(bad.node, "node-b");
        assert_eq!(bad.labels["dpu-offload/check"], "FAIL");
        let condition = bad.condition.as_ref().expect("a condition");
        assert_eq!(condition.kind, "DpuOffloadCheck");
        assert!(!condition.healthy);
        assert_eq!(condition.reason, "DpuRdmaPort");
        assert!(condition.message.contains("mlx5_0 port 1 is DOWN"));
    }
}
