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
