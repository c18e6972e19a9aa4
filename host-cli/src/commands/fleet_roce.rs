//! `dpuctl fleet roce ...`: RoCE between the fleet's host pairs. The plan and every run are
//! dpu-host's (`fleet::pairs`); here: flags to parameters, Ctrl-C to cancelling, progress
//! on stderr, and the report as a table (one row per run, then skipped hosts, the runs
//! not made and the isolation findings) or JSON. Exit 0: every run PASS; 1: a run FAILED;
//! 3: inconclusive without failures; 2: bad input; 130: interrupted.

use anyhow::Context as _;
use dpu_host::fleet::deadline::PAIRS_PROBE_TIMEOUT;
use dpu_host::fleet::pairs;
use dpu_host::fleet::pairs::judge::PairVerdict;
use dpu_host::fleet::pairs::params::{parse_tests, PairsParams};
use dpu_host::fleet::pairs::plan::{plan, Direction};
use dpu_host::fleet::pairs::report::{PairRun, PairsReport};
use dpu_host::fleet::pairs::run::PairsEvent;
use dpu_host::fleet::target::Target;
use dpu_host::remote::ssh::Ssh;
use dpu_host::remote::watched::Cancel;
use dpu_host::roce::perf::PathVerdict;

use super::env::Env;
use crate::exit::Exit;
use crate::fleet_cli::FleetTargets;
use crate::fleet_roce_cli::{FleetPairsArgs, FleetRoceCommand};
use crate::output;

pub(crate) async fn run(
    env: &Env<'_>,
    fleet: &FleetTargets,
    targets: Vec<Target>,
    cmd: &FleetRoceCommand,
) -> anyhow::Result<Exit> {
    match cmd {
        FleetRoceCommand::Pairs(args) => pairs(env, fleet, targets, args).await,
    }
}

fn params(fleet: &FleetTargets, args: &FleetPairsArgs) -> anyhow::Result<PairsParams> {
    let probe_timeout = fleet.deadline()?.unwrap_or(PAIRS_PROBE_TIMEOUT);
    Ok(PairsParams {
        tests: parse_tests(&args.tests)?,
        sizes: args.sizes.clone(),
        iterations: args.iterations,
        base_port: args.base_port,
        run_timeout_s: args.run_timeout,
        line_rate_percent: args.line_rate_percent,
        line_rate_gbps: args.line_rate_gbps,
        dpuctl: args.dpuctl.clone(),
        hop: Ssh::new(args.ssh.clone(), args.ssh_port, args.ssh_identity.clone()),
        probe_timeout,
        parallel: fleet.parallel,
    })
}

async fn pairs(
    env: &Env<'_>,
    fleet: &FleetTargets,
    targets: Vec<Target>,
    args: &FleetPairsArgs,
) -> anyhow::Result<Exit> {
    for (given, flag) in [
        (fleet.html.is_some(), "--html"),
        (fleet.metrics_file.is_some(), "--metrics-file"),
        (fleet.publish, "--publish"),
    ] {
        if given {
            anyhow::bail!("{flag} is not supported by `fleet roce pairs` yet (use -o json)");
        }
    }
    let params = params(fleet, args)?;
    params.validate()?;
    let plan = plan(&targets, &args.pattern, fleet.parallel)?;
    let cancel = Cancel::new();
    let watcher = tokio::spawn(cancel_on_ctrl_c(cancel.clone()));
    let job = {
        let cancel = cancel.clone();
        tokio::task::spawn_blocking(move || {
            pairs::run(&targets, &plan, &params, &cancel, &mut progress)
        })
    };
    let report = job.await.context("the pair runs stopped")?;
    watcher.abort();
    let report = report?;
    if env.json() {
        output::json(&report)?;
    } else {
        print_report(&report)?;
    }
    Ok(if report.cancelled {
        Exit::PassThrough(130)
    } else {
        match report.verdict {
            PairVerdict::Pass => Exit::Success,
            PairVerdict::Fail => Exit::Failed,
            PairVerdict::Inconclusive => Exit::Inconclusive,
        }
    })
}

/// The first Ctrl-C stops the remote runs and keeps what finished; a second one quits.
async fn cancel_on_ctrl_c(cancel: Cancel) {
    if tokio::signal::ctrl_c().await.is_err() {
        return;
    }
    output::diag("interrupted: stopping the remote runs (Ctrl-C again to quit at once)");
    cancel.cancel();
    if tokio::signal::ctrl_c().await.is_ok() {
        std::process::exit(130);
    }
}

/// Tells a person each port read, round and run of the pairs as it happens (an
/// [`dpu_host::observe::Observer`] of [`PairsEvent`]s through the closure impl).
fn progress(event: &PairsEvent<'_>) {
    match event {
        PairsEvent::Probed { host, port } => match port {
            Ok(p) => output::diag(&format!(
                "{host}: {}, line rate {}",
                p.endpoint,
                p.rate.as_ref().map_or("unknown", |r| r.text.as_str())
            )),
            Err(e) => output::diag(&format!("{host}: UNUSABLE: {e}")),
        },
        PairsEvent::RoundStarted {
            round,
            rounds,
            runs,
        } => {
            let list: Vec<String> = runs
                .iter()
                .map(|r| format!("{} → {}", r.client, r.server))
                .collect();
            output::diag(&format!("round {round}/{rounds}: {}", list.join(", ")));
        }
        PairsEvent::RunDone(run) => output::diag(&format!(
            "  {} → {} {} {} B: {} {}",
            run.from,
            run.to,
            run.test,
            run.size,
            num(run.bw_gbps, 2, " Gbit/s"),
            run.verdict
        )),
    }
}

fn num(v: Option<f64>, digits: usize, unit: &str) -> String {
    v.map_or_else(|| "-".to_owned(), |v| format!("{v:.digits$}{unit}"))
}

/// The counters' say on the path, with the packets behind it.
fn evidence(run: &PairRun) -> String {
    let word = match run.path {
        PathVerdict::Rdma => "RDMA",
        PathVerdict::NotRdma => "not RDMA",
        PathVerdict::Unknown => "unknown",
    };
    match (run.packets_delta, run.payload_packets) {
        _ if run.error.is_some() => "-".to_owned(),
        (Some(moved), Some(payload)) => format!("{word} ({moved} of {payload} pkts)"),
        _ => word.to_owned(),
    }
}

fn print_report(report: &PairsReport) -> anyhow::Result<()> {
    let mut table = output::table([
        "from",
        "to",
        "direction",
        "test",
        "size",
        "Gbit/s",
        "% of line rate",
        "path evidence",
        "verdict",
    ]);
    for run in &report.runs {
        let verdict = match run.reasons.as_slice() {
            [] => run.verdict.to_string(),
            reasons => format!("{}: {}", run.verdict, reasons.join("; ")),
        };
        table.add_row(vec![
            run.from.clone(),
            run.to.clone(),
            match run.direction {
                Direction::Forward => "forward",
                Direction::Reverse => "reverse",
            }
            .to_owned(),
            run.test.clone(),
            run.size.to_string(),
            num(run.bw_gbps, 2, ""),
            num(run.percent_of_line_rate, 1, ""),
            evidence(run),
            verdict,
        ]);
    }
    output::print_table(&table)?;
    // Per rate, how many runs were held to it (each run's source is in -o json).
    let mut rates: Vec<(String, usize)> = Vec::new();
    for run in &report.runs {
        let what = match &run.line_rate {
            Some(r) if r.source == "--line-rate-gbps" => {
                format!("{} Gbit/s, from --line-rate-gbps", r.gbps)
            }
            Some(r) => format!(
                "{} Gbit/s, the lower of the two ports' sysfs `rate`",
                r.gbps
            ),
            None => "unknown (a port has no sysfs `rate`)".to_owned(),
        };
        match rates.iter_mut().find(|(w, _)| *w == what) {
            Some((_, n)) => *n += 1,
            None => rates.push((what, 1)),
        }
    }
    for (what, n) in rates {
        output::line(&format!("line rate {what}: {n} run(s)"))?;
    }
    for host in report.hosts.iter().filter(|h| h.error.is_some()) {
        output::line(&format!(
            "unusable {}: {}",
            host.name,
            host.error.as_deref().unwrap_or_default()
        ))?;
    }
    for skipped in &report.skipped {
        output::line(&format!("skipped {}: {}", skipped.name, skipped.reason))?;
    }
    for run in &report.not_run {
        output::line(&format!(
            "not run (interrupted): {} → {} (round {})",
            run.client, run.server, run.round
        ))?;
    }
    for finding in &report.findings {
        output::line(&finding.text)?;
    }
    let (pass, fail, inconclusive) = report.counts();
    output::line(&format!(
        "{} pair(s) ({}), {} run(s) in {} round(s): {pass} PASS, {fail} FAIL, {inconclusive} INCONCLUSIVE; verdict: {}{}",
        report.pairs.len(),
        report.settings.pattern,
        report.runs.len(),
        report.rounds,
        report.verdict,
        if report.cancelled { " (interrupted)" } else { "" }
    ))
}
