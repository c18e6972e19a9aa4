//! Real Open vSwitch daemons, private to one simulated node (or one test of the OVS tier):
//! an `ovsdb-server` on a fresh database, and `ovs-vswitchd` with the userspace datapath
//! inside a network namespace of its own, so its tap devices (`ovs-netdev`, bridge and
//! internal ports) never collide with another node's or touch the machine's interfaces.
//! Both are child processes (no `--detach`), stopped on Drop with the namespace deleted
//! after them. A simulated node's agent is pointed at them, so its Switch service serves
//! against the same OVS a BlueField runs, not an imitation of it.
//!
//! Everything lives in one run directory (`OVS_RUNDIR`): the database, `db.sock`, pid files,
//! logs. With no `--unixctl`, ovs-vswitchd puts its control socket at
//! `{dir}/ovs-vswitchd.{pid}.ctl`, the rule the agent follows in `/var/run/openvswitch` on
//! a DPU. Needs root (namespaces, taps) and Debian's `openvswitch-switch`;
//! [`missing_prerequisite`] says what is missing.

use std::fs::{self, File};
use std::io;
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;
use tempfile::TempDir;

use crate::netns::Netns;
use crate::tool::{program_path, run, ToolError};

/// The schema Debian's openvswitch-common installs.
pub const SCHEMA: &str = "/usr/share/openvswitch/vswitch.ovsschema";

/// How long a daemon may take to create its socket.
const START_TIMEOUT: Duration = Duration::from_secs(20);

/// How long a daemon may take to exit after SIGTERM before it is killed.
const STOP_TIMEOUT: Duration = Duration::from_secs(5);

/// The programs the daemons need: the two daemons, the database tool that creates their
/// database, `ovs-vsctl` that initialises it, and `ip` for the namespace.
pub const PROGRAMS: [&str; 5] = [
    "ovsdb-tool",
    "ovsdb-server",
    "ovs-vswitchd",
    "ovs-vsctl",
    "ip",
];

/// Why this machine cannot run private OVS daemons, if it cannot: not root, a program
/// of [`PROGRAMS`] or the schema missing. The simulation then leaves its nodes' Switch
/// service disabled and prints this reason.
pub fn missing_prerequisite() -> Option<String> {
    if !nix::unistd::geteuid().is_root() {
        return Some("the OVS daemons need root (network namespaces, tap devices)".to_owned());
    }
    if let Some(program) = PROGRAMS.iter().find(|p| program_path(p).is_none()) {
        return Some(format!(
            "`{program}` is not installed (apt: openvswitch-switch, iproute2)"
        ));
    }
    if !Path::new(SCHEMA).is_file() {
        return Some(format!("{SCHEMA} is missing (apt: openvswitch-common)"));
    }
    None
}

/// Why the daemons could not start, or a question to them could not be asked.
#[derive(Debug, thiserror::Error)]
pub enum OvsError {
    /// A tool (`ovsdb-tool`, `ovs-vsctl`, `ip`) failed.
    #[error(transparent)]
    Tool(#[from] ToolError),
    /// The run directory or a file in it could not be made or read.
    #[error("cannot use {}", path.display())]
    File {
        /// The path.
        path: PathBuf,
        /// Why.
        #[source]
        source: io::Error,
    },
    /// A daemon could not be started.
    #[error("cannot start {program}")]
    Spawn {
        /// The daemon.
        program: String,
        /// Why.
        #[source]
        source: io::Error,
    },
    /// A daemon exited while it was starting.
    #[error(
        "{program} exited while starting ({status}); see {program}.log and {program}.stderr \
         in {}", dir.display()
    )]
    Exited {
        /// The daemon.
        program: String,
        /// How it exited.
        status: ExitStatus,
        /// The run directory with its logs.
        dir: PathBuf,
    },
    /// A daemon did not create its socket in time.
    #[error("{what} did not appear within {waited:?}; the daemons' logs are in {}", dir.display())]
    Timeout {
        /// The socket waited for.
        what: String,
        /// How long.
        waited: Duration,
        /// The run directory with the logs.
        dir: PathBuf,
    },
}

/// The run directory: a temp directory the daemons own (a test's, removed with them), or
/// one they are given (a simulated node's `sim-N/ovs/`, kept for inspection like the
/// node's other logs).
#[derive(Debug)]
enum RunDir {
    Temp(TempDir),
    Given(PathBuf),
}

impl RunDir {
    fn path(&self) -> &Path {
        match self {
            Self::Temp(dir) => dir.path(),
            Self::Given(dir) => dir,
        }
    }
}

/// A private ovsdb-server (and, unless asked otherwise, ovs-vswitchd).
#[derive(Debug)]
pub struct OvsDaemons {
    // Field order is drop order after `Drop::drop`: the namespace goes after the daemons,
    // the directory last.
    ovsdb: Option<Child>,
    vswitchd: Option<Child>,
    netns: Netns,
    dir: RunDir,
}

impl OvsDaemons {
    /// Starts both daemons on a freshly created, `ovs-vsctl init`-ed database in a temp
    /// directory (removed when they stop).
    pub fn start() -> Result<Self, OvsError> {
        let mut daemons = Self::start_without_vswitchd()?;
        daemons.start_vswitchd()?;
        Ok(daemons)
    }

    /// Starts only ovsdb-server, in a temp directory: changes are stored but nobody
    /// applies them (`cur_cfg` never moves), for the tests of that case.
    pub fn start_without_vswitchd() -> Result<Self, OvsError> {
        let dir = tempfile::Builder::new()
            .prefix("dpu-ovs-")
            .tempdir()
            .map_err(|source| OvsError::File {
                path: std::env::temp_dir(),
                source,
            })?;
        Self::start_ovsdb_in(RunDir::Temp(dir), "vswitchd")
    }

    /// Starts both daemons with `dir` as their run directory (created if absent; it must
    /// hold no database) and ovs-vswitchd in a namespace named after `purpose` (a node's
    /// name). The directory stays when they stop: their logs are evidence.
    pub fn start_in(dir: &Path, purpose: &str) -> Result<Self, OvsError> {
        fs::create_dir_all(dir).map_err(|source| OvsError::File {
            path: dir.to_owned(),
            source,
        })?;
        let mut daemons = Self::start_ovsdb_in(RunDir::Given(dir.to_owned()), purpose)?;
        daemons.start_vswitchd()?;
        Ok(daemons)
    }

    fn start_ovsdb_in(dir: RunDir, purpose: &str) -> Result<Self, OvsError> {
        let db = dir.path().join("conf.db");
        run("ovsdb-tool", &["create", &path_str(&db), SCHEMA])?;
        let mut daemons = Self {
            ovsdb: None,
            vswitchd: None,
            netns: Netns::create(purpose)?,
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

    /// The daemons' process ids (ovsdb-server, then ovs-vswitchd when it runs), for
    /// checks that they are gone once stopped.
    pub fn pids(&self) -> Vec<u32> {
        [self.ovsdb.as_ref(), self.vswitchd.as_ref()]
            .into_iter()
            .flatten()
            .map(Child::id)
            .collect()
    }

    /// `ovs-vsctl --db=unix:... --timeout=20 ARGS`, the independent check of what a
    /// client (the agent) wrote.
    pub fn vsctl(&self, args: &[&str]) -> Result<String, ToolError> {
        let db = format!("--db={}", self.db_address());
        let mut all = vec![db.as_str(), "--timeout=20"];
        all.extend_from_slice(args);
        run("ovs-vsctl", &all)
    }

    /// `ovs-appctl -t {rundir}/ovs-vswitchd.{pid}.ctl ARGS`: OVS's own client of the
    /// control socket, the judge of what the agent reads through it.
    pub fn appctl(&self, args: &[&str]) -> Result<String, OvsError> {
        let pid_file = self.rundir().join("ovs-vswitchd.pid");
        let pid = fs::read_to_string(&pid_file).map_err(|source| OvsError::File {
            path: pid_file.clone(),
            source,
        })?;
        let target = self
            .rundir()
            .join(format!("ovs-vswitchd.{}.ctl", pid.trim()));
        let target = path_str(&target);
        let mut all = vec!["-t", target.as_str()];
        all.extend_from_slice(args);
        Ok(run("ovs-appctl", &all)?)
    }

    /// ovs-vswitchd's log so far.
    pub fn vswitchd_log(&self) -> String {
        fs::read_to_string(self.rundir().join("ovs-vswitchd.log")).unwrap_or_default()
    }

    /// Kills ovsdb-server (SIGKILL, like a crash) and starts it again on the same database
    /// and socket path.
    pub fn restart_ovsdb(&mut self) -> Result<(), OvsError> {
        if let Some(mut child) = self.ovsdb.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
        self.start_ovsdb()
    }

    fn start_ovsdb(&mut self) -> Result<(), OvsError> {
        let dir = self.rundir().to_owned();
        let args = [
            path_str(&dir.join("conf.db")),
            format!("--remote=punix:{}", path_str(&dir.join("db.sock"))),
            format!("--unixctl={}", path_str(&dir.join("ovsdb-server.ctl"))),
            format!("--pidfile={}", path_str(&dir.join("ovsdb-server.pid"))),
            format!("--log-file={}", path_str(&dir.join("ovsdb-server.log"))),
        ];
        let child = self.spawn("ovsdb-server", None, &args)?;
        let ovsdb = self.ovsdb.insert(child);
        wait_for(
            &dir,
            "ovsdb-server",
            "ovsdb-server's db.sock",
            ovsdb,
            || UnixStream::connect(dir.join("db.sock")).is_ok(),
        )
    }

    fn start_vswitchd(&mut self) -> Result<(), OvsError> {
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
        let vswitchd = self.vswitchd.insert(child);
        let ctl = dir.join(format!("ovs-vswitchd.{pid}.ctl"));
        let what = "ovs-vswitchd's control socket";
        wait_for(&dir, "ovs-vswitchd", what, vswitchd, || {
            UnixStream::connect(&ctl).is_ok()
        })
    }

    fn spawn(
        &self,
        program: &str,
        netns: Option<&str>,
        args: &[String],
    ) -> Result<Child, OvsError> {
        let not_found = |program: &str| ToolError::NotFound {
            program: program.to_owned(),
        };
        let exe = program_path(program).ok_or_else(|| not_found(program))?;
        let stderr_path = self.rundir().join(format!("{program}.stderr"));
        let stderr = File::create(&stderr_path).map_err(|source| OvsError::File {
            path: stderr_path,
            source,
        })?;
        let mut command = match netns {
            Some(ns) => {
                let ip = program_path("ip").ok_or_else(|| not_found("ip"))?;
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
            .map_err(|source| OvsError::Spawn {
                program: program.to_owned(),
                source,
            })
    }
}

impl Drop for OvsDaemons {
    /// ovs-vswitchd first (it is ovsdb-server's client), each with SIGTERM so it removes
    /// its pid file and sockets, SIGKILL past a deadline.
    fn drop(&mut self) {
        for child in [self.vswitchd.as_mut(), self.ovsdb.as_mut()]
            .into_iter()
            .flatten()
        {
            stop(child);
        }
    }
}

/// SIGTERM, then SIGKILL after [`STOP_TIMEOUT`]; reaped either way.
fn stop(child: &mut Child) {
    if let Ok(Some(_)) = child.try_wait() {
        return;
    }
    // Our child, not yet reaped: its pid names it.
    let pid = Pid::from_raw(i32::try_from(child.id()).unwrap_or(i32::MAX));
    let _ = kill(pid, Signal::SIGTERM);
    let deadline = Instant::now() + STOP_TIMEOUT;
    while Instant::now() < deadline {
        if let Ok(Some(_)) = child.try_wait() {
            return;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    let _ = child.kill();
    let _ = child.wait();
}

/// Waits until `ready`, failing early when `child` exits.
fn wait_for(
    dir: &Path,
    program: &str,
    what: &str,
    child: &mut Child,
    mut ready: impl FnMut() -> bool,
) -> Result<(), OvsError> {
    let started = Instant::now();
    while started.elapsed() < START_TIMEOUT {
        if ready() {
            return Ok(());
        }
        if let Ok(Some(status)) = child.try_wait() {
            return Err(OvsError::Exited {
                program: program.to_owned(),
                status,
                dir: dir.to_owned(),
            });
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    Err(OvsError::Timeout {
        what: what.to_owned(),
        waited: START_TIMEOUT,
        dir: dir.to_owned(),
    })
}

fn path_str(path: &Path) -> String {
    path.display().to_string()
}
