//! The arguments of `dpuctl experiment`, apart from `cli.rs` so the command list there
//! only names them.

use std::path::PathBuf;

use clap::{Args, Subcommand};

/// `dpuctl experiment ...`: A/B/A tuning experiments with a guaranteed revert.
#[derive(Debug, Subcommand)]
pub(crate) enum ExperimentCommand {
    /// Run an A/B/A plan: set the knob to A, B, A (or A B A B A), measure each phase's
    /// trials, put the knob back, and say whether B made a difference the noise cannot
    /// explain. Ctrl-C and SIGTERM restore the knob; a run killed outright leaves a
    /// journal the next run (or `recover`) undoes first.
    Run(ExperimentRunArgs),
    /// Put back a knob a killed experiment left changed (its journal), unless that
    /// experiment is still running.
    Recover(ExperimentJournalArgs),
    /// Check a plan file and print what it would do, changing nothing.
    Check(ExperimentCheckArgs),
}

/// `dpuctl experiment run PLAN.toml`.
#[derive(Debug, Args)]
pub(crate) struct ExperimentRunArgs {
    /// The plan (TOML; docs/experiments.md).
    #[arg(value_name = "PLAN.toml")]
    pub(crate) plan: PathBuf,
    #[command(flatten)]
    pub(crate) journal: ExperimentJournalArgs,
    /// Also write the page with the plot to FILE (self-contained HTML).
    #[arg(long, value_name = "FILE")]
    pub(crate) html: Option<PathBuf>,
    /// Also write the verdict and medians as Prometheus metrics to FILE.prom.
    #[arg(long, value_name = "FILE.prom")]
    pub(crate) metrics_file: Option<PathBuf>,
    /// The ssh program a `roce-perf` measurement reaches its peer with (tests point this
    /// at a stand-in).
    #[arg(long, default_value = "ssh", env = "DPUCTL_SSH")]
    pub(crate) ssh: PathBuf,
}

/// Where the revert journal is.
#[derive(Debug, Args)]
pub(crate) struct ExperimentJournalArgs {
    /// The revert journal.
    #[arg(long, value_name = "PATH", default_value = dpu_host::experiment::journal::DEFAULT_JOURNAL)]
    pub(crate) journal: PathBuf,
}

/// `dpuctl experiment check PLAN.toml`.
#[derive(Debug, Args)]
pub(crate) struct ExperimentCheckArgs {
    /// The plan (TOML).
    #[arg(value_name = "PLAN.toml")]
    pub(crate) plan: PathBuf,
}
