//! The one request/answer loop of every kernel netlink socket here (route, RDMA, DCB):
//! open and configure the socket, send a request with a fresh sequence number, read whole
//! datagrams until the answer is complete, hand each message to the request's decoder,
//! and retry a dump the kernel marked inconsistent. The families differ only in how a
//! request is encoded and an answer decoded, which the caller gives.
//!
//! Two things happen here for every family at once: while a capture records
//! ([`crate::capture`]), each exchange's request and answer datagrams are noted (one
//! relaxed atomic load per exchange when none records); and a socket opened on a
//! capture's recording ([`NetlinkAccess::Replay`]) is answered from it instead of the
//! kernel, through the same reply reader.

use std::fmt;
use std::io;
use std::sync::Arc;
use std::time::Duration;

use netlink_sys::{Socket, SocketAddr};
use nix::libc::{MSG_PEEK, MSG_TRUNC};
use nix::sys::socket::{setsockopt, sockopt::ReceiveTimeout};
use nix::sys::time::{TimeVal, TimeValLike};

use super::dump::{Decoder, DumpCollector};
use super::error::NetlinkError;
use super::replay::{NetlinkAccess, NetlinkReplay};
use crate::capture;

/// How long one `recv` may wait. The kernel answers at once; this only bounds a hang
/// caused by a bug, so a snapshot fails with a message instead of blocking forever.
const RECV_TIMEOUT: Duration = Duration::from_secs(5);

/// How often a dump interrupted by concurrent changes (`NLM_F_DUMP_INTR`) is retried.
const DUMP_ATTEMPTS: u32 = 3;

/// A bound kernel netlink socket (or a capture's recording standing in for one) with its
/// sequence number and receive buffer.
pub(crate) struct KernelSocket {
    transport: Transport,
    protocol: isize,
    seq: u32,
    buf: Vec<u8>,
}

/// Who answers the requests.
enum Transport {
    Kernel(Socket),
    Replay(Arc<NetlinkReplay>),
}

impl fmt::Debug for KernelSocket {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let replay = match &self.transport {
            Transport::Kernel(_) => None,
            Transport::Replay(replay) => Some(replay.path()),
        };
        f.debug_struct("KernelSocket")
            .field("seq", &self.seq)
            .field("replay", &replay)
            .finish_non_exhaustive()
    }
}

impl KernelSocket {
    /// Opens a socket of `protocol` ([`open_kernel_socket`]) with a receive buffer of
    /// `capacity` bytes to start with (it grows to the largest datagram).
    pub(crate) fn open(protocol: isize, capacity: usize) -> Result<Self, NetlinkError> {
        let socket = open_kernel_socket(protocol)
            .map_err(|(op, source)| NetlinkError::Socket { op, source })?;
        Ok(Self {
            transport: Transport::Kernel(socket),
            protocol,
            seq: 0,
            buf: Vec::with_capacity(capacity),
        })
    }

    /// [`open`](Self::open) on the live kernel, or a socket answered by a capture's
    /// recording; the access's refusal when it has neither.
    pub(crate) fn open_via(
        access: &NetlinkAccess,
        protocol: isize,
        capacity: usize,
    ) -> Result<Self, NetlinkError> {
        match access {
            NetlinkAccess::Live => Self::open(protocol, capacity),
            NetlinkAccess::Replay(replay) => Ok(Self {
                transport: Transport::Replay(Arc::clone(replay)),
                protocol,
                seq: 0,
                buf: Vec::with_capacity(capacity),
            }),
            other => Err(other
                .refusal()
                .unwrap_or_else(|| unreachable!("only Live and Replay answer"))),
        }
    }

    /// Sends the request `encode` makes for a sequence number and decodes every answer
    /// until its end (`NLMSG_DONE` of a dump, the ack of a single request), retrying a
    /// dump the kernel marked inconsistent. `request` names it in errors.
    pub(crate) fn exchange<T>(
        &mut self,
        request: &str,
        encode: impl Fn(u32) -> Vec<u8>,
        decode: Decoder<T>,
    ) -> Result<Vec<T>, NetlinkError> {
        for attempt in 1..=DUMP_ATTEMPTS {
            self.seq = self.seq.wrapping_add(1);
            let bytes = encode(self.seq);
            let mut collector = DumpCollector::with_decoder(request, self.seq, decode);
            // Read once per exchange: the whole cost of the recording point when off.
            let mut trace = capture::is_active().then(Vec::new);
            let outcome = self.attempt(request, &bytes, &mut collector, trace.as_mut());
            if let Some(datagrams) = trace {
                // An exchange the kernel ended (answers, an error answer) is recorded;
                // one that failed on the socket has no answer to replay.
                if !matches!(
                    outcome,
                    Err(NetlinkError::Send { .. } | NetlinkError::Receive { .. })
                ) {
                    capture::note_netlink(self.protocol as i32, request, &bytes, &datagrams);
                }
            }
            outcome?;
            if !collector.interrupted {
                return Ok(collector.messages);
            }
            tracing::debug!(request, attempt, "dump interrupted by concurrent changes");
        }
        Err(NetlinkError::DumpInterrupted {
            request: request.to_owned(),
            attempts: DUMP_ATTEMPTS,
        })
    }

    /// One request and its answers into `collector`; each datagram also into `trace`
    /// when a capture records.
    fn attempt<T>(
        &mut self,
        request: &str,
        bytes: &[u8],
        collector: &mut DumpCollector<'_, T>,
        mut trace: Option<&mut Vec<Vec<u8>>>,
    ) -> Result<(), NetlinkError> {
        match &self.transport {
            Transport::Kernel(socket) => {
                socket
                    .send_to(bytes, &SocketAddr::new(0, 0), 0)
                    .map_err(|source| NetlinkError::Send {
                        request: request.to_owned(),
                        source,
                    })?;
                loop {
                    recv_kernel_datagram(socket, &mut self.buf, RECV_TIMEOUT).map_err(
                        |source| NetlinkError::Receive {
                            request: request.to_owned(),
                            source,
                        },
                    )?;
                    if let Some(trace) = trace.as_deref_mut() {
                        trace.push(self.buf.clone());
                    }
                    if collector.feed(&self.buf)? {
                        return Ok(());
                    }
                }
            }
            Transport::Replay(replay) => {
                for mut message in replay.answer(self.protocol as i32, bytes, request)? {
                    capture::stamp_sequence(&mut message, self.seq);
                    if let Some(trace) = trace.as_deref_mut() {
                        trace.push(message.clone());
                    }
                    if collector.feed(&message)? {
                        return Ok(());
                    }
                }
                Err(NetlinkError::Recording {
                    path: replay.path().to_owned(),
                    reason: format!("the recorded answer to {request} stops before its end"),
                })
            }
        }
    }
}

/// A netlink socket of `protocol`, bound, with the [`RECV_TIMEOUT`] receive timeout and
/// extended and capped acks where the kernel has them (4.12+: EINVAL then comes with a
/// sentence; an older kernel refuses the options, which only costs the sentence). On
/// failure, the step that failed.
fn open_kernel_socket(protocol: isize) -> Result<Socket, (&'static str, io::Error)> {
    let mut socket = Socket::new(protocol).map_err(|e| ("create", e))?;
    socket.bind_auto().map_err(|e| ("bind", e))?;
    let timeout = TimeVal::milliseconds(RECV_TIMEOUT.as_millis() as i64);
    setsockopt(&socket, ReceiveTimeout, &timeout)
        .map_err(|e| ("set the receive timeout on", io::Error::from(e)))?;
    if let Err(e) = socket.set_ext_ack(true) {
        tracing::debug!(protocol, error = %e, "NETLINK_EXT_ACK unavailable");
    }
    if let Err(e) = socket.set_cap_ack(true) {
        tracing::debug!(protocol, error = %e, "NETLINK_CAP_ACK unavailable");
    }
    Ok(socket)
}

/// Reads one whole datagram from the kernel into `buf`, however large: its size is
/// peeked first, because a truncated netlink datagram is lost. Datagrams not from the
/// kernel (port id 0) are ignored; `EINTR` is retried; the socket's receive timeout
/// (`timeout`, set on it beforehand) becomes `TimedOut` naming it.
fn recv_kernel_datagram(socket: &Socket, buf: &mut Vec<u8>, timeout: Duration) -> io::Result<()> {
    loop {
        // MSG_TRUNC makes the peek report the full length without copying it all.
        let mut probe = Vec::with_capacity(16);
        let received = socket
            .recv_from(&mut probe, MSG_PEEK | MSG_TRUNC)
            .and_then(|(len, _)| {
                buf.clear();
                buf.reserve(len);
                socket.recv_from(buf, 0)
            });
        match received {
            Ok((_, from)) if from.port_number() != 0 => {
                tracing::debug!(
                    port = from.port_number(),
                    "datagram not from the kernel ignored"
                );
            }
            Ok(_) => return Ok(()),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                return Err(io::Error::new(
                    io::ErrorKind::TimedOut,
                    format!("no answer within {} s", timeout.as_secs()),
                ));
            }
            Err(e) => return Err(e),
        }
    }
}
