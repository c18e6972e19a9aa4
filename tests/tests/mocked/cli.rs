//! `dpuctl` against the agent over a Unix socket and over TCP.

use dpu_tests::harness::{dpuctl, free_tcp_port};

use crate::Lab;

fn json_info(endpoint: &str) -> serde_json::Value {
    let out = dpuctl(&["--agent", endpoint, "-o", "json", "dpu", "info"]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "dpuctl dpu info via {endpoint}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("dpu info prints JSON")
}

#[test]
fn dpu_info_works_over_unix_and_tcp_and_reads_the_fixture() {
    let port = free_tcp_port();
    let tcp = format!("tcp:127.0.0.1:{port}");
    let lab = Lab::start_with(|o| o.extra_listen.push(tcp.clone()));
    for endpoint in [lab.agent.endpoint(), tcp] {
        let info = json_info(&endpoint);
        let system = &info["system"];
        assert_eq!(system["hostname"], "dpu-bf3-lab", "{endpoint}");
        assert_eq!(system["model"], "BlueField-3");
        assert_eq!(system["dpuMode"], "DPU_MODE_DPU");
        assert_eq!(system["firmwareVersion"], "32.38.1002");
        assert_eq!(system["os"]["kernelRelease"], "5.15.0-1035-bluefield");
        let roles: Vec<(&str, &str)> = info["netdevs"]
            .as_array()
            .expect("netdevs")
            .iter()
            .map(|n| {
                (
                    n["ifname"].as_str().unwrap_or(""),
                    n["role"].as_str().unwrap_or(""),
                )
            })
            .collect();
        assert!(
            roles.contains(&("p0", "NETDEV_ROLE_UPLINK_REPRESENTOR")),
            "{roles:?}"
        );
        assert!(
            roles.contains(&("pf0hpf", "NETDEV_ROLE_PF_REPRESENTOR")),
            "{roles:?}"
        );
        assert!(
            roles.contains(&("oob_net0", "NETDEV_ROLE_PLAIN")),
            "{roles:?}"
        );
        assert_eq!(info["rdmaDevices"][0]["hcaType"], "MT41692");
    }
}

#[test]
fn dpu_info_table_names_the_model() {
    let lab = Lab::start();
    let out = dpuctl(&["--agent", &lab.agent.endpoint(), "dpu", "info"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for needle in [
        "BlueField-3",
        "dpu",
        "pf0hpf",
        "pf-representor",
        "mlx5_0",
        "active",
    ] {
        assert!(stdout.contains(needle), "{needle} missing:\n{stdout}");
    }
}

#[test]
fn unreachable_agent_is_an_environment_error() {
    let dir = tempfile::tempdir().expect("tempdir");
    let endpoint = format!("unix:{}", dir.path().join("nobody.sock").display());
    let out = dpuctl(&["--agent", &endpoint, "--timeout", "2", "dpu", "info"]);
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("cannot reach the agent"), "{stderr}");

    // The switch commands go through the agent too.
    let out = dpuctl(&[
        "--agent",
        &endpoint,
        "--timeout",
        "2",
        "switch",
        "add-bridge",
        "ovsbr1",
    ]);
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("cannot reach the agent"), "{stderr}");
}

#[test]
fn agent_rejections_reach_the_user_with_exit_code_2() {
    let lab = Lab::start();
    let out = dpuctl(&[
        "--agent",
        &lab.agent.endpoint(),
        "storage",
        "attach",
        "--id",
        "r0",
        "--traddr",
        "192.0.2.10",
        "--subnqn",
        "bogus",
    ]);
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("InvalidArgument") && stderr.contains("spec.subnqn"),
        "{stderr}"
    );
}

#[test]
fn lab_commands_parse_and_a_missing_lab_is_named() {
    let missing = tempfile::tempdir().expect("tempdir");
    let lab_dir = missing.path().display().to_string();
    for args in [
        vec!["lab", "--lab-dir", &lab_dir, "status"],
        vec![
            "lab",
            "--lab-dir",
            &lab_dir,
            "run",
            "--vm",
            "target",
            "--time-limit",
            "5",
            "--",
            "true",
        ],
        vec![
            "lab",
            "--lab-dir",
            &lab_dir,
            "up",
            "--bin-dir",
            "target/debug",
            "--no-build",
        ],
    ] {
        let out = dpuctl(&args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains("no lab.sh there"), "{args:?}: {stderr}");
    }
}

#[test]
fn usage_errors_exit_2_and_help_carries_examples() {
    let out = dpuctl(&["dpu", "frobnicate"]);
    assert_eq!(out.status.code(), Some(2));
    let out = dpuctl(&["--agent", "http://x", "dpu", "info"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("unknown scheme"));
    for command in [
        vec!["check", "--help"],
        vec!["dpu", "info", "--help"],
        vec!["storage", "read", "--help"],
        vec!["switch", "flows", "--help"],
        vec!["prove", "storage", "--help"],
        vec!["lab", "up", "--help"],
    ] {
        let out = dpuctl(&command);
        assert_eq!(out.status.code(), Some(0), "{command:?}");
        assert!(
            String::from_utf8_lossy(&out.stdout).contains("Example"),
            "{command:?}"
        );
    }
}

/// Writes `log` to `name` in `dir` and runs `dpuctl [-o json] roce nccl-check` on it.
fn nccl_check_log(
    dir: &std::path::Path,
    name: &str,
    log: &str,
    json: bool,
) -> std::process::Output {
    let path = dir.join(name);
    std::fs::write(&path, log).expect("write the log");
    let path = path.display().to_string();
    let mut args = if json { vec!["-o", "json"] } else { Vec::new() };
    args.extend(["roce", "nccl-check", path.as_str()]);
    dpuctl(&args)
}

#[test]
fn nccl_check_tells_rdma_from_the_socket_fallback() {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = nccl_check_log(
        dir.path(),
        "ib.log",
        "node1:1:1 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/RoCE [RO]; OOB eth0:10.0.0.1<0>\n\
         node1:1:1 [0] NCCL INFO Using network IB\n\
         node1:1:9 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[0] [send] via NET/IB/0/GDRDMA\n",
        true,
    );
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(report["transport"], "NET/IB");
    assert_eq!(report["ib_devices"][0], "mlx5_0:1/RoCE");
    let out = nccl_check_log(
        dir.path(),
        "socket.log",
        "node1:1:1 [0] NCCL INFO NET/IB : No device found.\n\
         node1:1:1 [0] NCCL INFO NET/Socket : Using [0]eth0:10.0.0.1<0>\n\
         node1:1:1 [0] NCCL INFO Using network Socket\n\
         node1:1:9 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[0] [send] via NET/Socket/0\n",
        false,
    );
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("fell back to NET/Socket"));
    let out = nccl_check_log(dir.path(), "empty.log", "no nccl here\n", false);
    assert_eq!(out.status.code(), Some(3), "no evidence is inconclusive");
    // NET/IB initialised, but every channel went over P2P/IPC: no network carried the
    // collective, so nothing says IB (issue 31 §6).
    let out = nccl_check_log(
        dir.path(),
        "local.log",
        "node1:1:1 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/RoCE [RO]; OOB eth0:10.0.0.1<0>\n\
         node1:1:1 [0] NCCL INFO Using network IB\n\
         node1:1:9 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/IPC/read\n",
        true,
    );
    assert_eq!(out.status.code(), Some(3), "init lines are not evidence");
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(report["transport"], "unknown");
}

/// `nccl-check -- CMD`: the command's own log says NET/IB; the host fixture's RDMA port
/// counters decide whether that is believed. A command that also moves the counters (as
/// the collective would) agrees; one that leaves them still contradicts the log and
/// fails: the "says IB, but the bytes went elsewhere" case.
#[test]
fn nccl_check_run_corroborates_the_transport_with_rdma_counters() {
    let (_dir, root) = dpu_tests::fixture::bluefield3_host_tempdir();
    let log =
        "node1:1:1 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/RoCE [RO]; OOB eth0:10.0.0.1<0>\n\
               node1:1:9 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[0] [send] via NET/IB/0/GDRDMA\n";
    let counters = root.join("sys/class/infiniband/mlx5_0/ports/1/counters");
    dpu_tests::fixture::set_counter(&root, "mlx5_0", 1, "port_xmit_packets", 100).expect("set");
    dpu_tests::fixture::set_counter(&root, "mlx5_0", 1, "port_rcv_packets", 100).expect("set");
    let sys_root = root.display().to_string();
    let moving = format!(
        "printf '%s' \"$LOG\"; echo 60100 > {c}/port_xmit_packets; echo 40100 > {c}/port_rcv_packets",
        c = counters.display()
    );
    let run = |script: &str| {
        std::process::Command::new(dpu_tests::harness::bin_dir().join("dpuctl"))
            .args([
                "--sys-root",
                &sys_root,
                "-o",
                "json",
                "roce",
                "nccl-check",
                "--",
                "sh",
                "-c",
                script,
            ])
            .env("LOG", log)
            .output()
            .expect("run dpuctl")
    };
    let out = run(&moving);
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(out.status.code(), Some(0), "{report:#}");
    assert_eq!(report["transport"], "NET/IB");
    assert_eq!(report["counters"]["verdict"], "agrees", "{report:#}");
    assert_eq!(report["counters"]["packets"], 100_000, "{report:#}");

    let out = run("printf '%s' \"$LOG\"");
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(out.status.code(), Some(1), "{report:#}");
    assert_eq!(report["counters"]["verdict"], "contradicts", "{report:#}");
    assert!(String::from_utf8_lossy(&out.stderr).contains("contradict"));

    let out = run("printf '%s' \"$LOG\"; exit 7");
    assert_eq!(
        out.status.code(),
        Some(1),
        "a failed NCCL command fails the check"
    );
}

/// `nccl-check --report`: one page with each file's bus bandwidth against size (a line
/// per algorithm's run), opened as text here; the names are escaped. The control: inputs
/// without an nccl-tests table are refused (exit 2) and no page is written.
#[test]
fn nccl_check_report_draws_busbw_against_size_per_run() {
    let dir = tempfile::tempdir().expect("tempdir");
    let table = |large_busbw: &str| {
        format!(
            "#       size         count      type   redop    root     time   algbw   busbw  #wrong     time   algbw   busbw  #wrong\n\
             #        (B)    (elements)                               (us)  (GB/s)  (GB/s)             (us)  (GB/s)  (GB/s)\n\
                        8             2     float     sum      -1    27.21    0.00    0.00       0    26.80    0.00    0.00       0\n\
                  1048576        262144     float     sum      -1    93.10   11.26   {large_busbw}       0    92.70   11.31   19.70       0\n\
             # Avg bus bandwidth    : 9.8\n"
        )
    };
    let ring = dir.path().join("ring.log");
    let tree = dir.path().join("tree.log");
    std::fs::write(&ring, table("19.71")).expect("ring");
    std::fs::write(&tree, table("12.40")).expect("tree");
    let page = dir.path().join("busbw.html");
    let out = dpuctl(&[
        "roce",
        "nccl-check",
        "--report",
        page.to_str().expect("utf-8"),
        ring.to_str().expect("utf-8"),
        tree.to_str().expect("utf-8"),
    ]);
    // No transport lines in these logs: the check itself is inconclusive (exit 3); the
    // page is written all the same.
    assert_eq!(
        out.status.code(),
        Some(3),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let html = std::fs::read_to_string(&page).expect("the page");
    assert_eq!(html.matches("<svg").count(), 1, "one plot");
    assert!(
        html.contains("ring.log") && html.contains("tree.log"),
        "a line per file"
    );
    assert!(
        html.contains("<td>19.71</td><td>12.40</td>"),
        "the numbers beside it"
    );

    let none = dir.path().join("none.html");
    let empty = dir.path().join("empty.log");
    std::fs::write(&empty, "no nccl-tests table here\n").expect("empty");
    let out = dpuctl(&[
        "roce",
        "nccl-check",
        "--report",
        none.to_str().expect("utf-8"),
        empty.to_str().expect("utf-8"),
    ]);
    assert_eq!(
        out.status.code(),
        Some(2),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("no input holds an nccl-tests results table")
    );
    assert!(!none.exists(), "no page written");
}

/// `roce perf` refuses a bad parameter before ssh is tried, in the words the user typed:
/// the library names the field (`iterations`) and dpuctl says its flag (`--iterations`).
#[test]
fn roce_perf_bad_parameters_are_named_by_their_flags() {
    for (args, said) in [
        (
            &["--iterations", "0"][..],
            "--iterations must be 1 .. 100000000",
        ),
        (
            &["--tcp-seconds", "0"][..],
            "--tcp-seconds must be 1 .. 3600",
        ),
        (&["--lat-sizes", "0"][..], "--lat-sizes: each size must be"),
        (&["--tests", "rc_bw"][..], "--tests: unknown test \"rc_bw\""),
        (
            &["--device", "a;b"][..],
            "--device \"a;b\" is not an RDMA device name",
        ),
        (&["--base-port", "65530"][..], "--base-port 65530: the "),
    ] {
        let mut all = vec![
            "roce",
            "perf",
            "--peer",
            "gpu-02",
            "--ssh",
            "/nonexistent-ssh",
        ];
        all.extend(args);
        let out = dpuctl(&all);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(
            stderr.contains(&format!("error: {said}")),
            "{args:?}: {stderr}"
        );
        // Control: the library's own words for the field are not what the user reads.
        let words = said.trim_start_matches("--").replace('-', " ");
        assert!(
            !stderr.contains(&format!("error: {words}")),
            "{args:?}: {stderr}"
        );
    }
    // The peer is checked as an ssh destination before ssh runs: a shell word and an ssh
    // option (given as `--peer=VALUE`, or clap would take it for a flag) are both refused.
    for peer in ["root@b;reboot", "-oProxyCommand=x"] {
        let out = dpuctl(&[
            "roce",
            "perf",
            &format!("--peer={peer}"),
            "--ssh",
            "/nonexistent-ssh",
        ]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{peer}: {stderr}");
        assert!(
            stderr.contains(&format!("error: --peer \"{peer}\" is not a host")),
            "{peer}: {stderr}"
        );
    }
}

/// The demo's run id is checked before anything runs and named by the flag the user typed
/// (dpu-demo names the field; dpuctl says `--run-id`); a good id lists the plan (exit 0).
#[test]
fn demo_run_id_is_refused_by_its_flag_before_anything_runs() {
    let plan = concat!(env!("CARGO_MANIFEST_DIR"), "/../demo/src/example_plan.toml");
    let demo = |id: &str| {
        dpuctl(&[
            "demo",
            "training-storage",
            "--plan",
            plan,
            "--dry-run",
            "--run-id",
            id,
        ])
    };
    let out = demo("Bad Id");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("error: --run-id: run id \"Bad Id\": expected"),
        "{stderr}"
    );
    // Control: a good id gets as far as the listing, which names it.
    let out = demo("r1");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("run r1"), "{stdout}");
}
