//! `prove storage` as trials (issue 31: dose–response), the real agent and dpuctl against
//! the fake SNAP, whose volume counter the test moves in windows it chooses: the read
//! counted in its own trials is PROVEN; another reader that starts after the idle window
//! shows in the gaps, and one that reads during a single trial shows as that trial's
//! disagreement, both INCONCLUSIVE (exit 3) naming where; the same single-trial reader in
//! one window is PROVEN, which is the hole trials close.
//!
//! The remote controller is reached over NVMe/TCP, so the volume's own count and the
//! host's negative controls decide (no DPU RDMA line, which the fixture's still counters
//! would fail). The device is a loop device that carries the volume's identity.

use serde_json::Value;

use dpu_tests::command::{describe, stdout_json as json};
use dpu_tests::harness::dpuctl;
use dpu_tests::skip;

use crate::host_session::{
    disk_tempdir, emulated_loop, expose_volume_over, host_root_with_netdev_stats, volume_host_uuid,
};
use crate::Lab;

const BDEV: &str = "disk0n1";
const K: u64 = 1024;
/// `--size 256k --bs 64k --trials 3`: 64, 128 and 64 KiB.
const WORK: [u64; 3] = [64 * K, 128 * K, 64 * K];

/// Runs the proof with `trials`, the volume counting `per_poll[k]` more before the k-th
/// snapshot: idle start, idle end, then before and after each trial.
fn prove(
    lab: &Lab,
    root: &str,
    device: &str,
    size: &str,
    trials: &str,
    per_poll: &[u64],
) -> (Option<i32>, Value) {
    prove_with(
        lab,
        root,
        device,
        &["--size", size, "--trials", trials],
        per_poll,
    )
}

/// [`prove`] with `extra` arguments.
fn prove_with(
    lab: &Lab,
    root: &str,
    device: &str,
    extra: &[&str],
    per_poll: &[u64],
) -> (Option<i32>, Value) {
    lab.snap.reads_on_polls(BDEV, per_poll);
    let polls = lab.snap.requests_of("bdev_get_iostat").len();
    let endpoint = lab.agent.endpoint();
    let mut args = vec![
        "--agent",
        &endpoint,
        "--sys-root",
        root,
        "-o",
        "json",
        "prove",
        "storage",
        "--volume",
        BDEV,
        "--device",
        device,
        "--bs",
        "64k",
        "--iodepth",
        "4",
        "--idle",
        "0.1",
    ];
    args.extend(extra);
    let out = dpuctl(&args);
    let report = json(&out);
    assert_eq!(
        lab.snap.requests_of("bdev_get_iostat").len() - polls,
        per_poll.len(),
        "one volume reading per snapshot, as scripted: {report:#}\n{}",
        describe(&out)
    );
    (out.status.code(), report)
}

fn inconclusive_lines(report: &Value) -> Vec<(String, String)> {
    report["lines"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|l| l["outcome"]["result"] == "inconclusive")
        .map(|l| {
            (
                l["expectation"]["name"]
                    .as_str()
                    .unwrap_or_default()
                    .to_owned(),
                l["outcome"]["reason"]
                    .as_str()
                    .unwrap_or_default()
                    .to_owned(),
            )
        })
        .collect()
}

/// The volume exposed over NVMe/TCP, and the proof's device: a loop device over a 1 MiB
/// file that carries the volume's identity in the host's `--sys-root` tree.
struct Bound {
    _dir: tempfile::TempDir,
    _host_dir: tempfile::TempDir,
    host_root: std::path::PathBuf,
    disk: dpu_tests::fixture::LoopDisk,
}

impl Bound {
    /// Err: why a loop device cannot be had here (a reason to skip).
    async fn new(lab: &Lab) -> Result<Self, String> {
        expose_volume_over(lab, "tcp");
        let uuid = volume_host_uuid(lab, "volumes/disk0n1").await;
        let dir = disk_tempdir();
        let file = dir.path().join("device.bin");
        std::fs::write(&file, vec![5u8; 1 << 20]).expect("write the device file");
        let (host_dir, host_root) = host_root_with_netdev_stats();
        let disk = emulated_loop(&file, &uuid, &[&host_root])?;
        Ok(Self {
            _dir: dir,
            _host_dir: host_dir,
            host_root,
            disk,
        })
    }

    /// The `--sys-root` and the `--device`.
    fn paths(&self) -> (&str, &str) {
        (
            self.host_root.to_str().expect("utf-8 path"),
            self.disk.path.to_str().expect("utf-8 path"),
        )
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn trials_tell_the_read_from_another_reader_of_the_volume() {
    let lab = Lab::start();
    let bound = match Bound::new(&lab).await {
        Ok(bound) => bound,
        Err(why) => skip!("the proof binds a real block device: {why}"),
    };
    let (root, device) = bound.paths();
    let [w1, w2, w3] = WORK;

    // The volume counts exactly each trial's read, in its trial.
    let (code, report) = prove(
        &lab,
        root,
        device,
        "256k",
        "3",
        &[0, 0, 0, w1, 0, w2, 0, w3],
    );
    assert_eq!(report["verdict"], "PROVEN", "{report:#}");
    assert_eq!(code, Some(0));
    let trials = report["trials"].as_array().expect("a trials table");
    assert_eq!(trials.len(), 3, "{report:#}");
    for (row, work) in trials.iter().zip(WORK) {
        assert_eq!(row["work"], work, "{row:#}");
        assert_eq!(row["verdict"], "PROVEN", "{row:#}");
    }
    let names: Vec<&str> = report["lines"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|l| l["expectation"]["name"].as_str())
        .collect();
    assert!(
        names.contains(&"trial 2: DPU volumes/disk0n1 served the read")
            && names.contains(&"gap 2: nothing else read volumes/disk0n1"),
        "{names:?}"
    );

    // Another reader starts after the idle window and reads 16 KiB per window: each trial
    // stays within its N..1.5N, the gaps do not stay quiet.
    let r = 16 * K;
    let (code, report) = prove(
        &lab,
        root,
        device,
        "256k",
        "3",
        &[0, 0, r, w1 + r, r, w2 + r, r, w3 + r],
    );
    assert_eq!(report["verdict"], "INCONCLUSIVE", "{report:#}");
    assert_eq!(code, Some(3));
    let named = inconclusive_lines(&report);
    assert!(
        named.iter().any(
            |(name, why)| name == "gap 1: nothing else read volumes/disk0n1"
                && why.contains("no workload ran")
        ),
        "{named:?}"
    );

    // Another reader during the first trial only: 64 + 24 KiB is within 64..96 KiB.
    let (code, report) = prove(
        &lab,
        root,
        device,
        "256k",
        "3",
        &[0, 0, 0, w1 + 24 * K, 0, w2, 0, w3],
    );
    assert_eq!(report["verdict"], "INCONCLUSIVE", "{report:#}");
    assert_eq!(code, Some(3));
    let named = inconclusive_lines(&report);
    assert_eq!(named.len(), 1, "{named:?}");
    assert_eq!(named[0].0, "trial 1: DPU volumes/disk0n1 served the read");
    assert!(named[0].1.starts_with("trial 1:"), "{named:?}");
    assert_eq!(report["trials"][0]["verdict"], "INCONCLUSIVE", "{report:#}");

    // Control: the same reader in one window of the same read is not seen.
    let (code, report) = prove(&lab, root, device, "64k", "1", &[0, 0, 0, w1 + 24 * K]);
    assert_eq!(report["verdict"], "PROVEN", "{report:#}");
    assert_eq!(code, Some(0));
    assert!(
        report.get("trials").is_none(),
        "one window has no trials table: {report:#}"
    );
}

/// The second witness: an agent on the far end (here a second agent over its own fixture
/// tree, whose interfaces sent nothing). The DPU's volume counts every trial's read, as if
/// it served it, but the far end did not send the data: NOT PROVEN in every trial. A far
/// end that cannot be reached is an error before anything is read.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_far_end_is_a_second_witness_that_can_say_no() {
    let lab = Lab::start();
    let far = Lab::start();
    let bound = match Bound::new(&lab).await {
        Ok(bound) => bound,
        Err(why) => skip!("the proof binds a real block device: {why}"),
    };
    let (root, device) = bound.paths();
    let [w1, w2, w3] = WORK;
    let far_endpoint = far.agent.endpoint();
    let (code, report) = prove_with(
        &lab,
        root,
        device,
        &["--size", "256k", "--target-agent", &far_endpoint],
        &[0, 0, 0, w1, 0, w2, 0, w3],
    );
    assert_eq!(report["verdict"], "NOT_PROVEN", "{report:#}");
    assert_eq!(code, Some(1));
    assert_eq!(
        report["witnesses"],
        serde_json::json!(["DPU", format!("far end ({far_endpoint})")]),
        "{report:#}"
    );
    let failed: Vec<&str> = report["lines"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|l| l["outcome"]["result"] == "not_met")
        .filter_map(|l| l["expectation"]["name"].as_str())
        .collect();
    assert_eq!(
        failed,
        [
            "trial 1: far end sent the data",
            "trial 2: far end sent the data",
            "trial 3: far end sent the data"
        ],
        "{report:#}"
    );
    let far_line = report["lines"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|l| l["expectation"]["name"] == "trial 1: far end sent the data")
        .expect("far end line");
    assert_eq!(far_line["expectation"]["select"]["side"], "far_end");
    assert_eq!(far_line["expectation"]["select"]["counter"], "tx_bytes");

    // A far end that cannot be reached: exit 2, naming it, and the volume never read.
    let polls = lab.snap.requests_of("bdev_get_iostat").len();
    let out = dpuctl(&[
        "--agent",
        &lab.agent.endpoint(),
        "--sys-root",
        root,
        "prove",
        "storage",
        "--volume",
        BDEV,
        "--device",
        device,
        "--size",
        "256k",
        "--bs",
        "64k",
        "--target-agent",
        "unix:/nonexistent/far-end.sock",
    ]);
    assert_eq!(out.status.code(), Some(2), "{}", describe(&out));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("far end") && stderr.contains("/nonexistent/far-end.sock"),
        "{stderr}"
    );
    assert_eq!(
        lab.snap.requests_of("bdev_get_iostat").len(),
        polls,
        "nothing counted"
    );
}

/// `--witnesses 2` without the far end's agent: refused before the DPU's agent is even
/// dialled (it does not exist here), naming the flag that adds the witness; for both
/// proofs, and the switch's receiver flags come as a pair.
#[test]
fn two_witnesses_are_required_before_anything_is_read() {
    let nowhere = "unix:/nonexistent/dpu-agent.sock";
    let storage = dpuctl(&["--agent", nowhere, "prove", "storage", "--witnesses", "2"]);
    let switch = dpuctl(&[
        "--agent",
        nowhere,
        "prove",
        "switch",
        "--interface",
        "lo",
        "--peer",
        "192.0.2.20",
        "--witnesses",
        "2",
    ]);
    for out in [&storage, &switch] {
        assert_eq!(out.status.code(), Some(2), "{}", describe(out));
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            stderr.contains("--witnesses 2 needs") && stderr.contains("--target-agent"),
            "{stderr}"
        );
        assert!(!stderr.contains("nonexistent"), "nothing dialled: {stderr}");
    }
    // Control: one witness gets as far as dialling the agent, which is not there.
    let one = dpuctl(&["--agent", nowhere, "prove", "storage", "--witnesses", "1"]);
    assert_eq!(one.status.code(), Some(2), "{}", describe(&one));
    assert!(
        String::from_utf8_lossy(&one.stderr).contains("nonexistent"),
        "{}",
        describe(&one)
    );
    // The receiver's agent without its interface is a usage error naming the missing flag.
    let half = dpuctl(&[
        "--agent",
        nowhere,
        "prove",
        "switch",
        "--interface",
        "lo",
        "--peer",
        "192.0.2.20",
        "--target-agent",
        "tcp:192.0.2.20:50051",
    ]);
    assert_eq!(half.status.code(), Some(2), "{}", describe(&half));
    assert!(
        String::from_utf8_lossy(&half.stderr).contains("--target-interface"),
        "{}",
        describe(&half)
    );
}
