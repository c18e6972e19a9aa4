use std::io;

use crate::netlink::NetlinkError;

/// Why an interface's ring sizes could not be read or set. Every variant but the family
/// lookup names the interface, so a refused experiment says which NIC and why.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum EthtoolError {
    /// The name cannot be an interface name: refused before any request is sent.
    #[error("invalid interface name {ifname:?}: {reason}")]
    InvalidName {
        /// The name as given.
        ifname: String,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// The socket could not be opened, or the controller could not resolve the `ethtool`
    /// family (a kernel built without `CONFIG_ETHTOOL_NETLINK`, before 5.6).
    #[error("cannot reach ethtool's generic netlink family")]
    Family {
        /// What failed.
        #[source]
        source: NetlinkError,
    },
    /// The driver has no ring operation (`EOPNOTSUPP`): veth, loopback, a virtio-net
    /// device without `VIRTIO_F_RING_RESET` for a set.
    #[error("{ifname}: the driver does not support {what} (the kernel answered: {source})")]
    NotSupported {
        /// The interface.
        ifname: String,
        /// "reading ring sizes" or "setting ring sizes".
        what: &'static str,
        /// The errno.
        #[source]
        source: io::Error,
    },
    /// Any other refusal or failure of the exchange (the errno and extended ack inside).
    #[error("{ifname}: {what} failed")]
    Netlink {
        /// The interface.
        ifname: String,
        /// "reading ring sizes" or "setting ring sizes".
        what: &'static str,
        /// The request, errno and extended ack, or the attribute that did not decode.
        #[source]
        source: NetlinkError,
    },
    /// The kernel answered, but not with one ring reply about the interface asked about.
    #[error("unexpected ethtool answer about {ifname}: {detail}")]
    Unexpected {
        /// The interface.
        ifname: String,
        /// What was wrong.
        detail: String,
    },
}
