//! Serving the API on every listener at once, with health and reflection, and a graceful
//! shutdown on SIGTERM/SIGINT.

use std::sync::Arc;
use std::time::Duration;

use anyhow::Context as _;
use dpu_proto::v1::counters_server::CountersServer;
use dpu_proto::v1::inventory_server::InventoryServer;
use dpu_proto::v1::storage_server::StorageServer;
use dpu_proto::v1::switch_server::SwitchServer;
use tokio::signal::unix::{signal, SignalKind};
use tokio::sync::watch;
use tonic::transport::server::Router;
use tonic::transport::Server;
use tonic_health::pb::health_server::{Health, HealthServer};
use tonic_health::ServingStatus;
use tower::layer::util::{Identity, Stack};

use crate::config::Config;
use crate::context::AgentContext;
use crate::edge::accept::{self, Budgets, Gate};
use crate::edge::fd_reserve::FdReserve;
use crate::edge::grpc_guard::GrpcGuardLayer;
use crate::edge::listen::{self, Bound};
use crate::security::{self, layer::AuthLayer};
use crate::services::{CountersService, InventoryService, StorageService, SwitchService};
use crate::storage::uplink::RouteLookup;
use crate::telemetry::rpc_layer::RpcMetricsLayer;

/// Runs the agent until SIGTERM or SIGINT, then lets in-flight calls finish (bounded by
/// `shutdown_grace`) and removes the Unix socket files.
pub(crate) async fn run(config: Config) -> anyhow::Result<()> {
    // Install the handlers before the socket exists: a supervisor (or a test) that sees
    // the socket may signal at once, and the default action would kill the agent without
    // removing its socket.
    let signals = TerminationSignals::install()?;
    // The TLS files first: a key others can read (or any bad file) refuses the start
    // before a socket appears.
    let tls = security::tls::acceptor(&config.security).context("cannot load the TLS files")?;
    let ctx =
        Arc::new(AgentContext::new(&config).context("cannot open the agent's storage state")?);
    // Re-apply the saved storage state now (finishing whatever a crash interrupted) and
    // keep checking it, so a SNAP restart that loses state is repaired.
    ctx.storage
        .spawn_reconciler(config.storage.reconcile_interval);
    let (health_reporter, health_service) = tonic_health::server::health_reporter();
    // Each service's health follows its backends (probed once now, then in the background).
    let health =
        crate::health::HealthMonitor::start(Arc::clone(&ctx), &config, health_reporter.clone())
            .await;
    // Bind everything before serving anything: a bad listener fails the start as a whole.
    // Bound only now, after the first health round (up to 2 s with a silent SNAP): a
    // client that finds the socket is answered at once, never left in the backlog of a
    // listener that is not accepting yet (a SIGTERM then would reset it unanswered).
    // The plaintext health-only listener (`[health] listen`) first: once the agent's
    // socket exists, so does the port kubelet probes.
    let health_only = crate::edge::health_listener::bind(&config).await?;
    // /metrics first: once a gRPC socket accepts, the metrics endpoint does too.
    let metrics_listener = match &config.metrics.listen {
        Some(endpoint) => Some(
            listen::bind(endpoint)
                .await
                .with_context(|| format!("cannot listen for /metrics on {endpoint}"))?,
        ),
        None => None,
    };
    let mut bound = Vec::with_capacity(config.listen.len());
    for endpoint in &config.listen {
        bound.push(
            listen::bind(endpoint)
                .await
                .with_context(|| format!("cannot listen on {endpoint}"))?,
        );
    }

    if tls.is_none() && bound.iter().any(|b| matches!(b, Bound::Tcp(_))) {
        tracing::warn!(
            role = config.security.insecure_role.as_str(),
            "serving plaintext TCP without authentication (insecure_listen): anyone who \
             reaches the port gets this role"
        );
    }
    let (shutdown_tx, shutdown_rx) = watch::channel(false);
    let budgets = connection_budgets(&config, &bound);
    let reserve = FdReserve::new();
    let mut servers = tokio::task::JoinSet::new();
    for listener in bound {
        let description = listener.describe();
        let tls = tls.clone();
        let router = router(&ctx, &config, health_service.clone(), shutdown_rx.clone())?;
        let budget = match listener {
            Bound::Unix(..) => budgets.per_unix,
            Bound::Tcp(_) => budgets.per_tcp,
        };
        let gate = Gate::new(
            description.clone(),
            budget,
            Arc::clone(&reserve),
            &config.limits,
            shutdown_rx.clone(),
        );
        let handshakes = config.limits.max_pending_handshakes;
        let mut stop = shutdown_rx.clone();
        let shutdown = async move {
            // An error means the sender is gone, which also means stop.
            let _ = stop.wait_for(|stop| *stop).await;
        };
        tracing::info!(listener = %description, "serving dpu.v1");
        servers.spawn(async move {
            let result = match listener {
                Bound::Unix(listener, guard) => {
                    let result = router
                        .serve_with_incoming_shutdown(accept::plain(listener, gate), shutdown)
                        .await;
                    drop(guard);
                    result
                }
                Bound::Tcp(listener) => match tls {
                    Some(acceptor) => {
                        router
                            .serve_with_incoming_shutdown(
                                accept::tls(listener, acceptor, gate, handshakes),
                                shutdown,
                            )
                            .await
                    }
                    None => {
                        router
                            .serve_with_incoming_shutdown(accept::plain(listener, gate), shutdown)
                            .await
                    }
                },
            };
            (description, result)
        });
    }

    if let Some(listener) = metrics_listener {
        // TLS on a TCP endpoint exactly when the gRPC listeners have it, from the same
        // files (already checked above), speaking HTTP/1.1.
        let tls = match listener {
            Bound::Tcp(_) => security::tls::http1_acceptor(&config.security)
                .context("cannot load the TLS files for /metrics")?,
            Bound::Unix(..) => None,
        };
        tokio::spawn(crate::metrics::serve::serve(
            listener,
            crate::metrics::scrape::Scraper::new(Arc::clone(&ctx), &config.metrics),
            config.security.clone(),
            config.metrics.clone(),
            tls,
            shutdown_rx.clone(),
        ));
    }

    if let Some(listener) = health_only {
        tracing::info!(listener = %listener.describe(), "serving grpc.health.v1 Check only, plaintext");
        servers.spawn(listener.serve(
            health_service.clone(),
            &config.limits,
            Arc::clone(&reserve),
            shutdown_rx.clone(),
        ));
    }

    let signal_name = tokio::select! {
        name = signals.wait() => name,
        Some(ended) = servers.join_next() => {
            let (listener, result) = ended.context("listener task panicked")?;
            result.with_context(|| format!("listener {listener} failed"))?;
            anyhow::bail!("listener {listener} stopped unexpectedly");
        }
    };
    tracing::info!(signal = signal_name, grace = ?config.shutdown_grace, "shutting down");
    health.stop();
    // "" is the whole server, as grpc.health.v1 defines it; readiness goes first.
    for service in [crate::health::READINESS, ""]
        .into_iter()
        .chain(dpu_proto::SERVICE_NAMES)
    {
        health_reporter
            .set_service_status(service, ServingStatus::NotServing)
            .await;
    }
    // Every receiver may already be gone if all listeners died; nothing to stop then.
    let _ = shutdown_tx.send(true);
    drain(servers, config.shutdown_grace).await;
    Ok(())
}

/// Each listener's connection budget, fitted to the fd limit (logged, so an operator sees
/// what `ulimit -n` left).
fn connection_budgets(config: &Config, bound: &[Bound]) -> Budgets {
    let tcp = bound.iter().filter(|b| matches!(b, Bound::Tcp(_))).count();
    let unix = bound.len() - tcp;
    let fd_limit = accept::fd_limit();
    let budgets = Budgets::new(&config.limits, tcp, unix, fd_limit);
    let limits = &config.limits;
    if (tcp > 0 && budgets.per_tcp < limits.max_tcp_connections)
        || (unix > 0 && budgets.per_unix < limits.max_unix_connections)
    {
        tracing::warn!(
            ?fd_limit,
            per_tcp_listener = budgets.per_tcp,
            per_unix_listener = budgets.per_unix,
            "connection budgets lowered to fit the open-file limit (raise LimitNOFILE / \
             ulimit -n to allow limits.max_tcp_connections and max_unix_connections)"
        );
    } else {
        tracing::info!(
            ?fd_limit,
            per_tcp_listener = budgets.per_tcp,
            per_unix_listener = budgets.per_unix,
            "connection budgets"
        );
    }
    budgets
}

/// Waits for the servers to finish their in-flight calls, then aborts what is left. An
/// aborted task drops its socket guard, so socket files are removed either way.
async fn drain(
    mut servers: tokio::task::JoinSet<(String, Result<(), tonic::transport::Error>)>,
    grace: Duration,
) {
    let all_done = async {
        while let Some(ended) = servers.join_next().await {
            match ended {
                Ok((listener, Err(e))) => {
                    tracing::warn!(%listener, error = %e, "listener ended with an error");
                }
                Ok((listener, Ok(()))) => tracing::debug!(%listener, "listener stopped"),
                Err(e) => tracing::warn!(error = %e, "listener task failed"),
            }
        }
    };
    if tokio::time::timeout(grace, all_done).await.is_err() {
        tracing::warn!(
            ?grace,
            "calls still running after the grace period; aborting them"
        );
        servers.shutdown().await;
    }
}

/// SIGTERM and SIGINT, caught from the moment they are installed.
struct TerminationSignals {
    term: tokio::signal::unix::Signal,
    int: tokio::signal::unix::Signal,
}

impl TerminationSignals {
    fn install() -> anyhow::Result<Self> {
        Ok(Self {
            term: signal(SignalKind::terminate()).context("cannot install SIGTERM handler")?,
            int: signal(SignalKind::interrupt()).context("cannot install SIGINT handler")?,
        })
    }

    /// The name of the first signal received.
    async fn wait(mut self) -> &'static str {
        tokio::select! {
            _ = self.term.recv() => "SIGTERM",
            _ = self.int.recv() => "SIGINT",
        }
    }
}

/// What every router is wrapped in, outermost first: metrics, the gRPC guard, then
/// authorization (tower's `Stack` nests them the other way round).
type Layers = Stack<AuthLayer, Stack<GrpcGuardLayer, Stack<RpcMetricsLayer, Identity>>>;

/// One router per listener, all sharing the same context and health state.
fn router(
    ctx: &Arc<AgentContext>,
    config: &Config,
    health: HealthServer<impl Health>,
    shutdown: watch::Receiver<bool>,
) -> anyhow::Result<Router<Layers>> {
    let reflection = || {
        tonic_reflection::server::Builder::configure()
            .register_encoded_file_descriptor_set(dpu_proto::FILE_DESCRIPTOR_SET)
            .register_encoded_file_descriptor_set(tonic_health::pb::FILE_DESCRIPTOR_SET)
    };
    let reflection_v1 = reflection()
        .build_v1()
        .context("cannot build reflection v1 service")?;
    let reflection_v1alpha = reflection()
        .build_v1alpha()
        .context("cannot build reflection v1alpha service")?;
    let limits = &config.limits;
    Ok(Server::builder()
        .max_concurrent_streams(limits.max_streams_per_connection)
        .concurrency_limit_per_connection(limits.max_calls_per_connection)
        .http2_keepalive_interval(Some(limits.keepalive_interval))
        .http2_keepalive_timeout(Some(limits.keepalive_timeout))
        .trace_fn(|request| tracing::info_span!("rpc", path = %request.uri().path()))
        // Outermost: every call is counted with the status its client got, denials and
        // streams ended by the shutdown included.
        .layer(RpcMetricsLayer::new(Arc::clone(&ctx.metrics)))
        // Then non-gRPC requests get 415 before anything else looks at them.
        .layer(GrpcGuardLayer::new(shutdown))
        .layer(AuthLayer::new(&config.security))
        .add_service(health)
        .add_service(reflection_v1)
        .add_service(reflection_v1alpha)
        .add_service(
            InventoryServer::new(InventoryService::new(Arc::clone(ctx)))
                .max_decoding_message_size(limits.max_request_bytes)
                .max_encoding_message_size(limits.max_response_bytes),
        )
        .add_service(
            StorageServer::new(StorageService::new(
                Arc::clone(&ctx.storage),
                RouteLookup::of(&ctx.root),
            ))
            .max_decoding_message_size(limits.max_request_bytes)
            .max_encoding_message_size(limits.max_response_bytes),
        )
        .add_service(
            SwitchServer::new(SwitchService::new(Arc::clone(ctx)))
                .max_decoding_message_size(limits.max_request_bytes)
                .max_encoding_message_size(limits.max_response_bytes),
        )
        .add_service(
            CountersServer::new(CountersService::new(
                Arc::clone(ctx),
                limits.max_response_bytes,
            ))
            .max_decoding_message_size(limits.max_request_bytes)
            .max_encoding_message_size(limits.max_response_bytes),
        ))
}
