//! `dpuctl check`: the host-side lab checklist. Facts are gathered once (sysfs under
//! `--sys-root`, then the agent), every rule judges them, and the results print as a table
//! or JSON. Exit code 1 when any check fails; skips are shown as skips, never as passes.

pub mod catalog;
pub mod facts;
pub mod rules;
#[cfg(test)]
mod rules_tests;

use serde::Serialize;

use crate::session::Session;
use catalog::spec;
use facts::{AgentFacts, HostFacts};
use rules::{judge, Expectations, Status};

/// `dpuctl check` as parameters.
#[derive(Debug, Clone, Default)]
pub struct CheckParams {
    /// The interface the lab expects (`--interface`).
    pub interface: Option<String>,
    /// The MTU it should have (`--mtu`).
    pub mtu: Option<u32>,
    /// Host checks only: do not ask the agent.
    pub no_agent: bool,
}

/// One result as printed in JSON: the check's spec and its verdict.
#[derive(Debug, Serialize)]
pub struct CheckResult {
    /// The check's id (`catalog`).
    pub id: &'static str,
    /// Its verdict.
    pub status: Status,
    /// What was found.
    pub detail: String,
    /// What it verifies.
    pub verifies: &'static str,
    /// Why it matters.
    pub why: &'static str,
    /// How to fix a failure.
    pub fix: &'static str,
}

/// Runs `dpuctl check`: host facts under the session's sys root, then the agent's (unless
/// `no_agent`), judged by every rule.
pub async fn run(session: &Session, args: &CheckParams) -> anyhow::Result<Vec<CheckResult>> {
    let root = session.sys_root();
    let host = tokio::task::spawn_blocking(move || HostFacts::gather(&root)).await?;
    let agent = if args.no_agent {
        AgentFacts::NotAsked
    } else {
        AgentFacts::gather(session).await
    };
    let expect = Expectations {
        interface: args.interface.clone(),
        mtu: args.mtu,
    };
    Ok(judge(&host, &agent, &expect)
        .into_iter()
        .map(|(id, verdict)| {
            let spec = spec(id);
            CheckResult {
                id,
                status: verdict.status,
                detail: verdict.detail,
                verifies: spec.verifies,
                why: spec.why,
                fix: spec.fix,
            }
        })
        .collect())
}

/// Whether any result failed (exit 1).
pub fn any_failed(results: &[CheckResult]) -> bool {
    results.iter().any(|r| r.status == Status::Fail)
}
