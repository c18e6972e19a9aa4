//! Real Open vSwitch daemons for the OVS tier: a private `ovsdb-server` on a fresh database
//! in a temp directory, and `ovs-vswitchd` with the userspace datapath inside a network
//! namespace of its own, so its tap devices (`ovs-netdev`, bridge and internal ports) never
//! collide with another test or touch the machine's interfaces. Both are child processes
//! (no `--detach`), killed on Drop with the namespace deleted after them.
//!
//! With `OVS_RUNDIR` set to the temp directory and no `--unixctl`, ovs-vswitchd puts its
//! control socket at `{dir}/ovs-vswitchd.{pid}.ctl` — the same rule the client follows in
//! `/var/run/openvswitch` on a DPU. Needs root (namespaces, taps) and Debian's
//! `openvswitch-switch`; [`missing_prerequisite`] says what is missing.

use std::fs::File;
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use tempfile::TempDir;

/// The schema Debian's openvswitch-common installs.
pub const SCHEMA: &str = "/usr/share/openvswitch/vswitch.ovsschema";
/// How long a daemon may take to create its socket.
const START_TIMEOUT: Duration = Duration::from_secs(20);

/// The programs the tier runs (the daemons, and the tools the tests verify with).
const PROGRAMS: [&str; 6] = [
    "ovsdb-tool",
    "ovsdb-server",
    "ovs-vswitchd",
    "ovs-vsctl",
    "ip",
    "ping",
];

/// iproute2 mounts `/run/netns` on first use; concurrent first uses race.
static NETNS_CREATE: Mutex<()> = Mutex::new(());
static NEXT_ID: AtomicU32 = AtomicU32::new(0);

/// Why this machine cannot run the OVS tier, if it cannot.
pub fn missing_prerequisite() -> Option<String> {
    if !crate::running_as_root() {
        return Some("the OVS tier needs root (network namespaces, tap devices)".to_owned());
    }
    if let Some(program) = PROGRAMS.iter().find(|p| program_path(p).is_none()) {
        return Some(format!(
            "`{program}` is not installed (apt: openvswitch-switch, iproute2, iputils-ping)"
        ));
    }
    if !Path::new(SCHEMA).is_file() {
        return Some(format!("{SCHEMA} is missing (apt: openvswitch-common)"));
    }
    None
}

use crate::command::program_path;
pub use crate::command::run;

/// A network namespace, deleted (with every interface in it) when dropped.
#[derive(Debug)]
pub struct Netns {
    name: String,
}

impl Netns {
    /// Creates `dpu-ovs-{pid}-{n}-{purpose}`, unique per process and call.
    pub fn create(purpose: &str) -> Result<Self, String> {
        let id = NEXT_ID.fetch_add(1, Ordering::Relaxed);
        let name = format!("dpu-ovs-{}-{id}-{purpose}", std::process::id());
        let _serial = NETNS_CREATE.lock().unwrap_or_else(|e| e.into_inner());
        run("ip", &["netns", "add", &name])?;
        let ns = Self { name };
        ns.ip(&["link", "set", "lo", "up"])?;
        Ok(ns)
    }

    /// The name `ip netns` knows it by.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// `ip -n {name} ARGS`.
    pub fn ip(&self, args: &[&str]) -> Result<String, String> {
        let mut all = vec!["-n", self.name.as_str()];
        all.extend_from_slice(args);
        run("ip", &all)
    }

    /// `ip netns exec {name} PROGRAM ARGS`.
    pub fn exec(&self, program: &str, args: &[&str]) -> Result<String, String> {
        let mut all = vec!["netns", "exec", self.name.as_str(), program];
        all.extend_from_slice(args);
        run("ip", &all)
    }
}

impl Drop for Netns {
    fn drop(&mut self) {
        if let Err(e) = run("ip", &["netns", "del", &self.name]) {
            eprintln!("cleanup: {e}");
        }
    }
}

/// A private ovsdb-server (and, unless asked otherwise, ovs-vswitchd) for one test.
#[derive(Debug)]
pub struct OvsDaemons {
    // Field order is drop order after `Drop::drop`: the namespace goes after the daemons,
    // the directory last.
    ovsdb: Option<Child>,
    vswitchd: Option<Child>,
    netns: Netns,
    dir: TempDir,
}

impl OvsDaemons {
    /// Starts both daemons on a freshly created, `ovs-vsctl init`-ed database.
    pub fn start() -> Result<Self, String> {
        let mut daemons = Self::start_without_vswitchd()?;
        daemons.start_vswitchd()?;
        Ok(daemons)
    }

    /// Starts only ovsdb-server: changes are stored but nobody applies them (`cur_cfg`
    /// never moves), for the tests of that case.
    pub fn start_without_vswitchd() -> Result<Self, String> {
        let dir = tempfile::Builder::new()
            .prefix("dpu-ovs-")
            .tempdir()
            .map_err(|e| format!("temp dir: {e}"))?;
        let db = dir.path().join("conf.db");
        run("ovsdb-tool", &["create", &path_str(&db), SCHEMA])?;
        let mut daemons = Self {
            ovsdb: None,
            vswitchd: None,
            netns: Netns::create("vswitchd")?,
            dir,
        };
        daemons.start_ovsdb()?;
        daemons.vsctl(&["--no-wait", "init"])?;
        Ok(daemons)
    }

    /// The run directory (`OVS_RUNDIR`): sockets, pid files, logs.
    pub fn rundir(&self) -> &Path {
        self.dir.path()
    }

    /// `{rundir}/db.sock`.
    pub fn db_socket(&self) -> PathBuf {
        self.rundir().join("db.sock")
    }

    /// `unix:{rundir}/db.sock`, the form the agent's `--ovsdb` and `ovs-vsctl --db` take.
    pub fn db_address(&self) -> String {
        format!("unix:{}", self.db_socket().display())
    }

    /// The namespace ovs-vswitchd runs in, where its internal ports appear.
    pub fn netns(&self) -> &Netns {
        &self.netns
    }

    /// `ovs-vsctl --db=unix:... --timeout=20 ARGS`, the independent check of what our
    /// client wrote.
    pub fn vsctl(&self, args: &[&str]) -> Result<String, String> {
        let db = format!("--db={}", self.db_address());
        let mut all = vec![db.as_str(), "--timeout=20"];
        all.extend_from_slice(args);
        run("ovs-vsctl", &all)
    }

    /// `ovs-appctl -t {rundir}/ovs-vswitchd.{pid}.ctl ARGS`: OVS's own client of the control
    /// socket, the judge of what the agent reads through it.
    pub fn appctl(&self, args: &[&str]) -> Result<String, String> {
        let pid_file = self.rundir().join("ovs-vswitchd.pid");
        let pid = std::fs::read_to_string(&pid_file)
            .map_err(|e| format!("{}: {e}", pid_file.display()))?;
        let target = self
            .rundir()
            .join(format!("ovs-vswitchd.{}.ctl", pid.trim()));
        let target = path_str(&target);
        let mut all = vec!["-t", target.as_str()];
        all.extend_from_slice(args);
        run("ovs-appctl", &all)
    }

    /// ovs-vswitchd's log so far.
    pub fn vswitchd_log(&self) -> String {
        std::fs::read_to_string(self.rundir().join("ovs-vswitchd.log")).unwrap_or_default()
    }

    /// Kills ovsdb-server (SIGKILL, like a crash) and starts it again on the same database
    /// and socket path.
    pub fn restart_ovsdb(&mut self) -> Result<(), String> {
        if let Some(mut child) = self.ovsdb.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
        self.start_ovsdb()
    }

    fn start_ovsdb(&mut self) -> Result<(), String> {
        let dir = self.rundir().to_owned();
        let args = [
            path_str(&dir.join("conf.db")),
            format!("--remote=punix:{}", path_str(&dir.join("db.sock"))),
            format!("--unixctl={}", path_str(&dir.join("ovsdb-server.ctl"))),
            format!("--pidfile={}", path_str(&dir.join("ovsdb-server.pid"))),
            format!("--log-file={}", path_str(&dir.join("ovsdb-server.log"))),
        ];
        let child = self.spawn("ovsdb-server", None, &args)?;
        self.ovsdb = Some(child);
        wait_for("ovsdb-server's db.sock", || {
            UnixStream::connect(dir.join("db.sock")).is_ok()
        })
    }

    fn start_vswitchd(&mut self) -> Result<(), String> {
        let dir = self.rundir().to_owned();
        let args = [
            format!("unix:{}", path_str(&dir.join("db.sock"))),
            format!("--pidfile={}", path_str(&dir.join("ovs-vswitchd.pid"))),
            format!("--log-file={}", path_str(&dir.join("ovs-vswitchd.log"))),
        ];
        // `ip netns exec` execs the program, so the child is ovs-vswitchd itself.
        let netns = self.netns.name().to_owned();
        let child = self.spawn("ovs-vswitchd", Some(&netns), &args)?;
        let pid = child.id();
        self.vswitchd = Some(child);
        let ctl = dir.join(format!("ovs-vswitchd.{pid}.ctl"));
        wait_for("ovs-vswitchd's control socket", || {
            UnixStream::connect(&ctl).is_ok()
        })
    }

    fn spawn(&self, program: &str, netns: Option<&str>, args: &[String]) -> Result<Child, String> {
        let exe = program_path(program).ok_or_else(|| format!("{program} not found"))?;
        let stderr = File::create(self.rundir().join(format!("{program}.stderr")))
            .map_err(|e| format!("{program} stderr file: {e}"))?;
        let mut command = match netns {
            Some(ns) => {
                let ip = program_path("ip").ok_or("ip not found")?;
                let mut c = Command::new(ip);
                c.args(["netns", "exec", ns]).arg(exe);
                c
            }
            None => Command::new(exe),
        };
        let dir = self.rundir();
        command
            .args(args)
            .env("OVS_RUNDIR", dir)
            .env("OVS_LOGDIR", dir)
            .env("OVS_DBDIR", dir)
            .env("OVS_SYSCONFDIR", dir)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(stderr)
            .spawn()
            .map_err(|e| format!("start {program}: {e}"))
    }
}

impl Drop for OvsDaemons {
    fn drop(&mut self) {
        for child in [self.vswitchd.as_mut(), self.ovsdb.as_mut()]
            .into_iter()
            .flatten()
        {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

fn wait_for(what: &str, mut ready: impl FnMut() -> bool) -> Result<(), String> {
    let started = Instant::now();
    while started.elapsed() < START_TIMEOUT {
        if ready() {
            return Ok(());
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    Err(format!("{what} did not appear within {START_TIMEOUT:?}"))
}

fn path_str(path: &Path) -> String {
    path.display().to_string()
}
