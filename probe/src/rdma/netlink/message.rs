//! One RDMA netlink request as the kernel reads it: `struct nlmsghdr` with type
//! `RDMA_NL_GET_TYPE(RDMA_NL_NLDEV, op)`, no family header (`nldev.c` parses with
//! `nlmsg_parse(nlh, 0, ...)`), then `u32` attributes. Framed by netlink-packet-core
//! ([`NetlinkMessage`] computes the length and type), so only the attribute list is ours.

use netlink_packet_core::{
    DefaultNla, Emitable, NetlinkSerializable, NLM_F_ACK, NLM_F_DUMP, NLM_F_REQUEST,
};

use super::abi;
use crate::netlink::request_datagram;

/// A request: the operation, whether it is a dump, and its attributes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct RdmaMessage {
    op: u16,
    dump: bool,
    attributes: Vec<DefaultNla>,
}

impl RdmaMessage {
    /// `RDMA_NLDEV_CMD_GET` dump: one answer per device (index, name, port count).
    pub(crate) fn device_dump() -> Self {
        Self {
            op: abi::RDMA_NLDEV_CMD_GET,
            dump: true,
            attributes: Vec::new(),
        }
    }

    /// `RDMA_NLDEV_CMD_STAT_GET` of one port with no `RDMA_NLDEV_ATTR_STAT_RES`: the
    /// port's default (hardware) counters, `stat_get_doit_default_counter` in the kernel.
    pub(crate) fn port_counters(dev_index: u32, port: u32) -> Self {
        Self {
            op: abi::RDMA_NLDEV_CMD_STAT_GET,
            dump: false,
            attributes: vec![
                u32_attribute(abi::RDMA_NLDEV_ATTR_DEV_INDEX, dev_index),
                u32_attribute(abi::RDMA_NLDEV_ATTR_PORT_INDEX, port),
            ],
        }
    }

    /// The header flags: a dump ends with `NLMSG_DONE`; a single request asks for an ack
    /// (`NLM_F_ACK`) so that success also ends with a message the reader can wait for,
    /// after the answer.
    pub(crate) fn flags(&self) -> u16 {
        if self.dump {
            NLM_F_REQUEST | NLM_F_DUMP
        } else {
            NLM_F_REQUEST | NLM_F_ACK
        }
    }

    /// The whole datagram for sequence number `seq` (port id 0: the kernel fills it in).
    pub(crate) fn encode(&self, seq: u32) -> Vec<u8> {
        request_datagram(self.clone(), self.flags(), seq)
    }
}

impl NetlinkSerializable for RdmaMessage {
    fn message_type(&self) -> u16 {
        abi::message_type(self.op)
    }

    fn buffer_len(&self) -> usize {
        self.attributes.as_slice().buffer_len()
    }

    fn serialize(&self, buffer: &mut [u8]) {
        self.attributes.as_slice().emit(buffer);
    }
}

/// A `u32` attribute in host byte order, as `nla_get_u32` reads it.
fn u32_attribute(kind: u16, value: u32) -> DefaultNla {
    DefaultNla::new(kind, value.to_ne_bytes().to_vec())
}
