//! `dpu-sim`: start simulated BlueFields under the real agent, break them on purpose, stop
//! them. `up` runs in the foreground (Ctrl-C stops it) or, with `--detach`, in the
//! background until `dpu-sim down`.

mod control;

use std::io::Write as _;
use std::os::unix::process::CommandExt as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use anyhow::{bail, Context as _};
use clap::{Parser, Subcommand};
use dpu_sim::{OvsChoice, Profile, Simulation, SimulationOptions, SIMULATED_TARGET};

const EXAMPLES: &str = "\
Examples:
  # One simulated BlueField-3 in the background, then the usual commands against it
  dpu-sim up --detach
  dpuctl --agent unix:$XDG_RUNTIME_DIR/dpu-sim/sim-1/agent.sock dpu health
  dpu-sim fault sim-1 link-down p0
  dpu-sim down

  # A proof against the simulator (root: the host's disk is a loop device)
  sudo dpu-sim up --detach --read-rate 0 --host-disk 64M --dir /tmp/prove
  # ... storage expose, then the `prove` line `up` printed
  # Eight nodes for fleet automation, without OVS daemons (as root they get OVS
  # unless --no-ovs; above 8 nodes only with --ovs)
  dpu-sim up --detach --count 8 --no-ovs --dir /tmp/fleet
  dpuctl fleet --inventory /tmp/fleet/inventory.toml health
";

/// A simulated BlueField under the real dpu-agent: the machine's sys tree, SNAP's
/// JSON-RPC socket, counters that move and faults on demand, for automation and tests on
/// any Linux machine.
#[derive(Debug, Parser)]
#[command(name = "dpu-sim", version, after_help = EXAMPLES)]
struct Cli {
    /// The simulation's directory (sockets, trees, logs, inventory.toml).
    #[arg(long, global = true, value_name = "DIR", env = "DPU_SIM_DIR")]
    dir: Option<PathBuf>,

    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Start the simulation and print each node's socket.
    Up(UpArgs),
    /// Stop the simulation running in the directory.
    Down,
    /// Break a node on purpose (or mend it).
    Fault {
        /// The node, as `up` printed it (sim-1, sim-2, ...).
        node: String,
        /// link-down IFNAME | link-up IFNAME | pcie-degrade | pcie-restore |
        /// counter-reset | snap-hang | snap-resume | snap-restart | agent-stop |
        /// agent-resume | host-path emulated|host-rdma|local | qos enforced|unenforced
        #[arg(required = true, num_args = 1..)]
        fault: Vec<String>,
    },
    /// Serve a SNAP/SPDK transcript that `dpuctl capture --snap-socket` recorded: the fake
    /// SNAP answers each recorded request with its recorded answer and anything else with
    /// a "not captured" error, until SIGINT or SIGTERM. Point `dpu-agent --snap-socket`
    /// at SOCKET to see what the agent answers from the captured machine.
    ReplaySnap {
        /// The transcript, `BUNDLE/jsonrpc/NAME.jsonl`.
        #[arg(long, value_name = "FILE")]
        transcript: PathBuf,
        /// Where to listen; must not exist.
        #[arg(long, value_name = "PATH")]
        socket: PathBuf,
        /// Answer every request from this reading (1 or 2); by default the readings play
        /// in order and the last repeats.
        #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
        reading: Option<u32>,
    },
    /// Serves a captured OVS (`dpuctl capture --ovs-rundir`'s two transcripts) in RUNDIR as
    /// ovsdb-server and ovs-vswitchd would: `db.sock`, `ovs-vswitchd.pid` and the control
    /// socket it names. Recorded requests get their recorded answers, anything else a
    /// "not captured" error, until SIGINT or SIGTERM. Point `dpu-agent --ovs-rundir` at
    /// RUNDIR to see what the agent's Switch service answers from the captured machine.
    ReplayOvs {
        /// ovsdb-server's transcript, `BUNDLE/jsonrpc/ovsdb-server.jsonl`.
        #[arg(long, value_name = "FILE")]
        ovsdb_transcript: PathBuf,
        /// ovs-vswitchd's transcript, `BUNDLE/jsonrpc/ovs-vswitchd.jsonl`.
        #[arg(long, value_name = "FILE")]
        vswitchd_transcript: PathBuf,
        /// The run directory to serve in: must exist and hold no `db.sock` or
        /// `ovs-vswitchd.pid` (a real OVS's is refused).
        #[arg(long, value_name = "DIR")]
        rundir: PathBuf,
        /// Answer every request from this reading (1 or 2); by default the readings play
        /// in order and the last repeats.
        #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
        reading: Option<u32>,
    },
}

#[derive(Debug, clap::Args)]
struct UpArgs {
    /// The machine each node is: bluefield3 or bluefield2 (a DPU's Arm side), or
    /// gpu-server (the host a BlueField-3 sits in).
    #[arg(long, default_value = "bluefield3")]
    profile: Profile,
    /// How many nodes.
    #[arg(long, default_value_t = 1)]
    count: usize,
    /// The dpu-agent binary (default: next to dpu-sim, then PATH).
    #[arg(long, value_name = "PATH", env = "DPU_SIM_AGENT")]
    agent_bin: Option<PathBuf>,
    /// Bytes per second each up link and active RDMA port receives.
    #[arg(long, value_name = "BYTES", default_value_t = 1_000_000)]
    link_rate: u64,
    /// Bytes per second read through each volume.
    #[arg(long, value_name = "BYTES", default_value_t = 256_000)]
    read_rate: u64,
    /// Give each node a host with a real disk of this size (a loop device: root only;
    /// e.g. 64M) that shows as the namespace the node exposes, for `dpuctl prove storage`.
    /// The host is the gpu-server machine whatever the profile.
    #[arg(long, value_name = "SIZE", value_parser = parse_size)]
    host_disk: Option<u64>,
    /// Run in the background; `dpu-sim down` stops it.
    #[arg(long)]
    detach: bool,
    /// No OVS daemons: every node's Switch service is DISABLED. By default each node gets
    /// private OVS daemons where the machine can run them (root, openvswitch-switch) and
    /// there are at most 8 nodes.
    #[arg(long, conflicts_with = "ovs")]
    no_ovs: bool,
    /// OVS daemons for every node, however many; refused where the machine cannot run
    /// them.
    #[arg(long)]
    ovs: bool,
}

/// Set by SIGINT and SIGTERM: the foreground loop stops the simulation and exits.
static STOP: AtomicBool = AtomicBool::new(false);

extern "C" fn on_signal(_: nix::libc::c_int) {
    STOP.store(true, Ordering::SeqCst);
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(cli) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("dpu-sim: error: {e:#}");
            ExitCode::FAILURE
        }
    }
}

fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    let dir = match cli.dir {
        Some(dir) => dir,
        None => default_dir(),
    };
    match cli.command {
        Command::Up(args) if args.detach => detach(&dir),
        Command::Up(args) => up(&dir, &args),
        Command::Down => down(&dir),
        Command::ReplaySnap {
            transcript,
            socket,
            reading,
        } => replay_snap(&transcript, &socket, reading),
        Command::ReplayOvs {
            ovsdb_transcript,
            vswitchd_transcript,
            rundir,
            reading,
        } => replay_ovs(&ovsdb_transcript, &vswitchd_transcript, &rundir, reading),
        Command::Fault { node, fault } => {
            control::request(&dir, &node, &fault)?;
            say(&format!("{node}: {} applied", fault.join(" ")))?;
            Ok(ExitCode::SUCCESS)
        }
    }
}

/// `$XDG_RUNTIME_DIR/dpu-sim`, else `/tmp/dpu-sim-UID`.
fn default_dir() -> PathBuf {
    match std::env::var_os("XDG_RUNTIME_DIR") {
        Some(runtime) if !runtime.is_empty() => PathBuf::from(runtime).join("dpu-sim"),
        _ => PathBuf::from(format!("/tmp/dpu-sim-{}", nix::unistd::getuid())),
    }
}

/// A line on stdout; a reader that went away ends nothing here (the simulation keeps
/// running until it is stopped).
fn say(line: &str) -> anyhow::Result<()> {
    let mut out = std::io::stdout().lock();
    match writeln!(out, "{line}") {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => {
            Err(e).context("cannot write to stdout")
        }
        _ => Ok(()),
    }
}

fn up(dir: &Path, args: &UpArgs) -> anyhow::Result<ExitCode> {
    if let Some(pid) = control::running(dir) {
        bail!(
            "a simulation is already running in {} (pid {pid}): `dpu-sim down --dir {}` first",
            dir.display(),
            dir.display()
        );
    }
    control::clear_stale(dir)?;
    let agent_bin = match &args.agent_bin {
        Some(bin) => bin.clone(),
        None => find_agent()?,
    };
    let mut options = SimulationOptions::new(dir, agent_bin);
    options.profile = args.profile;
    options.count = args.count;
    options.link_bytes_per_sec = args.link_rate;
    options.volume_read_bytes_per_sec = args.read_rate;
    options.host_disk_bytes = args.host_disk;
    options.ovs = match (args.ovs, args.no_ovs) {
        (true, _) => OvsChoice::Always,
        (_, true) => OvsChoice::Never,
        _ => OvsChoice::Auto,
    };
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let started = Instant::now();
    let mut simulation = Simulation::start(&options)?;
    stop_on_signals()?;
    control::claim(dir)?;
    if let Some(off) = simulation.switch_off() {
        say(&format!("switch: disabled ({off})"))?;
    }
    for node in simulation.nodes() {
        say(&format!(
            "{}  {}  agent unix:{}  metrics unix:{}",
            node.name(),
            args.profile,
            node.socket().display(),
            node.metrics_socket().display()
        ))?;
        match node.ovs() {
            Some(ovs) => say(&format!(
                "{}  switch ovs  --db={}  netns {}",
                node.name(),
                ovs.db_address(),
                ovs.netns().name()
            ))?,
            None => say(&format!("{}  switch disabled", node.name()))?,
        }
        if let Some(host) = node.host() {
            say(&format!(
                "{}  host --sys-root {}  disk {}",
                node.name(),
                host.root().display(),
                host.device().display()
            ))?;
            match host.qos_unenforceable() {
                None => say(&format!(
                    "{}  qos enforced on {} through blk-throttle (cgroup v1 blkio)",
                    node.name(),
                    host.device().display()
                ))?,
                Some(why) => say(&format!("{}  qos not enforced: {why}", node.name()))?,
            }
        }
    }
    let (traddr, trsvcid, subnqn) = SIMULATED_TARGET;
    say(&format!(
        "inventory {}\nstorage target {traddr}:{trsvcid} {subnqn}\nready in {:.1?}; \
         `dpu-sim down --dir {}` stops it",
        simulation.inventory().display(),
        started.elapsed(),
        dir.display()
    ))?;
    let outcome = serve(dir, &mut simulation);
    simulation.stop();
    control::release(dir);
    outcome?;
    Ok(ExitCode::SUCCESS)
}

/// Makes SIGINT and SIGTERM set [`STOP`].
fn stop_on_signals() -> anyhow::Result<()> {
    for signal in [
        nix::sys::signal::Signal::SIGINT,
        nix::sys::signal::Signal::SIGTERM,
    ] {
        // SAFETY: the handler only stores to an atomic, which is async-signal-safe, and
        // no other handler for these signals is installed in this process.
        unsafe {
            nix::sys::signal::signal(signal, nix::sys::signal::SigHandler::Handler(on_signal))
        }
        .context("cannot handle SIGINT/SIGTERM")?;
    }
    Ok(())
}

/// `replay-snap`: the fake SNAP serving `transcript` on `socket` until SIGINT or SIGTERM.
fn replay_snap(transcript: &Path, socket: &Path, reading: Option<u32>) -> anyhow::Result<ExitCode> {
    let text = std::fs::read_to_string(transcript)
        .with_context(|| format!("cannot read the transcript {}", transcript.display()))?;
    let replay = dpu_sim::fake_snap::Replay::from_jsonl(&text)
        .with_context(|| format!("{} is not a transcript", transcript.display()))?;
    let requests = replay.len();
    let snap = dpu_sim::fake_snap::FakeSnap::start_replaying(socket, replay)
        .with_context(|| format!("cannot listen on {}", socket.display()))?;
    snap.replay_reading(reading);
    stop_on_signals()?;
    say(&format!(
        "replaying {requests} recorded requests of {} on {} ({}); SIGINT or SIGTERM stops it",
        transcript.display(),
        socket.display(),
        reading.map_or("readings in order".to_owned(), |n| format!("reading {n}"))
    ))?;
    while !STOP.load(Ordering::SeqCst) {
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    Ok(ExitCode::SUCCESS)
}

/// A transcript file, parsed for replay.
fn read_transcript(path: &Path) -> anyhow::Result<dpu_sim::fake_snap::Replay> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("cannot read the transcript {}", path.display()))?;
    dpu_sim::fake_snap::Replay::from_jsonl(&text)
        .with_context(|| format!("{} is not a transcript", path.display()))
}

/// `replay-ovs`: both OVS transcripts served in `rundir` until SIGINT or SIGTERM.
fn replay_ovs(
    ovsdb: &Path,
    vswitchd: &Path,
    rundir: &Path,
    reading: Option<u32>,
) -> anyhow::Result<ExitCode> {
    let (db_replay, ctl_replay) = (read_transcript(ovsdb)?, read_transcript(vswitchd)?);
    let requests = db_replay.len() + ctl_replay.len();
    let ovs = dpu_sim::fake_ovs::FakeOvs::start_replaying(rundir, db_replay, ctl_replay)
        .with_context(|| {
            format!(
                "cannot serve OVS in {} (it must exist and hold no db.sock, \
                 ovs-vswitchd.pid or control socket)",
                rundir.display()
            )
        })?;
    ovs.replay_reading(reading);
    stop_on_signals()?;
    say(&format!(
        "replaying {requests} recorded OVS requests in {} ({}); SIGINT or SIGTERM stops it",
        rundir.display(),
        reading.map_or("readings in order".to_owned(), |n| format!("reading {n}"))
    ))?;
    while !STOP.load(Ordering::SeqCst) {
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    Ok(ExitCode::SUCCESS)
}

/// Moves the counters and applies requested faults until SIGINT or SIGTERM.
fn serve(dir: &Path, simulation: &mut Simulation) -> anyhow::Result<()> {
    while !STOP.load(Ordering::SeqCst) {
        std::thread::sleep(simulation.tick_interval());
        simulation.tick()?;
        control::serve_requests(dir, simulation);
    }
    Ok(())
}

/// Starts `up` again in the background, in its own session, and returns once it is ready
/// (its lines printed) or has failed (its error printed).
fn detach(dir: &Path) -> anyhow::Result<ExitCode> {
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let log_path = dir.join("dpu-sim.log");
    let log = std::fs::File::create(&log_path)
        .with_context(|| format!("cannot create {}", log_path.display()))?;
    let args: Vec<std::ffi::OsString> = std::env::args_os()
        .skip(1)
        .filter(|arg| arg != "--detach")
        .collect();
    let exe = std::env::current_exe().context("cannot find the dpu-sim binary")?;
    let mut child = std::process::Command::new(exe)
        .args(&args)
        // The directory resolved here, whether it came from --dir, the environment or
        // the default (a --dir among the arguments says the same).
        .env("DPU_SIM_DIR", dir)
        .stdin(std::process::Stdio::null())
        .stdout(log.try_clone().context("cannot share the log")?)
        .stderr(log)
        .process_group(0)
        .spawn()
        .context("cannot start dpu-sim in the background")?;
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let log = std::fs::read_to_string(&log_path).unwrap_or_default();
        if let Some(status) = child.try_wait().context("cannot wait for dpu-sim")? {
            bail!(
                "the background dpu-sim exited ({status}):\n{}",
                log.trim_end()
            );
        }
        if log.contains("\nready in ") {
            say(log.trim_end())?;
            return Ok(ExitCode::SUCCESS);
        }
        if Instant::now() > deadline {
            bail!(
                "the background dpu-sim was not ready within 60 s; its log {}:\n{}",
                log_path.display(),
                log.trim_end()
            );
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn down(dir: &Path) -> anyhow::Result<ExitCode> {
    match control::stop(dir)? {
        Some(pid) => say(&format!(
            "stopped the simulation in {} (pid {pid})",
            dir.display()
        ))?,
        None => say(&format!("no simulation is running in {}", dir.display()))?,
    }
    Ok(ExitCode::SUCCESS)
}

/// A size in bytes: a number with an optional binary suffix (`K`, `M`, `G`, with or
/// without `iB`): `64M` is 64 MiB.
fn parse_size(text: &str) -> Result<u64, String> {
    let digits = text.trim_end_matches(|c: char| c.is_ascii_alphabetic());
    let unit: u64 = match &text[digits.len()..] {
        "" => 1,
        "K" | "KiB" | "k" => 1 << 10,
        "M" | "MiB" => 1 << 20,
        "G" | "GiB" => 1 << 30,
        other => return Err(format!("unknown unit {other:?} (use K, M or G)")),
    };
    let count: u64 = digits
        .parse()
        .map_err(|_| format!("{text:?} is not a size (a number with K, M or G)"))?;
    count
        .checked_mul(unit)
        .ok_or_else(|| format!("{text} is too large"))
}

/// `dpu-agent` next to this binary (a cargo target directory, a package's bin), else on
/// PATH.
fn find_agent() -> anyhow::Result<PathBuf> {
    let beside = std::env::current_exe()
        .ok()
        .and_then(|exe| exe.parent().map(|dir| dir.join("dpu-agent")));
    let on_path = std::env::var_os("PATH")
        .into_iter()
        .flat_map(|paths| std::env::split_paths(&paths).collect::<Vec<_>>())
        .map(|dir| dir.join("dpu-agent"));
    beside
        .into_iter()
        .chain(on_path)
        .find(|candidate| candidate.is_file())
        .context(
            "cannot find dpu-agent next to dpu-sim or on PATH: build it (cargo build -p \
             dpu-agent) or pass --agent-bin",
        )
}

#[cfg(test)]
mod tests {
    use super::parse_size;

    #[test]
    fn sizes_read_with_binary_units_and_bad_ones_are_named() {
        assert_eq!(parse_size("4096"), Ok(4096));
        assert_eq!(parse_size("64M"), Ok(64 << 20));
        assert_eq!(parse_size("1GiB"), Ok(1 << 30));
        assert!(parse_size("64X").expect_err("unit").contains("\"X\""));
        assert!(parse_size("M")
            .expect_err("no number")
            .contains("not a size"));
        assert!(parse_size("99999999999G")
            .expect_err("overflow")
            .contains("too large"));
    }
}
