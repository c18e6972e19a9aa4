//! Decoding the answer to `DCB_CMD_IEEE_GET` (`dcbnl_ieee_fill`): `DCB_ATTR_IFNAME`, then
//! the `DCB_ATTR_IEEE` nest with `DCB_ATTR_IEEE_ETS`, `DCB_ATTR_IEEE_PFC` and the
//! `DCB_ATTR_IEEE_APP_TABLE` nest. Every struct must have exactly its uapi size (as
//! iproute2's `dcb` requires), so a truncated answer or an unknown layout is an error
//! naming the attribute, never a panic or a guess. Attributes not read here (MAXRATE,
//! QCN, buffers, peer objects, `DCB_ATTR_DCBX`) are skipped.

use netlink_packet_core::{parse_string, DecodeError, NlaBuffer, NlasIterator, NLA_TYPE_MASK};

use super::abi;
use super::config::{DcbApp, DcbConfig, IeeeEts, IeeePfc};
use crate::netlink::HEADER_LEN;

/// One attribute, its length already checked against its buffer.
type Attribute<'a> = NlaBuffer<&'a [u8]>;

/// `struct nlattr`: length and type before the value.
const NLA_HEADER_LEN: usize = 4;

/// Decodes one answer (`nlmsghdr` included); `Ok(None)` for a message of another type
/// (the shared reply reader skips it).
pub(crate) fn dcb_config_from_message(message: &[u8]) -> Result<Option<DcbConfig>, DecodeError> {
    let kind = message
        .get(4..6)
        .map(|b| u16::from_ne_bytes([b[0], b[1]]))
        .ok_or_else(|| DecodeError::from("the answer is shorter than struct nlmsghdr"))?;
    if kind != abi::RTM_GETDCB {
        return Ok(None);
    }
    let family = message
        .get(HEADER_LEN..HEADER_LEN + abi::DCBMSG_LEN)
        .ok_or_else(|| DecodeError::from("the RTM_GETDCB answer is shorter than struct dcbmsg"))?;
    if family[1] != abi::DCB_CMD_IEEE_GET {
        return Err(DecodeError::from(format!(
            "the RTM_GETDCB answer is for DCB command {}, not DCB_CMD_IEEE_GET",
            family[1]
        )));
    }
    let attributes = &message[HEADER_LEN + abi::DCBMSG_LEN..];
    let (mut ifname, mut ieee) = (None, None);
    for attribute in attributes_in(attributes, false, "the answer") {
        let attribute = attribute?;
        match attribute.kind() {
            abi::DCB_ATTR_IFNAME => {
                let name = parse_string(value_of(attribute))
                    .map_err(|e| DecodeError::from(format!("DCB_ATTR_IFNAME: {e}")))?;
                ifname = Some(name);
            }
            abi::DCB_ATTR_IEEE => ieee = Some(value_of(attribute)),
            _ => {}
        }
    }
    let ifname = ifname.ok_or_else(|| missing("DCB_ATTR_IFNAME", "the answer"))?;
    let ieee = ieee.ok_or_else(|| missing("DCB_ATTR_IEEE", "the answer"))?;
    let mut config = DcbConfig {
        ifname,
        ets: None,
        pfc: None,
        apps: Vec::new(),
    };
    for attribute in attributes_in(ieee, true, "DCB_ATTR_IEEE") {
        let attribute = attribute?;
        match attribute.kind() {
            abi::DCB_ATTR_IEEE_ETS => config.ets = Some(ets(&attribute)?),
            abi::DCB_ATTR_IEEE_PFC => config.pfc = Some(pfc(&attribute)?),
            abi::DCB_ATTR_IEEE_APP_TABLE => config.apps = app_table(value_of(attribute))?,
            _ => {}
        }
    }
    Ok(Some(config))
}

/// `struct ieee_ets`, exactly [`abi::IEEE_ETS_LEN`] bytes.
fn ets(attribute: &Attribute<'_>) -> Result<IeeeEts, DecodeError> {
    let value = sized(attribute, abi::IEEE_ETS_LEN)?;
    let array = |index: usize| -> [u8; 8] {
        let start = 3 + index * abi::MAX_TCS;
        let mut out = [0; 8];
        out.copy_from_slice(&value[start..start + abi::MAX_TCS]);
        out
    };
    Ok(IeeeEts {
        willing: value[0],
        ets_cap: value[1],
        cbs: value[2],
        tc_tx_bw: array(0),
        tc_rx_bw: array(1),
        tc_tsa: array(2),
        prio_tc: array(3),
        tc_reco_bw: array(4),
        tc_reco_tsa: array(5),
        reco_prio_tc: array(6),
    })
}

/// `struct ieee_pfc`, exactly [`abi::IEEE_PFC_LEN`] bytes in host byte order.
fn pfc(attribute: &Attribute<'_>) -> Result<IeeePfc, DecodeError> {
    let value = sized(attribute, abi::IEEE_PFC_LEN)?;
    let u64s = |start: usize| -> [u64; 8] {
        let mut out = [0; 8];
        for (i, slot) in out.iter_mut().enumerate() {
            let at = start + i * 8;
            let mut bytes = [0; 8];
            bytes.copy_from_slice(&value[at..at + 8]);
            *slot = u64::from_ne_bytes(bytes);
        }
        out
    };
    let delay_at = abi::IEEE_PFC_DELAY_AT;
    Ok(IeeePfc {
        pfc_cap: value[0],
        pfc_en: value[1],
        mbc: value[2],
        delay: u16::from_ne_bytes([value[delay_at], value[delay_at + 1]]),
        requests: u64s(abi::IEEE_PFC_REQUESTS_AT),
        indications: u64s(abi::IEEE_PFC_INDICATIONS_AT),
    })
}

/// The `DCB_ATTR_IEEE_APP_TABLE` nest: `struct dcb_app` entries of either APP attribute
/// type, each exactly [`abi::DCB_APP_LEN`] bytes; other types are skipped.
fn app_table(nest: &[u8]) -> Result<Vec<DcbApp>, DecodeError> {
    let mut apps = Vec::new();
    for attribute in attributes_in(nest, true, "DCB_ATTR_IEEE_APP_TABLE") {
        let attribute = attribute?;
        if !matches!(
            attribute.kind(),
            abi::DCB_ATTR_IEEE_APP | abi::DCB_ATTR_DCB_APP
        ) {
            continue;
        }
        let value = value_of(attribute);
        if value.len() != abi::DCB_APP_LEN {
            return Err(DecodeError::from(format!(
                "DCB_ATTR_IEEE_APP in DCB_ATTR_IEEE_APP_TABLE is {} bytes, struct dcb_app is {}",
                value.len(),
                abi::DCB_APP_LEN
            )));
        }
        apps.push(DcbApp {
            selector: value[0],
            priority: value[1],
            protocol: u16::from_ne_bytes([value[2], value[3]]),
        });
    }
    Ok(apps)
}

/// The value of a struct attribute when it has exactly `len` bytes.
fn sized<'a>(attribute: &Attribute<'a>, len: usize) -> Result<&'a [u8], DecodeError> {
    let value = value_of(*attribute);
    if value.len() == len {
        Ok(value)
    } else {
        let name = abi::attribute_name(attribute.kind(), true);
        let what = if value.len() < len {
            "truncated"
        } else {
            "an unknown layout"
        };
        Err(DecodeError::from(format!(
            "{name} is {} bytes, its struct is {len} ({what})",
            value.len()
        )))
    }
}

/// An attribute's value, borrowed from the answer rather than from the attribute (its
/// length was checked against the buffer by `NlasIterator`, so the slice is in bounds).
fn value_of(attribute: Attribute<'_>) -> &[u8] {
    let length = usize::from(attribute.length());
    attribute
        .into_inner()
        .get(NLA_HEADER_LEN..length)
        .unwrap_or_default()
}

/// The attributes in `buffer`, as [`NlasIterator`] yields them, with an error that names
/// the attribute whose length runs past the end (by its type, read from where it starts)
/// and what it is inside of. Iteration stops after an error.
fn attributes_in<'a>(
    buffer: &'a [u8],
    within_ieee: bool,
    within: &'static str,
) -> impl Iterator<Item = Result<Attribute<'a>, DecodeError>> + 'a {
    let mut position = 0;
    let mut failed = false;
    NlasIterator::new(buffer).map_while(move |attribute| {
        if failed {
            return None;
        }
        Some(match attribute {
            Ok(attribute) => {
                position += (usize::from(attribute.length()) + 3) & !3;
                Ok(attribute)
            }
            Err(e) => {
                failed = true;
                let kind = buffer
                    .get(position + 2..position + 4)
                    .map(|b| u16::from_ne_bytes([b[0], b[1]]) & NLA_TYPE_MASK);
                let what = match kind {
                    Some(kind) => abi::attribute_name(kind, within_ieee),
                    None => "a truncated attribute header",
                };
                Err(DecodeError::from(format!("{what} in {within}: {e}")))
            }
        })
    })
}

fn missing(name: &str, within: &str) -> DecodeError {
    DecodeError::from(format!("{within} has no {name}"))
}
