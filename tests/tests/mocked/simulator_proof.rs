//! `dpuctl prove storage` against a simulated node, as a user runs it: `dpu-sim up
//! --host-disk` gives the node a host whose disk is a real block device (a loop device)
//! shown as the namespace the node exposes, and the bytes the kernel counts as read from
//! it are counted on the volume and on the DPU's storage RDMA port.
//!
//! PROVEN for the right reason (the host's own read, through the emulation) and not for
//! the wrong ones, each staged on the same node: the host reading the target itself over
//! its own RDMA port, a disk that is not the volume, and another reader of the disk
//! during the proof.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use dpu_tests::harness::{bin_dir, sim_bin};
use dpu_tests::skip;
use serde_json::Value;

use crate::simulator::{dpuctl, expose_storage, sim_cmd as sim, text};

/// A simulation stopped when dropped, whatever the test did.
struct Running {
    dir: PathBuf,
    _temp: tempfile::TempDir,
}

impl Drop for Running {
    fn drop(&mut self) {
        let _ = Command::new(sim_bin())
            .args(["down", "--dir"])
            .arg(&self.dir)
            .output();
    }
}

/// The `host --sys-root ROOT  disk DEV` line `up` printed for `sim-1`.
fn host_line(printed: &str) -> (String, String) {
    let line = printed
        .lines()
        .find(|l| l.starts_with("sim-1  host --sys-root "))
        .unwrap_or_else(|| panic!("no host line in:\n{printed}"));
    let words: Vec<&str> = line.split_whitespace().collect();
    // sim-1 host --sys-root ROOT disk DEV
    assert_eq!(words.len(), 6, "{line}");
    (words[3].to_owned(), words[5].to_owned())
}

/// Runs the proof with JSON output; its exit code and report.
fn prove(socket: &Path, root: &str, device: &str) -> (Option<i32>, Value) {
    let out = dpuctl(
        socket,
        &[
            "--sys-root",
            root,
            "-o",
            "json",
            "prove",
            "storage",
            "--device",
            device,
            "--size",
            "16m",
            "--idle",
            "0.3",
        ],
    );
    let report = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("prove storage printed no JSON ({e}):\n{}", text(&out)));
    (out.status.code(), report)
}

/// The names of the report's lines whose outcome is `result` (`met`, `not_met`,
/// `inconclusive`).
fn lines_that(report: &Value, result: &str) -> Vec<String> {
    report["lines"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|l| l["outcome"]["result"] == result)
        .map(|l| {
            l["expectation"]["name"]
                .as_str()
                .unwrap_or_default()
                .to_owned()
        })
        .collect()
}

fn fault(dir: &Path, words: &[&str]) {
    let mut args = vec!["fault", "sim-1"];
    args.extend(words);
    let out = sim(dir, &args);
    assert!(out.status.success(), "fault {words:?}: {}", text(&out));
}

#[test]
fn a_proof_against_the_simulator_is_proven_by_the_hosts_read_and_by_nothing_else() {
    if !dpu_tests::running_as_root() {
        skip!("a simulated host disk is a loop device, which needs root");
    }
    let temp = tempfile::tempdir().expect("tempdir");
    let dir = temp.path().join("sim");
    // A quiet machine, as a proof asks for: no background traffic on links or volumes
    // (and no switch: the proof does not read it).
    let up = Command::new(sim_bin())
        .args([
            "up",
            "--detach",
            "--no-ovs",
            "--read-rate",
            "0",
            "--link-rate",
            "0",
        ])
        .args(["--host-disk", "64M", "--dir"])
        .arg(&dir)
        .arg("--agent-bin")
        .arg(bin_dir().join("dpu-agent"))
        .env_remove("DPU_SIM_DIR")
        .output()
        .expect("run dpu-sim");
    let running = Running {
        dir: dir.clone(),
        _temp: temp,
    };
    assert!(up.status.success(), "{}", text(&up));
    let (root, device) = host_line(&text(&up));
    let socket = dir.join("sim-1/agent.sock");

    // Before anything is exposed there is no volume to prove: refused, nothing read.
    let early = dpuctl(
        &socket,
        &["--sys-root", &root, "prove", "storage", "--device", &device],
    );
    assert_eq!(early.status.code(), Some(2), "{}", text(&early));
    assert!(
        text(&early).contains("no remote-controller volume"),
        "{}",
        text(&early)
    );

    expose_storage(&socket, Path::new(&root), Path::new(&device));

    // The host's read through the emulation: PROVEN, every trial, on the volume and the
    // DPU's RDMA port.
    let (code, report) = prove(&socket, &root, &device);
    assert_eq!(report["verdict"], "PROVEN", "{report:#}");
    assert_eq!(code, Some(0), "{report:#}");
    let met = lines_that(&report, "met");
    assert!(
        met.iter().any(|n| n.contains("served the read"))
            && met
                .iter()
                .any(|n| n.contains("RDMA ports received the data")),
        "{met:?}"
    );

    // The host reads the target itself over its own RDMA port: the volume sees nothing
    // and the host's port carried the data.
    fault(&dir, &["host-path", "host-rdma"]);
    let (code, report) = prove(&socket, &root, &device);
    assert_eq!(report["verdict"], "NOT_PROVEN", "{report:#}");
    assert_eq!(code, Some(1), "{report:#}");
    let not_met = lines_that(&report, "not_met");
    assert!(
        not_met.iter().any(|n| n.contains("served the read"))
            && not_met
                .iter()
                .any(|n| n.contains("host RDMA ports did not carry")),
        "{not_met:?}"
    );

    // The disk is not the volume (its reads reach nothing on the DPU).
    fault(&dir, &["host-path", "local"]);
    let (code, report) = prove(&socket, &root, &device);
    assert_eq!(report["verdict"], "NOT_PROVEN", "{report:#}");
    assert_eq!(code, Some(1), "{report:#}");
    assert!(
        lines_that(&report, "not_met")
            .iter()
            .any(|n| n.contains("served the read")),
        "{report:#}"
    );

    // Back through the emulation, with another reader of the disk all along: the volume
    // moves in the gaps, and the proof does not pass it off as its own read.
    fault(&dir, &["host-path", "emulated"]);
    let stop = Arc::new(AtomicBool::new(false));
    let reader = {
        let (stop, device) = (Arc::clone(&stop), device.clone());
        std::thread::spawn(move || {
            let mut skip = 0_u32;
            while !stop.load(Ordering::SeqCst) {
                // O_DIRECT, so each read reaches the device (not the page cache).
                let _ = Command::new("dd")
                    .arg(format!("if={device}"))
                    .args(["of=/dev/null", "bs=1M", "count=4", "iflag=direct"])
                    .arg(format!("skip={}", skip % 60))
                    .output();
                skip += 4;
                std::thread::sleep(Duration::from_millis(20));
            }
        })
    };
    let (code, report) = prove(&socket, &root, &device);
    stop.store(true, Ordering::SeqCst);
    reader.join().expect("the other reader");
    assert_ne!(report["verdict"], "PROVEN", "{report:#}");
    assert_ne!(code, Some(0), "{report:#}");
    let failed: Vec<String> = lines_that(&report, "not_met")
        .into_iter()
        .chain(lines_that(&report, "inconclusive"))
        .collect();
    assert!(
        failed.iter().any(|n| n.contains("nothing else read")),
        "another reader must show in the gaps: {failed:?}\n{report:#}"
    );

    // And with the reader gone the same node proves again: the failures above were the
    // staged faults, not the node.
    let (code, report) = prove(&socket, &root, &device);
    assert_eq!(report["verdict"], "PROVEN", "{report:#}");
    assert_eq!(code, Some(0));
    drop(running);
}
