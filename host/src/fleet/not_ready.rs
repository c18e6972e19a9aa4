//! Nodes the fleet has but cannot ask: a discovered node whose agent pod is not ready is
//! not a target (there is nothing to dial), yet leaving it out would report a broken node
//! as absent. It becomes a row of the report, UNREACHABLE with Kubernetes' own reason.

use super::report::{FleetReport, NodeOutcome, NodeReport, NodeStatus, Problem};
use super::select::Selector;

/// The check id of a not-ready agent pod's problem.
pub const POD_READY: &str = "agent.pod-ready";

/// A node whose agent pod is not ready.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NotReady {
    /// The node (or the pod, when it has no node).
    pub name: String,
    /// Why, as Kubernetes says it.
    pub detail: String,
}

impl FleetReport {
    /// The report with a row per `not_ready` node that `selectors` would have chosen by
    /// name (a not-ready pod's node labels are not known, so a label term never chooses
    /// it and a `!=` term never excludes it), UNREACHABLE.
    pub fn with_not_ready(self, not_ready: Vec<NotReady>, selectors: &[Selector]) -> Self {
        if not_ready.is_empty() {
            return self;
        }
        let mut nodes = self.nodes;
        for pod in not_ready {
            if !selectors.iter().all(|s| s.matches_unlabelled(&pod.name)) {
                continue;
            }
            let outcome = NodeOutcome {
                problems: vec![Problem::new(
                    NodeStatus::Unreachable,
                    POD_READY,
                    "agent pod not ready",
                    pod.detail,
                )],
                ..NodeOutcome::default()
            };
            nodes.push(NodeReport {
                name: pod.name,
                agent: "-".to_owned(),
                status: outcome.status(),
                elapsed_ms: 0.0,
                problems: outcome.problems,
                facts: serde_json::Value::Null,
                compared: outcome.compared,
                skipped: None,
            });
        }
        Self::new(&self.command, nodes, self.elapsed_ms, self.cancelled)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pod(name: &str) -> NotReady {
        NotReady {
            name: name.to_owned(),
            detail: format!("agent pod dpu-agent-{name} is not ready: Pending Unschedulable"),
        }
    }

    fn empty() -> FleetReport {
        FleetReport::new("health", Vec::new(), 12.0, false)
    }

    #[test]
    fn a_not_ready_pod_is_an_unreachable_row_with_kubernetes_reason() {
        let report = empty().with_not_ready(vec![pod("gpu-07")], &[]);
        assert_eq!(report.targets, 1);
        let row = &report.nodes[0];
        assert_eq!(row.name, "gpu-07");
        assert_eq!(row.status, NodeStatus::Unreachable);
        assert_eq!(row.problems[0].check, POD_READY);
        assert!(row.problems[0].detail.contains("Unschedulable"), "{row:?}");
        assert_eq!(report.elapsed_ms, 12.0);
    }

    #[test]
    fn selection_by_name_and_labels_applies_as_to_a_node_without_labels() {
        let by_name = Selector::parse("gpu-07").expect("name");
        let by_label = Selector::parse("rack=a").expect("label");
        let not_label = Selector::parse("rack!=a").expect("not label");
        let chosen = |selectors: &[Selector]| {
            empty()
                .with_not_ready(vec![pod("gpu-07"), pod("gpu-08")], selectors)
                .nodes
                .into_iter()
                .map(|n| n.name)
                .collect::<Vec<_>>()
        };
        assert_eq!(chosen(&[by_name]), ["gpu-07"]);
        assert!(chosen(&[by_label]).is_empty());
        assert_eq!(chosen(&[not_label]), ["gpu-07", "gpu-08"]);
    }
}
