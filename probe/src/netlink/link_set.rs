//! The one link change this crate makes: an interface's MTU (`RTM_SETLINK` with
//! `IFLA_MTU`), for the A/B/A experiments of `dpu-host` (issue 37), which must apply and
//! revert their knob through the kernel rather than through a shell string.
//!
//! The request is acknowledged (`NLM_F_ACK`), so the kernel's verdict comes back as an
//! `NLMSG_ERROR`: 0 when applied, or the errno (`EINVAL` past the device's `max_mtu`,
//! `ENODEV` for an unknown name, `EPERM` without CAP_NET_ADMIN) with the extended-ack
//! sentence when there is one.

use netlink_packet_core::{NLM_F_ACK, NLM_F_REQUEST};
use netlink_packet_route::link::{LinkAttribute, LinkMessage};
use netlink_packet_route::RouteNetlinkMessage;
use netlink_sys::protocols::NETLINK_ROUTE;

use super::datagram::request_datagram;
use super::dump::route_message;
use super::error::NetlinkError;
use super::exchange::KernelSocket;

/// Sets the MTU of `interface` in the caller's network namespace and waits for the
/// kernel's acknowledgement. The interface is named in the request (`IFLA_IFNAME`, index
/// 0), so no index lookup can race a rename. The caller validates the name; the kernel
/// enforces the device's `min_mtu`/`max_mtu` (an `EINVAL` [`NetlinkError::Kernel`]).
pub fn set_link_mtu(interface: &str, mtu: u32) -> Result<(), NetlinkError> {
    let mut socket = KernelSocket::open(NETLINK_ROUTE, 4096)?;
    let mut message = LinkMessage::default();
    message
        .attributes
        .push(LinkAttribute::IfName(interface.to_owned()));
    message.attributes.push(LinkAttribute::Mtu(mtu));
    let request = RouteNetlinkMessage::SetLink(message);
    let encode = |seq| request_datagram(request.clone(), NLM_F_REQUEST | NLM_F_ACK, seq);
    let name = format!("RTM_SETLINK {interface} mtu {mtu}");
    socket.exchange(&name, encode, route_message).map(drop)
}
