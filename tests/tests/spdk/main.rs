//! The SPDK tier: the agent's Storage service (SNAP backend, `auto` dialect) and the real
//! `dpuctl` against a real SPDK v24.01 `spdk_tgt` instead of the fake: SPDK's own strict
//! decoders, error codes and reconnect rules decide, and SPDK's own `rpc.py` checks what
//! the agent did.
//!
//! Topology of each test: instance A is the remote NVMe/TCP target
//! ([`dpu_tests::spdk::RemoteTarget`]: malloc bdev in `nqn.2016-06.io.spdk:cnode1` on
//! 127.0.0.1), instance B plays the DPU's SPDK (the agent's `--snap-socket`). B is plain
//! SPDK, so the agent detects dialect PlainSpdk: remote controllers work, emulation does not.
//! Reads go through B with `spdk_nvme_perf` over a subsystem B exports over NVMe/TCP.
//!
//! Needs SPDK built by `scripts/build-spdk.sh` (or `$DPU_TEST_SPDK_DIR`) and python3;
//! without them each test is skipped with the reason (a failure under
//! `DPU_TESTS_STRICT=1`). Tests that start SPDK run one at a time within this binary
//! ([`dpu_tests::spdk::exclusive`]).

mod attach;
mod capture;
mod iostat;
mod multipath;
mod qos;
mod qos_rate;
mod raw;
mod reconnect;
mod restart;
mod stall;

use std::path::PathBuf;
use std::process::Output;
use std::sync::MutexGuard;
use std::time::{Duration, Instant};

use dpu_proto::v1;
use dpu_proto::v1::storage_client::StorageClient;
use dpu_tests::fixture;
use dpu_tests::harness::{dpuctl, AgentOptions, AgentProcess};
use dpu_tests::spdk::{RemoteTarget, SpdkTgt, REMOTE_NQN};
use serde_json::Value;
use tonic::transport::Channel;

/// Starts a [`Bench`] (optionally with keys for the agent's `[storage]` table), or skips the test with the reason SPDK cannot
/// run here.
macro_rules! bench {
    () => {
        bench!("")
    };
    ($config:expr) => {{
        if let Some(reason) = dpu_tests::spdk::missing_prerequisite() {
            dpu_tests::skip!("{reason}");
        }
        $crate::Bench::start($config)
    }};
}
pub(crate) use bench;

/// The agent's config for this tier, with `storage_keys` (TOML lines) added to its
/// `[storage]` table: the SNAP backend (dialect `auto`, so it detects plain SPDK), with
/// room for a slow machine in each call.
fn agent_config(storage_keys: &str) -> String {
    agent_config_with_call_timeout(storage_keys, 20)
}

/// [`agent_config`] with another `[snap] call_timeout` (seconds).
fn agent_config_with_call_timeout(storage_keys: &str, call_timeout: u32) -> String {
    format!(
        "[storage]\nbackend = \"snap\"\n{storage_keys}\n[snap]\ncall_timeout = {call_timeout}\n"
    )
}

/// One test's processes: remote target A, the DPU's SPDK B, and the agent on B's socket.
/// Fields drop in order: the agent first, the SPDK instances, the directory, and the
/// serialisation guard last.
pub(crate) struct Bench {
    pub(crate) agent: AgentProcess,
    pub(crate) dpu: SpdkTgt,
    pub(crate) remote: RemoteTarget,
    _root: PathBuf,
    _dir: tempfile::TempDir,
    _serial: MutexGuard<'static, ()>,
}

impl Bench {
    /// Starts A (set up as the target), B, and the agent on B's socket with
    /// `storage_keys` (e.g. `reconcile_interval = 1`) in its `[storage]` table.
    pub(crate) fn start(storage_keys: &str) -> Self {
        Self::start_config(&agent_config(storage_keys))
    }

    /// Starts A, B, and the agent on B's socket with the whole agent config `config`.
    pub(crate) fn start_config(config: &str) -> Self {
        let serial = dpu_tests::spdk::exclusive();
        let (dir, root) = fixture::bluefield3_tempdir();
        let remote = RemoteTarget::launch(dir.path(), "a").unwrap_or_else(|e| panic!("{e}"));
        let dpu = SpdkTgt::start(dir.path(), "b").unwrap_or_else(|e| panic!("{e}"));
        let mut options = AgentOptions::new(dir.path(), &root);
        options.snap_socket = dpu.socket().to_owned();
        options.config_toml = config.to_owned();
        let agent = AgentProcess::start(&options);
        Self {
            agent,
            dpu,
            remote,
            _root: root,
            _dir: dir,
            _serial: serial,
        }
    }

    /// The test's temporary directory (sockets, logs).
    pub(crate) fn dir(&self) -> &std::path::Path {
        self._dir.path()
    }

    /// `dpuctl --agent {agent} ARGS`.
    pub(crate) fn ctl(&self, args: &[&str]) -> Output {
        let endpoint = self.agent.endpoint();
        let mut all = vec!["--agent", endpoint.as_str()];
        all.extend_from_slice(args);
        dpuctl(&all)
    }

    /// `dpuctl --agent {agent} -o json ARGS`, which must succeed, parsed.
    pub(crate) fn ctl_json(&self, args: &[&str]) -> Value {
        let mut all = vec!["-o", "json"];
        all.extend_from_slice(args);
        let out = self.ctl(&all);
        serde_json::from_str(&ok(&out)).unwrap_or_else(|e| {
            panic!(
                "dpuctl {all:?}: not JSON ({e}): {}",
                String::from_utf8_lossy(&out.stdout)
            )
        })
    }

    /// `dpuctl storage attach --id {id} --transport tcp --traddr {traddr} --trsvcid {port}
    /// --subnqn {nqn} EXTRA`.
    pub(crate) fn attach(
        &self,
        id: &str,
        traddr: &str,
        port: u16,
        nqn: &str,
        extra: &[&str],
    ) -> Output {
        let port = port.to_string();
        let mut args = vec![
            "storage",
            "attach",
            "--id",
            id,
            "--transport",
            "tcp",
            "--traddr",
            traddr,
            "--trsvcid",
            &port,
            "--subnqn",
            nqn,
        ];
        args.extend_from_slice(extra);
        self.ctl(&args)
    }

    /// A generated Storage client on the agent's Unix socket.
    pub(crate) async fn storage(&self) -> StorageClient<Channel> {
        StorageClient::new(self.agent.channel().await)
    }

    /// Everything the processes logged, for a failure message.
    pub(crate) fn logs(&self) -> String {
        format!(
            "--- agent ---\n{}\n--- spdk B (dpu) ---\n{}\n--- spdk A (remote) ---\n{}",
            self.agent.log(),
            self.dpu.log(),
            self.remote.tgt().log()
        )
    }
}

/// An NVMe/TCP spec for the remote target on 127.0.0.1:`port`, subsystem `nqn`.
pub(crate) fn tcp_spec(port: u16, nqn: &str) -> v1::RemoteControllerSpec {
    v1::RemoteControllerSpec {
        transport: v1::NvmeTransport::Tcp as i32,
        address_family: v1::AddressFamily::Ipv4 as i32,
        traddr: "127.0.0.1".to_owned(),
        trsvcid: u32::from(port),
        subnqn: nqn.to_owned(),
        ..Default::default()
    }
}

/// The remote target's default spec.
pub(crate) fn remote_spec(bench: &Bench) -> v1::RemoteControllerSpec {
    tcp_spec(bench.remote.port(), REMOTE_NQN)
}

/// Stdout of a dpuctl run that must have succeeded.
pub(crate) fn ok(out: &Output) -> String {
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "dpuctl exit {:?}\nstdout: {stdout}\nstderr: {}",
        out.status.code(),
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

/// The gRPC code (tonic's name, e.g. "AlreadyExists") and message of a dpuctl run that
/// must have failed with exit 2 on an agent refusal ("dpuctl: error: RPC failed: CODE:
/// MESSAGE").
pub(crate) fn refused(out: &Output) -> (String, String) {
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(
        out.status.code(),
        Some(2),
        "expected a refusal (exit 2)\nstdout: {}\nstderr: {stderr}",
        String::from_utf8_lossy(&out.stdout)
    );
    // `dpuctl: error: Service.Method failed: <message> (<Code>)`.
    let line = stderr.lines().next().unwrap_or_default();
    let rest = line
        .split_once(" failed: ")
        .map(|(_, rest)| rest.trim())
        .unwrap_or_else(|| panic!("not an RPC refusal: {stderr}"));
    let (message, code) = rest
        .strip_suffix(')')
        .and_then(|r| r.rsplit_once(" ("))
        .unwrap_or_else(|| panic!("no status code at the end: {stderr}"));
    (code.to_owned(), message.to_owned())
}

/// The paths (`ctrlrs`) of SPDK controller `name` per `rpc.py bdev_nvme_get_controllers
/// -n NAME`; empty when SPDK has no such controller.
pub(crate) fn controller_paths(tgt: &SpdkTgt, name: &str) -> Vec<Value> {
    match tgt.rpc("bdev_nvme_get_controllers", &["-n", name]) {
        Ok(list) => list[0]["ctrlrs"].as_array().cloned().unwrap_or_default(),
        Err(e) if e.contains("does not exist") => Vec::new(),
        Err(e) => panic!("{e}"),
    }
}

/// Names of all SPDK NVMe controllers (`rpc.py bdev_nvme_get_controllers`).
pub(crate) fn controller_names(tgt: &SpdkTgt) -> Vec<String> {
    let list = tgt
        .rpc("bdev_nvme_get_controllers", &[])
        .unwrap_or_else(|e| panic!("{e}"));
    list.as_array()
        .into_iter()
        .flatten()
        .filter_map(|c| c["name"].as_str().map(str::to_owned))
        .collect()
}

/// Bdev `name` per `rpc.py bdev_get_bdevs -b NAME`, None when SPDK has none.
pub(crate) fn bdev(tgt: &SpdkTgt, name: &str) -> Option<Value> {
    match tgt.rpc("bdev_get_bdevs", &["-b", name]) {
        Ok(list) => list.get(0).cloned(),
        Err(e) if e.contains("No such device") => None,
        Err(e) => panic!("{e}"),
    }
}

/// `(bytes_read, num_read_ops)` of bdev `name` per `rpc.py bdev_get_iostat -b NAME`.
pub(crate) fn spdk_reads(tgt: &SpdkTgt, name: &str) -> (u64, u64) {
    let stats = tgt
        .rpc("bdev_get_iostat", &["-b", name])
        .unwrap_or_else(|e| panic!("{e}"));
    let bdev = &stats["bdevs"][0];
    assert_eq!(bdev["name"], name, "{stats}");
    (
        bdev["bytes_read"].as_u64().expect("bytes_read"),
        bdev["num_read_ops"].as_u64().expect("num_read_ops"),
    )
}

/// Polls `check` every 200 ms until it passes or `timeout` is over; the last failure is
/// the error.
pub(crate) fn wait_until(
    timeout: Duration,
    mut check: impl FnMut() -> Result<(), String>,
) -> Result<(), String> {
    let deadline = Instant::now() + timeout;
    loop {
        match check() {
            Ok(()) => return Ok(()),
            Err(e) if Instant::now() > deadline => {
                return Err(format!("still not so after {timeout:?}: {e}"))
            }
            Err(_) => std::thread::sleep(Duration::from_millis(200)),
        }
    }
}

/// A proto3-JSON 64-bit integer (a string) or a plain number, as u64.
pub(crate) fn json_u64(value: &Value) -> u64 {
    match value {
        Value::String(s) => s.parse().unwrap_or_else(|_| panic!("not a u64: {value}")),
        Value::Number(n) => n.as_u64().unwrap_or_else(|| panic!("not a u64: {value}")),
        // proto3 JSON leaves zero out.
        Value::Null => 0,
        other => panic!("not a u64: {other}"),
    }
}
