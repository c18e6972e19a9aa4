//! The `readiness` health service and the plaintext health-only listener (`[health]`),
//! what the DaemonSet's native kubelet `grpc:` probes ask: `readiness` is SERVING only
//! while every required service is (by default each whose backend is enabled; OVS is
//! disabled in this tier, so Storage, Inventory and Counters), and the health-only port
//! answers the same statuses while refusing everything but `Health/Check`.

use std::process::Command;
use std::time::{Duration, Instant};

use dpu_proto::v1::inventory_client::InventoryClient;
use dpu_tests::fixture;
use dpu_tests::harness::{free_tcp_port, AgentOptions, AgentProcess};
use tokio_stream::StreamExt as _;
use tonic::transport::Channel;
use tonic_health::pb::health_check_response::ServingStatus;
use tonic_health::pb::{health_client::HealthClient, HealthCheckRequest};
use tonic_reflection::pb::v1 as reflection;

use crate::Lab;

const READINESS: &str = "readiness";

/// How long the health-only port may take to accept after the agent's socket does (it
/// is bound first, so at once; the bound only absorbs a loaded machine).
const CONNECT_BOUND: Duration = Duration::from_secs(10);

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

/// A plaintext channel to `127.0.0.1:{port}`, as kubelet's probe dials it.
async fn plaintext_channel(port: u16, agent: &AgentProcess) -> Channel {
    let endpoint = tonic::transport::Endpoint::from_shared(format!("http://127.0.0.1:{port}"))
        .expect("endpoint");
    let started = Instant::now();
    loop {
        match endpoint.connect().await {
            Ok(channel) => return channel,
            Err(e) => assert!(
                started.elapsed() < CONNECT_BOUND,
                "health-only port {port} not accepting after {CONNECT_BOUND:?}: {e}\n{}",
                agent.log()
            ),
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// An agent without SNAP (nothing listens on its socket), OVS disabled, with the
/// health-only listener on a free loopback port and `extra` TOML; and that port.
fn agent_without_snap(extra: &str) -> (AgentProcess, u16, tempfile::TempDir) {
    let (dir, root) = fixture::bluefield3_tempdir();
    let port = free_tcp_port();
    let mut options = AgentOptions::new(dir.path(), &root);
    options.config_toml = format!("[health]\nlisten = \"tcp:127.0.0.1:{port}\"\n{extra}");
    (AgentProcess::start(&options), port, dir)
}

#[tokio::test]
async fn readiness_is_not_serving_without_snap_while_the_server_is_alive() {
    let (agent, port, _dir) = agent_without_snap("");
    let mut health = HealthClient::new(agent.channel().await);
    // The first answer is already true: the first probe round runs before serving.
    assert_eq!(
        status(&mut health, READINESS).await,
        ServingStatus::NotServing
    );
    assert_eq!(status(&mut health, "").await, ServingStatus::Serving);
    assert_eq!(
        status(&mut health, "dpu.v1.Inventory").await,
        ServingStatus::Serving
    );
    assert_eq!(
        agent.health_check(READINESS),
        Some(1),
        "the exec probe fails"
    );
    assert_eq!(agent.health_check(""), Some(0), "the liveness probe passes");

    // The same statuses on the plaintext health-only port.
    let mut plain = HealthClient::new(plaintext_channel(port, &agent).await);
    assert_eq!(
        status(&mut plain, READINESS).await,
        ServingStatus::NotServing
    );
    assert_eq!(status(&mut plain, "").await, ServingStatus::Serving);

    // The change is logged with the required service that is down and why.
    let log = agent.log();
    assert!(
        log.lines().any(|l| l.contains("health: NOT_SERVING")
            && l.contains(READINESS)
            && l.contains("dpu.v1.Storage NOT_SERVING: SNAP")),
        "readiness's reason names Storage and SNAP:\n{log}"
    );
}

#[tokio::test]
async fn an_explicit_list_overrides_the_default() {
    let (agent, port, _dir) = agent_without_snap("ready_requires = [\"dpu.v1.Inventory\"]\n");
    let mut health = HealthClient::new(agent.channel().await);
    assert_eq!(status(&mut health, READINESS).await, ServingStatus::Serving);
    assert_eq!(
        status(&mut health, "dpu.v1.Storage").await,
        ServingStatus::NotServing,
        "SNAP is still missing; readiness just does not require it"
    );
    assert_eq!(
        agent.health_check(READINESS),
        Some(0),
        "the exec probe passes"
    );
    let mut plain = HealthClient::new(plaintext_channel(port, &agent).await);
    assert_eq!(status(&mut plain, READINESS).await, ServingStatus::Serving);
}

/// With SNAP there and OVS disabled, the default list (which leaves Switch out without
/// OVS) is satisfied, though Switch itself is NOT_SERVING.
#[tokio::test]
async fn by_default_readiness_needs_only_the_enabled_backends() {
    let lab = Lab::start();
    let mut health = HealthClient::new(lab.agent.channel().await);
    assert_eq!(
        status(&mut health, "dpu.v1.Switch").await,
        ServingStatus::NotServing
    );
    assert_eq!(status(&mut health, READINESS).await, ServingStatus::Serving);
}

#[tokio::test]
async fn the_health_only_port_answers_check_and_nothing_else() {
    let (agent, port, _dir) = agent_without_snap("");
    let channel = plaintext_channel(port, &agent).await;
    let mut health = HealthClient::new(channel.clone());
    assert_eq!(status(&mut health, "").await, ServingStatus::Serving);
    let unknown = health
        .check(HealthCheckRequest {
            service: "dpu.v1.Nope".to_owned(),
        })
        .await
        .expect_err("an unknown service");
    assert_eq!(unknown.code(), tonic::Code::NotFound);

    // No dpu.v1 service: the call never reaches a handler.
    let err = InventoryClient::new(channel.clone())
        .get_system(dpu_proto::v1::GetSystemRequest {})
        .await
        .expect_err("Inventory on the health-only port");
    assert_eq!(err.code(), tonic::Code::Unimplemented, "{err}");

    // Watch would hold a connection slot for ever; probes only Check.
    let err = health
        .watch(HealthCheckRequest {
            service: String::new(),
        })
        .await
        .expect_err("Watch on the health-only port");
    assert_eq!(err.code(), tonic::Code::Unimplemented, "{err}");

    // No reflection either.
    let request = reflection::ServerReflectionRequest {
        host: String::new(),
        message_request: Some(
            reflection::server_reflection_request::MessageRequest::ListServices(String::new()),
        ),
    };
    let answer = reflection::server_reflection_client::ServerReflectionClient::new(channel)
        .server_reflection_info(tokio_stream::once(request))
        .await;
    let code = match answer {
        Err(status) => status.code(),
        Ok(replies) => match replies.into_inner().next().await {
            Some(Err(status)) => status.code(),
            other => panic!("reflection answered on the health-only port: {other:?}"),
        },
    };
    assert_eq!(code, tonic::Code::Unimplemented);

    // The main listener still serves Watch.
    let mut main = HealthClient::new(agent.channel().await);
    let mut updates = main
        .watch(HealthCheckRequest {
            service: READINESS.to_owned(),
        })
        .await
        .expect("Watch on the agent's socket")
        .into_inner();
    let first = updates.next().await.expect("one update").expect("ok");
    assert_eq!(first.status, ServingStatus::NotServing as i32);
}

#[test]
fn a_readiness_that_could_never_serve_refuses_the_start() {
    let (dir, root) = fixture::bluefield3_tempdir();
    let mut options = AgentOptions::new(dir.path(), &root);
    // OVS is disabled by the harness: Switch could never be SERVING.
    options.config_toml = "[health]\nready_requires = [\"dpu.v1.Switch\"]\n".to_owned();
    let mut agent = AgentProcess::spawn(&options).expect("spawn");
    let status = agent
        .wait_exit(Duration::from_secs(30))
        .unwrap_or_else(|| panic!("agent started anyway:\n{}", agent.log()));
    assert_eq!(status.code(), Some(2), "{}", agent.log());
    let log = agent.log();
    assert!(
        log.contains("health.ready_requires names dpu.v1.Switch but ovs.enabled = false"),
        "{log}"
    );
}

/// At SIGTERM `readiness` turns NOT_SERVING before the streams end, so a load balancer
/// watching it stops sending calls first.
#[tokio::test]
async fn readiness_turns_not_serving_at_shutdown() {
    let lab = Lab::start();
    let mut updates = HealthClient::new(lab.agent.channel().await)
        .watch(HealthCheckRequest {
            service: READINESS.to_owned(),
        })
        .await
        .expect("Watch readiness")
        .into_inner();
    let first = updates.next().await.expect("one update").expect("ok");
    assert_eq!(first.status, ServingStatus::Serving as i32);
    let status = Command::new("kill")
        .args(["-TERM", &lab.agent.pid().to_string()])
        .status()
        .expect("kill");
    assert!(status.success());
    let seen = tokio::time::timeout(Duration::from_secs(10), async {
        let mut seen = Vec::new();
        while let Some(Ok(update)) = updates.next().await {
            seen.push(update.status);
        }
        seen
    })
    .await
    .unwrap_or_else(|_| panic!("the Watch is still open 10 s after SIGTERM"));
    assert_eq!(
        seen,
        [ServingStatus::NotServing as i32],
        "{}",
        lab.agent.log()
    );
}
