//! What every answer decoder shares: finding the attributes of a message of the expected
//! type, and reading one attribute's value with netlink-packet-core's parsers, so that a
//! malformed answer is an error that names the attribute, never a panic or a guess.

use netlink_packet_core::{
    parse_string, parse_u32, parse_u64, DecodeError, ErrorContext, NlaBuffer, NlasIterator,
    NLA_ALIGNTO, NLA_TYPE_MASK,
};

use super::abi;
use crate::netlink::HEADER_LEN;

/// One attribute, as [`NlasIterator`] yields it (its
/// length already checked against the buffer).
pub(crate) type Attribute<'a> = NlaBuffer<&'a [u8]>;

/// The attributes in `buffer` (a message's, or a nest's value), as [`NlasIterator`]
/// yields them, with an error that names the attribute whose length runs past the end
/// and what it is inside of (`within`). Iteration stops after an error.
pub(crate) fn attributes<'a>(
    buffer: &'a [u8],
    within: &'static str,
) -> impl Iterator<Item = Result<Attribute<'a>, DecodeError>> + 'a {
    let mut position = 0;
    NlasIterator::new(buffer).map(move |attribute| match attribute {
        Ok(attribute) => {
            let length = usize::from(attribute.length());
            position += (length + NLA_ALIGNTO - 1) & !(NLA_ALIGNTO - 1);
            Ok(attribute)
        }
        Err(e) => {
            let kind = buffer
                .get(position + 2..position + 4)
                .map(|b| u16::from_ne_bytes([b[0], b[1]]) & NLA_TYPE_MASK);
            Err(match kind {
                Some(kind) => e.context(format!("{} in {within}", abi::attribute_name(kind))),
                None => e.context(format!("a truncated attribute header in {within}")),
            })
        }
    })
}

/// The attributes of `message` (`nlmsghdr` included) when its type is `message_type`;
/// `Ok(None)` for any other type (skipped, as the shared reply reader expects).
pub(crate) fn attributes_of(
    message: &[u8],
    message_type: u16,
) -> Result<Option<&[u8]>, DecodeError> {
    let kind = message
        .get(4..6)
        .map(|b| u16::from_ne_bytes([b[0], b[1]]))
        .ok_or_else(|| DecodeError::buffer_too_small(message.len(), HEADER_LEN))?;
    if kind != message_type {
        return Ok(None);
    }
    match message.get(HEADER_LEN..) {
        Some(attributes) => Ok(Some(attributes)),
        None => Err(DecodeError::buffer_too_small(message.len(), HEADER_LEN)),
    }
}

/// A `u32` attribute (exactly 4 bytes).
pub(crate) fn u32_value(attribute: &Attribute<'_>) -> Result<u32, DecodeError> {
    parse_u32(attribute.value()).with_context(|| abi::attribute_name(attribute.kind()))
}

/// A `u64` attribute (exactly 8 bytes).
pub(crate) fn u64_value(attribute: &Attribute<'_>) -> Result<u64, DecodeError> {
    parse_u64(attribute.value()).with_context(|| abi::attribute_name(attribute.kind()))
}

/// A string attribute: UTF-8, the trailing NUL dropped, no NUL inside.
pub(crate) fn string_value(attribute: &Attribute<'_>) -> Result<String, DecodeError> {
    let name = abi::attribute_name(attribute.kind());
    let text = parse_string(attribute.value()).context(name)?;
    if text.contains('\0') {
        return Err(DecodeError::from(format!(
            "{name}: {text:?} has a NUL inside"
        )));
    }
    Ok(text)
}

/// A name that stays one path component and one sample name: not empty, not `.` or `..`,
/// no `/`, shorter than `max`. Device and counter names are also sysfs file names, so a
/// name sysfs could not have is a malformed answer.
pub(crate) fn plain_name(attribute: &Attribute<'_>, max: usize) -> Result<String, DecodeError> {
    let name = string_value(attribute)?;
    let why = if name.is_empty() {
        Some("is empty")
    } else if name == "." || name == ".." || name.contains('/') {
        Some("is not a single path component")
    } else if name.len() >= max {
        Some("is too long")
    } else {
        None
    };
    match why {
        Some(why) => Err(DecodeError::from(format!(
            "{}: {name:?} {why}",
            abi::attribute_name(attribute.kind())
        ))),
        None => Ok(name),
    }
}

/// The error for an attribute the kernel always sends but this answer lacks.
pub(crate) fn missing(kind: u16) -> DecodeError {
    DecodeError::from(format!("the answer has no {}", abi::attribute_name(kind)))
}
