//! `dpu-agent --health-check [SERVICE...]`: asks a running agent, over its Unix socket,
//! for `grpc.health.v1` and exits 0 when every service named (none: the whole server) is
//! SERVING; `--health-check readiness` asks the one service that follows everything
//! `[health] ready_requires` names. An exec probe for where kubelet's own `grpc:` probe
//! cannot be used: that probe speaks plaintext only, and the agent's TCP listeners
//! require mutual TLS, so it needs the health-only listener (`[health] listen`,
//! `health_listener.rs`); the Unix socket needs neither, and health may be asked by every
//! caller.

use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context as _;
use dpu_proto::Endpoint;
use hyper_util::rt::TokioIo;
use tonic::transport::Endpoint as TonicEndpoint;
use tonic_health::pb::health_check_response::ServingStatus;
use tonic_health::pb::{health_client::HealthClient, HealthCheckRequest};

use crate::config::Config;

/// Connecting and all checks together: a hung agent must not hang the probe (the
/// DaemonSet gives the exec probe 6 s).
const DEADLINE: Duration = Duration::from_secs(5);

/// Whether every service is SERVING; prints one line per service.
pub(crate) fn run(config: &Config, services: &[String]) -> anyhow::Result<bool> {
    let socket = config
        .listen
        .iter()
        .find_map(|e| match e {
            Endpoint::Unix(path) => Some(path.clone()),
            Endpoint::Tcp { .. } => None,
        })
        .context("--health-check needs a unix: listener in the configuration (or --listen)")?;
    let services: Vec<String> = if services.is_empty() {
        vec![String::new()]
    } else {
        services.to_vec()
    };
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?
        .block_on(async {
            tokio::time::timeout(DEADLINE, check(socket.clone(), &services))
                .await
                .with_context(|| {
                    format!(
                        "no health answer from {} within {DEADLINE:?}",
                        socket.display()
                    )
                })?
        })
}

async fn check(socket: PathBuf, services: &[String]) -> anyhow::Result<bool> {
    let path = socket.clone();
    // The URI is required by the API but unused: the connector dials the socket.
    let channel = TonicEndpoint::from_static("http://dpu-agent.invalid")
        .connect_with_connector(tower::service_fn(move |_| {
            let path = path.clone();
            async move {
                tokio::net::UnixStream::connect(path)
                    .await
                    .map(TokioIo::new)
            }
        }))
        .await
        .with_context(|| format!("cannot reach the agent at {}", socket.display()))?;
    let mut client = HealthClient::new(channel);
    let mut all = true;
    for service in services {
        let status = match client
            .check(HealthCheckRequest {
                service: service.clone(),
            })
            .await
        {
            Ok(reply) => ServingStatus::try_from(reply.into_inner().status)
                .unwrap_or(ServingStatus::Unknown)
                .as_str_name()
                .to_owned(),
            Err(status) if status.code() == tonic::Code::NotFound => "SERVICE_UNKNOWN".to_owned(),
            Err(status) => anyhow::bail!(
                "grpc.health.v1.Health/Check {service:?}: {:?}: {}",
                status.code(),
                status.message()
            ),
        };
        all &= status == "SERVING";
        let name = if service.is_empty() {
            "(server)"
        } else {
            service
        };
        // The probe's answer is its output.
        #[allow(clippy::print_stdout)]
        {
            println!("{name}: {status}");
        }
    }
    Ok(all)
}
