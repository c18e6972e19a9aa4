//! `dpuctl prove qos` against the simulator, whose host disks are throttled by the
//! kernel's blk-throttle to the QoS limit the fake SNAP holds: a held limit is PROVEN, and
//! a limit that is not held is not, each staged on real nodes. The negative controls: the
//! limit reported by SNAP but not enforced (the `qos unenforced` fault); the limit cleared
//! on SNAP's socket behind the agent's back (refused before reading, and the throttle is
//! gone); a limit on another volume (refused: nothing to prove on this one), and another
//! volume's disk read for this volume's limit (refused by the binding).

use std::io::{Read as _, Write as _};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use dpu_tests::harness::{bin_dir, sim_bin};
use dpu_tests::{skip, skip_kernel_feature};
use serde_json::Value;

use crate::simulator::{dpuctl, expose_storage, sim_cmd as sim, text};

const THROTTLE: &str = "/sys/fs/cgroup/blkio/blkio.throttle.read_bps_device";

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

/// One node's host as `up` printed it.
struct Host {
    socket: PathBuf,
    root: String,
    device: String,
    /// `MAJ:MIN` of its disk.
    dev: String,
}

fn host(dir: &Path, printed: &str, node: &str) -> Host {
    let line = printed
        .lines()
        .find(|l| l.starts_with(&format!("{node}  host --sys-root ")))
        .unwrap_or_else(|| panic!("no host line for {node} in:\n{printed}"));
    let words: Vec<&str> = line.split_whitespace().collect();
    assert_eq!(words.len(), 6, "{line}");
    let disk = Path::new(words[5]).file_name().expect("a disk name");
    let dev = std::fs::read_to_string(Path::new("/sys/block").join(disk).join("dev"))
        .expect("the loop device's number")
        .trim()
        .to_owned();
    Host {
        socket: dir.join(node).join("agent.sock"),
        root: words[3].to_owned(),
        device: words[5].to_owned(),
        dev,
    }
}

fn expose(h: &Host) {
    expose_storage(&h.socket, Path::new(&h.root), Path::new(&h.device));
}

fn set_read_limit(h: &Host, mibps: &str) {
    let out = dpuctl(
        &h.socket,
        &["storage", "qos", "volumes/storagen1", "--read-mbps", mibps],
    );
    assert!(out.status.success(), "{}", text(&out));
}

/// `prove qos` on `h` with short windows; extra arguments after.
fn prove(h: &Host, extra: &[&str]) -> Output {
    let mut args = vec![
        "--sys-root",
        &h.root,
        "-o",
        "json",
        "prove",
        "qos",
        "--duration",
        "2s",
    ];
    args.extend(extra);
    dpuctl(&h.socket, &args)
}

fn report(out: &Output) -> Value {
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("prove qos printed no JSON ({e}):\n{}", text(out)))
}

fn not_met(report: &Value) -> Vec<String> {
    report["proof"]["lines"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|l| l["outcome"]["result"] == "not_met")
        .map(|l| {
            l["expectation"]["name"]
                .as_str()
                .unwrap_or_default()
                .to_owned()
        })
        .collect()
}

/// The limit the agent reports in force on the node's volume.
fn applied(h: &Host) -> Value {
    let out = dpuctl(&h.socket, &["-o", "json", "storage", "list"]);
    assert!(out.status.success(), "{}", text(&out));
    let listing: Value = serde_json::from_slice(&out.stdout).expect("JSON");
    listing["remoteControllers"][0]["status"]["volumes"][0]["appliedQos"].clone()
}

/// The blk-throttle read rule on `dev`, if any (`8388608`).
fn throttle_on(dev: &str) -> Option<String> {
    std::fs::read_to_string(THROTTLE)
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix(&format!("{dev} ")).map(str::to_owned))
}

/// Waits for the sim's tick to make the rule on `dev` what `wanted` says.
fn wait_throttle(dev: &str, wanted: Option<&str>) {
    let deadline = Instant::now() + Duration::from_secs(3);
    while throttle_on(dev).as_deref() != wanted {
        assert!(
            Instant::now() < deadline,
            "blk-throttle on {dev} is {:?}, not {wanted:?}",
            throttle_on(dev)
        );
        std::thread::sleep(Duration::from_millis(25));
    }
}

/// One JSON-RPC call on the fake SNAP's socket, as an operator's rpc.py would make it.
fn snap_rpc(socket: &Path, method: &str, params: &Value) -> Value {
    let mut stream = UnixStream::connect(socket).expect("SNAP's socket");
    let request =
        serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
    stream
        .write_all(request.to_string().as_bytes())
        .expect("send");
    stream
        .set_read_timeout(Some(Duration::from_secs(5)))
        .expect("timeout");
    let mut reply = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        let n = stream.read(&mut buf).expect("the reply");
        reply.extend_from_slice(&buf[..n]);
        if n == 0 || reply.ends_with(b"\n") {
            break;
        }
    }
    serde_json::from_slice(&reply).expect("a JSON-RPC reply")
}

#[test]
fn prove_qos_bad_input_is_refused_by_name() {
    // Checked before anything is dialled: no agent listens on this socket.
    let socket = Path::new("/nonexistent/agent.sock");
    for (args, names) in [
        (&["--duration", "0s"][..], "--duration"),
        (&["--duration=-2s"][..], "--duration"),
        (&["--tolerance", "0"][..], "--tolerance"),
        (&["--tolerance", "1.5"][..], "--tolerance"),
        (&["--bs", "1000"][..], "--bs"),
    ] {
        let mut all = vec!["prove", "qos"];
        all.extend(args);
        let out = dpuctl(socket, &all);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", text(&out));
        assert!(text(&out).contains(names), "{args:?}: {}", text(&out));
    }
}

#[test]
fn prove_qos_against_the_simulator_proves_a_held_limit_and_no_other() {
    if !dpu_tests::running_as_root() {
        skip!("a simulated host disk is a loop device, which needs root");
    }
    let temp = tempfile::tempdir().expect("tempdir");
    let dir = temp.path().join("sim");
    let up = Command::new(sim_bin())
        .args(["up", "--detach", "--no-ovs", "--count", "2"])
        .args([
            "--read-rate",
            "0",
            "--link-rate",
            "0",
            "--host-disk",
            "64M",
            "--dir",
        ])
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
    let printed = text(&up);
    if let Some(line) = printed.lines().find(|l| l.contains("qos not enforced")) {
        skip_kernel_feature!("the simulator cannot enforce QoS here: {line}");
    }
    let (a, b) = (host(&dir, &printed, "sim-1"), host(&dir, &printed, "sim-2"));
    expose(&a);
    expose(&b);

    // Nothing to prove: an unknown volume, and a volume with no limit, even with a limit
    // on another volume (sim-2's). Refused before reading.
    let out = prove(&a, &["volumes/nosuch"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(text(&out).contains("no such volume"), "{}", text(&out));
    set_read_limit(&b, "8");
    let out = prove(&a, &[]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(text(&out).contains("nothing to prove"), "{}", text(&out));

    // The held limit: PROVEN, and the original limit is in force afterwards.
    set_read_limit(&a, "8");
    wait_throttle(&a.dev, Some("8388608"));
    let out = prove(&a, &[]);
    let proven = report(&out);
    assert_eq!(proven["proof"]["verdict"], "PROVEN", "{proven:#}");
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert_eq!(proven["jobs"][0]["jobname"], "limited", "{proven:#}");
    assert!(
        proven["jobs"][0]["read"]["bw_bytes"].as_u64() > Some(0),
        "{proven:#}"
    );
    assert_eq!(proven["qos"]["lifted"]["restored"], true, "{proven:#}");
    assert_eq!(applied(&a)["rMbytesPerSec"], "8", "{}", applied(&a));
    wait_throttle(&a.dev, Some("8388608"));

    // Another volume's disk (sim-2's) read for this volume's limit: the binding refuses
    // it, nothing is read.
    let out = prove(&a, &["--device", &b.device]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(text(&out).contains(&b.device), "{}", text(&out));

    // SNAP reports the limit, the disk is not held to it: NOT PROVEN, by the limited lines.
    let fault = sim(&dir, &["fault", "sim-1", "qos", "unenforced"]);
    assert!(fault.status.success(), "{}", text(&fault));
    wait_throttle(&a.dev, None);
    let out = prove(&a, &[]);
    let unenforced = report(&out);
    assert_eq!(
        unenforced["proof"]["verdict"], "NOT_PROVEN",
        "{unenforced:#}"
    );
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let failed = not_met(&unenforced);
    assert!(
        failed
            .iter()
            .any(|n| n == "limited: DPU volumes/storagen1 read within the limit"),
        "{failed:?}"
    );
    // --no-lift cannot hide it either.
    let out = prove(&a, &["--no-lift"]);
    assert_eq!(
        report(&out)["proof"]["verdict"],
        "NOT_PROVEN",
        "{}",
        text(&out)
    );
    let fault = sim(&dir, &["fault", "sim-1", "qos", "enforced"]);
    assert!(fault.status.success(), "{}", text(&fault));
    wait_throttle(&a.dev, Some("8388608"));

    // Cleared on SNAP's socket behind the agent's back: the throttle goes with it, and the
    // proof refuses, naming the limit asked for and the one in force.
    let reply = snap_rpc(
        &dir.join("sim-1/snap.sock"),
        "bdev_set_qos_limit",
        &serde_json::json!({"name": "storagen1", "r_mbytes_per_sec": 0}),
    );
    assert_eq!(reply["result"], true, "{reply}");
    wait_throttle(&a.dev, None);
    let out = prove(&a, &[]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(
        text(&out).contains("unlimited") && text(&out).contains("r_mbytes_per_sec 8"),
        "{}",
        text(&out)
    );

    // Down: nothing left on the devices.
    set_read_limit(&a, "8");
    wait_throttle(&a.dev, Some("8388608"));
    drop(running);
    assert_eq!(throttle_on(&a.dev), None, "down must lift the throttle");
    assert_eq!(throttle_on(&b.dev), None, "down must lift the throttle");
}
