use std::io;

use crate::netlink::NetlinkError;

/// Why an RDMA netlink request failed. Every variant names the request
/// (`RDMA_NLDEV_CMD_STAT_GET of device index 3 port 1`), so a fallback logged at debug
/// level, or a test failure, says which reading is missing and why.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RdmaNetlinkError {
    /// Creating or configuring the `NETLINK_RDMA` socket failed: `EPROTONOSUPPORT` when
    /// `ib_core` is not loaded (no RDMA stack at all).
    #[error("cannot {op} the NETLINK_RDMA socket")]
    Socket {
        /// What was being done ("create", "bind", "set the receive timeout on").
        op: &'static str,
        /// The underlying error.
        #[source]
        source: io::Error,
    },
    /// Sending a request failed.
    #[error("cannot send {request}")]
    Send {
        /// The request.
        request: String,
        /// The underlying error.
        #[source]
        source: io::Error,
    },
    /// Receiving the answer failed (including the receive timeout).
    #[error("cannot receive the answer to {request}")]
    Receive {
        /// The request.
        request: String,
        /// The underlying error.
        #[source]
        source: io::Error,
    },
    /// The kernel refused the request (its errno and extended ack), or an answer could
    /// not be decoded (naming the attribute): what the netlink reply reader shared with
    /// the route socket reports.
    #[error(transparent)]
    Answer(#[from] NetlinkError),
    /// The kernel answered, but not what was asked: no answer, several, or one about
    /// another device or port.
    #[error("unexpected answer to {request}: {detail}")]
    Unexpected {
        /// The request.
        request: String,
        /// What was wrong.
        detail: String,
    },
}

impl RdmaNetlinkError {
    /// The errno behind this error, when there is one: `EINVAL` is how the kernel says
    /// "no such device or port, or no counters there", `EOPNOTSUPP`/`EPROTONOSUPPORT`
    /// "no RDMA netlink here".
    pub fn raw_os_error(&self) -> Option<i32> {
        match self {
            Self::Socket { source, .. }
            | Self::Send { source, .. }
            | Self::Receive { source, .. } => source.raw_os_error(),
            Self::Answer(inner) => inner.raw_os_error(),
            Self::Unexpected { .. } => None,
        }
    }

    /// Whether the socket itself failed (send, receive, timeout), so it should be
    /// dropped and a fresh one opened, rather than the kernel answering "no".
    pub fn is_transport(&self) -> bool {
        matches!(
            self,
            Self::Socket { .. } | Self::Send { .. } | Self::Receive { .. }
        )
    }
}
