//! `dpuctl check`: the host-side lab checklist. Facts are gathered once (sysfs under
//! `--sys-root`, then the agent), every rule judges them, and the results print as a table
//! or JSON. Exit code 1 when any check fails; skips are shown as skips, never as passes.
//! Each result also carries the facts it judged as typed values ([`rules::Facts`]), from
//! which [`env::fabric_env`] derives the NCCL/UCX/perftest settings (`check --env`).

pub mod catalog;
pub mod env;
#[cfg(test)]
mod env_tests;
pub mod facts;
mod gpu;
#[cfg(test)]
mod gpu_tests;
mod ib;
#[cfg(test)]
mod ib_tests;
pub mod rules;
#[cfg(test)]
mod rules_tests;
mod verdict;

use serde::Serialize;

use crate::session::Session;
use catalog::spec;
use facts::{AgentFacts, HostFacts};
use rules::{judge, Expectations, Facts, Status, Verdict};

/// `dpuctl check` as parameters.
#[derive(Debug, Clone, Default)]
pub struct CheckParams {
    /// The interface the lab expects (`--interface`).
    pub interface: Option<String>,
    /// The MTU it should have (`--mtu`).
    pub mtu: Option<u32>,
    /// The rate every InfiniBand port must reach, in Gbit/s (`--ib-rate`).
    pub ib_rate: Option<u32>,
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
    /// What was found, as typed values by name (`gid_index` is a number); `{}` when
    /// nothing was (keys per check: `docs/check.md`).
    pub facts: Facts,
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
        ib_rate: args.ib_rate,
    };
    Ok(describe(judge(&host, &agent, &expect)))
}

/// Verdicts (as [`judge`] returns them) with their catalog entries: the results as printed.
pub fn describe(judged: Vec<(&'static str, Verdict)>) -> Vec<CheckResult> {
    judged
        .into_iter()
        .map(|(id, verdict)| {
            let spec = spec(id);
            CheckResult {
                id,
                status: verdict.status,
                detail: verdict.detail,
                facts: verdict.facts,
                verifies: spec.verifies,
                why: spec.why,
                fix: spec.fix,
            }
        })
        .collect()
}

/// Whether any result failed (exit 1).
pub fn any_failed(results: &[CheckResult]) -> bool {
    results.iter().any(|r| r.status == Status::Fail)
}
