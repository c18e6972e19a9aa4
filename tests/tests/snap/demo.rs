//! `dpuctl demo training-storage` with the local executor, end to end: dpuctl → agent →
//! fake SNAP for the storage step (which applies the plan's exposure), the host fixture's RDMA counters for the communication
//! step, small stand-in processes for the NCCL test, the fine-tune and the merge, and the
//! OpenAI-compatible stub server for serving. The samples and their manifest are made by
//! the real examples/demo/make_samples.py.
//!
//! The negative controls: the same files read while the DPU volume counts nothing fail the
//! storage step (and everything that needs it is skipped); an NCCL log that says NET/IB
//! while the RDMA ports stay still fails the communication step; a merged model that
//! differs from the archive fails the merge.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use dpu_tests::fake_snap::{FakeDialect, FakeSnap};
use dpu_tests::fixture;
use dpu_tests::harness::{bin_dir, free_tcp_port, AgentOptions, AgentProcess};
use dpu_tests::skip;
use serde_json::Value;

const HOST_NQN: &str = "nqn.2022-10.io.nvda.nvme:0";
const MODEL: &str = "demo-lora";
const PROMPT: &str = "What does a BlueField DPU offload?";
const ANSWER: &str = "Networking, storage and security work from the host CPU.";
/// An nccl-tests all-reduce over NET/IB (formats: docs/reference/rdma-bluefield.md §3.3).
const NCCL_IB: &str = "\
n1:1:1 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/RoCE [RO]; OOB eth0:10.0.0.1<0>
n1:1:9 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[0] [send] via NET/IB/0/GDRDMA
#                                                              out-of-place                       in-place
#       size         count      type   redop    root     time   algbw   busbw  #wrong     time   algbw   busbw  #wrong
#        (B)    (elements)                               (us)  (GB/s)  (GB/s)             (us)  (GB/s)  (GB/s)
   134217728      33554432     float     sum      -1   2874.1   46.70   46.70     N/A   2870.3   46.76   46.76     N/A
# Out of bounds values : 0 OK
# Avg bus bandwidth    : 21.5 
";
const FINGERPRINT: &str = r#"{"format":"demo-fingerprint/1","param_count":10,"tensor_count":1,"tensors":{"w":{"shape":[2,5],"numel":10,"l2":3.0,"mean":0.001,"proj":0.5}}}"#;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// Everything one demo run needs, with knobs for the negative controls.
struct Setup {
    _dir: tempfile::TempDir,
    merged_fingerprint: String,
    host_root: PathBuf,
    plan: PathBuf,
    snap: FakeSnap,
    _agent: AgentProcess,
}

fn ok(out: &Output) -> String {
    assert!(
        out.status.success(),
        "exit {:?}\n{}\n{}",
        out.status.code(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn setup(merged_fingerprint: &str) -> Setup {
    let (dir, dpu_root) = fixture::bluefield3_tempdir();
    let options = AgentOptions::new(dir.path(), &dpu_root);
    let snap = FakeSnap::start_with(&options.snap_socket, FakeDialect::Snap4).expect("fake SNAP");
    let agent = AgentProcess::start(&options);
    let endpoint = agent.endpoint();

    let host_root = dir.path().join("host-root");
    fixture::bluefield3_host(&host_root).expect("host fixture");
    fixture::set_counter(&host_root, "mlx5_0", 1, "port_xmit_packets", 100).expect("set");
    fixture::set_counter(&host_root, "mlx5_0", 1, "port_rcv_packets", 100).expect("set");
    let disk = dir.path().join("disk");
    let made = Command::new("python3")
        .arg(repo().join("examples/demo/make_samples.py"))
        .args(["--out"])
        .arg(&disk)
        .output()
        .expect("python3 make_samples.py");
    ok(&made);
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

    let counters = host_root.join("sys/class/infiniband/mlx5_0/ports/1/counters");
    let archive = dir.path().join("archive.json");
    std::fs::write(&archive, FINGERPRINT).expect("archive");
    let merged = dir.path().join("merged.json");
    let port = free_tcp_port();
    let stub = bin_dir().join("openai-stub");
    let plan = dir.path().join("plan.toml");
    let q = |p: &Path| format!("{:?}", p.display().to_string());
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
manifest_file = {manifest}

[communication]
nodes = ["localhost"]
nccl_tests = ["sh", "-c", "printf '%s' \"$DEMO_NCCL_LOG\"; if [ -n \"$DEMO_MOVE_RDMA\" ]; then echo 60100 > {counters}/port_xmit_packets; echo 40100 > {counters}/port_rcv_packets; fi"]
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
train = ['sh', '-c', 'n=$(cat {disk_raw}/*.jsonl | wc -c); echo step 1 loss 5.5; echo "DEMO-RESULT {{\"step\":\"finetune\",\"ok\":true,\"bytes_read\":$n}}"']
merge = ['sh', '-c', 'printf "%s" "$DEMO_MERGED" > {merged_raw}']
serve = [{stub}, "--port", "{port}", "--model", "{MODEL}", "--answer", "{PROMPT}={ANSWER}"]
serve_url = "http://127.0.0.1:{port}"
"#,
            work = q(&dir.path().join("runs")),
            disk = q(&disk),
            disk_raw = disk.display(),
            manifest = q(&disk.join("manifest.json")),
            counters = counters.display(),
            merged = q(&merged),
            merged_raw = merged.display(),
            archive = q(&archive),
            stub = q(&stub),
        ),
    )
    .expect("plan");
    Setup {
        _dir: dir,
        merged_fingerprint: merged_fingerprint.to_owned(),
        host_root,
        plan,
        snap,
        _agent: agent,
    }
}

/// Runs the demo; `dpu_reads` makes the fake SNAP count 1 MiB of reads on the volume
/// between any two polls of its io stats (what a real SNAP counts as the host reads the
/// files through it).
fn demo(
    s: &Setup,
    nccl_log: &str,
    move_rdma: bool,
    dpu_reads: bool,
    report: &Path,
) -> (Option<i32>, Value) {
    // The storage step's idle window (its first two polls) sees a volume no one else reads.
    s.snap
        .reads_after_quiet_polls(2, dpu_reads.then_some(("disk0n1", 1 << 20)));
    run_dpuctl(s, nccl_log, move_rdma, report)
}

fn run_dpuctl(s: &Setup, nccl_log: &str, move_rdma: bool, report: &Path) -> (Option<i32>, Value) {
    let mut cmd = Command::new(bin_dir().join("dpuctl"));
    cmd.arg("--sys-root").arg(&s.host_root).args([
        "-o",
        "json",
        "demo",
        "training-storage",
        "--plan",
    ]);
    cmd.arg(&s.plan).arg("--report").arg(report);
    cmd.env("DEMO_NCCL_LOG", nccl_log);
    cmd.env("DEMO_MERGED", &s.merged_fingerprint);
    if move_rdma {
        cmd.env("DEMO_MOVE_RDMA", "1");
    }
    let out = cmd.output().expect("run dpuctl");
    let json: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "not JSON ({e}): {}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    });
    (out.status.code(), json)
}

fn status(report: &Value, step: &str) -> String {
    report["steps"]
        .as_array()
        .and_then(|s| s.iter().find(|x| x["name"] == step))
        .map(|x| x["status"].as_str().unwrap_or("").to_owned())
        .unwrap_or_default()
}

fn python3_available() -> bool {
    Command::new("python3")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}

#[test]
fn the_local_demo_passes_and_accounts_for_the_whole_run() {
    if !python3_available() {
        skip!("python3 is needed for examples/demo/make_samples.py");
    }
    let s = setup(FINGERPRINT);
    let dir = tempfile::tempdir().expect("dir");
    let html = dir.path().join("review.html");
    let (code, report) = demo(&s, NCCL_IB, true, true, &html);
    assert_eq!(code, Some(0), "{report:#}");
    assert_eq!(report["passed"], true);
    for step in [
        "storage",
        "communication",
        "training",
        "merge",
        "serving",
        "review",
        "cleanup",
    ] {
        assert_eq!(status(&report, step), "passed", "{step}: {report:#}");
    }
    let line = |what: &str| {
        report["accounting"]
            .as_array()
            .and_then(|a| {
                a.iter()
                    .find(|l| l["what"].as_str().is_some_and(|w| w.contains(what)))
            })
            .and_then(|l| l["value"].as_u64())
            .unwrap_or_else(|| panic!("no accounting line {what:?}: {report:#}"))
    };
    let manifest = line("bytes the manifest lists");
    assert!(manifest > 20_000, "{report:#}");
    assert!(line("from the DPU volume") >= manifest, "{report:#}");
    assert_eq!(
        line("training script says it read"),
        manifest,
        "the stand-in read every sample"
    );
    assert_eq!(line("mlx5_0/1"), 100_000, "{report:#}");
    assert_eq!(report["serving"]["passed"], true, "{report:#}");
    let page = std::fs::read_to_string(&html).expect("report written");
    assert!(
        page.contains("PASSED") && page.contains("Where the bytes went"),
        "{page}"
    );
}

#[test]
fn reads_the_dpu_did_not_count_fail_storage_and_skip_what_needs_it() {
    if !python3_available() {
        skip!("python3 is needed for examples/demo/make_samples.py");
    }
    let s = setup(FINGERPRINT);
    let dir = tempfile::tempdir().expect("dir");
    let (code, report) = demo(&s, NCCL_IB, true, false, &dir.path().join("r.html"));
    assert_eq!(code, Some(1), "{report:#}");
    assert_eq!(status(&report, "storage"), "failed");
    let reason = report["steps"][0]["reason"].as_str().unwrap_or_default();
    assert!(
        reason.contains("did not come through the DPU path"),
        "{reason}"
    );
    for step in ["training", "merge", "serving"] {
        assert_eq!(status(&report, step), "skipped", "{step}: {report:#}");
    }
}

#[test]
fn ib_claimed_with_still_rdma_ports_and_a_wrong_merge_fail_their_steps() {
    if !python3_available() {
        skip!("python3 is needed for examples/demo/make_samples.py");
    }
    let s = setup(FINGERPRINT);
    let dir = tempfile::tempdir().expect("dir");
    let (code, report) = demo(&s, NCCL_IB, false, true, &dir.path().join("r.html"));
    assert_eq!(code, Some(1), "{report:#}");
    assert_eq!(status(&report, "communication"), "failed", "{report:#}");
    assert!(
        report["steps"][1]["reason"]
            .as_str()
            .unwrap_or_default()
            .contains("NET/IB"),
        "{report:#}"
    );
    assert_eq!(status(&report, "training"), "skipped");

    let wrong = setup(&FINGERPRINT.replace("\"proj\":0.5", "\"proj\":0.9"));
    let (code, report) = demo(&wrong, NCCL_IB, true, true, &dir.path().join("r2.html"));
    assert_eq!(code, Some(1), "{report:#}");
    assert_eq!(status(&report, "training"), "passed", "{report:#}");
    assert_eq!(status(&report, "merge"), "failed", "{report:#}");
    assert!(
        report["steps"][3]["reason"]
            .as_str()
            .unwrap_or_default()
            .contains("w.proj"),
        "{report:#}"
    );
}
