//! The aarch64 agent under qemu-aarch64, driven by the host's `dpuctl` over a Unix socket
//! and over TCP, reading the BlueField-3 fixture tree.

use std::path::{Path, PathBuf};

use dpu_tests::arm;
use dpu_tests::fake_snap::FakeSnap;
use dpu_tests::fixture;
use dpu_tests::harness::{bin_dir, dpuctl, free_tcp_port, AgentOptions, AgentProcess};

/// An aarch64 agent with a fake SNAP and a BlueField-3 fixture, serving on a Unix socket
/// and on TCP.
struct ArmLab {
    agent: AgentProcess,
    tcp: String,
    root: PathBuf,
    _snap: FakeSnap,
    _dir: tempfile::TempDir,
}

impl ArmLab {
    fn start(agent_bin: &Path) -> Self {
        let (dir, root) = fixture::bluefield3_tempdir();
        let mut options = AgentOptions::new(dir.path(), &root);
        options.agent_bin = Some(agent_bin.to_owned());
        options.wrapper = arm::runner_wrapper();
        let tcp = format!("tcp:127.0.0.1:{}", free_tcp_port());
        options.extra_listen.push(tcp.clone());
        let snap = FakeSnap::start(&options.snap_socket).expect("fake SNAP");
        let agent = AgentProcess::start(&options);
        Self {
            agent,
            tcp,
            root,
            _snap: snap,
            _dir: dir,
        }
    }

    fn endpoints(&self) -> [String; 2] {
        [self.agent.endpoint(), self.tcp.clone()]
    }
}

/// Runs `dpuctl` and returns stdout, asserting exit code 0.
fn dpuctl_ok(lab: &ArmLab, args: &[&str]) -> String {
    let out = dpuctl(args);
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert_eq!(
        out.status.code(),
        Some(0),
        "dpuctl {args:?}\nstdout: {stdout}\nstderr: {}\nagent log:\n{}",
        String::from_utf8_lossy(&out.stderr),
        lab.agent.log()
    );
    stdout
}

/// The host `dpuctl` is a host build (x86-64 on an x86 machine): the call crosses
/// architectures.
fn assert_host_dpuctl() {
    if std::env::consts::ARCH == "x86_64" {
        let dpuctl = bin_dir().join("dpuctl");
        assert_eq!(
            arm::elf_machine(&dpuctl),
            Ok(arm::EM_X86_64),
            "{}",
            dpuctl.display()
        );
    }
}

#[test]
fn aarch64_agent_answers_x86_dpuctl_over_unix_and_tcp() {
    let agent_bin = match crate::aarch64_agent() {
        Ok(path) => path,
        Err(reason) => dpu_tests::skip!("{reason}"),
    };
    assert_host_dpuctl();
    let lab = ArmLab::start(&agent_bin);
    for endpoint in lab.endpoints() {
        let health = dpuctl_ok(&lab, &["--agent", &endpoint, "dpu", "health"]);
        assert!(health.contains("healthy"), "{endpoint}: {health}");

        let info = dpuctl_ok(&lab, &["--agent", &endpoint, "-o", "json", "dpu", "info"]);
        let info: serde_json::Value = serde_json::from_str(&info).expect("dpu info prints JSON");
        let system = &info["system"];
        // Compiled in: the answer came from the aarch64 build.
        assert_eq!(system["architecture"], "aarch64", "{endpoint}: {system}");
        assert_eq!(system["hostname"], "dpu-bf3-lab", "{endpoint}");
        // The model is derived from the fixture's hca_type MT41692.
        assert_eq!(system["model"], "BlueField-3", "{endpoint}");
        assert_eq!(system["dpuMode"], "DPU_MODE_DPU", "{endpoint}");
        assert_eq!(system["firmwareVersion"], "32.38.1002", "{endpoint}");
        assert_eq!(
            system["os"]["kernelRelease"], "5.15.0-1035-bluefield",
            "{endpoint}"
        );
        assert_eq!(
            system["sysRoot"].as_str(),
            lab.root.to_str(),
            "{endpoint}: the agent read the fixture, not this machine"
        );
        let rdma = &info["rdmaDevices"][0];
        assert_eq!(rdma["ibdev"], "mlx5_0", "{endpoint}: {rdma}");
        assert_eq!(rdma["hcaType"], "MT41692", "{endpoint}: {rdma}");
    }
}

/// A u64 counter in proto3 JSON: a string (the canonical form) or a number.
fn json_u64(value: &serde_json::Value) -> Option<u64> {
    value
        .as_u64()
        .or_else(|| value.as_str().and_then(|s| s.parse().ok()))
}

#[test]
fn aarch64_agent_snapshot_scales_port_rcv_data_from_the_fixture() {
    let agent_bin = match crate::aarch64_agent() {
        Ok(path) => path,
        Err(reason) => dpu_tests::skip!("{reason}"),
    };
    let lab = ArmLab::start(&agent_bin);
    let file = lab
        .root
        .join("sys/class/infiniband/mlx5_0/ports/1/counters/port_rcv_data");
    let raw: u64 = std::fs::read_to_string(&file)
        .unwrap_or_else(|e| panic!("fixture counter {}: {e}", file.display()))
        .trim()
        .parse()
        .unwrap_or_else(|e| panic!("fixture counter {} is not a number: {e}", file.display()));
    for endpoint in lab.endpoints() {
        let out = dpuctl_ok(
            &lab,
            &["--agent", &endpoint, "-o", "json", "dpu", "counters"],
        );
        let snapshot: serde_json::Value =
            serde_json::from_str(&out).expect("dpu counters prints JSON");
        let samples = snapshot["samples"].as_array().expect("samples");
        let sample = samples
            .iter()
            .find(|s| {
                s["source"] == "rdma"
                    && s["object"] == "rdmaDevices/mlx5_0/ports/1"
                    && s["counter"] == "port_rcv_data"
            })
            .unwrap_or_else(|| {
                panic!("{endpoint}: no rdma port_rcv_data sample for mlx5_0 port 1 in {out}")
            });
        // port_rcv_data counts 4-byte words; the snapshot reports bytes.
        assert_eq!(
            json_u64(&sample["value"]),
            Some(4 * raw),
            "{endpoint}: {sample}"
        );
    }
}
