//! The link-change monitor behind [`RouteStats::link_events`](super::RouteStats): a second
//! `NETLINK_ROUTE` socket subscribed to `RTNLGRP_LINK`, drained without blocking before
//! each snapshot.
//!
//! The socket is created next to the request socket, on the same thread and so in the same
//! namespace (a socket belongs to the namespace it was created in), but it joins the
//! group only when first asked: a [`RouteSocket`](super::RouteSocket) used for one dump
//! never holds kernel notifications it will not read.

use std::io;

use netlink_sys::{protocols::NETLINK_ROUTE, Socket};
use nix::libc::{ENOBUFS, MSG_DONTWAIT, MSG_TRUNC};

use super::error::NetlinkError;
use super::link_events::LinkEvents;

/// `RTNLGRP_LINK`: link added, removed, renamed or changed (`RTMGRP_LINK` as a bind mask).
const RTNLGRP_LINK: u32 = 1;
/// How much of each notification is copied out. Only its arrival matters, so `MSG_TRUNC`
/// discards the rest in the kernel.
const PEEK_LEN: usize = 64;
/// Most notifications read per drain: under a storm of changes the drain still returns,
/// with [`LinkEvents::Changed`], and the rest is read next time.
const MAX_PER_DRAIN: usize = 4096;

/// A socket subscribed (once asked) to link notifications of its namespace.
pub(crate) struct LinkMonitor {
    socket: Socket,
    subscribed: bool,
    buf: Vec<u8>,
}

impl std::fmt::Debug for LinkMonitor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LinkMonitor")
            .field("subscribed", &self.subscribed)
            .finish_non_exhaustive()
    }
}

impl LinkMonitor {
    /// Creates the socket in the calling thread's namespace, not yet subscribed.
    pub(crate) fn create() -> Result<Self, NetlinkError> {
        let fail = |op, source| NetlinkError::Socket { op, source };
        let mut socket =
            Socket::new(NETLINK_ROUTE).map_err(|e| fail("create the link watch beside", e))?;
        socket
            .bind_auto()
            .map_err(|e| fail("bind the link watch beside", e))?;
        Ok(Self {
            socket,
            subscribed: false,
            buf: Vec::with_capacity(PEEK_LEN),
        })
    }

    /// What happened since the previous call, without blocking. The first call joins the
    /// group and answers [`LinkEvents::Unknown`]: what changed before cannot be known.
    /// `request` names the watch in an error; only called when there is one.
    pub(crate) fn drain(
        &mut self,
        request: impl FnOnce() -> String,
    ) -> Result<LinkEvents, NetlinkError> {
        if !self.subscribed {
            self.socket
                .add_membership(RTNLGRP_LINK)
                .map_err(|source| NetlinkError::Socket {
                    op: "join RTNLGRP_LINK on",
                    source,
                })?;
            self.subscribed = true;
            return Ok(LinkEvents::Unknown);
        }
        let mut arrived = false;
        let mut overflowed = false;
        for _ in 0..MAX_PER_DRAIN {
            self.buf.clear();
            match self.socket.recv(&mut self.buf, MSG_DONTWAIT | MSG_TRUNC) {
                Ok(_) => arrived = true,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                // The queue overflowed and notifications were dropped; reading goes on.
                Err(e) if e.raw_os_error() == Some(ENOBUFS) => overflowed = true,
                Err(source) => {
                    return Err(NetlinkError::Receive {
                        request: request(),
                        source,
                    })
                }
            }
        }
        Ok(if overflowed {
            LinkEvents::Overflowed
        } else if arrived {
            LinkEvents::Changed
        } else {
            LinkEvents::Quiet
        })
    }
}
