//! The real `dpu-agent` pointed at a replayed OVS capture (`dpuctl capture --ovs-rundir`,
//! served by [`FakeOvs`] in a run directory of its own) answers `switch bridges` and
//! `switch flows` as the agent on the live daemons did. Control: a read the capture did
//! not record (`switch flows --type partially-offloaded`) fails naming what was not captured.
//! `dpu-sim replay-ovs` serves the same bundle until SIGTERM and leaves its run directory
//! empty.

use std::fs;
use std::path::Path;
use std::process::Output;

use dpu_sim::fake_ovs::FakeOvs;
use dpu_sim::fake_snap::Replay;
use dpu_tests::capture::{first_line, strip_time_relative};
use dpu_tests::fixture;
use dpu_tests::harness::{dpuctl, AgentOptions, AgentProcess};
use dpu_tests::ovs::OvsDaemons;
use serde_json::Value;

use crate::capture::bridge_with_flows;
use crate::daemons;

/// `dpuctl --agent ENDPOINT ARGS`.
fn ctl(agent: &AgentProcess, args: &[&str]) -> Output {
    let endpoint = agent.endpoint();
    let mut all = vec!["--agent", endpoint.as_str()];
    all.extend_from_slice(args);
    dpuctl(&all)
}

/// `dpuctl -o json ARGS` on `agent`, which must succeed, parsed.
fn json(agent: &AgentProcess, args: &[&str]) -> Value {
    let mut all = vec!["-o", "json"];
    all.extend_from_slice(args);
    let out = ctl(agent, &all);
    assert!(
        out.status.success(),
        "dpuctl {all:?}: {}\nagent log:\n{}",
        String::from_utf8_lossy(&out.stderr),
        agent.log()
    );
    serde_json::from_slice(&out.stdout).expect("JSON")
}

/// The agent's answers that come from OVS: the bridge listing and the flows, each flow's
/// time-relative fields removed.
fn answers(agent: &AgentProcess) -> (Value, Value) {
    let bridges = json(agent, &["switch", "bridges"]);
    let mut flows = json(agent, &["switch", "flows"]);
    strip_time_relative(&mut flows);
    (bridges, flows)
}

/// An agent on the OVS at `db_address`/`rundir` with a fixture sys tree, in a temp dir
/// returned with it.
fn agent_on(db_address: &str, rundir: &Path) -> (AgentProcess, tempfile::TempDir) {
    let (dir, root) = fixture::bluefield3_tempdir();
    let options = AgentOptions::new(dir.path(), &root).with_ovs(db_address, rundir);
    (AgentProcess::start(&options), dir)
}

/// `dpuctl capture --ovs-rundir RUNDIR --no-redact` of the daemons into `out` (a fixture
/// BlueField-3 host tree as the sysfs side), two readings 200 ms apart.
fn capture_ovs(rundir: &Path, out: &Path) {
    let (_fixture, root) = fixture::bluefield3_host_tempdir();
    let (root_arg, out_arg, rundir_arg) = (
        root.display().to_string(),
        out.display().to_string(),
        rundir.display().to_string(),
    );
    let run = dpuctl(&[
        "--sys-root",
        &root_arg,
        "capture",
        "--out",
        &out_arg,
        "--ovs-rundir",
        &rundir_arg,
        "--interval",
        "200ms",
        "--no-redact",
    ]);
    assert!(
        run.status.success(),
        "capture: {}",
        String::from_utf8_lossy(&run.stderr)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_agent_on_a_replayed_capture_answers_what_it_answered_live() {
    let daemons: OvsDaemons = daemons!();
    let (_hosts, _) = bridge_with_flows(&daemons).await;
    let dir = tempfile::tempdir().expect("tempdir");
    let (live_agent, _live_dir) = agent_on(&daemons.db_address(), daemons.rundir());
    let live = answers(&live_agent);
    assert!(
        live.1.to_string().contains("tp1"),
        "live flows through tp1: {}",
        live.1
    );

    let out = dir.path().join("bundle");
    capture_ovs(daemons.rundir(), &out);
    let transcript = |name: &str| {
        let text = fs::read_to_string(out.join("jsonrpc").join(name)).expect("transcript");
        Replay::from_jsonl(&text).expect("parses")
    };
    let rundir = dir.path().join("replayed-run");
    fs::create_dir_all(&rundir).expect("rundir");
    let fake = FakeOvs::start_replaying(
        &rundir,
        transcript("ovsdb-server.jsonl"),
        transcript("ovs-vswitchd.jsonl"),
    )
    .expect("replay");
    fake.replay_reading(Some(1));
    let db_address = format!("unix:{}", fake.ovsdb_socket().display());
    let (replay_agent, _replay_dir) = agent_on(&db_address, &rundir);
    let replayed = answers(&replay_agent);
    assert_eq!(replayed.0, live.0, "switch bridges");
    assert_eq!(replayed.1, live.1, "switch flows");

    // Control: a dump type the capture did not ask for is not made up.
    let out = ctl(
        &replay_agent,
        &["switch", "flows", "--type", "partially-offloaded"],
    );
    assert!(!out.status.success(), "answered a dump never captured");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("not captured: dpctl/dump-flows"),
        "{stderr}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dpu_sim_replay_ovs_serves_a_capture_until_sigterm() {
    let daemons: OvsDaemons = daemons!();
    let (_hosts, _) = bridge_with_flows(&daemons).await;
    let address = daemons.db_address();
    let live = dpu_ovs::ovsdb::Ovsdb::new(&address)
        .expect("address")
        .snapshot()
        .await
        .expect("live snapshot");
    let dir = tempfile::tempdir().expect("tempdir");
    let out = dir.path().join("bundle");
    capture_ovs(daemons.rundir(), &out);
    let rundir = dir.path().join("served-run");
    fs::create_dir_all(&rundir).expect("rundir");

    let mut child = std::process::Command::new(dpu_tests::harness::bin_dir().join("dpu-sim"))
        .args(["replay-ovs", "--reading", "1", "--ovsdb-transcript"])
        .arg(out.join("jsonrpc/ovsdb-server.jsonl"))
        .arg("--vswitchd-transcript")
        .arg(out.join("jsonrpc/ovs-vswitchd.jsonl"))
        .arg("--rundir")
        .arg(&rundir)
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("run dpu-sim replay-ovs");
    let line = first_line(&mut child);
    assert!(line.contains("replaying"), "{line}");
    let served_db =
        dpu_ovs::ovsdb::Ovsdb::new(&format!("unix:{}", rundir.join("db.sock").display()))
            .expect("address");
    let served = served_db.snapshot().await;
    let echo = served_db.echo().await;
    let version = dpu_ovs::unixctl::Unixctl::vswitchd(&rundir).version().await;
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(i32::try_from(child.id()).expect("pid")),
        nix::sys::signal::Signal::SIGTERM,
    )
    .expect("SIGTERM");
    let status = child.wait().expect("wait");
    assert!(status.success(), "{status}");
    assert_eq!(served.expect("served snapshot"), live);
    let live_version = dpu_ovs::unixctl::Unixctl::vswitchd(daemons.rundir())
        .version()
        .await;
    assert_eq!(
        version.expect("served version"),
        live_version.expect("live version")
    );
    let err = echo.expect_err("echo was never captured");
    assert!(format!("{err:?}").contains("not captured: echo"), "{err:?}");
    let left: Vec<_> = fs::read_dir(&rundir).expect("rundir").collect();
    assert!(left.is_empty(), "dpu-sim left {left:?}");
}
