//! The `/metrics` connections that have not yet proven anything: accepted, but still in
//! their TLS handshake or not yet done sending their request's headers. They are kept apart
//! from the scrape slots, so that clients without a certificate (or plaintext slowloris
//! clients) can never keep a scraper that has one waiting: at most a budget of them is held,
//! and when one more arrives the least recently active is closed first. A real scraper
//! talks at once, so it is always the most recently active; a client that sends nothing, or
//! a byte now and then, is the first to go.

use std::collections::HashMap;
use std::io;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};
use std::time::Instant;

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::task::AbortHandle;

/// When a connection last received a byte: milliseconds since its pool was made.
#[derive(Debug, Default)]
pub(crate) struct Activity(AtomicU64);

/// The connections between accept and their request, with their budget.
#[derive(Debug)]
pub(crate) struct PreAuth {
    budget: usize,
    started: Instant,
    waiting: Mutex<Waiting>,
}

#[derive(Debug, Default)]
struct Waiting {
    next_id: u64,
    entries: HashMap<u64, Entry>,
}

#[derive(Debug)]
struct Entry {
    activity: Arc<Activity>,
    abort: Option<AbortHandle>,
}

impl Waiting {
    /// Aborts and forgets the least recently active connection whose task is known.
    fn evict_least_active(&mut self) -> bool {
        let oldest = self
            .entries
            .iter()
            .filter(|(_, e)| e.abort.is_some())
            // Ties (the same millisecond) go to the one admitted first.
            .min_by_key(|(id, e)| (e.activity.0.load(Ordering::Relaxed), **id))
            .map(|(id, _)| *id);
        let Some(entry) = oldest.and_then(|id| self.entries.remove(&id)) else {
            return false;
        };
        if let Some(abort) = entry.abort {
            abort.abort();
        }
        true
    }
}

/// A connection's place in the pool: leaves it when dropped (or [`Ticket::authenticated`]).
#[derive(Debug)]
pub(crate) struct Ticket {
    pool: Arc<PreAuth>,
    id: u64,
}

impl PreAuth {
    /// A pool that holds at most `budget` connections (at least one).
    pub(crate) fn new(budget: usize) -> Arc<Self> {
        Arc::new(Self {
            budget: budget.max(1),
            started: Instant::now(),
            waiting: Mutex::new(Waiting::default()),
        })
    }

    fn now_ms(&self) -> u64 {
        u64::try_from(self.started.elapsed().as_millis()).unwrap_or(u64::MAX)
    }

    /// Admits a connection accepted now. When the pool is full, the least recently active
    /// connection in it is closed first (its task aborted), so the pool never grows past
    /// its budget and a newcomer is never turned away for ones that stall. Returns the
    /// ticket and the connection's activity, to be fed by [`Tracked`].
    pub(crate) fn admit(self: &Arc<Self>) -> (Ticket, Arc<Activity>) {
        let activity = Arc::new(Activity(AtomicU64::new(self.now_ms())));
        let mut waiting = self.waiting.lock().unwrap_or_else(PoisonError::into_inner);
        while waiting.entries.len() >= self.budget && waiting.evict_least_active() {
            tracing::debug!("closed the least recently active unauthenticated scrape connection");
        }
        let id = waiting.next_id;
        waiting.next_id += 1;
        waiting.entries.insert(
            id,
            Entry {
                activity: Arc::clone(&activity),
                abort: None,
            },
        );
        (
            Ticket {
                pool: Arc::clone(self),
                id,
            },
            activity,
        )
    }

    /// Closes the least recently active waiting connection, if one has its task handed over
    /// ([`PreAuth::set_abort`]): makes room when every connection permit is taken. Returns
    /// whether one was closed.
    pub(crate) fn evict_one(&self) -> bool {
        self.waiting
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .evict_least_active()
    }

    /// Hands the pool the task serving connection `id`, so that it can be closed to make
    /// room. A connection that already left the pool is not affected.
    pub(crate) fn set_abort(&self, id: u64, abort: AbortHandle) {
        let mut waiting = self.waiting.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(entry) = waiting.entries.get_mut(&id) {
            entry.abort = Some(abort);
        }
    }

    /// How many connections are waiting now.
    #[cfg(test)]
    fn len(&self) -> usize {
        self.waiting
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .entries
            .len()
    }
}

impl Ticket {
    /// The connection's id in its pool, for [`PreAuth::set_abort`].
    pub(crate) fn id(&self) -> u64 {
        self.id
    }

    /// The connection sent its request: it leaves the pool and can no longer be evicted.
    pub(crate) fn authenticated(self) {}
}

impl Drop for Ticket {
    fn drop(&mut self) {
        self.pool
            .waiting
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .entries
            .remove(&self.id);
    }
}

/// A connection's stream that stamps its [`Activity`] whenever bytes arrive.
#[derive(Debug)]
pub(crate) struct Tracked<IO> {
    io: IO,
    activity: Arc<Activity>,
    pool: Arc<PreAuth>,
}

impl<IO> Tracked<IO> {
    /// `io`, stamping `activity` on the clock of `ticket`'s pool.
    pub(crate) fn new(io: IO, activity: Arc<Activity>, ticket: &Ticket) -> Self {
        Self {
            io,
            activity,
            pool: Arc::clone(&ticket.pool),
        }
    }
}

impl<IO: AsyncRead + Unpin> AsyncRead for Tracked<IO> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        let polled = Pin::new(&mut self.io).poll_read(cx, buf);
        if matches!(polled, Poll::Ready(Ok(()))) && buf.filled().len() > before {
            let now = self.pool.now_ms();
            self.activity.0.store(now, Ordering::Relaxed);
        }
        polled
    }
}

impl<IO: AsyncWrite + Unpin> AsyncWrite for Tracked<IO> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.io).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_shutdown(cx)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.io).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_full_pool_closes_its_least_recently_active_connection_first() {
        let pool = PreAuth::new(2);
        let stalled = tokio::spawn(std::future::pending::<()>());
        let (quiet, quiet_activity) = pool.admit();
        pool.set_abort(quiet.id(), stalled.abort_handle());
        let talking = tokio::spawn(std::future::pending::<()>());
        let (busy, busy_activity) = pool.admit();
        pool.set_abort(busy.id(), talking.abort_handle());
        // The second one received bytes later than the first.
        quiet_activity.0.store(1, Ordering::Relaxed);
        busy_activity.0.store(50, Ordering::Relaxed);
        assert_eq!(pool.len(), 2);
        // A third arrives: the quiet one goes, the talking one stays.
        let (newcomer, _) = pool.admit();
        assert_eq!(pool.len(), 2);
        assert!(stalled.await.is_err_and(|e| e.is_cancelled()));
        assert!(!talking.is_finished());
        // Leaving the pool (a request arrived) makes room without closing anything.
        busy.authenticated();
        assert_eq!(pool.len(), 1);
        assert!(!talking.is_finished());
        // Only a connection whose task was handed over can be evicted to make room.
        assert!(!pool.evict_one());
        drop(newcomer);
        assert_eq!(pool.len(), 0);
        talking.abort();
        drop(quiet);
    }
}
