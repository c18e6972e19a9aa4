//! The fleet's answer: a row per node, the failures grouped by cause, and the facts where
//! a node differs from the majority.
//!
//! Why grouped: with two hundred nodes, "12 nodes: RDMA port not ACTIVE" is what a person
//! acts on; the row per node is what a script reads. Why drift: a node can pass every check
//! and still be the odd one (older firmware, another MTU), and that is often the answer to
//! "why is this one slow".

use std::collections::BTreeMap;

use serde::Serialize;

/// How a node (or one of its problems) came out. Ordered from best to worst: a node's
/// status is its worst problem's.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum NodeStatus {
    /// Everything asked of it was fine.
    Pass,
    /// Nothing could be judged (the command does not apply to it).
    Skip,
    /// Fine, with something worth a look.
    Warn,
    /// The evidence was missing (a counter missing, reset or wrapped).
    Inconclusive,
    /// A check failed or the agent reported itself unhealthy.
    Fail,
    /// The agent could not be reached, refused the connection, or ran past its deadline.
    Unreachable,
    /// The run was cancelled (Ctrl-C) before this node finished.
    Cancelled,
}

impl NodeStatus {
    /// The upper-case name the JSON and the table print.
    pub fn label(self) -> &'static str {
        match self {
            Self::Pass => "PASS",
            Self::Skip => "SKIP",
            Self::Warn => "WARN",
            Self::Inconclusive => "INCONCLUSIVE",
            Self::Fail => "FAIL",
            Self::Unreachable => "UNREACHABLE",
            Self::Cancelled => "CANCELLED",
        }
    }

    /// Where a person looks first, 0 first: FAIL, UNREACHABLE, CANCELLED, INCONCLUSIVE,
    /// WARN, SKIP, PASS. The order of the headline's counts and of the listed rows. Not
    /// the enum's order, which decides a node's status and the exit code and ranks
    /// UNREACHABLE above FAIL: a fleet with 8 FAIL and 1 UNREACHABLE is first of all 8
    /// failed nodes.
    pub fn severity(self) -> u8 {
        match self {
            Self::Fail => 0,
            Self::Unreachable => 1,
            Self::Cancelled => 2,
            Self::Inconclusive => 3,
            Self::Warn => 4,
            Self::Skip => 5,
            Self::Pass => 6,
        }
    }
}

/// One thing wrong with a node.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Problem {
    /// The check (or step) that found it, e.g. `dpu.rdma-port`.
    pub check: String,
    /// The cause in words shared by every node with the same fault: what groups them.
    pub cause: String,
    /// This node's particulars (which port, which value).
    pub detail: String,
    /// How bad it is.
    pub status: NodeStatus,
}

impl Problem {
    /// A problem of `status` found by `check`.
    pub fn new(
        status: NodeStatus,
        check: impl Into<String>,
        cause: impl Into<String>,
        detail: impl Into<String>,
    ) -> Self {
        Self {
            check: check.into(),
            cause: cause.into(),
            detail: detail.into(),
            status,
        }
    }
}

/// What one node's command found, before the runner adds its name and time.
#[derive(Debug, Clone, Default)]
pub struct NodeOutcome {
    /// What is wrong; empty: PASS (unless `skipped`).
    pub problems: Vec<Problem>,
    /// The command's own result for this node, as JSON (what `dpu info` etc. would print).
    pub facts: serde_json::Value,
    /// Facts every node should agree on, by name (`firmware`, `mtu p0`): what drift
    /// compares.
    pub compared: BTreeMap<String, String>,
    /// Why nothing was judged, when nothing was.
    pub skipped: Option<String>,
}

impl NodeOutcome {
    /// The node's status: its worst problem's, PASS without problems, SKIP when skipped.
    pub fn status(&self) -> NodeStatus {
        let worst = self.problems.iter().map(|p| p.status).max();
        match (worst, &self.skipped) {
            (Some(worst), _) => worst,
            (None, Some(_)) => NodeStatus::Skip,
            (None, None) => NodeStatus::Pass,
        }
    }
}

/// One node's row.
#[derive(Debug, Clone, Serialize)]
pub struct NodeReport {
    /// The target's name.
    pub name: String,
    /// Its agent, as dialled.
    pub agent: String,
    /// Its overall result.
    pub status: NodeStatus,
    /// How long its command took, in milliseconds.
    pub elapsed_ms: f64,
    /// What is wrong, worst first.
    pub problems: Vec<Problem>,
    /// The command's result for this node.
    pub facts: serde_json::Value,
    /// The facts drift compares.
    pub compared: BTreeMap<String, String>,
    /// Why it was skipped, when it was.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub skipped: Option<String>,
}

/// Every node with the same problem.
#[derive(Debug, Clone, Serialize)]
pub struct Group {
    /// The check that found it.
    pub check: String,
    /// The shared cause.
    pub cause: String,
    /// How bad.
    pub status: NodeStatus,
    /// The nodes, in report order.
    pub nodes: Vec<String>,
}

/// A fact on which some nodes differ from the majority.
#[derive(Debug, Clone, Serialize)]
pub struct Drift {
    /// The fact's name.
    pub fact: String,
    /// The value most nodes have.
    pub majority: String,
    /// How many nodes have it.
    pub majority_nodes: usize,
    /// Every other node and its value.
    pub odd: BTreeMap<String, String>,
}

/// The fleet's answer to one command.
#[derive(Debug, Clone, Serialize)]
pub struct FleetReport {
    /// The command (`health`, `info`, `check`, `counters`).
    pub command: String,
    /// How many targets were asked.
    pub targets: usize,
    /// Wall time of the whole run, in milliseconds.
    pub elapsed_ms: f64,
    /// Whether the run was cancelled before every node finished.
    pub cancelled: bool,
    /// A row per node, in target order.
    pub nodes: Vec<NodeReport>,
    /// The problems grouped by cause, largest group first.
    pub groups: Vec<Group>,
    /// The facts where a minority differs, by fact name.
    pub drift: Vec<Drift>,
    /// How many nodes ended in each status.
    pub summary: BTreeMap<&'static str, usize>,
}

impl FleetReport {
    /// Builds the groups, the drift and the summary from the rows.
    pub fn new(command: &str, nodes: Vec<NodeReport>, elapsed_ms: f64, cancelled: bool) -> Self {
        let groups = groups(&nodes);
        let drift = drift(&nodes);
        let mut summary = BTreeMap::new();
        for node in &nodes {
            *summary.entry(node.status.label()).or_insert(0) += 1;
        }
        Self {
            command: command.to_owned(),
            targets: nodes.len(),
            elapsed_ms,
            cancelled,
            nodes,
            groups,
            drift,
            summary,
        }
    }

    /// The fleet's overall status for its exit code: its worst node's by the enum's order
    /// (CANCELLED and UNREACHABLE count as failures). Not what a person is shown: that is
    /// [`Self::headline`].
    pub fn worst(&self) -> NodeStatus {
        self.nodes
            .iter()
            .map(|n| n.status)
            .max()
            .unwrap_or(NodeStatus::Pass)
    }

    /// How many nodes ended in each status, most severe first
    /// ([`NodeStatus::severity`]); statuses no node has are left out.
    pub fn counts(&self) -> Vec<(NodeStatus, usize)> {
        let mut counts: BTreeMap<(u8, NodeStatus), usize> = BTreeMap::new();
        for node in &self.nodes {
            *counts
                .entry((node.status.severity(), node.status))
                .or_insert(0) += 1;
        }
        counts
            .into_iter()
            .map(|((_, status), n)| (status, n))
            .collect()
    }

    /// The fleet in one line, e.g. `8 FAIL, 1 UNREACHABLE, 191 PASS`: the counts by
    /// status, most severe first, so that no status hides another (one word, the worst,
    /// said UNREACHABLE for a fleet with 8 failed nodes and 1 unreachable).
    pub fn headline(&self) -> String {
        if self.nodes.is_empty() {
            return "no nodes".to_owned();
        }
        self.counts()
            .iter()
            .map(|(status, n)| format!("{n} {}", status.label()))
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// The rows as a person reads them: most severe status first
    /// ([`NodeStatus::severity`]), then by name. `nodes` (the JSON) stays in target order.
    pub fn nodes_by_severity(&self) -> Vec<&NodeReport> {
        let mut nodes: Vec<&NodeReport> = self.nodes.iter().collect();
        nodes.sort_by(|a, b| {
            a.status
                .severity()
                .cmp(&b.status.severity())
                .then_with(|| a.name.cmp(&b.name))
        });
        nodes
    }
}

/// Problems grouped by (check, cause); a group's status is its worst member's.
fn groups(nodes: &[NodeReport]) -> Vec<Group> {
    let mut by_cause: BTreeMap<(String, String), Group> = BTreeMap::new();
    for node in nodes {
        for problem in &node.problems {
            let group = by_cause
                .entry((problem.check.clone(), problem.cause.clone()))
                .or_insert_with(|| Group {
                    check: problem.check.clone(),
                    cause: problem.cause.clone(),
                    status: problem.status,
                    nodes: Vec::new(),
                });
            group.status = group.status.max(problem.status);
            if group.nodes.last() != Some(&node.name) {
                group.nodes.push(node.name.clone());
            }
        }
    }
    let mut groups: Vec<Group> = by_cause.into_values().collect();
    // In the headline's order (FAIL before UNREACHABLE), then the most nodes first.
    groups.sort_by(|a, b| {
        a.status
            .severity()
            .cmp(&b.status.severity())
            .then(b.nodes.len().cmp(&a.nodes.len()))
            .then(a.check.cmp(&b.check))
    });
    groups
}

/// For each compared fact, the majority value and the nodes that differ. A fact only some
/// nodes report is compared among those; a tie has no majority and every value is listed
/// against the first in value order. Facts all nodes agree on are left out.
fn drift(nodes: &[NodeReport]) -> Vec<Drift> {
    let mut values: BTreeMap<&str, BTreeMap<&str, Vec<&str>>> = BTreeMap::new();
    for node in nodes {
        for (fact, value) in &node.compared {
            values
                .entry(fact)
                .or_default()
                .entry(value)
                .or_default()
                .push(&node.name);
        }
    }
    let mut drift = Vec::new();
    for (fact, by_value) in values {
        if by_value.len() < 2 {
            continue;
        }
        let (majority, holders) = by_value
            .iter()
            .max_by(|a, b| a.1.len().cmp(&b.1.len()).then(b.0.cmp(a.0)))
            .map(|(v, n)| (*v, n.len()))
            .unwrap_or_default();
        let odd = by_value
            .iter()
            .filter(|(v, _)| **v != majority)
            .flat_map(|(v, names)| names.iter().map(|n| ((*n).to_owned(), (*v).to_owned())))
            .collect();
        drift.push(Drift {
            fact: fact.to_owned(),
            majority: majority.to_owned(),
            majority_nodes: holders,
            odd,
        });
    }
    drift
}

#[cfg(test)]
mod tests;
