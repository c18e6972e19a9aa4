//! `dpuctl check` against the BlueField-3 host fixture, with and without an agent on the
//! DPU fixture: the narrow PCIe link and the GID-index trap are diagnosed by name, the
//! agent's card is compared with the host's, and nothing uncheckable passes.

use std::fs;

use dpu_tests::fixture;
use dpu_tests::harness::dpuctl;
use serde_json::Value;

use crate::Lab;

fn results(stdout: &[u8]) -> Vec<Value> {
    serde_json::from_slice::<Value>(stdout)
        .expect("check prints JSON")
        .as_array()
        .expect("an array of results")
        .clone()
}

fn status<'a>(results: &'a [Value], id: &str) -> (&'a str, &'a str) {
    let r = results
        .iter()
        .find(|r| r["id"] == id)
        .unwrap_or_else(|| panic!("no result {id}"));
    (
        r["status"].as_str().unwrap_or_default(),
        r["detail"].as_str().unwrap_or_default(),
    )
}

#[test]
fn the_host_fixture_fails_on_its_narrow_link_and_warns_about_the_gid_index() {
    let (_dir, root) = fixture::bluefield3_host_tempdir();
    let root = root.to_str().expect("utf-8 path");
    let out = dpuctl(&[
        "-o",
        "json",
        "--sys-root",
        root,
        "check",
        "--no-agent",
        "--mtu",
        "9000",
    ]);
    assert_eq!(out.status.code(), Some(1), "a failed check exits 1");
    let r = results(&out.stdout);
    let (s, d) = status(&r, "pcie.link");
    assert_eq!(s, "fail");
    assert!(d.contains("0000:3b:00.1") && d.contains("x8 of x16"), "{d}");
    assert_eq!(status(&r, "pcie.bluefield").0, "pass");
    let (s, d) = status(&r, "netdev.up");
    assert_eq!(s, "pass", "{d}");
    assert!(
        d.contains("ens1f0np0"),
        "the interface with carrier and RDMA is chosen: {d}"
    );
    assert_eq!(status(&r, "netdev.mtu").0, "pass");
    assert_eq!(status(&r, "rdma.port").0, "pass");
    assert_eq!(status(&r, "rdma.link-layer").0, "pass");
    let (s, d) = status(&r, "rdma.gid");
    assert_eq!(
        s, "warn",
        "index 3 is right, index 0 is what old tools take: {d}"
    );
    assert!(d.contains("index 3") && d.contains("192.168.100.1"), "{d}");
    for id in ["agent.reachable", "agent.consistent", "agent.mtu"] {
        assert_eq!(status(&r, id).0, "skip", "{id}");
    }
}

#[test]
fn a_down_interface_is_diagnosed_and_a_wrong_mtu_fails() {
    let (_dir, root) = fixture::bluefield3_host_tempdir();
    let root = root.to_str().expect("utf-8 path");
    let out = dpuctl(&[
        "-o",
        "json",
        "--sys-root",
        root,
        "check",
        "--no-agent",
        "--interface",
        "ens1f1np1",
        "--mtu",
        "9000",
    ]);
    assert_eq!(out.status.code(), Some(1));
    let r = results(&out.stdout);
    assert_eq!(status(&r, "netdev.up").0, "fail");
    let (s, d) = status(&r, "netdev.mtu");
    assert_eq!(s, "fail");
    assert!(d.contains("1500") && d.contains("9000"), "{d}");
}

#[test]
fn an_agent_on_the_same_card_is_consistent_and_another_card_is_not() {
    let (_host_dir, host_root) = fixture::bluefield3_host_tempdir();
    let host_root = host_root.to_str().expect("utf-8 path");
    let lab = Lab::start();
    let agent = lab.agent.endpoint();

    // The DPU fixture's firmware differs from the host fixture's: another card.
    let out = dpuctl(&[
        "-o",
        "json",
        "--sys-root",
        host_root,
        "--agent",
        &agent,
        "check",
    ]);
    let r = results(&out.stdout);
    assert_eq!(status(&r, "agent.reachable").0, "pass");
    let (s, d) = status(&r, "agent.consistent");
    assert_eq!(s, "fail", "{d}");
    assert!(d.contains("firmware"), "{d}");
    let (s, d) = status(&r, "agent.mtu");
    assert_eq!(
        s, "pass",
        "p0 9216 and pf0hpf 9000 carry the host's 9000: {d}"
    );

    // Make it the same card: now the agent's view matches the host's.
    fs::write(
        lab.root.join("sys/class/infiniband/mlx5_0/fw_ver"),
        "32.41.1000\n",
    )
    .expect("write fw_ver");
    let out = dpuctl(&[
        "-o",
        "json",
        "--sys-root",
        host_root,
        "--agent",
        &agent,
        "check",
    ]);
    let r = results(&out.stdout);
    let (s, d) = status(&r, "agent.consistent");
    assert_eq!(s, "pass", "{d}");
    assert!(d.contains("BlueField-3") && d.contains("DPU mode"), "{d}");
}

#[test]
fn check_list_describes_every_check_and_runs_nothing() {
    let out = dpuctl(&[
        "-o",
        "json",
        "check",
        "--list",
        "--agent",
        "unix:/nonexistent/x.sock",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let list = results(&out.stdout);
    assert!(list.len() >= 12);
    for c in &list {
        for field in ["id", "verifies", "why", "fix"] {
            assert!(c[field].as_str().is_some_and(|s| !s.is_empty()), "{c}");
        }
    }
}

/// `--profile`: a bad file is refused before anything runs (exit 2, naming the line and
/// the key); the shipped example loads, and against a fixture tree the firmware checks
/// skip with the reason instead of querying this machine's cards.
#[test]
fn a_bad_profile_is_refused_by_line_and_the_shipped_one_loads() {
    let (dir, root) = fixture::bluefield3_host_tempdir();
    let root = root.to_str().expect("utf-8 path");
    let bad = dir.path().join("bad.toml");
    fs::write(&bad, "[fw]\nCNP_DSCP_P1 = 64\n").expect("write");
    let out = dpuctl(&[
        "--sys-root",
        root,
        "check",
        "--no-agent",
        "--profile",
        bad.to_str().expect("utf-8 path"),
    ]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("line 2") && stderr.contains("CNP_DSCP_P1"),
        "{stderr}"
    );
    assert!(out.stdout.is_empty(), "nothing ran");

    let shipped = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../examples/profiles/gpu-lossless-roce.toml"
    );
    let out = dpuctl(&[
        "-o",
        "json",
        "--sys-root",
        root,
        "check",
        "--no-agent",
        "--profile",
        shipped,
    ]);
    assert_eq!(out.status.code(), Some(1), "the fixture's x8 link fails");
    let r = results(&out.stdout);
    let (s, d) = status(&r, "fw.profile");
    assert_eq!(s, "skip", "{d}");
    assert!(d.contains("--sys-root"), "{d}");
}

/// A machine without RDMA (a VM) skips most checks: the table shows what was judged, and
/// one line per reason says what was skipped and why, instead of thirty SKIP rows;
/// `--all` shows every row, and JSON always carries every result.
#[test]
fn skipped_checks_are_summed_up_by_reason_and_every_row_is_there_on_request() {
    let dir = tempfile::tempdir().expect("tempdir");
    // A machine with a /sys and nothing NVIDIA in it.
    fs::create_dir_all(dir.path().join("sys/class/net/eth0")).expect("mkdir");
    fs::write(dir.path().join("sys/class/net/eth0/operstate"), "up\n").expect("write");
    let root = dir.path().to_str().expect("utf-8 path");
    let out = dpuctl(&["--sys-root", root, "check", "--no-agent"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(!text.contains("SKIP"), "no SKIP rows by default: {text}");
    let heading = text
        .lines()
        .find(|l| l.starts_with("skipped "))
        .unwrap_or_else(|| panic!("no summary: {text}"));
    let json = dpuctl(&["-o", "json", "--sys-root", root, "check", "--no-agent"]);
    let r = results(&json.stdout);
    let skipped = r.iter().filter(|r| r["status"] == "skip").count();
    assert!(skipped > 10, "{r:?}");
    assert!(
        heading.starts_with(&format!("skipped {skipped}, by reason")),
        "the summary counts every skipped result: {heading}"
    );
    assert!(
        text.contains("--no-agent: agent.reachable, agent.consistent, agent.mtu"),
        "{text}"
    );
    let all = dpuctl(&["--sys-root", root, "check", "--no-agent", "--all"]);
    let all_text = String::from_utf8_lossy(&all.stdout);
    assert_eq!(
        all_text.matches("SKIP").count(),
        skipped,
        "--all shows every skipped row: {all_text}"
    );
    assert!(!all_text.contains("by reason"), "{all_text}");
}

/// `--interface` follows `--device`'s rule: a name the host does not have is a usage error
/// (exit 2) naming it and what the host has, not a failed check whose fix is the cable.
#[test]
fn an_interface_the_host_does_not_have_is_a_usage_error_like_a_device() {
    let (_dir, root) = fixture::bluefield3_host_tempdir();
    let root = root.to_str().expect("utf-8 path");
    for (flag, name, has) in [
        ("--interface", "ens9f0np0", "ens1f0np0"),
        ("--device", "mlx5_9", "mlx5_0"),
    ] {
        let out = dpuctl(&["--sys-root", root, "check", "--no-agent", flag, name]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{flag} {name}: {stderr}");
        assert!(
            stderr.contains(&format!("{flag} {name}")) && stderr.contains(has),
            "{stderr}"
        );
        assert!(out.stdout.is_empty(), "nothing judged");
    }
}
