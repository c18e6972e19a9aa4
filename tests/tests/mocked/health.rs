//! gRPC health and `dpuctl dpu health`, with the negative control: a missing SNAP makes
//! the agent report the backend and `dpuctl` exit 1.

use dpu_tests::fixture;
use dpu_tests::harness::{dpuctl, AgentOptions, AgentProcess};
use tonic_health::pb::health_check_response::ServingStatus;
use tonic_health::pb::{health_client::HealthClient, HealthCheckRequest};

use crate::Lab;

#[tokio::test]
async fn every_service_reports_serving() {
    let lab = Lab::start();
    let mut client = HealthClient::new(lab.agent.channel().await);
    for service in std::iter::once("").chain(dpu_proto::SERVICE_NAMES) {
        let reply = client
            .check(HealthCheckRequest {
                service: service.to_owned(),
            })
            .await
            .unwrap_or_else(|e| panic!("health check {service:?}: {e}"))
            .into_inner();
        assert_eq!(reply.status, ServingStatus::Serving as i32, "{service:?}");
    }
    let unknown = client
        .check(HealthCheckRequest {
            service: "dpu.v1.Nope".to_owned(),
        })
        .await
        .expect_err("unknown service");
    assert_eq!(unknown.code(), tonic::Code::NotFound);
}

#[test]
fn dpuctl_health_is_healthy_with_snap_and_reports_its_version() {
    let lab = Lab::start();
    let out = dpuctl(&[
        "--agent",
        &lab.agent.endpoint(),
        "-o",
        "json",
        "dpu",
        "health",
    ]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "stdout: {stdout}\nstderr: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report: serde_json::Value = serde_json::from_str(&stdout).expect("JSON output");
    assert_eq!(report["healthy"], true);
    let snap = report["components"]
        .as_array()
        .expect("components")
        .iter()
        .find(|c| c["component"] == "backend snap")
        .expect("snap backend row");
    assert_eq!(snap["state"], "ready");
    assert!(
        // The version the fake reports, as a real spdk_tgt v24.01 does.
        snap["detail"]
            .as_str()
            .unwrap_or("")
            .contains("SPDK v24.01"),
        "{snap}"
    );
    // The agent really asked SNAP, over the real wire protocol.
    assert!(lab
        .snap
        .requests()
        .iter()
        .any(|(m, _)| m == "spdk_get_version"));
}

#[test]
fn dpuctl_health_fails_when_snap_is_missing() {
    let (dir, root) = fixture::bluefield3_tempdir();
    let options = AgentOptions::new(dir.path(), &root);
    // No FakeSnap: nothing listens on the SNAP socket.
    let agent = AgentProcess::start(&options);
    let out = dpuctl(&["--agent", &agent.endpoint(), "dpu", "health"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    assert!(stdout.contains("backend snap"), "{stdout}");
    assert!(stdout.contains("unavailable"), "{stdout}");
    assert!(stdout.contains("UNHEALTHY"), "{stdout}");
    drop(agent);
}
