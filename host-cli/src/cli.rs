//! The command tree. Argument definitions only; handlers live in `commands/`.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};
use dpu_proto::Endpoint;

const EXAMPLES: &str = "\
Examples:
  dpuctl dpu info                                   # what the DPU is, through the agent
  dpuctl --agent tcp:192.168.100.2:50051 dpu health # agent and backend health over TCP
  dpuctl -o json dpu info                           # the same as proto3 JSON

Exit codes:
  0  success (for `prove`: PROVEN)
  1  a check or proof failed, or something is unhealthy
  2  usage or environment error (bad flag, agent unreachable, call rejected)
  3  inconclusive (a counter was missing, reset or wrapped)
  141  stdout's reader went away (`| head`), quietly, as `ls | head` does
";

/// The help heading of the flags every subcommand takes, so that a subcommand's own
/// options come first in its `--help` instead of interleaved with these.
const GLOBAL: &str = "Global options";

/// Drive NVIDIA BlueField DPUs from the host: checks, storage, switch offload, RoCE,
/// offload proofs and demos, through the dpu-agent on the DPU's Arm cores.
#[derive(Debug, Parser)]
#[command(name = "dpuctl", version, after_help = EXAMPLES, arg_required_else_help = true)]
pub(crate) struct Cli {
    /// The agent: unix:PATH or tcp:HOST:PORT.
    #[arg(
        long,
        global = true,
        help_heading = GLOBAL,
        env = "DPUCTL_AGENT",
        value_name = "ENDPOINT",
        default_value_t = Endpoint::Unix(PathBuf::from(dpu_proto::DEFAULT_AGENT_SOCKET))
    )]
    pub(crate) agent: Endpoint,

    /// PEM CA that signed the agent's certificate: use TLS for tcp: agents.
    #[arg(long, global = true, help_heading = GLOBAL, env = "DPUCTL_CA", value_name = "FILE", requires_all = ["cert", "key"])]
    pub(crate) ca: Option<PathBuf>,
    /// PEM client certificate to present to the agent (its CN or a DNS SAN is the name
    /// the agent maps to a role).
    #[arg(
        long,
        global = true,
        help_heading = GLOBAL,
        env = "DPUCTL_CERT",
        value_name = "FILE",
        requires = "ca"
    )]
    pub(crate) cert: Option<PathBuf>,
    /// PEM key of the client certificate.
    #[arg(
        long,
        global = true,
        help_heading = GLOBAL,
        env = "DPUCTL_KEY",
        value_name = "FILE",
        requires = "ca"
    )]
    pub(crate) key: Option<PathBuf>,
    /// The name in the agent's certificate, when it is not the host in --agent.
    #[arg(long, global = true, help_heading = GLOBAL, env = "DPUCTL_TLS_NAME", value_name = "NAME")]
    pub(crate) tls_name: Option<String>,

    /// Output format for commands that print data.
    #[arg(short, long, global = true, help_heading = GLOBAL, value_enum, default_value_t = OutputFormat::Table)]
    pub(crate) output: OutputFormat,

    /// Read DIR/sys, DIR/proc and DIR/etc instead of the live system (host-side checks).
    #[arg(long, global = true, help_heading = GLOBAL, value_name = "DIR", default_value = "/")]
    pub(crate) sys_root: PathBuf,

    /// Seconds to wait for the agent to connect and for each call.
    #[arg(long, global = true, help_heading = GLOBAL, value_name = "SECS", default_value_t = 10.0)]
    pub(crate) timeout: f64,

    /// More log output on stderr (-v info, -vv debug, -vvv trace).
    #[arg(short, long, global = true, help_heading = GLOBAL, action = clap::ArgAction::Count)]
    pub(crate) verbose: u8,

    #[command(subcommand)]
    pub(crate) command: Command,
}

impl Cli {
    /// The command tree as dpuctl parses, completes and documents it: [`finish`] applied to
    /// the derived definition.
    pub(crate) fn tree() -> clap::Command {
        finish(<Self as clap::CommandFactory>::command())
    }

    /// Parses the process's arguments against [`Cli::tree`] (not the bare derived tree, so
    /// what `--help` shows is what is parsed), exiting with clap's message on bad input.
    pub(crate) fn parse_argv() -> Self {
        let matches = Self::tree().get_matches();
        <Self as clap::FromArgMatches>::from_arg_matches(&matches)
            .unwrap_or_else(|e| e.format(&mut Self::tree()).exit())
    }
}

/// Hides the global flags where they mean nothing: `completions` only prints a script, so
/// `--agent`, TLS, `--output`, `--sys-root` and the timeouts would only be noise in its
/// `--help` and in the completions offered after it. They are still accepted there, as
/// everywhere.
///
/// How: clap copies each global flag into every subcommand that has none of that name when
/// it builds the tree, so `completions` is given hidden copies first. (Changing the copies
/// after the build is not possible: clap's index of flags is made by the build.)
pub(crate) fn finish(cmd: clap::Command) -> clap::Command {
    let hidden: Vec<clap::Arg> = cmd
        .get_arguments()
        .filter(|a| a.is_global_set())
        .map(|a| a.clone().hide(true))
        .collect();
    cmd.mut_subcommand("completions", |sub| sub.args(hidden))
}

/// How data is printed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum OutputFormat {
    /// Aligned tables for people.
    Table,
    /// proto3 JSON for scripts (the same field names grpcurl prints).
    Json,
}

#[derive(Debug, Subcommand)]
pub(crate) enum Command {
    /// Host-side lab checklist: BlueField on PCIe, link, MTU, RDMA ports, GID table, agent.
    #[command(
        after_help = "Examples:\n  dpuctl check --list                 # what is checked, why, how to fix\n  dpuctl check --interface ens1f0np0 --mtu 9000\n  dpuctl check --device mlx5_0 --device mlx5_1   # two rails of a GPU server\n  dpuctl -o json check --no-agent     # host only, machine-readable\n  dpuctl check --all                  # every row, the skipped checks too\n  dpuctl check --no-agent --env > fabric.env && . ./fabric.env   # NCCL/UCX/perftest settings"
    )]
    Check(CheckArgs),
    /// The DPU through its agent: inventory, health, counters.
    #[command(subcommand)]
    Dpu(DpuCommand),
    /// NVMe-oF emulation through the agent, and the host-side read demo.
    #[command(subcommand)]
    Storage(StorageCommand),
    /// OVS bridges, ports, offload settings and flows on the DPU.
    #[command(subcommand)]
    Switch(SwitchCommand),
    /// RoCE performance and lossless-network checks.
    #[command(subcommand)]
    Roce(RoceCommand),
    /// Prove with before/after counters that traffic went through the offload.
    #[command(subcommand)]
    Prove(ProveCommand),
    /// Scripted end-to-end demos.
    #[command(subcommand)]
    Demo(DemoCommand),
    /// The single-node commands across a fleet of DPUs and hosts at once: one row per
    /// node, failures grouped by cause, drift from the majority.
    #[command(
        after_help = "Examples:\n  dpuctl fleet --inventory fleet.toml health\n  dpuctl fleet --inventory fleet.toml --select rack=r07 check --mtu 9000\n  dpuctl fleet --kube --publish check          # in the cluster (deploy/kubernetes/dpuctl-fleet.yaml)\n  dpuctl -o json fleet --inventory fleet.toml --html fleet.html info"
    )]
    Fleet(crate::fleet_cli::FleetArgs),
    /// A/B/A tuning experiments: change one knob, measure, return to the baseline, and
    /// believe a gain only when the statistics say so; the knob is always put back.
    #[command(
        subcommand,
        after_help = "Examples:\n  dpuctl experiment check mtu.toml\n  dpuctl experiment run mtu.toml --html mtu.html\n  dpuctl experiment recover            # after a run was killed"
    )]
    Experiment(crate::experiment_cli::ExperimentCommand),
    /// The built-in QEMU lab (a DPU stand-in with real kernel paths).
    Lab(LabArgs),
    /// Record the sysfs/procfs files dpuctl reads on this host into a redacted bundle
    /// whose root/ replays as a --sys-root (docs/hardware.md).
    #[command(
        after_help = "Examples:\n  dpuctl capture --out bundle            # then attach bundle/ to a bug report\n  dpuctl --sys-root bundle/root check --no-agent"
    )]
    Capture(crate::capture_cli::CaptureArgs),
    /// Print a shell completion script to stdout.
    #[command(
        after_help = "Examples:\n  dpuctl completions bash > ~/.local/share/bash-completion/completions/dpuctl\n  dpuctl completions zsh > ~/.zfunc/_dpuctl      # with fpath+=(~/.zfunc) in ~/.zshrc\n  dpuctl completions fish > ~/.config/fish/completions/dpuctl.fish\n\nThe packages install these for every user already."
    )]
    Completions(CompletionsArgs),
    /// Print a man page (roff) to stdout: dpuctl's, or a subcommand's (`dpuctl man dpu
    /// info`). Hidden: the packages carry the pages (scripts/gen-shell-assets.sh).
    #[command(hide = true)]
    Man(ManArgs),
}

/// `completions` arguments.
#[derive(Debug, Args)]
pub(crate) struct CompletionsArgs {
    /// The shell to complete for.
    #[arg(value_enum)]
    pub(crate) shell: clap_complete::Shell,
}

/// `man` arguments.
#[derive(Debug, Args)]
pub(crate) struct ManArgs {
    /// The subcommand whose page to print, e.g. `dpu info`; none: dpuctl's own page.
    #[arg(value_name = "SUBCOMMAND")]
    pub(crate) subcommand: Vec<String>,
    /// Write every page (dpuctl.1, dpuctl-check.1, dpuctl-dpu-info.1, ...) into DIR
    /// instead of printing one.
    #[arg(long, value_name = "DIR", conflicts_with = "subcommand")]
    pub(crate) out_dir: Option<PathBuf>,
}

#[derive(Debug, Subcommand)]
pub(crate) enum DpuCommand {
    /// Model, DPU mode, firmware, OS, agent version, netdevs and RDMA devices.
    #[command(
        after_help = "Example:\n  dpuctl --agent unix:/run/dpu-agent/dpu-agent.sock dpu info"
    )]
    Info,
    /// gRPC health of each service and the state of each backend (SNAP, OVSDB, sysfs).
    #[command(after_help = "Example:\n  dpuctl dpu health && echo healthy")]
    Health,
    /// A counter snapshot, or a stream of deltas at an interval.
    #[command(
        after_help = "Examples:\n  dpuctl dpu counters                              # every RDMA port, netdev and NVMe disk\n  dpuctl dpu counters -s rdma:mlx5_0/1 -s netdev:pf0hpf\n  dpuctl dpu counters -s tc:pf0hpf --watch 1 --count 10   # deltas and rates each second"
    )]
    Counters(CountersArgs),
}

/// `check` arguments.
#[derive(Debug, Args)]
pub(crate) struct CheckArgs {
    /// List the checks and what each verifies; run nothing.
    #[arg(long)]
    pub(crate) list: bool,
    /// A data interface (rail) to check; repeat for several (default: the netdev of every
    /// RDMA port of the host that is not on an SR-IOV virtual function).
    #[arg(long, value_name = "IF", value_parser = parse_interface)]
    pub(crate) interface: Vec<String>,
    /// An RDMA port whose netdev to check, DEV or DEV/PORT (port 1 by default); repeat for
    /// several. Not with --interface.
    #[arg(long, value_name = "DEV[/PORT]", value_parser = parse_rdma_port, conflicts_with = "interface")]
    pub(crate) device: Vec<String>,
    /// Require this MTU on the data interface.
    #[arg(long, value_name = "BYTES", value_parser = clap::value_parser!(u32).range(68..=65535))]
    pub(crate) mtu: Option<u32>,
    /// Expected NIC firmware settings: a TOML file with a `[fw]` table of PARAM = "VALUE"
    /// or number (examples/profiles/gpu-lossless-roce.toml), checked by fw.profile through
    /// mlxconfig/mstconfig query (read-only). A bad file exits 2 naming the line.
    #[arg(long, value_name = "FILE")]
    pub(crate) profile: Option<PathBuf>,
    /// Require every InfiniBand port to run at least this rate, in Gbit/s (400 for NDR
    /// 4X, 200 for HDR 4X); without it a port narrower than 4X is a warning.
    #[arg(long, value_name = "GBPS", value_parser = parse_ib_rate)]
    pub(crate) ib_rate: Option<u32>,
    /// Host checks only: do not contact the agent.
    #[arg(long)]
    pub(crate) no_agent: bool,
    /// Show every result as a row, the skipped checks too (by default they are summed up
    /// by reason under the table; -o json always has every result).
    #[arg(long, conflicts_with_all = ["list", "env"])]
    pub(crate) all: bool,
    /// Print the settings the checked fabric needs (NCCL_IB_HCA, NCCL_IB_GID_INDEX,
    /// NCCL_SOCKET_IFNAME, UCX_NET_DEVICES, UCX_IB_GID_INDEX, PERFTEST_FLAGS) as
    /// `export NAME=value` lines (a JSON object with -o json) instead of the results:
    /// `dpuctl check --env > fabric.env && . ./fabric.env`. Exit 1, nothing on stdout, the
    /// checks named on stderr when a check they depend on failed.
    #[arg(long, conflicts_with = "list")]
    pub(crate) env: bool,
    /// Also write the verdict and key numbers as Prometheus metrics to FILE.prom (for
    /// node_exporter's textfile collector; replaced atomically).
    #[arg(long, value_name = "FILE.prom")]
    pub(crate) metrics_file: Option<PathBuf>,
}

/// An interface name by the one rule every part of the project checks it with
/// ([`dpu_proto::names::check_ifname`]: 1-15 bytes of letters, digits, `_ - . @`, not `.` or
/// `..`, not starting with `-`), so the CLI refuses what the agent and the inventory would.
fn parse_interface(text: &str) -> Result<String, String> {
    dpu_proto::names::check_ifname("interface", text)
        .map(|()| text.to_owned())
        .map_err(|e| e.to_string())
}

/// `DEV` or `DEV/PORT`: an RDMA device name (letters, digits, `_`, `-`, `.`; at most 63)
/// and a port number from 1.
fn parse_rdma_port(text: &str) -> Result<String, String> {
    let (device, port) = match text.split_once('/') {
        Some((device, port)) => (device, Some(port)),
        None => (text, None),
    };
    let device_ok = !device.is_empty()
        && device.len() <= 63
        && device
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "_-.".contains(c))
        && device != "."
        && device != "..";
    if !device_ok {
        return Err(format!(
            "{device:?} is not an RDMA device name (e.g. mlx5_0; letters, digits, '_', '-', '.')"
        ));
    }
    if let Some(port) = port {
        match port.parse::<u32>() {
            Ok(n) if n >= 1 => {}
            _ => return Err(format!("{port:?} is not a port number (1, 2, ...)")),
        }
    }
    Ok(text.to_owned())
}

/// `--ib-rate`: a positive whole number of Gbit/s, said plainly when it is not.
fn parse_ib_rate(text: &str) -> Result<u32, String> {
    match text.trim().parse::<u32>() {
        Ok(gbps) if gbps > 0 => Ok(gbps),
        _ => Err(format!(
            "{text:?} is not a rate: give a positive whole number of Gbit/s (e.g. 400 for NDR 4X)"
        )),
    }
}

/// `dpu counters` arguments.
#[derive(Debug, Args)]
pub(crate) struct CountersArgs {
    /// What to read: rdma[:DEV[/PORT]], netdev[:IF], tc:IF, block[:DEV], volume[:ID] (the
    /// agent's storage volumes), datapath[:NAME] (OVS datapath lookups: hit, missed =
    /// upcalls, lost). Repeatable; none means every RDMA port, netdev and NVMe namespace.
    /// A selector that names nothing on the DPU (netdev:pf0hfp) is a usage error (exit 2)
    /// that lists what exists; one whose object exists but could not be read is a
    /// `not read:` line.
    // The comment above is clap's help text as users read it, not rustdoc markdown: its
    // brackets are the selector grammar, not links.
    #[allow(rustdoc::broken_intra_doc_links)]
    #[arg(short, long = "select", value_name = "SELECTOR")]
    pub(crate) selectors: Vec<dpu_host::snapshot_wire::AgentSelector>,
    /// Stream a snapshot every SECS seconds and print what changed since the previous one.
    #[arg(long, value_name = "SECS")]
    pub(crate) watch: Option<f64>,
    /// With --watch: stop after N intervals (default: until interrupted).
    #[arg(long, value_name = "N", requires = "watch")]
    pub(crate) count: Option<u32>,
    /// Hide counters whose value (or, with --watch, whose delta) is zero.
    #[arg(long)]
    pub(crate) nonzero: bool,
}

#[derive(Debug, Subcommand)]
pub(crate) enum StorageCommand {
    /// Attach a remote NVMe-oF controller on the DPU.
    #[command(
        after_help = "Example:\n  dpuctl storage attach --id r0 --transport rdma --traddr 192.0.2.10 --subnqn nqn.2016-06.io.spdk:cnode1"
    )]
    Attach(AttachArgs),
    /// Expose a remote namespace to the host as a local NVMe disk.
    #[command(
        after_help = "Example:\n  dpuctl storage expose --id disk0 --traddr 192.0.2.10 --subnqn nqn.2016-06.io.spdk:cnode1 --nqn nqn.2022-10.io.nvda.nvme:0 --pf 0"
    )]
    Expose(ExposeArgs),
    /// List exposures, remote controllers and emulated subsystems the agent manages.
    #[command(after_help = "Example:\n  dpuctl -o json storage list")]
    List,
    /// The host-visible PCI functions SNAP can emulate an NVMe controller on (PF/VF index,
    /// bb:dd.f, VUID) and the controller on each.
    #[command(after_help = "Example:\n  dpuctl storage functions")]
    Functions,
    /// 64-bit I/O counters of a namespace, controller or volume.
    #[command(after_help = "Example:\n  dpuctl storage stats volumes/RemoteNvme0n1")]
    Stats {
        /// Resource name.
        name: String,
    },
    /// Undo an exposure or detach a remote controller.
    #[command(after_help = "Example:\n  dpuctl storage detach exposures/disk0")]
    Detach {
        /// `exposures/{id}` or `remoteControllers/{id}`.
        name: String,
        /// Succeed when it does not exist.
        #[arg(long)]
        allow_missing: bool,
    },
    /// Set or clear the QoS rate limits of a volume (SPDK's bdev_set_qos_limit); limits not
    /// given are unlimited.
    #[command(
        after_help = "Examples:\n  dpuctl storage qos volumes/r0n1 --iops 20000 --read-mbps 500\n  dpuctl storage qos volumes/r0n1 --clear"
    )]
    Qos(crate::storage_qos_cli::QosArgs),
    /// Each path of the remote controllers (attached with --path) and its state as SPDK
    /// reports it: usable, inaccessible, connecting, failed, missing; which carries I/O.
    #[command(after_help = "Example:\n  dpuctl storage paths remoteControllers/r0")]
    Paths(crate::storage_paths_cli::PathsArgs),
    /// Emulated virtio-blk devices (SNAP), each backed by one volume: create, list, get,
    /// delete.
    #[command(subcommand, name = "virtio-blk")]
    VirtioBlk(crate::storage_virtio_blk_cli::VirtioBlkCommand),
    /// Read a block device or file with O_DIRECT and report fio-style results.
    #[command(
        after_help = "Example:\n  dpuctl -o json storage read /dev/nvme1n1 --bs 4k --iodepth 32 --size 1g"
    )]
    Read(ReadArgs),
}

/// Where the remote NVMe-oF target is.
#[derive(Debug, Args)]
pub(crate) struct AttachArgs {
    /// Client-chosen id for the remote controller.
    #[arg(long)]
    pub(crate) id: String,
    /// Fabric transport.
    #[arg(long, value_enum, default_value_t = Transport::Rdma)]
    pub(crate) transport: Transport,
    /// Target IPv4 or IPv6 address.
    #[arg(long)]
    pub(crate) traddr: String,
    /// Target port.
    #[arg(long, default_value_t = 4420)]
    pub(crate) trsvcid: u32,
    /// NQN of the remote subsystem.
    #[arg(long)]
    pub(crate) subnqn: String,
    /// Host NQN to present.
    #[arg(long)]
    pub(crate) hostnqn: Option<String>,
    /// Give up reconnecting after this many seconds (-1: reconnect forever); needs
    /// --reconnect-delay-sec. Absent: the backend's default.
    #[arg(long, value_name = "SECONDS", allow_negative_numbers = true)]
    pub(crate) ctrl_loss_timeout_sec: Option<i32>,
    /// Seconds between reconnect attempts (at most --ctrl-loss-timeout-sec).
    #[arg(long, value_name = "SECONDS")]
    pub(crate) reconnect_delay_sec: Option<u32>,
    /// Fail I/O after this many seconds without a connection, while reconnecting goes on
    /// (between --reconnect-delay-sec and --ctrl-loss-timeout-sec).
    #[arg(long, value_name = "SECONDS")]
    pub(crate) fast_io_fail_timeout_sec: Option<u32>,
    #[command(flatten)]
    pub(crate) multipath: crate::storage_paths_cli::MultipathArgs,
    /// Ask the agent to validate and report, changing nothing.
    #[arg(long)]
    pub(crate) dry_run: bool,
}

/// Remote namespace plus where the host should see it.
#[derive(Debug, Args)]
pub(crate) struct ExposeArgs {
    #[command(flatten)]
    pub(crate) remote: AttachArgs,
    /// Namespace id on the remote target.
    #[arg(long, default_value_t = 1)]
    pub(crate) remote_nsid: u32,
    /// NQN of the emulated subsystem the host sees.
    #[arg(long)]
    pub(crate) nqn: String,
    /// Namespace id the host sees.
    #[arg(long, default_value_t = 1)]
    pub(crate) nsid: u32,
    /// Host PF index for the emulated controller.
    #[arg(long, default_value_t = 0, conflicts_with = "pci")]
    pub(crate) pf: u32,
    /// Host VF index (absent: the PF itself).
    #[arg(long, conflicts_with = "pci")]
    pub(crate) vf: Option<u32>,
    /// The emulated function by the PCI address the host sees (bb:dd.f, or 0000:bb:dd.f as
    /// lspci -D prints it; SNAP reaches PCI domain 0000 only) instead of PF/VF index.
    #[arg(long, value_name = "BDF")]
    pub(crate) pci: Option<String>,
    /// Serial number the host sees (up to 20 ASCII characters); derived from the NQN when
    /// absent.
    #[arg(long)]
    pub(crate) serial: Option<String>,
    /// Model number the host sees (up to 40 ASCII characters).
    #[arg(long)]
    pub(crate) model: Option<String>,
}

/// Fabric transport.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum Transport {
    /// NVMe/RDMA (RoCE).
    Rdma,
    /// NVMe/TCP.
    Tcp,
}

/// What and how to read.
#[derive(Debug, Args)]
pub(crate) struct ReadArgs {
    /// Block device or file.
    pub(crate) path: PathBuf,
    /// Block size: a power of two, at least 512 (k/m/g suffixes, binary: 4k = 4096).
    #[arg(long, default_value = "128k", value_parser = dpu_host::storage_read::size::parse_block_size)]
    pub(crate) bs: u64,
    /// Requests in flight (1-1024).
    #[arg(long, default_value_t = 32, value_parser = clap::value_parser!(u32).range(1..=1024))]
    pub(crate) iodepth: u32,
    /// Bytes to read, wrapping at the end (k/m/g suffixes); default: the whole file once.
    #[arg(long, conflicts_with = "runtime", value_parser = dpu_host::storage_read::size::parse_positive_size)]
    pub(crate) size: Option<u64>,
    /// Seconds to read for, wrapping at the end.
    #[arg(long, value_parser = dpu_host::storage_read::parse_runtime)]
    pub(crate) runtime: Option<f64>,
}

#[derive(Debug, Subcommand)]
pub(crate) enum SwitchCommand {
    /// OVS bridges on the DPU.
    #[command(after_help = "Example:\n  dpuctl switch bridges")]
    Bridges,
    /// Ports of a bridge.
    #[command(after_help = "Example:\n  dpuctl switch ports ovsbr1")]
    Ports {
        /// Bridge name.
        bridge: String,
    },
    /// Create a bridge (idempotent: the same bridge again is not an error).
    #[command(
        after_help = "Examples:\n  dpuctl switch add-bridge ovsbr1\n  dpuctl switch add-bridge br-test --datapath-type netdev   # userspace datapath"
    )]
    AddBridge {
        /// Bridge name.
        name: String,
        /// Datapath: kernel ("system", OVS's default) or userspace ("netdev", also OVS-DOCA).
        #[arg(long, value_enum)]
        datapath_type: Option<DatapathType>,
    },
    /// Delete a bridge.
    #[command(after_help = "Example:\n  dpuctl switch del-bridge ovsbr1")]
    DelBridge {
        /// Bridge name.
        name: String,
    },
    /// Add a port to a bridge (idempotent).
    #[command(
        after_help = "Examples:\n  dpuctl switch add-port ovsbr1 pf0vf0\n  dpuctl switch add-port ovsbr1 vm1 --type internal"
    )]
    AddPort {
        /// Bridge name.
        bridge: String,
        /// Port (and interface) name.
        port: String,
        /// Interface type ("", internal, vxlan, ...).
        #[arg(long = "type", default_value = "")]
        interface_type: String,
    },
    /// Remove a port from a bridge.
    #[command(after_help = "Example:\n  dpuctl switch del-port ovsbr1 pf0vf0")]
    DelPort {
        /// Bridge name.
        bridge: String,
        /// Port name.
        port: String,
    },
    /// Show or change hardware offload (`on`/`off`); says when ovs-vswitchd must restart.
    #[command(
        after_help = "Examples:\n  dpuctl switch offload          # hw-offload, tc-policy, whether offload is active\n  dpuctl switch offload on       # then restart ovs-vswitchd if it says so"
    )]
    Offload {
        /// New state; omit to show the current settings.
        state: Option<OnOff>,
    },
    /// Datapath flows with per-flow stats and offload status.
    #[command(
        after_help = "Examples:\n  dpuctl switch flows --type offloaded\n  dpuctl -o json switch flows --in-port pf0hpf   # with the tc filters of each flow"
    )]
    Flows {
        /// Which flows.
        #[arg(long = "type", value_enum, default_value_t = FlowType::All)]
        flow_type: FlowType,
        /// Only flows that enter through this port.
        #[arg(long, value_name = "PORT")]
        in_port: Option<String>,
    },
}

/// An OVS bridge datapath.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum DatapathType {
    /// The kernel datapath (OVS's default; TC offload on BlueField).
    System,
    /// The userspace datapath (DPDK, OVS-DOCA).
    Netdev,
}

/// A switch for a boolean setting.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum OnOff {
    /// Enable.
    On,
    /// Disable.
    Off,
}

/// Flow filter, as `dpctl/dump-flows type=`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum FlowType {
    /// In hardware (or tc with flags absent).
    Offloaded,
    /// Not offloaded.
    NonOffloaded,
    /// MARK+RSS partial offload.
    PartiallyOffloaded,
    /// Every flow.
    All,
}

#[derive(Debug, Subcommand)]
pub(crate) enum RoceCommand {
    /// TCP baseline (qperf) against RDMA (perftest) to a peer, across message sizes, with
    /// the CPU time of both sides and the local RDMA port counters read around every run:
    /// a run whose counters contradict its tool (an RDMA test that left the RDMA port
    /// still, a TCP run that moved it) is flagged. Exit 0: every run ran and its counters
    /// agree; 1: a run failed or was flagged; 3: counters could not decide.
    #[command(
        after_help = "Examples:\n  dpuctl roce perf --peer 192.0.2.20\n  dpuctl roce perf --peer root@gpu2 --tests write_bw,write_lat --sizes 4096,1048576 --report perf.html\n  dpuctl lab run -- dpuctl -o json roce perf --peer target\n\nThe server side is started on the peer over ssh (BatchMode: set up keys first); the peer needs perftest (and qperf for the TCP baseline)."
    )]
    Perf(Box<PerfArgs>),
    /// PFC/ECN/CNP counters around a congestion workload (or a wait), with what each
    /// delta means: PFC pausing on the lossless priority, ECN marks and CNPs flowing, drops
    /// on lossy queues, and the classic misconfigurations (CNPs ignored because ECN is off
    /// on the adapter, pause on the wrong priority, global pause, MTU mismatch). Exit 0: no
    /// misconfiguration seen; 1: one was; 3: the interface has no such counters.
    #[command(
        after_help = "Examples:\n  dpuctl roce dcb --interface ens1f0np0 --duration 30\n  dpuctl roce dcb --priority 3 -- ib_write_bw -d mlx5_0 -x 3 -q 8 -D 20 peer"
    )]
    Dcb(DcbArgs),
    /// Read nccl-tests output and NCCL_DEBUG=INFO logs: bus bandwidth per size, and
    /// whether NCCL used NET/IB or fell back to NET/Socket (exit 1) — the "training
    /// succeeded but the data went over the socket" fault. Exit 3 when the logs do not say.
    #[command(
        after_help = "Examples:\n  NCCL_DEBUG=INFO all_reduce_perf -b 8 -e 1G -f 2 -g 1 > run.log 2>&1\n  dpuctl roce nccl-check run.log\n  dpuctl roce nccl-check --report busbw.html ring.log tree.log   # busbw against size, a line per algorithm\n  dpuctl roce nccl-check -- mpirun -np 2 -H a,b all_reduce_perf -b 8 -e 1G -f 2 -g 1   # with counter corroboration"
    )]
    NcclCheck {
        /// Files with nccl-tests output and/or NCCL_DEBUG=INFO lines (any order, mixed).
        #[arg(required_unless_present = "run")]
        files: Vec<PathBuf>,
        /// Run this command (argv, e.g. `all_reduce_perf -b 8 -e 1G`) with NCCL_DEBUG=INFO,
        /// read its output, and corroborate the transport with the local RDMA port
        /// counters around it.
        #[arg(last = true)]
        run: Vec<String>,
        /// Also write one self-contained HTML page: each input's bus bandwidth against
        /// message size (a line per file, e.g. one per NCCL_ALGO, and one for the command).
        #[arg(long, value_name = "FILE.html")]
        report: Option<PathBuf>,
    },
}

/// `roce dcb` flags.
#[derive(Debug, Args)]
pub(crate) struct DcbArgs {
    /// The Ethernet interface whose driver counters to read (default: the netdev of the
    /// RDMA device's RoCE v2 IPv4 GID).
    #[arg(long)]
    pub(crate) interface: Option<String>,
    /// The RDMA device whose congestion counters to read (default: the one with a RoCE
    /// v2 IPv4 GID).
    #[arg(long)]
    pub(crate) device: Option<String>,
    /// The lossless priority RoCE should use.
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u8).range(0..8))]
    pub(crate) priority: u8,
    /// Seconds to wait when no workload command is given.
    #[arg(long, default_value_t = 10)]
    pub(crate) duration: u64,
    /// A congestion workload to run between the snapshots (argv, not a shell line).
    #[arg(last = true)]
    pub(crate) workload: Vec<String>,
}

/// `roce perf` flags.
#[derive(Debug, Args)]
pub(crate) struct PerfArgs {
    /// The peer: HOST, USER@HOST or an ssh alias; the server side runs there.
    #[arg(long)]
    pub(crate) peer: String,
    /// Tests, comma separated: tcp_bw, tcp_lat, send_lat, send_bw, write_lat, write_bw,
    /// read_lat, read_bw (default: all but read).
    #[arg(long, value_delimiter = ',')]
    pub(crate) tests: Vec<String>,
    /// Message sizes in bytes for the bandwidth tests, comma separated.
    #[arg(long, value_delimiter = ',', env = "DPUCTL_ROCE_SIZES", default_values_t = [4096_u64, 65536, 1048576])]
    pub(crate) sizes: Vec<u64>,
    /// Message sizes in bytes for the latency tests, comma separated.
    #[arg(long, value_delimiter = ',', env = "DPUCTL_ROCE_LAT_SIZES", default_values_t = [2_u64, 64, 4096])]
    pub(crate) lat_sizes: Vec<u64>,
    /// perftest iterations per run (`-n`).
    #[arg(long, env = "DPUCTL_ROCE_ITERATIONS", default_value_t = 1000)]
    pub(crate) iterations: u64,
    /// qperf seconds per TCP run (`-t`).
    #[arg(long, default_value_t = 2)]
    pub(crate) tcp_seconds: u32,
    /// Local RDMA device (default: the one with a RoCE v2 IPv4 GID).
    #[arg(long)]
    pub(crate) device: Option<String>,
    /// Local RDMA port.
    #[arg(long)]
    pub(crate) ib_port: Option<u32>,
    /// Local GID index (default: the RoCE v2 IPv4 entry).
    #[arg(long)]
    pub(crate) gid_index: Option<u32>,
    /// Peer RDMA device.
    #[arg(long)]
    pub(crate) peer_device: Option<String>,
    /// Peer RDMA port.
    #[arg(long)]
    pub(crate) peer_ib_port: Option<u32>,
    /// Peer GID index.
    #[arg(long)]
    pub(crate) peer_gid_index: Option<u32>,
    /// The address clients connect to (default: where ssh connects).
    #[arg(long)]
    pub(crate) peer_address: Option<std::net::IpAddr>,
    /// ssh program (tests point this at a stand-in).
    #[arg(long, default_value = "ssh", env = "DPUCTL_SSH")]
    pub(crate) ssh: PathBuf,
    /// ssh port on the peer.
    #[arg(long)]
    pub(crate) ssh_port: Option<u16>,
    /// ssh identity file.
    #[arg(long)]
    pub(crate) ssh_identity: Option<PathBuf>,
    /// First TCP port the servers listen on; run N uses PORT+N.
    #[arg(long, default_value_t = 18515)]
    pub(crate) base_port: u16,
    /// Limit for one run, in seconds.
    #[arg(long, default_value_t = 300)]
    pub(crate) run_timeout: u64,
    /// Also write a self-contained HTML report with charts.
    #[arg(long)]
    pub(crate) report: Option<PathBuf>,
    /// Also write the verdict and key numbers as Prometheus metrics to FILE.prom (for
    /// node_exporter's textfile collector; replaced atomically).
    #[arg(long, value_name = "FILE.prom")]
    pub(crate) metrics_file: Option<PathBuf>,
}

#[derive(Debug, Subcommand)]
pub(crate) enum ProveCommand {
    /// Prove a storage read went through the DPU: read N bytes from the host device and
    /// account for them on the DPU (volume stats, uplink RDMA) and on the host (its own
    /// NICs and RDMA ports must not have carried them).
    #[command(
        after_help = "Examples:\n  dpuctl lab run -- dpuctl prove storage                    # in the lab: everything found\n  dpuctl prove storage --device /dev/nvme1n1 --volume disk0n1 --report storage.html"
    )]
    Storage(ProveStorageArgs),
    /// Prove switched traffic was forwarded by the offload, not the Arm CPU: send a known
    /// number of packets from the host and account for them flow by flow on the DPU.
    #[command(
        after_help = "Examples:\n  dpuctl lab run -- dpuctl prove switch                     # in the lab: TC in software is the best it can show\n  dpuctl prove switch --interface ens1f0np0 --peer 192.0.2.20 --representor pf0hpf --report switch.html"
    )]
    Switch(ProveSwitchArgs),
    /// Prove a volume's QoS read limit is held: read its host device in a limited, a
    /// lifted and a restored window and judge the rate against the limit on the volume's
    /// and the disk's own counters (the limit is set back on every path).
    #[command(
        after_help = "Examples:\n  dpuctl prove qos volumes/r0n1\n  dpuctl prove qos r0n1 --duration 5s --no-lift -o json   # a production volume: no lift"
    )]
    Qos(crate::prove_qos_cli::ProveQosArgs),
}

/// The forwarding level a switch proof must show.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, ValueEnum)]
pub(crate) enum OffloadLevel {
    /// Flows in the OVS kernel (or userspace) datapath: the Arm CPU switched them.
    Datapath,
    /// TC flower rules in software (`not_in_hw`): still the CPU, but through TC.
    Tc,
    /// TC rules in the NIC (`in_hw`, `offloaded:yes`): the eSwitch switched them.
    Hardware,
}

/// `prove switch` arguments; the lab supplies them through the environment.
#[derive(Debug, Args)]
pub(crate) struct ProveSwitchArgs {
    /// The host interface to send from (the PF or VF the DPU switches).
    #[arg(long, env = "DPUCTL_SWITCH_INTERFACE", value_name = "IF")]
    pub(crate) interface: String,
    /// An IPv4 address beyond the DPU's switch to send to (UDP, discard port).
    #[arg(long, env = "DPUCTL_SWITCH_PEER", value_name = "IP")]
    pub(crate) peer: std::net::Ipv4Addr,
    /// The DPU port (representor) the host interface's traffic enters OVS through.
    #[arg(
        long,
        env = "DPUCTL_SWITCH_REPRESENTOR",
        default_value = "pf0hpf",
        value_name = "PORT"
    )]
    pub(crate) representor: String,
    /// Packets to send in all trials together.
    #[arg(long, default_value_t = 800, value_parser = clap::value_parser!(u64).range(50..=1_000_000))]
    pub(crate) packets: u64,
    /// The level the traffic must reach for PROVEN.
    #[arg(long, value_enum, env = "DPUCTL_SWITCH_REQUIRE", default_value_t = OffloadLevel::Hardware)]
    pub(crate) require: OffloadLevel,
    /// Seconds of idle measurement before sending, to subtract background traffic; also
    /// the quiet gap between two trials.
    #[arg(long, value_name = "SECS", default_value_t = 1.0)]
    pub(crate) idle: f64,
    /// Send the packets as this many trials of 1, 2, 1 ... parts of --packets (at least 50
    /// packets a part), with a quiet gap between two: each trial is judged on its own, the
    /// flows must count each one alike per packet and nothing in the gaps, so other traffic
    /// through the workload's flows cannot pass for it. 1: one window, which cannot tell.
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..=9))]
    pub(crate) trials: u32,
    /// A dpu-agent on the machine that holds --peer (`tcp:HOST:PORT`, `unix:PATH`; the same
    /// TLS flags as --agent): the second witness, whose own count of packets arrived on
    /// --target-interface must show them. Without it the DPU is the only witness, and the
    /// report says so.
    #[arg(
        long,
        env = "DPUCTL_SWITCH_TARGET_AGENT",
        value_name = "ENDPOINT",
        requires = "target_interface"
    )]
    pub(crate) target_agent: Option<dpu_proto::Endpoint>,
    /// The receiver's interface the packets arrive on (its rx_packets, read by
    /// --target-agent).
    #[arg(
        long,
        env = "DPUCTL_SWITCH_TARGET_INTERFACE",
        value_name = "IF",
        requires = "target_agent"
    )]
    pub(crate) target_interface: Option<String>,
    /// How many witnesses PROVEN needs: 1 (the DPU) or 2 (also the far end, which
    /// --target-agent names; refused without it).
    #[arg(long, env = "DPUCTL_WITNESSES", default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=2))]
    pub(crate) witnesses: u32,
    /// Also write a self-contained HTML report.
    #[arg(long, value_name = "FILE.html")]
    pub(crate) report: Option<PathBuf>,
    /// Also write the verdict and key numbers as Prometheus metrics to FILE.prom (for
    /// node_exporter's textfile collector; replaced atomically).
    #[arg(long, value_name = "FILE.prom")]
    pub(crate) metrics_file: Option<PathBuf>,
}

/// `prove storage` arguments; in the lab every one has a default.
#[derive(Debug, Args)]
pub(crate) struct ProveStorageArgs {
    /// The host's block device for the DPU-exposed namespace; it must carry the volume's
    /// NVMe namespace identity (uuid/nguid/eui), else nothing is read (exit 2). Default:
    /// the one disk on this host that carries it.
    #[arg(long, value_name = "PATH")]
    pub(crate) device: Option<PathBuf>,
    /// The DPU volume behind it (`r0n1` or `volumes/r0n1`); default: the agent's only
    /// remote-controller volume.
    #[arg(long, value_name = "ID")]
    pub(crate) volume: Option<String>,
    /// Bytes to read in all trials together (k/m/g suffixes).
    #[arg(long, default_value = "64m", value_parser = dpu_host::storage_read::size::parse_positive_size)]
    pub(crate) size: u64,
    /// Block size.
    #[arg(long, default_value = "1m", value_parser = dpu_host::storage_read::size::parse_block_size)]
    pub(crate) bs: u64,
    /// Reads in flight.
    #[arg(long, default_value_t = 8, value_parser = clap::value_parser!(u32).range(1..=1024))]
    pub(crate) iodepth: u32,
    /// Seconds of idle measurement before the read, to subtract background traffic; also
    /// the quiet gap between two trials.
    #[arg(long, value_name = "SECS", default_value_t = 1.0)]
    pub(crate) idle: f64,
    /// Split the read into this many trials of 1, 2, 1 ... parts of --size, with a quiet
    /// gap between two: each trial is judged on its own, the volume must count each one
    /// alike per byte read and nothing in the gaps, so another reader of the volume cannot
    /// pass for the read. 1: one window, which cannot tell.
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..=9))]
    pub(crate) trials: u32,
    /// A dpu-agent on the storage target (`tcp:HOST:PORT`, `unix:PATH`; the same TLS flags
    /// as --agent): the second witness, whose own counters must show the target sent what
    /// the host read. Without it the DPU is the only witness, and the report says so.
    #[arg(long, env = "DPUCTL_TARGET_AGENT", value_name = "ENDPOINT")]
    pub(crate) target_agent: Option<dpu_proto::Endpoint>,
    /// How many witnesses PROVEN needs: 1 (the DPU) or 2 (also the storage target, which
    /// --target-agent names; refused without it).
    #[arg(long, env = "DPUCTL_WITNESSES", default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=2))]
    pub(crate) witnesses: u32,
    /// Do without a negative control that cannot be formed on this host (its counters do
    /// not exist), instead of an INCONCLUSIVE verdict; the report shows the waiver.
    /// Repeatable. A control that can be formed is judged whatever this says.
    #[arg(long, value_name = "CONTROL")]
    pub(crate) waive: Vec<StorageWaiver>,
    /// Also write a self-contained HTML report.
    #[arg(long, value_name = "FILE.html")]
    pub(crate) report: Option<PathBuf>,
    /// Also write the verdict and key numbers as Prometheus metrics to FILE.prom (for
    /// node_exporter's textfile collector; replaced atomically).
    #[arg(long, value_name = "FILE.prom")]
    pub(crate) metrics_file: Option<PathBuf>,
}

/// A storage proof's negative control that `--waive` can do without.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum StorageWaiver {
    /// "host RDMA ports did not carry the data" (the host reading the target itself over
    /// NVMe/RDMA), where the host's RDMA ports have no readable counter.
    HostRdma,
}

#[derive(Debug, Subcommand)]
pub(crate) enum DemoCommand {
    /// Storage ready, communication verified, training job, merge, serving, and the
    /// accounting of the whole run in one report. Exit 0: every step passed; 1: a step
    /// failed (the report says which and why); 2: the plan is invalid.
    #[command(
        after_help = "Examples:\n  dpuctl demo training-storage --plan plan.toml --dry-run      # every object, as YAML\n  dpuctl demo training-storage --plan plan.toml --report review.html\n  dpuctl demo training-storage --plan examples/demo/plan-local.toml --executor local"
    )]
    TrainingStorage(Box<crate::demo_args::TrainingStorageArgs>),
    /// Only the serving checks of a plan against a running OpenAI-compatible server:
    /// /health, /v1/models, a chat completion and a streamed one (flags an ingress that
    /// buffers the stream), answers compared fuzzily with the archive.
    #[command(
        after_help = "Example:\n  dpuctl demo check-serving --plan plan.toml --url https://vllm.lab.example"
    )]
    CheckServing(crate::demo_args::CheckServingArgs),
}

/// `lab` arguments.
#[derive(Debug, Args)]
pub(crate) struct LabArgs {
    /// The project's `lab/` directory; found from the current directory or next to the
    /// dpuctl binary when absent.
    #[arg(long, value_name = "DIR", env = "DPUCTL_LAB_DIR", global = true)]
    pub(crate) lab_dir: Option<PathBuf>,
    #[command(subcommand)]
    pub(crate) command: LabCommand,
}

/// What to do with the lab.
#[derive(Debug, Subcommand)]
pub(crate) enum LabCommand {
    /// Build (if needed) and boot the lab VMs, and wait until the agent answers.
    #[command(
        after_help = "Examples:\n  dpuctl lab up                          # with this dpuctl and the dpu-agent beside it\n  dpuctl lab up --bin-dir target/release # with the binaries of another build\n  dpuctl lab up --no-bin                 # an image without the project's binaries"
    )]
    Up {
        /// Directory with x86 `dpu-agent` and `dpuctl` to install in the image; the agent
        /// then starts on the DPU side with the kernel storage backend. Default: this
        /// dpuctl's own directory, when a `dpu-agent` is beside it (a cargo build of both).
        #[arg(long, value_name = "DIR", conflicts_with = "no_bin")]
        bin_dir: Option<PathBuf>,
        /// Install no project binaries (the image's bare kernel paths only).
        #[arg(long)]
        no_bin: bool,
        /// Fail instead of building when the image is not cached.
        #[arg(long)]
        no_build: bool,
    },
    /// Run a command in a lab VM (default: the bluefield VM's host namespace); exits with
    /// the command's exit code (255: the lab itself failed, 124: timed out).
    #[command(
        after_help = "Examples:\n  dpuctl lab run -- dpuctl dpu health\n  dpuctl lab run --ns dpu -- ovs-appctl dpctl/dump-flows -m type=tc\n  dpuctl lab run --vm target -- nvmetcli ls"
    )]
    Run {
        /// The VM.
        #[arg(long, value_enum, default_value_t = LabVm::Bluefield)]
        vm: LabVm,
        /// The network namespace on the bluefield VM (`none`: the VM's init namespace).
        #[arg(long, value_enum, default_value_t = LabNamespace::Host)]
        ns: LabNamespace,
        /// Seconds before the command is killed (the global --timeout is for agent calls).
        #[arg(long, value_name = "SECONDS", default_value_t = 600)]
        time_limit: u32,
        /// The command and its arguments (joined with spaces and run by bash in the guest,
        /// as ssh does).
        #[arg(trailing_var_arg = true, required = true)]
        command: Vec<String>,
    },
    /// Whether both VMs are up and ready (exit 0) or not (exit 1).
    #[command(after_help = "Example:\n  dpuctl lab status")]
    Status,
    /// Stop the lab VMs and verify no QEMU process is left.
    #[command(after_help = "Example:\n  dpuctl lab down")]
    Down,
    /// Print a VM's serial console log.
    #[command(after_help = "Example:\n  dpuctl lab logs bluefield")]
    Logs {
        /// The VM; both when absent.
        #[arg(value_enum)]
        vm: Option<LabVm>,
    },
}

/// A lab VM.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum LabVm {
    /// The remote NVMe-oF storage server.
    Target,
    /// The BlueField stand-in: DPU side plus the host namespace.
    Bluefield,
}

/// A network namespace of the bluefield VM.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum LabNamespace {
    /// Where dpuctl runs, as on the server.
    Host,
    /// The DPU (Arm) side, where the agent runs.
    Dpu,
    /// The VM's init namespace (the same as `dpu` in this lab).
    None,
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::{Cli, Command};

    fn ib_rate(flag: &str) -> Result<Option<u32>, String> {
        match Cli::try_parse_from([
            "dpuctl".to_owned(),
            "check".to_owned(),
            format!("--ib-rate={flag}"),
        ]) {
            Ok(cli) => match cli.command {
                Command::Check(args) => Ok(args.ib_rate),
                other => panic!("parsed as {other:?}"),
            },
            Err(e) => Err(e.to_string()),
        }
    }

    #[test]
    fn ib_rate_is_a_positive_number_of_gbits() {
        assert_eq!(ib_rate("400"), Ok(Some(400)));
        for bad in ["0", "-5", "fast", "2.5"] {
            let err = ib_rate(bad).expect_err(bad);
            assert!(
                err.contains("--ib-rate") && err.contains("positive whole number of Gbit/s"),
                "{bad}: {err}"
            );
        }
    }

    /// `check --interface` takes what the agent and the inventory take, and refuses what
    /// they refuse (issue 34: the CLI's rule was looser: `-rf`, `a;b` passed).
    #[test]
    fn check_interfaces_follow_the_one_interface_rule() {
        let parse = |name: &str| {
            let flag = format!("--interface={name}");
            Cli::try_parse_from(["dpuctl", "check", flag.as_str()]).map(|cli| match cli.command {
                Command::Check(args) => args.interface,
                other => panic!("parsed as {other:?}"),
            })
        };
        assert_eq!(parse("ens1f0np0").expect("valid"), ["ens1f0np0"]);
        for bad in [
            "-rf",
            "a;b",
            "eth0:1",
            "br 0",
            "0123456789abcdef",
            "..",
            "é",
        ] {
            let err = parse(bad).expect_err(bad).to_string();
            assert!(err.contains("--interface"), "{bad}: {err}");
            assert!(
                dpu_proto::names::check_ifname("interface", bad).is_err(),
                "{bad} is refused by the one rule too"
            );
        }
    }

    /// A subcommand's `--help` text as a person sees it.
    fn help(args: &[&str]) -> String {
        let mut argv = vec!["dpuctl"];
        argv.extend(args);
        argv.push("--help");
        match Cli::tree().try_get_matches_from(argv) {
            Err(e) if e.kind() == clap::error::ErrorKind::DisplayHelp => e.to_string(),
            other => panic!("{args:?} --help did not print help: {other:?}"),
        }
    }

    #[test]
    fn a_subcommands_own_options_come_before_the_global_ones() {
        for args in [&["check"][..], &["dpu", "counters"], &["storage", "expose"]] {
            let text = help(args);
            let own = text.find("\nOptions:\n").expect("own options");
            let global = text.find("\nGlobal options:\n").expect("global options");
            assert!(own < global, "{args:?}:\n{text}");
            // Every global flag is under its heading, none among the command's own.
            let own_block = &text[own..global];
            for flag in [
                "--agent",
                "--ca",
                "--cert",
                "--timeout",
                "--sys-root",
                "--output",
            ] {
                assert!(
                    !own_block.contains(flag),
                    "{args:?}: {flag} among own options"
                );
                assert!(text[global..].contains(flag), "{args:?}: {flag} missing");
            }
        }
        // check's own flags are first: the first option listed is one of its own.
        let text = help(&["check"]);
        let own = text.find("\nOptions:\n").expect("own options");
        assert!(text[own..].contains("--interface"), "{text}");
    }
    #[test]
    fn completions_help_shows_only_what_applies_to_it() {
        let text = help(&["completions"]);
        for flag in [
            "--agent",
            "--output",
            "--sys-root",
            "--timeout",
            "--ca",
            "--tls-name",
            "--verbose",
        ] {
            assert!(
                !text.contains(flag),
                "completions --help shows {flag}:\n{text}"
            );
        }
        assert!(!text.contains("Global options"), "{text}");
        assert!(text.contains("<SHELL>") && text.contains("bash"), "{text}");
        // The other subcommands keep the globals.
        assert!(help(&["check"]).contains("--agent"));
        assert!(help(&["dpu", "info"]).contains("--agent"));
        // Hidden is not refused: a global before or after `completions` still parses.
        let cli = Cli::parse_from_tree(&["dpuctl", "-v", "completions", "bash"]);
        assert_eq!(cli.verbose, 1);
        assert!(matches!(cli.command, Command::Completions(_)));
        Cli::parse_from_tree(&["dpuctl", "completions", "--agent", "unix:/x", "bash"]);
    }

    #[test]
    fn the_finished_tree_passes_clap_s_own_checks() {
        Cli::tree().debug_assert();
    }

    impl Cli {
        fn parse_from_tree(argv: &[&str]) -> Self {
            let matches = Cli::tree()
                .try_get_matches_from(argv)
                .unwrap_or_else(|e| panic!("{argv:?}: {e}"));
            <Cli as clap::FromArgMatches>::from_arg_matches(&matches).expect("matches")
        }
    }
}
