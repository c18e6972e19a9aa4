//! Bounded work per request (issue 23, items 1 and 6): a counters request is refused
//! before the agent does work its size would multiply (too many selectors, repeats, an
//! answer over the response limit), a Watch whose client stops reading is closed instead
//! of buffering, and an over-long value is echoed cut, in a short message that still
//! names the field, so stock clients see INVALID_ARGUMENT rather than a header-size
//! error.
//!
//! Memory is asserted as a bound on the agent's peak RSS (`VmHWM`) growth, not as a
//! timing; the measured figures are printed.

use std::time::Duration;

use dpu_proto::v1::switch_client::SwitchClient;
use dpu_proto::v1::{self, counter_selector::Selector, counters_client::CountersClient};
use dpu_proto::v1::{inventory_client::InventoryClient, storage_client::StorageClient};
use hyper_util::rt::TokioIo;
use prost::Message as _;
use tonic::transport::{Channel, Endpoint};
use tonic::Code;

use crate::Lab;

/// The peak RSS growth these requests may cause: measured at 3-4 MiB (four requests and
/// two Watch calls at once, a debug build). Before the bounds, one request of 20,000
/// repeated selectors took the agent from 22 to 332 MiB on this two-netdev fixture, and
/// past 1 GB on a BlueField with more netdevs.
const MAX_PEAK_GROWTH_KIB: u64 = 16 * 1024;

/// What a client may receive as an error message: far under the 8-16 KiB that stock
/// gRPC clients accept for a header block.
const MAX_MESSAGE: usize = 4096;

fn status_kib(pid: u32, key: &str) -> u64 {
    dpu_tests::harness::proc_status_kib(pid, key)
        .unwrap_or_else(|| panic!("no {key} for pid {pid}"))
}

fn netdev(ifname: &str) -> v1::CounterSelector {
    v1::CounterSelector {
        selector: Some(Selector::Netdev(v1::NetdevSelector {
            ifname: ifname.to_owned(),
        })),
    }
}

fn interval_ms(ms: i32) -> Option<dpu_proto::pbjson_types::Duration> {
    Some(dpu_proto::pbjson_types::Duration {
        seconds: 0,
        nanos: ms * 1_000_000,
    })
}

/// A refusal that names the `selectors` field, with a code that says why.
fn assert_refused(what: &str, result: Result<(), tonic::Status>) {
    let status = result.expect_err(what);
    assert!(
        matches!(
            status.code(),
            Code::InvalidArgument | Code::ResourceExhausted
        ),
        "{what}: {:?}: {}",
        status.code(),
        status.message()
    );
    assert!(
        status.message().starts_with("selectors"),
        "{what}: {}",
        status.message()
    );
    assert!(status.message().len() < MAX_MESSAGE, "{what}");
}

#[tokio::test]
async fn the_amplification_request_is_refused_before_the_agent_grows() {
    let lab = Lab::start();
    let pid = lab.agent.pid();
    let mut counters = CountersClient::new(lab.agent.channel().await);
    // The agent's steady state: one ordinary snapshot of everything, then the peak.
    counters
        .snapshot(v1::SnapshotRequest::default())
        .await
        .expect("ordinary snapshot");
    let before = status_kib(pid, "VmHWM:");

    // 20,000 x {netdev:{}}: the 80 KB request the red team sent.
    let repeated = v1::SnapshotRequest {
        selectors: vec![netdev(""); 20_000],
    };
    assert_eq!(repeated.encode_to_vec(), b"\x0a\x02\x12\x00".repeat(20_000));
    // 20,000 distinct names (each a source error before the bounds).
    let distinct = v1::SnapshotRequest {
        selectors: (0..20_000).map(|i| netdev(&format!("n{i}"))).collect(),
    };
    let mut calls = tokio::task::JoinSet::new();
    // Four at once, as in the report, and the same selectors as Watch streams.
    for request in [&repeated, &repeated, &repeated, &distinct] {
        let (mut client, request) = (counters.clone(), request.clone());
        calls.spawn(async move {
            let result = client.snapshot(request).await.map(drop);
            assert_refused("Snapshot", result);
        });
    }
    for selectors in [repeated.selectors.clone(), distinct.selectors.clone()] {
        let mut client = counters.clone();
        calls.spawn(async move {
            let result = client
                .watch(v1::WatchRequest {
                    selectors,
                    interval: interval_ms(100),
                    max_snapshots: 0,
                })
                .await
                .map(drop);
            assert_refused("Watch", result);
        });
    }
    while let Some(done) = calls.join_next().await {
        done.expect("call task");
    }

    let after = status_kib(pid, "VmHWM:");
    let growth = after.saturating_sub(before);
    eprintln!("agent peak RSS: {before} KiB before, {after} KiB after (+{growth} KiB)");
    assert!(
        growth < MAX_PEAK_GROWTH_KIB,
        "peak RSS grew by {growth} KiB (from {before} to {after} KiB)"
    );
    // Still serving, with the same answer as before.
    counters
        .snapshot(v1::SnapshotRequest::default())
        .await
        .expect("snapshot after the refusals");
}

#[tokio::test]
async fn repeated_selectors_are_read_once() {
    let lab = Lab::start();
    let mut counters = CountersClient::new(lab.agent.channel().await);
    let once = counters
        .snapshot(v1::SnapshotRequest {
            selectors: vec![netdev(""), netdev("p0")],
        })
        .await
        .expect("one of each")
        .into_inner();
    assert!(!once.samples.is_empty());
    // At the cap, every selector repeated: the same answer, not 128 copies of it.
    let mut selectors = Vec::new();
    for _ in 0..128 {
        selectors.extend([netdev(""), netdev("p0")]);
    }
    let repeated = counters
        .snapshot(v1::SnapshotRequest { selectors })
        .await
        .expect("256 selectors are accepted")
        .into_inner();
    assert_eq!(repeated.samples.len(), once.samples.len());
    assert_eq!(repeated.errors.len(), once.errors.len());
    // One over the cap is refused, naming the field and the limit.
    let status = counters
        .snapshot(v1::SnapshotRequest {
            selectors: vec![netdev("p0"); 257],
        })
        .await
        .expect_err("257 selectors");
    assert_eq!(status.code(), Code::InvalidArgument);
    assert!(
        status
            .message()
            .starts_with("selectors: 257 selectors, at most 256"),
        "{}",
        status.message()
    );
}

/// A channel whose HTTP/2 windows are the protocol's minimum, so a client that does not
/// read stops the agent's sends after 64 KiB instead of the client library's megabytes.
async fn small_window_channel(lab: &Lab) -> Channel {
    let path = lab.agent.socket().to_owned();
    Endpoint::from_static("http://agent.invalid")
        .initial_stream_window_size(65_535)
        .initial_connection_window_size(65_535)
        .connect_with_connector(tower::service_fn(move |_| {
            let path = path.clone();
            async move {
                tokio::net::UnixStream::connect(path)
                    .await
                    .map(TokioIo::new)
            }
        }))
        .await
        .expect("connect to agent socket")
}

#[tokio::test]
async fn a_watch_whose_client_stops_reading_is_closed_with_resource_exhausted() {
    let lab = Lab::start();
    let mut counters = CountersClient::new(small_window_channel(&lab).await);
    let mut stream = counters
        .watch(v1::WatchRequest {
            selectors: Vec::new(),
            interval: interval_ms(100),
            max_snapshots: 10_000,
        })
        .await
        .expect("Watch")
        .into_inner();
    // Read nothing: the windows fill, the agent's queue fills, and after its stall
    // timeout (10 s) the agent ends the stream.
    tokio::time::sleep(Duration::from_secs(14)).await;
    let (mut received, mut ended) = (0usize, None);
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while ended.is_none() {
        match tokio::time::timeout_at(deadline, stream.message()).await {
            Err(_) => break,
            Ok(Ok(Some(_))) => received += 1,
            Ok(Ok(None)) => ended = Some(Ok(())),
            Ok(Err(status)) => ended = Some(Err(status)),
        }
    }
    let status = match ended {
        Some(Err(status)) => status,
        Some(Ok(())) => panic!("the watch ended cleanly after {received} snapshots"),
        None => {
            panic!("the watch kept streaming to a client that did not read ({received} snapshots)")
        }
    };
    assert_eq!(
        status.code(),
        Code::ResourceExhausted,
        "{}",
        status.message()
    );
    assert!(
        status.message().contains("not reading"),
        "{}",
        status.message()
    );
    eprintln!(
        "closed after {received} queued snapshots: {}",
        status.message()
    );
    // The agent serves as before.
    CountersClient::new(lab.agent.channel().await)
        .snapshot(v1::SnapshotRequest::default())
        .await
        .expect("snapshot after the closed watch");
}

/// An INVALID_ARGUMENT whose message starts with `field:`, is short, and says how long the
/// value was.
fn assert_cut(what: &str, field: &str, result: Result<(), tonic::Status>) {
    let status = result.expect_err(what);
    assert_eq!(
        status.code(),
        Code::InvalidArgument,
        "{what}: {}",
        &status.message()[..status.message().len().min(200)]
    );
    let message = status.message();
    assert!(
        message.starts_with(&format!("{field}:")),
        "{what}: {}",
        &message[..message.len().min(200)]
    );
    assert!(
        message.len() < MAX_MESSAGE,
        "{what}: a {} byte message",
        message.len()
    );
    assert!(message.contains(" bytes)"), "{what}: {message}");
}

#[tokio::test]
async fn a_200_kb_value_comes_back_invalid_argument_in_a_short_message() {
    let lab = Lab::start();
    let channel = lab.agent.channel().await;
    let huge = "a".repeat(200_000);
    let mut inventory = InventoryClient::new(channel.clone());
    let mut counters = CountersClient::new(channel.clone());
    let mut switch = SwitchClient::new(channel.clone());
    let mut storage = StorageClient::new(channel);

    let result = inventory
        .get_netdev(v1::GetNetdevRequest {
            name: format!("netdevs/{huge}"),
        })
        .await
        .map(drop);
    assert_cut("GetNetdev", "name", result);
    let result = counters
        .snapshot(v1::SnapshotRequest {
            selectors: vec![netdev(&huge)],
        })
        .await
        .map(drop);
    assert_cut("Snapshot netdev", "selectors[0]", result);
    let result = counters
        .snapshot(v1::SnapshotRequest {
            selectors: vec![v1::CounterSelector {
                selector: Some(Selector::Tc(v1::TcSelector {
                    ifname: huge.clone(),
                })),
            }],
        })
        .await
        .map(drop);
    assert_cut("Snapshot tc", "selectors[0]", result);
    let result = switch
        .create_bridge(v1::CreateBridgeRequest {
            bridge_id: huge.clone(),
            ..Default::default()
        })
        .await
        .map(drop);
    assert_cut("CreateBridge", "bridge_id", result);
    let result = storage
        .create_remote_controller(v1::CreateRemoteControllerRequest {
            remote_controller_id: huge.clone(),
            spec: None,
            options: None,
        })
        .await
        .map(drop);
    assert_cut("CreateRemoteController", "remote_controller_id", result);
    let result = storage
        .get_exposure(v1::GetExposureRequest {
            name: format!("exposures/{huge}"),
        })
        .await
        .map(drop);
    assert_cut("GetExposure", "name", result);
}
