//! `dpuctl fleet prove storage`: the real dpuctl on each "host" over an ssh stand-in that
//! runs the remote command here (as sshd would, through `sh -c`), against the real agent
//! of the mocked lab. One host proves (as far as the fake SNAP lets it: NOT PROVEN, the
//! single-node verdict), one host's ssh refuses the connection, one has no ssh at all;
//! each is named for its own reason and none hides the others.

use std::path::Path;

use dpu_tests::command::{describe, stdout_json};
use dpu_tests::harness::{bin_dir, dpuctl};
use dpu_tests::skip;
use dpu_tests::stand_in::ssh_here;
use serde_json::Value;

use crate::host_session::{
    disk_tempdir, emulated_loop, expose_volume, host_root_with_netdev_stats, volume_host_uuid,
};
use crate::Lab;

fn utf8(path: &Path) -> &str {
    path.to_str().expect("utf-8 path")
}

fn node<'a>(report: &'a Value, name: &str) -> &'a Value {
    report["nodes"]
        .as_array()
        .and_then(|nodes| nodes.iter().find(|n| n["name"] == name))
        .unwrap_or_else(|| panic!("no node {name} in {report:#}"))
}

#[test]
fn each_host_runs_its_own_proof_and_each_failure_is_its_own() {
    let lab = Lab::start();
    expose_volume(&lab);
    let dir = tempfile::tempdir().expect("tempdir");
    let log = dir.path().join("ssh.log");
    let ssh = ssh_here(dir.path(), &log, &["gpu-down"], &[]);

    let disk = disk_tempdir();
    let file = disk.path().join("device.bin");
    let data: Vec<u8> = (0..1usize << 20).map(|i| (i * 7 % 251) as u8).collect();
    std::fs::write(&file, &data).expect("write the device file");
    let (_host_dir, host_root) = host_root_with_netdev_stats();
    // The proof binds a real block device that carries the volume's identity.
    let uuid = tokio::runtime::Runtime::new()
        .expect("runtime")
        .block_on(volume_host_uuid(&lab, "volumes/disk0n1"));
    let loop_disk = match emulated_loop(&file, &uuid, &[&host_root]) {
        Ok(disk) => disk,
        Err(why) => skip!("the proof binds a real block device: {why}"),
    };
    let device = loop_disk.path.clone();
    let agent = lab.agent.endpoint();
    let inventory = dir.path().join("fleet.toml");
    std::fs::write(
        &inventory,
        format!(
            "[defaults]\nhost_agent = \"{agent}\"\n\n\
             [[target]]\nname = \"gpu-01\"\nagent = \"{agent}\"\nssh = \"root@gpu-01\"\n\n\
             [[target]]\nname = \"gpu-down\"\nagent = \"{agent}\"\nssh = \"root@gpu-down\"\n\n\
             [[target]]\nname = \"gpu-nossh\"\nagent = \"{agent}\"\n"
        ),
    )
    .expect("write the inventory");

    let real_dpuctl = bin_dir().join("dpuctl");
    let out = dpuctl(&[
        "-o",
        "json",
        "fleet",
        "--inventory",
        utf8(&inventory),
        "prove",
        "storage",
        "--ssh",
        utf8(&ssh),
        "--dpuctl",
        utf8(&real_dpuctl),
        "--",
        "--sys-root",
        utf8(&host_root),
        "--volume",
        "disk0n1",
        "--device",
        utf8(&device),
        "--size",
        "1m",
        "--bs",
        "64k",
        "--iodepth",
        "4",
        "--idle",
        "0.1",
    ]);
    let report = stdout_json(&out);
    eprintln!("fleet prove took {} ms", report["elapsed_ms"]);
    let proved = node(&report, "gpu-01");
    let detail = proved["problems"][0]["detail"].as_str().unwrap_or_default();
    if detail.contains("O_DIRECT") || detail.contains("io_uring") {
        skip!("the proof's read needs O_DIRECT and io_uring here: {detail}");
    }
    assert_eq!(out.status.code(), Some(1), "{}", describe(&out));
    assert_eq!(report["command"], "storage-proof");

    // The host's own verdict, with the line it was not met on.
    assert_eq!(proved["status"], "FAIL", "{proved:#}");
    assert_eq!(proved["problems"][0]["check"], "prove.storage");
    assert_eq!(proved["problems"][0]["cause"], "storage offload NOT PROVEN");
    assert_eq!(proved["facts"]["verdict"], "NOT_PROVEN", "{proved:#}");
    assert_eq!(proved["compared"]["storage proof"], "NOT PROVEN");

    let down = node(&report, "gpu-down");
    assert_eq!(down["status"], "UNREACHABLE", "{down:#}");
    assert_eq!(down["problems"][0]["check"], "host.reachable");
    assert!(
        down["problems"][0]["detail"]
            .as_str()
            .is_some_and(|d| d.contains("Connection refused")),
        "{down:#}"
    );

    let nossh = node(&report, "gpu-nossh");
    assert_eq!(nossh["status"], "SKIP", "{nossh:#}");
    assert_eq!(nossh["skipped"], "no `ssh` destination in the inventory");

    // The host's dpuctl was given the inventory's host_agent, and only gpu-01 ran.
    let log_path = log;
    let log = std::fs::read_to_string(&log_path).expect("ssh log");
    assert_eq!(log.lines().count(), 1, "{log}");
    assert_eq!(log, "gpu-01\n");
    let command = std::fs::read_to_string(format!("{}.gpu-01", log_path.display()))
        .expect("the remote command");
    assert!(
        command.contains(&format!("--agent {agent}"))
            || command.contains(&format!("--agent '{agent}'")),
        "{command}"
    );
}
