//! One `RTM_GETDCB` request as `dcbnl_rtnl_getdcb` reads it: `struct nlmsghdr`, the
//! family header `struct dcbmsg { AF_UNSPEC, DCB_CMD_IEEE_GET, pad }`, then
//! `DCB_ATTR_IFNAME`. Framed by netlink-packet-core (length, type, flags), like the
//! RDMA requests; the interface name is validated before anything is built.

use netlink_packet_core::{DefaultNla, Emitable, NetlinkSerializable, NLM_F_ACK, NLM_F_REQUEST};

use super::abi;
use super::error::DcbError;
use crate::netlink::request_datagram;

/// A `DCB_CMD_IEEE_GET` request for one interface.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct IeeeGetRequest {
    ifname: DefaultNla,
}

impl IeeeGetRequest {
    /// The request for `ifname`, refused when it cannot be an interface name.
    pub(crate) fn new(ifname: &str) -> Result<Self, DcbError> {
        validate_ifname(ifname)?;
        let mut value = ifname.as_bytes().to_vec();
        value.push(0);
        Ok(Self {
            ifname: DefaultNla::new(abi::DCB_ATTR_IFNAME, value),
        })
    }

    /// The whole datagram for sequence number `seq`: a single request with an ack
    /// (`NLM_F_ACK`), as iproute2's `dcb` sends it, so success ends with a message the
    /// reader waits for after the answer.
    pub(crate) fn encode(&self, seq: u32) -> Vec<u8> {
        request_datagram(self.clone(), NLM_F_REQUEST | NLM_F_ACK, seq)
    }
}

impl NetlinkSerializable for IeeeGetRequest {
    fn message_type(&self) -> u16 {
        abi::RTM_GETDCB
    }

    fn buffer_len(&self) -> usize {
        abi::DCBMSG_LEN + self.ifname.buffer_len()
    }

    fn serialize(&self, buffer: &mut [u8]) {
        let (family, attributes) = buffer.split_at_mut(abi::DCBMSG_LEN);
        family.copy_from_slice(&[abi::AF_UNSPEC, abi::DCB_CMD_IEEE_GET, 0, 0]);
        self.ifname.emit(attributes);
    }
}

/// Whether `ifname` can be a Linux interface name (`dev_valid_name`): not empty, shorter
/// than `IFNAMSIZ`, not `.` or `..`, no `/`, `:`, whitespace or NUL.
pub(crate) fn validate_ifname(ifname: &str) -> Result<(), DcbError> {
    match ifname_problem(ifname) {
        Some(reason) => Err(DcbError::InvalidName {
            ifname: ifname.to_owned(),
            reason,
        }),
        None => Ok(()),
    }
}

/// What keeps `ifname` from being a Linux interface name, if anything: the one rule of
/// this crate's netlink requests that name an interface (DCB, ethtool).
pub(crate) fn ifname_problem(ifname: &str) -> Option<&'static str> {
    if ifname.is_empty() {
        Some("is empty")
    } else if ifname.len() >= abi::IFNAMSIZ {
        Some("is longer than 15 bytes")
    } else if ifname == "." || ifname == ".." {
        Some("is not a single path component")
    } else if ifname
        .chars()
        .any(|c| c == '/' || c == ':' || c == '\0' || c.is_whitespace())
    {
        Some("contains '/', ':', whitespace or NUL")
    } else {
        None
    }
}
