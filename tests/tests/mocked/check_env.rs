//! `dpuctl check` as a script reads it, against the BlueField-3 host fixture: the facts
//! judged are typed JSON fields (the GID index is a number), and `--env` prints settings
//! that a shell `eval`s to the right values, or refuses with nothing on stdout.

use std::io::Write as _;
use std::process::{Command, Stdio};

use dpu_tests::fixture;
use dpu_tests::harness::dpuctl;
use serde_json::Value;

/// What `sh -c 'eval "$(cat)"; TAIL'` prints when fed `script` on stdin.
fn eval_in_sh(script: &[u8], tail: &str) -> String {
    let mut child = Command::new("sh")
        .arg("-c")
        .arg(format!("eval \"$(cat)\"; {tail}"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn sh");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(script)
        .expect("feed sh");
    let out = child.wait_with_output().expect("sh output");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("utf-8")
}

#[test]
fn the_gid_index_is_a_number_in_the_json_facts() {
    let (_dir, root) = fixture::bluefield3_host_tempdir();
    let root = root.to_str().expect("utf-8 path");
    let out = dpuctl(&["--sys-root", root, "-o", "json", "check", "--no-agent"]);
    assert_eq!(out.status.code(), Some(1), "the x8 link fails");
    let results: Value = serde_json::from_slice(&out.stdout).expect("JSON");
    let gid = results
        .as_array()
        .and_then(|all| all.iter().find(|r| r["id"] == "rdma.gid"))
        .expect("an rdma.gid result");
    assert_eq!(gid["status"], "warn", "the detail is still there: {gid}");
    assert!(gid["detail"]
        .as_str()
        .is_some_and(|d| d.contains("index 3")));
    let facts = &gid["facts"];
    assert_eq!(facts["gid_index"].as_u64(), Some(3), "{facts}");
    assert_eq!(facts["rdma_device"], "mlx5_0");
    assert_eq!(facts["rdma_port"].as_u64(), Some(1));
    assert_eq!(facts["interface"], "ens1f0np0");
    assert_eq!(facts["gid_type"], "RoCE v2");
    assert_eq!(facts["gid_ip"], "192.168.100.1");
}

#[test]
fn check_env_evaluates_to_the_fabric_settings() {
    let (_dir, root) = fixture::bluefield3_host_tempdir();
    let root = root.to_str().expect("utf-8 path");
    let out = dpuctl(&["--sys-root", root, "check", "--no-agent", "--env"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        out.status.code(),
        Some(0),
        "the narrow PCIe link does not change the settings: {stderr}"
    );
    assert!(
        stderr.contains("pcie.link"),
        "but it is mentioned: {stderr}"
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.lines().all(|l| l.starts_with("export ")),
        "only export lines: {text}"
    );
    assert_eq!(eval_in_sh(&out.stdout, "echo $NCCL_IB_GID_INDEX"), "3\n");
    assert_eq!(
        eval_in_sh(
            &out.stdout,
            "echo \"$NCCL_IB_HCA $NCCL_SOCKET_IFNAME $UCX_NET_DEVICES|$PERFTEST_FLAGS\""
        ),
        "mlx5_0:1 ens1f0np0 mlx5_0:1|-d mlx5_0 -i 1 -x 3\n"
    );

    let json = dpuctl(&[
        "--sys-root",
        root,
        "-o",
        "json",
        "check",
        "--no-agent",
        "--env",
    ]);
    let settings: Value = serde_json::from_slice(&json.stdout).expect("JSON");
    assert_eq!(settings["NCCL_IB_GID_INDEX"], "3");
}

#[test]
fn check_env_on_a_down_port_refuses_with_nothing_on_stdout() {
    let (_dir, root) = fixture::bluefield3_host_tempdir();
    let root = root.to_str().expect("utf-8 path");
    // PF1: no carrier, RDMA port DOWN, only link-local GIDs.
    let out = dpuctl(&[
        "--sys-root",
        root,
        "check",
        "--no-agent",
        "--interface",
        "ens1f1np1",
        "--env",
    ]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        out.stdout.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    for id in ["netdev.up", "rdma.port", "rdma.gid"] {
        assert!(stderr.contains(id), "{id}: {stderr}");
    }
}
