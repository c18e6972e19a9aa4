//! ethtool over generic netlink (`ethtool -g`/`-G`): an interface's ring sizes and the
//! driver's maxima (`ETHTOOL_MSG_RINGS_GET`), and setting one ring
//! (`ETHTOOL_MSG_RINGS_SET`), for the `ring` knob of `dpu-host`'s A/B/A experiments,
//! which must apply and revert their knob through the kernel rather than a shell string.
//!
//! Owns: resolving the `ethtool` family by name through the generic netlink controller,
//! encoding the two requests and decoding the reply by hand with netlink-packet-core's
//! attribute types (rust-netlink's `ethtool` crate has no RINGS_SET and runs on
//! netlink-proto/tokio with older netlink-packet-core/netlink-sys; sources and numbers:
//! `docs/reference/ethtool-netlink.md`), on the request loop every kernel socket here
//! shares. Must not: set anything but one RX or TX ring size.

mod abi;
mod decode;
mod error;
mod handle;
mod message;

pub use decode::RingSizes;
pub use error::EthtoolError;
pub use handle::EthtoolNetlink;
pub use message::Ring;

#[cfg(test)]
mod tests;
