//! Generic netlink requests as the kernel's `genl_rcv_msg` reads them: `struct nlmsghdr`
//! (type = the family id), `struct genlmsghdr { cmd, version, reserved }`, then the
//! attributes. Framed by netlink-packet-core (length, type, flags) like the DCB and RDMA
//! requests; the attributes are netlink-packet-core's `DefaultNla`, nests built from
//! their emitted bytes with `NLA_F_NESTED` set, as the ethtool family's policies require.

use netlink_packet_core::{
    DefaultNla, Emitable, NetlinkSerializable, NLA_F_NESTED, NLM_F_ACK, NLM_F_REQUEST,
};

use super::abi;
use crate::netlink::request_datagram;

/// Which ring of an interface.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ring {
    /// The receive ring (`ETHTOOL_A_RINGS_RX`, `ethtool -G IF rx N`).
    Rx,
    /// The transmit ring (`ETHTOOL_A_RINGS_TX`, `ethtool -G IF tx N`).
    Tx,
}

impl Ring {
    /// `rx` or `tx`, as ethtool names them.
    pub fn name(self) -> &'static str {
        match self {
            Self::Rx => "rx",
            Self::Tx => "tx",
        }
    }

    /// The attribute carrying this ring's size.
    pub(crate) fn size_attribute(self) -> u16 {
        match self {
            Self::Rx => abi::ETHTOOL_A_RINGS_RX,
            Self::Tx => abi::ETHTOOL_A_RINGS_TX,
        }
    }
}

/// One generic netlink request: a family, a command and its attributes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct GenlRequest {
    family: u16,
    cmd: u8,
    version: u8,
    attributes: Vec<DefaultNla>,
}

impl GenlRequest {
    /// `CTRL_CMD_GETFAMILY` for the family called `name`.
    pub(crate) fn family_by_name(name: &str) -> Self {
        Self {
            family: abi::GENL_ID_CTRL,
            cmd: abi::CTRL_CMD_GETFAMILY,
            version: abi::CTRL_VERSION,
            attributes: vec![DefaultNla::new(abi::CTRL_ATTR_FAMILY_NAME, c_string(name))],
        }
    }

    /// `ETHTOOL_MSG_RINGS_GET` for `ifname` (by name in the header nest, so no index
    /// lookup can race a rename).
    pub(crate) fn rings_get(family: u16, ifname: &str) -> Self {
        Self {
            family,
            cmd: abi::ETHTOOL_MSG_RINGS_GET,
            version: abi::ETHTOOL_GENL_VERSION,
            attributes: vec![rings_header(ifname)],
        }
    }

    /// `ETHTOOL_MSG_RINGS_SET` of one ring of `ifname` to `size` descriptors.
    pub(crate) fn rings_set(family: u16, ifname: &str, ring: Ring, size: u32) -> Self {
        Self {
            family,
            cmd: abi::ETHTOOL_MSG_RINGS_SET,
            version: abi::ETHTOOL_GENL_VERSION,
            attributes: vec![
                rings_header(ifname),
                DefaultNla::new(ring.size_attribute(), size.to_ne_bytes().to_vec()),
            ],
        }
    }

    /// The whole datagram for sequence number `seq`, asking for an ack so that success
    /// ends with a message the reader waits for.
    pub(crate) fn encode(&self, seq: u32) -> Vec<u8> {
        request_datagram(self.clone(), NLM_F_REQUEST | NLM_F_ACK, seq)
    }
}

impl NetlinkSerializable for GenlRequest {
    fn message_type(&self) -> u16 {
        self.family
    }

    fn buffer_len(&self) -> usize {
        abi::GENL_HEADER_LEN + self.attributes.as_slice().buffer_len()
    }

    fn serialize(&self, buffer: &mut [u8]) {
        let (header, attributes) = buffer.split_at_mut(abi::GENL_HEADER_LEN);
        header.copy_from_slice(&[self.cmd, self.version, 0, 0]);
        self.attributes.as_slice().emit(attributes);
    }
}

/// `ETHTOOL_A_RINGS_HEADER { ETHTOOL_A_HEADER_DEV_NAME }`, flagged nested.
fn rings_header(ifname: &str) -> DefaultNla {
    let name = [DefaultNla::new(
        abi::ETHTOOL_A_HEADER_DEV_NAME,
        c_string(ifname),
    )];
    let mut inner = vec![0; name.as_slice().buffer_len()];
    name.as_slice().emit(&mut inner);
    DefaultNla::new(abi::ETHTOOL_A_RINGS_HEADER | NLA_F_NESTED, inner)
}

/// `text` with its NUL terminator, as `NLA_NUL_STRING` attributes carry it.
fn c_string(text: &str) -> Vec<u8> {
    let mut bytes = text.as_bytes().to_vec();
    bytes.push(0);
    bytes
}
