//! `dpuctl storage` end to end: dpuctl → agent → fake SNAP. Expose (dry run first), list
//! in both output forms, io stats, detach (twice, the second with --allow-missing), and
//! clear exit-2 errors for a bad resource name and for what the agent rejects.

use std::process::Output;

use dpu_tests::fake_snap::{FakeDialect, FakeSnap};
use dpu_tests::fixture;
use dpu_tests::harness::{dpuctl, AgentOptions, AgentProcess};
use serde_json::Value;

const HOST_NQN: &str = "nqn.2022-10.io.nvda.nvme:0";

fn expose_args<'a>(agent: &'a str, extra: &[&'a str]) -> Vec<&'a str> {
    let mut args = vec![
        "--agent",
        agent,
        "storage",
        "expose",
        "--id",
        "disk0",
        "--traddr",
        "192.0.2.10",
        "--subnqn",
        "nqn.2016-06.io.spdk:cnode1",
        "--nqn",
        HOST_NQN,
        "--pf",
        "0",
    ];
    args.extend_from_slice(extra);
    args
}

fn ok(out: &Output) -> String {
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "exit {:?}\nstdout: {stdout}\nstderr: {}",
        out.status.code(),
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

fn json(out: &Output) -> Value {
    serde_json::from_str(&ok(out)).expect("JSON output")
}

#[test]
fn expose_list_stats_and_detach_through_dpuctl() {
    let (dir, root) = fixture::bluefield3_tempdir();
    let options = AgentOptions::new(dir.path(), &root);
    let snap = FakeSnap::start_with(&options.snap_socket, FakeDialect::Snap4).expect("fake SNAP");
    let agent = AgentProcess::start(&options);
    let endpoint = agent.endpoint();

    let dry = ok(&dpuctl(&expose_args(&endpoint, &["--dry-run"])));
    assert!(dry.contains("would expose exposures/disk0"), "{dry}");
    assert!(snap.state().subsystems.is_empty(), "a dry run changed SNAP");

    let text = ok(&dpuctl(&expose_args(&endpoint, &[])));
    assert!(text.contains("exposed exposures/disk0"), "{text}");
    assert!(text.contains("(running)"), "{text}");
    assert!(snap.state().subsystems.contains_key(HOST_NQN));

    let listing = json(&dpuctl(&[
        "--agent", &endpoint, "-o", "json", "storage", "list",
    ]));
    assert_eq!(listing["exposures"][0]["name"], "exposures/disk0");
    assert_eq!(
        listing["exposures"][0]["controllerState"],
        "CONTROLLER_STATE_RUNNING"
    );
    assert_eq!(
        listing["remoteControllers"][0]["status"]["volumes"][0]["name"],
        "volumes/disk0n1"
    );
    assert_eq!(listing["subsystems"][0]["nqn"], HOST_NQN);
    let table = ok(&dpuctl(&["--agent", &endpoint, "storage", "list"]));
    assert!(
        table.contains("exposures/disk0") && table.contains("192.0.2.10:4420"),
        "{table}"
    );

    assert!(snap.record_io("disk0n1", 1 << 33, 0));
    let stats = json(&dpuctl(&[
        "--agent",
        &endpoint,
        "-o",
        "json",
        "storage",
        "stats",
        &format!("subsystems/{HOST_NQN}/namespaces/1"),
    ]));
    // proto3 JSON carries 64-bit integers as strings.
    assert_eq!(stats["bytesRead"], (1u64 << 33).to_string());
    // The same counter in a Counters snapshot, beside the probe's sources.
    let snapshot = json(&dpuctl(&[
        "--agent",
        &endpoint,
        "-o",
        "json",
        "dpu",
        "counters",
        "-s",
        "volume",
        "-s",
        "netdev:pf0hpf",
    ]));
    let samples = snapshot["samples"].as_array().expect("samples");
    let bytes_read = samples
        .iter()
        .find(|s| s["object"] == "volumes/disk0n1" && s["counter"] == "bytes_read")
        .unwrap_or_else(|| panic!("no volume sample: {snapshot}"));
    assert_eq!(bytes_read["source"], "volume");
    assert_eq!(bytes_read["value"], (1u64 << 33).to_string());
    assert!(
        samples.iter().any(|s| s["object"] == "netdevs/pf0hpf"),
        "{snapshot}"
    );
    let bad = dpuctl(&["--agent", &endpoint, "dpu", "counters", "-s", "volume:"]);
    assert_eq!(bad.status.code(), Some(2));

    let gone = ok(&dpuctl(&[
        "--agent",
        &endpoint,
        "storage",
        "detach",
        "exposures/disk0",
    ]));
    assert!(gone.contains("deleted"), "{gone}");
    assert!(snap.state().subsystems.is_empty() && snap.state().bdevs.is_empty());
    let missing = dpuctl(&["--agent", &endpoint, "storage", "detach", "exposures/disk0"]);
    assert_eq!(missing.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&missing.stderr).contains("NotFound"));
    let allowed = ok(&dpuctl(&[
        "--agent",
        &endpoint,
        "storage",
        "detach",
        "exposures/disk0",
        "--allow-missing",
    ]));
    assert!(allowed.contains("was not there"), "{allowed}");

    let bad = dpuctl(&["--agent", &endpoint, "storage", "detach", "subsystems/x"]);
    assert_eq!(bad.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&bad.stderr);
    assert!(
        stderr.contains("exposures/{id} or remoteControllers/{id}"),
        "{stderr}"
    );

    let rejected = dpuctl(&expose_args(&endpoint, &["--serial", "\u{e9}t\u{e9}"]));
    assert_eq!(rejected.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&rejected.stderr);
    assert!(stderr.contains("spec.serial_number"), "{stderr}");
}
