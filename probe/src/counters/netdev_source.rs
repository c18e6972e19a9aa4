//! [`NetdevSource`], whether netdev and tc counters are read from sysfs or from netlink. A
//! leaf because both the engine ([`Sampler`](super::Sampler), which picks it) and the
//! readers in `read.rs` (which dispatch on it) need it.

use crate::SysRoot;

/// Where netdev and tc counters come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NetdevSource {
    /// `sys/class/net/*/statistics` under the root: fixtures and mounted images. tc
    /// filters are not visible this way and are reported as a source error.
    Sysfs,
    /// Netlink in the caller's network namespace: the live system, or a capture's
    /// recording of it (see [`NetlinkAccess`](crate::netlink::NetlinkAccess)).
    Netlink,
}

impl NetdevSource {
    /// Netlink when the root is the live `/` or a capture's reading with a netlink
    /// recording, sysfs otherwise.
    pub fn for_root(root: &SysRoot) -> Self {
        if crate::netlink::answers_netlink(root) {
            Self::Netlink
        } else {
            Self::Sysfs
        }
    }
}
