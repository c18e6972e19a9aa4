//! `dpuctl fleet ...` arguments: where the targets come from, how many are asked at once,
//! and the per-command flags. Handlers live in `commands/fleet*.rs`.

use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, Subcommand};

/// `fleet` arguments: the targets and the subcommand.
#[derive(Debug, Args)]
pub(crate) struct FleetArgs {
    #[command(flatten)]
    pub(crate) targets: FleetTargets,
    #[command(subcommand)]
    pub(crate) command: FleetCommand,
}

/// Where the fleet's targets come from, which of them are asked, and how.
#[derive(Debug, Args)]
pub(crate) struct FleetTargets {
    /// The inventory: a TOML file of targets (docs/fleet.md has the format).
    #[arg(long, value_name = "FILE", env = "DPUCTL_INVENTORY")]
    pub(crate) inventory: Option<PathBuf>,

    /// Discover the targets in Kubernetes instead: the agent DaemonSet's pods (in-cluster
    /// configuration, else the kubeconfig). Needs dpuctl built with `--features kube`.
    #[arg(long, conflicts_with = "inventory")]
    pub(crate) kube: bool,
    /// The namespace of the agent's DaemonSet, with --kube.
    #[arg(
        long,
        value_name = "NAMESPACE",
        default_value = "dpu-offload",
        requires = "kube"
    )]
    pub(crate) kube_namespace: String,
    /// The label selector of the agent's pods, with --kube.
    #[arg(
        long,
        value_name = "SELECTOR",
        default_value = "app.kubernetes.io/name=dpu-agent",
        requires = "kube"
    )]
    pub(crate) kube_selector: String,
    /// The agent's gRPC port on each node, with --kube (hostNetwork: the node's address).
    #[arg(long, value_name = "PORT", default_value_t = 50051, requires = "kube")]
    pub(crate) kube_agent_port: u16,

    /// Only the targets that match: NAME, KEY=VALUE or KEY!=VALUE on a label (`name` is
    /// the target's name); repeatable, all must match.
    #[arg(long, value_name = "SELECTOR")]
    pub(crate) select: Vec<String>,

    /// How many targets are asked at once.
    #[arg(long, value_name = "N", default_value_t = 128)]
    pub(crate) parallel: usize,

    /// Seconds each target gets for the whole command (connecting and every call); one
    /// that runs out is UNREACHABLE and the others go on. Default: 3 x --timeout, and
    /// 600 for `prove` (a proof moves real traffic).
    #[arg(long, value_name = "SECS")]
    pub(crate) deadline: Option<f64>,

    /// Also write the report as a self-contained HTML page.
    #[arg(long, value_name = "FILE")]
    pub(crate) html: Option<PathBuf>,

    /// Also write the results in the Prometheus textfile format (node_exporter's
    /// textfile collector), one series per node, atomically.
    #[arg(long, value_name = "FILE")]
    pub(crate) metrics_file: Option<PathBuf>,

    /// Write each node's result onto its Kubernetes Node as labels and a condition
    /// (`dpu-offload/...`), so the scheduler can steer away from broken nodes. Needs
    /// dpuctl built with `--features kube`.
    #[arg(long)]
    pub(crate) publish: bool,
}

impl FleetTargets {
    /// `--deadline SECS` as a duration, when given: positive and finite (the default for
    /// each kind of work is `dpu_host::fleet::deadline`'s).
    pub(crate) fn deadline(&self) -> anyhow::Result<Option<Duration>> {
        self.deadline
            .map(|secs| {
                Duration::try_from_secs_f64(secs)
                    .ok()
                    .filter(|d| !d.is_zero())
                    .ok_or_else(deadline_refused)
            })
            .transpose()
    }
}

/// The one refusal of `--deadline`, for a bad number and for the library's zero alike.
pub(crate) fn deadline_refused() -> anyhow::Error {
    anyhow::anyhow!("--deadline must be a positive number of seconds")
}

/// `fleet` subcommands: the single-node commands, asked of every target.
#[derive(Debug, Subcommand)]
pub(crate) enum FleetCommand {
    /// Every agent's health (`dpu health` on each node).
    Health,
    /// Every DPU's inventory (`dpu info` on each node), with drift from the majority.
    Info,
    /// The DPU-side checklist on every node: agent serving, RDMA ports ACTIVE, PCIe links
    /// at their maximum, MTU, RoCE v2 GID, with drift from the majority.
    Check(FleetCheckArgs),
    /// One counter snapshot from every agent; counter sources that could not be read are
    /// INCONCLUSIVE, and a node with fewer counters than the rest shows as drift.
    Counters(FleetCountersArgs),
    /// The offload proofs on every host: `dpuctl prove storage|switch` run by the host's
    /// own dpuctl over ssh, its verdict the node's.
    #[command(subcommand)]
    Prove(FleetProveCommand),
    /// The same A/B/A experiment on every host with `ssh` in the inventory, run by the
    /// host's own dpuctl (which reverts its knob), one host at a time or in rounds; each
    /// node's verdict and the fleet's distribution of verdicts and effects.
    #[command(
        after_help = "Examples:\n  dpuctl fleet --inventory fleet.toml experiment /etc/dpuctl/mtu.toml\n  dpuctl fleet --inventory fleet.toml --select rack=r1 experiment /etc/dpuctl/nccl-algo.toml --at-once 4 -- --journal /var/tmp/exp.journal\n\nA host's run that the fleet stops (Ctrl-C, --deadline, default 1 h) is stopped with\nSIGTERM and reverts its knob, as a local Ctrl-C would."
    )]
    Experiment(FleetExperimentArgs),
    /// RoCE between host pairs over ssh, judged against line rate.
    #[command(subcommand)]
    Roce(crate::fleet_roce_cli::FleetRoceCommand),
}

/// `fleet check` arguments.
#[derive(Debug, Args)]
pub(crate) struct FleetCheckArgs {
    /// The MTU every DPU data port must have; without it, MTU differences show as drift.
    #[arg(long, value_name = "BYTES")]
    pub(crate) mtu: Option<u32>,
}

/// `fleet counters` arguments.
#[derive(Debug, Args)]
pub(crate) struct FleetCountersArgs {
    /// What to read, as `dpu counters -s` takes it: rdma[:DEV[/PORT]], netdev[:IF],
    /// tc:IF, block[:DEV], volume[:ID], datapath[:NAME]. Repeatable; none: every source.
    // The comment above is clap's help text as users read it, not rustdoc markdown: its
    // brackets are the selector grammar, not links.
    #[allow(rustdoc::broken_intra_doc_links)]
    #[arg(short = 's', long = "source", value_name = "SELECTOR")]
    pub(crate) sources: Vec<dpu_host::snapshot_wire::AgentSelector>,
    /// Only counters whose name contains this text.
    #[arg(long, value_name = "TEXT")]
    pub(crate) filter: Option<String>,
}

/// `fleet prove` subcommands.
#[derive(Debug, Subcommand)]
pub(crate) enum FleetProveCommand {
    /// `dpuctl prove storage ARGS...` on every host with `ssh` in the inventory.
    #[command(
        after_help = "Examples:\n  dpuctl fleet --inventory fleet.toml prove storage -- --volume r0n1\n  dpuctl fleet --inventory fleet.toml --deadline 300 prove switch -- --interface ens1f0np0 --peer 10.0.0.2 --representor pf0hpf\n\nThe words after `--` go to the host's `dpuctl prove storage|switch` unchanged (each one\nquoted for the remote shell). The host's dpuctl reaches its agent as `host_agent` in the\ninventory says (else its own default)."
    )]
    Storage(FleetProveArgs),
    /// `dpuctl prove switch ARGS...` on every host with `ssh` in the inventory.
    Switch(FleetProveArgs),
}

/// How the fleet reaches each host's own dpuctl (`fleet prove`, `fleet experiment`).
#[derive(Debug, Args)]
pub(crate) struct OnHostArgs {
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

/// `fleet prove storage|switch` arguments.
#[derive(Debug, Args)]
pub(crate) struct FleetProveArgs {
    #[command(flatten)]
    pub(crate) on_host: OnHostArgs,
    /// The single-node proof's own flags, after `--`.
    #[arg(last = true, value_name = "PROVE_ARGS")]
    pub(crate) args: Vec<String>,
}

/// `fleet experiment` arguments.
#[derive(Debug, Args)]
pub(crate) struct FleetExperimentArgs {
    /// The plan (docs/experiments.md), checked here first; the hosts read the same
    /// absolute path, so it must be on every host (as configuration management puts it).
    #[arg(value_name = "PLAN.toml")]
    pub(crate) plan: PathBuf,
    /// How many hosts run the experiment at the same time: 1 (the default) runs them one
    /// after another, so no host's traffic disturbs another's measurement; N runs rounds
    /// of N. Not `--parallel`, whose default suits calls that only read.
    #[arg(long, value_name = "N", default_value_t = 1,
          value_parser = clap::value_parser!(u16).range(1..))]
    pub(crate) at_once: u16,
    #[command(flatten)]
    pub(crate) on_host: OnHostArgs,
    /// The single-node `experiment run`'s own flags, after `--` (e.g. `--journal PATH`).
    #[arg(last = true, value_name = "RUN_ARGS")]
    pub(crate) args: Vec<String>,
}
