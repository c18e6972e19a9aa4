//! Decoding the controller's `CTRL_CMD_NEWFAMILY` answer (the family id) and the
//! `ETHTOOL_MSG_RINGS_GET_REPLY` (the ring sizes and the driver's maxima). The kernel
//! leaves out the attributes of rings the driver does not have (a zero maximum), so every
//! size is optional here; a value of the wrong length is an error naming the attribute.

use netlink_packet_core::{parse_string, DecodeError, NlaBuffer, NlasIterator, NLA_HEADER_SIZE};

use super::abi;
use crate::netlink::HEADER_LEN;

/// What one `ETHTOOL_MSG_RINGS_GET_REPLY` says about an interface. `None`: the kernel
/// left the attribute out (the driver has no such ring, or reports a maximum of 0).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct RingSizes {
    /// `ETHTOOL_A_HEADER_DEV_NAME` of the reply header: the interface it describes.
    pub ifname: String,
    /// `ETHTOOL_A_RINGS_RX`: the RX ring in force, in descriptors.
    pub rx: Option<u32>,
    /// `ETHTOOL_A_RINGS_RX_MAX`: the largest RX ring the driver takes.
    pub rx_max: Option<u32>,
    /// `ETHTOOL_A_RINGS_TX`.
    pub tx: Option<u32>,
    /// `ETHTOOL_A_RINGS_TX_MAX`.
    pub tx_max: Option<u32>,
}

/// One decoded ethtool answer with the message type and command it came with, which the
/// caller compares with the family id it resolved (a `fn` decoder cannot hold it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct RingsAnswer {
    /// `nlmsg_type`: the family id.
    pub(crate) family: u16,
    /// `genlmsghdr.cmd`.
    pub(crate) cmd: u8,
    /// The sizes.
    pub(crate) rings: RingSizes,
}

/// The family id in a controller answer; `Ok(None)` for a message of another type.
pub(crate) fn family_id_from_message(message: &[u8]) -> Result<Option<u16>, DecodeError> {
    let Some((kind, cmd, attributes)) = split(message)? else {
        return Ok(None);
    };
    if kind != abi::GENL_ID_CTRL || cmd != abi::CTRL_CMD_NEWFAMILY {
        return Ok(None);
    }
    for attribute in NlasIterator::new(attributes) {
        let attribute = attribute?;
        if attribute.kind() == abi::CTRL_ATTR_FAMILY_ID {
            return sized::<2>(&attribute, "CTRL_ATTR_FAMILY_ID")
                .map(|b| Some(u16::from_ne_bytes(b)));
        }
    }
    Err(DecodeError::from(
        "the controller's CTRL_CMD_NEWFAMILY answer has no CTRL_ATTR_FAMILY_ID",
    ))
}

/// A rings reply; `Ok(None)` for messages below the first family id (none expected).
pub(crate) fn rings_from_message(message: &[u8]) -> Result<Option<RingsAnswer>, DecodeError> {
    let Some((family, cmd, attributes)) = split(message)? else {
        return Ok(None);
    };
    if cmd != abi::ETHTOOL_MSG_RINGS_GET_REPLY {
        return Err(DecodeError::from(format!(
            "the ethtool answer is command {cmd}, not ETHTOOL_MSG_RINGS_GET_REPLY"
        )));
    }
    let mut rings = RingSizes::default();
    let mut header = None;
    for attribute in NlasIterator::new(attributes) {
        let attribute = attribute?;
        let (slot, name) = match attribute.kind() {
            abi::ETHTOOL_A_RINGS_HEADER => {
                header = Some(value_of(attribute));
                continue;
            }
            abi::ETHTOOL_A_RINGS_RX => (&mut rings.rx, "ETHTOOL_A_RINGS_RX"),
            abi::ETHTOOL_A_RINGS_RX_MAX => (&mut rings.rx_max, "ETHTOOL_A_RINGS_RX_MAX"),
            abi::ETHTOOL_A_RINGS_TX => (&mut rings.tx, "ETHTOOL_A_RINGS_TX"),
            abi::ETHTOOL_A_RINGS_TX_MAX => (&mut rings.tx_max, "ETHTOOL_A_RINGS_TX_MAX"),
            _ => continue,
        };
        *slot = Some(u32::from_ne_bytes(sized::<4>(&attribute, name)?));
    }
    let header =
        header.ok_or_else(|| DecodeError::from("the rings reply has no ETHTOOL_A_RINGS_HEADER"))?;
    for attribute in NlasIterator::new(header) {
        let attribute = attribute?;
        if attribute.kind() == abi::ETHTOOL_A_HEADER_DEV_NAME {
            rings.ifname = parse_string(attribute.value())
                .map_err(|e| DecodeError::from(format!("ETHTOOL_A_HEADER_DEV_NAME: {e}")))?;
        }
    }
    if rings.ifname.is_empty() {
        return Err(DecodeError::from(
            "the rings reply header has no ETHTOOL_A_HEADER_DEV_NAME",
        ));
    }
    Ok(Some(RingsAnswer { family, cmd, rings }))
}

/// A generic netlink message's type, command and attributes.
type Genl<'a> = (u16, u8, &'a [u8]);

/// The message type, the generic netlink command and the attributes; `None` for the
/// control messages below `NLMSG_MIN_TYPE` (the reader handles those itself).
fn split(message: &[u8]) -> Result<Option<Genl<'_>>, DecodeError> {
    let kind = message
        .get(4..6)
        .map(|b| u16::from_ne_bytes([b[0], b[1]]))
        .ok_or_else(|| DecodeError::from("the answer is shorter than struct nlmsghdr"))?;
    if kind < abi::GENL_ID_CTRL {
        return Ok(None);
    }
    let genl = message
        .get(HEADER_LEN..HEADER_LEN + abi::GENL_HEADER_LEN)
        .ok_or_else(|| DecodeError::from("the answer is shorter than struct genlmsghdr"))?;
    Ok(Some((
        kind,
        genl[0],
        &message[HEADER_LEN + abi::GENL_HEADER_LEN..],
    )))
}

/// An attribute's value, borrowed from the answer rather than from the attribute (its
/// length was checked against the buffer by `NlasIterator`, so the slice is in bounds).
fn value_of(attribute: NlaBuffer<&[u8]>) -> &[u8] {
    let length = usize::from(attribute.length());
    attribute
        .into_inner()
        .get(NLA_HEADER_SIZE..length)
        .unwrap_or_default()
}

/// An attribute's value when it has exactly `N` bytes.
fn sized<const N: usize>(attribute: &NlaBuffer<&[u8]>, name: &str) -> Result<[u8; N], DecodeError> {
    attribute.value().try_into().map_err(|_| {
        DecodeError::from(format!(
            "{name} is {} bytes, expected {N}",
            attribute.value().len()
        ))
    })
}
