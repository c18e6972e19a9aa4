//! The tc part of a reading: every link's ingress and egress filters, read the way the
//! project reads them (the link dump, then one `RTM_GETTFILTER` dump per link and hook:
//! the agent's flow join and `ListTcFilters` ask for ingress, the sampler's `tc` source and
//! so `/metrics` for both), under the recorder, so a replay of the reading answers those
//! requests with the captured machine's filters and their counters. Nothing is written
//! here: the recorder keeps the exchanges with the reading's others.

use dpu_probe::netlink::{NetlinkAccess, RouteSocket, RouteStats, TcParent};
use dpu_probe::SysRoot;

/// Reads the ingress and egress filters of every link of `root` through its netlink (the
/// live kernel for `/`) and returns how many filters were read. A root that answers no netlink
/// (a fixture tree, an image) reads nothing. A link whose dump fails is left out, as its
/// exchange is: a replay then fails that request as not recorded, where the live read
/// failed too.
pub(super) fn read_filters(root: &SysRoot) -> usize {
    let access = NetlinkAccess::for_root(root);
    if !access.answers_requests() {
        return 0;
    }
    let mut socket = match RouteSocket::open_via(&access) {
        Ok(socket) => socket,
        Err(error) => {
            tracing::debug!(%error, "no route socket: no tc filters recorded");
            return 0;
        }
    };
    let links = match socket.links() {
        Ok(links) => links,
        Err(error) => {
            tracing::debug!(%error, "no link dump: no tc filters recorded");
            return 0;
        }
    };
    let mut read = 0;
    for link in &links {
        for parent in [TcParent::Ingress, TcParent::Egress] {
            match socket.tc_filters(link.ifindex, parent) {
                Ok(filters) => read += filters.len(),
                Err(error) => tracing::debug!(ifname = %link.ifname, %error, "tc filters unread"),
            }
        }
    }
    read
}
