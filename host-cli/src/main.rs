//! `dpuctl`: the host-side CLI for BlueField DPUs.
//!
//! Owns: the command surface, talking to `dpu-agent` as a gRPC client, host-side checks
//! and proofs, and presenting results (tables, JSON, exit codes). Must not touch: the
//! agent's internals (it shares only `dpu-proto` and the read-only `dpu-probe` with it),
//! and it never builds a shell command line from user input.

mod agent;
mod check;
mod cli;
mod commands;
// The plan and object builders land first; `commands::demo` wires them up next.
#[allow(dead_code)]
mod demo;
mod outcome;
mod output;
mod prove;
mod roce;
mod snapshot_wire;
mod storage_read;

use std::process::ExitCode;

use clap::Parser;
use outcome::Outcome;
use tracing_subscriber::EnvFilter;

fn main() -> ExitCode {
    let cli = cli::Cli::parse();
    init_logging(cli.verbose);
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("dpuctl: error: cannot start the async runtime: {e}");
            return Outcome::Usage.into();
        }
    };
    match runtime.block_on(commands::run(&cli)) {
        Ok(outcome) => outcome.into(),
        Err(e) => {
            eprintln!("dpuctl: error: {e:#}");
            Outcome::Usage.into()
        }
    }
}

/// Warnings only by default: stdout is for data, stderr for what went wrong.
fn init_logging(verbose: u8) {
    let level = match verbose {
        0 => "warn",
        1 => "info",
        2 => "debug",
        _ => "trace",
    };
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(level));
    // Only fails if a subscriber is already installed, which cannot happen here.
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .try_init();
}
