//! `dpuctl check`: flags to the checklist's parameters, the checks (dpu-host), and the
//! results as a table or JSON. Exit code 1 when any check fails. `--env`: the fabric's
//! NCCL/UCX/perftest settings instead, the traffic class from each rail's DCB
//! configuration (dpu-host computes them; this prints them).

use dpu_host::check::catalog::CHECKS;
use dpu_host::check::env::{lossless_fabric_env, DEPENDS_ON};
use dpu_host::check::fw_profile::FwProfile;
use dpu_host::check::rules::Status;
use dpu_host::check::{self, CheckParams, CheckResult};
use dpu_host::facts::dcb::DcbFacts;

use super::env::Env;
use crate::cli::CheckArgs;
use crate::exit::Exit;
use crate::output;

pub(crate) async fn run(env: &Env<'_>, args: &CheckArgs) -> anyhow::Result<Exit> {
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
        print_results(env, &results, args.all)?
    };
    // After the results are out: a file that cannot be written is then exit 2 with the
    // results still shown.
    if let Some(path) = &args.metrics_file {
        dpu_host::check::textfile::of(&results, std::time::SystemTime::now()).write_atomic(path)?;
    }
    Ok(outcome)
}

fn print_results(env: &Env<'_>, results: &[CheckResult], all: bool) -> anyhow::Result<Exit> {
    if env.json() {
        output::json(&results)?;
    } else {
        print(results, all)?;
    }
    Ok(if check::any_failed(results) {
        Exit::Failed
    } else {
        Exit::Success
    })
}

/// `--env`: the settings on stdout, or nothing there and why on stderr (exit 1). Other
/// failed checks do not change the settings; they are mentioned on stderr.
fn print_env(env: &Env<'_>, results: &[CheckResult], dcb: &DcbFacts) -> anyhow::Result<Exit> {
    let settings = match lossless_fabric_env(results, dcb) {
        Ok(settings) => settings,
        Err(refused) => {
            output::diag(&format!("dpuctl: {refused}"));
            for unmet in &refused.unmet {
                output::diag(&format!("  {unmet}"));
            }
            return Ok(Exit::Failed);
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
    Ok(Exit::Success)
}

fn label(status: Status) -> &'static str {
    match status {
        Status::Pass => "PASS",
        Status::Warn => "WARN",
        Status::Fail => "FAIL",
        Status::Skip => "SKIP",
    }
}

/// The results as a table; skipped checks are rows only with `all`, otherwise one line
/// per reason under the table (a machine without RDMA skips thirty checks for three
/// reasons: three lines say it better than thirty rows).
fn print(results: &[CheckResult], all: bool) -> anyhow::Result<()> {
    let mut table = output::table(["check", "rail", "result", "detail"]);
    let mut rows = 0;
    for r in results.iter().filter(|r| all || r.status != Status::Skip) {
        let rail = r.subject.as_deref().unwrap_or("");
        table.add_row([r.id, rail, label(r.status), r.detail.as_str()]);
        rows += 1;
    }
    if rows > 0 {
        output::print_table(&table)?;
    }
    if !all {
        for line in skip_summary(results) {
            output::line(&line)?;
        }
    }
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

/// Longest list of check ids on one summary line before "and N more".
const SUMMARY_IDS: usize = 8;

/// The skipped checks by reason, the most common reason first: a heading line, then
/// `  N  reason: id, id, ...` per reason. Nothing when nothing was skipped.
fn skip_summary(results: &[CheckResult]) -> Vec<String> {
    let mut reasons: Vec<(&str, Vec<&str>)> = Vec::new();
    for r in results.iter().filter(|r| r.status == Status::Skip) {
        match reasons.iter_mut().find(|(reason, _)| *reason == r.detail) {
            Some((_, ids)) => ids.push(r.id),
            None => reasons.push((r.detail.as_str(), vec![r.id])),
        }
    }
    if reasons.is_empty() {
        return Vec::new();
    }
    // Stable: reasons with as many checks keep the catalog's order.
    reasons.sort_by_key(|(_, ids)| std::cmp::Reverse(ids.len()));
    let skipped: usize = reasons.iter().map(|(_, ids)| ids.len()).sum();
    let mut lines = vec![format!(
        "skipped {skipped}, by reason (every row: --all; every result: -o json):"
    )];
    for (reason, mut ids) in reasons {
        let count = ids.len();
        ids.dedup();
        let shown: Vec<&str> = ids.iter().take(SUMMARY_IDS).copied().collect();
        let more = ids.len().saturating_sub(SUMMARY_IDS);
        let tail = if more > 0 {
            format!(" and {more} more")
        } else {
            String::new()
        };
        lines.push(format!(
            "  {count:>2}  {reason}: {}{tail}",
            shown.join(", ")
        ));
    }
    lines
}

fn list(env: &Env<'_>) -> anyhow::Result<Exit> {
    if env.json() {
        output::json(&CHECKS)?;
    } else {
        let mut table = output::table(["check", "verifies", "why it matters", "how to fix"]);
        for c in CHECKS {
            table.add_row([c.id, c.verifies, c.why, c.fix]);
        }
        output::print_table(&table)?;
    }
    Ok(Exit::Success)
}

#[cfg(test)]
mod tests {
    use super::*;
    use dpu_host::check::rules::Facts;

    fn result(id: &'static str, status: Status, detail: &str) -> CheckResult {
        CheckResult {
            id,
            subject: None,
            status,
            detail: detail.to_owned(),
            facts: Facts::new(),
            verifies: "",
            why: "",
            fix: "",
        }
    }

    #[test]
    fn skipped_checks_are_summed_up_by_reason_most_common_first() {
        let mut results = vec![
            result("pcie.bluefield", Status::Fail, "no BlueField"),
            result("agent.reachable", Status::Skip, "--no-agent"),
        ];
        for id in [
            "netdev.up",
            "rdma.port",
            "rdma.gid",
            "rdma.mtu",
            "dcb.pfc",
            "dcb.trust",
            "dcb.chain",
            "dcb.ets",
            "ib.port",
            "ib.lid",
        ] {
            results.push(result(id, Status::Skip, "no RDMA data interface"));
        }
        let lines = skip_summary(&results);
        assert_eq!(
            lines,
            [
                "skipped 11, by reason (every row: --all; every result: -o json):",
                "  10  no RDMA data interface: netdev.up, rdma.port, rdma.gid, rdma.mtu, \
                 dcb.pfc, dcb.trust, dcb.chain, dcb.ets and 2 more",
                "   1  --no-agent: agent.reachable",
            ]
        );
        // Nothing skipped: nothing said.
        assert!(skip_summary(&results[..1]).is_empty());
    }

    #[test]
    fn a_check_skipped_on_several_rails_is_counted_per_rail_and_named_once() {
        let on = |rail: &str| {
            let mut r = result("rdma.gid", Status::Skip, "InfiniBand: no GID index");
            r.subject = Some(rail.to_owned());
            r
        };
        let (a, b) = (on("ib0"), on("ib1"));
        let lines = skip_summary(&[a, b]);
        assert_eq!(lines[1], "   2  InfiniBand: no GID index: rdma.gid");
    }
}
