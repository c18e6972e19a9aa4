//! `dpuctl`: the host-side CLI for BlueField DPUs.
//!
//! Owns: the command surface (flags, help, completions), mapping flags onto the parameters
//! of `dpu-host` (the library that does the work: the agent session, proofs, checks, RoCE
//! runs, the read engine, the demo), and presenting what it returns (tables, JSON, HTML
//! files, progress on stderr, exit codes). Must not touch: the agent's internals (it
//! shares only `dpu-proto` and the read-only `dpu-probe` with it), and it never builds a
//! shell command line from user input.

mod capture_cli;
mod cli;
mod commands;
mod demo_args;
mod exit;
mod experiment_cli;
mod fleet_cli;
mod fleet_roce_cli;
mod output;
mod prove_qos_cli;
mod report;
mod storage_paths_cli;
mod storage_qos_cli;
mod storage_virtio_blk_cli;

use std::io::IsTerminal as _;
use std::process::ExitCode;

use exit::Exit;
use tracing_subscriber::EnvFilter;

fn main() -> ExitCode {
    let cli = cli::Cli::parse_argv();
    init_logging(cli.verbose);
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => {
            output::diag(&format!(
                "dpuctl: error: cannot start the async runtime: {e}"
            ));
            return Exit::Usage.into();
        }
    };
    match runtime.block_on(commands::run(&cli)) {
        Ok(outcome) => outcome.into(),
        // Nobody reads any more: nothing to say, and nobody to say it to on stdout.
        Err(e) if output::is_stdout_closed(&e) => Exit::ReaderGone.into(),
        Err(e) => {
            for line in report::error_lines(&e) {
                output::diag(&line);
            }
            Exit::Usage.into()
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
        .with_ansi(ansi_wanted(
            std::env::var_os("NO_COLOR").as_deref(),
            std::io::stderr().is_terminal(),
        ))
        .try_init();
}

/// Colour codes only for a person at a terminal who has not set `NO_COLOR` (no-color.org:
/// any non-empty value), never into a file or a pipe. clap's help and errors and
/// indicatif's bars follow `NO_COLOR` by themselves; tables are never coloured.
fn ansi_wanted(no_color: Option<&std::ffi::OsStr>, stderr_is_terminal: bool) -> bool {
    stderr_is_terminal && no_color.is_none_or(|v| v.is_empty())
}

#[cfg(test)]
mod tests {
    use std::ffi::OsStr;

    use super::ansi_wanted;

    #[test]
    fn colour_only_at_a_terminal_without_no_color() {
        assert!(ansi_wanted(None, true));
        assert!(ansi_wanted(Some(OsStr::new("")), true));
        assert!(!ansi_wanted(Some(OsStr::new("1")), true));
        assert!(!ansi_wanted(None, false));
        assert!(!ansi_wanted(Some(OsStr::new("")), false));
    }
}
