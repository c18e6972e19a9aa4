//! `dpuctl fleet experiment PLAN`: the real dpuctl on each "host" over an ssh stand-in
//! that runs the remote command here (through `sh -c`, as sshd would). The plan changes an
//! NCCL variable (an `env` knob: nothing on this machine changes) and measures a stand-in
//! benchmark whose bandwidth follows it on two hosts and ignores it on the third. Each
//! host's own verdict is its node's (IMPROVEMENT twice, NO_EFFECT once, which is the
//! fleet's drift), a host ssh cannot reach and one without ssh are named for their own
//! reasons, and the distribution counts what the hosts found. The negative controls: a
//! plan that is not valid, and one given by a relative path, are refused before any host
//! is asked (the stand-in's log stays empty).

use std::path::Path;

use dpu_tests::command::{describe, stdout_json};
use dpu_tests::harness::{bin_dir, dpuctl};
use dpu_tests::stand_in::ssh_here;
use serde_json::Value;

fn utf8(path: &Path) -> &str {
    path.to_str().expect("utf-8 path")
}

fn node<'a>(report: &'a Value, name: &str) -> &'a Value {
    report["nodes"]
        .as_array()
        .and_then(|nodes| nodes.iter().find(|n| n["name"] == name))
        .unwrap_or_else(|| panic!("no node {name} in {report:#}"))
}

/// An ssh stand-in: refuses `gpu-down`, makes `gpu-03`'s benchmark ignore the knob, logs
/// each host it runs for, and runs the remote words here.
fn ssh_stand_in(dir: &Path, log: &Path) -> std::path::PathBuf {
    ssh_here(dir, log, &["gpu-down"], &[("gpu-03", "DPU_FAKE_FLAT=1")])
}

fn inventory(dir: &Path) -> std::path::PathBuf {
    // The experiment never calls the agents; the inventory still names one per target.
    let agent = format!("unix:{}", utf8(&dir.join("no-agent.sock")));
    let mut text = String::new();
    for (name, ssh) in [
        ("gpu-01", true),
        ("gpu-02", true),
        ("gpu-03", true),
        ("gpu-down", true),
        ("gpu-nossh", false),
    ] {
        text.push_str(&format!(
            "[[target]]\nname = \"{name}\"\nagent = \"{agent}\"\n"
        ));
        if ssh {
            text.push_str(&format!("ssh = \"root@{name}\"\n"));
        }
        text.push('\n');
    }
    let path = dir.join("fleet.toml");
    std::fs::write(&path, text).expect("write the inventory");
    path
}

fn plan(dir: &Path, trials: u32) -> std::path::PathBuf {
    let script =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/experiment/fake_bw_by_env.sh");
    let counter = dir.join("counter");
    let path = dir.join(format!("nccl-algo-{trials}.toml"));
    std::fs::write(
        &path,
        format!(
            "trials = {trials}\n[measurement]\nkind = \"command\"\nargv = [{:?}, {:?}]\n\
             parser = \"perftest\"\n[knob]\nkind = \"env\"\nname = \"NCCL_ALGO\"\n\
             a = \"Ring\"\nb = \"Tree\"\n[metric]\nbetter = \"higher\"\n",
            utf8(&script),
            utf8(&counter),
        ),
    )
    .expect("write the plan");
    path
}

fn fleet_experiment(dir: &Path, ssh: &Path, plan: &str) -> std::process::Output {
    let journal = dir.join("journal.json");
    dpuctl(&[
        "-o",
        "json",
        "fleet",
        "--inventory",
        utf8(&inventory(dir)),
        "experiment",
        plan,
        "--ssh",
        utf8(ssh),
        "--dpuctl",
        utf8(&bin_dir().join("dpuctl")),
        "--",
        "--journal",
        utf8(&journal),
    ])
}

#[test]
fn each_host_runs_its_own_experiment_and_the_fleet_adds_them_up() {
    let dir = tempfile::tempdir().expect("tempdir");
    let log = dir.path().join("ssh.log");
    let ssh = ssh_stand_in(dir.path(), &log);
    let plan = plan(dir.path(), 5);
    let out = fleet_experiment(dir.path(), &ssh, utf8(&plan));
    let report = stdout_json(&out);
    // The worst node is UNREACHABLE: exit 1, with every other node's result still there.
    assert_eq!(out.status.code(), Some(1), "{}", describe(&out));

    for name in ["gpu-01", "gpu-02"] {
        let n = node(&report, name);
        assert_eq!(n["status"], "PASS", "{n:#}");
        assert_eq!(n["facts"]["analysis"]["verdict"], "IMPROVEMENT", "{n:#}");
        assert_eq!(n["compared"]["experiment verdict"], "IMPROVEMENT");
        assert_eq!(
            n["facts"]["knob"], "env NCCL_ALGO",
            "the host's report, whole"
        );
    }
    let flat = node(&report, "gpu-03");
    assert_eq!(flat["status"], "PASS", "{flat:#}");
    assert_eq!(
        flat["facts"]["analysis"]["verdict"], "NO_EFFECT",
        "{flat:#}"
    );
    let down = node(&report, "gpu-down");
    assert_eq!(down["status"], "UNREACHABLE", "{down:#}");
    assert!(
        down["problems"][0]["detail"]
            .as_str()
            .is_some_and(|d| d.contains("Connection refused")),
        "{down:#}"
    );
    assert_eq!(node(&report, "gpu-nossh")["status"], "SKIP");

    // The one host that found no effect is the fleet's drift, by name.
    let drift = report["drift"]
        .as_array()
        .and_then(|d| d.iter().find(|d| d["fact"] == "experiment verdict"))
        .unwrap_or_else(|| panic!("no verdict drift in {report:#}"));
    assert_eq!(drift["majority"], "IMPROVEMENT");
    assert_eq!(drift["odd"]["gpu-03"], "NO_EFFECT");

    // The distribution: verdicts by count, the effect over the three hosts that measured
    // one (+20 % on two, about 0 on the third).
    let d = &report["distribution"];
    assert_eq!(d["verdicts"]["IMPROVEMENT"], 2, "{d:#}");
    assert_eq!(d["verdicts"]["NO_EFFECT"], 1, "{d:#}");
    assert_eq!(d["effect_percent"]["nodes"], 3, "{d:#}");
    let max = d["effect_percent"]["max"].as_f64().expect("max");
    let min = d["effect_percent"]["min"].as_f64().expect("min");
    assert!((15.0..25.0).contains(&max) && min.abs() < 5.0, "{d:#}");

    // Each reachable host was asked once, and one at a time: the default --at-once 1
    // runs them in the inventory's order.
    let asked = std::fs::read_to_string(&log).expect("ssh log");
    assert_eq!(
        asked.lines().collect::<Vec<_>>(),
        ["gpu-01", "gpu-02", "gpu-03"]
    );
    assert!(
        !dir.path().join("journal.json").exists(),
        "every host's run ended and reverted"
    );

    // The table says the same in words.
    let table = dpuctl(&[
        "fleet",
        "--inventory",
        utf8(&inventory(dir.path())),
        "--select",
        "gpu-01",
        "experiment",
        utf8(&plan),
        "--ssh",
        utf8(&ssh),
        "--dpuctl",
        utf8(&bin_dir().join("dpuctl")),
        "--",
        "--journal",
        utf8(&dir.path().join("journal.json")),
    ]);
    let text = String::from_utf8_lossy(&table.stdout);
    assert_eq!(table.status.code(), Some(0), "{}", describe(&table));
    assert!(text.contains("verdicts: IMPROVEMENT 1"), "{text}");
    assert!(
        text.contains("effect of B (% of A's median) over 1 node(s)"),
        "{text}"
    );
}

#[test]
fn a_plan_that_cannot_run_is_refused_before_any_host_is_asked() {
    let dir = tempfile::tempdir().expect("tempdir");
    let log = dir.path().join("ssh.log");
    let ssh = ssh_stand_in(dir.path(), &log);

    // Not valid: one trial per phase.
    let bad = plan(dir.path(), 1);
    let out = fleet_experiment(dir.path(), &ssh, utf8(&bad));
    assert_eq!(out.status.code(), Some(2), "{}", describe(&out));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("is not valid") && stderr.contains("trials"),
        "{stderr}"
    );

    // A relative path would mean another file on each host.
    let good = plan(dir.path(), 5);
    let relative = good.file_name().and_then(|n| n.to_str()).expect("name");
    let out = fleet_experiment(dir.path(), &ssh, relative);
    assert_eq!(out.status.code(), Some(2), "{}", describe(&out));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("must be an absolute path"), "{stderr}");

    // --at-once 0 is refused by name.
    let out = dpuctl(&[
        "fleet",
        "--inventory",
        utf8(&inventory(dir.path())),
        "experiment",
        utf8(&good),
        "--at-once",
        "0",
    ]);
    assert_eq!(out.status.code(), Some(2), "{}", describe(&out));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--at-once"));

    assert!(!log.exists(), "no host was asked");
}
