//! A fleet run as textfile metrics (`--metrics-file`): the fleet report knows its own
//! series; [`crate::textfile`] only writes them.

use std::time::SystemTime;

use super::report::{FleetReport, NodeStatus};
use crate::textfile::{self, Textfile};

impl FleetReport {
    /// A fleet run: each node's status as a state set, one series per node and failing check,
    /// how many nodes ended in each status, and when and how long it ran. The `node` label is
    /// the target's name, so an alert can name the node (`dpu_fleet_node_status{status="fail"}
    /// == 1`).
    pub fn textfile(&self, at: SystemTime) -> Textfile {
        const STATES: [NodeStatus; 7] = [
            NodeStatus::Pass,
            NodeStatus::Skip,
            NodeStatus::Warn,
            NodeStatus::Inconclusive,
            NodeStatus::Fail,
            NodeStatus::Unreachable,
            NodeStatus::Cancelled,
        ];
        let states: Vec<String> = STATES
            .iter()
            .map(|s| s.label().to_ascii_lowercase())
            .collect();
        let states: Vec<&str> = states.iter().map(String::as_str).collect();
        let command = self.command.as_str();
        let mut t = Textfile::default();
        for node in &self.nodes {
            let status = node.status.label().to_ascii_lowercase();
            t.state_set(
                "dpu_fleet_node_status",
                "The node's result in the last fleet run: 1 for the state it reached",
                &[("command", command), ("node", &node.name)],
                "status",
                &states,
                &status,
            );
            for problem in &node.problems {
                t.count(
                    "dpu_fleet_node_problem",
                    "A problem the last fleet run found on the node, by the check that found it",
                    &[
                        ("command", command),
                        ("node", &node.name),
                        ("check", &problem.check),
                    ],
                    1,
                );
            }
        }
        for state in STATES {
            let count = self.summary.get(state.label()).copied().unwrap_or(0);
            t.count(
                "dpu_fleet_nodes",
                "How many nodes ended the last fleet run in each state",
                &[
                    ("command", command),
                    ("status", &state.label().to_ascii_lowercase()),
                ],
                i64::try_from(count).unwrap_or(i64::MAX),
            );
        }
        t.gauge(
            "dpu_fleet_run_seconds",
            "Wall time of the last fleet run",
            &[("command", command)],
            self.elapsed_ms / 1e3,
        );
        t.gauge(
            "dpu_fleet_last_run_timestamp_seconds",
            "When the last fleet run ended (Unix time)",
            &[("command", command)],
            textfile::unix_seconds(at),
        );
        t
    }
}
