//! `dpuctl check`: the host-side lab checklist. Facts are gathered once (sysfs under
//! `--sys-root`, then the agent), every rule judges them, and the results print as a table
//! or JSON. Exit code 1 when any check fails; skips are shown as skips, never as passes.
//! Each result also carries the facts it judged as typed values ([`rules::Facts`]), from
//! which [`env::fabric_env`] derives the NCCL/UCX/perftest settings (`check --env`).

pub mod catalog;
pub mod dcb;
mod dpu_side;
pub mod env;
mod error;
pub use error::CheckError;
pub mod facts;
mod fw;
pub mod fw_profile;
pub mod gdr;
mod gpu;
mod ib;
pub mod rules;
pub mod textfile;
mod verdict;

use serde::Serialize;

use crate::agent::session::Session;
use catalog::spec;
use facts::{AgentFacts, HostFacts};
use rules::{judge, CheckVerdict, Expectations, Facts, Status};

/// `dpuctl check` as parameters.
#[derive(Debug, Clone, Default)]
pub struct CheckParams {
    /// The data interfaces (rails) to check (`--interface`, repeatable); empty: every
    /// RDMA port's netdev.
    pub interfaces: Vec<String>,
    /// The RDMA ports to check (`--device DEV[/PORT]`, repeatable), when no interface is
    /// named.
    pub devices: Vec<String>,
    /// The MTU it should have (`--mtu`).
    pub mtu: Option<u32>,
    /// The rate every InfiniBand port must reach, in Gbit/s (`--ib-rate`).
    pub ib_rate: Option<u32>,
    /// Host checks only: do not ask the agent.
    pub no_agent: bool,
    /// The expected firmware settings (`--profile FILE`, already validated).
    pub profile: Option<fw_profile::FwProfile>,
}

/// One result as printed in JSON: the check's spec and its verdict.
#[derive(Debug, Serialize)]
pub struct CheckResult {
    /// The check's id (`catalog`).
    pub id: &'static str,
    /// The rail (data interface) a per-port check judged; absent for host-wide checks.
    /// A host with eight rails has eight results of each per-port check.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub subject: Option<String>,
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
    /// How to fix a failure: the catalog's, or one that fits what was found.
    pub fix: &'static str,
}

/// What [`run_judged`] returns: the results, and the DCB facts they were judged from,
/// which `check --env` derives the traffic class from ([`env::lossless_fabric_env`]).
#[derive(Debug)]
pub struct CheckRun {
    /// The results, as printed.
    pub results: Vec<CheckResult>,
    /// Each rail's DCB configuration and rdma_cm default ToS.
    pub dcb: crate::facts::dcb::DcbFacts,
}

/// Runs `dpuctl check`: host facts under the session's sys root, then the agent's (unless
/// `no_agent`), judged by every rule.
pub async fn run(session: &Session, args: &CheckParams) -> Result<Vec<CheckResult>, CheckError> {
    Ok(run_judged(session, args).await?.results)
}

/// [`run`], keeping the DCB facts beside the results.
pub async fn run_judged(session: &Session, args: &CheckParams) -> Result<CheckRun, CheckError> {
    let root = session.sys_root();
    let (interfaces, devices) = (args.interfaces.clone(), args.devices.clone());
    let host = tokio::task::spawn_blocking(move || {
        let mut host = HostFacts::gather(&root);
        host.gather_dcb(&root, &interfaces, &devices);
        host
    })
    .await
    .map_err(CheckError::FactsThread)?;
    // A `--device` or `--interface` that names nothing is bad input: refused before the
    // agent is asked.
    host.data_interfaces(&args.interfaces, &args.devices)
        .map_err(CheckError::Selection)?;
    let agent = if args.no_agent {
        AgentFacts::NotAsked
    } else {
        AgentFacts::gather(session.agent()).await
    };
    let expect = Expectations {
        interfaces: args.interfaces.clone(),
        devices: args.devices.clone(),
        mtu: args.mtu,
        ib_rate: args.ib_rate,
        profile: args.profile.clone(),
    };
    let results = describe(judge(&host, &agent, &expect));
    Ok(CheckRun {
        results,
        dcb: host.dcb,
    })
}

/// Verdicts (as [`judge`] returns them) with their catalog entries: the results as printed.
pub fn describe(judged: Vec<(&'static str, CheckVerdict)>) -> Vec<CheckResult> {
    judged
        .into_iter()
        .map(|(id, verdict)| {
            let spec = spec(id);
            CheckResult {
                id,
                subject: verdict.subject,
                status: verdict.status,
                detail: verdict.detail,
                facts: verdict.facts,
                verifies: spec.verifies,
                why: spec.why,
                fix: verdict.fix.unwrap_or(spec.fix),
            }
        })
        .collect()
}

/// Whether any result failed (exit 1).
pub fn any_failed(results: &[CheckResult]) -> bool {
    results.iter().any(|r| r.status == Status::Fail)
}

#[cfg(test)]
mod tests;
