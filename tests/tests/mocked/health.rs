//! gRPC health and `dpuctl dpu health`, with the negative control: a missing SNAP makes
//! the agent report the backend and `dpuctl` exit 1.

use dpu_tests::fixture;
use dpu_tests::harness::{dpuctl, AgentOptions, AgentProcess};
use tonic_health::pb::health_check_response::ServingStatus;
use tonic_health::pb::{health_client::HealthClient, HealthCheckRequest};

use crate::Lab;

/// Each service follows its backends from the first answer on: SNAP and the fixture
/// sysfs are there, OVS is disabled in this tier (so Switch is NOT_SERVING).
#[tokio::test]
async fn every_service_reports_the_health_of_its_backends() {
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
        let expected = if service == "dpu.v1.Switch" {
            ServingStatus::NotServing
        } else {
            ServingStatus::Serving
        };
        assert_eq!(reply.status, expected as i32, "{service:?}");
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
    let row = |name: &str| {
        report["components"]
            .as_array()
            .expect("components")
            .iter()
            .find(|c| c["component"] == name)
            .unwrap_or_else(|| panic!("{name} row: {report}"))
            .clone()
    };
    // OVS is disabled in this tier: Switch is NOT_SERVING on purpose, not a fault.
    let switch = row("dpu.v1.Switch");
    assert_eq!(
        (&switch["state"], &switch["healthy"]),
        (&"disabled".into(), &true.into()),
        "{switch}"
    );
    assert_eq!(row("dpu.v1.Storage")["state"], "serving");
    let snap = row("backend snap");
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
    // The Storage service's own health says so too.
    assert!(
        stdout
            .lines()
            .any(|l| l.contains("dpu.v1.Storage") && l.contains("not_serving")),
        "{stdout}"
    );
    drop(agent);
}
