use std::io;

use crate::netlink::NetlinkError;

/// Why the DCB configuration of an interface could not be read. Every variant names the
/// interface, so a skipped check says which rail and why.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DcbError {
    /// The name cannot be an interface name (empty, too long, `/`, whitespace, NUL):
    /// refused before any request is sent.
    #[error("invalid interface name {ifname:?}: {reason}")]
    InvalidName {
        /// The name as given.
        ifname: String,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// The root is a fixture or a mounted image: DCB lives in the running kernel's
    /// driver, which has nothing to say about another tree.
    #[error("DCB is read over netlink from the running kernel only, not under --sys-root {root}")]
    NotLive {
        /// The root given.
        root: String,
    },
    /// The kernel answered `EOPNOTSUPP` (no `dcbnl_ops`: a virtual device, a driver
    /// without DCB) or `EINVAL` (the driver refuses the IEEE interface).
    #[error("{ifname} does not support DCB (the kernel answered: {source})")]
    NotSupported {
        /// The interface.
        ifname: String,
        /// The errno.
        #[source]
        source: io::Error,
    },
    /// The driver refused a `DCB_CMD_IEEE_SET` (its errno, from the answer's status).
    #[error("{ifname}: the driver refused the DCB change (it answered: {source})")]
    Refused {
        /// The interface.
        ifname: String,
        /// The driver's errno.
        #[source]
        source: io::Error,
    },
    /// Opening the socket, the exchange, or decoding the answer failed.
    #[error("DCB netlink exchange about {ifname} failed")]
    Netlink {
        /// The interface.
        ifname: String,
        /// What failed (the request, errno and extended ack, or the attribute).
        #[source]
        source: NetlinkError,
    },
    /// The kernel answered, but not one configuration of the interface asked about.
    #[error("unexpected answer about {ifname}: {detail}")]
    Unexpected {
        /// The interface.
        ifname: String,
        /// What was wrong.
        detail: String,
    },
}
