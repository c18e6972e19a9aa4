//! `dpuctl prove ...`: flags to a proof's parameters, the proof (dpu-host), and its report
//! as a table or JSON, an optional HTML file, and the exit code (0 only for PROVEN).

use std::time::Duration;

use anyhow::Context as _;
use dpu_host::prove::{self, ForwardingLevel, StorageParams, SwitchParams};

use super::env::Env;
use super::proof_report;
use crate::cli::{self, ProveCommand, ProveStorageArgs, ProveSwitchArgs};
use crate::exit::Exit;

pub(crate) async fn run(env: &Env<'_>, cmd: &ProveCommand) -> anyhow::Result<Exit> {
    let (report, html, metrics) = match cmd {
        ProveCommand::Storage(args) => (
            prove::storage::run(&env.session, &storage_params(args)?).await?,
            args.report.as_deref(),
            args.metrics_file.as_deref(),
        ),
        ProveCommand::Switch(args) => (
            prove::switch::run(&env.session, &switch_params(args)?).await?,
            args.report.as_deref(),
            args.metrics_file.as_deref(),
        ),
        ProveCommand::Qos(args) => return super::prove_qos::run(env, args).await,
    };
    let outcome = proof_report::finish(env, &report, html)?;
    // After the report is out: a file that cannot be written is then exit 2 with the
    // results still shown.
    if let Some(path) = metrics {
        report
            .textfile(std::time::SystemTime::now())
            .write_atomic(path)?;
    }
    Ok(outcome)
}

fn idle(seconds: f64) -> anyhow::Result<Duration> {
    Duration::try_from_secs_f64(seconds).context("--idle must be a number of seconds")
}

fn storage_params(args: &ProveStorageArgs) -> anyhow::Result<StorageParams> {
    Ok(StorageParams {
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

fn switch_params(args: &ProveSwitchArgs) -> anyhow::Result<SwitchParams> {
    Ok(SwitchParams {
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
