//! Command handlers, one file per area.

mod counters;
mod demo;
mod dpu;
mod lab;
mod roce;
mod roce_dcb;
pub(crate) mod roce_perf;
mod storage;
mod switch;

use std::time::Duration;

use anyhow::Context as _;
use tonic::transport::Channel;

use crate::cli::{Cli, Command, OutputFormat};
use crate::outcome::Outcome;

/// What every handler needs from the global flags.
#[derive(Debug)]
pub(crate) struct Env<'a> {
    pub(crate) cli: &'a Cli,
    pub(crate) timeout: Duration,
}

impl Env<'_> {
    pub(crate) fn json(&self) -> bool {
        self.cli.output == OutputFormat::Json
    }

    /// The client certificate flags, when all three are given.
    pub(crate) fn tls_files(&self) -> Option<crate::agent::TlsFiles> {
        match (&self.cli.ca, &self.cli.cert, &self.cli.key) {
            (Some(ca), Some(cert), Some(key)) => Some(crate::agent::TlsFiles {
                ca: ca.clone(),
                cert: cert.clone(),
                key: key.clone(),
                name: self.cli.tls_name.clone(),
            }),
            _ => None,
        }
    }

    pub(crate) async fn channel(&self) -> anyhow::Result<Channel> {
        crate::agent::connect(&self.cli.agent, self.tls_files().as_ref(), self.timeout).await
    }
}

/// Runs the selected command.
pub(crate) async fn run(cli: &Cli) -> anyhow::Result<Outcome> {
    let timeout = Duration::try_from_secs_f64(cli.timeout)
        .ok()
        .filter(|t| !t.is_zero())
        .context("--timeout must be a positive number of seconds")?;
    let env = Env { cli, timeout };
    match &cli.command {
        Command::Dpu(cmd) => dpu::run(&env, cmd).await,
        Command::Storage(cmd) => storage::run(&env, cmd).await,
        Command::Switch(cmd) => switch::run(&env, cmd).await,
        Command::Check(args) => crate::check::run(&env, args).await,
        Command::Roce(cmd) => roce::run(&env, cmd),
        Command::Prove(cmd) => crate::prove::run(&env, cmd).await,
        Command::Demo(cmd) => demo::run(&env, cmd).await,
        Command::Lab(args) => lab::run(args),
    }
}

/// Turns a gRPC status into an error that reads well: which call, the code, the agent's
/// message.
pub(crate) fn rpc_error(rpc: &str) -> impl Fn(tonic::Status) -> anyhow::Error + '_ {
    move |status| anyhow::anyhow!("{rpc} failed: {:?}: {}", status.code(), status.message())
}
