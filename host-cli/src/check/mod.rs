//! `dpuctl check`: the host-side lab checklist. Facts are gathered once (sysfs under
//! `--sys-root`, then the agent), every rule judges them, and the results print as a table
//! or JSON. Exit code 1 when any check fails; skips are shown as skips, never as passes.

mod catalog;
mod facts;
mod rules;
#[cfg(test)]
mod rules_tests;

use serde::Serialize;

use crate::cli::CheckArgs;
use crate::commands::Env;
use crate::outcome::Outcome;
use crate::output;
use catalog::{spec, CHECKS};
use facts::{AgentFacts, HostFacts};
use rules::{judge, Expectations, Status};

/// One result as printed in JSON: the check's spec and its verdict.
#[derive(Debug, Serialize)]
struct CheckResult {
    id: &'static str,
    status: Status,
    detail: String,
    verifies: &'static str,
    why: &'static str,
    fix: &'static str,
}

/// Runs `dpuctl check`.
pub(crate) async fn run(env: &Env<'_>, args: &CheckArgs) -> anyhow::Result<Outcome> {
    if args.list {
        return list(env);
    }
    let root = dpu_probe::SysRoot::new(&env.cli.sys_root);
    let host = tokio::task::spawn_blocking(move || HostFacts::gather(&root)).await?;
    let agent = if args.no_agent {
        AgentFacts::NotAsked
    } else {
        AgentFacts::gather(env).await
    };
    let expect = Expectations {
        interface: args.interface.clone(),
        mtu: args.mtu,
    };
    let results: Vec<CheckResult> = judge(&host, &agent, &expect)
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
        .collect();
    let failed = results.iter().any(|r| r.status == Status::Fail);
    if env.json() {
        output::json(&results)?;
    } else {
        print(&results)?;
    }
    Ok(if failed {
        Outcome::Failed
    } else {
        Outcome::Success
    })
}

fn label(status: Status) -> &'static str {
    match status {
        Status::Pass => "PASS",
        Status::Warn => "WARN",
        Status::Fail => "FAIL",
        Status::Skip => "SKIP",
    }
}

fn print(results: &[CheckResult]) -> anyhow::Result<()> {
    let mut table = output::table(["check", "result", "detail"]);
    for r in results {
        table.add_row([r.id, label(r.status), r.detail.as_str()]);
    }
    output::print_table(&table)?;
    for r in results
        .iter()
        .filter(|r| matches!(r.status, Status::Fail | Status::Warn))
    {
        output::line(&format!(
            "{} {}: {}\n  why: {}\n  fix: {}",
            label(r.status),
            r.id,
            r.verifies,
            r.why,
            r.fix
        ))?;
    }
    let count = |s| results.iter().filter(|r| r.status == s).count();
    output::line(&format!(
        "{} passed, {} warned, {} failed, {} skipped",
        count(Status::Pass),
        count(Status::Warn),
        count(Status::Fail),
        count(Status::Skip)
    ))
}

fn list(env: &Env<'_>) -> anyhow::Result<Outcome> {
    if env.json() {
        output::json(&CHECKS)?;
    } else {
        let mut table = output::table(["check", "verifies", "why it matters", "how to fix"]);
        for c in CHECKS {
            table.add_row([c.id, c.verifies, c.why, c.fix]);
        }
        output::print_table(&table)?;
    }
    Ok(Outcome::Success)
}
