//! The one request/answer loop of every kernel netlink socket here (route, RDMA, DCB):
//! open and configure the socket, send a request with a fresh sequence number, read whole
//! datagrams until the answer is complete, hand each message to the request's decoder,
//! and retry a dump the kernel marked inconsistent. The families differ only in how a
//! request is encoded and an answer decoded, which the caller gives.

use std::fmt;
use std::io;
use std::time::Duration;

use netlink_sys::{Socket, SocketAddr};
use nix::libc::{MSG_PEEK, MSG_TRUNC};
use nix::sys::socket::{setsockopt, sockopt::ReceiveTimeout};
use nix::sys::time::{TimeVal, TimeValLike};

use super::dump::{Decoder, DumpCollector};
use super::error::NetlinkError;

/// How long one `recv` may wait. The kernel answers at once; this only bounds a hang
/// caused by a bug, so a snapshot fails with a message instead of blocking forever.
const RECV_TIMEOUT: Duration = Duration::from_secs(5);

/// How often a dump interrupted by concurrent changes (`NLM_F_DUMP_INTR`) is retried.
const DUMP_ATTEMPTS: u32 = 3;

/// A bound kernel netlink socket with its sequence number and receive buffer.
pub(crate) struct KernelSocket {
    socket: Socket,
    seq: u32,
    buf: Vec<u8>,
}

impl fmt::Debug for KernelSocket {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("KernelSocket")
            .field("seq", &self.seq)
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
            socket,
            seq: 0,
            buf: Vec::with_capacity(capacity),
        })
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
            self.socket
                .send_to(&bytes, &SocketAddr::new(0, 0), 0)
                .map_err(|source| NetlinkError::Send {
                    request: request.to_owned(),
                    source,
                })?;
            let mut collector = DumpCollector::with_decoder(request, self.seq, decode);
            loop {
                recv_kernel_datagram(&self.socket, &mut self.buf, RECV_TIMEOUT).map_err(
                    |source| NetlinkError::Receive {
                        request: request.to_owned(),
                        source,
                    },
                )?;
                if collector.feed(&self.buf)? {
                    break;
                }
            }
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
