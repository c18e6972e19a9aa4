//! Running the real binaries: build them once, start `dpu-agent` with chosen flags, wait
//! until it serves, stop it with a signal, and run `dpuctl` against it.

use std::ffi::OsString;
use std::fs::File;
use std::io::Read as _;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Output, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use hyper_util::rt::TokioIo;
use tonic::transport::{Channel, Endpoint};

/// How long an agent may take to start serving.
const START_TIMEOUT: Duration = Duration::from_secs(30);

/// Directory holding the `dpu-agent` and `dpuctl` binaries of the current profile, built
/// on first use so tests never run stale binaries.
///
/// `DPU_TEST_BIN_DIR` names a directory whose binaries were built already (`.ci/run`
/// builds the x86-64 release pair once and hands it to every benchmark and to the
/// packages): used as it is, with no cargo call. A directory without both binaries is a
/// broken set-up and panics rather than testing something else.
pub fn bin_dir() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        if let Some(dir) = std::env::var_os("DPU_TEST_BIN_DIR") {
            let dir = PathBuf::from(dir);
            for binary in ["dpu-agent", "dpuctl"] {
                assert!(
                    dir.join(binary).is_file(),
                    "DPU_TEST_BIN_DIR={} holds no {binary}",
                    dir.display()
                );
            }
            return dir;
        }
        let exe = std::env::current_exe().expect("current_exe");
        // target/<profile>/deps/<test> -> target/<profile>
        let profile_dir = exe
            .parent()
            .and_then(Path::parent)
            .expect("test binary lives in target/<profile>/deps")
            .to_owned();
        let profile = match profile_dir.file_name().and_then(|n| n.to_str()) {
            Some("debug") => "dev".to_owned(),
            Some(other) => other.to_owned(),
            None => "dev".to_owned(),
        };
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
        let manifest = Path::new(env!("CARGO_MANIFEST_DIR")).join("../Cargo.toml");
        let status = Command::new(cargo)
            .args([
                "build",
                "--quiet",
                "--profile",
                &profile,
                "-p",
                "dpu-agent",
                "-p",
                "dpuctl",
                "-p",
                "dpu-sim",
            ])
            .arg("--manifest-path")
            .arg(&manifest)
            .status()
            .expect("run cargo build for the binaries under test");
        assert!(
            status.success(),
            "building dpu-agent, dpuctl and dpu-sim failed"
        );
        profile_dir
    })
}

/// The Python with grpcio, grpcio-reflection and protobuf the clients in Python use
/// (`DPU_TEST_PYTHON`, else `python3`), or why there is none (for `skip!`).
pub fn grpc_python() -> Result<String, String> {
    let python = std::env::var("DPU_TEST_PYTHON").unwrap_or_else(|_| "python3".to_owned());
    match Command::new(&python)
        .args(["-c", "import grpc, grpc_reflection, google.protobuf"])
        .output()
    {
        Ok(out) if out.status.success() => Ok(python),
        Ok(out) => Err(format!(
            "{python} lacks grpcio/grpcio-reflection/protobuf: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        )),
        Err(e) => Err(format!("cannot run {python}: {e}")),
    }
}

/// The `dpu-sim` binary beside the binaries under test ([`bin_dir`]).
pub fn sim_bin() -> PathBuf {
    let bin = bin_dir().join("dpu-sim");
    assert!(
        bin.is_file(),
        "{} holds no dpu-sim (cargo build -p dpu-sim)",
        bin_dir().display()
    );
    bin
}

/// A `/proc/{pid}/status` figure in KiB (`VmRSS:`, `VmHWM:`, ...), for memory bounds and
/// benchmarks; None when the process or the line is gone.
pub fn proc_status_kib(pid: u32, key: &str) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with(key))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// A port on 127.0.0.1 that was free a moment ago.
pub fn free_tcp_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("free port")
}

/// A running `dpu-agent` child process. Killed on drop if still running.
#[derive(Debug)]
pub struct AgentProcess {
    child: Child,
    socket: PathBuf,
    log: PathBuf,
}

/// How to start an agent.
#[derive(Debug, Clone)]
pub struct AgentOptions {
    /// Working directory for sockets and logs.
    pub dir: PathBuf,
    /// Fixture root for `--sys-root`.
    pub sys_root: PathBuf,
    /// SNAP socket to point at (a FakeSnap, or a path where nothing listens).
    pub snap_socket: PathBuf,
    /// Extra listeners besides the Unix socket.
    pub extra_listen: Vec<String>,
    /// Extra flags.
    pub extra_args: Vec<String>,
    /// Disable the OVS backend (the mocked tier has no ovsdb-server).
    pub ovs_disabled: bool,
    /// Point the OVS backend at private daemons: `--ovsdb` and `--ovs-rundir` (see
    /// [`AgentOptions::with_ovs`]).
    pub ovs: Option<OvsTarget>,
    /// Extra TOML for the agent's config file (e.g. `[storage]\nreconcile_interval = 1`).
    pub config_toml: String,
    /// The `dpu-agent` binary; `None` runs the host build from [`bin_dir`].
    pub agent_bin: Option<PathBuf>,
    /// A command the agent runs under, e.g. `scripts/aarch64-runner` (qemu-aarch64) for
    /// the Arm build; empty runs the binary directly. The wrapper must `exec` the agent
    /// so that signals reach it.
    pub wrapper: Vec<OsString>,
    /// `--log-level`: `debug` for tests (the log is their evidence), `info` for
    /// benchmarks (debug logging of every HTTP/2 frame would be what they measure).
    pub log_level: &'static str,
}

/// Where the agent finds OVS.
#[derive(Debug, Clone)]
pub struct OvsTarget {
    /// `unix:{rundir}/db.sock`, for `--ovsdb`.
    pub ovsdb: String,
    /// The run directory holding `ovs-vswitchd.pid` and its control socket.
    pub rundir: PathBuf,
}

impl AgentOptions {
    /// Defaults for a test: socket and log in `dir`, OVS disabled.
    pub fn new(dir: &Path, sys_root: &Path) -> Self {
        Self {
            dir: dir.to_owned(),
            sys_root: sys_root.to_owned(),
            snap_socket: dir.join("spdk.sock"),
            extra_listen: Vec::new(),
            extra_args: Vec::new(),
            ovs_disabled: true,
            ovs: None,
            config_toml: String::new(),
            agent_bin: None,
            wrapper: Vec::new(),
            log_level: "debug",
        }
    }

    /// Enables the OVS backend on `--ovsdb {ovsdb} --ovs-rundir {rundir}` (e.g. the
    /// private daemons of [`crate::ovs::OvsDaemons`]).
    pub fn with_ovs(mut self, ovsdb: &str, rundir: &Path) -> Self {
        self.ovs_disabled = false;
        self.ovs = Some(OvsTarget {
            ovsdb: ovsdb.to_owned(),
            rundir: rundir.to_owned(),
        });
        self
    }

    /// The agent's Unix socket path.
    pub fn socket(&self) -> PathBuf {
        self.dir.join("agent.sock")
    }
}

impl AgentProcess {
    /// Starts the agent and waits until it accepts connections on its Unix socket.
    pub fn start(options: &AgentOptions) -> Self {
        Self::try_start(options).unwrap_or_else(|log| panic!("agent did not start:\n{log}"))
    }

    /// Starts the agent; on failure returns its log.
    pub fn try_start(options: &AgentOptions) -> Result<Self, String> {
        let mut agent = Self::spawn(options)?;
        let deadline = Instant::now() + START_TIMEOUT;
        loop {
            if let Ok(Some(status)) = agent.child.try_wait() {
                return Err(format!("agent exited with {status}:\n{}", agent.log()));
            }
            if std::os::unix::net::UnixStream::connect(&agent.socket).is_ok() {
                return Ok(agent);
            }
            if Instant::now() > deadline {
                return Err(format!(
                    "agent not serving after {START_TIMEOUT:?}:\n{}",
                    agent.log()
                ));
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Starts the agent process without waiting for it to serve (for tests that expect
    /// it to refuse to start).
    pub fn spawn(options: &AgentOptions) -> Result<Self, String> {
        let socket = options.socket();
        let log = options.dir.join(format!("agent-{}.log", unique()));
        let agent_bin = options
            .agent_bin
            .clone()
            .unwrap_or_else(|| bin_dir().join("dpu-agent"));
        let mut cmd = match options.wrapper.split_first() {
            Some((program, args)) => {
                let mut cmd = Command::new(program);
                cmd.args(args).arg(&agent_bin);
                cmd
            }
            None => Command::new(&agent_bin),
        };
        cmd.arg("--listen")
            .arg(format!("unix:{}", socket.display()))
            .arg("--sys-root")
            .arg(&options.sys_root)
            .arg("--snap-socket")
            .arg(&options.snap_socket)
            .arg("--state-dir")
            .arg(options.dir.join("state"))
            .arg("--log-level")
            .arg(options.log_level);
        for listen in &options.extra_listen {
            cmd.arg("--listen").arg(listen);
        }
        // Test TCP listeners are plaintext on loopback unless the test brings TLS config.
        if options.extra_listen.iter().any(|l| l.starts_with("tcp:"))
            && !options.config_toml.contains("tls_cert")
        {
            cmd.arg("--insecure-listen");
        }
        if options.ovs_disabled || !options.config_toml.is_empty() {
            let mut text = options.config_toml.clone();
            if options.ovs_disabled {
                text.push_str("\n[ovs]\nenabled = false\n");
            }
            let config = options.dir.join("agent-test.toml");
            std::fs::write(&config, text).map_err(|e| e.to_string())?;
            cmd.arg("--config").arg(config);
        }
        if let Some(ovs) = &options.ovs {
            cmd.arg("--ovsdb")
                .arg(&ovs.ovsdb)
                .arg("--ovs-rundir")
                .arg(&ovs.rundir);
        }
        cmd.args(&options.extra_args);
        let log_file = File::create(&log).map_err(|e| e.to_string())?;
        let err_file = log_file.try_clone().map_err(|e| e.to_string())?;
        let child = cmd
            .stdin(Stdio::null())
            .stdout(log_file)
            .stderr(err_file)
            .spawn()
            .map_err(|e| format!("spawn {}: {e}", agent_bin.display()))?;
        Ok(Self { child, socket, log })
    }

    /// Waits for the process to exit on its own.
    pub fn wait_exit(&mut self, timeout: Duration) -> Option<ExitStatus> {
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(status) = self.child.try_wait().expect("try_wait") {
                return Some(status);
            }
            if Instant::now() > deadline {
                return None;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// `dpu-agent --health-check SERVICE` against this agent's socket, as an exec probe
    /// runs it: its exit code (0 SERVING). The probe's output must name the service.
    pub fn health_check(&self, service: &str) -> Option<i32> {
        let out = Command::new(bin_dir().join("dpu-agent"))
            .arg("--listen")
            .arg(self.endpoint())
            .args(["--health-check", service])
            .env_remove("DPU_AGENT_CONFIG")
            .output()
            .expect("run dpu-agent --health-check");
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            stdout.contains(&format!("{service}: ")),
            "the probe names the service: {stdout}{}",
            String::from_utf8_lossy(&out.stderr)
        );
        out.status.code()
    }

    /// The agent's Unix socket.
    pub fn socket(&self) -> &Path {
        &self.socket
    }

    /// `unix:{socket}`, for `dpuctl --agent`.
    pub fn endpoint(&self) -> String {
        format!("unix:{}", self.socket.display())
    }

    /// The agent's process id (for reading its memory use from `/proc`).
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Everything the agent logged so far.
    pub fn log(&self) -> String {
        let mut text = String::new();
        if let Ok(mut f) = File::open(&self.log) {
            let _ = f.read_to_string(&mut text);
        }
        text
    }

    /// Sends a signal (e.g. "TERM") and waits for the exit status.
    pub fn signal_and_wait(&mut self, signal: &str, timeout: Duration) -> ExitStatus {
        let pid = self.child.id().to_string();
        let status = Command::new("kill")
            .args([&format!("-{signal}"), &pid])
            .status()
            .expect("run kill");
        assert!(status.success(), "kill -{signal} {pid} failed");
        self.wait_exit(timeout).unwrap_or_else(|| {
            panic!(
                "agent still running {timeout:?} after SIG{signal}:\n{}",
                self.log()
            )
        })
    }

    /// A gRPC channel over the Unix socket.
    pub async fn channel(&self) -> Channel {
        unix_channel(&self.socket).await
    }
}

impl Drop for AgentProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A gRPC channel to a Unix socket.
pub async fn unix_channel(path: &Path) -> Channel {
    let path = path.to_owned();
    Endpoint::from_static("http://agent.invalid")
        .connect_with_connector(tower::service_fn(move |_| {
            let path = path.clone();
            async move {
                tokio::net::UnixStream::connect(path)
                    .await
                    .map(TokioIo::new)
            }
        }))
        .await
        .expect("connect to agent socket")
}

/// Runs `dpuctl` with arguments and returns its output.
pub fn dpuctl(args: &[&str]) -> Output {
    Command::new(bin_dir().join("dpuctl"))
        .args(args)
        .env_remove("DPUCTL_AGENT")
        .stdin(Stdio::null())
        .output()
        .expect("run dpuctl")
}

fn unique() -> u128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0)
}
