//! [`RdmaNetlink`]: the blocking `NETLINK_RDMA` socket, kept open across requests (a
//! sampler keeps it for a whole `Watch`), and the one exchange every request goes
//! through: send with a fresh sequence number, read whole datagrams until the answer is
//! complete, hand each message to the request's decoder.
//!
//! Blocking for the reason the route socket is (`netlink/socket.rs`): the snapshot engine
//! is synchronous, and the kernel answers at once.

use std::fmt;

use netlink_sys::protocols::NETLINK_RDMA;

use super::error::RdmaNetlinkError;
use super::message::RdmaMessage;
use crate::netlink::{Decoder, KernelSocket, NetlinkAccess, NetlinkError};

/// A `NETLINK_RDMA` socket in the network namespace it was opened in (in the kernel's
/// default "shared" mode every RDMA device is visible from every namespace). Requests:
/// [`devices`](Self::devices) and [`port_hw_counters`](Self::port_hw_counters), each
/// ending in `execute()`.
pub struct RdmaNetlink {
    kernel: KernelSocket,
}

impl fmt::Debug for RdmaNetlink {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RdmaNetlink")
            .field("kernel", &self.kernel)
            .finish_non_exhaustive()
    }
}

impl RdmaNetlink {
    /// Opens and binds the socket in the calling thread's namespace. Fails with
    /// `EPROTONOSUPPORT` when the kernel has no RDMA stack loaded (`ib_core`). Reading
    /// counters needs no privilege.
    pub fn open() -> Result<Self, RdmaNetlinkError> {
        Self::open_via(&NetlinkAccess::Live)
    }

    /// A socket on `access`: the live kernel ([`open`](Self::open)) or a capture's
    /// recording.
    pub fn open_via(access: &NetlinkAccess) -> Result<Self, RdmaNetlinkError> {
        let kernel =
            KernelSocket::open_via(access, NETLINK_RDMA, 8 * 1024).map_err(|e| match e {
                NetlinkError::Socket { op, source } => RdmaNetlinkError::Socket { op, source },
                other => RdmaNetlinkError::Answer(other),
            })?;
        Ok(Self { kernel })
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
        // The socket's own failures stay transport errors (`is_transport`: the sampler
        // drops the socket and opens a fresh one); the kernel's answers stay answers.
        self.kernel
            .exchange(request, |seq| message.encode(seq), decode)
            .map_err(|e| match e {
                NetlinkError::Send { request, source } => {
                    RdmaNetlinkError::Send { request, source }
                }
                NetlinkError::Receive { request, source } => {
                    RdmaNetlinkError::Receive { request, source }
                }
                other => RdmaNetlinkError::Answer(other),
            })
    }
}
