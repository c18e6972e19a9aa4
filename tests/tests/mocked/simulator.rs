//! `dpu-sim` as a user runs it: `up --detach`, the real `dpuctl` against the real agent
//! it started, counters that move for the right reasons (and stop when the link is down),
//! faults on demand, and `down` stopping exactly what `up` started.

use std::io::{BufRead as _, BufReader};
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use dpu_tests::harness::{bin_dir, sim_bin};

fn sim(dir: &Path, args: &[&str]) -> Output {
    Command::new(sim_bin())
        .args(args)
        .arg("--dir")
        .arg(dir)
        .arg("--agent-bin")
        .arg(bin_dir().join("dpu-agent"))
        .env_remove("DPU_SIM_DIR")
        .output()
        .expect("run dpu-sim")
}

/// `dpu-sim` without `--agent-bin` (that flag belongs to `up` only).
pub(crate) fn sim_cmd(dir: &Path, args: &[&str]) -> Output {
    Command::new(sim_bin())
        .args(args)
        .arg("--dir")
        .arg(dir)
        .env_remove("DPU_SIM_DIR")
        .output()
        .expect("run dpu-sim")
}

/// `dpuctl --agent unix:SOCKET ARGS`.
pub(crate) fn dpuctl(socket: &Path, args: &[&str]) -> Output {
    Command::new(bin_dir().join("dpuctl"))
        .arg("--agent")
        .arg(format!("unix:{}", socket.display()))
        .args(args)
        .env_remove("DPUCTL_AGENT")
        .output()
        .expect("run dpuctl")
}

/// Stdout and stderr together, for messages and text assertions.
pub(crate) fn text(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// `dpuctl storage expose` of the simulated target's namespace on PF 0 (the exposure id
/// and volume `storage`, the one every simulated node serves), then waits (bounded, 5 s)
/// until the host under `root` shows `device`'s namespace: the set-up of every proof run
/// against the simulator.
pub(crate) fn expose_storage(socket: &Path, root: &Path, device: &Path) {
    let out = dpuctl(
        socket,
        &[
            "storage",
            "expose",
            "--id",
            "storage",
            "--transport",
            "rdma",
            "--traddr",
            "192.0.2.10",
            "--trsvcid",
            "4420",
            "--subnqn",
            "nqn.2026-01.io.dpu-sim:storage",
            "--nqn",
            "nqn.2026-01.io.dpu-sim:host0",
            "--pf",
            "0",
        ],
    );
    assert!(out.status.success(), "{}", text(&out));
    let disk = device.file_name().expect("a device name");
    let uuid = root.join("sys/block").join(disk).join("uuid");
    let deadline = Instant::now() + Duration::from_secs(5);
    while !uuid.is_file() {
        assert!(
            Instant::now() < deadline,
            "the host never showed the namespace"
        );
        std::thread::sleep(Duration::from_millis(25));
    }
}

/// `rx_bytes` of netdev `p0` as the agent reads it now.
fn rx_bytes(socket: &Path) -> u64 {
    let out = dpuctl(
        socket,
        &["-o", "json", "dpu", "counters", "-s", "netdev:p0"],
    );
    assert!(out.status.success(), "{}", text(&out));
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    let samples = json["samples"].as_array().expect("samples");
    let sample = samples
        .iter()
        .find(|s| s["counter"] == "rx_bytes")
        .unwrap_or_else(|| panic!("no rx_bytes in {json}"));
    // pbjson writes a u64 as a string.
    match &sample["value"] {
        serde_json::Value::String(v) => v.parse().expect("a number"),
        v => v.as_u64().expect("a number"),
    }
}

#[test]
fn a_simulated_bluefield_is_healthy_moves_its_counters_breaks_on_demand_and_stops() {
    let dir = tempfile::tempdir().expect("tempdir");
    let dir = dir.path().join("sim");
    let up = sim(&dir, &["up", "--detach", "--link-rate", "2000000"]);
    assert!(up.status.success(), "{}", text(&up));
    let printed = text(&up);
    let socket = dir.join("sim-1/agent.sock");
    assert!(
        printed.contains(&format!("agent unix:{}", socket.display())),
        "{printed}"
    );
    assert!(dir.join("inventory.toml").is_file());

    // A second `up` on the same directory is refused, naming the way out.
    let again = sim(&dir, &["up", "--detach"]);
    assert!(!again.status.success());
    assert!(text(&again).contains("already running"), "{}", text(&again));

    // Healthy on a fresh simulation, through the real dpuctl and agent.
    let health = dpuctl(&socket, &["dpu", "health"]);
    assert!(health.status.success(), "{}", text(&health));

    // Counters move while the link is up...
    let before = rx_bytes(&socket);
    std::thread::sleep(Duration::from_millis(700));
    let moved = rx_bytes(&socket);
    assert!(
        moved > before,
        "rx_bytes of an up link must grow: {before} -> {moved}"
    );

    // ...and stop when it goes down (the negative control of the traffic model).
    let down = sim_cmd(&dir, &["fault", "sim-1", "link-down", "p0"]);
    assert!(down.status.success(), "{}", text(&down));
    let still = rx_bytes(&socket);
    std::thread::sleep(Duration::from_millis(700));
    assert_eq!(rx_bytes(&socket), still, "a down link carries nothing");

    // A fault naming an interface the machine does not have is refused, naming those it
    // has; an unknown fault names the faults there are.
    let bad = sim_cmd(&dir, &["fault", "sim-1", "link-down", "p9"]);
    assert!(!bad.status.success());
    assert!(
        text(&bad).contains("\"p9\"") && text(&bad).contains("pf0hpf"),
        "{}",
        text(&bad)
    );
    let bad = sim_cmd(&dir, &["fault", "sim-9", "snap-hang"]);
    assert!(
        !bad.status.success() && text(&bad).contains("sim-1"),
        "{}",
        text(&bad)
    );

    // A stopped agent is an unhealthy node; resumed, it is healthy again.
    let stop = sim_cmd(&dir, &["fault", "sim-1", "agent-stop"]);
    assert!(stop.status.success(), "{}", text(&stop));
    let fleet = Command::new(bin_dir().join("dpuctl"))
        .args(["fleet", "--inventory"])
        .arg(dir.join("inventory.toml"))
        .args(["--timeout", "2", "health"])
        .output()
        .expect("run dpuctl fleet");
    assert!(
        !fleet.status.success(),
        "a hung agent must fail the fleet: {}",
        text(&fleet)
    );
    let resume = sim_cmd(&dir, &["fault", "sim-1", "agent-resume"]);
    assert!(resume.status.success(), "{}", text(&resume));
    let health = dpuctl(&socket, &["dpu", "health"]);
    assert!(health.status.success(), "{}", text(&health));

    // `down` stops exactly what `up` started: the agent is gone with its socket.
    let pid: i32 = std::fs::read_to_string(dir.join("dpu-sim.pid"))
        .expect("pid file")
        .trim()
        .parse()
        .expect("pid");
    let stopped = sim_cmd(&dir, &["down"]);
    assert!(stopped.status.success(), "{}", text(&stopped));
    assert!(
        text(&stopped).contains(&format!("pid {pid}")),
        "{}",
        text(&stopped)
    );
    assert!(!dir.join("dpu-sim.pid").exists());
    assert!(!dir.join("inventory.toml").exists());
    assert!(
        !socket.exists(),
        "the agent removes its socket when it stops"
    );
    let after = dpuctl(&socket, &["dpu", "health"]);
    assert!(!after.status.success());
    // Nothing left to stop: said, not an error.
    let twice = sim_cmd(&dir, &["down"]);
    assert!(twice.status.success(), "{}", text(&twice));
    assert!(text(&twice).contains("no simulation is running"));
}

/// The Python example of docs/simulator.md, an operator's link-stall alert written against
/// the agent's gRPC API through reflection, gives its three answers against the simulator:
/// OK while `p0` receives, STALL (exit 1) once `link-down p0` stops it, and UNKNOWN
/// (exit 2), never OK or STALL, when the counters reset during its interval or the
/// interface does not exist.
#[test]
fn the_python_example_tells_a_live_link_from_a_stalled_one_and_a_reset_from_both() {
    let python = match dpu_tests::harness::grpc_python() {
        Ok(python) => python,
        Err(why) => dpu_tests::skip!("{why}"),
    };
    let dir = tempfile::tempdir().expect("tempdir");
    let dir = dir.path().join("sim");
    let up = sim(&dir, &["up", "--detach"]);
    assert!(up.status.success(), "{}", text(&up));
    let agent = format!("unix:{}", dir.join("sim-1/agent.sock").display());
    let script = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../examples/simulator/link_stall_alert.py"
    );
    let alert = |ifname: &str| {
        Command::new(&python)
            .args([script, &agent, ifname, "0.6"])
            .output()
            .expect("run the example")
    };
    let live = alert("p0");
    assert_eq!(live.status.code(), Some(0), "{}", text(&live));
    assert!(text(&live).starts_with("OK"), "{}", text(&live));

    let down = sim_cmd(&dir, &["fault", "sim-1", "link-down", "p0"]);
    assert!(down.status.success(), "{}", text(&down));
    let stalled = alert("p0");
    assert_eq!(stalled.status.code(), Some(1), "{}", text(&stalled));
    assert!(text(&stalled).starts_with("STALL"), "{}", text(&stalled));

    // A reset in the middle of the interval is not a stall, and not traffic either.
    let up_again = sim_cmd(&dir, &["fault", "sim-1", "link-up", "p0"]);
    assert!(up_again.status.success(), "{}", text(&up_again));
    // The reset is made once the script says its interval has begun (its baseline line
    // on stderr), so it falls between its two readings however slow the machine is.
    let mut child = Command::new(&python)
        .args([script, &agent, "p0", "1.5"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run the example");
    let mut stderr = BufReader::new(child.stderr.take().expect("stderr"));
    let mut baseline = String::new();
    stderr
        .read_line(&mut baseline)
        .expect("read the baseline line");
    assert!(baseline.starts_with("baseline p0"), "{baseline}");
    let reset = sim_cmd(&dir, &["fault", "sim-1", "counter-reset"]);
    assert!(reset.status.success(), "{}", text(&reset));
    let during_reset = child.wait_with_output().expect("wait for the example");
    assert_eq!(
        during_reset.status.code(),
        Some(2),
        "{}",
        text(&during_reset)
    );
    assert!(
        text(&during_reset).contains("reset"),
        "{}",
        text(&during_reset)
    );

    let missing = alert("nosuch");
    assert_eq!(missing.status.code(), Some(2), "{}", text(&missing));

    let stopped = sim_cmd(&dir, &["down"]);
    assert!(stopped.status.success(), "{}", text(&stopped));
}
