//! Accept loops that keep the agent reachable when clients misbehave or descriptors run
//! out, as trusted daemons do:
//!
//! - every listener has a connection budget (`[limits] max_tcp_connections`,
//!   `max_unix_connections`), the Unix socket's separate from TCP's and both lowered to
//!   fit the process's fd limit, with TCP never given more than half of it: a full TCP
//!   listener leaves descriptors for root's Unix socket. A listener at its budget stops
//!   accepting; new connections wait in the kernel's backlog, costing the agent nothing;
//! - a TLS listener runs at most `max_pending_handshakes` handshakes at once;
//! - a failed accept backs off (10 ms doubling to 1 s) instead of retrying at once, and is
//!   logged at most once per [`LOG_EVERY`] with the number of failures not logged;
//! - two spare descriptors (open `/dev/null`) are held in reserve: when accept fails for
//!   lack of descriptors, one is closed to make room. A Unix connection accepted that way
//!   is served (the spare is reopened when it closes); a TCP one is closed at once, which
//!   empties the backlog instead of spinning on it.
//!
//! Each connection is then watched for its HTTP/2 preface and idleness ([`crate::edge::conn`]).

use std::future::Future;
use std::io;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use tokio::net::{TcpListener, TcpStream, UnixListener, UnixStream};
use tokio::sync::{mpsc, watch, OwnedSemaphorePermit, Semaphore};
use tokio::time::Instant;
use tokio_rustls::server::TlsStream;
use tokio_rustls::TlsAcceptor;
use tokio_stream::wrappers::ReceiverStream;

use crate::config::LimitsConfig;
use crate::edge::conn::{Guarded, Slot, Timeouts};
use crate::edge::fd_reserve::{FdReserve, ReserveSlot};

/// First pause after a failed accept; it doubles on each failure in a row.
const MIN_BACKOFF: Duration = Duration::from_millis(10);
/// Longest pause between accepts while they keep failing.
const MAX_BACKOFF: Duration = Duration::from_secs(1);
/// At most one log line per listener and kind of trouble in this long.
pub(crate) const LOG_EVERY: Duration = Duration::from_secs(10);
/// Descriptors left out of the connection budgets for the agent's own work (runtime,
/// logs, state files, the SNAP and OVSDB sockets, netlink, sysfs reads, the spares): this
/// many, or an eighth of the fd limit if that is more.
const FD_HEADROOM: usize = 48;
/// How long a client has to finish its TLS handshake.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);
/// Connections accepted and not yet picked up by the server.
const QUEUE: usize = 16;

/// `EMFILE` and `ENFILE` (Linux): out of descriptors, for the process or the system.
const EMFILE: i32 = 24;
const ENFILE: i32 = 23;

/// The connection budget of each kind of listener.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Budgets {
    pub(crate) per_tcp: usize,
    pub(crate) per_unix: usize,
}

impl Budgets {
    /// The configured budgets, lowered so that the TCP listeners together hold at most
    /// half of the descriptors the headroom and the counter files the snapshot engine
    /// keeps open ([`dpu_probe::counters::kept_file_budget_for`]) leave, and the Unix
    /// listeners the rest.
    pub(crate) fn new(
        limits: &LimitsConfig,
        tcp_listeners: usize,
        unix_listeners: usize,
        fd_limit: Option<u64>,
    ) -> Self {
        let mut budgets = Self {
            per_tcp: limits.max_tcp_connections,
            per_unix: limits.max_unix_connections,
        };
        let Some(limit) = fd_limit.map(|l| usize::try_from(l).unwrap_or(usize::MAX)) else {
            return budgets;
        };
        let kept_counter_files =
            dpu_probe::counters::kept_file_budget_for(u64::try_from(limit).unwrap_or(u64::MAX));
        let usable = limit
            .saturating_sub(FD_HEADROOM.max(limit / 8))
            .saturating_sub(kept_counter_files);
        if let Some(share) = (usable / 2).checked_div(tcp_listeners) {
            budgets.per_tcp = budgets.per_tcp.min(share).max(1);
        }
        let tcp_total = budgets.per_tcp * tcp_listeners;
        if let Some(share) = usable.saturating_sub(tcp_total).checked_div(unix_listeners) {
            budgets.per_unix = budgets.per_unix.min(share).max(1);
        }
        budgets
    }
}

/// Raises the soft limit on open descriptors to the hard one, as systemd asks of
/// services that do not use `select()` (it starts them at a soft 1024 for old programs'
/// sake): the agent's connection budgets and the snapshot engine's kept counter files
/// are sized from the soft limit. Returns the limit before and after.
pub(crate) fn raise_fd_limit() -> nix::Result<(u64, u64)> {
    use nix::sys::resource::{getrlimit, setrlimit, Resource};
    let (soft, hard) = getrlimit(Resource::RLIMIT_NOFILE)?;
    // An unlimited hard limit is not a settable soft one (`fs.nr_open` bounds it).
    let target = hard.min(1 << 20);
    if soft < target {
        setrlimit(Resource::RLIMIT_NOFILE, target, hard)?;
        return Ok((soft, target));
    }
    Ok((soft, soft))
}

/// The soft limit on open descriptors (`ulimit -n`), `None` when unlimited or unknown.
pub(crate) fn fd_limit() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/self/limits").ok()?;
    let line = text.lines().find(|l| l.starts_with("Max open files"))?;
    line.split_whitespace().nth(3)?.parse().ok()
}

/// Allows one log line per [`LOG_EVERY`], counting the ones it held back.
#[derive(Debug, Default)]
pub(crate) struct RateLimit {
    last: Option<Instant>,
    suppressed: u64,
}

impl RateLimit {
    /// `Some(lines held back since the last one)` when a line may be logged now.
    pub(crate) fn check(&mut self) -> Option<u64> {
        self.check_at(Instant::now())
    }

    fn check_at(&mut self, now: Instant) -> Option<u64> {
        match self.last {
            Some(last) if now.duration_since(last) < LOG_EVERY => {
                self.suppressed += 1;
                None
            }
            _ => {
                self.last = Some(now);
                Some(std::mem::take(&mut self.suppressed))
            }
        }
    }
}

/// A listening socket the loops can accept from.
pub(crate) trait Listen: Send + Sync + 'static {
    type Stream: Send + 'static;
    /// Unix connections taken with a spare descriptor are served; TCP ones are closed.
    const SERVE_ON_RESERVE: bool;
    fn accept_stream(&self) -> impl Future<Output = io::Result<Self::Stream>> + Send;
}

impl Listen for TcpListener {
    type Stream = TcpStream;
    const SERVE_ON_RESERVE: bool = false;

    async fn accept_stream(&self) -> io::Result<TcpStream> {
        let (stream, _) = self.accept().await?;
        // gRPC messages are small and latency matters; the setting cannot fail on a
        // connected TCP socket worth serving.
        let _ = stream.set_nodelay(true);
        Ok(stream)
    }
}

impl Listen for UnixListener {
    type Stream = UnixStream;
    const SERVE_ON_RESERVE: bool = true;

    async fn accept_stream(&self) -> io::Result<UnixStream> {
        self.accept().await.map(|(stream, _)| stream)
    }
}

/// One listener's admission: its budget, back-off and log limits.
#[derive(Debug)]
pub(crate) struct Gate {
    listener: String,
    budget: usize,
    slots: Arc<Semaphore>,
    reserve: Arc<FdReserve>,
    timeouts: Timeouts,
    shutdown: watch::Receiver<bool>,
    backoff: Duration,
    failures: RateLimit,
    full: RateLimit,
}

impl Gate {
    /// `shutdown` turns true when the agent stops (idle connections are closed then).
    pub(crate) fn new(
        listener: String,
        budget: usize,
        reserve: Arc<FdReserve>,
        limits: &LimitsConfig,
        shutdown: watch::Receiver<bool>,
    ) -> Self {
        Self {
            listener,
            budget,
            slots: Arc::new(Semaphore::new(budget)),
            reserve,
            timeouts: Timeouts {
                preface: limits.preface_timeout,
                idle: limits.idle_timeout,
            },
            shutdown,
            backoff: MIN_BACKOFF,
            failures: RateLimit::default(),
            full: RateLimit::default(),
        }
    }

    /// A connection slot; while the listener is full, waits (saying so, rate-limited).
    async fn slot(&mut self) -> OwnedSemaphorePermit {
        if let Ok(permit) = Arc::clone(&self.slots).try_acquire_owned() {
            return permit;
        }
        if let Some(held_back) = self.full.check() {
            tracing::warn!(
                listener = %self.listener,
                budget = self.budget,
                times_since_last_report = held_back,
                "listener is at its connection budget; new connections wait in the backlog"
            );
        }
        match Arc::clone(&self.slots).acquire_owned().await {
            Ok(permit) => permit,
            // The semaphore is never closed.
            Err(_) => std::future::pending().await,
        }
    }

    /// The next connection, backing off while accepting fails.
    async fn accept<L: Listen>(&mut self, listener: &L) -> (L::Stream, Option<ReserveSlot>) {
        loop {
            let error = match listener.accept_stream().await {
                Ok(stream) => {
                    self.backoff = MIN_BACKOFF;
                    self.reserve.refill();
                    return (stream, None);
                }
                Err(e) => e,
            };
            // A connection that went away before it was taken: nothing is wrong here.
            if matches!(
                error.kind(),
                io::ErrorKind::ConnectionAborted
                    | io::ErrorKind::ConnectionReset
                    | io::ErrorKind::Interrupted
            ) {
                continue;
            }
            let out_of_fds = matches!(error.raw_os_error(), Some(EMFILE | ENFILE));
            let mut closed_one = false;
            if out_of_fds {
                if let Some(spare) = self.reserve.release() {
                    if let Ok(stream) = listener.accept_stream().await {
                        if L::SERVE_ON_RESERVE {
                            return (stream, Some(spare));
                        }
                        drop(stream);
                        closed_one = true;
                    }
                    drop(spare);
                }
            }
            if let Some(held_back) = self.failures.check() {
                tracing::warn!(
                    listener = %self.listener,
                    error = %error,
                    retry_in = ?self.backoff,
                    closed_a_connection = closed_one,
                    failures_since_last_report = held_back,
                    "accept failed; backing off"
                );
            }
            tokio::time::sleep(self.backoff).await;
            self.backoff = (self.backoff * 2).min(MAX_BACKOFF);
        }
    }
}

/// Serves a plaintext listener (TCP or Unix) through its gate.
pub(crate) fn plain<L>(
    listener: L,
    mut gate: Gate,
) -> ReceiverStream<io::Result<Guarded<L::Stream>>>
where
    L: Listen,
{
    let (tx, rx) = mpsc::channel(QUEUE);
    tokio::spawn(async move {
        loop {
            // Stop accepting (and close the socket) as soon as the server stops reading.
            let permit = tokio::select! {
                () = tx.closed() => return,
                permit = gate.slot() => permit,
            };
            let (stream, reserve) = tokio::select! {
                () = tx.closed() => return,
                accepted = gate.accept(&listener) => accepted,
            };
            let slot = Slot {
                _permit: permit,
                _reserve: reserve,
            };
            if tx
                .send(Ok(Guarded::new(
                    stream,
                    slot,
                    gate.timeouts,
                    Some(gate.shutdown.clone()),
                )))
                .await
                .is_err()
            {
                return;
            }
        }
    });
    ReceiverStream::new(rx)
}

/// Serves a TLS listener: connections through its gate, at most `handshakes` handshakes
/// at once, each within [`HANDSHAKE_TIMEOUT`]; failures are logged rate-limited.
pub(crate) fn tls(
    listener: TcpListener,
    acceptor: TlsAcceptor,
    mut gate: Gate,
    handshakes: usize,
) -> ReceiverStream<io::Result<Guarded<TlsStream<TcpStream>>>> {
    let (tx, rx) = mpsc::channel(QUEUE);
    let pending = Arc::new(Semaphore::new(handshakes));
    let refused = Arc::new(Mutex::new(RateLimit::default()));
    tokio::spawn(async move {
        let mut busy = RateLimit::default();
        loop {
            let permit = tokio::select! {
                () = tx.closed() => return,
                permit = gate.slot() => permit,
            };
            let handshake = match Arc::clone(&pending).try_acquire_owned() {
                Ok(handshake) => handshake,
                Err(_) => {
                    if let Some(held_back) = busy.check() {
                        tracing::warn!(
                            listener = %gate.listener,
                            handshakes,
                            times_since_last_report = held_back,
                            "TLS handshakes at their limit; new connections wait in the backlog"
                        );
                    }
                    tokio::select! {
                        () = tx.closed() => return,
                        handshake = Arc::clone(&pending).acquire_owned() => match handshake {
                            Ok(handshake) => handshake,
                            Err(_) => return,
                        },
                    }
                }
            };
            let (stream, _) = tokio::select! {
                () = tx.closed() => return,
                accepted = gate.accept(&listener) => accepted,
            };
            let (acceptor, tx, refused) = (acceptor.clone(), tx.clone(), Arc::clone(&refused));
            let (timeouts, shutdown) = (gate.timeouts, gate.shutdown.clone());
            tokio::spawn(async move {
                let peer = stream.peer_addr().ok();
                let outcome =
                    tokio::time::timeout(HANDSHAKE_TIMEOUT, acceptor.accept(stream)).await;
                drop(handshake);
                let why = match outcome {
                    Ok(Ok(tls)) => {
                        let slot = Slot {
                            _permit: permit,
                            _reserve: None,
                        };
                        let conn = Guarded::new(tls, slot, timeouts, Some(shutdown));
                        let _ = tx.send(Ok(conn)).await;
                        return;
                    }
                    Ok(Err(e)) => e.to_string(),
                    Err(_) => format!("not finished within {HANDSHAKE_TIMEOUT:?}"),
                };
                let report = refused
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .check();
                if let Some(held_back) = report {
                    tracing::warn!(
                        ?peer,
                        error = %why,
                        refused_since_last_report = held_back,
                        "TLS handshake refused"
                    );
                }
            });
        }
    });
    ReceiverStream::new(rx)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn budgets_fit_the_fd_limit_and_tcp_never_takes_more_than_half() {
        let limits = LimitsConfig::default();
        let unlimited = Budgets::new(&limits, 1, 1, None);
        assert_eq!(
            (unlimited.per_tcp, unlimited.per_unix),
            (limits.max_tcp_connections, limits.max_unix_connections)
        );
        // The packaged unit's LimitNOFILE=65536: the configured budgets.
        let unit = Budgets::new(&limits, 1, 1, Some(65536));
        assert_eq!(unit, unlimited);
        // ulimit -n 128: 48 kept back, 32 for counter files, TCP 24, Unix 24.
        let low = Budgets::new(&limits, 1, 1, Some(128));
        assert_eq!((low.per_tcp, low.per_unix), (24, 24));
        // Two TCP listeners share TCP's half (1024 - 128 - 256 counter files = 640).
        let two = Budgets::new(&limits, 2, 1, Some(1024));
        assert_eq!((two.per_tcp, two.per_unix), (160, 320));
        // Absurdly low limits still leave one connection each.
        let tiny = Budgets::new(&limits, 1, 1, Some(10));
        assert_eq!((tiny.per_tcp, tiny.per_unix), (1, 1));
    }

    #[test]
    fn the_fd_limit_is_read() {
        assert!(fd_limit().is_some_and(|n| n > 0));
    }

    #[test]
    fn the_log_is_rate_limited_and_counts_what_it_held_back() {
        let mut limit = RateLimit::default();
        let start = Instant::now();
        assert_eq!(limit.check_at(start), Some(0));
        for i in 0..1000 {
            assert_eq!(limit.check_at(start + Duration::from_millis(i)), None);
        }
        assert_eq!(limit.check_at(start + LOG_EVERY), Some(1000));
        assert_eq!(limit.check_at(start + LOG_EVERY), None);
    }

    #[tokio::test]
    async fn a_full_listener_stops_accepting_until_a_connection_closes() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("s.sock");
        let listener = UnixListener::bind(&path).expect("bind");
        let limits = LimitsConfig::default();
        let (_stop, shutdown) = watch::channel(false);
        let gate = Gate::new(
            "unix:test".to_owned(),
            2,
            FdReserve::new(),
            &limits,
            shutdown,
        );
        let mut incoming = plain(listener, gate);
        let mut clients = Vec::new();
        for _ in 0..3 {
            clients.push(UnixStream::connect(&path).await.expect("connect"));
        }
        use tokio_stream::StreamExt as _;
        let first = incoming.next().await.expect("first").expect("ok");
        let _second = incoming.next().await.expect("second").expect("ok");
        let third = tokio::time::timeout(Duration::from_millis(200), incoming.next()).await;
        assert!(third.is_err(), "the third waits for a slot");
        drop(first);
        let third = tokio::time::timeout(Duration::from_secs(5), incoming.next()).await;
        assert!(matches!(third, Ok(Some(Ok(_)))), "a slot freed: accepted");
    }
}
