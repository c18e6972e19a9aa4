//! The blocking `NETLINK_ROUTE` socket behind [`RouteStats`].
//!
//! Blocking on purpose: the snapshot engine is synchronous and runs in `spawn_blocking`,
//! and the kernel answers a dump as fast as it is read, so an async layer (rtnetlink,
//! netlink-proto) would add a runtime dependency and a task hop for nothing.

use std::fmt;
use std::io;
use std::path::{Path, PathBuf};

use netlink_packet_core::{NLM_F_DUMP, NLM_F_REQUEST};
use netlink_packet_route::link::LinkMessage;
use netlink_packet_route::RouteNetlinkMessage;
use netlink_sys::protocols::NETLINK_ROUTE;

use super::datagram::request_datagram;
use super::dump::{route_message, Decoder};
use super::error::NetlinkError;
use super::exchange::KernelSocket;
use super::link::{link_from_message, LinkStats};
use super::link_events::LinkEvents;
use super::monitor::LinkMonitor;
use super::netns;
use super::offload::{offload_from_message, offload_request, OffloadStats};
use super::replay::NetlinkAccess;
use super::route_stats::RouteStats;
use super::stats::{counters_request, reading_from_message, LinkCounterReading};
use super::tc::{filter_request, TcFilter, TcParent};
use super::tc_decode::filter_from_message;

/// A `NETLINK_ROUTE` socket bound to one network namespace (the one it was opened in),
/// answering [`RouteStats`] with one dump per call. A second socket, created with it and
/// so in the same namespace, watches link notifications for
/// [`link_events`](RouteStats::link_events); it joins the group on that method's first
/// call, so a socket used only for dumps never queues notifications.
pub struct RouteSocket {
    kernel: KernelSocket,
    /// The link-change watch: created with `kernel`, so in the same namespace. `None`
    /// for a replayed socket: a recording is one instant, where no link changes.
    monitor: Option<LinkMonitor>,
    netns: Option<PathBuf>,
}

impl fmt::Debug for RouteSocket {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RouteSocket")
            .field("netns", &self.netns)
            .field("kernel", &self.kernel)
            .field("monitor", &self.monitor)
            .finish_non_exhaustive()
    }
}

impl RouteSocket {
    /// Opens a socket in the calling thread's network namespace.
    pub fn open() -> Result<Self, NetlinkError> {
        Self::create(None)
    }

    /// A socket on `access`: the live kernel (as [`open`](Self::open)) or a capture's
    /// recording, whose links never change (its link watch is always quiet).
    pub fn open_via(access: &NetlinkAccess) -> Result<Self, NetlinkError> {
        match access {
            NetlinkAccess::Live => Self::open(),
            other => Ok(Self {
                kernel: KernelSocket::open_via(other, NETLINK_ROUTE, 32 * 1024)?,
                monitor: None,
                netns: None,
            }),
        }
    }

    /// Opens a socket in the namespace at `path` (`/run/netns/NAME`, `/proc/PID/ns/net`)
    /// without moving the calling thread: see the `netns` module. Needs CAP_SYS_ADMIN.
    pub fn open_in_netns(path: impl AsRef<Path>) -> Result<Self, NetlinkError> {
        netns::open_in(path.as_ref().to_path_buf(), |netns| {
            Self::create(Some(netns))
        })
    }

    /// Opens a socket in the named namespace `/run/netns/{name}`, validating the name
    /// first (see [`netns_path`](super::netns_path)).
    pub fn open_in_named_netns(name: &str) -> Result<Self, NetlinkError> {
        Self::open_in_netns(netns::netns_path(name)?)
    }

    /// The namespace file this socket was opened in; `None` for the caller's own.
    pub fn netns(&self) -> Option<&Path> {
        self.netns.as_deref()
    }

    /// Creates and configures the socket in the current thread's namespace.
    pub(crate) fn create(netns: Option<PathBuf>) -> Result<Self, NetlinkError> {
        let kernel = KernelSocket::open(NETLINK_ROUTE, 32 * 1024)?;
        let monitor = LinkMonitor::create()?;
        Ok(Self {
            kernel,
            monitor: Some(monitor),
            netns,
        })
    }

    /// `what`, plus the namespace when it is not the caller's: the request name errors use.
    pub(super) fn describe(&self, what: &str) -> String {
        describe(self.netns.as_deref(), what)
    }

    /// Sends a dump request and collects every answer, retrying a dump the kernel marked
    /// inconsistent.
    fn dump(
        &mut self,
        request: &str,
        message: &RouteNetlinkMessage,
    ) -> Result<Vec<RouteNetlinkMessage>, NetlinkError> {
        self.dump_with(request, message, route_message)
    }

    /// [`dump`](Self::dump) with the answers turned into `T` by `decode`.
    fn dump_with<T>(
        &mut self,
        request: &str,
        message: &RouteNetlinkMessage,
        decode: Decoder<T>,
    ) -> Result<Vec<T>, NetlinkError> {
        let encode = |seq| request_datagram(message.clone(), NLM_F_REQUEST | NLM_F_DUMP, seq);
        self.kernel.exchange(request, encode, decode)
    }

    /// Sends the single (not dump) request `encode` makes, which must ask for an ack, and
    /// collects the answers before it.
    pub(super) fn request_with<T>(
        &mut self,
        request: &str,
        encode: impl Fn(u32) -> Vec<u8>,
        decode: Decoder<T>,
    ) -> Result<Vec<T>, NetlinkError> {
        self.kernel.exchange(request, encode, decode)
    }
}

impl RouteStats for RouteSocket {
    fn links(&mut self) -> Result<Vec<LinkStats>, NetlinkError> {
        let request = self.describe("RTM_GETLINK dump");
        let answers = self.dump(
            &request,
            &RouteNetlinkMessage::GetLink(LinkMessage::default()),
        )?;
        Ok(answers
            .iter()
            .filter_map(|answer| match answer {
                RouteNetlinkMessage::NewLink(link) => link_from_message(link),
                _ => None,
            })
            .collect())
    }

    fn offload_stats(&mut self) -> Result<Vec<OffloadStats>, NetlinkError> {
        let request = self.describe("RTM_GETSTATS dump (offload xstats)");
        let answers = self.dump(&request, &RouteNetlinkMessage::GetStats(offload_request()))?;
        Ok(answers
            .iter()
            .filter_map(|answer| match answer {
                RouteNetlinkMessage::NewStats(stats) => Some(offload_from_message(stats)),
                _ => None,
            })
            .collect())
    }

    fn link_counters(&mut self) -> Result<Vec<LinkCounterReading>, NetlinkError> {
        let request = self.describe("RTM_GETSTATS dump (link stats64, offload xstats)");
        self.dump_with(
            &request,
            &RouteNetlinkMessage::GetStats(counters_request()),
            reading_from_message,
        )
    }

    fn link_events(&mut self) -> Result<LinkEvents, NetlinkError> {
        let Self { monitor, netns, .. } = self;
        match monitor {
            Some(monitor) => {
                monitor.drain(|| describe(netns.as_deref(), "RTNLGRP_LINK notifications"))
            }
            // A recording is one instant: nothing changes (a fresh name map is built
            // regardless, see `LinkNames::stale_before_dump`).
            None => Ok(LinkEvents::Quiet),
        }
    }

    fn tc_filters(
        &mut self,
        ifindex: u32,
        parent: TcParent,
    ) -> Result<Vec<TcFilter>, NetlinkError> {
        let request = self.describe(&format!(
            "RTM_GETTFILTER dump of ifindex {ifindex} parent {parent}"
        ));
        let index = i32::try_from(ifindex).map_err(|_| NetlinkError::Send {
            request: request.clone(),
            source: io::Error::new(io::ErrorKind::InvalidInput, "ifindex out of range"),
        })?;
        let message = RouteNetlinkMessage::GetTrafficFilter(filter_request(index, parent));
        let answers = self.dump(&request, &message)?;
        Ok(answers
            .iter()
            .filter_map(|answer| match answer {
                RouteNetlinkMessage::NewTrafficFilter(filter) => Some(filter_from_message(filter)),
                _ => None,
            })
            .collect())
    }
}

/// `what`, plus the namespace when it is not the caller's.
fn describe(netns: Option<&Path>, what: &str) -> String {
    match netns {
        Some(path) => format!("{what} in netns {}", path.display()),
        None => what.to_owned(),
    }
}
