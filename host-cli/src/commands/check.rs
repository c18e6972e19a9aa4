//! `dpuctl check`: flags to the checklist's parameters, the checks (dpu-host), and the
//! results as a table or JSON. Exit code 1 when any check fails. `--env`: the fabric's
//! NCCL/UCX/perftest settings instead, the traffic class from each rail's DCB
//! configuration (dpu-host computes them; this prints them).

use dpu_host::check::catalog::CHECKS;
use dpu_host::check::dcb::DcbFacts;
use dpu_host::check::env::{lossless_fabric_env, DEPENDS_ON};
use dpu_host::check::fw_profile::FwProfile;
use dpu_host::check::rules::Status;
use dpu_host::check::{self, CheckParams, CheckResult};

use super::env::Env;
use crate::cli::CheckArgs;
use crate::outcome::Outcome;
use crate::output;

pub(crate) async fn run(env: &Env<'_>, args: &CheckArgs) -> anyhow::Result<Outcome> {
    if args.list {
        return list(env);
    }
    // Read and validated before anything runs: a bad profile is exit 2, naming the line.
    let profile = match &args.profile {
        Some(path) => Some(FwProfile::load(path)?),
        None => None,
    };
    let params = CheckParams {
        interfaces: args.interface.clone(),
        devices: args.device.clone(),
        mtu: args.mtu,
        ib_rate: args.ib_rate,
        no_agent: args.no_agent,
        profile,
    };
    let check::CheckRun { results, dcb } = check::run_judged(&env.session, &params).await?;
    let outcome = if args.env {
        print_env(env, &results, &dcb)?
    } else {
        print_results(env, &results)?
    };
    // After the results are out: a file that cannot be written is then exit 2 with the
    // results still shown.
    if let Some(path) = &args.metrics_file {
        dpu_host::textfile::checks(&results, std::time::SystemTime::now()).write_atomic(path)?;
    }
    Ok(outcome)
}

fn print_results(env: &Env<'_>, results: &[CheckResult]) -> anyhow::Result<Outcome> {
    if env.json() {
        output::json(&results)?;
    } else {
        print(results)?;
    }
    Ok(if check::any_failed(results) {
        Outcome::Failed
    } else {
        Outcome::Success
    })
}

/// `--env`: the settings on stdout, or nothing there and why on stderr (exit 1). Other
/// failed checks do not change the settings; they are mentioned on stderr.
fn print_env(env: &Env<'_>, results: &[CheckResult], dcb: &DcbFacts) -> anyhow::Result<Outcome> {
    let settings = match lossless_fabric_env(results, dcb) {
        Ok(settings) => settings,
        Err(refused) => {
            output::diag(&format!("dpuctl: {refused}"));
            for unmet in &refused.unmet {
                output::diag(&format!("  {unmet}"));
            }
            return Ok(Outcome::Failed);
        }
    };
    for r in results
        .iter()
        .filter(|r| r.status == Status::Fail && !DEPENDS_ON.contains(&r.id))
    {
        // The dcb.* checks judge the rdma_cm default ToS; the traffic class set here is
        // chosen from the DCB configuration itself.
        let why = if r.id.starts_with("dcb.") && settings.get("NCCL_IB_TC").is_some() {
            "it judges the rdma_cm default ToS; NCCL_IB_TC, UCX_IB_TRAFFIC_CLASS and --tclass below \
             are chosen to land on a PFC priority instead"
        } else {
            "the settings do not depend on it"
        };
        output::diag(&format!(
            "dpuctl: note: {} failed ({}); {why}",
            r.id, r.detail
        ));
    }
    for note in &settings.notes {
        output::diag(&format!("dpuctl: note: {note}"));
    }
    if env.json() {
        output::json(&settings)?;
    } else {
        use std::io::Write as _;
        let mut out = std::io::stdout().lock();
        out.write_all(settings.exports().as_bytes())
            .and_then(|()| out.flush())
            .map_err(output::write_error)?;
    }
    Ok(Outcome::Success)
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
    let mut table = output::table(["check", "rail", "result", "detail"]);
    for r in results {
        let rail = r.subject.as_deref().unwrap_or("");
        table.add_row([r.id, rail, label(r.status), r.detail.as_str()]);
    }
    output::print_table(&table)?;
    for r in results
        .iter()
        .filter(|r| matches!(r.status, Status::Fail | Status::Warn))
    {
        let rail = r
            .subject
            .as_deref()
            .map_or(String::new(), |s| format!(" ({s})"));
        output::line(&format!(
            "{} {}{rail}: {}\n  why: {}\n  fix: {}",
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
