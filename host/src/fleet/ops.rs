//! What each fleet command asks of one node, as a [`NodeOutcome`]: the runner calls these
//! once per target, each on its own agent connection (a remote node is an agent to ask; no local
//! machine is read).
//!
//! Why here and not in the CLI: they are the single-node commands (`dpu health`, `dpu
//! info`, the DPU side of `check`, `dpu counters`) made into judged outcomes, and the
//! benchmarks and tests drive them without dpuctl's argv.

use std::collections::BTreeMap;

use dpu_proto::v1::{self, counters_client::CountersClient};

use super::dpu_checks::{self, DpuExpectations};
use super::dpu_facts::DpuFacts;
pub use super::health_causes::problems;
use super::report::{NodeOutcome, NodeStatus, Problem};
use crate::agent::health::agent_health;
use crate::agent::session::{rpc_error, AgentConnection, AgentError};

/// `fleet health`: PASS when every component of the agent is healthy, FAIL with one cause
/// per thing to fix ([`problems`]).
pub async fn health(agent: AgentConnection) -> Result<NodeOutcome, AgentError> {
    let health = agent_health(&agent).await?;
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

/// `fleet info`: the DPU's inventory, compared across the fleet; PASS when it could be
/// read.
pub async fn info(agent: AgentConnection) -> Result<NodeOutcome, AgentError> {
    let facts = DpuFacts::gather(&agent).await?;
    Ok(NodeOutcome {
        problems: Vec::new(),
        compared: dpu_checks::compared(&facts),
        facts: serde_json::to_value(&facts).unwrap_or_default(),
        skipped: None,
    })
}

/// `fleet check`: the DPU-side checklist ([`dpu_checks`]).
pub async fn check(
    agent: AgentConnection,
    expect: &DpuExpectations,
) -> Result<NodeOutcome, AgentError> {
    let health = agent_health(&agent).await?;
    let facts = DpuFacts::gather(&agent).await?;
    Ok(dpu_checks::judge(&health, &facts, expect))
}

/// `fleet counters`: one snapshot per node. A source the agent could not read makes the
/// node INCONCLUSIVE (its counters are missing, never zero); the number of counters per
/// source is compared, so a node missing counters stands out. `filter` keeps the values
/// of the counters whose name contains it.
pub async fn counters(
    agent: AgentConnection,
    selectors: Vec<v1::CounterSelector>,
    filter: Option<&str>,
) -> Result<NodeOutcome, AgentError> {
    let snapshot = CountersClient::new(agent.channel().await?)
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
