//! The agent's health as fleet problems, one per thing an operator fixes: shared by
//! `fleet health` ([`super::ops::health`]) and the `agent.serving`/`agent.services` checks
//! of `fleet check` ([`super::dpu_checks`]), so both group a node's fault the same way.

use super::report::{NodeStatus, Problem};
use crate::agent::health::{AgentHealth, HealthRow, BACKEND_GROUPS};

/// The cause the agent itself not SERVING is given (the one cause `fleet check` fails on;
/// the others are warnings there).
pub const AGENT_NOT_SERVING: &str = "agent not SERVING";

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
            AGENT_NOT_SERVING.to_owned(),
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

#[cfg(test)]
mod tests;
