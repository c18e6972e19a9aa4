//! Real SPDK v24.01 for the `spdk` test tier: `spdk_tgt` processes (`--no-huge`, so no
//! hugepages, no PCI device and no root-only kernel module are needed), SPDK's own
//! `scripts/rpc.py` as the independent client that checks what the agent did, raw JSON-RPC
//! over the Unix socket to record what the real server answers, an instance set up as the
//! remote NVMe/TCP target, and `spdk_nvme_perf` reading over NVMe/TCP in user space.
//!
//! The tree is built by `scripts/build-spdk.sh`; [`missing_prerequisite`] says when it is
//! not there. Every process is a child of the test, in a process group of its own, killed
//! (SIGKILL) on Drop, and its DPDK runtime files are removed after it.

use std::ffi::{OsStr, OsString};
use std::fs::{File, OpenOptions};
use std::io::{Read as _, Write as _};
use std::os::unix::net::UnixStream;
use std::os::unix::process::CommandExt as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Output, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Mutex, MutexGuard, OnceLock};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::rpc_server::{Answer, CallError, RpcServer};

/// Environment variable naming a built SPDK tree; overrides the build script's cache.
pub const DIR_ENV: &str = "DPU_TEST_SPDK_DIR";
/// How long one `spdk_tgt` may take to answer `spdk_get_version` after it is started.
const START_TIMEOUT: Duration = Duration::from_secs(30);
/// `rpc.py -t`: how long SPDK's client waits for one reply.
const RPC_TIMEOUT_SECS: &str = "30";
/// Upper bound for any one helper command (rpc.py, spdk_nvme_perf), so a hung tool fails
/// the test instead of hanging it.
const COMMAND_TIMEOUT: Duration = Duration::from_secs(90);
/// How long a raw JSON-RPC exchange may take.
const RAW_TIMEOUT: Duration = Duration::from_secs(10);
/// DPDK memory of one `spdk_tgt`, in MiB: `-s 512` fails initialising the iSCSI pools.
const TGT_MEM_MB: &str = "1024";
/// DPDK memory of one `spdk_nvme_perf` run, in MiB (enough for a few queues of 4 KiB I/O).
const PERF_MEM_MB: &str = "256";

/// The files whose presence makes a tree usable, relative to the tree.
const REQUIRED: [&str; 3] = [
    "build/bin/spdk_tgt",
    "build/bin/spdk_nvme_perf",
    "scripts/rpc.py",
];

/// Malloc bdev of a [`RemoteTarget`]: 64 MiB in 512-byte blocks.
pub const REMOTE_BDEV: &str = "Malloc0";
/// Size of [`REMOTE_BDEV`] in MiB.
pub const REMOTE_BDEV_MIB: u64 = 64;
/// Block size of [`REMOTE_BDEV`].
pub const REMOTE_BLOCK_SIZE: u64 = 512;
/// Subsystem a [`RemoteTarget`] exports [`REMOTE_BDEV`] in.
pub const REMOTE_NQN: &str = "nqn.2016-06.io.spdk:cnode1";

static NEXT_SHM: AtomicU32 = AtomicU32::new(0);
static EXCLUSIVE: Mutex<()> = Mutex::new(());

/// The SPDK tree the tier uses: `$DPU_TEST_SPDK_DIR`, else the build script's cache
/// (`$SPDK_CACHE`, default `${XDG_CACHE_HOME:-~/.cache}/dpu-spdk`) `/current`, the same
/// rule `scripts/build-spdk.sh --print-dir` follows.
pub fn spdk_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os(DIR_ENV).filter(|d| !d.is_empty()) {
        return PathBuf::from(dir);
    }
    let cache = std::env::var_os("SPDK_CACHE")
        .filter(|d| !d.is_empty())
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            let base = std::env::var_os("XDG_CACHE_HOME")
                .filter(|d| !d.is_empty())
                .map(PathBuf::from)
                .unwrap_or_else(|| {
                    PathBuf::from(std::env::var_os("HOME").unwrap_or_default()).join(".cache")
                });
            base.join("dpu-spdk")
        });
    cache.join("current")
}

/// Why this machine cannot run the SPDK tier, if it cannot: the tree lacks `spdk_tgt`,
/// `spdk_nvme_perf` or `rpc.py`, or python3 cannot run rpc.py. Checked once per process.
pub fn missing_prerequisite() -> Option<String> {
    static MISSING: OnceLock<Option<String>> = OnceLock::new();
    MISSING
        .get_or_init(|| {
            let dir = spdk_dir();
            if let Some(file) = REQUIRED.iter().find(|f| !dir.join(f).is_file()) {
                return Some(format!(
                    "SPDK v24.01 not built: run scripts/build-spdk.sh ({} has no {file}; \
                     ${DIR_ENV} names another tree)",
                    dir.display()
                ));
            }
            let mut python = Command::new("python3");
            python
                .arg(dir.join("scripts/rpc.py"))
                .arg("--help")
                .stdout(Stdio::null());
            match run_bounded(python, COMMAND_TIMEOUT) {
                Ok(out) if out.status.success() => None,
                Ok(out) => Some(format!(
                    "python3 cannot run SPDK's rpc.py ({}): {}",
                    out.status,
                    String::from_utf8_lossy(&out.stderr).trim()
                )),
                Err(e) => Some(format!("python3 does not run (apt: python3): {e}")),
            }
        })
        .clone()
}

/// Serialises the tests that start SPDK within one test process: each `spdk_tgt` takes
/// about 1 GiB and busy-polls a core, and on a small machine two tests' worth of them make
/// every exchange slow. Hold the guard for the whole test.
pub fn exclusive() -> MutexGuard<'static, ()> {
    EXCLUSIVE.lock().unwrap_or_else(|e| e.into_inner())
}

/// A shared-memory id (`-i`) no other SPDK process of this machine's tests uses: the pid
/// keeps test processes apart, the counter the instances of one process.
fn next_shm_id() -> u32 {
    let n = NEXT_SHM.fetch_add(1, Ordering::Relaxed) % 256;
    (std::process::id() % (1 << 22)) * 256 + n
}

/// `LD_LIBRARY_PATH` for the tree's shared libraries (SPDK and ISA-L are built shared).
fn library_path(tree: &Path) -> OsString {
    let mut paths = vec![
        tree.join("build/lib"),
        tree.join("isa-l/.libs"),
        tree.join("isa-l-crypto/.libs"),
    ];
    if let Some(old) = std::env::var_os("LD_LIBRARY_PATH") {
        paths.extend(std::env::split_paths(&old));
    }
    std::env::join_paths(paths).unwrap_or_default()
}

/// Removes what DPDK and SPDK leave behind for shared-memory id `id` once its process is
/// gone (runtime directory, trace file), so repeated runs do not fill /var/run and /dev/shm.
fn remove_runtime_files(id: u32, app: &str) {
    let prefix = format!("spdk{id}");
    let mut dirs = vec![PathBuf::from("/var/run/dpdk"), PathBuf::from("/tmp/dpdk")];
    if let Some(runtime) = std::env::var_os("XDG_RUNTIME_DIR") {
        dirs.push(PathBuf::from(runtime).join("dpdk"));
    }
    for dir in dirs {
        let _ = std::fs::remove_dir_all(dir.join(&prefix));
    }
    let _ = std::fs::remove_file(format!("/dev/shm/{app}_trace.{id}"));
}

/// Runs a command with its output captured, killing it after `timeout`.
fn run_bounded(mut command: Command, timeout: Duration) -> Result<Output, String> {
    let what = format!("{command:?}");
    let mut child = command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("start {what}: {e}"))?;
    let drain = |stream: Option<Box<dyn std::io::Read + Send>>| {
        std::thread::spawn(move || {
            let mut bytes = Vec::new();
            if let Some(mut stream) = stream {
                let _ = stream.read_to_end(&mut bytes);
            }
            bytes
        })
    };
    let stdout = drain(
        child
            .stdout
            .take()
            .map(|s| Box::new(s) as Box<dyn std::io::Read + Send>),
    );
    let stderr = drain(
        child
            .stderr
            .take()
            .map(|s| Box::new(s) as Box<dyn std::io::Read + Send>),
    );
    let deadline = Instant::now() + timeout;
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(10)),
            Ok(None) => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!("{what} still running after {timeout:?}; killed"));
            }
            Err(e) => return Err(format!("wait for {what}: {e}")),
        }
    };
    Ok(Output {
        status,
        stdout: stdout.join().unwrap_or_default(),
        stderr: stderr.join().unwrap_or_default(),
    })
}

/// The `error` object rpc.py printed after "response:" when SPDK refused a call (the text
/// [`SpdkTgt::rpc`] returns as its error), e.g. `{"code": -22, "message": "Invalid
/// argument"}`; None when the failure was not a JSON-RPC error reply.
pub fn rpc_error_reply(text: &str) -> Option<Value> {
    let start = text.find("response:\n")? + "response:\n".len();
    let rest = &text[start..];
    let mut values = serde_json::Deserializer::from_str(rest).into_iter::<Value>();
    values.next()?.ok()
}

/// One `spdk_tgt` process: `--no-huge -s 1024 -r {dir}/{name}.sock -m 0x1 -i {unique}`,
/// in its own process group, its log in `{dir}/{name}.log`. Killed on Drop.
///
/// `--disable-cpumask-locks` lets several instances share core 0 (SPDK otherwise takes
/// `/var/tmp/spdk_cpu_lock_000` and a second instance refuses to start).
#[derive(Debug)]
pub struct SpdkTgt {
    tree: PathBuf,
    name: String,
    socket: PathBuf,
    log: PathBuf,
    shm_id: u32,
    child: Option<Child>,
    /// rpc.py in its server mode, started by the first [`SpdkTgt::rpc`] call and kept for
    /// the next (a new one after one that was lost).
    rpc_server: Mutex<Option<RpcServer>>,
}

impl SpdkTgt {
    /// Starts `spdk_tgt` with its socket and log in `dir`, and waits (at most 30 s) until
    /// the socket answers `spdk_get_version`.
    pub fn start(dir: &Path, name: &str) -> Result<Self, String> {
        let mut tgt = Self {
            tree: spdk_dir(),
            name: name.to_owned(),
            socket: dir.join(format!("{name}.sock")),
            log: dir.join(format!("{name}.log")),
            shm_id: next_shm_id(),
            child: None,
            rpc_server: Mutex::new(None),
        };
        tgt.spawn()?;
        Ok(tgt)
    }

    fn spawn(&mut self) -> Result<(), String> {
        let mut log = OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.log)
            .map_err(|e| format!("{}: {e}", self.log.display()))?;
        let _ = writeln!(
            log,
            "==== spdk_tgt {} (shm id {}) ====",
            self.name, self.shm_id
        );
        let err = log.try_clone().map_err(|e| e.to_string())?;
        let bin = self.tree.join("build/bin/spdk_tgt");
        let child = Command::new(&bin)
            .arg("--no-huge")
            .args(["-s", TGT_MEM_MB])
            .arg("-r")
            .arg(&self.socket)
            .args(["-m", "0x1"])
            .args(["-i", &self.shm_id.to_string()])
            .arg("--disable-cpumask-locks")
            .env("LD_LIBRARY_PATH", library_path(&self.tree))
            .process_group(0)
            .stdin(Stdio::null())
            .stdout(log)
            .stderr(err)
            .spawn()
            .map_err(|e| format!("start {}: {e}", bin.display()))?;
        self.child = Some(child);
        let deadline = Instant::now() + START_TIMEOUT;
        loop {
            if let Some(child) = self.child.as_mut() {
                if let Ok(Some(status)) = child.try_wait() {
                    self.child = None;
                    return Err(format!(
                        "spdk_tgt {} exited with {status}:\n{}",
                        self.name,
                        self.log()
                    ));
                }
            }
            let request = br#"{"jsonrpc":"2.0","id":0,"method":"spdk_get_version"}"#;
            if let Ok(RawExchange::Reply(reply)) =
                exchange(&self.socket, request, Duration::from_secs(2))
            {
                if reply["result"]["version"].is_string() {
                    return Ok(());
                }
            }
            if Instant::now() > deadline {
                self.kill();
                return Err(format!(
                    "spdk_tgt {} did not answer spdk_get_version within {START_TIMEOUT:?}:\n{}",
                    self.name,
                    self.log()
                ));
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// The JSON-RPC socket (what the agent's `--snap-socket` points at).
    pub fn socket(&self) -> &Path {
        &self.socket
    }

    /// The name given at start (the socket's and the log's file stem).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The shared-memory id (`-i`), the same across [`SpdkTgt::restart`].
    pub fn shm_id(&self) -> u32 {
        self.shm_id
    }

    /// The process id while it runs (for a test that signals it itself).
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }

    /// Everything this instance logged so far, across restarts: the first thing to read
    /// when SPDK refused something.
    pub fn log(&self) -> String {
        let mut text = String::new();
        if let Ok(mut f) = File::open(&self.log) {
            let _ = f.read_to_string(&mut text);
        }
        text
    }

    /// `python3 scripts/rpc.py -s SOCK -t 30 METHOD ARGS...`, SPDK's own client, as the
    /// independent witness of what the agent did. Returns stdout parsed as JSON (a bare
    /// word such as a bdev name as a string, nothing as null); on failure the command line
    /// and what rpc.py printed (including SPDK's error reply, see [`rpc_error_reply`]).
    /// The calls go to one rpc.py kept running in its `--server` mode (the same parser,
    /// client and output, without starting Python per call: [`crate::rpc_server`]); an
    /// argument that cannot travel as one line of that protocol runs rpc.py once.
    pub fn rpc(&self, method: &str, args: &[&str]) -> Result<Value, String> {
        let rpc_py = self.tree.join("scripts/rpc.py");
        let mut argv: Vec<&OsStr> = vec![
            OsStr::new("-s"),
            self.socket.as_os_str(),
            OsStr::new("-t"),
            OsStr::new(RPC_TIMEOUT_SECS),
            OsStr::new(method),
        ];
        argv.extend(args.iter().map(OsStr::new));
        let failed = |printed: &str, how: &str| {
            format!(
                "rpc.py {method} {} failed ({how}):\n{}",
                args.join(" "),
                printed.trim()
            )
        };
        let stdout = match self.rpc_through_server(&rpc_py, &argv) {
            Ok(Answer::Succeeded(stdout)) => stdout,
            Ok(Answer::Failed(printed)) => return Err(failed(&printed, "**STATUS=1")),
            Err(CallError::Lost(printed)) => return Err(failed(&printed, "server lost")),
            Err(CallError::NotSendable(_)) => {
                let mut command = Command::new("python3");
                command.arg(&rpc_py).args(&argv);
                let out = run_bounded(command, COMMAND_TIMEOUT)?;
                let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
                if !out.status.success() {
                    let printed = format!("{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
                    return Err(failed(&printed, &out.status.to_string()));
                }
                stdout
            }
        };
        let text = stdout.trim();
        if text.is_empty() {
            return Ok(Value::Null);
        }
        Ok(serde_json::from_str(text).unwrap_or_else(|_| Value::String(text.to_owned())))
    }

    /// One call through this instance's rpc.py server, started when there is none; a server
    /// that was lost is dropped (killed), so the next call starts another.
    fn rpc_through_server(&self, rpc_py: &Path, argv: &[&OsStr]) -> Result<Answer, CallError> {
        let mut slot = self
            .rpc_server
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if slot.is_none() {
            *slot = Some(RpcServer::start(rpc_py).map_err(CallError::Lost)?);
        }
        let server = slot.as_mut().expect("started above");
        let answer = server.call(argv, COMMAND_TIMEOUT);
        if matches!(answer, Err(CallError::Lost(_))) {
            *slot = None;
        }
        answer
    }

    /// Sends one JSON-RPC request over the Unix socket and returns SPDK's reply object
    /// exactly as it came (no client library in between), for recording the server's own
    /// codes and messages. Panics when no complete reply comes.
    pub fn raw(&self, request: &Value) -> Value {
        let bytes = serde_json::to_vec(request).expect("serialise request");
        match self.raw_bytes(&bytes) {
            Ok(RawExchange::Reply(reply)) => reply,
            Ok(other) => panic!(
                "spdk_tgt {} gave no complete reply to {request}: {other:?}",
                self.name
            ),
            Err(e) => panic!("raw JSON-RPC to spdk_tgt {}: {e}", self.name),
        }
    }

    /// Sends `bytes` as they are (they need not be valid JSON) and returns what came back:
    /// the first complete JSON value, the connection closing without one, or bytes that
    /// never became a complete value within 10 s.
    pub fn raw_bytes(&self, bytes: &[u8]) -> Result<RawExchange, String> {
        exchange(&self.socket, bytes, RAW_TIMEOUT)
    }

    /// Kills the process (SIGKILL to its process group, like a crash) and waits for it.
    /// The socket file stays behind, as after a real crash.
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let group = format!("-{}", child.id());
            let _ = Command::new("kill")
                .args(["-KILL", "--", &group])
                .stderr(Stdio::null())
                .status();
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Whether the process is still running (false once it exited or was killed).
    pub fn is_running(&mut self) -> bool {
        self.child
            .as_mut()
            .is_some_and(|child| matches!(child.try_wait(), Ok(None)))
    }

    /// Kills the process and starts a fresh one on the same socket and shm id: an SPDK
    /// restart that lost all its state (bdevs, controllers, subsystems).
    pub fn restart(&mut self) -> Result<(), String> {
        self.kill();
        self.spawn()
    }
}

impl Drop for SpdkTgt {
    fn drop(&mut self) {
        self.kill();
        remove_runtime_files(self.shm_id, "spdk_tgt");
    }
}

/// What one raw exchange brought back.
#[derive(Debug, Clone, PartialEq)]
pub enum RawExchange {
    /// The first complete JSON value received.
    Reply(Value),
    /// The server closed the connection without sending anything.
    Closed,
    /// Bytes that were not (yet) a complete JSON value when the server closed the
    /// connection or the wait ran out.
    Incomplete(String),
}

/// One request/reply exchange on a Unix socket: writes `bytes`, reads until the bytes
/// received form one complete JSON value, the peer closes, or `timeout` passes without
/// more bytes. Err: connecting or sending failed, or the reply is not JSON.
pub fn exchange(socket: &Path, bytes: &[u8], timeout: Duration) -> Result<RawExchange, String> {
    let mut stream =
        UnixStream::connect(socket).map_err(|e| format!("connect {}: {e}", socket.display()))?;
    stream
        .set_read_timeout(Some(timeout))
        .and_then(|()| stream.set_write_timeout(Some(timeout)))
        .map_err(|e| e.to_string())?;
    stream.write_all(bytes).map_err(|e| format!("send: {e}"))?;
    let mut received = Vec::new();
    let mut chunk = [0u8; 65536];
    loop {
        let n = match stream.read(&mut chunk) {
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => 0,
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) =>
            {
                return Ok(RawExchange::Incomplete(
                    String::from_utf8_lossy(&received).into_owned(),
                ))
            }
            Err(e) => return Err(format!("receive: {e}")),
        };
        if n == 0 {
            if received.iter().all(u8::is_ascii_whitespace) {
                return Ok(RawExchange::Closed);
            }
            return Ok(RawExchange::Incomplete(
                String::from_utf8_lossy(&received).into_owned(),
            ));
        }
        received.extend_from_slice(&chunk[..n]);
        let mut values = serde_json::Deserializer::from_slice(&received).into_iter::<Value>();
        match values.next() {
            Some(Ok(value)) => return Ok(RawExchange::Reply(value)),
            Some(Err(e)) if e.is_eof() => {}
            None => {}
            Some(Err(e)) => {
                return Err(format!(
                    "reply is not JSON ({e}): {:?}",
                    String::from_utf8_lossy(&received)
                ))
            }
        }
    }
}

/// An [`SpdkTgt`] set up as the remote NVMe/TCP target the DPU attaches: a 64 MiB malloc
/// bdev [`REMOTE_BDEV`] in subsystem [`REMOTE_NQN`] (any host allowed), listening on
/// 127.0.0.1 on a free port. Can drop its listener or its whole process and come back on
/// the same port, to play a target that goes down.
#[derive(Debug)]
pub struct RemoteTarget {
    tgt: SpdkTgt,
    port: u16,
    listening: bool,
}

impl RemoteTarget {
    /// Starts the instance and sets the target up.
    pub fn launch(dir: &Path, name: &str) -> Result<Self, String> {
        let tgt = SpdkTgt::start(dir, name)?;
        let mut target = Self {
            tgt,
            port: crate::harness::free_tcp_port(),
            listening: false,
        };
        target.setup()?;
        Ok(target)
    }

    fn setup(&mut self) -> Result<(), String> {
        let mib = REMOTE_BDEV_MIB.to_string();
        let block = REMOTE_BLOCK_SIZE.to_string();
        self.tgt
            .rpc("bdev_malloc_create", &["-b", REMOTE_BDEV, &mib, &block])?;
        self.tgt.rpc("nvmf_create_transport", &["-t", "TCP"])?;
        self.tgt.rpc(
            "nvmf_create_subsystem",
            &[REMOTE_NQN, "-a", "-s", "SPDK00000000000001"],
        )?;
        self.tgt
            .rpc("nvmf_subsystem_add_ns", &[REMOTE_NQN, REMOTE_BDEV])?;
        self.start_listener()
    }

    /// The port the target listens on (the attach's `trsvcid`).
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The subsystem NQN (the attach's `subnqn`).
    pub fn nqn(&self) -> &str {
        REMOTE_NQN
    }

    /// The SPDK instance, for rpc.py checks of the target side.
    pub fn tgt(&self) -> &SpdkTgt {
        &self.tgt
    }

    /// Adds a listener of subsystem `nqn` on `addr:port` (a second path to the target).
    pub fn add_listener(&self, nqn: &str, addr: &str, port: u16) -> Result<(), String> {
        let port = port.to_string();
        self.tgt
            .rpc(
                "nvmf_subsystem_add_listener",
                &[nqn, "-t", "tcp", "-f", "ipv4", "-a", addr, "-s", &port],
            )
            .map(drop)
    }

    /// Removes the listener of subsystem `nqn` on `addr:port` (one path of several goes
    /// away: SPDK drops the connections through it).
    pub fn remove_listener(&self, nqn: &str, addr: &str, port: u16) -> Result<(), String> {
        let port = port.to_string();
        self.tgt
            .rpc(
                "nvmf_subsystem_remove_listener",
                &[nqn, "-t", "tcp", "-f", "ipv4", "-a", addr, "-s", &port],
            )
            .map(drop)
    }

    /// Adds subsystem `nqn` (a malloc bdev `bdev` of its own as namespace 1) listening on
    /// the target's address and port: a second subsystem behind the same network path.
    pub fn add_subsystem(&self, nqn: &str, serial: &str, bdev: &str) -> Result<(), String> {
        let mib = REMOTE_BDEV_MIB.to_string();
        let block = REMOTE_BLOCK_SIZE.to_string();
        self.tgt
            .rpc("bdev_malloc_create", &["-b", bdev, &mib, &block])?;
        self.tgt
            .rpc("nvmf_create_subsystem", &[nqn, "-a", "-s", serial])?;
        self.tgt.rpc("nvmf_subsystem_add_ns", &[nqn, bdev])?;
        self.add_listener(nqn, "127.0.0.1", self.port)
    }

    /// Removes the listener: new connections are refused and SPDK drops the existing
    /// ones, while the process and its state stay.
    pub fn stop_listener(&mut self) -> Result<(), String> {
        let port = self.port.to_string();
        self.tgt.rpc(
            "nvmf_subsystem_remove_listener",
            &[
                REMOTE_NQN,
                "-t",
                "tcp",
                "-f",
                "ipv4",
                "-a",
                "127.0.0.1",
                "-s",
                &port,
            ],
        )?;
        self.listening = false;
        Ok(())
    }

    /// Listens again on the same address and port.
    pub fn start_listener(&mut self) -> Result<(), String> {
        self.add_listener(REMOTE_NQN, "127.0.0.1", self.port)?;
        self.listening = true;
        Ok(())
    }

    /// Whether the listener is up (as far as this harness changed it).
    pub fn is_listening(&self) -> bool {
        self.listening
    }

    /// Kills the whole target process (SIGKILL).
    pub fn stop(&mut self) {
        self.tgt.kill();
        self.listening = false;
    }

    /// Starts a fresh process on the same socket and shm id and sets the target up again
    /// on the same port.
    pub fn start(&mut self) -> Result<(), String> {
        self.tgt.restart()?;
        self.setup()
    }
}

/// Exports bdev `bdev` of `tgt` over NVMe/TCP as subsystem `nqn` (any host, namespace 1)
/// on 127.0.0.1 and a free port, and returns the port: how a test reads through the DPU's
/// SPDK with [`perf_read`], since plain SPDK cannot emulate a host-side NVMe device.
pub fn export_bdev(tgt: &SpdkTgt, bdev: &str, nqn: &str) -> Result<u16, String> {
    if let Err(e) = tgt.rpc("nvmf_create_transport", &["-t", "TCP"]) {
        if !e.contains("already exists") {
            return Err(e);
        }
    }
    tgt.rpc(
        "nvmf_create_subsystem",
        &[nqn, "-a", "-s", "SPDK00000000000099"],
    )?;
    tgt.rpc("nvmf_subsystem_add_ns", &[nqn, bdev])?;
    let port = crate::harness::free_tcp_port();
    let port_text = port.to_string();
    tgt.rpc(
        "nvmf_subsystem_add_listener",
        &[
            nqn,
            "-t",
            "tcp",
            "-f",
            "ipv4",
            "-a",
            "127.0.0.1",
            "-s",
            &port_text,
        ],
    )?;
    Ok(port)
}

/// What one `spdk_nvme_perf` run did.
#[derive(Debug, Clone)]
pub struct PerfReport {
    /// The command line that ran (program and arguments).
    pub command: Vec<String>,
    /// Reads completed: perf's `-d` count, which it reached before its time limit.
    pub ios: u64,
    /// Bytes per read (`-o`).
    pub io_size: u64,
    /// perf's "Total" line: IOPS.
    pub iops: f64,
    /// perf's "Total" line: MiB/s.
    pub mib_per_sec: f64,
    /// perf's whole output.
    pub output: String,
}

impl PerfReport {
    /// Bytes perf read: `ios * io_size`.
    pub fn bytes(&self) -> u64 {
        self.ios * self.io_size
    }
}

/// perf's `-t`: the time limit, far above what `count` reads take; a run that reaches it
/// did not read `count` blocks and is an error.
const PERF_TIME_LIMIT_SECS: u64 = 60;

/// Reads `count` blocks of `io_size` bytes (a multiple of the namespace's block size)
/// from subsystem `subnqn` on 127.0.0.1:`port` with `build/bin/spdk_nvme_perf` (user-space
/// NVMe/TCP initiator, `--no-huge`, its own shm id), queue depth 4, and returns perf's
/// report. Errors when perf fails or stops at its time limit before reading `count`.
pub fn perf_read(port: u16, subnqn: &str, io_size: u64, count: u64) -> Result<PerfReport, String> {
    perf_read_within(port, subnqn, io_size, count, PERF_TIME_LIMIT_SECS)
}

/// How many times perf is started when it never connects (see [`perf_read_within`]).
const PERF_CONNECT_ATTEMPTS: u32 = 3;

/// What perf prints when no controller came up, so it issued no read at all (SPDK v24.01
/// app/spdk_nvme_perf/perf.c, after `register_controllers`).
const PERF_NOT_CONNECTED: &str = "No valid NVMe controllers";

/// [`perf_read`] with perf's `-t` time limit set to `limit_secs`: for a read that is
/// expected to fail (its path removed), so the failure costs seconds, not the default
/// limit.
///
/// A perf that never connected (its controller failed to initialize: SPDK's synchronous
/// probe gives the TCP handshake 2 s, `ICREQ_TIMEOUT_SYNC` in lib/nvme/nvme_tcp.c, which a
/// CI machine running two benches' busy-polling targets beside it can miss) read nothing,
/// so it is started again, up to three times in all, each retry said on
/// stderr. A read that fails once connected is never retried: that failure is what the
/// multipath tests judge.
pub fn perf_read_within(
    port: u16,
    subnqn: &str,
    io_size: u64,
    count: u64,
    limit_secs: u64,
) -> Result<PerfReport, String> {
    let mut attempt = 1;
    loop {
        match perf_read_once(port, subnqn, io_size, count, limit_secs) {
            Err(e) if e.contains(PERF_NOT_CONNECTED) && attempt < PERF_CONNECT_ATTEMPTS => {
                eprintln!(
                    "spdk_nvme_perf did not connect to 127.0.0.1:{port} (attempt {attempt} of \
                     {PERF_CONNECT_ATTEMPTS}), starting it again:\n{e}"
                );
                attempt += 1;
            }
            result => return result,
        }
    }
}

/// One `spdk_nvme_perf` run of [`perf_read_within`].
fn perf_read_once(
    port: u16,
    subnqn: &str,
    io_size: u64,
    count: u64,
    limit_secs: u64,
) -> Result<PerfReport, String> {
    let tree = spdk_dir();
    let shm_id = next_shm_id();
    let bin = tree.join("build/bin/spdk_nvme_perf");
    let args: Vec<String> = vec![
        "--no-huge".into(),
        "-s".into(),
        PERF_MEM_MB.into(),
        "-i".into(),
        shm_id.to_string(),
        "-q".into(),
        "4".into(),
        "-o".into(),
        io_size.to_string(),
        "-w".into(),
        "read".into(),
        "-d".into(),
        count.to_string(),
        "-t".into(),
        limit_secs.to_string(),
        "-r".into(),
        format!("trtype:tcp adrfam:IPv4 traddr:127.0.0.1 trsvcid:{port} subnqn:{subnqn}"),
    ];
    let mut command = Command::new(&bin);
    command
        .args(&args)
        .env("LD_LIBRARY_PATH", library_path(&tree));
    let started = Instant::now();
    let result = run_bounded(command, COMMAND_TIMEOUT);
    let elapsed = started.elapsed();
    remove_runtime_files(shm_id, "spdk_nvme_perf");
    let out = result?;
    let mut command_line = vec![bin.display().to_string()];
    command_line.extend(args);
    let output = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    if !out.status.success() {
        return Err(failed_perf(&command_line, out.status, &output));
    }
    if elapsed >= Duration::from_secs(limit_secs) {
        return Err(format!(
            "spdk_nvme_perf ran into its {limit_secs} s limit before {count} reads:\n{output}"
        ));
    }
    let total = output
        .lines()
        .find(|l| l.trim_start().starts_with("Total"))
        .ok_or_else(|| format!("spdk_nvme_perf printed no Total line:\n{output}"))?;
    let numbers: Vec<f64> = total
        .split(':')
        .nth(1)
        .unwrap_or_default()
        .split_whitespace()
        .filter_map(|w| w.parse().ok())
        .collect();
    let (Some(&iops), Some(&mib_per_sec)) = (numbers.first(), numbers.get(1)) else {
        return Err(format!("unreadable Total line {total:?}:\n{output}"));
    };
    Ok(PerfReport {
        command: command_line,
        ios: count,
        io_size,
        iops,
        mib_per_sec,
        output,
    })
}

/// A `spdk_nvme_perf` read load left running in the background (see [`perf_load`]), so a
/// test can sample SPDK's own counters while I/O flows and change limits under it.
/// Killed (SIGKILL to its process group) on [`PerfLoad::stop`] or Drop.
#[derive(Debug)]
pub struct PerfLoad {
    /// The command line that runs (program and arguments).
    pub command: Vec<String>,
    log: PathBuf,
    shm_id: u32,
    child: Option<Child>,
}

impl PerfLoad {
    /// Whether perf still runs: a sample taken after it stopped would count idle time.
    pub fn is_running(&mut self) -> bool {
        self.child
            .as_mut()
            .is_some_and(|child| matches!(child.try_wait(), Ok(None)))
    }

    /// Everything perf printed so far (it prints its report only when it ends by itself).
    pub fn output(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// Kills perf and waits for it.
    pub fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let group = format!("-{}", child.id());
            let _ = Command::new("kill")
                .args(["-KILL", "--", &group])
                .stderr(Stdio::null())
                .status();
            let _ = child.kill();
            let _ = child.wait();
            remove_runtime_files(self.shm_id, "spdk_nvme_perf");
        }
    }
}

impl Drop for PerfLoad {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Starts `build/bin/spdk_nvme_perf` reading blocks of `io_size` bytes from subsystem
/// `subnqn` on 127.0.0.1:`port` at queue depth `queue_depth` for at most
/// 60 s (perf's `-t`), in the background, its output in `{dir}/perf-{shm id}.log`:
/// a load that keeps more I/O waiting than a rate limit lets through, for as long as the
/// test samples. Errors only when perf cannot be started; whether it connected shows in
/// the counters of the bdev it reads.
pub fn perf_load(
    dir: &Path,
    port: u16,
    subnqn: &str,
    io_size: u64,
    queue_depth: u32,
) -> Result<PerfLoad, String> {
    let tree = spdk_dir();
    let shm_id = next_shm_id();
    let bin = tree.join("build/bin/spdk_nvme_perf");
    let args: Vec<String> = vec![
        "--no-huge".into(),
        "-s".into(),
        PERF_MEM_MB.into(),
        "-i".into(),
        shm_id.to_string(),
        "-q".into(),
        queue_depth.to_string(),
        "-o".into(),
        io_size.to_string(),
        "-w".into(),
        "read".into(),
        "-t".into(),
        PERF_TIME_LIMIT_SECS.to_string(),
        "-r".into(),
        format!("trtype:tcp adrfam:IPv4 traddr:127.0.0.1 trsvcid:{port} subnqn:{subnqn}"),
    ];
    let log = dir.join(format!("perf-{shm_id}.log"));
    let out = File::create(&log).map_err(|e| format!("{}: {e}", log.display()))?;
    let err = out.try_clone().map_err(|e| e.to_string())?;
    let child = Command::new(&bin)
        .args(&args)
        .env("LD_LIBRARY_PATH", library_path(&tree))
        .process_group(0)
        .stdin(Stdio::null())
        .stdout(out)
        .stderr(err)
        .spawn()
        .map_err(|e| format!("start {}: {e}", bin.display()))?;
    let mut command = vec![bin.display().to_string()];
    command.extend(args);
    Ok(PerfLoad {
        command,
        log,
        shm_id,
        child: Some(child),
    })
}

fn failed_perf(command: &[String], status: ExitStatus, output: &str) -> String {
    format!("{} failed ({status}):\n{output}", command.join(" "))
}

/// What SPDK v24.01 answered to one raw request, as recorded by the spdk tier's
/// `raw_protocol_observations` test on a real `spdk_tgt`: the reference a fake SPDK/SNAP
/// is held to (the fake's tests can use [`OBSERVED_V24_01`] without SPDK installed).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ObservedReply {
    /// A `result` member; `id_null` when the reply's `id` was null. The result itself is
    /// the method's and not part of the observation.
    Result {
        /// The reply's `id` was null (not the request's).
        id_null: bool,
    },
    /// An `error` member with exactly this code and message (SPDK's messages made with
    /// `send_error_response_fmt` end in a newline, kept here).
    Error {
        /// `error.code`.
        code: i64,
        /// `error.message`.
        message: &'static str,
        /// The reply's `id` was null.
        id_null: bool,
    },
    /// The server closed the connection without replying.
    Closed,
    /// The server sent exactly these bytes, which are not a complete JSON value, and
    /// nothing more (the connection stays open).
    Incomplete {
        /// What arrived.
        received: &'static str,
    },
}

/// One raw request and SPDK v24.01's answer to it.
#[derive(Debug, Clone, Copy)]
pub struct RawObservation {
    /// Short name of the case.
    pub case: &'static str,
    /// The state SPDK was in: what the request depends on.
    pub context: &'static str,
    /// The bytes sent, with placeholders `{PORT}` (the remote target's listener, subsystem
    /// [`REMOTE_NQN`]), `{PORT2}` (a second listener of the same subsystem), `{DOWN}` (a
    /// port nothing listens on) and `{NQN2}` (a second subsystem on `{PORT}`).
    pub request: &'static str,
    /// What came back.
    pub reply: ObservedReply,
}

const fn error(code: i64, message: &'static str) -> ObservedReply {
    ObservedReply::Error {
        code,
        message,
        id_null: false,
    }
}

const RESULT: ObservedReply = ObservedReply::Result { id_null: false };

/// SPDK v24.01's answers, in the order the test sends them (the last attach adds a path
/// to r0). Context for all: the instance has NVMe controller `r0` attached (by rpc.py) to
/// `127.0.0.1:{PORT}` subsystem [`REMOTE_NQN`], bdev `r0n1`; the target also serves
/// [`REMOTE_NQN`] on `{PORT2}` and a second subsystem `{NQN2}` on `{PORT}`.
pub const OBSERVED_V24_01: &[RawObservation] = &[
    RawObservation {
        case: "bdev_get_iostat with `names` (the v26.01+ key)",
        context: "r0n1 exists",
        request: r#"{"jsonrpc":"2.0","id":1,"method":"bdev_get_iostat","params":{"names":["r0n1"]}}"#,
        reply: error(-32603, "spdk_json_decode_object failed"),
    },
    RawObservation {
        case: "bdev_get_iostat with `name`",
        context: "r0n1 exists",
        request: r#"{"jsonrpc":"2.0","id":2,"method":"bdev_get_iostat","params":{"name":"r0n1"}}"#,
        reply: RESULT,
    },
    RawObservation {
        case: "bdev_get_iostat of an unknown bdev",
        context: "",
        request: r#"{"jsonrpc":"2.0","id":3,"method":"bdev_get_iostat","params":{"name":"nope"}}"#,
        reply: error(-19, "No such device"),
    },
    RawObservation {
        case: "batch array",
        context: "",
        request: r#"[{"jsonrpc":"2.0","id":4,"method":"spdk_get_version"},{"jsonrpc":"2.0","id":5,"method":"spdk_get_version"}]"#,
        reply: ObservedReply::Error {
            code: -32600,
            message: "Invalid request",
            id_null: true,
        },
    },
    RawObservation {
        case: "empty batch array",
        context: "",
        request: "[]",
        reply: ObservedReply::Error {
            code: -32600,
            message: "Invalid request",
            id_null: true,
        },
    },
    RawObservation {
        case: "no \"jsonrpc\" member (accepted: the member is optional in SPDK's decoder)",
        context: "",
        request: r#"{"id":6,"method":"spdk_get_version"}"#,
        reply: RESULT,
    },
    RawObservation {
        case: "\"jsonrpc\":\"1.0\"",
        context: "",
        request: r#"{"jsonrpc":"1.0","id":7,"method":"spdk_get_version"}"#,
        reply: ObservedReply::Error {
            code: -32600,
            message: "Invalid request",
            id_null: true,
        },
    },
    RawObservation {
        case: "no \"id\" (a notification): SPDK sends the reply without its closing brace and no newline (jsonrpc_server.c skip_response resets send_len, then spdk_json_write_end flushes the buffered text)",
        context: "",
        request: r#"{"jsonrpc":"2.0","method":"spdk_get_version"}"#,
        reply: ObservedReply::Incomplete {
            received: r#"{"jsonrpc":"2.0","id":null,"result":{"version":"SPDK v24.01","fields":{"major":24,"minor":1,"patch":0,"suffix":""}}"#,
        },
    },
    RawObservation {
        case: "unknown method",
        context: "",
        request: r#"{"jsonrpc":"2.0","id":8,"method":"no_such_method"}"#,
        reply: error(-32601, "Method not found"),
    },
    RawObservation {
        case: "spdk_get_version with params",
        context: "",
        request: r#"{"jsonrpc":"2.0","id":9,"method":"spdk_get_version","params":{}}"#,
        reply: error(-32602, "spdk_get_version method requires no parameters"),
    },
    RawObservation {
        case: "bdev_nvme_attach_controller with an unknown key",
        context: "",
        request: r#"{"jsonrpc":"2.0","id":10,"method":"bdev_nvme_attach_controller","params":{"name":"x","trtype":"tcp","traddr":"127.0.0.1","trsvcid":"{DOWN}","bogus":1}}"#,
        reply: error(-32603, "spdk_json_decode_object failed"),
    },
    RawObservation {
        case: "bdev_nvme_attach_controller without traddr",
        context: "",
        request: r#"{"jsonrpc":"2.0","id":11,"method":"bdev_nvme_attach_controller","params":{"name":"x","trtype":"tcp"}}"#,
        reply: error(-32603, "spdk_json_decode_object failed"),
    },
    RawObservation {
        case: "bdev_nvme_attach_controller, ctrlr_loss_timeout_sec without reconnect_delay_sec",
        context: "checked before connecting",
        request: r#"{"jsonrpc":"2.0","id":12,"method":"bdev_nvme_attach_controller","params":{"name":"x","trtype":"tcp","adrfam":"ipv4","traddr":"127.0.0.1","trsvcid":"{DOWN}","subnqn":"nqn.2016-06.io.spdk:cnode1","ctrlr_loss_timeout_sec":30}}"#,
        reply: error(-22, "Invalid argument"),
    },
    RawObservation {
        case: "bdev_nvme_attach_controller to a port nothing listens on",
        context: "",
        request: r#"{"jsonrpc":"2.0","id":13,"method":"bdev_nvme_attach_controller","params":{"name":"x","trtype":"tcp","adrfam":"ipv4","traddr":"127.0.0.1","trsvcid":"{DOWN}","subnqn":"nqn.2016-06.io.spdk:cnode1"}}"#,
        reply: error(-19, "No such device"),
    },
    RawObservation {
        case: "bdev_nvme_attach_controller to a subsystem the target does not have",
        context: "target listening on {PORT}",
        request: r#"{"jsonrpc":"2.0","id":14,"method":"bdev_nvme_attach_controller","params":{"name":"x","trtype":"tcp","adrfam":"ipv4","traddr":"127.0.0.1","trsvcid":"{PORT}","subnqn":"nqn.2016-06.io.spdk:nothere"}}"#,
        reply: error(-32602, "Invalid parameters"),
    },
    RawObservation {
        case: "the same attach again (same name, same path)",
        context: "",
        request: r#"{"jsonrpc":"2.0","id":16,"method":"bdev_nvme_attach_controller","params":{"name":"r0","trtype":"tcp","adrfam":"ipv4","traddr":"127.0.0.1","trsvcid":"{PORT}","subnqn":"nqn.2016-06.io.spdk:cnode1"}}"#,
        reply: error(
            -114,
            "A controller named r0 already exists with the specified network path\n",
        ),
    },
    RawObservation {
        case: "same name, same path, different subnqn (the path check comes first)",
        context: "{NQN2} also served on {PORT}",
        request: r#"{"jsonrpc":"2.0","id":17,"method":"bdev_nvme_attach_controller","params":{"name":"r0","trtype":"tcp","adrfam":"ipv4","traddr":"127.0.0.1","trsvcid":"{PORT}","subnqn":"{NQN2}"}}"#,
        reply: error(
            -114,
            "A controller named r0 already exists with the specified network path\n",
        ),
    },
    RawObservation {
        case: "same name, different path, different subnqn",
        context: "",
        request: r#"{"jsonrpc":"2.0","id":18,"method":"bdev_nvme_attach_controller","params":{"name":"r0","trtype":"tcp","adrfam":"ipv4","traddr":"127.0.0.1","trsvcid":"{PORT2}","subnqn":"{NQN2}"}}"#,
        reply: error(
            -22,
            "A controller named r0 already exists, but uses a different subnqn (nqn.2016-06.io.spdk:cnode1)\n",
        ),
    },
    RawObservation {
        case: "another name for r0's network path and subnqn",
        context: "",
        request: r#"{"jsonrpc":"2.0","id":19,"method":"bdev_nvme_attach_controller","params":{"name":"r1","trtype":"tcp","adrfam":"ipv4","traddr":"127.0.0.1","trsvcid":"{PORT}","subnqn":"nqn.2016-06.io.spdk:cnode1"}}"#,
        reply: error(-17, "File exists"),
    },
    RawObservation {
        case: "bdev_get_bdevs of an unknown bdev",
        context: "",
        request: r#"{"jsonrpc":"2.0","id":20,"method":"bdev_get_bdevs","params":{"name":"nope"}}"#,
        reply: error(-19, "No such device"),
    },
    RawObservation {
        case: "bdev_nvme_detach_controller of an unknown controller",
        context: "",
        request: r#"{"jsonrpc":"2.0","id":21,"method":"bdev_nvme_detach_controller","params":{"name":"nope"}}"#,
        reply: error(-19, "No such device"),
    },
    RawObservation {
        case: "bdev_nvme_get_controllers of an unknown controller (a positive code)",
        context: "",
        request: r#"{"jsonrpc":"2.0","id":22,"method":"bdev_nvme_get_controllers","params":{"name":"nope"}}"#,
        reply: error(22, "Controller nope does not exist"),
    },
    RawObservation {
        case: "same name, different path, same subnqn (accepted: adds a failover path)",
        context: "{PORT2} serves the same subsystem; the result is [\"r0n1\"]",
        request: r#"{"jsonrpc":"2.0","id":23,"method":"bdev_nvme_attach_controller","params":{"name":"r0","trtype":"tcp","adrfam":"ipv4","traddr":"127.0.0.1","trsvcid":"{PORT2}","subnqn":"nqn.2016-06.io.spdk:cnode1"}}"#,
        reply: RESULT,
    },
    RawObservation {
        case: "not JSON",
        context: "",
        request: "{not json}",
        reply: ObservedReply::Closed,
    },
];

/// One `bdev_set_qos_limit` request on bdev `r0n1` (or naming another) and what SPDK
/// v24.01 answered, with the `assigned_rate_limits` its `bdev_get_bdevs` reported for `r0n1`
/// right after (docs/reference/storage.md §7).
#[derive(Debug, Clone, Copy)]
pub struct QosObservation {
    /// Short name of the case.
    pub case: &'static str,
    /// The bytes sent.
    pub request: &'static str,
    /// What came back.
    pub reply: ObservedReply,
    /// `rw_ios_per_sec`, `rw_mbytes_per_sec`, `r_mbytes_per_sec`, `w_mbytes_per_sec` of
    /// `r0n1` afterwards.
    pub limits_after: [u64; 4],
}

/// `SPDK_BDEV_QOS_MAX_MBYTES_PER_SEC`: `UINT64_MAX / (1024 * 1024)`.
const QOS_MAX_MB: u64 = u64::MAX / (1024 * 1024);

/// SPDK v24.01's `bdev_set_qos_limit`, in the order sent: context `r0n1` exists (an NVMe-oF
/// bdev) with no limits. Both the `spdk` tier (real `spdk_tgt`) and the fake's conformance
/// test send these and check every reply and every limit after it ([`qos_differences`]).
pub const QOS_V24_01: &[QosObservation] = &[
    QosObservation {
        case: "unknown key",
        request: r#"{"jsonrpc":"2.0","id":1,"method":"bdev_set_qos_limit","params":{"name":"r0n1","iops":1000}}"#,
        reply: error(-32603, "spdk_json_decode_object failed"),
        limits_after: [0, 0, 0, 0],
    },
    QosObservation {
        case: "negative IOPS",
        request: r#"{"jsonrpc":"2.0","id":2,"method":"bdev_set_qos_limit","params":{"name":"r0n1","rw_ios_per_sec":-1000}}"#,
        reply: error(-32603, "spdk_json_decode_object failed"),
        limits_after: [0, 0, 0, 0],
    },
    QosObservation {
        case: "IOPS as a string",
        request: r#"{"jsonrpc":"2.0","id":3,"method":"bdev_set_qos_limit","params":{"name":"r0n1","rw_ios_per_sec":"1000"}}"#,
        reply: error(-32603, "spdk_json_decode_object failed"),
        limits_after: [0, 0, 0, 0],
    },
    QosObservation {
        case: "fractional MiB/s",
        request: r#"{"jsonrpc":"2.0","id":4,"method":"bdev_set_qos_limit","params":{"name":"r0n1","r_mbytes_per_sec":1.5}}"#,
        reply: error(-32603, "spdk_json_decode_object failed"),
        limits_after: [0, 0, 0, 0],
    },
    QosObservation {
        case: "no name",
        request: r#"{"jsonrpc":"2.0","id":5,"method":"bdev_set_qos_limit","params":{"rw_ios_per_sec":1000}}"#,
        reply: error(-32603, "spdk_json_decode_object failed"),
        limits_after: [0, 0, 0, 0],
    },
    QosObservation {
        case: "unknown bdev",
        request: r#"{"jsonrpc":"2.0","id":6,"method":"bdev_set_qos_limit","params":{"name":"nope","rw_ios_per_sec":1000}}"#,
        reply: error(-19, "No such device"),
        limits_after: [0, 0, 0, 0],
    },
    QosObservation {
        case: "unknown bdev and no limits (the bdev is opened first)",
        request: r#"{"jsonrpc":"2.0","id":7,"method":"bdev_set_qos_limit","params":{"name":"nope"}}"#,
        reply: error(-19, "No such device"),
        limits_after: [0, 0, 0, 0],
    },
    QosObservation {
        case: "no limits",
        request: r#"{"jsonrpc":"2.0","id":8,"method":"bdev_set_qos_limit","params":{"name":"r0n1"}}"#,
        reply: error(-22, "No rate limits specified"),
        limits_after: [0, 0, 0, 0],
    },
    QosObservation {
        case: "every key UINT64_MAX (SPDK's \"not given\")",
        request: r#"{"jsonrpc":"2.0","id":9,"method":"bdev_set_qos_limit","params":{"name":"r0n1","rw_ios_per_sec":18446744073709551615,"rw_mbytes_per_sec":18446744073709551615,"r_mbytes_per_sec":18446744073709551615,"w_mbytes_per_sec":18446744073709551615}}"#,
        reply: error(-22, "No rate limits specified"),
        limits_after: [0, 0, 0, 0],
    },
    QosObservation {
        case: "2000 IOPS",
        request: r#"{"jsonrpc":"2.0","id":10,"method":"bdev_set_qos_limit","params":{"name":"r0n1","rw_ios_per_sec":2000}}"#,
        reply: RESULT,
        limits_after: [2000, 0, 0, 0],
    },
    QosObservation {
        case: "a read limit alone keeps the IOPS limit (a partial update)",
        request: r#"{"jsonrpc":"2.0","id":11,"method":"bdev_set_qos_limit","params":{"name":"r0n1","r_mbytes_per_sec":10}}"#,
        reply: RESULT,
        limits_after: [2000, 0, 10, 0],
    },
    QosObservation {
        case: "2500 IOPS: accepted and rounded up to 3000",
        request: r#"{"jsonrpc":"2.0","id":12,"method":"bdev_set_qos_limit","params":{"name":"r0n1","rw_ios_per_sec":2500}}"#,
        reply: RESULT,
        limits_after: [3000, 0, 10, 0],
    },
    QosObservation {
        case: "1 IOPS: rounded up to 1000",
        request: r#"{"jsonrpc":"2.0","id":13,"method":"bdev_set_qos_limit","params":{"name":"r0n1","rw_ios_per_sec":1}}"#,
        reply: RESULT,
        limits_after: [1000, 0, 10, 0],
    },
    QosObservation {
        case: "a write limit above UINT64_MAX / 1 MiB: clamped",
        request: r#"{"jsonrpc":"2.0","id":14,"method":"bdev_set_qos_limit","params":{"name":"r0n1","w_mbytes_per_sec":18446744073709551614}}"#,
        reply: RESULT,
        limits_after: [1000, 0, 10, QOS_MAX_MB],
    },
    QosObservation {
        case: "IOPS 18446744073709551614: the round-up wraps to 384",
        request: r#"{"jsonrpc":"2.0","id":15,"method":"bdev_set_qos_limit","params":{"name":"r0n1","rw_ios_per_sec":18446744073709551614}}"#,
        reply: RESULT,
        limits_after: [384, 0, 10, QOS_MAX_MB],
    },
    QosObservation {
        case: "all four at once, IOPS lifted",
        request: r#"{"jsonrpc":"2.0","id":16,"method":"bdev_set_qos_limit","params":{"name":"r0n1","rw_ios_per_sec":0,"rw_mbytes_per_sec":5,"r_mbytes_per_sec":10,"w_mbytes_per_sec":1}}"#,
        reply: RESULT,
        limits_after: [0, 5, 10, 1],
    },
    QosObservation {
        case: "all four 0: QoS off",
        request: r#"{"jsonrpc":"2.0","id":17,"method":"bdev_set_qos_limit","params":{"name":"r0n1","rw_ios_per_sec":0,"rw_mbytes_per_sec":0,"r_mbytes_per_sec":0,"w_mbytes_per_sec":0}}"#,
        reply: RESULT,
        limits_after: [0, 0, 0, 0],
    },
    QosObservation {
        case: "all four 0 again",
        request: r#"{"jsonrpc":"2.0","id":18,"method":"bdev_set_qos_limit","params":{"name":"r0n1","rw_ios_per_sec":0,"rw_mbytes_per_sec":0,"r_mbytes_per_sec":0,"w_mbytes_per_sec":0}}"#,
        reply: RESULT,
        limits_after: [0, 0, 0, 0],
    },
];

/// The `assigned_rate_limits` `bdev_get_bdevs` reports for `bdev` on `socket`, in
/// [`QosObservation::limits_after`] order.
pub fn qos_limits_of(socket: &Path, bdev: &str) -> Result<[u64; 4], String> {
    let request = serde_json::json!({"jsonrpc":"2.0","id":99,"method":"bdev_get_bdevs",
        "params":{"name": bdev}});
    let reply = exchange(socket, request.to_string().as_bytes(), RAW_TIMEOUT)?;
    let RawExchange::Reply(reply) = reply else {
        return Err(format!("bdev_get_bdevs {bdev}: {reply:?}"));
    };
    let limits = &reply["result"][0]["assigned_rate_limits"];
    let keys = [
        "rw_ios_per_sec",
        "rw_mbytes_per_sec",
        "r_mbytes_per_sec",
        "w_mbytes_per_sec",
    ];
    let mut out = [0; 4];
    for (slot, key) in out.iter_mut().zip(keys) {
        *slot = limits[key]
            .as_u64()
            .ok_or_else(|| format!("bdev_get_bdevs {bdev}: no {key} in {reply}"))?;
    }
    Ok(out)
}

/// Sends [`QOS_V24_01`] to the peer on `socket` (bdev `r0n1` there without limits) and
/// returns every way it answered otherwise: a reply, or the limits read back after it.
pub fn qos_differences(socket: &Path) -> Vec<String> {
    let mut wrong = Vec::new();
    for row in QOS_V24_01 {
        let got = match exchange(socket, row.request.as_bytes(), RAW_TIMEOUT) {
            Ok(reply) => classify_reply(&reply),
            Err(e) => {
                wrong.push(format!("{}: {e}", row.case));
                continue;
            }
        };
        if got != row.reply {
            wrong.push(format!(
                "{}: expected {:?}, got {got:?}",
                row.case, row.reply
            ));
        }
        match qos_limits_of(socket, "r0n1") {
            Ok(limits) if limits == row.limits_after => {}
            Ok(limits) => wrong.push(format!(
                "{}: limits after expected {:?}, got {limits:?}",
                row.case, row.limits_after
            )),
            Err(e) => wrong.push(format!("{}: {e}", row.case)),
        }
    }
    wrong
}

/// Classifies a raw exchange the way [`OBSERVED_V24_01`] records it; texts are leaked into
/// `'static` (a test process records a few dozen).
pub fn classify_reply(exchange: &RawExchange) -> ObservedReply {
    let reply = match exchange {
        RawExchange::Closed => return ObservedReply::Closed,
        RawExchange::Incomplete(text) => {
            return ObservedReply::Incomplete {
                received: Box::leak(text.clone().into_boxed_str()),
            }
        }
        RawExchange::Reply(reply) => reply,
    };
    let id_null = reply.get("id").is_none_or(Value::is_null);
    if let Some(error) = reply.get("error") {
        let message = error["message"].as_str().unwrap_or_default().to_owned();
        return ObservedReply::Error {
            code: error["code"].as_i64().unwrap_or(i64::MIN),
            message: Box::leak(message.into_boxed_str()),
            id_null,
        };
    }
    ObservedReply::Result { id_null }
}

/// One `bdev_nvme_set_multipath_policy` or `bdev_nvme_get_io_paths` request (context: bdev
/// `r0n1` of controller `r0`) and what SPDK v24.01 answered, with the `mp_policy` its
/// `bdev_get_bdevs` reported for `r0n1` right after.
#[derive(Debug, Clone, Copy)]
pub struct MultipathObservation {
    /// Short name of the case.
    pub case: &'static str,
    /// The bytes sent.
    pub request: &'static str,
    /// What came back.
    pub reply: ObservedReply,
    /// `driver_specific.mp_policy` of `r0n1` afterwards.
    pub policy_after: &'static str,
}

/// SPDK v24.01's multipath methods, in the order sent (r0n1 starts active-passive, SPDK's
/// default). Both the `spdk` tier (real `spdk_tgt`) and the fake's conformance test send
/// these and check every reply and the policy after it ([`multipath_differences`]).
pub const MULTIPATH_V24_01: &[MultipathObservation] = &[
    MultipathObservation {
        case: "policy without a name",
        request: r#"{"jsonrpc":"2.0","id":1,"method":"bdev_nvme_set_multipath_policy","params":{"policy":"active_active"}}"#,
        reply: error(-32603, "spdk_json_decode_object failed"),
        policy_after: "active_passive",
    },
    MultipathObservation {
        case: "an unknown policy",
        request: r#"{"jsonrpc":"2.0","id":2,"method":"bdev_nvme_set_multipath_policy","params":{"name":"r0n1","policy":"round_robin"}}"#,
        reply: error(-32603, "spdk_json_decode_object failed"),
        policy_after: "active_passive",
    },
    MultipathObservation {
        case: "a selector with active-passive",
        request: r#"{"jsonrpc":"2.0","id":3,"method":"bdev_nvme_set_multipath_policy","params":{"name":"r0n1","policy":"active_passive","selector":"round_robin"}}"#,
        reply: error(-32603, "spdk_json_decode_object failed"),
        policy_after: "active_passive",
    },
    MultipathObservation {
        case: "rr_min_io with active-passive",
        request: r#"{"jsonrpc":"2.0","id":4,"method":"bdev_nvme_set_multipath_policy","params":{"name":"r0n1","policy":"active_passive","rr_min_io":4}}"#,
        reply: error(-22, "Invalid argument"),
        policy_after: "active_passive",
    },
    MultipathObservation {
        case: "rr_min_io 0 with round robin",
        request: r#"{"jsonrpc":"2.0","id":5,"method":"bdev_nvme_set_multipath_policy","params":{"name":"r0n1","policy":"active_active","selector":"round_robin","rr_min_io":0}}"#,
        reply: error(-22, "Invalid argument"),
        policy_after: "active_passive",
    },
    MultipathObservation {
        case: "rr_min_io without a selector",
        request: r#"{"jsonrpc":"2.0","id":6,"method":"bdev_nvme_set_multipath_policy","params":{"name":"r0n1","policy":"active_active","rr_min_io":5}}"#,
        reply: error(-22, "Invalid argument"),
        policy_after: "active_passive",
    },
    MultipathObservation {
        case: "an unknown bdev",
        request: r#"{"jsonrpc":"2.0","id":7,"method":"bdev_nvme_set_multipath_policy","params":{"name":"nope","policy":"active_active"}}"#,
        reply: error(-19, "No such device"),
        policy_after: "active_passive",
    },
    MultipathObservation {
        case: "the controller's name, not its bdev's",
        request: r#"{"jsonrpc":"2.0","id":8,"method":"bdev_nvme_set_multipath_policy","params":{"name":"r0","policy":"active_active"}}"#,
        reply: error(-19, "No such device"),
        policy_after: "active_passive",
    },
    MultipathObservation {
        case: "active-active",
        request: r#"{"jsonrpc":"2.0","id":9,"method":"bdev_nvme_set_multipath_policy","params":{"name":"r0n1","policy":"active_active"}}"#,
        reply: RESULT,
        policy_after: "active_active",
    },
    MultipathObservation {
        case: "active-active, round robin every 4 I/Os",
        request: r#"{"jsonrpc":"2.0","id":10,"method":"bdev_nvme_set_multipath_policy","params":{"name":"r0n1","policy":"active_active","selector":"round_robin","rr_min_io":4}}"#,
        reply: RESULT,
        policy_after: "active_active",
    },
    MultipathObservation {
        case: "back to active-passive",
        request: r#"{"jsonrpc":"2.0","id":11,"method":"bdev_nvme_set_multipath_policy","params":{"name":"r0n1","policy":"active_passive"}}"#,
        reply: RESULT,
        policy_after: "active_passive",
    },
    MultipathObservation {
        case: "io_paths with array params",
        request: r#"{"jsonrpc":"2.0","id":12,"method":"bdev_nvme_get_io_paths","params":[]}"#,
        reply: error(-32602, "bdev_nvme_get_io_paths requires no parameters"),
        policy_after: "active_passive",
    },
    MultipathObservation {
        case: "io_paths with a numeric name",
        request: r#"{"jsonrpc":"2.0","id":13,"method":"bdev_nvme_get_io_paths","params":{"name":5}}"#,
        reply: error(-32602, "bdev_nvme_get_io_paths requires no parameters"),
        policy_after: "active_passive",
    },
    MultipathObservation {
        case: "io_paths with an unknown key",
        request: r#"{"jsonrpc":"2.0","id":14,"method":"bdev_nvme_get_io_paths","params":{"bdev":"r0n1"}}"#,
        reply: error(-32602, "bdev_nvme_get_io_paths requires no parameters"),
        policy_after: "active_passive",
    },
    MultipathObservation {
        case: "io_paths of every bdev",
        request: r#"{"jsonrpc":"2.0","id":15,"method":"bdev_nvme_get_io_paths"}"#,
        reply: RESULT,
        policy_after: "active_passive",
    },
    MultipathObservation {
        case: "io_paths of an unknown bdev: an empty list, not an error",
        request: r#"{"jsonrpc":"2.0","id":16,"method":"bdev_nvme_get_io_paths","params":{"name":"nope"}}"#,
        reply: RESULT,
        policy_after: "active_passive",
    },
];

/// Sends [`MULTIPATH_V24_01`] to the peer on `socket` (bdev `r0n1` there, active-passive)
/// and returns every way it answered otherwise: a reply, or the policy read back after it,
/// or an `io_paths` answer without SPDK's `poll_groups` array.
pub fn multipath_differences(socket: &Path) -> Vec<String> {
    let mut wrong = Vec::new();
    for row in MULTIPATH_V24_01 {
        let reply = match exchange(socket, row.request.as_bytes(), RAW_TIMEOUT) {
            Ok(reply) => reply,
            Err(e) => {
                wrong.push(format!("{}: {e}", row.case));
                continue;
            }
        };
        let got = classify_reply(&reply);
        if got != row.reply {
            wrong.push(format!(
                "{}: expected {:?}, got {got:?}",
                row.case, row.reply
            ));
        }
        if let (RawExchange::Reply(value), ObservedReply::Result { .. }) = (&reply, got) {
            if row.request.contains("get_io_paths") && !value["result"]["poll_groups"].is_array() {
                wrong.push(format!("{}: no poll_groups array in {value}", row.case));
            }
        }
        let request = serde_json::json!({"jsonrpc":"2.0","id":99,"method":"bdev_get_bdevs",
            "params":{"name": "r0n1"}});
        match exchange(socket, request.to_string().as_bytes(), RAW_TIMEOUT) {
            Ok(RawExchange::Reply(v))
                if v["result"][0]["driver_specific"]["mp_policy"] == row.policy_after => {}
            other => wrong.push(format!(
                "{}: mp_policy after expected {}, got {other:?}",
                row.case, row.policy_after
            )),
        }
    }
    wrong
}
