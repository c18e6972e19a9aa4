//! The `/metrics` listener: HTTP/1.1, one request per connection, behind the same
//! authentication as gRPC (mutual TLS and the viewer role on TCP with TLS files, peer
//! credentials on a Unix socket), with bounded connections and deadlines so a scraper
//! that stalls holds nothing for long.
//!
//! Two bounds, so that clients without a certificate never keep one with a certificate
//! waiting: connections that have not yet finished their TLS handshake and sent their
//! request's headers are held in a pre-authentication pool of `max_connections`
//! ([`super::preauth`]: the least recently active is closed when another arrives), within
//! `request_timeout` from accept; `max_connections` scrapes are read at once.

use std::convert::Infallible;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use http_body_util::Full;
use hyper::body::{Bytes, Incoming};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::{watch, Semaphore};
use tokio_rustls::TlsAcceptor;

use super::preauth::{PreAuth, Ticket, Tracked};
use super::scrape::{Format, Scraper};
use crate::config::{MetricsConfig, SecurityConfig};
use crate::edge::listen::Bound;
use crate::role::Role;
use crate::security::Caller;

/// How long to wait before accepting again after `accept` failed (out of descriptors):
/// the error clears when a connection closes, and retrying at once would spin.
const ACCEPT_RETRY: Duration = Duration::from_millis(100);

/// What every connection of the listener needs.
struct Shared {
    scraper: Scraper,
    security: SecurityConfig,
    config: MetricsConfig,
    tls: Option<TlsAcceptor>,
    /// `max_connections` scrapes read at once.
    scrapes: Semaphore,
}

/// Serves `/metrics` on `listener` until `shutdown` turns true. `tls` is the gRPC
/// listeners' acceptor: a TCP endpoint uses it when TLS is configured.
pub(crate) async fn serve(
    listener: Bound,
    scraper: Scraper,
    security: SecurityConfig,
    config: MetricsConfig,
    tls: Option<TlsAcceptor>,
    mut shutdown: watch::Receiver<bool>,
) {
    // Every connection holds one of these: the pre-authentication pool's budget and as many
    // again for connections past it (reading or waiting for a scrape slot).
    let connections = Arc::new(Semaphore::new(config.max_connections.saturating_mul(2)));
    let preauth = PreAuth::new(config.max_connections);
    let shared = Arc::new(Shared {
        scraper,
        security,
        scrapes: Semaphore::new(config.max_connections),
        config,
        tls,
    });
    let description = listener.describe();
    tracing::info!(listener = %description, "serving /metrics");
    loop {
        let accepted = tokio::select! {
            accepted = accept(&listener) => accepted,
            _ = shutdown.wait_for(|stop| *stop) => break,
        };
        let accepted = match accepted {
            Ok(accepted) => accepted,
            Err(e) => {
                tracing::warn!(listener = %description, error = %e, "cannot accept a scrape connection");
                tokio::time::sleep(ACCEPT_RETRY).await;
                continue;
            }
        };
        // Room for the newcomer: a permit, made by closing the least recently active
        // connection that has not authenticated when every permit is taken. Only an
        // arrival ever closes one. When all are past that, the newcomer waits here for one
        // to finish (each within its deadline), and later ones in the kernel's backlog.
        let permit = match Arc::clone(&connections).try_acquire_owned() {
            Ok(permit) => permit,
            Err(_) => {
                preauth.evict_one();
                let permit = tokio::select! {
                    permit = Arc::clone(&connections).acquire_owned() => permit,
                    _ = shutdown.wait_for(|stop| *stop) => break,
                };
                let Ok(permit) = permit else { break };
                permit
            }
        };
        let accepted_at = Instant::now();
        let (ticket, activity) = preauth.admit();
        let id = ticket.id();
        let task = match accepted {
            Accepted::Tcp(stream, addr) => {
                let stream = Tracked::new(stream, activity, &ticket);
                let shared = Arc::clone(&shared);
                tokio::spawn(async move {
                    let _permit = permit;
                    tcp_connection(stream, addr, ticket, accepted_at, &shared).await;
                })
            }
            Accepted::Unix(stream) => {
                let caller = match stream.peer_cred() {
                    Ok(cred) => Caller::Unix {
                        uid: cred.uid(),
                        pid: cred.pid(),
                    },
                    Err(_) => Caller::Unknown,
                };
                let stream = Tracked::new(stream, activity, &ticket);
                let shared = Arc::clone(&shared);
                tokio::spawn(async move {
                    let _permit = permit;
                    connection(stream, caller, ticket, accepted_at, &shared).await;
                })
            }
        };
        preauth.set_abort(id, task.abort_handle());
    }
    tracing::debug!(listener = %description, "/metrics listener stopped");
}

impl std::fmt::Debug for Shared {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Shared")
            .field("config", &self.config)
            .field("tls", &self.tls.is_some())
            .finish_non_exhaustive()
    }
}

enum Accepted {
    Tcp(tokio::net::TcpStream, std::net::SocketAddr),
    Unix(tokio::net::UnixStream),
}

async fn accept(listener: &Bound) -> std::io::Result<Accepted> {
    match listener {
        Bound::Tcp(listener) => {
            let (stream, addr) = listener.accept().await?;
            Ok(Accepted::Tcp(stream, addr))
        }
        Bound::Unix(listener, _) => Ok(Accepted::Unix(listener.accept().await?.0)),
    }
}

/// A TCP scraper: the TLS handshake (within `request_timeout` of accept) when configured.
async fn tcp_connection(
    stream: Tracked<tokio::net::TcpStream>,
    addr: std::net::SocketAddr,
    ticket: Ticket,
    accepted_at: Instant,
    shared: &Shared,
) {
    let Some(acceptor) = &shared.tls else {
        let caller = Caller::InsecureTcp { addr: Some(addr) };
        connection(stream, caller, ticket, accepted_at, shared).await;
        return;
    };
    match tokio::time::timeout(shared.config.request_timeout, acceptor.accept(stream)).await {
        Ok(Ok(tls)) => {
            let leaf = tls
                .get_ref()
                .1
                .peer_certificates()
                .and_then(|chain| chain.first())
                .map(|cert| cert.as_ref().to_vec());
            let caller = Caller::tls_peer(leaf.as_deref(), Some(addr));
            connection(tls, caller, ticket, accepted_at, shared).await;
        }
        Ok(Err(e)) => tracing::debug!(%addr, error = %e, "scrape TLS handshake failed"),
        Err(_) => tracing::debug!(%addr, "scrape TLS handshake timed out"),
    }
}

/// One request, then close: the request's headers must arrive within `request_timeout`
/// of accept (the handshake included), and the whole exchange (reading the counters
/// included) end within `request_timeout` + `read_timeout`. The connection leaves the
/// pre-authentication pool when its headers have arrived.
async fn connection<IO>(
    io: IO,
    caller: Caller,
    ticket: Ticket,
    accepted_at: Instant,
    shared: &Shared,
) where
    IO: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let role = caller.role(&shared.security);
    let ticket = Mutex::new(Some(ticket));
    let service = service_fn(|request| {
        if let Some(ticket) = ticket.lock().unwrap_or_else(PoisonError::into_inner).take() {
            ticket.authenticated();
        }
        answer(request, role, &caller, shared)
    });
    let headers_within = shared
        .config
        .request_timeout
        .saturating_sub(accepted_at.elapsed())
        .max(Duration::from_millis(1));
    let exchange = http1::Builder::new()
        .timer(TokioTimer::new())
        .header_read_timeout(headers_within)
        .keep_alive(false)
        .serve_connection(TokioIo::new(io), service);
    let deadline = shared.config.request_timeout + shared.config.read_timeout;
    match tokio::time::timeout(deadline, exchange).await {
        Ok(Ok(())) => {}
        Ok(Err(e)) => tracing::debug!(%caller, error = %e, "scrape connection ended with an error"),
        Err(_) => tracing::debug!(%caller, ?deadline, "scrape connection closed at its deadline"),
    }
}

fn plain(status: StatusCode, body: String) -> Response<Full<Bytes>> {
    let mut response = Response::new(Full::new(Bytes::from(body)));
    *response.status_mut() = status;
    response.headers_mut().insert(
        hyper::header::CONTENT_TYPE,
        hyper::header::HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    response
}

async fn answer(
    request: Request<Incoming>,
    role: Role,
    caller: &Caller,
    shared: &Shared,
) -> Result<Response<Full<Bytes>>, Infallible> {
    if role < Role::Viewer {
        tracing::info!(%caller, "scrape refused: the caller has no role");
        return Ok(plain(
            StatusCode::FORBIDDEN,
            format!(
                "{caller} may not read metrics: it needs the viewer role (security.viewers, \
                 security.insecure_role or security.unix_role)\n"
            ),
        ));
    }
    if request.uri().path() != "/metrics" {
        return Ok(plain(
            StatusCode::NOT_FOUND,
            format!(
                "no {} here: the agent serves GET /metrics\n",
                request.uri().path()
            ),
        ));
    }
    if !matches!(*request.method(), Method::GET | Method::HEAD) {
        let mut response = plain(
            StatusCode::METHOD_NOT_ALLOWED,
            format!("{} /metrics is not served: use GET\n", request.method()),
        );
        response.headers_mut().insert(
            hyper::header::ALLOW,
            hyper::header::HeaderValue::from_static("GET, HEAD"),
        );
        return Ok(response);
    }
    let accept = request
        .headers()
        .get(hyper::header::ACCEPT)
        .and_then(|v| v.to_str().ok());
    let format = Format::from_accept(accept);
    // A scrape slot: at most `max_connections` readings at once. The semaphore is never
    // closed; were it, the scrape would go ahead rather than hang.
    let _slot = shared.scrapes.acquire().await;
    Ok(match shared.scraper.scrape(format).await {
        Ok(body) => {
            let mut response = Response::new(Full::new(Bytes::from(body)));
            response.headers_mut().insert(
                hyper::header::CONTENT_TYPE,
                hyper::header::HeaderValue::from_static(format.content_type()),
            );
            response
        }
        Err(e) => {
            tracing::warn!(error = %e, "cannot encode the metrics");
            plain(
                StatusCode::INTERNAL_SERVER_ERROR,
                "the metrics could not be encoded\n".to_owned(),
            )
        }
    })
}
