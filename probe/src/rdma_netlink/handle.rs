//! [`RdmaNetlink`]: the blocking `NETLINK_RDMA` socket, kept open across requests (a
//! sampler keeps it for a whole `Watch`), and the one exchange every request goes
//! through: send with a fresh sequence number, read whole datagrams until the answer is
//! complete, hand each message to the request's decoder.
//!
//! Blocking for the reason the route socket is (`netlink/socket.rs`): the snapshot engine
//! is synchronous, and the kernel answers at once.

use std::fmt;

use netlink_sys::{protocols::NETLINK_RDMA, Socket, SocketAddr};

use super::error::RdmaNetlinkError;
use super::message::RdmaMessage;
use crate::netlink::{
    open_kernel_socket, recv_kernel_datagram, Decoder, DumpCollector, RECV_TIMEOUT,
};

/// How often a dump the kernel marks inconsistent (`NLM_F_DUMP_INTR`) is retried.
const DUMP_ATTEMPTS: u32 = 3;

/// A `NETLINK_RDMA` socket in the network namespace it was opened in (in the kernel's
/// default "shared" mode every RDMA device is visible from every namespace). Requests:
/// [`devices`](Self::devices) and [`port_hw_counters`](Self::port_hw_counters), each
/// ending in `execute()`.
pub struct RdmaNetlink {
    socket: Socket,
    seq: u32,
    buf: Vec<u8>,
}

impl fmt::Debug for RdmaNetlink {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RdmaNetlink")
            .field("seq", &self.seq)
            .finish_non_exhaustive()
    }
}

impl RdmaNetlink {
    /// Opens and binds the socket in the calling thread's namespace. Fails with
    /// `EPROTONOSUPPORT` when the kernel has no RDMA stack loaded (`ib_core`). Reading
    /// counters needs no privilege.
    pub fn open() -> Result<Self, RdmaNetlinkError> {
        let socket = open_kernel_socket(NETLINK_RDMA)
            .map_err(|(op, source)| RdmaNetlinkError::Socket { op, source })?;
        Ok(Self {
            socket,
            seq: 0,
            buf: Vec::with_capacity(8 * 1024),
        })
    }

    /// Sends `message` and decodes every answer until the end (`NLMSG_DONE` of a dump, the
    /// ack of a single request), retrying a dump the kernel marked inconsistent.
    /// `request` names it in errors.
    pub(super) fn exchange<T>(
        &mut self,
        request: &str,
        message: &RdmaMessage,
        decode: Decoder<T>,
    ) -> Result<Vec<T>, RdmaNetlinkError> {
        for attempt in 1..=DUMP_ATTEMPTS {
            self.seq = self.seq.wrapping_add(1);
            let bytes = message.encode(self.seq);
            self.socket
                .send_to(&bytes, &SocketAddr::new(0, 0), 0)
                .map_err(|source| RdmaNetlinkError::Send {
                    request: request.to_owned(),
                    source,
                })?;
            let mut collector = DumpCollector::with_decoder(request, self.seq, decode);
            loop {
                self.recv_datagram(request)?;
                if collector.feed(&self.buf)? {
                    break;
                }
            }
            if !collector.interrupted {
                return Ok(collector.messages);
            }
            tracing::debug!(
                request,
                attempt,
                "RDMA dump interrupted by concurrent changes"
            );
        }
        Err(crate::netlink::NetlinkError::DumpInterrupted {
            request: request.to_owned(),
            attempts: DUMP_ATTEMPTS,
        }
        .into())
    }

    /// Reads one whole datagram from the kernel into `self.buf` (the route socket's
    /// reader, [`recv_kernel_datagram`]).
    fn recv_datagram(&mut self, request: &str) -> Result<(), RdmaNetlinkError> {
        recv_kernel_datagram(&self.socket, &mut self.buf, RECV_TIMEOUT).map_err(|source| {
            RdmaNetlinkError::Receive {
                request: request.to_owned(),
                source,
            }
        })
    }
}
