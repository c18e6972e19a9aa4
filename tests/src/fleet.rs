//! A fleet of real `dpu-agent` processes on this machine, for `dpuctl fleet`: N agents,
//! each on its own Unix socket with its own BlueField-3 fixture tree, a few of them broken
//! on purpose ([`Fault`]), and the inventory file that lists them all.
//!
//! Why a harness of its own: finding the bad node among two hundred is what the fleet
//! commands are for, so their tests need two hundred real agents whose faults are known in
//! advance. They are spawned all at once and then waited for together (a few seconds on
//! two cores, not two hundred sequential starts); each costs about 12 MiB (release) of
//! memory. All agents share one fake SNAP server, which keeps every agent's storage
//! backend ready without two hundred server threads.

use std::collections::BTreeMap;
use std::io;
use std::net::TcpStream;
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;

use crate::fake_snap::FakeSnap;
use crate::fixture::bluefield3_dpu;
use crate::harness::{free_tcp_port, AgentOptions, AgentProcess};

/// The MTU every healthy node's DPU data ports have (the fixture's uplink is raised from
/// 9216 to it, so uplink and host-PF representor agree); tests pass it as `--mtu`.
pub const FLEET_MTU: u32 = 9000;

/// The MTU of the uplink of a [`Fault::WrongMtu`] node.
pub const WRONG_MTU: u32 = 1500;

/// The DPU's uplink netdev in the fixture.
pub const UPLINK: &str = "p0";

/// The fixture's RDMA device and its PCI function (the BlueField NIC function).
pub const RDMA_DEVICE: &str = "mlx5_0";
/// The PCI address of the fixture's BlueField NIC function.
pub const NIC_FUNCTION: &str = "0000:03:00.0";

/// How long all agents together may take to start serving.
const START_TIMEOUT: Duration = Duration::from_secs(90);

/// What is wrong with a node, on purpose.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Fault {
    /// `mlx5_0` port 1 is not ACTIVE: `state` `1: DOWN`, `phys_state` `3: Disabled`.
    RdmaPortDown,
    /// The BlueField NIC function trained at x8 of its x16 (`current_link_width` 8).
    NarrowPcieLink,
    /// The uplink `p0` at MTU [`WRONG_MTU`] where the rest of the fleet has [`FLEET_MTU`].
    WrongMtu,
    /// The agent stopped with SIGSTOP once it served: the kernel still accepts connections
    /// into its backlog, so every call hangs until the client's deadline. Resumed on drop.
    Hung,
    /// The agent listens on TCP with mutual TLS, and the inventory gives the client a CA
    /// that did not sign the agent's certificate: every handshake is refused.
    UntrustedTls,
}

impl Fault {
    /// Every fault, in a fixed order.
    pub const ALL: [Fault; 5] = [
        Fault::RdmaPortDown,
        Fault::NarrowPcieLink,
        Fault::WrongMtu,
        Fault::Hung,
        Fault::UntrustedTls,
    ];
}

/// Which fleet to start: its size, which nodes are broken and how, how the agents log.
#[derive(Debug, Clone)]
pub struct FleetSpec {
    /// How many nodes: `node-000` .. `node-{size-1}`.
    pub size: usize,
    /// Node index → its fault; the others are healthy.
    pub faults: BTreeMap<usize, Fault>,
    /// How many consecutive nodes share a `rack` label (`r0`, `r1`, ...), for `--select`.
    pub rack_size: usize,
    /// The agents' `--log-level`: `info`, since two hundred debug logs would be most of
    /// what the agents do.
    pub log_level: &'static str,
}

/// The faulty nodes of [`FleetSpec::standard`]: a dozen, spread over the fleet, at least
/// two of each fault.
const STANDARD_FAULTS: [(usize, Fault); 12] = [
    (7, Fault::RdmaPortDown),
    (71, Fault::RdmaPortDown),
    (143, Fault::RdmaPortDown),
    (19, Fault::NarrowPcieLink),
    (88, Fault::NarrowPcieLink),
    (160, Fault::NarrowPcieLink),
    (11, Fault::WrongMtu),
    (120, Fault::WrongMtu),
    (52, Fault::Hung),
    (177, Fault::Hung),
    (64, Fault::UntrustedTls),
    (199, Fault::UntrustedTls),
];

impl FleetSpec {
    /// 200 nodes, twelve of them faulty (`STANDARD_FAULTS`): the fleet of issue 21.
    pub fn standard() -> Self {
        Self {
            size: 200,
            faults: STANDARD_FAULTS.into_iter().collect(),
            rack_size: 50,
            log_level: "info",
        }
    }

    /// `size` healthy nodes.
    pub fn healthy(size: usize) -> Self {
        Self {
            size,
            faults: BTreeMap::new(),
            rack_size: 50,
            log_level: "info",
        }
    }

    /// The same fleet with node `index` broken by `fault`.
    pub fn with_fault(mut self, index: usize, fault: Fault) -> Self {
        assert!(
            index < self.size,
            "node {index} is outside a fleet of {}",
            self.size
        );
        self.faults.insert(index, fault);
        self
    }
}

/// The name of node `index`: `node-007`.
pub fn node_name(index: usize) -> String {
    format!("node-{index:03}")
}

/// The rack label of node `index` with `rack_size` nodes a rack: `r0`, `r1`, ...
pub fn rack_of(index: usize, rack_size: usize) -> String {
    format!("r{}", index / rack_size.max(1))
}

/// The client's TLS files for a `tcp:` node, as its inventory entry names them.
#[derive(Debug, Clone)]
pub struct ClientTlsFiles {
    /// The CA the client trusts.
    pub ca: PathBuf,
    /// The client's certificate.
    pub cert: PathBuf,
    /// The client's key.
    pub key: PathBuf,
    /// The name the agent's certificate must carry.
    pub tls_name: String,
}

/// One running node of the fleet.
#[derive(Debug)]
pub struct FleetNode {
    name: String,
    fault: Option<Fault>,
    labels: BTreeMap<String, String>,
    endpoint: String,
    tcp_port: Option<u16>,
    tls: Option<ClientTlsFiles>,
    trusted_tls: Option<ClientTlsFiles>,
    root: PathBuf,
    stopped: bool,
    // Last: dropped after `Drop::drop` resumed a stopped agent.
    agent: AgentProcess,
}

impl FleetNode {
    /// Its name in the inventory and in every report row.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// What is wrong with it; `None`: healthy.
    pub fn fault(&self) -> Option<Fault> {
        self.fault
    }

    /// Its labels (`rack`).
    pub fn labels(&self) -> &BTreeMap<String, String> {
        &self.labels
    }

    /// The endpoint the inventory gives for it: its Unix socket, or `tcp:127.0.0.1:PORT`
    /// for a [`Fault::UntrustedTls`] node.
    pub fn endpoint(&self) -> &str {
        &self.endpoint
    }

    /// The client TLS files the inventory gives for it (only a `tcp:` node has them).
    pub fn tls(&self) -> Option<&ClientTlsFiles> {
        self.tls.as_ref()
    }

    /// For a [`Fault::UntrustedTls`] node, client TLS files it does accept: the positive
    /// control that only the trust is wrong.
    pub fn trusted_tls(&self) -> Option<&ClientTlsFiles> {
        self.trusted_tls.as_ref()
    }

    /// The fixture root its agent reads (`--sys-root`).
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The agent process (its Unix socket, log, pid).
    pub fn agent(&self) -> &AgentProcess {
        &self.agent
    }

    fn serving(&self) -> bool {
        UnixStream::connect(self.agent.socket()).is_ok()
            && self
                .tcp_port
                .is_none_or(|port| TcpStream::connect(("127.0.0.1", port)).is_ok())
    }
}

impl Drop for FleetNode {
    fn drop(&mut self) {
        if self.stopped {
            // Resume it so that the agent's own drop (SIGKILL, wait) finds it running.
            let _ = kill(pid_of(&self.agent), Signal::SIGCONT);
        }
    }
}

fn pid_of(agent: &AgentProcess) -> Pid {
    Pid::from_raw(i32::try_from(agent.pid()).expect("pid fits in i32"))
}

/// A started fleet: every node serving (a [`Fault::Hung`] one stopped after it served)
/// and its inventory written. Dropping it stops every agent and removes every file.
#[derive(Debug)]
pub struct Fleet {
    // Declared first so they drop first: agents go before the SNAP they use and the
    // directory they live in.
    nodes: Vec<FleetNode>,
    inventory: PathBuf,
    _snap: FakeSnap,
    _dir: tempfile::TempDir,
}

impl Fleet {
    /// Starts `spec`'s fleet: builds every fixture tree and injects the faults, spawns
    /// every agent, waits until all serve, stops the hung ones and writes the inventory.
    /// Panics (with the agent's log) when one does not start.
    pub fn start(spec: &FleetSpec) -> Self {
        let dir = tempfile::Builder::new()
            .prefix("fleet")
            .tempdir()
            .expect("tempdir");
        let snap = FakeSnap::start(&dir.path().join("spdk.sock")).expect("fake SNAP");
        let certs = spec
            .faults
            .values()
            .any(|f| *f == Fault::UntrustedTls)
            .then(|| Certificates::make(&dir.path().join("certs")));
        let mut nodes = Vec::with_capacity(spec.size);
        for index in 0..spec.size {
            let node = spawn_node(dir.path(), index, spec, snap.path(), certs.as_ref())
                .unwrap_or_else(|e| panic!("{}: {e}", node_name(index)));
            nodes.push(node);
        }
        wait_until_serving(&mut nodes);
        for node in nodes.iter_mut().filter(|n| n.fault == Some(Fault::Hung)) {
            kill(pid_of(&node.agent), Signal::SIGSTOP).expect("SIGSTOP the hung agent");
            node.stopped = true;
        }
        let inventory = dir.path().join("inventory.toml");
        std::fs::write(&inventory, inventory_toml(&nodes)).expect("write the inventory");
        Self {
            nodes,
            inventory,
            _snap: snap,
            _dir: dir,
        }
    }

    /// The inventory file listing every node.
    pub fn inventory(&self) -> &Path {
        &self.inventory
    }

    /// Every node, in index order.
    pub fn nodes(&self) -> &[FleetNode] {
        &self.nodes
    }

    /// The node called `name`.
    pub fn node(&self, name: &str) -> &FleetNode {
        self.nodes
            .iter()
            .find(|n| n.name == name)
            .unwrap_or_else(|| panic!("no node {name} in the fleet"))
    }

    /// The names of the nodes broken by `fault`.
    pub fn with_fault(&self, fault: Fault) -> Vec<&str> {
        self.nodes
            .iter()
            .filter(|n| n.fault == Some(fault))
            .map(|n| n.name.as_str())
            .collect()
    }

    /// The names of the healthy nodes.
    pub fn healthy(&self) -> Vec<&str> {
        self.nodes
            .iter()
            .filter(|n| n.fault.is_none())
            .map(|n| n.name.as_str())
            .collect()
    }
}

/// Builds node `index`'s fixture tree with its fault, and spawns its agent.
fn spawn_node(
    base: &Path,
    index: usize,
    spec: &FleetSpec,
    snap_socket: &Path,
    certs: Option<&Certificates>,
) -> Result<FleetNode, String> {
    let name = node_name(index);
    let fault = spec.faults.get(&index).copied();
    let node_dir = base.join(&name);
    let root = node_dir.join("root");
    bluefield3_dpu(&root).map_err(|e| format!("fixture tree: {e}"))?;
    set_attr(&root, &format!("sys/class/net/{UPLINK}/mtu"), FLEET_MTU)
        .map_err(|e| format!("uplink MTU: {e}"))?;
    if let Some(fault) = fault {
        inject(&root, fault).map_err(|e| format!("inject {fault:?}: {e}"))?;
    }
    let mut options = AgentOptions::new(&node_dir, &root);
    options.snap_socket = snap_socket.to_owned();
    options.log_level = spec.log_level;
    let mut endpoint = format!("unix:{}", options.socket().display());
    let (mut tcp_port, mut tls, mut trusted_tls) = (None, None, None);
    if fault == Some(Fault::UntrustedTls) {
        let certs = certs.ok_or("a TLS node needs the fleet's certificates")?;
        let port = free_tcp_port();
        endpoint = format!("tcp:127.0.0.1:{port}");
        options.extra_listen.push(endpoint.clone());
        options.config_toml = certs.agent_config();
        tcp_port = Some(port);
        tls = Some(certs.client(&certs.rogue_ca));
        trusted_tls = Some(certs.client(&certs.fleet_ca));
    }
    let agent = AgentProcess::spawn(&options)?;
    Ok(FleetNode {
        labels: BTreeMap::from([("rack".to_owned(), rack_of(index, spec.rack_size))]),
        name,
        fault,
        endpoint,
        tcp_port,
        tls,
        trusted_tls,
        root,
        stopped: false,
        agent,
    })
}

/// Rewrites the fixture files `fault` is made of, in the formats the kernel prints.
fn inject(root: &Path, fault: Fault) -> io::Result<()> {
    let port = format!("sys/class/infiniband/{RDMA_DEVICE}/ports/1");
    match fault {
        Fault::RdmaPortDown => {
            set_attr(root, &format!("{port}/state"), "1: DOWN")?;
            set_attr(root, &format!("{port}/phys_state"), "3: Disabled")
        }
        Fault::NarrowPcieLink => set_attr(
            root,
            &format!("sys/bus/pci/devices/{NIC_FUNCTION}/current_link_width"),
            8,
        ),
        Fault::WrongMtu => set_attr(root, &format!("sys/class/net/{UPLINK}/mtu"), WRONG_MTU),
        // Process and listener faults: nothing in the tree.
        Fault::Hung | Fault::UntrustedTls => Ok(()),
    }
}

/// Overwrites an existing sysfs attribute (a missing one is an error: the fixture changed
/// and the fault would silently not apply).
fn set_attr(root: &Path, rel: &str, value: impl std::fmt::Display) -> io::Result<()> {
    let path = root.join(rel);
    if !path.is_file() {
        return Err(io::Error::new(
            io::ErrorKind::NotFound,
            format!("{} is not in the fixture", path.display()),
        ));
    }
    std::fs::write(path, format!("{value}\n"))
}

/// Waits until every agent serves, checking them all in each round; panics with the log
/// of an agent that exited or of the first few that never served.
fn wait_until_serving(nodes: &mut [FleetNode]) {
    let deadline = Instant::now() + START_TIMEOUT;
    let mut waiting: Vec<usize> = (0..nodes.len()).collect();
    while !waiting.is_empty() {
        let mut still = Vec::new();
        for index in waiting {
            let node = &mut nodes[index];
            if let Some(status) = node.agent.wait_exit(Duration::ZERO) {
                panic!(
                    "{}: the agent exited with {status}:\n{}",
                    node.name,
                    node.agent.log()
                );
            }
            if !node.serving() {
                still.push(index);
            }
        }
        waiting = still;
        if !waiting.is_empty() && Instant::now() > deadline {
            let logs: Vec<String> = waiting
                .iter()
                .take(3)
                .map(|&i| format!("{}:\n{}", nodes[i].name, nodes[i].agent.log()))
                .collect();
            panic!(
                "{} of {} agents not serving after {START_TIMEOUT:?}; the first:\n{}",
                waiting.len(),
                nodes.len(),
                logs.join("\n")
            );
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The inventory TOML for `nodes`: one `[[target]]` table each, with its name, agent,
/// labels and (for a `tcp:` node) the client's TLS files.
fn inventory_toml(nodes: &[FleetNode]) -> String {
    let targets: Vec<toml::Value> = nodes
        .iter()
        .map(|node| {
            let mut target = toml::Table::new();
            target.insert("name".to_owned(), node.name.clone().into());
            target.insert("agent".to_owned(), node.endpoint.clone().into());
            if let Some(tls) = &node.tls {
                for (key, path) in [("ca", &tls.ca), ("cert", &tls.cert), ("key", &tls.key)] {
                    target.insert(key.to_owned(), path.display().to_string().into());
                }
                target.insert("tls_name".to_owned(), tls.tls_name.clone().into());
            }
            let labels: toml::Table = node
                .labels
                .iter()
                .map(|(k, v)| (k.clone(), v.clone().into()))
                .collect();
            target.insert("labels".to_owned(), labels.into());
            target.into()
        })
        .collect();
    let mut inventory = toml::Table::new();
    inventory.insert("target".to_owned(), targets.into());
    toml::to_string(&inventory).expect("an inventory serializes")
}

/// The TLS material of a fleet with TLS nodes, made with openssl as docs/security.md
/// does: the fleet's CA, the agents' certificate (`localhost`) and a client's
/// (`fleet-admin`, a viewer), and a rogue CA that signed nothing the agents present.
#[derive(Debug)]
struct Certificates {
    dir: PathBuf,
    fleet_ca: PathBuf,
    rogue_ca: PathBuf,
}

/// The name in the agents' certificate.
const TLS_NAME: &str = "localhost";
/// The client's certificate name, a viewer of every TLS agent.
const CLIENT: &str = "fleet-admin";

impl Certificates {
    fn make(dir: &Path) -> Self {
        std::fs::create_dir_all(dir).expect("certificate directory");
        self_signed_ca(dir, "fleet-ca");
        self_signed_ca(dir, "rogue-ca");
        issue(dir, "fleet-ca", TLS_NAME, "serverAuth");
        issue(dir, "fleet-ca", CLIENT, "clientAuth");
        Self {
            dir: dir.to_owned(),
            fleet_ca: dir.join("fleet-ca.crt"),
            rogue_ca: dir.join("rogue-ca.crt"),
        }
    }

    /// The agent's `[security]` table: TLS with the fleet's certificate, clients of the
    /// fleet's CA, and the client a viewer.
    fn agent_config(&self) -> String {
        let path = |p: PathBuf| toml::Value::from(p.display().to_string());
        let mut security = toml::Table::new();
        security.insert(
            "tls_cert".to_owned(),
            path(self.dir.join(format!("{TLS_NAME}.crt"))),
        );
        security.insert(
            "tls_key".to_owned(),
            path(self.dir.join(format!("{TLS_NAME}.key"))),
        );
        security.insert("client_ca".to_owned(), path(self.fleet_ca.clone()));
        security.insert("viewers".to_owned(), vec![CLIENT.to_owned()].into());
        let mut config = toml::Table::new();
        config.insert("security".to_owned(), security.into());
        toml::to_string(&config).expect("a config serializes")
    }

    fn client(&self, ca: &Path) -> ClientTlsFiles {
        ClientTlsFiles {
            ca: ca.to_owned(),
            cert: self.dir.join(format!("{CLIENT}.crt")),
            key: self.dir.join(format!("{CLIENT}.key")),
            tls_name: TLS_NAME.to_owned(),
        }
    }
}

fn openssl(dir: &Path, args: &[&str]) {
    let out = Command::new("openssl")
        .args(args)
        .current_dir(dir)
        .output()
        .expect("run openssl (the TLS fault's certificates need it)");
    assert!(
        out.status.success(),
        "openssl {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

const EC_KEY: [&str; 4] = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256"];

fn self_signed_ca(dir: &Path, ca: &str) {
    let (key, crt, subj) = (
        format!("{ca}.key"),
        format!("{ca}.crt"),
        format!("/CN={ca}"),
    );
    let mut args = vec!["req", "-x509"];
    args.extend(EC_KEY);
    args.extend([
        "-nodes", "-keyout", &key, "-out", &crt, "-days", "2", "-subj", &subj,
    ]);
    openssl(dir, &args);
}

fn issue(dir: &Path, ca: &str, name: &str, usage: &str) {
    let ext = format!("{name}.ext");
    std::fs::write(
        dir.join(&ext),
        format!("subjectAltName=DNS:{name}\nextendedKeyUsage={usage}\n"),
    )
    .expect("ext file");
    let (key, csr, crt) = (
        format!("{name}.key"),
        format!("{name}.csr"),
        format!("{name}.crt"),
    );
    let subj = format!("/CN={name}");
    let mut args = vec!["req"];
    args.extend(EC_KEY);
    args.extend(["-nodes", "-keyout", &key, "-out", &csr, "-subj", &subj]);
    openssl(dir, &args);
    let (ca_crt, ca_key) = (format!("{ca}.crt"), format!("{ca}.key"));
    openssl(
        dir,
        &[
            "x509",
            "-req",
            "-in",
            &csr,
            "-CA",
            &ca_crt,
            "-CAkey",
            &ca_key,
            "-CAcreateserial",
            "-out",
            &crt,
            "-days",
            "2",
            "-extfile",
            &ext,
        ],
    );
}
