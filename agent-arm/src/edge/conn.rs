//! One accepted connection as the server sees it: it holds its listener's connection slot
//! until it closes, and it is closed by the agent when the client sends no HTTP/2 preface
//! in time (`[limits] preface_timeout`) or keeps it open with no call in progress for too
//! long (`[limits] idle_timeout`, gRPC's MAX_CONNECTION_IDLE). Once the agent shuts down,
//! a connection with no call in progress (or none started) is closed after
//! [`SHUTDOWN_LINGER`], so clients that never answer hyper's goodbye cannot hold SIGTERM
//! for the whole grace period.
//!
//! hyper has neither timeout for HTTP/2, so the wrapper watches the frame headers going
//! each way (9 bytes each: length, type, flags, stream; payloads are skipped, never
//! buffered) and counts the streams that are open. A timeout ends the connection by
//! failing the server's next read.

use std::collections::HashMap;
use std::future::Future;
use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::sync::{watch, OwnedSemaphorePermit};
use tokio::time::{Instant, Sleep};
use tonic::transport::server::Connected;

use crate::edge::fd_reserve::ReserveSlot;

/// The client's connection preface ("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"), before its frames.
const PREFACE_LEN: usize = 24;
const FRAME_HEADER_LEN: usize = 9;
const DATA: u8 = 0x0;
const HEADERS: u8 = 0x1;
const RST_STREAM: u8 = 0x3;
const END_STREAM: u8 = 0x1;
/// Streams tracked per connection; past this (hyper refuses streams over
/// `max_streams_per_connection` long before) the connection is never closed as idle.
const MAX_TRACKED_STREAMS: usize = 4096;
/// How long an idle connection may stay once the agent shuts down (time for the client
/// to read the GOAWAY and answer its PING).
const SHUTDOWN_LINGER: Duration = Duration::from_secs(1);

/// The two timeouts of a connection.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Timeouts {
    pub(crate) preface: Duration,
    pub(crate) idle: Duration,
}

/// What a connection holds while it is open: its listener's connection slot and, for a
/// Unix connection accepted with the spare descriptor, that spare.
#[derive(Debug)]
pub(crate) struct Slot {
    pub(crate) _permit: OwnedSemaphorePermit,
    pub(crate) _reserve: Option<ReserveSlot>,
}

/// An accepted stream (TCP, Unix or TLS) with its slot and timeouts.
#[derive(Debug)]
pub(crate) struct Guarded<IO> {
    io: IO,
    _slot: Slot,
    watch: H2Watch,
}

impl<IO> Guarded<IO> {
    /// `shutdown` turns true when the agent stops.
    pub(crate) fn new(
        io: IO,
        slot: Slot,
        timeouts: Timeouts,
        shutdown: Option<watch::Receiver<bool>>,
    ) -> Self {
        let mut watch = H2Watch::new(timeouts);
        watch.stop = shutdown.map(|mut shutdown| {
            StopSignal(Box::pin(async move {
                // An error means the sender is gone, which also means stop.
                let _ = shutdown.wait_for(|stop| *stop).await;
            }))
        });
        Self {
            io,
            _slot: slot,
            watch,
        }
    }
}

impl<IO: Connected> Connected for Guarded<IO> {
    type ConnectInfo = IO::ConnectInfo;

    fn connect_info(&self) -> Self::ConnectInfo {
        self.io.connect_info()
    }
}

impl<IO: AsyncRead + Unpin> AsyncRead for Guarded<IO> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        if let Some(why) = this.watch.expired {
            return Poll::Ready(Err(timed_out(why)));
        }
        let before = buf.filled().len();
        match Pin::new(&mut this.io).poll_read(cx, buf) {
            Poll::Ready(Ok(())) => {
                this.watch.on_bytes(Side::Client, &buf.filled()[before..]);
                this.watch.settle();
                Poll::Ready(Ok(()))
            }
            Poll::Ready(Err(e)) => Poll::Ready(Err(e)),
            Poll::Pending => this.watch.poll_deadline(cx),
        }
    }
}

impl<IO: AsyncWrite + Unpin> AsyncWrite for Guarded<IO> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let written = std::task::ready!(Pin::new(&mut this.io).poll_write(cx, buf))?;
        this.watch.on_bytes(Side::Server, &buf[..written]);
        this.after_write(cx);
        Poll::Ready(Ok(written))
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let written = std::task::ready!(Pin::new(&mut this.io).poll_write_vectored(cx, bufs))?;
        let mut left = written;
        for buf in bufs {
            if left == 0 {
                break;
            }
            let n = left.min(buf.len());
            this.watch.on_bytes(Side::Server, &buf[..n]);
            left -= n;
        }
        this.after_write(cx);
        Poll::Ready(Ok(written))
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().io).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().io).poll_shutdown(cx)
    }
}

impl<IO> Guarded<IO> {
    fn after_write(&mut self, cx: &mut Context<'_>) {
        if self.watch.settle() {
            // The idle timer was just set, but only a read registers it with the
            // connection's task: have the task poll its read again.
            cx.waker().wake_by_ref();
        }
    }
}

fn timed_out(why: Deadline) -> io::Error {
    let what = match why {
        Deadline::Preface => "no HTTP/2 preface within the preface timeout",
        Deadline::Idle => "no call within the idle timeout",
        Deadline::Shutdown => "the agent is shutting down",
    };
    io::Error::new(io::ErrorKind::TimedOut, what)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Side {
    Client,
    Server,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Deadline {
    Preface,
    Idle,
    Shutdown,
}

/// Resolves when the agent shuts down.
struct StopSignal(Pin<Box<dyn Future<Output = ()> + Send>>);

impl std::fmt::Debug for StopSignal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("StopSignal")
    }
}

/// Which ends of an open stream have finished sending.
#[derive(Debug, Clone, Copy, Default)]
struct Ends {
    client: bool,
    server: bool,
}

/// Splits one direction's bytes into frame headers.
#[derive(Debug)]
struct Frames {
    header: [u8; FRAME_HEADER_LEN],
    have: usize,
    /// Bytes to pass over before the next header (a payload, or the client preface).
    skip: usize,
}

impl Frames {
    fn new(skip: usize) -> Self {
        Self {
            header: [0; FRAME_HEADER_LEN],
            have: 0,
            skip,
        }
    }

    /// The next complete frame header in `bytes` (consuming what it reads): type, flags,
    /// stream.
    fn next(&mut self, bytes: &mut &[u8]) -> Option<(u8, u8, u32)> {
        loop {
            if bytes.is_empty() {
                return None;
            }
            if self.skip > 0 {
                let n = self.skip.min(bytes.len());
                self.skip -= n;
                *bytes = &bytes[n..];
                continue;
            }
            let n = (FRAME_HEADER_LEN - self.have).min(bytes.len());
            self.header[self.have..self.have + n].copy_from_slice(&bytes[..n]);
            self.have += n;
            *bytes = &bytes[n..];
            if self.have == FRAME_HEADER_LEN {
                self.have = 0;
                let h = self.header;
                self.skip = usize::from(h[0]) << 16 | usize::from(h[1]) << 8 | usize::from(h[2]);
                let stream = u32::from_be_bytes([h[5], h[6], h[7], h[8]]) & 0x7fff_ffff;
                return Some((h[3], h[4], stream));
            }
        }
    }
}

/// The connection's HTTP/2 state as far as the timeouts need it.
#[derive(Debug)]
struct H2Watch {
    timeouts: Timeouts,
    timer: Pin<Box<Sleep>>,
    /// What the timer is set for; `None` while calls are in progress.
    armed: Option<Deadline>,
    expired: Option<Deadline>,
    /// The client has sent its preface and a frame header.
    started: bool,
    from_client: Frames,
    to_client: Frames,
    open: HashMap<u32, Ends>,
    highest_stream: u32,
    /// A stream closed since the timer was last set: idleness starts again.
    closed_one: bool,
    /// Too many streams to follow: the connection is never closed as idle.
    untracked: bool,
    /// The agent's shutdown, until it happens; then `stopping`.
    stop: Option<StopSignal>,
    stopping: bool,
}

impl H2Watch {
    fn new(timeouts: Timeouts) -> Self {
        Self {
            timeouts,
            timer: Box::pin(tokio::time::sleep(timeouts.preface)),
            armed: Some(Deadline::Preface),
            expired: None,
            started: false,
            from_client: Frames::new(PREFACE_LEN),
            to_client: Frames::new(0),
            open: HashMap::new(),
            highest_stream: 0,
            closed_one: false,
            untracked: false,
            stop: None,
            stopping: false,
        }
    }

    fn on_bytes(&mut self, side: Side, mut bytes: &[u8]) {
        loop {
            let frames = match side {
                Side::Client => &mut self.from_client,
                Side::Server => &mut self.to_client,
            };
            let Some((kind, flags, stream)) = frames.next(&mut bytes) else {
                return;
            };
            if side == Side::Client && !self.started {
                self.started = true;
                self.armed = None;
            }
            self.on_frame(side, kind, flags, stream);
        }
    }

    fn on_frame(&mut self, side: Side, kind: u8, flags: u8, stream: u32) {
        if stream == 0 || self.untracked {
            return;
        }
        let ends = flags & END_STREAM != 0;
        match kind {
            HEADERS if side == Side::Client && stream > self.highest_stream => {
                // A new call (client streams only grow; a HEADERS on an older stream
                // is trailers or an error hyper answers itself).
                self.highest_stream = stream;
                if self.open.len() >= MAX_TRACKED_STREAMS {
                    self.untracked = true;
                    self.open.clear();
                    return;
                }
                self.open.insert(
                    stream,
                    Ends {
                        client: ends,
                        server: false,
                    },
                );
            }
            HEADERS | DATA if ends => {
                if let Some(state) = self.open.get_mut(&stream) {
                    match side {
                        Side::Client => state.client = true,
                        Side::Server => state.server = true,
                    }
                    if state.client && state.server {
                        self.open.remove(&stream);
                        self.closed_one = true;
                    }
                }
            }
            RST_STREAM => self.closed_one |= self.open.remove(&stream).is_some(),
            _ => {}
        }
    }

    /// Sets or clears the idle timer after traffic; true when it was just set.
    fn settle(&mut self) -> bool {
        if !self.started || self.expired.is_some() {
            return false;
        }
        let idle = self.open.is_empty() && !self.untracked;
        let set = idle && (self.armed.is_none() || self.closed_one);
        self.closed_one = false;
        if set {
            if self.stopping {
                self.set_timer(Deadline::Shutdown, SHUTDOWN_LINGER);
            } else {
                self.set_timer(Deadline::Idle, self.timeouts.idle);
            }
        } else if !idle {
            self.armed = None;
        }
        set
    }

    fn set_timer(&mut self, why: Deadline, after: Duration) {
        self.timer.as_mut().reset(Instant::now() + after);
        self.armed = Some(why);
    }

    /// Called when the server's read would block: fails the read once a deadline passed.
    fn poll_deadline(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        if let Some(stop) = self.stop.as_mut() {
            if stop.0.as_mut().poll(cx).is_ready() {
                self.stop = None;
                self.stopping = true;
                if !self.started || (self.open.is_empty() && !self.untracked) {
                    self.set_timer(Deadline::Shutdown, SHUTDOWN_LINGER);
                }
            }
        }
        let Some(why) = self.armed else {
            return Poll::Pending;
        };
        if self.timer.as_mut().poll(cx).is_pending() {
            return Poll::Pending;
        }
        self.expired = Some(why);
        let after = match why {
            Deadline::Preface => self.timeouts.preface,
            Deadline::Idle => self.timeouts.idle,
            Deadline::Shutdown => SHUTDOWN_LINGER,
        };
        tracing::debug!(?after, "closing a connection: {}", timed_out(why));
        Poll::Ready(Err(timed_out(why)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(kind: u8, flags: u8, stream: u32, payload: usize) -> Vec<u8> {
        let len = u32::try_from(payload).expect("small").to_be_bytes();
        let mut bytes = vec![len[1], len[2], len[3], kind, flags];
        bytes.extend_from_slice(&stream.to_be_bytes());
        bytes.resize(FRAME_HEADER_LEN + payload, 0xee);
        bytes
    }

    fn watch() -> H2Watch {
        H2Watch::new(Timeouts {
            preface: Duration::from_secs(10),
            idle: Duration::from_secs(300),
        })
    }

    #[tokio::test]
    async fn streams_open_and_close_across_split_reads_and_writes() {
        let mut w = watch();
        let mut client = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".to_vec();
        client.extend(frame(0x4, 0, 0, 6)); // SETTINGS
        client.extend(frame(HEADERS, 0x4, 1, 40)); // a call, request body to follow
        client.extend(frame(DATA, END_STREAM, 1, 17));
        // Byte by byte: frame headers straddle reads.
        for b in &client[..PREFACE_LEN + FRAME_HEADER_LEN - 1] {
            w.on_bytes(Side::Client, std::slice::from_ref(b));
        }
        assert!(!w.started, "the first frame header is not complete yet");
        assert!(!w.settle());
        w.on_bytes(
            Side::Client,
            &client[PREFACE_LEN + FRAME_HEADER_LEN - 1..][..1],
        );
        assert!(w.started, "preface and a frame header seen");
        assert!(w.settle(), "no call yet: the idle timer runs");
        w.on_bytes(Side::Client, &client[PREFACE_LEN + FRAME_HEADER_LEN..]);
        assert_eq!(w.open.len(), 1);
        assert!(!w.settle(), "a call in progress: no idle timer");
        assert_eq!(w.armed, None);

        let mut server = frame(0x4, 0, 0, 0);
        server.extend(frame(HEADERS, 0x4, 1, 20));
        server.extend(frame(DATA, 0, 1, 100));
        server.extend(frame(HEADERS, 0x4 | END_STREAM, 1, 30)); // trailers
        let (a, b) = server.split_at(50);
        w.on_bytes(Side::Server, a);
        assert_eq!(w.open.len(), 1);
        w.on_bytes(Side::Server, b);
        assert!(w.open.is_empty(), "both ends done");
        assert!(w.settle(), "idle timer set when the last call ends");
        assert_eq!(w.armed, Some(Deadline::Idle));

        // A refused stream (RST_STREAM from the server) also closes it.
        w.on_bytes(Side::Client, &frame(HEADERS, 0x4 | END_STREAM, 3, 10));
        assert!(!w.settle());
        w.on_bytes(Side::Server, &frame(RST_STREAM, 0, 3, 4));
        assert!(w.settle());
        // Trailers-like HEADERS on an old stream open nothing.
        w.on_bytes(Side::Client, &frame(HEADERS, END_STREAM, 1, 4));
        assert!(w.open.is_empty());
    }

    #[tokio::test]
    async fn a_silent_connection_fails_its_read_after_the_preface_timeout() {
        // Before the connection exists: its preface deadline is set when it is made, so a
        // clock started after that (late, on a slow emulated Arm) would read under 200 ms.
        let started = Instant::now();
        let (client, server) = tokio::io::duplex(1024);
        let permit = std::sync::Arc::new(tokio::sync::Semaphore::new(1))
            .try_acquire_owned()
            .expect("permit");
        let mut conn = Guarded::new(
            server,
            Slot {
                _permit: permit,
                _reserve: None,
            },
            Timeouts {
                preface: Duration::from_millis(200),
                idle: Duration::from_secs(300),
            },
            None,
        );
        let mut buf = [0u8; 64];
        let err = tokio::io::AsyncReadExt::read(&mut conn, &mut buf)
            .await
            .expect_err("timed out");
        assert_eq!(err.kind(), io::ErrorKind::TimedOut);
        let waited = started.elapsed();
        assert!(
            waited >= Duration::from_millis(200) && waited < Duration::from_secs(10),
            "{waited:?}"
        );
        drop(client);
    }

    #[tokio::test]
    async fn an_idle_connection_closes_soon_after_shutdown() {
        use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
        let (mut client, server) = tokio::io::duplex(1024);
        let permit = std::sync::Arc::new(tokio::sync::Semaphore::new(1))
            .try_acquire_owned()
            .expect("permit");
        let (stop, shutdown) = watch::channel(false);
        let mut conn = Guarded::new(
            server,
            Slot {
                _permit: permit,
                _reserve: None,
            },
            Timeouts {
                preface: Duration::from_secs(300),
                idle: Duration::from_secs(300),
            },
            Some(shutdown),
        );
        let mut hello = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".to_vec();
        hello.extend(frame(0x4, 0, 0, 0));
        client.write_all(&hello).await.expect("write");
        let mut buf = [0u8; 64];
        let n = conn.read(&mut buf).await.expect("read");
        assert_eq!(n, hello.len());
        stop.send(true).expect("stop");
        let started = Instant::now();
        let err = conn.read(&mut buf).await.expect_err("closed");
        assert_eq!(err.kind(), io::ErrorKind::TimedOut);
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "{:?}",
            started.elapsed()
        );
    }
}
