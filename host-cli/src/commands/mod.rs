//! Command handlers, one file per area.

mod capture;
mod check;
mod counters;
mod demo;
mod dpu;
mod env;
mod experiment;
mod fleet;
mod fleet_experiment;
mod fleet_publish;
mod fleet_roce;
mod lab;
mod proof_report;
mod prove;
mod prove_qos;
mod read;
mod roce;
mod roce_dcb;
mod roce_perf;
mod shell;
mod storage;
mod storage_paths;
mod storage_virtio_blk;
mod switch;

use std::time::Duration;

use anyhow::Context as _;
use dpu_host::agent::session::{AgentConnection, Session};

use crate::cli::{Cli, Command};
use crate::exit::Exit;
use env::{tls_files, Env};

/// Runs the selected command.
pub(crate) async fn run(cli: &Cli) -> anyhow::Result<Exit> {
    let timeout = Duration::try_from_secs_f64(cli.timeout)
        .ok()
        .filter(|t| !t.is_zero())
        .context("--timeout must be a positive number of seconds")?;
    let env = Env {
        cli,
        session: Session::new(
            AgentConnection::new(cli.agent.clone(), tls_files(cli), timeout),
            &cli.sys_root,
        ),
    };
    match &cli.command {
        Command::Dpu(cmd) => dpu::run(&env, cmd).await,
        Command::Storage(cmd) => storage::run(&env, cmd).await,
        Command::Switch(cmd) => switch::run(&env, cmd).await,
        Command::Check(args) => check::run(&env, args).await,
        Command::Roce(cmd) => roce::run(&env, cmd),
        Command::Prove(cmd) => prove::run(&env, cmd).await,
        Command::Demo(cmd) => demo::run(&env, cmd).await,
        Command::Fleet(args) => fleet::run(&env, args).await,
        Command::Lab(args) => lab::run(args),
        Command::Experiment(cmd) => experiment::run(cli.output, &env.session.sys_root(), cmd).await,
        Command::Capture(args) => capture::run(cli, args),
        // Neither contacts the agent (the session dials on first use only).
        Command::Completions(args) => shell::completions(args),
        Command::Man(args) => shell::man(args),
    }
}
