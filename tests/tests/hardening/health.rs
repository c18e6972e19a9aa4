//! `grpc.health.v1` tells a readiness probe the truth (issue 23, item 8): each service
//! follows the backends it needs — Storage follows SNAP (absent, hung, back, gone), Switch
//! follows ovsdb-server and ovs-vswitchd — while the whole server ("") stays SERVING. The
//! agent probes every 3 s, each probe bounded by the call timeout (SNAP: 5 s), so 15 s is
//! a generous bound for every transition; the old agent said SERVING throughout.

use std::time::{Duration, Instant};

use dpu_tests::fake_snap::FakeSnap;
use dpu_tests::fixture;
use dpu_tests::harness::{AgentOptions, AgentProcess};
use tonic::transport::Channel;
use tonic_health::pb::health_check_response::ServingStatus;
use tonic_health::pb::{health_client::HealthClient, HealthCheckRequest};

/// How long one health transition may take.
const BOUND: Duration = Duration::from_secs(15);

async fn status(health: &mut HealthClient<Channel>, service: &str) -> ServingStatus {
    let reply = health
        .check(HealthCheckRequest {
            service: service.to_owned(),
        })
        .await
        .unwrap_or_else(|e| panic!("health check {service:?}: {e}"))
        .into_inner();
    ServingStatus::try_from(reply.status).unwrap_or(ServingStatus::Unknown)
}

/// Polls until `service` reports `want`; panics with the agent's log past [`BOUND`].
async fn wait_for(
    health: &mut HealthClient<Channel>,
    agent: &AgentProcess,
    service: &str,
    want: ServingStatus,
    why: &str,
) -> Duration {
    let started = Instant::now();
    loop {
        let got = status(health, service).await;
        if got == want {
            return started.elapsed();
        }
        assert!(
            started.elapsed() < BOUND,
            "{service} still {got:?} {BOUND:?} after {why}, want {want:?}:\n{}",
            agent.log()
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

#[tokio::test]
async fn storage_health_follows_snap_absent_up_hung_and_gone() {
    let (dir, root) = fixture::bluefield3_tempdir();
    let options = AgentOptions::new(dir.path(), &root);
    // Nothing listens on the SNAP socket.
    let agent = AgentProcess::start(&options);
    let mut health = HealthClient::new(agent.channel().await);
    const STORAGE: &str = "dpu.v1.Storage";

    let took = wait_for(
        &mut health,
        &agent,
        STORAGE,
        ServingStatus::NotServing,
        "a start without SNAP",
    )
    .await;
    eprintln!("without SNAP: NOT_SERVING after {took:?}");
    // The agent itself, and the services that need only sysfs, serve.
    for service in ["", "dpu.v1.Inventory", "dpu.v1.Counters"] {
        assert_eq!(
            status(&mut health, service).await,
            ServingStatus::Serving,
            "{service:?}"
        );
    }
    assert_eq!(agent.health_check(STORAGE), Some(1), "the exec probe fails");

    let snap = FakeSnap::start(&options.snap_socket).expect("fake SNAP");
    let took = wait_for(
        &mut health,
        &agent,
        STORAGE,
        ServingStatus::Serving,
        "SNAP came up",
    )
    .await;
    eprintln!("SNAP up: SERVING after {took:?}");
    assert_eq!(
        agent.health_check(STORAGE),
        Some(0),
        "the exec probe passes"
    );

    // SNAP stops answering (as under SIGSTOP): each reply comes later than the agent's 5 s
    // call timeout.
    snap.delay_replies(Some(Duration::from_secs(7)));
    let took = wait_for(
        &mut health,
        &agent,
        STORAGE,
        ServingStatus::NotServing,
        "SNAP hung",
    )
    .await;
    eprintln!("SNAP hung: NOT_SERVING after {took:?}");
    snap.delay_replies(None);
    wait_for(
        &mut health,
        &agent,
        STORAGE,
        ServingStatus::Serving,
        "SNAP answered again",
    )
    .await;

    snap.stop();
    let took = wait_for(
        &mut health,
        &agent,
        STORAGE,
        ServingStatus::NotServing,
        "SNAP went away",
    )
    .await;
    eprintln!("SNAP gone: NOT_SERVING after {took:?}");
    assert_eq!(status(&mut health, "").await, ServingStatus::Serving);
    let log = agent.log();
    assert!(
        log.contains("health: SERVING -> NOT_SERVING") && log.contains(STORAGE),
        "the transition is logged with the service: {log}"
    );
}

#[tokio::test]
async fn switch_health_follows_the_ovs_daemons() {
    if let Some(reason) = dpu_tests::ovs::missing_prerequisite() {
        dpu_tests::skip!("{reason}");
    }
    let (dir, root) = fixture::bluefield3_tempdir();
    let daemons = dpu_tests::ovs::OvsDaemons::start().expect("OVS daemons");
    let options =
        AgentOptions::new(dir.path(), &root).with_ovs(&daemons.db_address(), daemons.rundir());
    let _snap = FakeSnap::start(&options.snap_socket).expect("fake SNAP");
    let agent = AgentProcess::start(&options);
    let mut health = HealthClient::new(agent.channel().await);
    const SWITCH: &str = "dpu.v1.Switch";

    wait_for(
        &mut health,
        &agent,
        SWITCH,
        ServingStatus::Serving,
        "a start with both OVS daemons",
    )
    .await;
    // ovsdb-server and ovs-vswitchd both go away.
    drop(daemons);
    let took = wait_for(
        &mut health,
        &agent,
        SWITCH,
        ServingStatus::NotServing,
        "OVS went away",
    )
    .await;
    eprintln!("OVS gone: NOT_SERVING after {took:?}");
    assert_eq!(
        status(&mut health, "dpu.v1.Storage").await,
        ServingStatus::Serving,
        "Storage does not need OVS"
    );
    assert_eq!(status(&mut health, "").await, ServingStatus::Serving);
}
