//! `Counters.Snapshot` and `Counters.Watch` against the fixture tree: exact values in
//! stated units, deltas between snapshots, resets flagged (never a huge delta), bounded
//! and cancellable streams, and `dpuctl dpu counters` on top.

use std::io::{BufRead as _, BufReader};
use std::process::{Command, Stdio};

use dpu_proto::v1::{self, counter_selector::Selector, counters_client::CountersClient};
use dpu_tests::fixture;
use dpu_tests::harness::{bin_dir, dpuctl};
use tokio_stream::StreamExt as _;

use crate::Lab;

const PORT: &str = "rdmaDevices/mlx5_0/ports/1";

fn rdma(device: &str, port: u32) -> v1::CounterSelector {
    v1::CounterSelector {
        selector: Some(Selector::Rdma(v1::RdmaSelector {
            device: device.to_owned(),
            port,
        })),
    }
}

fn sample<'a>(s: &'a v1::CounterSnapshot, object: &str, counter: &str) -> &'a v1::CounterSample {
    s.samples
        .iter()
        .find(|x| x.object == object && x.counter == counter)
        .unwrap_or_else(|| panic!("no {object} {counter} in {:#?}", s.samples))
}

fn interval(ms: i32) -> Option<dpu_proto::pbjson_types::Duration> {
    Some(dpu_proto::pbjson_types::Duration {
        seconds: 0,
        nanos: ms * 1_000_000,
    })
}

#[tokio::test]
async fn a_snapshot_reports_fixture_values_in_bytes_with_units_and_timing() {
    let lab = Lab::start();
    let snap = CountersClient::new(lab.agent.channel().await)
        .snapshot(v1::SnapshotRequest {
            selectors: vec![rdma("mlx5_0", 1)],
        })
        .await
        .expect("Snapshot")
        .into_inner();
    assert!(snap.errors.is_empty(), "{:?}", snap.errors);
    let data = sample(&snap, PORT, "port_rcv_data");
    // The fixture holds 3141592653 four-byte words.
    assert_eq!(data.value, 3_141_592_653 * 4);
    assert_eq!((data.scale, data.unit), (4, v1::CounterUnit::Bytes as i32));
    assert_eq!(data.source, "rdma");
    let hw = sample(&snap, PORT, "rx_write_requests");
    assert_eq!((hw.source.as_str(), hw.value), ("rdma_hw", 81_920));
    assert!(snap.monotonic_end_ns >= snap.monotonic_start_ns);
    // The window is the reads, and the report says where it went.
    let windows: Vec<&str> = snap.windows.iter().map(|w| w.source.as_str()).collect();
    assert_eq!(windows, ["rdma"], "{:?}", snap.windows);
    assert_eq!(
        (snap.windows[0].start_ns, snap.windows[0].end_ns),
        (snap.monotonic_start_ns, snap.monotonic_end_ns)
    );
    assert!(snap.attempts >= 1);
    assert_eq!(snap.boot_id, "5b0e4f8e-6a59-4e33-9a38-0b8c2d3c1f11");
    assert!(snap.taken_at.is_some());
}

#[tokio::test]
async fn the_default_snapshot_covers_rdma_netdevs_and_nvme_disks() {
    let lab = Lab::start();
    let snap = CountersClient::new(lab.agent.channel().await)
        .snapshot(v1::SnapshotRequest::default())
        .await
        .expect("Snapshot")
        .into_inner();
    let sources: std::collections::BTreeSet<&str> =
        snap.samples.iter().map(|s| s.source.as_str()).collect();
    for want in ["rdma", "rdma_hw", "netdev", "block"] {
        assert!(sources.contains(want), "{want} missing from {sources:?}");
    }
    assert!(snap.errors.is_empty(), "{:?}", snap.errors);
    let rx = sample(&snap, "netdevs/p0", "rx_bytes");
    assert_eq!(
        (rx.value, rx.unit),
        (1_000_000_000, v1::CounterUnit::Bytes as i32)
    );
    let read = sample(&snap, "blockDevices/nvme0n1", "read_bytes");
    assert_eq!(read.value, 2_457_600 * 512);
}

#[tokio::test]
async fn a_missing_device_is_a_source_error_and_a_bad_name_is_rejected() {
    let lab = Lab::start();
    let mut client = CountersClient::new(lab.agent.channel().await);
    let snap = client
        .snapshot(v1::SnapshotRequest {
            selectors: vec![rdma("mlx5_7", 0), rdma("mlx5_0", 1)],
        })
        .await
        .expect("Snapshot")
        .into_inner();
    assert_eq!(snap.errors.len(), 1, "{:?}", snap.errors);
    assert!(
        snap.errors[0].message.contains("mlx5_7"),
        "{:?}",
        snap.errors
    );
    assert!(
        snap.samples.iter().all(|s| !s.object.contains("mlx5_7")),
        "no zeros invented for a missing device"
    );
    assert!(
        snap.samples.iter().any(|s| s.object == PORT),
        "the good selector still read"
    );

    let err = client
        .snapshot(v1::SnapshotRequest {
            selectors: vec![rdma("../../etc", 1)],
        })
        .await
        .expect_err("path escape");
    assert_eq!(err.code(), tonic::Code::InvalidArgument, "{err:?}");
}

#[tokio::test]
async fn watch_streams_deltas_and_stops_after_max_snapshots() {
    let lab = Lab::start();
    let mut stream = CountersClient::new(lab.agent.channel().await)
        .watch(v1::WatchRequest {
            selectors: vec![rdma("mlx5_0", 1)],
            interval: interval(100),
            max_snapshots: 30,
        })
        .await
        .expect("Watch")
        .into_inner();
    let first = stream.next().await.expect("first").expect("ok");
    let base = sample(&first, PORT, "port_xmit_data").value;
    // 1000 more words of "traffic" after the first snapshot.
    fixture::set_counter(
        &lab.root,
        "mlx5_0",
        1,
        "port_xmit_data",
        2_718_281_828 + 1000,
    )
    .expect("set counter");
    let mut seen = Vec::new();
    let mut count = 1;
    while let Some(item) = stream.next().await {
        let snap = item.expect("ok");
        count += 1;
        let value = sample(&snap, PORT, "port_xmit_data").value;
        seen.push(value);
        assert!(snap.monotonic_start_ns > first.monotonic_start_ns);
    }
    assert_eq!(count, 30, "the stream ends after max_snapshots");
    assert!(
        seen.contains(&(base + 4000)),
        "delta of 1000 words = 4000 bytes: {seen:?}"
    );
}

#[tokio::test]
async fn a_cancelled_watch_frees_the_agent_for_other_calls() {
    let lab = Lab::start();
    let channel = lab.agent.channel().await;
    for _ in 0..3 {
        let mut stream = CountersClient::new(channel.clone())
            .watch(v1::WatchRequest {
                selectors: vec![rdma("mlx5_0", 1)],
                interval: interval(100),
                max_snapshots: 0,
            })
            .await
            .expect("Watch")
            .into_inner();
        stream.next().await.expect("one").expect("ok");
        drop(stream);
    }
    let snap = CountersClient::new(channel)
        .snapshot(v1::SnapshotRequest {
            selectors: vec![rdma("mlx5_0", 1)],
        })
        .await
        .expect("Snapshot after cancelled watches");
    assert!(!snap.into_inner().samples.is_empty());
}

#[test]
fn dpuctl_counters_prints_json_and_a_table() {
    let lab = Lab::start();
    let agent = lab.agent.endpoint();
    let out = dpuctl(&[
        "--agent",
        &agent,
        "-o",
        "json",
        "dpu",
        "counters",
        "-s",
        "rdma:mlx5_0/1",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    let found = json["samples"]
        .as_array()
        .expect("samples")
        .iter()
        .find(|s| s["counter"] == "port_rcv_data")
        .expect("port_rcv_data");
    // proto3 JSON prints uint64 as a string.
    assert_eq!(found["value"], "12566370612");

    let out = dpuctl(&[
        "--agent",
        &agent,
        "dpu",
        "counters",
        "-s",
        "block:nvme0n1",
        "--nonzero",
    ]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    assert!(
        text.contains("read_bytes") && text.contains("1,258,291,200"),
        "{text}"
    );

    let out = dpuctl(&["--agent", &agent, "dpu", "counters", "-s", "rdma:../x"]);
    assert_eq!(
        out.status.code(),
        Some(2),
        "a bad selector is a usage error"
    );
    assert!(String::from_utf8_lossy(&out.stderr).contains("rdma:../x"));
}

#[test]
fn dpuctl_watch_flags_a_counter_reset_and_exits_inconclusive() {
    let lab = Lab::start();
    let mut child = Command::new(bin_dir().join("dpuctl"))
        .args(["--agent", &lab.agent.endpoint(), "dpu", "counters"])
        .args(["-s", "rdma:mlx5_0/1", "--watch", "0.3", "--count", "4"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn dpuctl");
    let stdout = child.stdout.take().expect("stdout");
    let mut lines = BufReader::new(stdout).lines();
    let mut text = String::new();
    // Reset the counter only after the baseline is taken, so the reset lands inside an
    // interval whatever the machine's speed.
    for line in lines.by_ref() {
        let line = line.expect("line");
        text.push_str(&line);
        text.push('\n');
        if line.starts_with("baseline:") {
            fixture::set_counter(&lab.root, "mlx5_0", 1, "port_rcv_data", 7).expect("reset");
            break;
        }
    }
    for line in lines {
        text.push_str(&line.expect("line"));
        text.push('\n');
    }
    let status = child.wait().expect("wait");
    assert!(text.contains("RESET"), "{text}");
    assert_eq!(
        status.code(),
        Some(3),
        "a reset makes the watch inconclusive\n{text}"
    );
}

fn netdev(ifname: &str) -> v1::CounterSelector {
    v1::CounterSelector {
        selector: Some(Selector::Netdev(v1::NetdevSelector {
            ifname: ifname.to_owned(),
        })),
    }
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Issue 35: a selector that names nothing fails the run (exit 2) with one line that names
/// it and what exists, alone, beside a good selector, with `-o json` and with `--watch`;
/// the good selector alone is the control.
#[test]
fn dpuctl_a_selector_that_names_nothing_is_a_usage_error_that_lists_what_exists() {
    let lab = Lab::start();
    let agent = lab.agent.endpoint();
    let counters = |extra: &[&str]| {
        let mut args = vec!["--agent", agent.as_str()];
        args.extend_from_slice(extra);
        dpuctl(&args)
    };

    let out = counters(&["dpu", "counters", "-s", "netdev:nosuch"]);
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(2), "{stdout}\n{stderr}");
    assert!(stderr.contains("-s netdev:nosuch"), "{stderr}");
    assert!(
        stderr.contains("netdev has: ") && stderr.contains("pf0hpf") && stderr.contains("p0"),
        "what exists is listed: {stderr}"
    );
    assert_eq!(stderr.lines().count(), 1, "one error line: {stderr}");
    assert!(stdout.is_empty(), "no empty table: {stdout}");

    // tc under the agent's sys root: an interface that is not there is the same typo,
    // while one that is there is only unreadable (tc needs netlink): `not read:`, exit 0.
    let out = counters(&["dpu", "counters", "-s", "tc:nosuch"]);
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(2), "{stdout}\n{stderr}");
    assert!(
        stderr.contains("-s tc:nosuch names nothing") && stderr.contains("pf0hpf"),
        "{stderr}"
    );
    let out = counters(&["dpu", "counters", "-s", "tc:pf0hpf"]);
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    assert!(
        format!("{stdout}{stderr}").contains("not read:"),
        "{stdout}\n{stderr}"
    );

    // A typo among good selectors still fails the script, and nothing else is printed.
    let out = counters(&["dpu", "counters", "-s", "netdev:p0", "-s", "netdev:nosuch"]);
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(2), "{stdout}\n{stderr}");
    assert!(stderr.contains("-s netdev:nosuch"), "{stderr}");
    assert!(!stderr.contains("-s netdev:p0"), "p0 matched: {stderr}");
    assert!(stdout.is_empty(), "{stdout}");

    // JSON: the same exit code, the error on stderr, stdout left empty.
    let out = counters(&["-o", "json", "dpu", "counters", "-s", "netdev:nosuch"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("-s netdev:nosuch"));
    assert!(out.stdout.is_empty(), "{}", text(&out.stdout));

    // A watch decides on its first snapshot, before it prints anything.
    let watch = [
        "dpu",
        "counters",
        "-s",
        "rdma:mlx5_0/9",
        "--watch",
        "0.2",
        "--count",
        "3",
    ];
    let out = counters(&watch);
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(2), "{stdout}\n{stderr}");
    assert!(
        stderr.contains("-s rdma:mlx5_0/9") && stderr.contains("mlx5_0/1"),
        "{stderr}"
    );
    assert!(stdout.is_empty(), "no baseline printed: {stdout}");

    // The control: the good selector alone is a table and exit 0.
    let out = counters(&["dpu", "counters", "-s", "netdev:p0"]);
    let stdout = text(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{stdout}\n{}",
        text(&out.stderr)
    );
    assert!(
        stdout.contains("netdevs/p0") && stdout.contains("rx_bytes"),
        "{stdout}"
    );
    assert!(!stdout.contains("not read:"), "{stdout}");
}

/// An object that exists but whose counters cannot be read stays what it was: a
/// `not read:` line and exit 0, never a usage error. The agent says which is which on the
/// wire (`SourceError.kind`). The fixture's `statistics/` becomes a dangling link, so the
/// read fails with ENOENT inside an interface that is there (chmod would not stop root).
#[tokio::test]
async fn an_object_whose_counters_cannot_be_read_is_not_read_not_a_usage_error() {
    let lab = Lab::start();
    let stats = lab.root.join("sys/class/net/pf0vf0/statistics");
    std::fs::remove_dir_all(&stats).expect("remove statistics");
    std::os::unix::fs::symlink(lab.root.join("gone"), &stats).expect("dangling link");

    let snap = CountersClient::new(lab.agent.channel().await)
        .snapshot(v1::SnapshotRequest {
            selectors: vec![netdev("pf0vf0"), netdev("nosuch")],
        })
        .await
        .expect("Snapshot")
        .into_inner();
    let kinds: Vec<(String, i32)> = snap
        .errors
        .iter()
        .map(|e| (e.message.clone(), e.kind))
        .collect();
    assert_eq!(snap.errors.len(), 2, "{kinds:?}");
    let kind_of = |ifname: &str| {
        snap.errors
            .iter()
            .find(|e| e.selector == Some(netdev(ifname)))
            .unwrap_or_else(|| panic!("no error for {ifname}: {kinds:?}"))
            .kind
    };
    assert_eq!(
        kind_of("pf0vf0"),
        v1::SourceErrorKind::Unreadable as i32,
        "{kinds:?}"
    );
    assert_eq!(
        kind_of("nosuch"),
        v1::SourceErrorKind::NotFound as i32,
        "{kinds:?}"
    );

    let out = dpuctl(&[
        "--agent",
        &lab.agent.endpoint(),
        "dpu",
        "counters",
        "-s",
        "netdev:pf0vf0",
        "-s",
        "netdev:p0",
    ]);
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(
        out.status.code(),
        Some(0),
        "a failed read is not a usage error\n{stdout}\n{stderr}"
    );
    assert!(
        stdout
            .lines()
            .any(|l| l.starts_with("not read:") && l.contains("pf0vf0")),
        "{stdout}"
    );
    assert!(
        stdout.contains("netdevs/p0"),
        "the good one still read: {stdout}"
    );
}
