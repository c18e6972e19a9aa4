//! `[health] listen = "tcp:HOST:PORT"`: a plaintext TCP listener that serves
//! `grpc.health.v1` Check and nothing else, for kubelet's native `grpc:` probe.
//!
//! Why it exists: kubelet's `grpc:` probe speaks plaintext only and cannot present a
//! client certificate, and the agent's TCP listeners require mutual TLS; an exec probe
//! (`dpu-agent --health-check`) works but starts a process per probe. kubelet probes a
//! `hostNetwork` pod at the node's IP, so the port is reachable from the network.
//!
//! Why plaintext is acceptable: health answers nothing but serving state (SERVING or
//! NOT_SERVING per service name) and changes nothing. The listener has the same
//! `HealthServer` (the same reporter, so the same statuses) as the main listeners, and
//! no reflection and no `dpu.v1` services: any other method answers UNIMPLEMENTED, before
//! any handler or backend is reached.
//!
//! Bounds, so that an unauthenticated port cannot take the agent's resources:
//! - at most [`MAX_CONNECTIONS`] connections at once (more wait in the kernel's backlog),
//!   through the same [`Gate`] as every listener (back-off, the spare descriptors), and
//!   within the descriptor headroom the main listeners' budgets leave;
//! - the `[limits]` preface timeout, and an idle timeout of at most [`MAX_IDLE`] (a probe
//!   connects, asks once and closes within milliseconds);
//! - [`MAX_STREAMS`] streams per connection, requests of at most [`MAX_REQUEST_BYTES`];
//! - `Watch` answers UNIMPLEMENTED here: one stream per connection held open for ever
//!   would keep every slot busy, and kubelet's probe only calls `Check`. Watch stays
//!   available on the main listeners.
//!
//! A client that holds every slot by asking again and again still delays probes: bind the
//! address kubelet reaches the node at, and keep the port off untrusted networks.

use std::future::Future;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use anyhow::Context as _;
use http::{Request, Response};
use tokio::net::TcpListener;
use tokio::sync::watch;
use tonic::body::Body;
use tonic::transport::Server;
use tonic_health::pb::health_server::{Health, HealthServer};
use tower::{Layer, Service};

use crate::config::{Config, LimitsConfig};
use crate::edge::accept::{self, Gate};
use crate::edge::fd_reserve::FdReserve;
use crate::edge::grpc_guard::GrpcGuardLayer;
use crate::edge::listen::{self, Bound};
use crate::service_future::ServiceFuture;

/// Connections the health-only listener holds at once: kubelet opens one per probe
/// (readiness and liveness), a few at most ever overlap.
pub(crate) const MAX_CONNECTIONS: usize = 8;

/// The longest a connection may stay open with no call in progress.
pub(crate) const MAX_IDLE: Duration = Duration::from_secs(30);

/// HTTP/2 streams (calls) one connection may have open at once.
pub(crate) const MAX_STREAMS: u32 = 4;

/// The largest request decoded: a `HealthCheckRequest` is one service name.
pub(crate) const MAX_REQUEST_BYTES: usize = 4096;

/// The method refused here (see the module documentation).
const WATCH_PATH: &str = "/grpc.health.v1.Health/Watch";

/// The health-only listener, bound and not yet serving.
#[derive(Debug)]
pub(crate) struct HealthListener {
    listener: TcpListener,
    description: String,
}

/// Binds `[health] listen` when it is set (validation made sure it is TCP): called with
/// the other listeners, before anything serves, so a port in use fails the start.
pub(crate) async fn bind(config: &Config) -> anyhow::Result<Option<HealthListener>> {
    let Some(endpoint) = &config.health.listen else {
        return Ok(None);
    };
    let bound = listen::bind(endpoint)
        .await
        .with_context(|| format!("cannot listen on health.listen = {endpoint}"))?;
    let description = bound.describe();
    match bound {
        Bound::Tcp(listener) => Ok(Some(HealthListener {
            listener,
            description,
        })),
        Bound::Unix(..) => anyhow::bail!("health.listen = {endpoint}: must be tcp:HOST:PORT"),
    }
}

/// A listener's task result, as `server.rs` collects them: its description and how its
/// server ended.
pub(crate) type Ended = (String, Result<(), tonic::transport::Error>);

impl HealthListener {
    /// `tcp:HOST:PORT` with the real port (when 0 was asked for).
    pub(crate) fn describe(&self) -> &str {
        &self.description
    }

    /// Serves `health` (the main listeners' health server) on this listener until
    /// `shutdown` turns true.
    pub(crate) fn serve<H: Health>(
        self,
        health: HealthServer<H>,
        limits: &LimitsConfig,
        reserve: Arc<FdReserve>,
        shutdown: watch::Receiver<bool>,
    ) -> impl Future<Output = Ended> + Send + 'static {
        let mut limits = limits.clone();
        limits.idle_timeout = limits.idle_timeout.min(MAX_IDLE);
        let gate = Gate::new(
            self.description.clone(),
            MAX_CONNECTIONS,
            reserve,
            &limits,
            shutdown.clone(),
        );
        let router = Server::builder()
            .max_concurrent_streams(MAX_STREAMS)
            .concurrency_limit_per_connection(MAX_STREAMS as usize)
            .http2_keepalive_interval(Some(limits.keepalive_interval))
            .http2_keepalive_timeout(Some(limits.keepalive_timeout))
            .trace_fn(|request| tracing::debug_span!("health", path = %request.uri().path()))
            // Outermost: non-gRPC requests get 415, as on every listener.
            .layer(GrpcGuardLayer::new(shutdown.clone()))
            .layer(CheckOnlyLayer)
            .add_service(health.max_decoding_message_size(MAX_REQUEST_BYTES));
        let mut stop = shutdown;
        let description = self.description;
        let incoming = accept::plain(self.listener, gate);
        async move {
            let result = router
                .serve_with_incoming_shutdown(incoming, async move {
                    // An error means the sender is gone, which also means stop.
                    let _ = stop.wait_for(|stop| *stop).await;
                })
                .await;
            (description, result)
        }
    }
}

/// Makes [`CheckOnly`]s.
#[derive(Debug, Clone, Copy)]
struct CheckOnlyLayer;

impl<S> Layer<S> for CheckOnlyLayer {
    type Service = CheckOnly<S>;

    fn layer(&self, inner: S) -> CheckOnly<S> {
        CheckOnly { inner }
    }
}

/// Answers `Watch` with UNIMPLEMENTED and passes every other request on (the router
/// answers UNIMPLEMENTED for everything but `grpc.health.v1`).
#[derive(Debug, Clone)]
struct CheckOnly<S> {
    inner: S,
}

impl<S> Service<Request<Body>> for CheckOnly<S>
where
    S: Service<Request<Body>, Response = Response<Body>>,
    S::Future: Send + 'static,
    S::Error: Send + 'static,
{
    type Response = Response<Body>;
    type Error = S::Error;
    type Future = ServiceFuture<Self::Response, Self::Error>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Request<Body>) -> Self::Future {
        if request.uri().path() != WATCH_PATH {
            return Box::pin(self.inner.call(request));
        }
        let (parts, ()) = tonic::Status::unimplemented(
            "Watch is not served on the health-only listener (health.listen): call Check, \
             or Watch on the agent's main listeners",
        )
        .into_http::<()>()
        .into_parts();
        Box::pin(std::future::ready(Ok(Response::from_parts(
            parts,
            Body::empty(),
        ))))
    }
}
