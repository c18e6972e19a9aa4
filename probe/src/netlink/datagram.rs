//! One request datagram, the way every netlink request of this crate is put on the wire:
//! the family's message under a header with the request's flags and sequence number,
//! lengths and message type computed from the message (port id 0: the kernel fills it in).
//! Route, RDMA, DCB and ethtool requests differ only in their message and flags.

use netlink_packet_core::{NetlinkHeader, NetlinkMessage, NetlinkPayload, NetlinkSerializable};

/// The bytes of one request: `message` under a header with `flags` (`NLM_F_REQUEST` and
/// `NLM_F_ACK` or `NLM_F_DUMP`, as the request needs) and sequence number `seq`.
pub(crate) fn request_datagram<M>(message: M, flags: u16, seq: u32) -> Vec<u8>
where
    M: NetlinkSerializable,
{
    let mut header = NetlinkHeader::default();
    header.flags = flags;
    header.sequence_number = seq;
    let mut packet = NetlinkMessage::new(header, NetlinkPayload::InnerMessage(message));
    packet.finalize();
    let mut bytes = vec![0; packet.buffer_len()];
    packet.serialize(&mut bytes);
    bytes
}
