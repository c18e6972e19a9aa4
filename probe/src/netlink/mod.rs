//! Netlink (`NETLINK_ROUTE`) readers: link statistics (`rtnl_link_stats64`), offload
//! xstats (`CPU_HIT`, the software-path count of switchdev representors) and tc filter
//! statistics (flower/u32/matchall, per action, with the hardware share), in any network
//! namespace, and their conversion to snapshot [`Sample`](crate::snapshot::Sample)s.
//!
//! Owns: building requests with netlink-packet-route, one blocking socket per namespace
//! (plus its `RTNLGRP_LINK` watch), decoding what that crate leaves raw
//! (`TCA_STATS_PKT64`, action times, extended acks) or what a hot path reads by hand
//! (`RTM_GETSTATS` counters), the ifindex → name map ([`LinkNames`]) that spares a
//! snapshot the slow link dump, and the kernel's route decision for one address
//! ([`RouteSocket::output_interface_to`]). Must not: write to the kernel (no qdisc or filter changes;
//! the one link change is [`set_link_mtu`], the MTU knob of `dpu-host`'s experiments), or
//! move a caller's thread into another namespace.
//!
//! Every kernel socket here (route, RDMA, DCB) goes through one exchange loop
//! (`exchange.rs`), where a capture records and where a capture's recording answers
//! instead of the kernel ([`NetlinkAccess`]).
//!
//! The [`RouteStats`] trait is what the snapshot engine and the agent depend on, so tests
//! can substitute canned readings; [`RouteSocket`] is the real one.

mod datagram;
mod dump;
mod error;
mod exchange;
mod link;
mod link_events;
mod link_set;
mod monitor;
mod names;
mod netns;
mod offload;
mod replay;
mod route_lookup;
mod route_stats;
mod samples;
mod socket;
mod stats;
mod tc;
mod tc_decode;

// The request encoder, reply reader and header size, shared with the RDMA, DCB and ethtool
// netlink clients.
pub(crate) use datagram::request_datagram;
#[cfg(test)]
pub(crate) use dump::DumpCollector;
pub(crate) use dump::{Decoder, HEADER_LEN};
pub use error::NetlinkError;
pub(crate) use exchange::KernelSocket;
pub(crate) use link::link_counter_unit;
pub use link::{LinkCounters, LinkStats};
pub use link_events::LinkEvents;
pub use link_set::set_link_mtu;
pub use names::LinkNames;
pub(crate) use netns::open_in as open_in_netns;
pub use netns::{netns_path, NETNS_RUN_DIR};
pub use offload::OffloadStats;
pub use replay::{answers_netlink, recording_path, NetlinkAccess, NetlinkReplay};
pub use route_stats::RouteStats;
pub(crate) use samples::device_samples;
pub use samples::{
    link_samples, netdev_object, offload_samples, reading_samples, tc_filter_object, tc_samples,
};
pub use socket::RouteSocket;
pub use stats::LinkCounterReading;
pub use tc::{
    TcActionStats, TcActionTimes, TcCounts, TcFilter, TcFilterAction, TcFilterFlags, TcParent,
};

#[cfg(test)]
mod tests;
