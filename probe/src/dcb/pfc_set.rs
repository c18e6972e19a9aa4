//! One `DCB_CMD_IEEE_SET` of `DCB_ATTR_IEEE_PFC` as `dcbnl_ieee_set` reads it:
//! `struct nlmsghdr` (`RTM_SETDCB`), `struct dcbmsg { AF_UNSPEC, DCB_CMD_IEEE_SET, pad }`,
//! `DCB_ATTR_IFNAME`, then the nest `DCB_ATTR_IEEE` holding one `struct ieee_pfc` in host
//! byte order with its C padding. The answer is an `RTM_SETDCB` message whose
//! `DCB_ATTR_IEEE` is a `u8`: the driver's own verdict (`dcbnl_ieee_set` puts its error
//! there and acks the request with 0), so a refusal by the driver is read from it, not
//! from the ack. Also [`DcbNetlink::open_in_netns`], for the tests that ask a device in
//! a namespace of their own.

use std::io;
use std::path::Path;

use netlink_packet_core::{
    DecodeError, DefaultNla, Emitable, NetlinkSerializable, NlasIterator, NLA_F_NESTED, NLM_F_ACK,
    NLM_F_REQUEST,
};

use netlink_sys::protocols::NETLINK_ROUTE;

use super::abi;
use super::config::IeeePfc;
use super::error::DcbError;
use super::handle::DcbNetlink;
use super::request::validate_ifname;
use crate::netlink::request_datagram;
use crate::netlink::{open_in_netns, KernelSocket, NetlinkError, HEADER_LEN};

impl DcbNetlink {
    /// [`open`](Self::open) in the network namespace at `path` (`/run/netns/NAME`): the
    /// socket is created by a helper thread there, the caller's thread never moves.
    pub fn open_in_netns(path: impl AsRef<Path>) -> Result<Self, NetlinkError> {
        let kernel = open_in_netns(path.as_ref().to_owned(), |_| {
            KernelSocket::open(NETLINK_ROUTE, 8 * 1024)
        })?;
        Ok(Self { kernel })
    }

    /// Sets the IEEE PFC object of `ifname` (`DCB_CMD_IEEE_SET` with `DCB_ATTR_IEEE_PFC`,
    /// what `dcb pfc set dev IF prio-pfc ...` sends). The caller passes the whole
    /// `struct ieee_pfc` (read it with [`ieee_config`](Self::ieee_config) and change
    /// `pfc_en`: a read-modify-write keeps `pfc_cap`, `mbc` and `delay`). A device without
    /// DCB is [`DcbError::NotSupported`]; a driver that refuses the value (its verdict
    /// comes back in the answer, not the ack) is [`DcbError::Refused`].
    pub fn set_ieee_pfc(&mut self, ifname: &str, pfc: &IeeePfc) -> Result<(), DcbError> {
        let request = IeeePfcSetRequest::new(ifname, pfc)?;
        let name = format!(
            "RTM_SETDCB DCB_CMD_IEEE_SET of {ifname} pfc_en {:#04x}",
            pfc.pfc_en
        );
        let statuses = self
            .kernel
            .exchange(&name, |seq| request.encode(seq), ieee_set_status)
            .map_err(|source| classify_set(ifname, source))?;
        match statuses.as_slice() {
            [0] => Ok(()),
            [status] => Err(DcbError::Refused {
                ifname: ifname.to_owned(),
                source: io::Error::from_raw_os_error(status_errno(*status)),
            }),
            [] => Err(DcbError::Unexpected {
                ifname: ifname.to_owned(),
                detail: "no RTM_SETDCB answer before the ack".to_owned(),
            }),
            _ => Err(DcbError::Unexpected {
                ifname: ifname.to_owned(),
                detail: "several RTM_SETDCB answers".to_owned(),
            }),
        }
    }
}

/// For a set, only `EOPNOTSUPP` (no `dcbnl_ops`) means "no DCB": an `EINVAL` there is a
/// refused request, and says so with the kernel's extended ack.
fn classify_set(ifname: &str, source: NetlinkError) -> DcbError {
    match (&source, source.raw_os_error()) {
        (NetlinkError::Kernel { .. }, Some(libc::EOPNOTSUPP)) => DcbError::NotSupported {
            ifname: ifname.to_owned(),
            source: io::Error::from_raw_os_error(libc::EOPNOTSUPP),
        },
        _ => DcbError::Netlink {
            ifname: ifname.to_owned(),
            source,
        },
    }
}

/// A `DCB_CMD_IEEE_SET` request carrying one `struct ieee_pfc`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct IeeePfcSetRequest {
    attributes: [DefaultNla; 2],
}

impl IeeePfcSetRequest {
    /// The request setting `pfc` on `ifname`, refused when it cannot be an interface name.
    pub(crate) fn new(ifname: &str, pfc: &IeeePfc) -> Result<Self, DcbError> {
        validate_ifname(ifname)?;
        let mut name = ifname.as_bytes().to_vec();
        name.push(0);
        let inner = [DefaultNla::new(abi::DCB_ATTR_IEEE_PFC, ieee_pfc_bytes(pfc))];
        let mut nest = vec![0; inner.as_slice().buffer_len()];
        inner.as_slice().emit(&mut nest);
        Ok(Self {
            attributes: [
                DefaultNla::new(abi::DCB_ATTR_IFNAME, name),
                DefaultNla::new(abi::DCB_ATTR_IEEE | NLA_F_NESTED, nest),
            ],
        })
    }

    /// The whole datagram for sequence number `seq`, with an ack (`NLM_F_ACK`).
    pub(crate) fn encode(&self, seq: u32) -> Vec<u8> {
        request_datagram(self.clone(), NLM_F_REQUEST | NLM_F_ACK, seq)
    }
}

impl NetlinkSerializable for IeeePfcSetRequest {
    fn message_type(&self) -> u16 {
        abi::RTM_SETDCB
    }

    fn buffer_len(&self) -> usize {
        abi::DCBMSG_LEN + self.attributes.as_slice().buffer_len()
    }

    fn serialize(&self, buffer: &mut [u8]) {
        let (family, attributes) = buffer.split_at_mut(abi::DCBMSG_LEN);
        family.copy_from_slice(&[abi::AF_UNSPEC, abi::DCB_CMD_IEEE_SET, 0, 0]);
        self.attributes.as_slice().emit(attributes);
    }
}

/// `struct ieee_pfc` as the kernel lays it out ([`abi::IEEE_PFC_LEN`] bytes: padding
/// zero, `delay` and the counters in host byte order), the inverse of the decoder.
pub(crate) fn ieee_pfc_bytes(pfc: &IeeePfc) -> Vec<u8> {
    let mut bytes = vec![0; abi::IEEE_PFC_LEN];
    bytes[0] = pfc.pfc_cap;
    bytes[1] = pfc.pfc_en;
    bytes[2] = pfc.mbc;
    let delay_at = abi::IEEE_PFC_DELAY_AT;
    bytes[delay_at..delay_at + 2].copy_from_slice(&pfc.delay.to_ne_bytes());
    for (start, counters) in [
        (abi::IEEE_PFC_REQUESTS_AT, &pfc.requests),
        (abi::IEEE_PFC_INDICATIONS_AT, &pfc.indications),
    ] {
        for (i, value) in counters.iter().enumerate() {
            let at = start + i * 8;
            bytes[at..at + 8].copy_from_slice(&value.to_ne_bytes());
        }
    }
    bytes
}

/// The driver's verdict in an `RTM_SETDCB` answer to `DCB_CMD_IEEE_SET`: the `u8` of
/// `DCB_ATTR_IEEE`, 0 for success, otherwise the low byte of the negative errno.
/// `Ok(None)` for a message of another type.
pub(crate) fn ieee_set_status(message: &[u8]) -> Result<Option<u8>, DecodeError> {
    let kind = message
        .get(4..6)
        .map(|b| u16::from_ne_bytes([b[0], b[1]]))
        .ok_or_else(|| DecodeError::from("the answer is shorter than struct nlmsghdr"))?;
    if kind != abi::RTM_SETDCB {
        return Ok(None);
    }
    let family = message
        .get(HEADER_LEN..HEADER_LEN + abi::DCBMSG_LEN)
        .ok_or_else(|| DecodeError::from("the RTM_SETDCB answer is shorter than struct dcbmsg"))?;
    if family[1] != abi::DCB_CMD_IEEE_SET {
        return Err(DecodeError::from(format!(
            "the RTM_SETDCB answer is for DCB command {}, not DCB_CMD_IEEE_SET",
            family[1]
        )));
    }
    for attribute in NlasIterator::new(&message[HEADER_LEN + abi::DCBMSG_LEN..]) {
        let attribute = attribute?;
        if attribute.kind() == abi::DCB_ATTR_IEEE {
            return match attribute.value() {
                [status] => Ok(Some(*status)),
                other => Err(DecodeError::from(format!(
                    "DCB_ATTR_IEEE in the RTM_SETDCB answer is {} bytes, expected a u8",
                    other.len()
                ))),
            };
        }
    }
    Err(DecodeError::from(
        "the RTM_SETDCB answer has no DCB_ATTR_IEEE status",
    ))
}

/// The errno a non-zero status stands for: the kernel wrote `(u8)err` of a negative
/// `int`, so the byte read as `i8` is `-errno` for every errno under 128.
pub(crate) fn status_errno(status: u8) -> i32 {
    -i32::from(status as i8)
}
