//! Two paths to one NVMe-oF target with failover (issue 36 part 3), against real SPDK:
//! target A listens on two ports, the agent attaches both as one multipath controller on
//! B, a read through B runs while one listener goes away, and SPDK's own `rpc.py` on B
//! (`bdev_nvme_get_controllers`, `bdev_nvme_get_io_paths`) judges what `dpuctl storage
//! paths` says. The negative control is the same read over one path.
//!
//! Reconnect settings of both: `ctrl_loss_timeout_sec` 2, `reconnect_delay_sec` 1,
//! `fast_io_fail_timeout_sec` 1: I/O on a dead path fails over (or fails) after a second,
//! and SPDK deletes the dead path after two, which the agent's reconciler (every second)
//! attaches again once the listener is back.

use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use dpu_proto::v1;
use dpu_tests::harness::free_tcp_port;
use dpu_tests::spdk::{export_bdev, perf_read, perf_read_within, PerfReport, REMOTE_NQN};
use serde_json::Value;
use tonic::Code;

use crate::{bench, controller_names, ok, refused, remote_spec, spdk_reads, wait_until, Bench};

const EXPORT_NQN: &str = "nqn.2016-06.io.spdk:mpexport";
const IO_SIZE: u64 = 4096;
const RECONNECT: [&str; 6] = [
    "--ctrl-loss-timeout-sec",
    "2",
    "--reconnect-delay-sec",
    "1",
    "--fast-io-fail-timeout-sec",
    "1",
];
/// How long a path may take to be seen failed, or to come back.
const SETTLE: Duration = Duration::from_secs(30);

/// `dpuctl -o json storage paths r0`: `(address, state, current)` per path.
fn agent_paths(bench: &Bench) -> Vec<(String, String, bool)> {
    let rows = bench.ctl_json(&["storage", "paths", "r0"]);
    rows.as_array()
        .into_iter()
        .flatten()
        .map(|r| {
            (
                r["address"].as_str().unwrap_or_default().to_owned(),
                r["state"].as_str().unwrap_or_default().to_owned(),
                r["current"].as_bool().unwrap_or_default(),
            )
        })
        .collect()
}

/// SPDK's own view on B: `trsvcid -> controller state` per `rpc.py bdev_nvme_get_controllers`.
fn spdk_controller_states(bench: &Bench) -> Vec<(String, String)> {
    crate::controller_paths(&bench.dpu, "r0")
        .iter()
        .map(|p| {
            (
                p["trid"]["trsvcid"].as_str().unwrap_or_default().to_owned(),
                p["state"].as_str().unwrap_or_default().to_owned(),
            )
        })
        .collect()
}

/// `rpc.py bdev_nvme_get_io_paths` on B: `(trsvcid, connected, current)` of r0n1's paths.
fn spdk_io_paths(bench: &Bench) -> Vec<(String, bool, bool)> {
    let all = bench
        .dpu
        .rpc("bdev_nvme_get_io_paths", &[])
        .unwrap_or_else(|e| panic!("{e}"));
    all["poll_groups"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|g| g["io_paths"].as_array().cloned().unwrap_or_default())
        .filter(|p| p["bdev_name"] == "r0n1")
        .map(|p: Value| {
            (
                p["transport"]["trsvcid"]
                    .as_str()
                    .unwrap_or_default()
                    .to_owned(),
                p["connected"].as_bool().unwrap_or_default(),
                p["current"].as_bool().unwrap_or_default(),
            )
        })
        .collect()
}

/// perf's time limit for a read that must survive the removal: the read is sized for
/// about 6 s, and a failover stalls it for the reconnect settings' few seconds.
const SURVIVING_READ_LIMIT_SECS: u64 = 40;
/// perf's time limit for the negative control's read, which must fail: it only has to
/// outlast the removal, and a read stuck on a lost path should not cost a minute.
const FAILING_READ_LIMIT_SECS: u64 = 10;

/// Reads `count` blocks through B's export in the background, within `limit_secs`.
fn read_in_background(
    port: u16,
    count: u64,
    limit_secs: u64,
) -> JoinHandle<Result<PerfReport, String>> {
    std::thread::spawn(move || perf_read_within(port, EXPORT_NQN, IO_SIZE, count, limit_secs))
}

/// How many reads take a few seconds here: one short timed read sizes the real one (the
/// size only has to outlast the listener's removal; whether it did is asserted).
fn reads_for_a_few_seconds(port: u16) -> u64 {
    let started = Instant::now();
    let probe = perf_read(port, EXPORT_NQN, IO_SIZE, 200).unwrap_or_else(|e| panic!("{e}"));
    let per_sec = probe.ios as f64 / started.elapsed().as_secs_f64().max(0.001);
    (per_sec * 6.0).clamp(300.0, 3_000_000.0) as u64
}

/// Starts a read, waits until it is under way, removes the listener on `victim`, and
/// returns the read's result with B's bytes read at the removal and at the end.
fn read_while_removing(
    bench: &Bench,
    export: u16,
    victim: u16,
    limit_secs: u64,
) -> (Result<PerfReport, String>, u64, u64) {
    let count = reads_for_a_few_seconds(export);
    let (before, _) = spdk_reads(&bench.dpu, "r0n1");
    let read = read_in_background(export, count, limit_secs);
    wait_until(Duration::from_secs(20), || {
        let (now, _) = spdk_reads(&bench.dpu, "r0n1");
        if now > before + 20 * IO_SIZE {
            Ok(())
        } else {
            Err(format!("B has read {} bytes of the new read", now - before))
        }
    })
    .unwrap_or_else(|e| panic!("{e}\n{}", bench.logs()));
    bench
        .remote
        .remove_listener(REMOTE_NQN, "127.0.0.1", victim)
        .unwrap_or_else(|e| panic!("{e}"));
    let (at_removal, _) = spdk_reads(&bench.dpu, "r0n1");
    assert!(
        !read.is_finished(),
        "the read ended before the listener went away: it proves nothing (count {count})"
    );
    let result = read.join().expect("perf thread");
    // Over a single path SPDK deletes the bdev with its last path: nothing read after.
    let at_end = match crate::bdev(&bench.dpu, "r0n1") {
        Some(_) => spdk_reads(&bench.dpu, "r0n1").0,
        None => at_removal,
    };
    (result, at_removal, at_end)
}

#[test]
fn a_read_survives_losing_one_of_two_paths_and_the_path_comes_back() {
    let mut bench = bench!("reconcile_interval = 1");
    let first = bench.remote.port();
    let second = free_tcp_port();
    bench
        .remote
        .add_listener(REMOTE_NQN, "127.0.0.1", second)
        .unwrap_or_else(|e| panic!("{e}"));
    let extra = format!("127.0.0.1:{second}");
    let mut args = vec!["--path", &extra, "--multipath-policy", "active-passive"];
    args.extend_from_slice(&RECONNECT);
    ok(&bench.attach("r0", "127.0.0.1", first, REMOTE_NQN, &args));

    // SPDK holds two controllers (paths) under r0, one per port, both enabled.
    let mut states = spdk_controller_states(&bench);
    states.sort();
    let mut want = vec![
        (first.to_string(), "enabled".to_owned()),
        (second.to_string(), "enabled".to_owned()),
    ];
    want.sort();
    assert_eq!(states, want, "{}", bench.logs());
    let policy =
        crate::bdev(&bench.dpu, "r0n1").expect("r0n1")["driver_specific"]["mp_policy"].clone();
    assert_eq!(policy, "active_passive");

    let export = export_bdev(&bench.dpu, "r0n1", EXPORT_NQN).unwrap_or_else(|e| panic!("{e}"));
    // A channel is open now (the export's), so SPDK lists both I/O paths.
    let io = spdk_io_paths(&bench);
    assert!(
        io.iter().any(|p| p.0 == first.to_string()) && io.iter().any(|p| p.0 == second.to_string()),
        "rpc.py bdev_nvme_get_io_paths: {io:?}"
    );
    let shown = agent_paths(&bench);
    assert_eq!(shown.len(), 2, "{shown:?}");
    assert!(shown.iter().all(|p| p.1 == "usable"), "{shown:?}");

    // Remove the listener of the path I/O uses now (active-passive: one current path).
    let read = read_in_background(export, 50, SURVIVING_READ_LIMIT_SECS);
    read.join().expect("perf").unwrap_or_else(|e| panic!("{e}"));
    let current: Vec<String> = spdk_io_paths(&bench)
        .into_iter()
        .filter(|p| p.2)
        .map(|p| p.0)
        .collect();
    let victim: u16 = current
        .first()
        .and_then(|p| p.parse().ok())
        .unwrap_or_else(|| {
            panic!(
                "no current path in rpc.py's io_paths: {:?}",
                spdk_io_paths(&bench)
            )
        });
    let survivor = if victim == first { second } else { first };
    let (result, at_removal, at_end) =
        read_while_removing(&bench, export, victim, SURVIVING_READ_LIMIT_SECS);
    let report =
        result.unwrap_or_else(|e| panic!("the read failed over two paths: {e}\n{}", bench.logs()));
    assert!(
        at_end > at_removal,
        "B read nothing after the listener went away ({at_removal} -> {at_end})"
    );
    eprintln!(
        "multipath: {} reads of {IO_SIZE} B completed, {} bytes after port {victim} went away",
        report.ios,
        at_end - at_removal
    );

    // SPDK deletes the victim after ctrl_loss_timeout_sec (rpc.py: no controller to that
    // port), so only the agent's reconciler can bring it back; the agent shows it missing
    // and the survivor usable.
    let victim_address = format!("127.0.0.1:{victim}");
    let survivor_address = format!("127.0.0.1:{survivor}");
    wait_until(SETTLE, || {
        let shown = agent_paths(&bench);
        let down = shown
            .iter()
            .find(|p| p.0 == victim_address)
            .is_some_and(|p| p.1 == "missing");
        let up = shown
            .iter()
            .find(|p| p.0 == survivor_address)
            .is_some_and(|p| p.1 == "usable");
        let spdk_victim = spdk_controller_states(&bench)
            .into_iter()
            .find(|p| p.0 == victim.to_string());
        let spdk_agrees = spdk_victim.is_none();
        if down && up && spdk_agrees {
            Ok(())
        } else {
            Err(format!("agent {shown:?}, SPDK victim {spdk_victim:?}"))
        }
    })
    .unwrap_or_else(|e| panic!("{e}\n{}", bench.logs()));
    let io = spdk_io_paths(&bench);
    assert!(
        !io.iter().any(|p| p.0 == victim.to_string() && p.1),
        "rpc.py still has the victim connected: {io:?}"
    );

    // The listener returns; so does the path: the reconciler attaches it again (the agent
    // logs each path it attaches).
    let attached_before = bench.agent.log().matches("attached path").count();
    bench
        .remote
        .add_listener(REMOTE_NQN, "127.0.0.1", victim)
        .unwrap_or_else(|e| panic!("{e}"));
    wait_until(SETTLE, || {
        let shown = agent_paths(&bench);
        let states = spdk_controller_states(&bench);
        let spdk_both = [first, second].iter().all(|port| {
            states
                .iter()
                .any(|p| p.0 == port.to_string() && p.1 == "enabled")
        });
        if shown.iter().all(|p| p.1 == "usable") && shown.len() == 2 && spdk_both {
            Ok(())
        } else {
            Err(format!("agent {shown:?}, SPDK {states:?}"))
        }
    })
    .unwrap_or_else(|e| panic!("{e}\n{}", bench.logs()));
    assert!(
        bench.agent.log().matches("attached path").count() > attached_before,
        "the path came back without the agent attaching it"
    );
    // And it carries I/O again: a read completes.
    perf_read(export, EXPORT_NQN, IO_SIZE, 50).unwrap_or_else(|e| panic!("{e}"));
    let _ = &mut bench;
}

/// The negative control: one path, the same removal mid-read; nothing to fail over to, so
/// the read fails and the path is shown down.
#[test]
fn a_read_over_a_single_path_fails_when_its_listener_goes_away() {
    let bench = bench!("reconcile_interval = 1");
    let port = bench.remote.port();
    ok(&bench.attach("r0", "127.0.0.1", port, REMOTE_NQN, &RECONNECT));
    let export = export_bdev(&bench.dpu, "r0n1", EXPORT_NQN).unwrap_or_else(|e| panic!("{e}"));
    let (result, _, _) = read_while_removing(&bench, export, port, FAILING_READ_LIMIT_SECS);
    assert!(
        result.is_err(),
        "a read over a single path survived losing it: the multipath proof would prove nothing"
    );
    let address = format!("127.0.0.1:{port}");
    wait_until(SETTLE, || {
        let shown = agent_paths(&bench);
        match shown.as_slice() {
            [(a, state, _)] if *a == address && state != "usable" => Ok(()),
            _ => Err(format!("{shown:?}")),
        }
    })
    .unwrap_or_else(|e| panic!("{e}\n{}", bench.logs()));
}

/// Bad extra paths are refused at the edge naming the field, nothing reaches SPDK; a path
/// added to an attached single-path remote is refused naming `extra_paths`.
#[test]
fn bad_paths_and_a_conflicting_second_path_are_refused_naming_the_field() {
    let bench = bench!();
    let port = bench.remote.port();
    let same = format!("127.0.0.1:{port}");
    let rows: [(Vec<String>, &str); 4] = [
        (vec!["--path".into(), same.clone()], "extra_paths[0].traddr"),
        (
            vec!["--path".into(), "[::1]:4420".into()],
            "extra_paths[0].traddr",
        ),
        (
            vec![
                "--path".into(),
                "127.0.0.2:4420".into(),
                "--path".into(),
                "127.0.0.2:4420".into(),
            ],
            "extra_paths[1].traddr",
        ),
        (
            (1..=4)
                .flat_map(|i| vec!["--path".to_owned(), format!("127.0.0.2:{}", 5000 + i)])
                .collect(),
            "extra_paths",
        ),
    ];
    for (extra, field) in rows {
        let extra: Vec<&str> = extra.iter().map(String::as_str).collect();
        let (code, message) = refused(&bench.attach("r0", "127.0.0.1", port, REMOTE_NQN, &extra));
        assert_eq!(code, "InvalidArgument", "{extra:?}: {message}");
        assert!(
            message.contains(field),
            "{extra:?}: {message} does not name {field}"
        );
    }
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    let status = runtime.block_on(async {
        let spec = v1::RemoteControllerSpec {
            multipath_policy: v1::MultipathPolicy::ActiveActive as i32,
            ..remote_spec(&bench)
        };
        bench
            .storage()
            .await
            .create_remote_controller(v1::CreateRemoteControllerRequest {
                remote_controller_id: "r0".to_owned(),
                spec: Some(spec),
                options: None,
            })
            .await
            .expect_err("a policy without extra paths")
    });
    assert_eq!(status.code(), Code::InvalidArgument, "{status:?}");
    assert!(status.message().contains("multipath_policy"), "{status:?}");
    assert!(
        controller_names(&bench.dpu).is_empty(),
        "a refusal reached SPDK"
    );

    ok(&bench.attach("r0", "127.0.0.1", port, REMOTE_NQN, &[]));
    let second = free_tcp_port();
    let extra = format!("127.0.0.1:{second}");
    let (code, message) =
        refused(&bench.attach("r0", "127.0.0.1", port, REMOTE_NQN, &["--path", &extra]));
    assert_eq!(code, "AlreadyExists", "{message}");
    assert!(message.contains("extra_paths"), "{message}");
    assert_eq!(
        crate::controller_paths(&bench.dpu, "r0").len(),
        1,
        "the refused path reached SPDK"
    );
}
