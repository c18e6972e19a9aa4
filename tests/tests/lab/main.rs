//! The lab tier: the real kernel paths in the QEMU lab (`lab/`), driven the way a user
//! drives them: `dpuctl` in the bluefield VM's host namespace talks to `dpu-agent` on the
//! DPU side over the management link.
//!
//! Asserts real kernel state: the agent attaches the target's namespace over NVMe/RDMA
//! (soft-RoCE) with the kernel backend, the bytes read on the host side have the target
//! file's checksum, the DPU's RDMA counters carry the read while the host namespace's
//! interfaces do not, the agent's io stats count it, OVS flows land in TC (`dp:tc`,
//! `not_in_hw`) joined to their tc filters, detaching removes the disk, `roce perf`
//! tells perftest's RDMA runs from qperf's TCP runs by the RDMA port counters, and an A/B/A
//! MTU experiment over soft-RoCE counts only counter-corroborated trials and puts p0 back,
//! an A/B/A ring experiment sets p0's RX ring through ethtool netlink and puts it back, and
//! `dpuctl capture` bundles of both sides replay the live `check` and counter samples (the
//! DPU side's RDMA nldev statistics included).
//!
//! `runnable_docs` runs the docs' ```` ```sh lab ```` examples as written (`tests/README.md`).
//!
//! Boots two TCG VMs (about 1 minute from the image cache, 2-3 from nothing), so it runs
//! only with `DPU_TEST_LAB=1` (CI sets it) and as root; the tests take turns on the one lab.
//! A boot is the tier's dearest step, so everything shares one: the storage, switch, RoCE
//! and fleet-pairs checks run in one test, and the runnable docs last, on the same boot
//! (their `dpuctl lab up` finds it up, their `dpuctl lab down` ends it).

mod capture_replay;
mod experiment_mtu;
mod experiment_ring;
mod fleet_pairs;
mod runnable_docs;
mod storage_tcp;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Mutex, MutexGuard, PoisonError};

use dpu_tests::harness::bin_dir;
use dpu_tests::skip;
use serde_json::Value;

/// The bytes the lab's target exports (`NVME_BACKING_MIB` in lab/topology.env).
const TARGET_BYTES: u64 = 64 << 20;
/// What the storage read engine reads of them (the checksum reads them all).
const ENGINE_BYTES: u64 = 32 << 20;

/// Writes `line` to the test process's stderr past the test harness's capture, so CI's log
/// shows it for a passing test too (timings, what a negative control answered).
fn shown(line: &str) {
    use std::io::Write as _;
    let _ = writeln!(std::io::stderr(), "{line}");
}

fn lab_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../lab")
}

/// There is one lab per machine (fixed ports, one run directory): the tests of this tier
/// take turns even when cargo runs them on parallel threads.
fn one_lab_at_a_time() -> MutexGuard<'static, ()> {
    static LAB: Mutex<()> = Mutex::new(());
    LAB.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Takes the lab down when dropped (printing the serial logs first when the test
/// failed), then lets the next test of the tier have it.
struct LabDown {
    _turn: MutexGuard<'static, ()>,
}

impl LabDown {
    fn new() -> Self {
        Self {
            _turn: one_lab_at_a_time(),
        }
    }
}

impl Drop for LabDown {
    fn drop(&mut self) {
        let script = lab_dir().join("lab.sh");
        if std::thread::panicking() {
            let _ = Command::new("bash").arg(&script).arg("logs").status();
        }
        let _ = Command::new("bash").arg(&script).arg("down").status();
    }
}

/// Boots the lab for one test and always takes it down, printing the serial logs when
/// the test failed.
struct Lab {
    _down: LabDown,
}

impl Lab {
    fn up() -> Self {
        let down = LabDown::new();
        let status = Command::new("bash")
            .arg(lab_dir().join("lab.sh"))
            .arg("up")
            .arg("--bin-dir")
            .arg(bin_dir())
            .status()
            .expect("run lab.sh up");
        let lab = Self { _down: down };
        assert!(status.success(), "lab.sh up failed ({status})");
        lab
    }

    /// Runs `script` in `ns` of the bluefield VM (or on the target with `vm`).
    /// Each command's wall time goes to stderr, so a slow lab run shows which step grew.
    fn run(&self, vm: &str, ns: &str, script: &str) -> (i32, String, String) {
        let started = std::time::Instant::now();
        let out = Command::new("bash")
            .arg(lab_dir().join("lab.sh"))
            .args([
                "run",
                "--vm",
                vm,
                "--ns",
                ns,
                "--timeout",
                "300",
                "--",
                script,
            ])
            .output()
            .expect("run lab.sh run");
        shown(&format!(
            "[lab] {:6.1}s {vm}/{ns}: {}",
            started.elapsed().as_secs_f64(),
            script.lines().next().unwrap_or_default()
        ));
        let code = out.status.code().unwrap_or(-1);
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        assert_ne!(code, 255, "the lab failed running {script:?}: {stderr}");
        (code, stdout, stderr)
    }

    /// Runs `script` in the host namespace and requires success.
    fn host(&self, script: &str) -> String {
        let (code, stdout, stderr) = self.run("bluefield", "host", script);
        assert_eq!(
            code, 0,
            "{script:?} exited {code}\nstdout: {stdout}\nstderr: {stderr}"
        );
        stdout
    }

    fn host_json(&self, script: &str) -> Value {
        let text = self.host(script);
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("{script:?}: not JSON ({e}): {text}"))
    }

    /// `key=value` lines the target wrote when it became ready.
    fn target_facts(&self) -> BTreeMap<String, String> {
        let (code, stdout, _) = self.run("target", "none", "cat /lab/share/ready");
        assert_eq!(code, 0);
        stdout
            .lines()
            .filter_map(|l| l.split_once('='))
            .map(|(k, v)| (k.to_owned(), v.to_owned()))
            .collect()
    }
}

/// Asserts a proof ran as three PROVEN trials of `work` with two witnesses, the second one's
/// line `far_end` met in every trial; returns those lines.
fn three_proven_trials_with_two_witnesses<'a>(
    proof: &'a Value,
    work: [u64; 3],
    far_end: &str,
) -> Vec<&'a Value> {
    let trials = proof["trials"].as_array().expect("a trials table");
    assert_eq!(trials.len(), 3, "{proof}");
    for (row, work) in trials.iter().zip(work) {
        assert_eq!(row["work"], work, "{row}");
        assert_eq!(row["verdict"], "PROVEN", "{row}");
    }
    assert_eq!(
        proof["witnesses"].as_array().map(Vec::len),
        Some(2),
        "{proof}"
    );
    (1..=3)
        .map(|trial| {
            let name = format!("trial {trial}: {far_end}");
            let line = proof["lines"]
                .as_array()
                .into_iter()
                .flatten()
                .find(|l| l["expectation"]["name"] == name.as_str())
                .unwrap_or_else(|| panic!("no line {name:?}: {proof}"));
            assert_eq!(line["outcome"]["result"], "met", "{line}");
            line
        })
        .collect()
}

/// A counter's value in a `dpuctl -o json dpu counters` snapshot (proto3 JSON omits
/// zeros and writes 64-bit numbers as strings).
fn counter(snapshot: &Value, object: &str, name: &str) -> u64 {
    snapshot["samples"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|s| s["object"] == object && s["counter"] == name)
        .unwrap_or_else(|| panic!("no {object} {name} in the snapshot"))
        .get("value")
        .and_then(|v| v.as_str().and_then(|s| s.parse().ok()).or(v.as_u64()))
        .unwrap_or(0)
}

/// rx bytes of every interface in the host namespace, summed.
fn host_rx_bytes(lab: &Lab) -> u64 {
    lab.host("cat /sys/class/net/*/statistics/rx_bytes")
        .lines()
        .filter_map(|l| l.trim().parse::<u64>().ok())
        .sum()
}

/// `rdma -j statistic show link DEV/PORT` in the DPU namespace: iproute2's reading of the
/// same RDMA netlink request the agent makes, as counter name → value.
fn rdma_statistic(lab: &Lab, link: &str) -> BTreeMap<String, u64> {
    let (code, stdout, stderr) = lab.run(
        "bluefield",
        "dpu",
        &format!("rdma -j statistic show link {link}"),
    );
    assert_eq!(code, 0, "rdma statistic show link {link}: {stderr}");
    let links: Value = serde_json::from_str(&stdout)
        .unwrap_or_else(|e| panic!("rdma statistic: not JSON ({e}): {stdout}"));
    let first = links[0].as_object().cloned().unwrap_or_default();
    first
        .into_iter()
        .filter(|(name, _)| !matches!(name.as_str(), "ifindex" | "port"))
        .filter_map(|(name, value)| Some((name, value.as_u64()?)))
        .collect()
}

/// The agent reads the port's `hw_counters` over RDMA netlink on the live system (its log
/// says so), and every one of them lies between iproute2's readings of the same netlink
/// request just before and just after: the decoder agrees with the real kernel's
/// answers, names and values.
fn rdma_netlink_agrees_with_rdma_statistic(lab: &Lab, object: &str) {
    let before = rdma_statistic(lab, "rxe0/1");
    let snapshot = lab.host_json("dpuctl -o json dpu counters -s rdma:rxe0/1");
    let after = rdma_statistic(lab, "rxe0/1");
    let log = lab.host("cat /lab/share/dpu-agent.log");
    assert!(
        log.lines()
            .any(|l| l.contains("hw_counters over RDMA netlink") && l.contains("rxe0")),
        "the agent did not read rxe0 over RDMA netlink:\n{log}"
    );
    let hw: Vec<&Value> = snapshot["samples"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|s| s["object"] == object && s["source"] == "rdma_hw")
        .collect();
    assert!(
        !hw.is_empty(),
        "no rdma_hw samples for {object}: {snapshot}"
    );
    for sample in hw {
        let name = sample["counter"].as_str().unwrap_or_default();
        // proto3 JSON writes 64-bit numbers as strings and omits zeros.
        let value = sample
            .get("value")
            .and_then(|v| v.as_str().and_then(|s| s.parse().ok()).or(v.as_u64()))
            .unwrap_or(0);
        let (Some(low), Some(high)) = (before.get(name), after.get(name)) else {
            panic!("{name} is in the agent's snapshot but not in `rdma statistic`: {before:?}");
        };
        assert!(
            (*low..=*high).contains(&value),
            "{name}: the agent read {value}, rdma statistic {low} before and {high} after"
        );
    }
}

/// A 64-bit field of a proto3 JSON message (a string, or a number; absent is zero).
fn json_u64(value: &Value, field: &str) -> u64 {
    value
        .get(field)
        .and_then(|v| v.as_str().and_then(|s| s.parse().ok()).or(v.as_u64()))
        .unwrap_or(0)
}

/// `rxe0/1`'s `hw_counters` files read in the DPU namespace, as name → value (without
/// `lifespan`, a setting).
fn sysfs_hw_counters(lab: &Lab) -> BTreeMap<String, u64> {
    let (code, stdout, stderr) = lab.run(
        "bluefield",
        "dpu",
        "cd /sys/class/infiniband/rxe0/ports/1/hw_counters && for f in *; do echo \"$f $(cat \"$f\")\"; done",
    );
    assert_eq!(code, 0, "reading rxe0's hw_counters: {stderr}");
    stdout
        .lines()
        .filter_map(|l| l.split_once(' '))
        .filter(|(name, _)| *name != "lifespan")
        .filter_map(|(name, value)| Some((name.to_owned(), value.trim().parse().ok()?)))
        .collect()
}

/// The agent's netlink reading of the port names exactly the counters sysfs lists, and
/// each value lies between a sysfs reading before and one after. The later one waits past
/// the port's `lifespan` (sysfs serves `hw_counters` from a cache refreshed at most that
/// often), so it cannot be older than the agent's reading.
fn rdma_netlink_agrees_with_sysfs(lab: &Lab, object: &str) {
    let before = sysfs_hw_counters(lab);
    let snapshot = lab.host_json("dpuctl -o json dpu counters -s rdma:rxe0/1");
    let (code, lifespan, _) = lab.run(
        "bluefield",
        "dpu",
        "cat /sys/class/infiniband/rxe0/ports/1/hw_counters/lifespan 2>/dev/null || echo 10",
    );
    assert_eq!(code, 0);
    let lifespan_ms: u64 = lifespan.trim().parse().unwrap_or(10);
    std::thread::sleep(std::time::Duration::from_millis(2 * lifespan_ms + 20));
    let after = sysfs_hw_counters(lab);
    let agent: BTreeMap<String, u64> = snapshot["samples"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|s| s["object"] == object && s["source"] == "rdma_hw")
        .map(|s| {
            (
                s["counter"].as_str().unwrap_or_default().to_owned(),
                json_u64(s, "value"),
            )
        })
        .collect();
    assert_eq!(
        agent.keys().collect::<Vec<_>>(),
        before.keys().collect::<Vec<_>>(),
        "the netlink reading and sysfs name different counters"
    );
    for (name, value) in &agent {
        let (low, high) = (before[name], after[name]);
        assert!(
            (low..=high).contains(value),
            "{name}: the agent read {value}, sysfs {low} before and {high} after"
        );
    }
}

/// Runs of each side of the RDMA netlink measurement.
const NETLINK_RUNS: u32 = 10;

fn median(mut values: Vec<u64>) -> u64 {
    values.sort_unstable();
    values[values.len() / 2]
}

/// What reading one RDMA port's hardware counters costs on the lab's real kernel
/// (soft-RoCE answers RDMA netlink for real): the agent's read window for the port (the
/// snapshot's own first-to-last-read span, netlink `STAT_GET` through a kept socket)
/// against `rdma -j statistic show link rxe0/1` (what a user would script) and `cat` of
/// the port's `hw_counters` files, timed inside the same VM. Printed, and written to
/// `$DPU_BENCH_REPORT_DIR/lab-rdma-netlink.txt` for `.ci/run`'s benchmarks stage; never
/// asserted (a TCG guest's timings say nothing absolute).
fn measure_rdma_netlink(lab: &Lab) {
    let windows: Vec<u64> = (0..NETLINK_RUNS)
        .map(|_| {
            let snap = lab.host_json("dpuctl -o json dpu counters -s rdma:rxe0/1");
            json_u64(&snap, "monotonicEndNs").saturating_sub(json_u64(&snap, "monotonicStartNs"))
        })
        .collect();
    let per_call = |script: &str| -> u64 {
        let timed = format!(
            "t0=$(date +%s%N); i=0; while [ $i -lt {NETLINK_RUNS} ]; do {script} >/dev/null; i=$((i+1)); done; t1=$(date +%s%N); echo $(( (t1 - t0) / {NETLINK_RUNS} ))"
        );
        let (code, stdout, stderr) = lab.run("bluefield", "dpu", &timed);
        assert_eq!(code, 0, "{script}: {stderr}");
        stdout.trim().parse().unwrap_or(0)
    };
    let rdma_tool = per_call("rdma -j statistic show link rxe0/1");
    let cat_files = per_call("cat /sys/class/infiniband/rxe0/ports/1/hw_counters/*");
    let engine = median(windows);
    let ratio = |other: u64| other as f64 / engine.max(1) as f64;
    let report = format!(
        "RDMA netlink, lab (TCG guest, soft-RoCE rxe0/1, {NETLINK_RUNS} runs each)\n  \
         agent read window (netlink, median)   {:>10.3} ms\n  \
         rdma -j statistic show link (mean)    {:>10.3} ms  ({:.1}x the agent)\n  \
         cat hw_counters/* (mean)              {:>10.3} ms  ({:.1}x the agent)\n",
        engine as f64 / 1e6,
        rdma_tool as f64 / 1e6,
        ratio(rdma_tool),
        cat_files as f64 / 1e6,
        ratio(cat_files),
    );
    eprint!("{report}");
    if let Some(dir) = std::env::var_os("DPU_BENCH_REPORT_DIR") {
        let dir = PathBuf::from(dir);
        std::fs::create_dir_all(&dir).expect("report dir");
        std::fs::write(dir.join("lab-rdma-netlink.txt"), report).expect("write report");
    }
}

/// The AI-cluster checks on the lab's real kernel, which has no GPU, no InfiniBand port
/// and no firmware tool: each skips, and says why (never a pass).
fn ai_cluster_checks_skip_with_the_reason_on_the_lab_kernel(lab: &Lab) {
    let (_, stdout, stderr) = lab.run("bluefield", "host", "dpuctl -o json check --no-agent");
    let results: Value = serde_json::from_str(&stdout)
        .unwrap_or_else(|e| panic!("check: not JSON ({e}): {stdout}\n{stderr}"));
    let results = results.as_array().cloned().unwrap_or_default();
    let find = |id: &str| {
        results
            .iter()
            .find(|r| r["id"] == id)
            .unwrap_or_else(|| panic!("no {id} in {results:?}"))
            .clone()
    };
    for (id, reason) in [
        ("gpu.nic-affinity", "no NVIDIA GPU"),
        ("gpu.nic-sharing", "no NVIDIA GPU"),
        ("gpu.numa", "no NVIDIA GPU"),
        ("gdr.peermem", "GPU"),
        ("gdr.acs", "GPU"),
        ("gdr.iommu", "GPU"),
        ("ib.port", "no InfiniBand port"),
        ("ib.lid", "no InfiniBand port"),
        ("fw.tool", "mstconfig"),
    ] {
        let r = find(id);
        let detail = r["detail"].as_str().unwrap_or_default();
        assert_eq!(r["status"], "skip", "{id}: {detail}");
        assert!(
            detail.contains(reason),
            "{id} skipped for another reason: {detail}"
        );
    }
}

#[test]
fn storage_and_switch_through_the_agent_on_real_kernel_paths() {
    if std::env::var("DPU_TEST_LAB").as_deref() != Ok("1") {
        skip!("the QEMU lab tier runs with DPU_TEST_LAB=1 (boots two VMs, a few minutes)");
    }
    if !dpu_tests::running_as_root() {
        skip!("the QEMU lab needs root (apt for its host tools, network namespaces in the guests)");
    }
    let lab = Lab::up();
    let facts = lab.target_facts();
    let nqn = facts.get("nqn").expect("target nqn").clone();
    let want_sum = facts
        .get("backing_sha256")
        .expect("target checksum")
        .clone();

    // The agent answers from the host namespace with no flags (DPUCTL_AGENT in the lab).
    let health = lab.host("dpuctl dpu health");
    assert!(health.contains("kernel-nvmeof"), "{health}");

    // Attach the remote namespace over NVMe/RDMA through the agent's kernel backend.
    let rdma_object = "rdmaDevices/rxe0/ports/1";
    let before = lab.host_json("dpuctl -o json dpu counters -s rdma:rxe0/1");
    let host_rx_before = host_rx_bytes(&lab);
    let remote = lab.host_json(&format!(
        "dpuctl -o json storage attach --id r0 --transport rdma --traddr 10.10.0.1 --subnqn {nqn}"
    ));
    assert_eq!(
        remote["status"]["state"], "REMOTE_CONTROLLER_STATE_ENABLED",
        "{remote}"
    );
    assert_eq!(
        remote["status"]["volumes"][0]["name"], "volumes/r0n1",
        "{remote}"
    );
    let listing = lab.host_json("dpuctl -o json storage list");
    let device = listing["remoteControllers"][0]["status"]["volumes"][0]["name"].clone();
    assert_eq!(device, "volumes/r0n1");

    // The host reads the disk the DPU side connected: the storage read engine over half of
    // it, then the checksum of every byte.
    let disk = lab
        .host("ls /sys/block | grep -E '^nvme[0-9]+n[0-9]+$' | head -1")
        .trim()
        .to_owned();
    assert!(!disk.is_empty(), "no NVMe namespace appeared");
    let read = lab.host_json(&format!(
        "dpuctl -o json storage read /dev/{disk} --bs 1m --iodepth 8 --size 32m"
    ));
    assert_eq!(read["jobs"][0]["read"]["io_bytes"], ENGINE_BYTES, "{read}");
    let sum = lab.host(&format!("head -c {TARGET_BYTES} /dev/{disk} | sha256sum"));
    assert!(
        sum.starts_with(&want_sum),
        "read {sum} but the target file is {want_sum}"
    );

    // The DPU's RDMA port carried the data; the host namespace's interfaces did not.
    let after = lab.host_json("dpuctl -o json dpu counters -s rdma:rxe0/1");
    let rdma_pkts =
        counter(&after, rdma_object, "rcvd_pkts") - counter(&before, rdma_object, "rcvd_pkts");
    // Both reads, in packets of at most 4 KiB (rxe's MTU is smaller still).
    assert!(
        rdma_pkts >= (ENGINE_BYTES + TARGET_BYTES) / 4096,
        "rxe0 received only {rdma_pkts} packets"
    );
    rdma_netlink_agrees_with_rdma_statistic(&lab, rdma_object);
    rdma_netlink_agrees_with_sysfs(&lab, rdma_object);
    measure_rdma_netlink(&lab);
    ai_cluster_checks_skip_with_the_reason_on_the_lab_kernel(&lab);
    let host_rx = host_rx_bytes(&lab) - host_rx_before;
    assert!(
        host_rx < TARGET_BYTES / 16,
        "the host namespace received {host_rx} bytes: the data crossed its own interfaces"
    );

    // The agent's io stats count the reads (on the multipath path device).
    let stats = lab.host_json("dpuctl -o json storage stats volumes/r0n1");
    let bytes: u64 = stats["bytesRead"]
        .as_str()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    assert!(
        bytes >= ENGINE_BYTES + TARGET_BYTES,
        "stats counted {bytes} bytes: {stats}"
    );

    // The proof, both ways. Through the DPU: PROVEN (exit 0), with an HTML report.
    let (code, proof, stderr) = lab.run(
        "bluefield",
        "host",
        "dpuctl -o json prove storage --size 32m --report /lab/share/storage.html",
    );
    assert_eq!(code, 0, "prove storage through the DPU: {proof}\n{stderr}");
    let proof: Value = serde_json::from_str(&proof).expect("proof JSON");
    assert_eq!(proof["verdict"], "PROVEN", "{proof}");
    // As three trials (8, 16 and 8 MiB), each PROVEN on its own window: the real kernel's
    // counters follow the read, and the volume is quiet in the gaps between. Two
    // witnesses: the DPU, and the target's own agent (DPUCTL_TARGET_AGENT), whose
    // soft-RoCE port sent each trial's data.
    let far = three_proven_trials_with_two_witnesses(
        &proof,
        [8 << 20, 16 << 20, 8 << 20],
        "far end sent the data",
    );
    for far in far {
        assert_eq!(
            far["expectation"]["select"]["counter"], "sent_pkts",
            "{far}"
        );
    }
    // The device was found by the volume's identity, as the real kernel reports it on both
    // sides (the agent's /sys/block of the disk it attached, the host's scan of its own).
    let volume_uuid = lab
        .host(&format!("cat /sys/block/{disk}/uuid"))
        .trim()
        .to_owned();
    assert!(!volume_uuid.is_empty(), "nvmet gives each namespace a UUID");
    let notes = proof["notes"].to_string();
    assert!(
        notes.contains(&format!("/dev/{disk} (disk {disk}) is volumes/r0n1"))
            && notes.contains(&format!("uuid agree with uuid {volume_uuid}")),
        "{proof}"
    );
    let html = lab.host("cat /lab/share/storage.html");
    assert!(html.contains("PROVEN") && html.contains("<svg"), "{html}");
    // Another reader of the volume's disk (in the lab the host and the DPU share one
    // kernel: this is also the DPU's disk of the volume) that starts after the proof's idle
    // window (3 s into its 2 s idle window and first trial) and reads 1 MiB every 0.1 s
    // until the proof ends (stopped then; 25 s at most): never PROVEN, and the line that
    // says so names the volume (a gap that was not quiet, or a trial that did not agree).
    let (code, proof, stderr) = lab.run(
        "bluefield",
        "host",
        &format!(
            "(sleep 3; end=$(($(date +%s) + 25)); while [ $(date +%s) -lt $end ]; do \
               dd if=/dev/{disk} of=/dev/null bs=1M count=1 iflag=direct 2>/dev/null; \
               sleep 0.1; done) & reader=$!; \
             dpuctl -o json prove storage --size 32m --idle 2; code=$?; \
             kill $reader 2>/dev/null; wait; exit $code"
        ),
    );
    let proof: Value =
        serde_json::from_str(&proof).unwrap_or_else(|e| panic!("{e}: {proof}\n{stderr}"));
    assert!(
        proof["verdict"] == "INCONCLUSIVE" || proof["verdict"] == "NOT_PROVEN",
        "another reader of the volume must not be PROVEN: {proof:#}"
    );
    assert!(code == 3 || code == 1, "exit {code}: {proof:#}");
    let named = proof["lines"].as_array().into_iter().flatten().any(|l| {
        l["outcome"]["result"] != "met"
            && l["expectation"]["select"]["objects"]
                .as_array()
                .is_some_and(|o| o.iter().any(|o| o == "volumes/r0n1"))
    });
    assert!(named, "a line on volumes/r0n1 says why: {proof:#}");
    shown(&format!(
        "with another reader: {} ({})",
        proof["verdict"],
        proof["lines"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|l| l["outcome"]["result"] != "met")
            .map(|l| format!(
                "{}: {}",
                l["expectation"]["name"].as_str().unwrap_or_default(),
                l["outcome"]["reason"].as_str().unwrap_or_default()
            ))
            .collect::<Vec<_>>()
            .join("; ")
    ));
    // The host reading the same file over its own network (NVMe/TCP through ovsbr1):
    // refused before anything is counted (exit 2). Its disk is another namespace: nvmet
    // gave each subsystem's namespace a UUID of its own, and the kernel refuses one
    // identity in two subsystems (nvme_global_check_duplicate_ids), so no host-direct path
    // to the same data can carry the volume's identity. (That the counters would also
    // say NOT PROVEN is held from readings: prove::storage::tests.)
    let direct = facts.get("nqn_direct").expect("direct nqn").clone();
    lab.host(&format!(
        "nvme connect -t tcp -a 10.20.0.1 -s 4420 -n {direct} >/dev/null; \
         for _ in $(seq 100); do [ -e /sys/block/nvme1n1 ] && break; sleep 0.1; done"
    ));
    let direct_uuid = lab.host("cat /sys/block/nvme1n1/uuid").trim().to_owned();
    let (code, proof, stderr) = lab.run(
        "bluefield",
        "host",
        "dpuctl -o json prove storage --size 32m --device /dev/nvme1n1 --volume r0n1",
    );
    assert_eq!(
        code, 2,
        "the host-direct disk must be refused: {proof}\n{stderr}"
    );
    assert!(
        proof.trim().is_empty(),
        "no verdict for an unbound device: {proof}"
    );
    assert!(
        stderr.contains("is not volume volumes/r0n1")
            && stderr.contains("uuid differs")
            && stderr.contains(&direct_uuid)
            && stderr.contains(&volume_uuid),
        "both identities are named: {stderr}"
    );
    lab.host(&format!("nvme disconnect -n {direct} >/dev/null"));

    // OVS: traffic from the host PF through ovsbr1 is switched by TC flower in software.
    lab.host("ping -c 5 -i 0.2 -q 10.20.0.1");
    let flows = lab.host_json("dpuctl -o json switch flows");
    let tc_flows: Vec<&Value> = flows["flows"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|f| f["dpLayer"] == "tc")
        .collect();
    assert!(!tc_flows.is_empty(), "no dp:tc flows: {flows}");
    assert!(
        tc_flows
            .iter()
            .all(|f| f["offloaded"] != "OFFLOAD_STATUS_OFFLOADED"),
        "the lab has no NIC: nothing may be reported in hardware: {flows}"
    );
    let joined = tc_flows
        .iter()
        .flat_map(|f| f["tcFilters"].as_array().into_iter().flatten())
        .filter(|t| t["notInHw"] == true)
        .count();
    assert!(joined > 0, "no tc filter joined to a flow by ufid: {flows}");
    // The agent placed every flow's packets by the one rule: none in hardware (the kernel's
    // hardware share of a software-only filter is zero or absent), all by tc in software.
    for flow in &tc_flows {
        let placed = &flow["packetsByLevel"];
        assert!(placed.is_object(), "a flow without its placement: {flow}");
        assert!(
            placed.get("hardware").is_none_or(|v| *v == "0" || *v == 0),
            "the lab has no NIC: nothing may be placed in hardware: {flow}"
        );
    }

    // The switch proof. With hw-offload=true the lab reaches TC in software and says so,
    // never hardware: PROVEN at the level the lab config requires (tc), as three trials
    // (200, 400 and 200 packets) with quiet gaps, and two witnesses: the DPU's flows and
    // the target's own agent counting what arrived on its interface
    // (DPUCTL_SWITCH_TARGET_AGENT, DPUCTL_SWITCH_TARGET_INTERFACE), required here.
    let (code, proof, stderr) = lab.run(
        "bluefield",
        "host",
        "dpuctl -o json prove switch --witnesses 2",
    );
    assert_eq!(code, 0, "prove switch with offload on: {proof}\n{stderr}");
    let proof: Value = serde_json::from_str(&proof).expect("proof JSON");
    assert_eq!(proof["verdict"], "PROVEN", "{proof}");
    let notes = proof["notes"].to_string();
    assert!(notes.contains("level: tc-software"), "{proof}");
    three_proven_trials_with_two_witnesses(
        &proof,
        [200, 400, 200],
        "the receiver's t1 counted the packets",
    );
    // Upcalls on the real kernel datapath: the warm-up installed the flows and tc took the
    // packets before the OVS datapath, so no trial sent packets up to ovs-vswitchd.
    for trial in 1..=3 {
        for name in [
            "the datapaths sent no packet up to ovs-vswitchd (upcalls)",
            "no upcall was lost",
        ] {
            let name = format!("trial {trial}: {name}");
            let line = proof["lines"]
                .as_array()
                .into_iter()
                .flatten()
                .find(|l| l["expectation"]["name"] == name.as_str())
                .unwrap_or_else(|| panic!("no line {name:?}: {proof}"));
            assert_eq!(line["outcome"]["result"], "met", "{line}");
            assert_eq!(
                line["expectation"]["select"]["objects"],
                serde_json::json!(["datapaths/system@ovs-system"]),
                "{line}"
            );
        }
    }
    // Asking for hardware in a lab without a NIC is refused (one window is enough to say
    // no; the negative controls run as one trial to keep the tier short).
    let (code, proof, _) = lab.run(
        "bluefield",
        "host",
        "dpuctl -o json prove switch --require hardware --trials 1",
    );
    assert_eq!(code, 1, "the lab has no hardware offload: {proof}");
    // Offload off (and applied by restarting ovs-vswitchd): the OVS datapath switches the
    // packets and the proof fails, naming the level.
    lab.host("dpuctl switch offload off");
    let (code, out, err) = lab.run("bluefield", "dpu", "/lab/guest/ovs-restart.sh");
    assert_eq!(code, 0, "ovs-vswitchd restart: {out}{err}");
    let (code, proof, stderr) = lab.run(
        "bluefield",
        "host",
        "dpuctl -o json prove switch --trials 1",
    );
    assert_eq!(
        code, 1,
        "prove switch with offload off must fail: {proof}\n{stderr}"
    );
    let proof: Value = serde_json::from_str(&proof).expect("proof JSON");
    assert_eq!(proof["verdict"], "NOT_PROVEN", "{proof}");
    assert!(
        proof["notes"].to_string().contains("level: datapath"),
        "{proof}"
    );
    lab.host("dpuctl switch offload on");
    let (code, out, err) = lab.run("bluefield", "dpu", "/lab/guest/ovs-restart.sh");
    assert_eq!(code, 0, "ovs-vswitchd restart: {out}{err}");

    // Detach: the disk goes away.
    lab.host("dpuctl storage detach remoteControllers/r0");
    let left = lab.host(
        "for _ in $(seq 100); do [ -z \"$(ls /sys/class/nvme/)\" ] && break; sleep 0.1; done; \
         ls /sys/class/nvme/ | wc -l",
    );
    assert_eq!(left.trim(), "0", "an NVMe controller is still connected");

    // The same target over NVMe/TCP: the DPU uplink is the transport line.
    storage_tcp::proven_over_nvme_tcp_by_the_dpu_uplink(&lab, &nqn);

    // RoCE performance as written (the lab's DPUCTL_ROCE_* defaults): qperf's TCP baseline
    // and perftest over soft-RoCE to the target, its servers started over ssh. The port
    // counters decide the path: every perftest run moved the RDMA port by its payload,
    // every TCP run (the negative control) left it still.
    let perf = lab.host_json("dpuctl -o json roce perf --peer target");
    assert_eq!(perf["verdict"], "ok", "{perf:#}");
    let runs = perf["runs"].as_array().expect("runs");
    assert_eq!(runs.len(), 6, "1 size x (2 TCP + 4 RDMA tests): {perf:#}");
    for run in runs {
        let test = run["test"].as_str().expect("test");
        assert!(run["error"].is_null(), "{run:#}");
        let expected = if test.starts_with("tcp") {
            "not-rdma"
        } else {
            "rdma"
        };
        assert_eq!(run["rdma"]["path"], expected, "{run:#}");
        let moved = run["rdma"]["packets_delta"]
            .as_u64()
            .expect("packets counted");
        let payload = run["rdma"]["payload_packets"].as_u64().expect("payload");
        if expected == "rdma" {
            assert!(moved >= payload * 9 / 10, "{run:#}");
        } else {
            assert!(moved < payload / 10, "{run:#}");
        }
        let number = if test.ends_with("_bw") {
            "bw_gbps"
        } else {
            "lat_avg_us"
        };
        assert!(run[number].as_f64().is_some_and(|v| v > 0.0), "{run:#}");
        assert!(run["cpu_local_s"].as_f64().is_some(), "{run:#}");
        assert!(run["cpu_peer_s"].as_f64().is_some(), "{run:#}");
    }
    assert_eq!(perf["remote"]["ibdev"], "rxe0", "{perf:#}");
    assert!(perf["remote"]["gid_index"].is_u64(), "{perf:#}");

    // An A/B/A MTU experiment over the same RDMA path, each trial a roce perf run.
    experiment_mtu::an_mtu_experiment_over_soft_roce_ends_with_a_verdict_and_the_mtu_back(&lab);
    // An A/B/A ring experiment on p0's virtio-net driver: set, reverted, killed, recovered.
    experiment_ring::a_ring_experiment_on_virtio_net_sets_the_rx_ring_and_puts_it_back(&lab);

    // The fleet's pairs between the same two hosts, on the same boot.
    fleet_pairs::roce_pairs_between_the_lab_hosts(&lab);

    // Captures of both sides of the bluefield VM replay the live answers (issue 38).
    capture_replay::captures_in_the_bluefield_vm_replay_the_live_answers(&lab);

    // Last: the docs' lab examples as written, which end by taking the lab down.
    runnable_docs::every_lab_example_in_the_docs_runs_as_written(&lab);
}
