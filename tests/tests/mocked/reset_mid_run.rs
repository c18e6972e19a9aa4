//! An RDMA counter that resets in the middle of a run, at process level: the real `dpuctl`
//! reads the one-port fixture (`mlx5_0/1`, plain-file counters) under `--sys-root` while a
//! process it started rewrites those files, as a driver reload would.
//!
//! - `demo training-storage --executor local`: every step passes (storage through the real
//!   agent and a fake SNAP, an NCCL stand-in that moves the port, a training stand-in, a
//!   merge stand-in, the OpenAI stub as the server), and the training stand-in rewrites
//!   the port's packet counters. Set lower, the whole run's accounting line for `mlx5_0/1`
//!   has no value and says why (exit 3); the negative control raises them instead and the
//!   line is the exact growth (exit 0).
//! - `roce perf --tests tcp_bw`: ssh is a stand-in that runs the remote command here (and
//!   the peer's GID listing against a peer fixture), `qperf` is a stand-in first on PATH
//!   that prints a `tcp_bw` result and rewrites the counters. Reset: verdict
//!   `inconclusive`, exit 3, the run's `rdma.inconclusive` names the counter; the negative
//!   control leaves the counters still: verdict `ok`, path `not-rdma`, exit 0.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use dpu_tests::command::{describe, stdout_json as json};
use dpu_tests::fake_snap::{FakeDialect, FakeSnap};
use dpu_tests::fixture;
use dpu_tests::harness::{bin_dir, free_tcp_port, AgentOptions, AgentProcess};
use dpu_tests::skip;
use dpu_tests::stand_in::{sh_quote, write_script};
use serde_json::Value;

/// Where the single-port fixture keeps the counters the tests rewrite.
const COUNTERS: &str = "sys/class/infiniband/mlx5_0/ports/1/counters";
/// [`fixture::single_rdma_port`]'s packet counters.
const XMIT_AT_START: u64 = 5_000;
const RCV_AT_START: u64 = 7_000;

fn utf8(path: &Path) -> &str {
    path.to_str().expect("utf-8 temp path")
}

fn read_counter(root: &Path, name: &str) -> u64 {
    std::fs::read_to_string(root.join(COUNTERS).join(name))
        .expect("read counter")
        .trim()
        .parse()
        .expect("a number")
}

fn sh_available() -> bool {
    Command::new("sh")
        .args(["-c", "true"])
        .status()
        .is_ok_and(|s| s.success())
}

// ---------------------------------------------------------------------------------------
// demo training-storage
// ---------------------------------------------------------------------------------------

const HOST_NQN: &str = "nqn.2022-10.io.nvda.nvme:0";
const MODEL: &str = "demo-lora";
const PROMPT: &str = "What does a BlueField DPU offload?";
const ANSWER: &str = "Networking, storage and security work from the host CPU.";
/// The one sample file on the "disk", its size and SHA-256 (`sha256sum`).
const SAMPLE: &str =
    "{\"prompt\":\"What does a BlueField DPU offload?\",\"completion\":\"Networking, storage and security.\"}\n";
const SAMPLE_SHA256: &str = "294583dc438357ae58a09e472511d3741e6799f21e902ca51c064ad450fa4ff0";
/// An nccl-tests all-reduce over NET/IB (formats: docs/reference/rdma-bluefield.md §3.3).
const NCCL_IB: &str = "\
n1:1:1 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/RoCE [RO]; OOB eth0:10.0.0.1<0>
n1:1:9 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[0] [send] via NET/IB/0/GDRDMA
#       size         count      type   redop    root     time   algbw   busbw  #wrong     time   algbw   busbw  #wrong
   134217728      33554432     float     sum      -1   2874.1   46.70   46.70     N/A   2870.3   46.76   46.76     N/A
# Out of bounds values : 0 OK
# Avg bus bandwidth    : 21.5 
";
const FINGERPRINT: &str = r#"{"format":"demo-fingerprint/1","param_count":10,"tensor_count":1,"tensors":{"w":{"shape":[2,5],"numel":10,"l2":3.0,"mean":0.001,"proj":0.5}}}"#;
/// What the NCCL stand-in moves the port by (sent, received): enough for the
/// communication step's corroboration.
const NCCL_MOVES: (u64, u64) = (60_000, 40_000);

/// One demo: the agent with a fake SNAP (the storage step applies the plan's exposure
/// and reads the volume's io stats), the host fixture, and a plan whose training
/// stand-in sets the port's packet counters to `train_sets` (sent, received).
struct Demo {
    dir: tempfile::TempDir,
    host_root: PathBuf,
    plan: PathBuf,
    snap: FakeSnap,
    _agent: AgentProcess,
}

impl Demo {
    fn new(train_sets: (u64, u64)) -> Self {
        let dir = tempfile::tempdir().expect("tempdir");
        let dpu_root = dir.path().join("dpu-root");
        fixture::bluefield3_dpu(&dpu_root).expect("DPU fixture");
        let options = AgentOptions::new(dir.path(), &dpu_root);
        let snap =
            FakeSnap::start_with(&options.snap_socket, FakeDialect::Snap4).expect("fake SNAP");
        let agent = AgentProcess::start(&options);

        let host_root = dir.path().join("host-root");
        fixture::single_rdma_port(&host_root).expect("host fixture");
        let disk = dir.path().join("disk");
        std::fs::create_dir_all(disk.join("datasets")).expect("mkdir");
        std::fs::write(disk.join("datasets/sample.jsonl"), SAMPLE).expect("sample");
        // The disk is "mounted" from the exposed NVMe device, as the host's mountinfo says.
        let mountinfo = host_root.join("proc/self/mountinfo");
        std::fs::create_dir_all(mountinfo.parent().expect("parent")).expect("mkdir");
        std::fs::write(
            &mountinfo,
            format!(
                "22 1 8:1 / / rw - ext4 /dev/sda1 rw\n40 22 259:0 / {} rw - xfs /dev/nvme0n1 rw\n",
                disk.display()
            ),
        )
        .expect("mountinfo");

        let counters = host_root.join(COUNTERS);
        let xmit = counters.join("port_xmit_packets");
        let rcv = counters.join("port_rcv_packets");
        let archive = dir.path().join("archive.json");
        std::fs::write(&archive, FINGERPRINT).expect("archive");
        let merged = dir.path().join("merged.json");
        let port = free_tcp_port();
        let q = |p: &Path| format!("{:?}", p.display().to_string());
        // Every stand-in gets its paths and values as arguments, never inside its script;
        // a JSON array of strings is a valid TOML array.
        let argv = |words: &[&str]| serde_json::to_string(words).expect("argv");
        let (nccl_xmit, nccl_rcv) = (
            (XMIT_AT_START + NCCL_MOVES.0).to_string(),
            (RCV_AT_START + NCCL_MOVES.1).to_string(),
        );
        let nccl = argv(&[
            "sh",
            "-c",
            r#"printf '%s' "$1"; printf '%s\n' "$4" > "$2"; printf '%s\n' "$5" > "$3""#,
            "nccl",
            NCCL_IB,
            utf8(&xmit),
            utf8(&rcv),
            &nccl_xmit,
            &nccl_rcv,
        ]);
        let (train_xmit, train_rcv) = (train_sets.0.to_string(), train_sets.1.to_string());
        let sample_bytes = SAMPLE.len().to_string();
        let train = argv(&[
            "sh",
            "-c",
            r#"echo step 1 loss 5.5; printf '%s\n' "$3" > "$1"; printf '%s\n' "$4" > "$2"; echo "DEMO-RESULT {\"step\":\"finetune\",\"ok\":true,\"bytes_read\":$5}""#,
            "train",
            utf8(&xmit),
            utf8(&rcv),
            &train_xmit,
            &train_rcv,
            &sample_bytes,
        ]);
        let merge = argv(&[
            "sh",
            "-c",
            r#"printf '%s' "$1" > "$2""#,
            "merge",
            FINGERPRINT,
            utf8(&merged),
        ]);
        let plan = dir.path().join("plan.toml");
        std::fs::write(
            &plan,
            format!(
                r#"[executor]
kind = "local"
work_dir = {work}

[storage]
agent = "{endpoint}"
exposure = "disk0"
volume = "disk0n1"
exposure_spec = {{ remote = {{ transport = "NVME_TRANSPORT_RDMA", addressFamily = "ADDRESS_FAMILY_IPV4", traddr = "192.0.2.10", trsvcid = 4420, subnqn = "nqn.2016-06.io.spdk:cnode1" }}, subsystemNqn = "{HOST_NQN}", function = {{ pfVf = {{ pfIndex = 0 }} }} }}
mount_point = {disk}
shared_path = {disk}

[[storage.manifest]]
path = "datasets/sample.jsonl"
bytes = {sample_bytes}
sha256 = "{SAMPLE_SHA256}"

[communication]
nodes = ["localhost"]
nccl_tests = {nccl}
min_busbw_gbps = 10.0

[training]
api = "pytorchjob"
image = "example.invalid/train:1"
command = ["false"]
workers = 1
timeout = "2m"

[merge]
command = ["false"]
fingerprint = {merged}
archive = {archive}
rel_tolerance = 0.01

[serving]
image = "example.invalid/vllm:1"
model = "{MODEL}"
model_path = "/models/merged"
service_name = "vllm-demo"
port = {port}

[[serving.answers]]
prompt = "{PROMPT}"
expect = "{ANSWER}"
min_similarity = 0.8

[cleanup]
keep_serving = false

[local]
train = {train}
merge = {merge}
serve = [{stub}, "--port", "{port}", "--model", "{MODEL}", "--answer", "{PROMPT}={ANSWER}"]
serve_url = "http://127.0.0.1:{port}"
"#,
                work = q(&dir.path().join("runs")),
                endpoint = agent.endpoint(),
                disk = q(&disk),
                sample_bytes = SAMPLE.len(),
                merged = q(&merged),
                archive = q(&archive),
                stub = q(&bin_dir().join("openai-stub")),
            ),
        )
        .expect("plan");
        // What a real SNAP counts as the host reads the files through it, after the storage
        // step's idle window (its first two polls) saw a volume no one else reads.
        snap.reads_after_quiet_polls(2, Some(("disk0n1", 1 << 20)));
        Self {
            dir,
            host_root,
            plan,
            snap,
            _agent: agent,
        }
    }

    fn run(&self) -> Output {
        Command::new(bin_dir().join("dpuctl"))
            .arg("--sys-root")
            .arg(&self.host_root)
            .args(["-o", "json", "demo", "training-storage", "--plan"])
            .arg(&self.plan)
            .args(["--executor", "local", "--report"])
            .arg(self.dir.path().join("review.html"))
            .env_remove("DPUCTL_AGENT")
            .stdin(Stdio::null())
            .output()
            .expect("run dpuctl")
    }
}

fn step_status(report: &Value, step: &str) -> String {
    report["steps"]
        .as_array()
        .and_then(|s| s.iter().find(|x| x["name"] == step))
        .map(|x| x["status"].as_str().unwrap_or("").to_owned())
        .unwrap_or_default()
}

/// Every step passed: what makes the accounting the only thing that decides the exit.
fn assert_every_step_passed(report: &Value) {
    for step in [
        "storage",
        "communication",
        "training",
        "merge",
        "serving",
        "review",
        "cleanup",
    ] {
        assert_eq!(step_status(report, step), "passed", "{step}: {report:#}");
    }
}

/// The whole run's accounting line for the fixture port.
fn rdma_line(report: &Value) -> &Value {
    report["accounting"]
        .as_array()
        .and_then(|a| {
            a.iter()
                .find(|l| l["what"].as_str().is_some_and(|w| w.contains("mlx5_0/1")))
        })
        .unwrap_or_else(|| panic!("no accounting line for mlx5_0/1: {report:#}"))
}

/// The training stand-in sets `port_xmit_packets` below where the run started (the NCCL
/// stand-in had raised it first, so the communication step agreed): the run's packet
/// count for the port is unknown, not 0 and not the other counter's growth alone.
#[test]
fn a_counter_reset_during_the_demo_makes_its_accounting_inconclusive() {
    if !sh_available() {
        skip!("sh is needed for the demo's stand-in steps");
    }
    let demo = Demo::new((12, RCV_AT_START + NCCL_MOVES.1 + 500));
    let out = demo.run();
    let report = json(&out);
    assert_every_step_passed(&report);
    assert_eq!(out.status.code(), Some(3), "{}", describe(&out));
    assert_eq!(report["passed"], true, "{report:#}");
    let line = rdma_line(&report);
    assert_eq!(
        line["value"],
        Value::Null,
        "a reset is not a count: {line:#}"
    );
    let why = line["inconclusive"].as_str().unwrap_or_default();
    assert!(
        why.contains("reset") && why.contains("port_xmit_packets"),
        "the reason names the reset counter: {line:#}"
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("inconclusive"), "{stderr}");
    // The stand-in really rewrote the fixture, and the other lines were still read.
    assert_eq!(read_counter(&demo.host_root, "port_xmit_packets"), 12);
    let storage = report["accounting"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|l| l["path"] == "storage")
        .unwrap_or_else(|| panic!("no storage line: {report:#}"));
    assert!(storage["value"].as_u64().is_some(), "{storage:#}");
    assert!(storage.get("inconclusive").is_none(), "{storage:#}");
    assert!(
        !demo.snap.requests_of("bdev_get_iostat").is_empty(),
        "the storage step read the volume through the agent"
    );
}

/// The negative control: the same run with the counters still growing through training.
#[test]
fn counters_that_keep_growing_give_the_demo_its_exact_packet_count() {
    if !sh_available() {
        skip!("sh is needed for the demo's stand-in steps");
    }
    let (xmit, rcv) = (
        XMIT_AT_START + NCCL_MOVES.0 + 300,
        RCV_AT_START + NCCL_MOVES.1 + 200,
    );
    let demo = Demo::new((xmit, rcv));
    let out = demo.run();
    let report = json(&out);
    assert_every_step_passed(&report);
    assert_eq!(out.status.code(), Some(0), "{}", describe(&out));
    // The steps' progress (the run's observer's events, drawn by dpuctl on stderr even
    // with `-o json`): one verdict line per step as it ends, in the report's order.
    let stderr = String::from_utf8_lossy(&out.stderr);
    let steps = report["steps"].as_array().expect("steps");
    let mut from = 0;
    for (i, step) in steps.iter().enumerate() {
        let title = step["title"].as_str().expect("title");
        let line = format!("[{}/{}] {title}: PASSED in ", i + 1, steps.len());
        let at = stderr[from..]
            .find(&line)
            .unwrap_or_else(|| panic!("no {line:?} after byte {from} of stderr: {stderr}"));
        from += at + line.len();
    }
    let line = rdma_line(&report);
    assert_eq!(
        line["value"],
        xmit + rcv - XMIT_AT_START - RCV_AT_START,
        "{line:#}"
    );
    assert!(line.get("inconclusive").is_none(), "{line:#}");
    assert_eq!(read_counter(&demo.host_root, "port_xmit_packets"), xmit);
}

// ---------------------------------------------------------------------------------------
// roce perf
// ---------------------------------------------------------------------------------------

/// The local RoCE v2 IPv4 GID the fixture gets (192.168.100.1), and the peer's (127.0.0.1,
/// where the stand-ins "reach" it).
const LOCAL_GID: &str = "0000:0000:0000:0000:0000:ffff:c0a8:6401";
const PEER_GID: &str = "0000:0000:0000:0000:0000:ffff:7f00:0001";
const GID_INDEX: u32 = 3;
const SIZE: u64 = 4096;

/// A `roce perf` setup: the local fixture with a RoCE v2 IPv4 GID, a peer fixture, and
/// stand-ins for ssh and qperf in `bin/`.
struct Perf {
    dir: tempfile::TempDir,
    root: PathBuf,
    bin: PathBuf,
}

impl Perf {
    /// `qperf_sets`: what the client stand-in sets (sent, received) the port's packet
    /// counters to while it "runs"; None leaves them still.
    fn new(qperf_sets: Option<(u64, u64)>) -> Self {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path().join("root");
        fixture::single_rdma_port(&root).expect("fixture");
        fixture::set_gid(
            &root,
            "mlx5_0",
            1,
            GID_INDEX,
            LOCAL_GID,
            "RoCE v2",
            Some("ens1f0np0"),
        )
        .expect("gid");
        let peer = dir.path().join("peer");
        fixture::single_rdma_port(&peer).expect("peer fixture");
        fixture::set_gid(&peer, "mlx5_0", 1, 1, PEER_GID, "RoCE v2", Some("p0")).expect("gid");
        let bin = dir.path().join("bin");
        std::fs::create_dir_all(&bin).expect("mkdir");
        let log = dir.path().join("log");

        // ssh: refuses to be a ControlMaster (dpuctl then connects session by session);
        // runs the remote command (the one argument after `--` and the destination) with
        // sh, as the remote shell would; the GID listing runs against the peer fixture.
        write_script(
            &bin.join("ssh"),
            &format!(
                r#"log={log}; peer={peer}
for a; do [ "$a" = -M ] && exit 255; done
while [ $# -gt 0 ] && [ "$1" != -- ]; do shift; done
[ $# -eq 3 ] || {{ echo "fake ssh: expected -- DEST COMMAND, got $*" >&2; exit 255; }}
printf 'ssh %s: %s\n' "$2" "$3" >> "$log"
case $3 in
*/sys/class/infiniband/*)
    cmd=$(printf '%s' "$3" | sed "s#/sys/class/infiniband#$peer/sys/class/infiniband#g")
    sh -c "$cmd" | sed "s#^$peer##" ;;
*) exec sh -c "$3" ;;
esac
"#,
                log = sh_quote(utf8(&log)),
                peer = sh_quote(utf8(&peer)),
            ),
        );
        // qperf: the server (`qperf -lp PORT`) has nothing to serve; the client prints a
        // tcp_bw result and moves (or resets) the counters as it goes.
        let counters = root.join(COUNTERS);
        let rewrite = qperf_sets.map_or_else(String::new, |(xmit, rcv)| {
            format!(
                "echo {xmit} > {}\necho {rcv} > {}\n",
                sh_quote(utf8(&counters.join("port_xmit_packets"))),
                sh_quote(utf8(&counters.join("port_rcv_packets"))),
            )
        });
        write_script(
            &bin.join("qperf"),
            &format!(
                "printf 'qperf %s\\n' \"$*\" >> {log}\n[ $# -le 2 ] && exit 0\n{rewrite}\
                 printf 'tcp_bw:\\n    bw  =  1.17 GB/sec\\n'\n",
                log = sh_quote(utf8(&log)),
            ),
        );
        Self { dir, root, bin }
    }

    fn run(&self) -> Output {
        let path = std::env::var_os("PATH").unwrap_or_default();
        let mut paths = vec![self.bin.clone()];
        paths.extend(std::env::split_paths(&path));
        Command::new(bin_dir().join("dpuctl"))
            .arg("--sys-root")
            .arg(&self.root)
            .args(["-o", "json", "roce", "perf", "--peer", "target", "--ssh"])
            .arg(self.bin.join("ssh"))
            .args([
                "--peer-address",
                "127.0.0.1",
                "--tests",
                "tcp_bw",
                "--sizes",
                &SIZE.to_string(),
                "--tcp-seconds",
                "1",
                "--run-timeout",
                "60",
            ])
            .env("PATH", std::env::join_paths(paths).expect("PATH"))
            .env_remove("DPUCTL_SSH")
            .env_remove("DPUCTL_AGENT")
            .stdin(Stdio::null())
            .output()
            .expect("run dpuctl")
    }

    /// What the stand-ins were asked to do, in order.
    fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("log")).unwrap_or_default()
    }
}

/// The stand-ins did what a real sweep needs: the GID listing and the qperf server over
/// ssh, the client here, against the endpoints the fixtures give.
fn assert_one_tcp_run(perf: &Perf, report: &Value) {
    assert_eq!(report["local"]["ibdev"], "mlx5_0", "{report:#}");
    assert_eq!(report["local"]["gid_index"], GID_INDEX, "{report:#}");
    assert_eq!(report["local"]["ipv4"], "192.168.100.1", "{report:#}");
    assert_eq!(report["remote"]["gid_index"], 1, "{report:#}");
    assert_eq!(report["remote"]["ipv4"], "127.0.0.1", "{report:#}");
    let log = perf.log();
    assert!(log.contains("gid_attrs/types"), "the GID listing: {log}");
    // The wrapper spans lines; the server's words follow it on its last one. Whether the
    // server stand-in itself got to log a line is not asserted: with no grace (`0`) the
    // wrapper kills it as soon as the client is done, which on a loaded machine can be
    // before it ran at all, as a real server could be.
    assert!(
        log.contains("ssh target: sh -c 'grace=$1")
            && log.contains("' dpuctl-peer 0 qperf -lp 18515\n"),
        "the server went over ssh: {log}"
    );
    assert!(
        log.lines()
            .any(|l| l == format!("qperf -lp 18515 -t 1 -m {SIZE} 127.0.0.1 tcp_bw")),
        "the client ran here: {log}"
    );
    let runs = report["runs"].as_array().expect("runs");
    assert_eq!(runs.len(), 1, "{report:#}");
    assert_eq!(runs[0]["test"], "tcp_bw", "{report:#}");
    assert_eq!(runs[0]["error"], Value::Null, "{report:#}");
    assert_eq!(runs[0]["rdma"]["source"], "sysfs", "{report:#}");
    assert!(
        runs[0]["rdma"]["payload_bytes"].as_u64() > Some(0),
        "{report:#}"
    );
}

/// The TCP run's counters went down (a reset): the counters cannot say the port stayed
/// still, so the sweep is inconclusive rather than a passed TCP control.
#[test]
fn a_counter_reset_during_a_tcp_run_makes_roce_perf_inconclusive() {
    if !sh_available() {
        skip!("sh is needed for the ssh and qperf stand-ins");
    }
    let perf = Perf::new(Some((12, RCV_AT_START)));
    let out = perf.run();
    let report = json(&out);
    assert_one_tcp_run(&perf, &report);
    assert_eq!(out.status.code(), Some(3), "{}", describe(&out));
    assert_eq!(report["verdict"], "inconclusive", "{report:#}");
    let rdma = &report["runs"][0]["rdma"];
    assert_eq!(rdma["path"], "unknown", "{rdma:#}");
    assert_eq!(
        rdma["packets_delta"],
        Value::Null,
        "no count invented: {rdma:#}"
    );
    let why = rdma["inconclusive"].as_str().unwrap_or_default();
    assert!(
        why.contains("reset") && why.contains("port_xmit_packets"),
        "the reason names the reset counter: {rdma:#}"
    );
    assert_eq!(report["runs"][0]["flagged"], false, "{report:#}");
    assert_eq!(read_counter(&perf.root, "port_xmit_packets"), 12);
}

/// The negative control: the same sweep with the counters still is a passed TCP control.
#[test]
fn still_counters_during_a_tcp_run_make_roce_perf_ok() {
    if !sh_available() {
        skip!("sh is needed for the ssh and qperf stand-ins");
    }
    let perf = Perf::new(None);
    let out = perf.run();
    let report = json(&out);
    assert_one_tcp_run(&perf, &report);
    assert_eq!(out.status.code(), Some(0), "{}", describe(&out));
    assert_eq!(report["verdict"], "ok", "{report:#}");
    // The sweep's progress (its observer's events, drawn by dpuctl on stderr even with
    // `-o json`): the endpoints, then the run as it starts and as it ends, in that order.
    let stderr = String::from_utf8_lossy(&out.stderr);
    let at = |text: &str| {
        stderr
            .find(text)
            .unwrap_or_else(|| panic!("no {text:?} on stderr: {stderr}"))
    };
    let resolved = at("; peer target at 127.0.0.1: ");
    let started = at(&format!("[1/1] tcp_bw {SIZE} B ... "));
    let done = at(", counters: ");
    assert!(resolved < started && started < done, "{stderr}");
    let rdma = &report["runs"][0]["rdma"];
    assert_eq!(rdma["path"], "not-rdma", "{rdma:#}");
    assert_eq!(rdma["packets_delta"], 0, "{rdma:#}");
    assert_eq!(rdma["bytes_delta"], 0, "{rdma:#}");
    assert!(rdma.get("inconclusive").is_none(), "{rdma:#}");
    assert_eq!(read_counter(&perf.root, "port_xmit_packets"), XMIT_AT_START);
}
