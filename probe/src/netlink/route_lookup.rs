//! Which interface the kernel would send a packet to an address out of: `ip route get
//! ADDR` as one `RTM_GETROUTE` request, answered from the kernel's own routing decision
//! (policy rules, tables, metrics included), never from reading the routing table and
//! guessing. A storage proof uses it to name the DPU uplink that carries NVMe/TCP to the
//! target, the one netdev whose counters must have received the data.

use std::net::IpAddr;

use netlink_packet_core::{NLM_F_ACK, NLM_F_REQUEST};
use netlink_packet_route::route::{RouteAddress, RouteAttribute, RouteMessage};
use netlink_packet_route::{AddressFamily, RouteNetlinkMessage};

use super::datagram::request_datagram;
use super::dump::route_message;
use super::error::NetlinkError;
use super::socket::RouteSocket;

/// The kernel's answer for an address no route reaches.
const UNREACHABLE: [i32; 3] = [
    nix::libc::ENETUNREACH,
    nix::libc::EHOSTUNREACH,
    nix::libc::ENETDOWN,
];

/// The `RTM_GETROUTE` request for one destination: the address as a host route (/32 or
/// /128), which asks the kernel to resolve it rather than to list a table.
fn route_get_request(destination: IpAddr, seq: u32) -> Vec<u8> {
    let mut message = RouteMessage::default();
    message.header.address_family = match destination {
        IpAddr::V4(_) => AddressFamily::Inet,
        IpAddr::V6(_) => AddressFamily::Inet6,
    };
    message.header.destination_prefix_length = match destination {
        IpAddr::V4(_) => 32,
        IpAddr::V6(_) => 128,
    };
    message
        .attributes
        .push(RouteAttribute::Destination(RouteAddress::from(destination)));
    request_datagram(
        RouteNetlinkMessage::GetRoute(message),
        NLM_F_REQUEST | NLM_F_ACK,
        seq,
    )
}

/// The output interface of a resolved route (`RTA_OIF`), if the answer names one.
fn output_interface(answers: &[RouteNetlinkMessage]) -> Option<u32> {
    answers.iter().find_map(|answer| match answer {
        RouteNetlinkMessage::NewRoute(route) => route.attributes.iter().find_map(|a| match a {
            RouteAttribute::Oif(index) => Some(*index),
            _ => None,
        }),
        _ => None,
    })
}

impl RouteSocket {
    /// The ifindex of the interface the kernel routes `destination` out of, in this
    /// socket's namespace; `None` when no route reaches it (unreachable, network down).
    /// A local address resolves to the loopback interface, as `ip route get` says.
    pub fn output_interface_to(
        &mut self,
        destination: IpAddr,
    ) -> Result<Option<u32>, NetlinkError> {
        let request = self.describe(&format!("RTM_GETROUTE {destination}"));
        match self.request_with(
            &request,
            |seq| route_get_request(destination, seq),
            route_message,
        ) {
            Ok(answers) => Ok(output_interface(&answers)),
            Err(e @ NetlinkError::Kernel { .. })
                if e.raw_os_error()
                    .is_some_and(|code| UNREACHABLE.contains(&code)) =>
            {
                Ok(None)
            }
            Err(e) => Err(e),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::net::{Ipv4Addr, Ipv6Addr};

    use netlink_packet_core::NetlinkBuffer;

    use super::*;
    use netlink_packet_core::{NetlinkMessage, NetlinkPayload};

    #[test]
    fn the_request_asks_for_one_host_route_to_the_address_with_an_ack() {
        for (address, family, prefix) in [
            (
                IpAddr::V4(Ipv4Addr::new(10, 10, 0, 1)),
                AddressFamily::Inet,
                32,
            ),
            (IpAddr::V6(Ipv6Addr::LOCALHOST), AddressFamily::Inet6, 128),
        ] {
            let bytes = route_get_request(address, 9);
            let packet = NetlinkBuffer::new_checked(&bytes[..]).expect("framed");
            assert_eq!(packet.sequence_number(), 9);
            assert_eq!(packet.flags(), NLM_F_REQUEST | NLM_F_ACK, "no dump flag");
            let parsed =
                NetlinkMessage::<RouteNetlinkMessage>::deserialize(&bytes).expect("parses");
            let NetlinkPayload::InnerMessage(RouteNetlinkMessage::GetRoute(route)) = parsed.payload
            else {
                panic!("not RTM_GETROUTE: {parsed:?}");
            };
            assert_eq!(route.header.address_family, family);
            assert_eq!(route.header.destination_prefix_length, prefix);
            assert_eq!(
                route.attributes,
                vec![RouteAttribute::Destination(RouteAddress::from(address))]
            );
        }
    }

    #[test]
    fn the_output_interface_is_the_answer_s_oif() {
        let mut route = RouteMessage::default();
        route.attributes.push(RouteAttribute::Table(254));
        route.attributes.push(RouteAttribute::Oif(4));
        assert_eq!(
            output_interface(&[RouteNetlinkMessage::NewRoute(route)]),
            Some(4)
        );
        assert_eq!(output_interface(&[]), None);
    }

    #[test]
    fn the_live_kernel_routes_loopback_out_of_lo() {
        // Every Linux network namespace has lo with 127.0.0.1, and any process may ask.
        let mut socket = RouteSocket::open().expect("a NETLINK_ROUTE socket");
        let index = socket
            .output_interface_to(IpAddr::V4(Ipv4Addr::LOCALHOST))
            .expect("the kernel answers")
            .expect("127.0.0.1 is routed");
        let links = crate::netlink::RouteStats::links(&mut socket).expect("links");
        let name = links
            .iter()
            .find(|l| l.ifindex == index)
            .map(|l| l.ifname.clone());
        assert_eq!(name.as_deref(), Some("lo"));
    }
}
