//! `dpu-sim up` on a machine that runs OVS: each node's switch is real Open vSwitch
//! (private daemons in a namespace of their own), so its agent's Switch service serves and
//! a `dpuctl switch` change lands in that node's OVS and no other; `down` leaves no daemon
//! and no namespace. `--no-ovs` is the negative control: the Switch service is DISABLED.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use dpu_tests::harness::{bin_dir, dpuctl, sim_bin};

/// A simulation stopped when dropped, whatever the test did.
struct Running {
    dir: PathBuf,
    _temp: tempfile::TempDir,
}

impl Running {
    /// `dpu-sim up --detach ARGS` in a fresh directory; panics with its output on failure.
    fn up(args: &[&str]) -> (Self, String) {
        let temp = tempfile::tempdir().expect("tempdir");
        let dir = temp.path().join("sim");
        let running = Self { dir, _temp: temp };
        let up = running.sim(&[&["up", "--detach"], args].concat());
        assert!(up.status.success(), "dpu-sim up: {}", text(&up));
        (running, text(&up))
    }

    fn sim(&self, args: &[&str]) -> Output {
        let mut command = Command::new(sim_bin());
        command.args(args).arg("--dir").arg(&self.dir);
        if args.first() == Some(&"up") {
            command.arg("--agent-bin").arg(bin_dir().join("dpu-agent"));
        }
        command
            .env_remove("DPU_SIM_DIR")
            .output()
            .expect("run dpu-sim")
    }

    fn node(&self, name: &str) -> PathBuf {
        self.dir.join(name)
    }

    /// `dpuctl --agent unix:NODE/agent.sock ARGS`.
    fn ctl(&self, node: &str, args: &[&str]) -> Output {
        let agent = format!("unix:{}", self.node(node).join("agent.sock").display());
        dpuctl(&[&["--agent", agent.as_str()], args].concat())
    }

    /// `dpuctl ARGS` against `node`, which must succeed; its stdout as JSON.
    fn json(&self, node: &str, args: &[&str]) -> serde_json::Value {
        let out = self.ctl(node, &[&["-o", "json"], args].concat());
        assert!(out.status.success(), "dpuctl {args:?}: {}", text(&out));
        serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("JSON ({e}): {}", text(&out)))
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.sim(&["down"]);
    }
}

fn text(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// The state `dpuctl dpu health -o json` gives `component`.
fn state(health: &serde_json::Value, component: &str) -> String {
    health["components"]
        .as_array()
        .expect("components")
        .iter()
        .find(|c| c["component"] == component)
        .unwrap_or_else(|| panic!("no {component} in {health}"))["state"]
        .as_str()
        .expect("state")
        .to_owned()
}

/// The namespace `up` printed for `node`'s switch (`sim-N  switch ovs  --db=...  netns
/// NAME`).
fn printed_netns(printed: &str, node: &str) -> String {
    let line = printed
        .lines()
        .find(|l| l.starts_with(&format!("{node}  switch ovs ")))
        .unwrap_or_else(|| panic!("no OVS switch line for {node} in:\n{printed}"));
    line.rsplit_once("netns ")
        .map(|(_, name)| name.trim().to_owned())
        .unwrap_or_else(|| panic!("no netns in {line:?}"))
}

/// Whether the process `pid` is running and is `program`.
fn running(pid: u32, program: &str) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/comm")).is_ok_and(|comm| comm.trim() == program)
}

/// The pid in a daemon's pid file.
fn pid_in(file: &Path) -> u32 {
    let text = std::fs::read_to_string(file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
    text.trim()
        .parse()
        .unwrap_or_else(|e| panic!("{}: {text:?}: {e}", file.display()))
}

fn namespaces() -> String {
    dpu_tests::ovs::run("ip", &["netns", "list"]).expect("ip netns list")
}

#[test]
fn simulated_nodes_switch_on_their_own_ovs_and_down_leaves_no_daemon_or_namespace() {
    if let Some(reason) = dpu_tests::ovs::missing_prerequisite() {
        dpu_tests::skip!("{reason}");
    }
    let (sim, printed) = Running::up(&["--count", "2"]);
    assert!(!printed.contains("switch: disabled"), "{printed}");

    // Health: Switch SERVING on real OVS, and the agent HEALTHY as a whole.
    let health = sim.json("sim-1", &["dpu", "health"]);
    assert_eq!(health["healthy"], true, "{health}");
    assert_eq!(state(&health, "dpu.v1.Switch"), "serving", "{health}");
    assert_eq!(state(&health, "backend ovs-vswitchd"), "ready", "{health}");

    // A switch change through dpuctl lands in sim-1's OVS (as ovs-vsctl reads it) and in
    // its namespace (the tap of the internal port), and not in sim-2's.
    let ovsdb = |node: &str| format!("--db=unix:{}", sim.node(node).join("ovs/db.sock").display());
    for args in [
        ["switch", "add-bridge", "br0", "--datapath-type", "netdev"].as_slice(),
        &["switch", "add-port", "br0", "vm1", "--type", "internal"],
    ] {
        let out = sim.ctl("sim-1", args);
        assert!(out.status.success(), "dpuctl {args:?}: {}", text(&out));
    }
    let ports = sim.json("sim-1", &["switch", "ports", "br0"]);
    let names: Vec<&str> = ports["ports"]
        .as_array()
        .expect("ports")
        .iter()
        .filter_map(|p| p["port"].as_str())
        .collect();
    assert_eq!(names, ["br0", "vm1"], "{ports}");
    let listed = dpu_tests::ovs::run("ovs-vsctl", &[&ovsdb("sim-1"), "list-ports", "br0"]);
    assert_eq!(listed.expect("ovs-vsctl list-ports").trim(), "vm1");
    let other = dpu_tests::ovs::run("ovs-vsctl", &[&ovsdb("sim-2"), "br-exists", "br0"]);
    assert!(other.is_err(), "sim-2's OVS has sim-1's bridge: {other:?}");
    let netns = printed_netns(&printed, "sim-1");
    let tap = dpu_tests::ovs::run("ip", &["-n", &netns, "link", "show", "vm1"]);
    assert!(tap.is_ok(), "vm1 is not in {netns}: {tap:?}");
    assert!(
        dpu_tests::ovs::run("ip", &["link", "show", "vm1"]).is_err(),
        "vm1 leaked into the machine's own namespace"
    );

    // `down` stops every node's daemons (their pid files named them) and deletes the
    // namespaces.
    let mut daemons = Vec::new();
    let mut netnses = Vec::new();
    for node in ["sim-1", "sim-2"] {
        for program in ["ovsdb-server", "ovs-vswitchd"] {
            let pid = pid_in(&sim.node(node).join(format!("ovs/{program}.pid")));
            assert!(
                running(pid, program),
                "{node}'s {program} ({pid}) is not running"
            );
            daemons.push((node, program, pid));
        }
        let name = printed_netns(&printed, node);
        assert!(namespaces().contains(&name), "{name} not in ip netns list");
        netnses.push(name);
    }
    let down = sim.sim(&["down"]);
    assert!(down.status.success(), "{}", text(&down));
    for (node, program, pid) in daemons {
        assert!(
            !running(pid, program),
            "{node}'s {program} ({pid}) outlived down"
        );
        let pid_file = sim.node(node).join(format!("ovs/{program}.pid"));
        assert!(!pid_file.exists(), "{} stayed", pid_file.display());
    }
    let left = namespaces();
    for name in netnses {
        assert!(!left.contains(&name), "{name} outlived down: {left}");
    }
}

#[test]
fn simulator_without_ovs_leaves_the_switch_disabled() {
    if let Some(reason) = dpu_tests::ovs::missing_prerequisite() {
        dpu_tests::skip!("{reason}");
    }
    let (sim, printed) = Running::up(&["--no-ovs"]);
    assert!(printed.contains("switch: disabled (--no-ovs)"), "{printed}");
    assert!(printed.contains("sim-1  switch disabled"), "{printed}");
    assert!(
        !sim.node("sim-1").join("ovs").exists(),
        "daemons started anyway"
    );
    let health = sim.json("sim-1", &["dpu", "health"]);
    assert_eq!(health["healthy"], true, "{health}");
    assert_eq!(state(&health, "dpu.v1.Switch"), "disabled", "{health}");
    let bridges = sim.ctl("sim-1", &["switch", "bridges"]);
    assert!(!bridges.status.success(), "{}", text(&bridges));
    assert!(text(&bridges).contains("disabled"), "{}", text(&bridges));
}
