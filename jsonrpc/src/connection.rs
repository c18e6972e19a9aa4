//! One live socket: a writer task, a reader task that demultiplexes replies by id, and the
//! table of calls waiting for a reply.
//!
//! Writes go through a channel to a single writer task so that a caller whose deadline
//! expires (its future is dropped) can never leave half a request on the stream. When either
//! task sees the connection end, every pending call is failed at once with the reason and the
//! connection is marked closed, so the [`Client`](crate::Client) opens a fresh one for the
//! next call.

use std::collections::HashMap;
use std::io;
use std::path::Path;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::unix::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::UnixStream;
use tokio::sync::{broadcast, mpsc, oneshot, watch};
use tokio::task::JoinHandle;

use crate::framing::{FrameDecoder, FrameError};
use crate::message::{classify, encode_answer, Incoming, Notification, Version};
use crate::Error;

/// Where a [`Client`](crate::Client)'s connection stands, published through [`Client::connection_status`](crate::Client::connection_status)
/// so a caller holding server-side state tied to one connection (an OVSDB monitor, a lock)
/// learns that it was lost and must be set up again: the client reconnects by itself on the
/// next call, but a new connection starts with none of the old one's state. It lives here,
/// with the connection that publishes it, so the client module (which holds connections)
/// and this one do not import each other.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct ConnectionStatus {
    /// How many connections have been opened so far; a new value means a new connection
    /// (0: never connected).
    pub generation: u64,
    /// True while connection `generation` is open; false before the first connect and after
    /// it ended (until the next call reconnects).
    pub connected: bool,
}

/// Size of one socket read.
const READ_CHUNK: usize = 64 * 1024;
/// Requests queued for the writer task before callers wait.
const OUTGOING_QUEUE: usize = 64;

type Reply = Result<Value, Error>;

/// An open connection; dropping it stops both tasks and closes the socket.
#[derive(Debug)]
pub(crate) struct Connection {
    shared: Arc<Shared>,
    outgoing: mpsc::Sender<Vec<u8>>,
    reader: JoinHandle<()>,
    writer: JoinHandle<()>,
}

/// State both tasks and all callers see.
#[derive(Debug)]
struct Shared {
    state: Mutex<State>,
    /// Where the end of this connection is published, and this connection's generation.
    status: watch::Sender<ConnectionStatus>,
    generation: u64,
}

#[derive(Debug, Default)]
struct State {
    pending: HashMap<u64, Slot>,
    closed: Option<CloseReason>,
}

#[derive(Debug)]
struct Slot {
    method: String,
    sent_at: Instant,
    reply: oneshot::Sender<Reply>,
}

/// Why a connection ended; turned into one error per pending call.
#[derive(Debug, Clone)]
enum CloseReason {
    Eof {
        partial: usize,
    },
    Io {
        kind: io::ErrorKind,
        message: String,
    },
    FrameTooLarge {
        limit: usize,
    },
    Syntax(String),
}

impl CloseReason {
    fn error_for(&self, method: &str) -> Error {
        let method = method.to_owned();
        match self {
            Self::Eof { partial: 0 } => Error::ConnectionClosed {
                method,
                reason: "the peer closed the connection".to_owned(),
            },
            Self::Eof { partial } => Error::ConnectionClosed {
                method,
                reason: format!("the peer closed the connection mid-message ({partial} bytes)"),
            },
            Self::Io { kind, message } => Error::Io {
                method,
                source: io::Error::new(*kind, message.clone()),
            },
            Self::FrameTooLarge { limit } => Error::FrameTooLarge { limit: *limit },
            Self::Syntax(detail) => Error::Protocol {
                detail: format!("the peer sent invalid JSON: {detail}"),
            },
        }
    }

    fn io(e: &io::Error) -> Self {
        Self::Io {
            kind: e.kind(),
            message: e.to_string(),
        }
    }
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Marks the connection dead and fails every pending call; the first reason wins.
    fn close(&self, reason: CloseReason) {
        let mut state = self.lock();
        if state.closed.is_some() {
            return;
        }
        let pending = state.pending.len();
        if pending == 0 && matches!(reason, CloseReason::Eof { partial: 0 }) {
            tracing::debug!("JSON-RPC peer closed an idle connection");
        } else {
            tracing::warn!(?reason, pending, "JSON-RPC connection lost");
        }
        for (_, slot) in state.pending.drain() {
            let _ = slot.reply.send(Err(reason.error_for(&slot.method)));
        }
        state.closed = Some(reason);
        drop(state);
        let generation = self.generation;
        // A newer connection's status is never overwritten by an old one ending.
        self.status.send_if_modified(|status| {
            if status.generation > generation {
                return false;
            }
            *status = ConnectionStatus {
                generation,
                connected: false,
            };
            true
        });
    }
}

/// Removes a call's pending slot when the call ends for any reason (reply, timeout, the
/// caller dropping its future), so abandoned calls never accumulate.
#[derive(Debug)]
pub(crate) struct PendingGuard {
    shared: Arc<Shared>,
    id: u64,
}

impl Drop for PendingGuard {
    fn drop(&mut self) {
        self.shared.lock().pending.remove(&self.id);
    }
}

/// Everything the reader task needs besides the socket.
struct ReaderContext {
    shared: Arc<Shared>,
    version: Version,
    max_frame: usize,
    outgoing: mpsc::Sender<Vec<u8>>,
    notifications: broadcast::Sender<Notification>,
}

impl Connection {
    /// Connects to `path` and starts the reader and writer tasks; when the connection ends
    /// it publishes `{generation, connected: false}` on `status`.
    pub(crate) async fn open(
        path: &Path,
        version: Version,
        connect_timeout: Duration,
        max_frame: usize,
        notifications: broadcast::Sender<Notification>,
        (status, generation): (watch::Sender<ConnectionStatus>, u64),
    ) -> Result<Self, Error> {
        let stream = match tokio::time::timeout(connect_timeout, UnixStream::connect(path)).await {
            Ok(Ok(stream)) => stream,
            Ok(Err(source)) => {
                return Err(Error::Connect {
                    path: path.to_owned(),
                    source,
                })
            }
            Err(_) => {
                return Err(Error::Connect {
                    path: path.to_owned(),
                    source: io::Error::new(
                        io::ErrorKind::TimedOut,
                        format!("connect timed out after {connect_timeout:?}"),
                    ),
                })
            }
        };
        tracing::debug!(path = %path.display(), "JSON-RPC connection established");
        let (rd, wr) = stream.into_split();
        let shared = Arc::new(Shared {
            state: Mutex::new(State::default()),
            status,
            generation,
        });
        let (outgoing, queue) = mpsc::channel(OUTGOING_QUEUE);
        let ctx = ReaderContext {
            shared: Arc::clone(&shared),
            version,
            max_frame,
            outgoing: outgoing.clone(),
            notifications,
        };
        let reader = tokio::spawn(read_loop(rd, ctx));
        let writer = tokio::spawn(write_loop(wr, queue, Arc::clone(&shared)));
        Ok(Self {
            shared,
            outgoing,
            reader,
            writer,
        })
    }

    /// Which connection of its client this is (see [`ConnectionStatus::generation`]).
    pub(crate) fn generation(&self) -> u64 {
        self.shared.generation
    }

    /// True once the peer or a socket error ended this connection.
    pub(crate) fn is_closed(&self) -> bool {
        self.shared.lock().closed.is_some()
    }

    /// Reserves the slot the reply for `id` will be delivered to.
    pub(crate) fn register(
        &self,
        id: u64,
        method: &str,
    ) -> Result<(PendingGuard, oneshot::Receiver<Reply>), Error> {
        let mut state = self.shared.lock();
        if let Some(reason) = &state.closed {
            return Err(reason.error_for(method));
        }
        let (reply, rx) = oneshot::channel();
        let slot = Slot {
            method: method.to_owned(),
            sent_at: Instant::now(),
            reply,
        };
        state.pending.insert(id, slot);
        let guard = PendingGuard {
            shared: Arc::clone(&self.shared),
            id,
        };
        Ok((guard, rx))
    }

    /// Queues one encoded message for the writer task.
    pub(crate) async fn send(&self, method: &str, bytes: Vec<u8>) -> Result<(), Error> {
        self.outgoing
            .send(bytes)
            .await
            .map_err(|_| Error::ConnectionClosed {
                method: method.to_owned(),
                reason: "the connection's writer has stopped".to_owned(),
            })
    }

    /// Calls still waiting for a reply (tests check that timeouts clean up).
    #[cfg(test)]
    pub(crate) fn pending_len(&self) -> usize {
        self.shared.lock().pending.len()
    }
}

impl Drop for Connection {
    fn drop(&mut self) {
        self.reader.abort();
        self.writer.abort();
    }
}

async fn write_loop(
    mut wr: OwnedWriteHalf,
    mut queue: mpsc::Receiver<Vec<u8>>,
    shared: Arc<Shared>,
) {
    while let Some(bytes) = queue.recv().await {
        if let Err(e) = wr.write_all(&bytes).await {
            shared.close(CloseReason::io(&e));
            return;
        }
    }
}

async fn read_loop(mut rd: OwnedReadHalf, ctx: ReaderContext) {
    let reason = read_until_closed(&mut rd, &ctx).await;
    ctx.shared.close(reason);
}

async fn read_until_closed(rd: &mut OwnedReadHalf, ctx: &ReaderContext) -> CloseReason {
    let mut decoder = FrameDecoder::new(ctx.max_frame);
    let mut chunk = vec![0_u8; READ_CHUNK];
    loop {
        loop {
            match decoder.next_frame() {
                Ok(Some(value)) => dispatch(ctx, value),
                Ok(None) => break,
                Err(FrameError::TooLarge { limit }) => return CloseReason::FrameTooLarge { limit },
                Err(FrameError::Syntax(e)) => return CloseReason::Syntax(e.to_string()),
            }
        }
        match rd.read(&mut chunk).await {
            Ok(0) => {
                return CloseReason::Eof {
                    partial: decoder.buffered(),
                }
            }
            Ok(n) => decoder.extend(&chunk[..n]),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return CloseReason::io(&e),
        }
    }
}

fn dispatch(ctx: &ReaderContext, value: Value) {
    match classify(ctx.version, value) {
        Incoming::Reply { id, outcome } => {
            let Some(slot) = ctx.shared.lock().pending.remove(&id) else {
                tracing::debug!(id, "dropping reply for an abandoned or unknown call");
                return;
            };
            let result = outcome.into_result(&slot.method, id);
            tracing::debug!(
                method = %slot.method,
                id,
                elapsed_ms = slot.sent_at.elapsed().as_millis(),
                ok = result.is_ok(),
                "JSON-RPC reply"
            );
            let _ = slot.reply.send(result);
        }
        Incoming::Call { method, params, id } => {
            tracing::debug!(%method, %id, "answering server-initiated JSON-RPC call");
            let answer = encode_answer(ctx.version, &method, params, id);
            let bytes = answer.to_string().into_bytes();
            let outgoing = ctx.outgoing.clone();
            // Never block the reader on the writer: the peer may be waiting for us to read.
            tokio::spawn(async move {
                let _ = outgoing.send(bytes).await;
            });
        }
        Incoming::Notification(notification) => {
            tracing::debug!(method = %notification.method, "JSON-RPC notification");
            // No subscriber is not an error: nobody asked for notifications.
            let _ = ctx.notifications.send(notification);
        }
        Incoming::Unattributable { detail } => {
            tracing::warn!(%detail, "ignoring JSON-RPC message that matches no call");
        }
    }
}
