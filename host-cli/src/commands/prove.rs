//! `dpuctl prove ...`: flags to a proof's parameters, the proof (dpu-host), and its report
//! as a table or JSON, an optional HTML file, and the exit code (0 only for PROVEN).

use std::path::Path;
use std::time::Duration;

use anyhow::Context as _;
use dpu_host::accounting::{Outcome as LineOutcome, Verdict};
use dpu_host::prove::{self, ForwardingLevel, ProofReport, StorageProof, SwitchProof};

use super::env::Env;
use crate::cli::{self, ProveCommand, ProveStorageArgs, ProveSwitchArgs};
use crate::outcome::Outcome;
use crate::output;

pub(crate) async fn run(env: &Env<'_>, cmd: &ProveCommand) -> anyhow::Result<Outcome> {
    let (report, html, metrics) = match cmd {
        ProveCommand::Storage(args) => (
            prove::prove_storage(&env.session, &storage_proof(args)?).await?,
            args.report.as_deref(),
            args.metrics_file.as_deref(),
        ),
        ProveCommand::Switch(args) => (
            prove::prove_switch(&env.session, &switch_proof(args)?).await?,
            args.report.as_deref(),
            args.metrics_file.as_deref(),
        ),
        ProveCommand::Qos(args) => return super::prove_qos::run(env, args).await,
    };
    let outcome = finish(env, &report, html)?;
    // After the report is out: a file that cannot be written is then exit 2 with the
    // results still shown.
    if let Some(path) = metrics {
        dpu_host::textfile::proof(&report, std::time::SystemTime::now()).write_atomic(path)?;
    }
    Ok(outcome)
}

fn idle(seconds: f64) -> anyhow::Result<Duration> {
    Duration::try_from_secs_f64(seconds).context("--idle must be a number of seconds")
}

fn storage_proof(args: &ProveStorageArgs) -> anyhow::Result<StorageProof> {
    Ok(StorageProof {
        device: args.device.clone(),
        volume: args.volume.clone(),
        size: args.size,
        bs: args.bs,
        iodepth: args.iodepth,
        idle: idle(args.idle)?,
        trials: args.trials,
        far_end: args.target_agent.clone(),
        witnesses: args.witnesses,
        waive: args
            .waive
            .iter()
            .map(|w| match w {
                cli::StorageWaiver::HostRdma => prove::StorageWaiver::HostRdma,
            })
            .collect(),
    })
}

fn switch_proof(args: &ProveSwitchArgs) -> anyhow::Result<SwitchProof> {
    Ok(SwitchProof {
        interface: args.interface.clone(),
        peer: args.peer,
        representor: args.representor.clone(),
        packets: args.packets,
        require: match args.require {
            cli::OffloadLevel::Datapath => ForwardingLevel::Datapath,
            cli::OffloadLevel::Tc => ForwardingLevel::TcSoftware,
            cli::OffloadLevel::Hardware => ForwardingLevel::Hardware,
        },
        idle: idle(args.idle)?,
        trials: args.trials,
        far_end: args
            .target_agent
            .clone()
            .zip(args.target_interface.clone())
            .map(|(agent, interface)| prove::Receiver { agent, interface }),
        witnesses: args.witnesses,
    })
}

fn number(value: Option<u64>) -> String {
    value.map_or_else(|| "-".to_owned(), |v| v.to_string())
}

/// Prints the report (table or JSON), writes the HTML file if asked, and maps the
/// verdict to the exit code: 0 only for PROVEN.
pub(super) fn finish(
    env: &Env<'_>,
    report: &ProofReport,
    html_path: Option<&Path>,
) -> anyhow::Result<Outcome> {
    if let Some(path) = html_path {
        std::fs::write(path, prove::html::render(report))
            .with_context(|| format!("cannot write the report {}", path.display()))?;
    }
    if env.json() {
        output::json(report)?;
    } else {
        output::line(&format!("{}: {}", report.proof, report.workload))?;
        let mut table = output::table([
            "expectation",
            "side",
            "before",
            "after",
            "delta",
            "background",
            "expected",
            "result",
        ]);
        for line in &report.lines {
            let side = line.expectation.select.side.as_str();
            let result = match &line.outcome {
                LineOutcome::Met => "met".to_owned(),
                LineOutcome::NotMet(_) => "NOT MET".to_owned(),
                LineOutcome::Inconclusive(_) => "inconclusive".to_owned(),
                LineOutcome::Waived(_) => "WAIVED".to_owned(),
            };
            table.add_row([
                format!(
                    "{}\n{} {}",
                    line.expectation.name,
                    line.expectation.select.source.as_str(),
                    line.expectation.select.counter
                ),
                side.to_owned(),
                number(line.before),
                number(line.after),
                number(line.delta),
                number(line.background),
                line.expectation.rule.describe(),
                result,
            ]);
        }
        output::print_table(&table)?;
        if !report.trials.is_empty() {
            let mut trials = output::table(["trial", "work", "seconds", "verdict"]);
            for trial in &report.trials {
                trials.add_row([
                    trial.trial.to_string(),
                    trial.work.to_string(),
                    format!("{:.2}", trial.seconds),
                    trial.verdict.as_str().to_owned(),
                ]);
            }
            output::print_table(&trials)?;
        }
        for line in &report.lines {
            if let LineOutcome::NotMet(why)
            | LineOutcome::Inconclusive(why)
            | LineOutcome::Waived(why) = &line.outcome
            {
                output::line(&format!("- {}: {why}", line.expectation.name))?;
            }
        }
        for note in &report.notes {
            output::line(&format!("note: {note}"))?;
        }
        output::line(&format!(
            "verdict: {} ({} witness{}: {})",
            report.verdict.as_str(),
            report.witnesses.len(),
            if report.witnesses.len() == 1 {
                ""
            } else {
                "es"
            },
            report.witnesses.join(", ")
        ))?;
    }
    Ok(match report.verdict {
        Verdict::Proven => Outcome::Success,
        Verdict::NotProven => Outcome::Failed,
        Verdict::Inconclusive => Outcome::Inconclusive,
    })
}
