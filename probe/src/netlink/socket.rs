//! The blocking `NETLINK_ROUTE` socket behind [`RouteStats`].
//!
//! Blocking on purpose: the snapshot engine is synchronous and runs in `spawn_blocking`,
//! and the kernel answers a dump as fast as it is read, so an async layer (rtnetlink,
//! netlink-proto) would add a runtime dependency and a task hop for nothing.

use std::fmt;
use std::io;
use std::path::{Path, PathBuf};
use std::time::Duration;

use netlink_packet_core::{
    NetlinkHeader, NetlinkMessage, NetlinkPayload, NLM_F_DUMP, NLM_F_REQUEST,
};
use netlink_packet_route::link::LinkMessage;
use netlink_packet_route::RouteNetlinkMessage;
use netlink_sys::{protocols::NETLINK_ROUTE, Socket, SocketAddr};
use nix::libc::{MSG_PEEK, MSG_TRUNC};
use nix::sys::socket::{setsockopt, sockopt::ReceiveTimeout};
use nix::sys::time::{TimeVal, TimeValLike};

use super::dump::{route_message, Decoder, DumpCollector};
use super::error::NetlinkError;
use super::link::{link_from_message, LinkStats};
use super::link_events::LinkEvents;
use super::monitor::LinkMonitor;
use super::netns;
use super::offload::{offload_from_message, offload_request, OffloadStats};
use super::route_stats::RouteStats;
use super::stats::{counters_request, reading_from_message, LinkCounterReading};
use super::tc::{filter_request, TcFilter, TcParent};
use super::tc_decode::filter_from_message;

/// How long one `recv` may wait. The kernel answers at once; this only bounds a hang
/// caused by a bug, so a snapshot fails with a message instead of blocking forever.
pub(crate) const RECV_TIMEOUT: Duration = Duration::from_secs(5);
/// How often a dump interrupted by concurrent changes is retried.
const DUMP_ATTEMPTS: u32 = 3;

/// A `NETLINK_ROUTE` socket bound to one network namespace (the one it was opened in),
/// answering [`RouteStats`] with one dump per call. A second socket, created with it and
/// so in the same namespace, watches link notifications for
/// [`link_events`](RouteStats::link_events); it joins the group on that method's first
/// call, so a socket used only for dumps never queues notifications.
pub struct RouteSocket {
    socket: Socket,
    /// The link-change watch: created with `socket`, so in the same namespace.
    monitor: LinkMonitor,
    netns: Option<PathBuf>,
    seq: u32,
    buf: Vec<u8>,
}

impl fmt::Debug for RouteSocket {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RouteSocket")
            .field("netns", &self.netns)
            .field("seq", &self.seq)
            .field("monitor", &self.monitor)
            .finish_non_exhaustive()
    }
}

impl RouteSocket {
    /// Opens a socket in the calling thread's network namespace.
    pub fn open() -> Result<Self, NetlinkError> {
        Self::create(None)
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
        let socket = open_kernel_socket(NETLINK_ROUTE)
            .map_err(|(op, source)| NetlinkError::Socket { op, source })?;
        let monitor = LinkMonitor::create()?;
        Ok(Self {
            socket,
            monitor,
            netns,
            seq: 0,
            buf: Vec::with_capacity(32 * 1024),
        })
    }

    /// `what`, plus the namespace when it is not the caller's: the request name errors use.
    fn describe(&self, what: &str) -> String {
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
        for attempt in 1..=DUMP_ATTEMPTS {
            let collector = self.dump_once(request, message, decode)?;
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

    fn dump_once<'r, T>(
        &mut self,
        request: &'r str,
        message: &RouteNetlinkMessage,
        decode: Decoder<T>,
    ) -> Result<DumpCollector<'r, T>, NetlinkError> {
        self.seq = self.seq.wrapping_add(1);
        let mut header = NetlinkHeader::default();
        header.flags = NLM_F_REQUEST | NLM_F_DUMP;
        header.sequence_number = self.seq;
        let mut packet = NetlinkMessage::new(header, NetlinkPayload::InnerMessage(message.clone()));
        packet.finalize();
        let mut bytes = vec![0; packet.buffer_len()];
        packet.serialize(&mut bytes);
        self.socket
            .send_to(&bytes, &SocketAddr::new(0, 0), 0)
            .map_err(|source| NetlinkError::Send {
                request: request.to_owned(),
                source,
            })?;
        let mut collector = DumpCollector::with_decoder(request, self.seq, decode);
        loop {
            self.recv_datagram(request)?;
            if collector.feed(&self.buf)? {
                return Ok(collector);
            }
        }
    }

    /// Reads one whole datagram from the kernel into `self.buf` ([`recv_kernel_datagram`]).
    fn recv_datagram(&mut self, request: &str) -> Result<(), NetlinkError> {
        recv_kernel_datagram(&self.socket, &mut self.buf, RECV_TIMEOUT).map_err(|source| {
            NetlinkError::Receive {
                request: request.to_owned(),
                source,
            }
        })
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
        monitor.drain(|| describe(netns.as_deref(), "RTNLGRP_LINK notifications"))
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

/// A netlink socket of `protocol`, bound, with the [`RECV_TIMEOUT`] receive timeout and
/// extended and capped acks where the kernel has them (4.12+: EINVAL then comes with a
/// sentence; an older kernel refuses the options, which only costs the sentence). On
/// failure, the step that failed. Shared by the route and the RDMA netlink sockets.
pub(crate) fn open_kernel_socket(protocol: isize) -> Result<Socket, (&'static str, io::Error)> {
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
/// (`timeout`, set on it beforehand) becomes `TimedOut` naming it. Shared by the route
/// and the RDMA netlink sockets.
pub(crate) fn recv_kernel_datagram(
    socket: &Socket,
    buf: &mut Vec<u8>,
    timeout: Duration,
) -> io::Result<()> {
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
