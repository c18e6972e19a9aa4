//! What each fleet command asks of one node, as a [`NodeOutcome`]: the runner calls these
//! once per target, each in its own session.
//!
//! Why here and not in the CLI: they are the single-node commands (`dpu health`, `dpu
//! info`, the DPU side of `check`, `dpu counters`) made into judged outcomes, and the
//! benchmarks and tests drive them without dpuctl's argv.

use std::collections::BTreeMap;

use dpu_proto::v1::{self, counters_client::CountersClient};

use super::dpu_checks::{self, DpuExpectations};
use super::dpu_facts::DpuFacts;
use super::report::{NodeOutcome, NodeStatus, Problem};
use crate::agent_health::{agent_health, AgentHealth, HealthRow, BACKEND_GROUPS};
use crate::session::{rpc_error, AgentError, Session};

/// `fleet health`: PASS when every component of the agent is healthy, FAIL with one cause
/// per thing to fix ([`problems`]).
pub async fn health(session: Session) -> Result<NodeOutcome, AgentError> {
    let health = agent_health(&session).await?;
    let mut compared = BTreeMap::new();
    if !health.system.agent_version.is_empty() {
        compared.insert(
            "agent version".to_owned(),
            health.system.agent_version.clone(),
        );
    }
    Ok(NodeOutcome {
        problems: problems(&health),
        facts: serde_json::json!({ "healthy": health.healthy(), "components": health.rows }),
        compared,
        skipped: None,
    })
}

/// One problem per thing an operator fixes, not per row: a down backend is one cause
/// (`storage: snap backend unavailable`, `switch: ovs backend unavailable` for OVSDB and
/// ovs-vswitchd together) with the services it stops folded into its detail; an agent that
/// is not SERVING itself (shutting down) is one cause with the services and `readiness` it
/// takes down; `readiness` is a cause of its own only when nothing else explains it.
///
/// Why: one node with SNAP and OVS down showed six causes (three backends, two services,
/// readiness), and the fleet groups nodes by cause, so the consequences hid the faults.
pub fn problems(health: &AgentHealth) -> Vec<Problem> {
    let down: Vec<&HealthRow> = health.rows.iter().filter(|r| !r.healthy).collect();
    let fail = |cause: String, detail: String| {
        Problem::new(NodeStatus::Fail, "agent.health", cause, detail)
    };
    let mut explained: Vec<&str> = Vec::new();
    let mut backend_causes = Vec::new();
    for group in BACKEND_GROUPS {
        let backends: Vec<&HealthRow> = down
            .iter()
            .filter(|r| r.backend().is_some_and(|b| group.backends.contains(&b)))
            .copied()
            .collect();
        let Some(first) = backends.first() else {
            continue;
        };
        let state = if backends.iter().any(|r| r.state == "unavailable") {
            "unavailable"
        } else {
            first.state.as_str()
        };
        let services: Vec<&HealthRow> = down
            .iter()
            .filter(|r| group.services.contains(&r.component.as_str()))
            .copied()
            .collect();
        explained.extend(services.iter().map(|r| r.component.as_str()));
        backend_causes.push(fail(
            format!("{}: {} backend {state}", group.area, group.label),
            with_consequences(&backends, &services),
        ));
    }
    // A backend this dpuctl does not know (a newer agent's) is its own cause.
    for row in &down {
        let Some(name) = row.backend() else { continue };
        if !BACKEND_GROUPS.iter().any(|g| g.backends.contains(&name)) {
            backend_causes.push(fail(
                format!("{name} backend {}", row.state),
                row.describe(),
            ));
        }
    }
    let leftover: Vec<&HealthRow> = down
        .iter()
        .filter(|r| {
            r.backend().is_none()
                && r.component != "agent"
                && r.component != dpu_proto::READINESS_SERVICE
                && !explained.contains(&r.component.as_str())
        })
        .copied()
        .collect();
    let readiness = down
        .iter()
        .find(|r| r.component == dpu_proto::READINESS_SERVICE);
    let mut problems = Vec::new();
    if let Some(agent) = down.iter().find(|r| r.component == "agent") {
        // The agent stops every service as it shuts down: they are its consequences.
        let consequences: Vec<&HealthRow> =
            leftover.iter().copied().chain(readiness.copied()).collect();
        problems.push(fail(
            "agent not SERVING".to_owned(),
            with_consequences(&[agent], &consequences),
        ));
        problems.extend(backend_causes);
        return problems;
    }
    problems.extend(backend_causes);
    for row in &leftover {
        problems.push(fail(
            format!("{} not SERVING", row.component),
            row.describe(),
        ));
    }
    if let Some(readiness) = readiness.filter(|_| problems.is_empty()) {
        problems.push(fail(
            "readiness not SERVING".to_owned(),
            readiness.describe(),
        ));
    }
    problems
}

/// `causes`' descriptions, then what they took down: `backend snap is unavailable (...);
/// so dpu.v1.Storage is not-serving`.
fn with_consequences(causes: &[&HealthRow], consequences: &[&HealthRow]) -> String {
    let mut detail = causes
        .iter()
        .map(|r| r.describe())
        .collect::<Vec<_>>()
        .join("; ");
    if !consequences.is_empty() {
        let taken = consequences
            .iter()
            .map(|r| format!("{} is {}", r.component, r.state))
            .collect::<Vec<_>>()
            .join(", ");
        detail.push_str("; so ");
        detail.push_str(&taken);
    }
    detail
}

/// `fleet info`: the DPU's inventory, compared across the fleet; PASS when it could be
/// read.
pub async fn info(session: Session) -> Result<NodeOutcome, AgentError> {
    let facts = DpuFacts::gather(&session).await?;
    Ok(NodeOutcome {
        problems: Vec::new(),
        compared: dpu_checks::compared(&facts),
        facts: serde_json::to_value(&facts).unwrap_or_default(),
        skipped: None,
    })
}

/// `fleet check`: the DPU-side checklist ([`dpu_checks`]).
pub async fn check(session: Session, expect: &DpuExpectations) -> Result<NodeOutcome, AgentError> {
    let health = agent_health(&session).await?;
    let facts = DpuFacts::gather(&session).await?;
    Ok(dpu_checks::judge(&health, &facts, expect))
}

/// `fleet counters`: one snapshot per node. A source the agent could not read makes the
/// node INCONCLUSIVE (its counters are missing, never zero); the number of counters per
/// source is compared, so a node missing counters stands out. `filter` keeps the values
/// of the counters whose name contains it.
pub async fn counters(
    session: Session,
    selectors: Vec<v1::CounterSelector>,
    filter: Option<&str>,
) -> Result<NodeOutcome, AgentError> {
    let snapshot = CountersClient::new(session.channel().await?)
        .max_decoding_message_size(dpu_proto::MAX_MESSAGE_BYTES)
        .snapshot(v1::SnapshotRequest { selectors })
        .await
        .map_err(rpc_error("Counters.Snapshot"))?
        .into_inner();
    let mut per_source: BTreeMap<String, usize> = BTreeMap::new();
    let mut values = BTreeMap::new();
    for sample in &snapshot.samples {
        *per_source.entry(sample.source.clone()).or_default() += 1;
        if filter.is_some_and(|f| sample.counter.contains(f)) {
            values.insert(
                format!("{} {} {}", sample.source, sample.object, sample.counter),
                sample.value,
            );
        }
    }
    let problems = snapshot
        .errors
        .iter()
        .map(|e| {
            Problem::new(
                NodeStatus::Inconclusive,
                "counters.source",
                "a counter source could not be read",
                e.message.clone(),
            )
        })
        .collect();
    let window_ms = snapshot
        .monotonic_end_ns
        .saturating_sub(snapshot.monotonic_start_ns) as f64
        / 1e6;
    Ok(NodeOutcome {
        problems,
        facts: serde_json::json!({
            "samples": snapshot.samples.len(),
            "per_source": per_source,
            "read_window_ms": window_ms,
            "boot_id": snapshot.boot_id,
            "values": values,
        }),
        compared: per_source
            .iter()
            .map(|(source, n)| (format!("{source} counters"), n.to_string()))
            .collect(),
        skipped: None,
    })
}

#[cfg(test)]
#[path = "ops_tests.rs"]
mod tests;
