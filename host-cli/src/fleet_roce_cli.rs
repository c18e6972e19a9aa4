//! `dpuctl fleet roce ...` arguments.

use std::path::PathBuf;

use clap::{Args, Subcommand};
use dpu_host::fleet::pairs::pattern::PairPattern;

/// `fleet roce` subcommands.
#[derive(Debug, Subcommand)]
pub(crate) enum FleetRoceCommand {
    /// RDMA bandwidth between host pairs (ring, all pairs, within or across a label's
    /// groups), both directions, each run made by `dpuctl roce perf` on its client host
    /// over ssh and judged against the ports' line rate with its RDMA counter evidence;
    /// then which node or link is slow.
    #[command(
        after_help = "Examples:\n  dpuctl fleet --inventory fleet.toml roce pairs\n  dpuctl fleet --inventory fleet.toml roce pairs --pattern within:rail --sizes 1048576\n  dpuctl -o json fleet --inventory fleet.toml --select rack=r07 roce pairs --pattern all-pairs\n\nEvery host needs `ssh` in the inventory (BatchMode: keys set up), dpuctl and perftest, and\nmust reach its peers' `ssh` destinations itself. Exit 0: every run PASS; 1: a run FAILED;\n3: inconclusive without failures; 2: bad input; 130: interrupted (what finished is printed)."
    )]
    Pairs(Box<FleetPairsArgs>),
}

/// `fleet roce pairs` flags.
#[derive(Debug, Args)]
pub(crate) struct FleetPairsArgs {
    /// Which pairs: ring (each host with the next), all-pairs, within:LABEL (pairs in each
    /// group of the label, e.g. within:rail) or across:LABEL (pairs between groups).
    #[arg(long, value_name = "PATTERN", default_value = "ring", value_parser = parse_pattern)]
    pub(crate) pattern: PairPattern,
    /// The share of the line rate a run must reach to PASS, in %.
    #[arg(long, value_name = "PERCENT", default_value_t = 90.0)]
    pub(crate) line_rate_percent: f64,
    /// Hold every run to this rate, in Gbit/s, instead of the lower of the two ports'
    /// sysfs `rate`.
    #[arg(long, value_name = "GBPS")]
    pub(crate) line_rate_gbps: Option<f64>,
    /// RDMA bandwidth tests, comma separated: write_bw, send_bw, read_bw.
    #[arg(long, value_delimiter = ',', default_value = "write_bw")]
    pub(crate) tests: Vec<String>,
    /// Message sizes in bytes, comma separated; each is judged on its own.
    #[arg(long, value_delimiter = ',', default_values_t = [1048576_u64])]
    pub(crate) sizes: Vec<u64>,
    /// perftest iterations per run (`-n`).
    #[arg(long, default_value_t = 1000)]
    pub(crate) iterations: u64,
    /// First TCP port the servers listen on.
    #[arg(long, default_value_t = 18515)]
    pub(crate) base_port: u16,
    /// Limit for one perftest run on a host, in seconds.
    #[arg(long, default_value_t = 300)]
    pub(crate) run_timeout: u64,
    /// The dpuctl program on the hosts: a name on their PATH or a path.
    #[arg(long, value_name = "PROGRAM", default_value = "dpuctl")]
    pub(crate) dpuctl: String,
    /// ssh program (tests point this at a stand-in).
    #[arg(long, default_value = "ssh", env = "DPUCTL_SSH")]
    pub(crate) ssh: PathBuf,
    /// ssh port of the hosts, from here.
    #[arg(long)]
    pub(crate) ssh_port: Option<u16>,
    /// ssh identity file, from here.
    #[arg(long)]
    pub(crate) ssh_identity: Option<PathBuf>,
}

fn parse_pattern(text: &str) -> Result<PairPattern, String> {
    text.parse()
        .map_err(|e: dpu_host::fleet::pairs::pattern::PatternError| e.to_string())
}
