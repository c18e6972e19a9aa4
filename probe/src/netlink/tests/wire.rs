//! Test support: emit a route message to kernel wire format and parse it back, so unit
//! tests run exactly the decoding a real dump goes through.

use netlink_packet_core::{Emitable, NetlinkHeader, NetlinkMessage, NetlinkPayload};
use netlink_packet_route::RouteNetlinkMessage;

/// The message as the kernel would send it, decoded again.
pub(crate) fn round_trip(message: RouteNetlinkMessage) -> RouteNetlinkMessage {
    let mut packet = NetlinkMessage::new(
        NetlinkHeader::default(),
        NetlinkPayload::InnerMessage(message),
    );
    packet.finalize();
    let mut bytes = vec![0; packet.buffer_len()];
    packet.emit(&mut bytes);
    match NetlinkMessage::<RouteNetlinkMessage>::deserialize(&bytes)
        .expect("parse")
        .payload
    {
        NetlinkPayload::InnerMessage(m) => m,
        other => panic!("unexpected {other:?}"),
    }
}
