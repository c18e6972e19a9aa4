//! `dpuctl fleet ...`: the targets (inventory or Kubernetes), the command on every one of
//! them (dpu-host's fleet runner), and the aggregated report as a table, JSON or HTML.
//!
//! Exit codes, for the whole fleet: 0 when every node passed (warnings and skips
//! included), 1 when any node failed or was unreachable, 3 when the worst is
//! INCONCLUSIVE, 2 for bad input (nothing was run), 130 when interrupted (what finished
//! is printed).

use std::time::SystemTime;

use anyhow::Context as _;
use dpu_host::fleet::deadline::{RunOptionsError, Workload};
use dpu_host::fleet::dpu_checks::DpuExpectations;
use dpu_host::fleet::experiment::FleetExperimentReport;
use dpu_host::fleet::on_host::OnHost;
use dpu_host::fleet::report::{FleetReport, NodeStatus};
use dpu_host::fleet::runner::{run_fleet, unreachable, RunOptions};
use dpu_host::fleet::select::{select, Selector};
use dpu_host::fleet::target::Target;
use dpu_host::fleet::{html, inventory, ops};
use dpu_host::remote::ssh::Ssh;
use dpu_host::remote::watched::Cancel;
use dpu_proto::v1;

use super::env::Env;
use crate::exit::Exit;
use crate::fleet_cli::{
    deadline_refused, FleetArgs, FleetCommand, FleetProveCommand, FleetTargets, OnHostArgs,
};
use crate::output;
use dpu_host::fleet::not_ready::NotReady;

pub(crate) async fn run(env: &Env<'_>, args: &FleetArgs) -> anyhow::Result<Exit> {
    let fleet = &args.targets;
    // Everything that can be refused is refused before any node is asked.
    let selectors = fleet
        .select
        .iter()
        .map(|term| Selector::parse(term))
        .collect::<Result<Vec<_>, _>>()?;
    let options = run_options(env, fleet, &args.command)?;
    if let FleetCommand::Experiment(experiment) = &args.command {
        super::fleet_experiment::check_plan(experiment)?;
    }
    if fleet.publish && !cfg!(feature = "kube") {
        anyhow::bail!("--publish needs dpuctl built with `--features kube`");
    }
    let (targets, not_ready) = load_targets(env, fleet).await?;
    let targets = select(targets, &selectors)?;
    let report = match &args.command {
        FleetCommand::Roce(cmd) => {
            return super::fleet_roce::run(env, fleet, targets, cmd).await;
        }
        FleetCommand::Health => {
            run_fleet("health", &targets, &options, interrupted(), |s, _| {
                ops::health(s)
            })
            .await
        }
        FleetCommand::Info => {
            run_fleet("info", &targets, &options, interrupted(), |s, _| {
                ops::info(s)
            })
            .await
        }
        FleetCommand::Check(check) => {
            let expect = DpuExpectations { mtu: check.mtu };
            let expect = &expect;
            run_fleet(
                "check",
                &targets,
                &options,
                interrupted(),
                |s, _| async move { ops::check(s, expect).await },
            )
            .await
        }
        FleetCommand::Prove(cmd) => prove(&targets, &options, cmd).await,
        FleetCommand::Experiment(experiment) => {
            let on_host = on_host(&experiment.on_host);
            super::fleet_experiment::run(&targets, &options, on_host, interrupted(), experiment)
                .await
        }
        FleetCommand::Counters(counters) => {
            let selectors: Vec<v1::CounterSelector> = counters
                .sources
                .iter()
                .map(dpu_host::snapshot_wire::AgentSelector::to_wire)
                .collect();
            let selectors = &selectors;
            let filter = counters.filter.as_deref();
            run_fleet("counters", &targets, &options, interrupted(), |s, _| {
                ops::counters(s, selectors.clone(), filter)
            })
            .await
        }
    };
    let report = report.with_not_ready(not_ready, &selectors);
    match &args.command {
        FleetCommand::Experiment(_) => print_experiment(env, &report)?,
        _ => print_report(env, &report)?,
    }
    write_files(fleet, &report)?;
    if fleet.publish {
        super::fleet_publish::publish(fleet, &targets, &report, options.parallel).await?;
    }
    Ok(outcome(&report))
}

/// `fleet prove storage|switch`: the host's own dpuctl over ssh, on a blocking thread per
/// host (the ssh session); Ctrl-C stops every remote proof.
async fn prove(targets: &[Target], options: &RunOptions, cmd: &FleetProveCommand) -> FleetReport {
    let (proof, args) = match cmd {
        FleetProveCommand::Storage(args) => ("storage", args),
        FleetProveCommand::Switch(args) => ("switch", args),
    };
    let on_host = on_host(&args.on_host);
    let cancel = Cancel::new();
    let stop = cancel.clone();
    let interrupted = async move {
        interrupted().await;
        stop.cancel();
    };
    // The host's proof is stopped at the deadline by its own session; the runner waits a
    // little longer so that a stopped proof reads as "ran past its deadline".
    let limit = options.deadline;
    let options = options.with_proof_grace();
    let command = format!("{proof}-proof");
    run_fleet(&command, targets, &options, interrupted, |_, target| {
        let (on_host, target, cancel) = (on_host.clone(), target.clone(), cancel.clone());
        let words = args.args.clone();
        async move {
            let run = move || on_host.prove(&target, proof, &words, limit, &cancel);
            Ok(tokio::task::spawn_blocking(run)
                .await
                .unwrap_or_else(|e| unreachable(format!("the ssh session's thread failed: {e}"))))
        }
    })
    .await
}

/// How the fleet reaches each host's dpuctl.
fn on_host(args: &OnHostArgs) -> OnHost {
    OnHost {
        hop: Ssh::new(args.ssh.clone(), args.ssh_port, args.ssh_identity.clone()),
        dpuctl: args.dpuctl.clone(),
    }
}

/// `--parallel`, `--deadline` and the global `--timeout` as the runner's options (the
/// fleet's deadline policy: `dpu_host::fleet::deadline`).
fn run_options(
    env: &Env<'_>,
    fleet: &FleetTargets,
    command: &FleetCommand,
) -> anyhow::Result<RunOptions> {
    let (workload, parallel) = match command {
        FleetCommand::Prove(_) => (Workload::Proof, fleet.parallel),
        FleetCommand::Experiment(e) => (Workload::Experiment, usize::from(e.at_once)),
        _ => (Workload::Calls, fleet.parallel),
    };
    let deadline = fleet.deadline()?;
    RunOptions::for_workload(workload, parallel, deadline, env.session.agent().timeout()).map_err(
        |e| match e {
            RunOptionsError::NoParallelism => anyhow::anyhow!("--parallel must be at least 1"),
            RunOptionsError::ZeroDeadline => deadline_refused(),
        },
    )
}

/// The targets from `--inventory` or `--kube`, and (from `--kube`) the nodes whose agent
/// pod is not ready.
async fn load_targets(
    env: &Env<'_>,
    fleet: &FleetTargets,
) -> anyhow::Result<(Vec<Target>, Vec<NotReady>)> {
    if let Some(path) = &fleet.inventory {
        return Ok((inventory::load(path)?, Vec::new()));
    }
    if fleet.kube {
        return super::fleet_publish::discover(fleet, super::env::tls_files(env.cli)).await;
    }
    anyhow::bail!("name the fleet: --inventory FILE (docs/fleet.md has the format) or --kube")
}

/// Resolves on Ctrl-C; a runtime without signal handling never resolves.
async fn interrupted() {
    if tokio::signal::ctrl_c().await.is_err() {
        std::future::pending::<()>().await;
    }
}

/// The fleet's exit code: its worst node's.
fn outcome(report: &FleetReport) -> Exit {
    if report.cancelled {
        return Exit::PassThrough(130);
    }
    match report.worst() {
        NodeStatus::Pass | NodeStatus::Skip | NodeStatus::Warn => Exit::Success,
        NodeStatus::Inconclusive => Exit::Inconclusive,
        NodeStatus::Fail | NodeStatus::Unreachable | NodeStatus::Cancelled => Exit::Failed,
    }
}

/// `--html` and `--metrics-file`, after the report is out (a file that cannot be written
/// is then exit 2 with the report still shown).
fn write_files(fleet: &FleetTargets, report: &FleetReport) -> anyhow::Result<()> {
    if let Some(path) = &fleet.html {
        std::fs::write(path, html::page(report))
            .with_context(|| format!("cannot write {}", path.display()))?;
    }
    if let Some(path) = &fleet.metrics_file {
        report.textfile(SystemTime::now()).write_atomic(path)?;
    }
    Ok(())
}

/// How many names a group or drift line lists before "+N more".
const NAMES_SHOWN: usize = 8;

fn print_report(env: &Env<'_>, report: &FleetReport) -> anyhow::Result<()> {
    if env.json() {
        return output::json(report);
    }
    // The most severe first, then by name; the JSON keeps target order.
    let mut table = output::table(["node", "result", "ms", "problem"]);
    for node in report.nodes_by_severity() {
        let problem = match node.problems.as_slice() {
            [] => node.skipped.clone().unwrap_or_default(),
            [only] => format!("{}: {}", only.check, only.detail),
            [first, rest @ ..] => {
                format!("{}: {} (+{} more)", first.check, first.detail, rest.len())
            }
        };
        table.add_row([
            node.name.clone(),
            node.status.label().to_owned(),
            format!("{:.0}", node.elapsed_ms),
            problem,
        ]);
    }
    output::print_table(&table)?;
    for group in &report.groups {
        output::line(&format!(
            "{} {} node(s): {} ({}): {}",
            group.status.label(),
            group.nodes.len(),
            group.cause,
            group.check,
            names(group.nodes.iter().map(String::as_str))
        ))?;
    }
    for drift in &report.drift {
        output::line(&format!(
            "drift {}: {} on {} node(s); {}",
            drift.fact,
            drift.majority,
            drift.majority_nodes,
            names(
                drift
                    .odd
                    .iter()
                    .map(|(node, value)| format!("{node} {value}"))
            )
        ))?;
    }
    output::line(&format!(
        "{} of {} node(s) in {:.1} s: {}{}",
        report.command,
        report.targets,
        report.elapsed_ms / 1e3,
        report.headline(),
        if report.cancelled {
            " (interrupted: the rest are CANCELLED)"
        } else {
            ""
        }
    ))
}

/// `fleet experiment`: the table and the distribution of verdicts and effects, or both
/// as one JSON document (the rows' keys and `distribution`).
fn print_experiment(env: &Env<'_>, report: &FleetReport) -> anyhow::Result<()> {
    let report = FleetExperimentReport::new(report.clone());
    if env.json() {
        return output::json(&report);
    }
    print_report(env, &report.fleet)?;
    for line in super::fleet_experiment::distribution_lines(&report.distribution) {
        output::line(&line)?;
    }
    Ok(())
}

/// The first few names, then how many more.
fn names<S: AsRef<str>>(all: impl ExactSizeIterator<Item = S>) -> String {
    let total = all.len();
    let shown: Vec<String> = all
        .take(NAMES_SHOWN)
        .map(|s| s.as_ref().to_owned())
        .collect();
    if total > NAMES_SHOWN {
        format!("{} (+{} more)", shown.join(", "), total - NAMES_SHOWN)
    } else {
        shown.join(", ")
    }
}
