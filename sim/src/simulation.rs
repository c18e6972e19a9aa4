//! A running simulation: for each node, a machine's sys tree, a fake SNAP on its own
//! socket, private OVS daemons where the machine can run them ([`crate::switch`]) and the
//! real `dpu-agent` serving on a Unix socket, plus the inventory file that lists them for
//! `dpuctl fleet`. Everything lives under the directory it is given;
//! stopping it (or dropping it) stops exactly what it started.

use std::fs;
use std::io;
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;

use crate::fake_snap::FakeSnap;
use crate::fault::{Fault, FaultError};
use crate::host_disk::{HostDisk, HostDiskError};
use crate::ovs_daemons::{OvsDaemons, OvsError};
use crate::profile::Profile;
use crate::switch::{self, OvsChoice, SwitchOff};
use crate::traffic;

/// The remote NVMe-oF target every simulated SNAP serves: address (TEST-NET-1, never a
/// real host), service id and the one subsystem it has. `dpuctl storage remote create`
/// attaches to it; another subsystem there is refused as SPDK refuses it.
pub const SIMULATED_TARGET: (&str, &str, &str) =
    ("192.0.2.10", "4420", "nqn.2026-01.io.dpu-sim:storage");

/// How long an agent may take to listen after it is started.
const START_TIMEOUT: Duration = Duration::from_secs(20);

/// How long an agent may take to exit after SIGTERM before it is killed.
const STOP_TIMEOUT: Duration = Duration::from_secs(10);

/// What to simulate, and where.
#[derive(Debug, Clone)]
pub struct SimulationOptions {
    /// The directory everything lives in (created if absent; must hold no simulation).
    pub dir: PathBuf,
    /// The machine each node is.
    pub profile: Profile,
    /// How many nodes.
    pub count: usize,
    /// The `dpu-agent` binary to run.
    pub agent_bin: PathBuf,
    /// Bytes per second each up link and active RDMA port receives (half as many sent).
    pub link_bytes_per_sec: u64,
    /// Bytes per second read through each volume SNAP holds (and received on the
    /// storage RDMA port), as a host reading its emulated disk.
    pub volume_read_bytes_per_sec: u64,
    /// Each node also gets a host with a real disk of this many bytes (a loop device:
    /// root only) that shows as the namespace the node's SNAP exposes, so `dpuctl prove
    /// storage` can run against the node. `None`: no host side.
    pub host_disk_bytes: Option<u64>,
    /// Which nodes get private OVS daemons (and with them a Switch service that serves).
    pub ovs: OvsChoice,
}

impl SimulationOptions {
    /// One BlueField-3 under `dir`, run by `agent_bin`, with traffic at 1 MB/s per link
    /// and 256 KB/s per volume, and OVS where the machine can run it.
    pub fn new(dir: impl Into<PathBuf>, agent_bin: impl Into<PathBuf>) -> Self {
        Self {
            dir: dir.into(),
            profile: Profile::Bluefield3,
            count: 1,
            agent_bin: agent_bin.into(),
            link_bytes_per_sec: 1_000_000,
            volume_read_bytes_per_sec: 256_000,
            host_disk_bytes: None,
            ovs: OvsChoice::Auto,
        }
    }
}

/// Why a simulation could not start, or a fault could not be applied.
#[derive(Debug, thiserror::Error)]
pub enum SimError {
    /// A count of zero, or more nodes than this tool will start on one machine.
    #[error("--count must be between 1 and {max}, got {count}")]
    Count {
        /// What was asked for.
        count: usize,
        /// The most nodes one simulation starts.
        max: usize,
    },
    /// The directory already holds a simulation.
    #[error(
        "{dir} already holds a simulation (inventory.toml is there): stop it with \
         `dpu-sim down --dir {dir}` or choose another directory", dir = .0.display()
    )]
    Occupied(PathBuf),
    /// A file or directory of the simulation could not be made.
    #[error("cannot prepare {}", path.display())]
    Prepare {
        /// What could not be made.
        path: PathBuf,
        /// Why.
        #[source]
        source: io::Error,
    },
    /// The fake SNAP could not listen.
    #[error("cannot start the simulated SNAP on {}", path.display())]
    Snap {
        /// Its socket.
        path: PathBuf,
        /// Why.
        #[source]
        source: io::Error,
    },
    /// The agent binary could not be run.
    #[error("cannot run the agent {}", bin.display())]
    Spawn {
        /// The binary.
        bin: PathBuf,
        /// Why.
        #[source]
        source: io::Error,
    },
    /// The agent exited or did not listen in time.
    #[error("node {node}: the agent did not start ({why}); its log {log}:\n{tail}")]
    AgentStart {
        /// The node.
        node: String,
        /// What happened.
        why: String,
        /// Where its log is.
        log: String,
        /// The end of its log.
        tail: String,
    },
    /// No node has that name.
    #[error("no node is called {given:?}; the nodes are {}", have.join(", "))]
    NoSuchNode {
        /// What was asked for.
        given: String,
        /// The nodes there are.
        have: Vec<String>,
    },
    /// The agent could not be signalled (stopped or resumed).
    #[error("cannot signal the agent of {node}")]
    Signal {
        /// The node.
        node: String,
        /// Why.
        #[source]
        source: nix::Error,
    },
    /// A node's host disk could not be made.
    #[error("node {node}: no host disk")]
    HostDisk {
        /// The node.
        node: String,
        /// Why.
        #[source]
        source: HostDiskError,
    },
    /// `--ovs` on a machine that cannot run the OVS daemons.
    #[error("--ovs: {reason}; leave --ovs out to run without OVS")]
    OvsUnavailable {
        /// What the machine lacks.
        reason: String,
    },
    /// A node's OVS daemons did not start.
    #[error("node {node}: its OVS daemons did not start (--no-ovs runs without them)")]
    Ovs {
        /// The node.
        node: String,
        /// Why.
        #[source]
        source: OvsError,
    },
    /// A `host-path` or `qos` fault on a node started without a host disk.
    #[error("{node} has no host disk: start the simulation with --host-disk SIZE (as root)")]
    NoHostDisk {
        /// The node.
        node: String,
    },
    /// A fault could not be applied.
    #[error(transparent)]
    Fault(#[from] FaultError),
    /// The traffic model could not move a counter.
    #[error("the traffic model cannot move the counters of {node}")]
    Traffic {
        /// The node.
        node: String,
        /// Why.
        #[source]
        source: io::Error,
    },
}

/// One simulated machine with its agent.
#[derive(Debug)]
pub struct Node {
    name: String,
    dir: PathBuf,
    agent: Child,
    snap: FakeSnap,
    host: Option<HostDisk>,
    ovs: Option<OvsDaemons>,
    stopped: bool,
}

impl Node {
    /// Its name in the inventory (`sim-1`, `sim-2`, ...).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The agent's gRPC socket, for `dpuctl --agent unix:PATH`.
    pub fn socket(&self) -> PathBuf {
        self.dir.join("agent.sock")
    }

    /// The agent's `/metrics` socket.
    pub fn metrics_socket(&self) -> PathBuf {
        self.dir.join("metrics.sock")
    }

    /// The machine's tree (`--sys-root`).
    pub fn root(&self) -> PathBuf {
        self.dir.join("root")
    }

    /// The agent's log.
    pub fn log(&self) -> PathBuf {
        self.dir.join("agent.log")
    }

    /// The agent's process id.
    pub fn agent_pid(&self) -> u32 {
        self.agent.id()
    }

    /// The node's own directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The simulated SNAP, for tests that script it further.
    pub fn snap(&self) -> &FakeSnap {
        &self.snap
    }

    /// The node's host and its disk, when the simulation was started with one.
    pub fn host(&self) -> Option<&HostDisk> {
        self.host.as_ref()
    }

    /// The node's OVS daemons (in `sim-N/ovs/`), when its switch is real OVS; `None`
    /// when its Switch service is disabled ([`Simulation::switch_off`] says why).
    pub fn ovs(&self) -> Option<&OvsDaemons> {
        self.ovs.as_ref()
    }
}

/// A running simulation; dropping it stops every agent and SNAP it started.
#[derive(Debug)]
pub struct Simulation {
    options: SimulationOptions,
    nodes: Vec<Node>,
    inventory: PathBuf,
    last_tick: Instant,
    switch_off: Option<SwitchOff>,
}

/// The most nodes one simulation starts (each is an agent process with its threads).
pub(crate) const MAX_NODES: usize = 64;

impl Simulation {
    /// Builds every node's tree, starts its SNAP, its OVS daemons (see
    /// [`SimulationOptions::ovs`]) and its agent, waits until every agent listens, and
    /// writes `inventory.toml`. On any failure, what was started is stopped.
    pub fn start(options: &SimulationOptions) -> Result<Self, SimError> {
        if options.count == 0 || options.count > MAX_NODES {
            return Err(SimError::Count {
                count: options.count,
                max: MAX_NODES,
            });
        }
        let inventory = options.dir.join("inventory.toml");
        if inventory.exists() {
            return Err(SimError::Occupied(options.dir.clone()));
        }
        let switch_off = switch::decide(options.ovs, options.count);
        if let (OvsChoice::Always, Some(off)) = (options.ovs, &switch_off) {
            return Err(SimError::OvsUnavailable {
                reason: off.to_string(),
            });
        }
        let with_ovs = switch_off.is_none();
        let mut simulation = Self {
            options: options.clone(),
            nodes: Vec::with_capacity(options.count),
            inventory,
            last_tick: Instant::now(),
            switch_off,
        };
        for index in 1..=options.count {
            let node = start_node(options, index, with_ovs)?;
            simulation.nodes.push(node);
        }
        for node in &mut simulation.nodes {
            wait_until_listening(node)?;
        }
        let text = inventory_toml(&simulation.nodes, options.profile);
        fs::write(&simulation.inventory, text).map_err(|source| SimError::Prepare {
            path: simulation.inventory.clone(),
            source,
        })?;
        simulation.last_tick = Instant::now();
        Ok(simulation)
    }

    /// The nodes, in order.
    pub fn nodes(&self) -> &[Node] {
        &self.nodes
    }

    /// The inventory file listing every node, for `dpuctl fleet --inventory`.
    pub fn inventory(&self) -> &Path {
        &self.inventory
    }

    /// Why no node has OVS (each node's Switch service is DISABLED); `None` when every
    /// node's switch is real OVS.
    pub fn switch_off(&self) -> Option<&SwitchOff> {
        self.switch_off.as_ref()
    }

    /// How often [`Simulation::tick`] should be called: every 200 ms, or every 25 ms when
    /// the nodes have host disks. A proof subtracts the background it measured over an
    /// idle window from each trial's window; counters that move in 200 ms steps make that
    /// estimate off by a step (200 KB at 1 MB/s), while a real NIC's move smoothly, so a
    /// proof would fail on the simulator for a reason no real machine has.
    pub fn tick_interval(&self) -> Duration {
        if self.options.host_disk_bytes.is_some() {
            Duration::from_millis(25)
        } else {
            Duration::from_millis(200)
        }
    }

    /// Moves every node's counters by the traffic since the last tick (call it every few
    /// hundred milliseconds; `dpu-sim up` does).
    pub fn tick(&mut self) -> Result<(), SimError> {
        let now = Instant::now();
        let secs = now.duration_since(self.last_tick).as_secs_f64();
        self.last_tick = now;
        let share = |rate: u64| -> u64 {
            // Sub-byte remainders are dropped: a tick moves whole bytes.
            #[allow(
                clippy::cast_possible_truncation,
                clippy::cast_sign_loss,
                clippy::cast_precision_loss
            )]
            let bytes = (rate as f64 * secs) as u64;
            bytes
        };
        let links = share(self.options.link_bytes_per_sec);
        let reads = share(self.options.volume_read_bytes_per_sec);
        let port = self.options.profile.storage_port();
        for node in &mut self.nodes {
            let root = node.root();
            let traffic = |source| SimError::Traffic {
                node: node.name.clone(),
                source,
            };
            traffic::advance_links(&root, links).map_err(traffic)?;
            traffic::read_volumes(&root, &node.snap, port, reads).map_err(traffic)?;
            if let Some(host) = &mut node.host {
                host.step(&node.snap, &root, port).map_err(traffic)?;
            }
        }
        Ok(())
    }

    /// The index of the node called `name`.
    pub fn node_index(&self, name: &str) -> Result<usize, SimError> {
        self.nodes
            .iter()
            .position(|n| n.name == name)
            .ok_or_else(|| SimError::NoSuchNode {
                given: name.to_owned(),
                have: self.nodes.iter().map(|n| n.name.clone()).collect(),
            })
    }

    /// Applies `fault` to node `index`.
    pub fn apply(&mut self, index: usize, fault: &Fault) -> Result<(), SimError> {
        let have = self.nodes.iter().map(|n| n.name.clone()).collect();
        let node = self.nodes.get_mut(index).ok_or(SimError::NoSuchNode {
            given: format!("#{index}"),
            have,
        })?;
        if fault.apply_to_tree(&node.root())? {
            return Ok(());
        }
        match fault {
            Fault::SnapHang => node.snap.delay_replies(Some(Duration::from_secs(3600))),
            Fault::SnapResume => node.snap.delay_replies(None),
            Fault::SnapRestart => node.snap.restart().map_err(|source| SimError::Snap {
                path: node.dir.join("snap.sock"),
                source,
            })?,
            Fault::AgentStop => signal_agent(node, Signal::SIGSTOP)?,
            Fault::AgentResume => signal_agent(node, Signal::SIGCONT)?,
            Fault::HostPath(path) => match &mut node.host {
                Some(host) => host.set_path(*path),
                None => {
                    return Err(SimError::NoHostDisk {
                        node: node.name.clone(),
                    })
                }
            },
            Fault::Qos(enforced) => match &mut node.host {
                Some(host) => host.set_qos_enforced(*enforced),
                None => {
                    return Err(SimError::NoHostDisk {
                        node: node.name.clone(),
                    })
                }
            },
            // Applied to the tree above.
            _ => {}
        }
        Ok(())
    }

    /// Stops every agent (SIGTERM, then SIGKILL past a deadline), then its SNAP and OVS
    /// daemons (and their network namespace), and removes the inventory; the nodes'
    /// directories (trees, logs, state) stay for inspection.
    pub fn stop(mut self) {
        self.stop_all();
    }

    fn stop_all(&mut self) {
        for node in &mut self.nodes {
            stop_agent(node);
        }
        // Dropping a node stops its SNAP, host disk and OVS daemons, after its agent.
        self.nodes.clear();
        let _ = fs::remove_file(&self.inventory);
    }
}

impl Drop for Simulation {
    fn drop(&mut self) {
        self.stop_all();
    }
}

/// Sends `signal` to the node's agent (SIGSTOP: it is stopped until SIGCONT).
fn signal_agent(node: &mut Node, signal: Signal) -> Result<(), SimError> {
    // The agent is our child: its pid is valid until we reap it.
    let pid = Pid::from_raw(i32::try_from(node.agent.id()).unwrap_or(i32::MAX));
    kill(pid, signal).map_err(|source| SimError::Signal {
        node: node.name.clone(),
        source,
    })?;
    node.stopped = signal == Signal::SIGSTOP;
    Ok(())
}

/// Builds node `index`'s directory, tree and config, and starts its SNAP, its OVS daemons
/// (`with_ovs`) and its agent.
fn start_node(options: &SimulationOptions, index: usize, with_ovs: bool) -> Result<Node, SimError> {
    let name = format!("sim-{index}");
    let dir = options.dir.join(&name);
    let prepare = |path: &Path| {
        let path = path.to_owned();
        move |source| SimError::Prepare { path, source }
    };
    // A node directory left by an earlier run is replaced whole: its tree and state
    // belong to a simulation that is gone.
    if dir.exists() {
        fs::remove_dir_all(&dir).map_err(prepare(&dir))?;
    }
    fs::create_dir_all(dir.join("state")).map_err(prepare(&dir))?;
    let root = dir.join("root");
    options.profile.build(&root).map_err(prepare(&root))?;
    let snap_socket = dir.join("snap.sock");
    let snap = FakeSnap::start(&snap_socket).map_err(|source| SimError::Snap {
        path: snap_socket.clone(),
        source,
    })?;
    let (traddr, trsvcid, subnqn) = SIMULATED_TARGET;
    snap.serve_only(traddr, trsvcid, &[subnqn]);
    let host = match options.host_disk_bytes {
        Some(bytes) => Some(
            HostDisk::attach(&dir.join("host"), bytes).map_err(|source| SimError::HostDisk {
                node: name.clone(),
                source,
            })?,
        ),
        None => None,
    };
    let ovs = if with_ovs {
        let ovs =
            OvsDaemons::start_in(&dir.join("ovs"), &name).map_err(|source| SimError::Ovs {
                node: name.clone(),
                source,
            })?;
        Some(ovs)
    } else {
        None
    };
    let config = dir.join("agent.toml");
    fs::write(&config, agent_config(&dir, ovs.as_ref())).map_err(prepare(&config))?;
    let log_path = dir.join("agent.log");
    let log = fs::File::create(&log_path).map_err(prepare(&log_path))?;
    let log_err = log.try_clone().map_err(prepare(&log_path))?;
    let agent = Command::new(&options.agent_bin)
        .arg("--config")
        .arg(&config)
        .args(["--log-level", "info"])
        .env_remove("DPU_AGENT_CONFIG")
        .stdin(Stdio::null())
        .stdout(log)
        .stderr(log_err)
        .spawn()
        .map_err(|source| SimError::Spawn {
            bin: options.agent_bin.clone(),
            source,
        })?;
    Ok(Node {
        name,
        dir,
        agent,
        snap,
        host,
        ovs,
        stopped: false,
    })
}

/// The agent's config for a node in `dir`: its own socket, tree, state and SNAP; its own
/// OVS daemons' database socket and run directory, or OVS disabled without them;
/// `/metrics` on a Unix socket.
fn agent_config(dir: &Path, ovs: Option<&OvsDaemons>) -> String {
    let mut config = toml::Table::new();
    let path = |rel: &str| toml::Value::from(dir.join(rel).display().to_string());
    let endpoint = |rel: &str| toml::Value::from(format!("unix:{}", dir.join(rel).display()));
    config.insert("listen".to_owned(), vec![endpoint("agent.sock")].into());
    config.insert("sys_root".to_owned(), path("root"));
    config.insert("state_dir".to_owned(), path("state"));
    let table = |pairs: Vec<(&str, toml::Value)>| {
        toml::Value::Table(pairs.into_iter().map(|(k, v)| (k.to_owned(), v)).collect())
    };
    config.insert(
        "snap".to_owned(),
        table(vec![("socket", path("snap.sock"))]),
    );
    let ovs = match ovs {
        Some(ovs) => table(vec![
            ("enabled", true.into()),
            ("ovsdb", ovs.db_address().into()),
            ("rundir", ovs.rundir().display().to_string().into()),
        ]),
        None => table(vec![("enabled", false.into())]),
    };
    config.insert("ovs".to_owned(), ovs);
    config.insert(
        "metrics".to_owned(),
        table(vec![("listen", endpoint("metrics.sock"))]),
    );
    toml::to_string(&config).unwrap_or_default()
}

/// Waits until the node's agent accepts on its socket; an agent that exits or takes too
/// long is an error carrying the end of its log.
fn wait_until_listening(node: &mut Node) -> Result<(), SimError> {
    let deadline = Instant::now() + START_TIMEOUT;
    let failed = |node: &Node, why: String| SimError::AgentStart {
        node: node.name.clone(),
        why,
        log: node.log().display().to_string(),
        tail: log_tail(&node.log()),
    };
    loop {
        if let Ok(Some(status)) = node.agent.try_wait() {
            return Err(failed(node, format!("it exited: {status}")));
        }
        if UnixStream::connect(node.socket()).is_ok() {
            return Ok(());
        }
        if Instant::now() > deadline {
            return Err(failed(
                node,
                format!("no listener within {START_TIMEOUT:?}"),
            ));
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The last lines of a log, for an error.
fn log_tail(path: &Path) -> String {
    let text = fs::read_to_string(path).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(15)..].join("\n")
}

/// Stops a node's agent: resumed first if stopped, then SIGTERM, then SIGKILL.
fn stop_agent(node: &mut Node) {
    let pid = Pid::from_raw(i32::try_from(node.agent.id()).unwrap_or(i32::MAX));
    if node.stopped {
        let _ = kill(pid, Signal::SIGCONT);
    }
    let _ = kill(pid, Signal::SIGTERM);
    let deadline = Instant::now() + STOP_TIMEOUT;
    while Instant::now() < deadline {
        if let Ok(Some(_)) = node.agent.try_wait() {
            return;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let _ = node.agent.kill();
    let _ = node.agent.wait();
}

/// `inventory.toml`: one `[[target]]` per node with its socket and the profile as a label.
fn inventory_toml(nodes: &[Node], profile: Profile) -> String {
    let targets: Vec<toml::Value> = nodes
        .iter()
        .map(|node| {
            let mut target = toml::Table::new();
            target.insert("name".to_owned(), node.name.clone().into());
            target.insert(
                "agent".to_owned(),
                format!("unix:{}", node.socket().display()).into(),
            );
            let mut labels = toml::Table::new();
            labels.insert("profile".to_owned(), profile.name().into());
            labels.insert("simulated".to_owned(), "true".into());
            target.insert("labels".to_owned(), labels.into());
            target.into()
        })
        .collect();
    let mut inventory = toml::Table::new();
    inventory.insert("target".to_owned(), targets.into());
    toml::to_string(&inventory).unwrap_or_default()
}
