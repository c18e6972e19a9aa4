//! Redaction of tc filter answers (`RTM_NEWTFILTER`): a flower filter's match keys and
//! its `tunnel_key` actions carry the peers' MAC and IP addresses, which the rest of the
//! capture never sees (a remote MAC is in no sysfs file), so the scan for known bytes in
//! [`super::netlink`] cannot catch them. Each such attribute is mapped in place through
//! the capture's [`Redactor`], as its text would be; everything else, counters included,
//! stays byte for byte. The attributes are walked by hand: a parse and re-encode through
//! a netlink crate would drop or reorder what the crate does not model, and a replay
//! answers exactly the recorded bytes.
//!
//! Not mapped: addresses inside `pedit` actions (raw 32-bit words at offsets, which only
//! the offsets' meaning could tell from other words), said in docs/hardware.md.

use super::redact::Redactor;

/// The netlink header and `struct tcmsg`, before a filter's attributes.
const HEADER_LEN: usize = 16;
const TCMSG_LEN: usize = 20;
/// `TCA_KIND`, `TCA_OPTIONS` (the filter's), and the same numbers for an action's
/// `TCA_ACT_KIND`, `TCA_ACT_OPTIONS`.
const KIND: u16 = 1;
const OPTIONS: u16 = 2;
/// `TCA_FLOWER_ACT`: the filter's actions, nested by order.
const FLOWER_ACT: u16 = 3;
/// Flower keys holding a link-layer address: `ETH_DST`, `ETH_SRC`, `ARP_SHA`, `ARP_THA`
/// (the masks beside them are not identifiers).
const FLOWER_MACS: [u16; 4] = [4, 6, 63, 65];
/// Flower keys holding an IPv4 address: `IPV4_SRC`, `IPV4_DST`, `ENC_IPV4_SRC`,
/// `ENC_IPV4_DST`, `ARP_SIP`, `ARP_TIP`.
const FLOWER_IPV4: [u16; 6] = [10, 12, 27, 29, 57, 59];
/// Flower keys holding an IPv6 address: `IPV6_SRC`, `IPV6_DST`, `ENC_IPV6_SRC`,
/// `ENC_IPV6_DST`.
const FLOWER_IPV6: [u16; 4] = [14, 16, 31, 33];
/// `tunnel_key` options: `ENC_IPV4_SRC`, `ENC_IPV4_DST`; `ENC_IPV6_SRC`, `ENC_IPV6_DST`.
const TUNNEL_IPV4: [u16; 2] = [3, 4];
const TUNNEL_IPV6: [u16; 2] = [5, 6];

/// Maps the addresses of one `RTM_NEWTFILTER` message in place (a message too short for
/// its header is left as it is).
pub(super) fn redact_filter(message: &mut [u8], redactor: &mut Redactor, file: &str) {
    let Some(attrs) = message.get_mut(HEADER_LEN + TCMSG_LEN..) else {
        return;
    };
    if kind_of(attrs).as_deref() != Some("flower") {
        return;
    }
    for_each_attr(attrs, |kind, value| {
        if kind == OPTIONS {
            redact_flower(value, redactor, file);
        }
    });
}

/// A flower filter's options: its keys, then its actions.
fn redact_flower(options: &mut [u8], redactor: &mut Redactor, file: &str) {
    for_each_attr(options, |kind, value| {
        if FLOWER_MACS.contains(&kind) {
            if let Some(placeholder) = redactor.link_address_bytes(value, file) {
                if placeholder.len() == value.len() {
                    value.copy_from_slice(&placeholder);
                }
            }
        } else if FLOWER_IPV4.contains(&kind) {
            map_ipv4(value, redactor, file);
        } else if FLOWER_IPV6.contains(&kind) {
            map_ipv6(value, redactor, file);
        } else if kind == FLOWER_ACT {
            for_each_attr(value, |_order, action| {
                redact_action(action, redactor, file)
            });
        }
    });
}

/// One action: a `tunnel_key` action's tunnel addresses.
fn redact_action(action: &mut [u8], redactor: &mut Redactor, file: &str) {
    if kind_of(action).as_deref() != Some("tunnel_key") {
        return;
    }
    for_each_attr(action, |kind, options| {
        if kind != OPTIONS {
            return;
        }
        for_each_attr(options, |kind, value| {
            if TUNNEL_IPV4.contains(&kind) {
                map_ipv4(value, redactor, file);
            } else if TUNNEL_IPV6.contains(&kind) {
                map_ipv6(value, redactor, file);
            }
        });
    });
}

fn map_ipv4(value: &mut [u8], redactor: &mut Redactor, file: &str) {
    if let Ok(octets) = <[u8; 4]>::try_from(&*value) {
        if let Some(placeholder) = redactor.ipv4_bytes(octets, file) {
            value.copy_from_slice(&placeholder);
        }
    }
}

fn map_ipv6(value: &mut [u8], redactor: &mut Redactor, file: &str) {
    if let Ok(octets) = <[u8; 16]>::try_from(&*value) {
        if let Some(placeholder) = redactor.ipv6_bytes(octets, file) {
            value.copy_from_slice(&placeholder);
        }
    }
}

/// The `KIND` attribute (a NUL-terminated string) among `attrs`.
fn kind_of(attrs: &mut [u8]) -> Option<String> {
    let mut found = None;
    for_each_attr(attrs, |kind, value| {
        if kind == KIND && found.is_none() {
            let text = value.split(|&b| b == 0).next().unwrap_or_default();
            found = Some(String::from_utf8_lossy(text).into_owned());
        }
    });
    found
}

/// Calls `visit` with each attribute's type (flags masked off) and value, in order;
/// stops at the first attribute whose length does not fit.
fn for_each_attr(attrs: &mut [u8], mut visit: impl FnMut(u16, &mut [u8])) {
    let mut at = 0;
    while at + 4 <= attrs.len() {
        let len = usize::from(u16::from_ne_bytes([attrs[at], attrs[at + 1]]));
        let kind = u16::from_ne_bytes([attrs[at + 2], attrs[at + 3]]) & 0x3fff;
        if len < 4 || at + len > attrs.len() {
            return;
        }
        visit(kind, &mut attrs[at + 4..at + len]);
        at += (len + 3) & !3;
    }
}

#[cfg(test)]
mod tests;
