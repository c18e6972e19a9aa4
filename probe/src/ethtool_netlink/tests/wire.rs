//! The requests and replies against bytes written out by hand from
//! `include/uapi/linux/netlink.h`, `genetlink.h` and `ethtool_netlink.h` (6.1): if an
//! attribute number, a flag or a padding rule were wrong here, the bytes would differ.

use super::super::abi;
use super::super::decode::{family_id_from_message, rings_from_message};
use super::super::error::EthtoolError;
use super::super::handle::EthtoolNetlink;
use super::super::message::{GenlRequest, Ring};

/// One attribute: `struct nlattr { u16 nla_len; u16 nla_type; }`, the value, padding to 4.
fn attr(kind: u16, value: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    out.extend_from_slice(&(4 + value.len() as u16).to_ne_bytes());
    out.extend_from_slice(&kind.to_ne_bytes());
    out.extend_from_slice(value);
    while out.len() % 4 != 0 {
        out.push(0);
    }
    out
}

/// `struct nlmsghdr` (len, type, flags, seq, pid 0), `struct genlmsghdr`, attributes.
fn message(kind: u16, flags: u16, seq: u32, cmd: u8, version: u8, attrs: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    out.extend_from_slice(&(16 + 4 + attrs.len() as u32).to_ne_bytes());
    out.extend_from_slice(&kind.to_ne_bytes());
    out.extend_from_slice(&flags.to_ne_bytes());
    out.extend_from_slice(&seq.to_ne_bytes());
    out.extend_from_slice(&0u32.to_ne_bytes());
    out.extend_from_slice(&[cmd, version, 0, 0]);
    out.extend_from_slice(attrs);
    out
}

/// `NLM_F_REQUEST | NLM_F_ACK`.
const REQUEST_ACK: u16 = 0x1 | 0x4;
/// `NLA_F_NESTED`.
const NESTED: u16 = 0x8000;

/// `ETHTOOL_A_RINGS_HEADER` (1, nested) holding `ETHTOOL_A_HEADER_DEV_NAME` (2).
fn header(name: &str) -> Vec<u8> {
    let mut value = name.as_bytes().to_vec();
    value.push(0);
    attr(1 | NESTED, &attr(2, &value))
}

#[test]
fn the_family_lookup_asks_the_controller_by_name() {
    // GENL_ID_CTRL = 16, CTRL_CMD_GETFAMILY = 3, CTRL_ATTR_FAMILY_NAME = 2.
    let expected = message(16, REQUEST_ACK, 9, 3, 1, &attr(2, b"ethtool\0"));
    assert_eq!(GenlRequest::family_by_name("ethtool").encode(9), expected);
}

#[test]
fn rings_get_names_the_interface_in_a_nested_header() {
    // ETHTOOL_MSG_RINGS_GET = 15, ETHTOOL_GENL_VERSION = 1; the family id is the type.
    let expected = message(27, REQUEST_ACK, 3, 15, 1, &header("v0"));
    assert_eq!(GenlRequest::rings_get(27, "v0").encode(3), expected);
    assert_eq!(
        expected.len(),
        16 + 4 + 12,
        "v0\\0 padded to 4 inside an 8-byte nest"
    );
}

#[test]
fn rings_set_carries_one_size_attribute_for_the_ring_asked() {
    // ETHTOOL_MSG_RINGS_SET = 16; ETHTOOL_A_RINGS_RX = 6, ETHTOOL_A_RINGS_TX = 9 (u32).
    let mut rx = header("eth1");
    rx.extend(attr(6, &512u32.to_ne_bytes()));
    assert_eq!(
        GenlRequest::rings_set(27, "eth1", Ring::Rx, 512).encode(4),
        message(27, REQUEST_ACK, 4, 16, 1, &rx)
    );
    let mut tx = header("eth1");
    tx.extend(attr(9, &128u32.to_ne_bytes()));
    assert_eq!(
        GenlRequest::rings_set(27, "eth1", Ring::Tx, 128).encode(4),
        message(27, REQUEST_ACK, 4, 16, 1, &tx)
    );
}

#[test]
fn the_controller_answer_gives_the_family_id() {
    // CTRL_CMD_NEWFAMILY = 1, CTRL_ATTR_FAMILY_ID = 1 (u16), after the name.
    let mut attrs = attr(2, b"ethtool\0");
    attrs.extend(attr(1, &21u16.to_ne_bytes()));
    let answer = message(16, 0, 1, 1, 2, &attrs);
    assert_eq!(family_id_from_message(&answer).expect("decodes"), Some(21));
    // Without the id: an error, not a guess.
    let bare = message(16, 0, 1, 1, 2, &attr(2, b"ethtool\0"));
    let err = family_id_from_message(&bare).expect_err("no id");
    assert!(err.to_string().contains("CTRL_ATTR_FAMILY_ID"), "{err}");
    // A u32 where a u16 belongs is refused by name.
    let wide = message(16, 0, 1, 1, 2, &attr(1, &21u32.to_ne_bytes()));
    let err = family_id_from_message(&wide).expect_err("wrong size");
    assert!(
        err.to_string().contains("CTRL_ATTR_FAMILY_ID is 4 bytes"),
        "{err}"
    );
}

/// A reply as `rings_fill_reply` writes it for a NIC with RX and TX rings: the header
/// (DEV_INDEX 1 and DEV_NAME 2), RX_MAX 2, TX_MAX 5, RX 6, TX 9, then TX_PUSH 13 (u8).
fn rings_reply(name: &str, rx: &[u8]) -> Vec<u8> {
    let mut value = name.as_bytes().to_vec();
    value.push(0);
    let mut nest = attr(1, &7u32.to_ne_bytes());
    nest.extend(attr(2, &value));
    let mut attrs = attr(1 | NESTED, &nest);
    attrs.extend(attr(2, &4096u32.to_ne_bytes()));
    attrs.extend(attr(5, &2048u32.to_ne_bytes()));
    attrs.extend(attr(6, rx));
    attrs.extend(attr(9, &512u32.to_ne_bytes()));
    attrs.extend(attr(13, &[0]));
    // ETHTOOL_MSG_RINGS_GET_REPLY = 16.
    message(27, 0, 5, 16, 1, &attrs)
}

#[test]
fn a_rings_reply_decodes_sizes_maxima_and_the_interface() {
    let answer = rings_from_message(&rings_reply("ens1f0np0", &1024u32.to_ne_bytes()))
        .expect("decodes")
        .expect("a rings reply");
    assert_eq!(answer.family, 27);
    assert_eq!(answer.cmd, abi::ETHTOOL_MSG_RINGS_GET_REPLY);
    let rings = answer.rings;
    assert_eq!(rings.ifname, "ens1f0np0");
    assert_eq!(
        (rings.rx, rings.rx_max, rings.tx, rings.tx_max),
        (Some(1024), Some(4096), Some(512), Some(2048))
    );
}

#[test]
fn a_truncated_or_headless_reply_is_an_error_naming_what_is_wrong() {
    let err = rings_from_message(&rings_reply("eth0", &[0, 4])).expect_err("2-byte RX");
    assert!(
        err.to_string().contains("ETHTOOL_A_RINGS_RX is 2 bytes"),
        "{err}"
    );
    let headless = message(27, 0, 5, 16, 1, &attr(6, &256u32.to_ne_bytes()));
    let err = rings_from_message(&headless).expect_err("no header");
    assert!(err.to_string().contains("ETHTOOL_A_RINGS_HEADER"), "{err}");
    let other = message(27, 0, 5, 2, 1, &header("eth0"));
    let err = rings_from_message(&other).expect_err("another command");
    assert!(err.to_string().contains("command 2"), "{err}");
}

#[test]
fn rings_the_driver_lacks_are_absent_not_zero() {
    // The kernel omits the attributes of a ring whose maximum is 0 (no TX here).
    let mut attrs = header("eth0");
    attrs.extend(attr(2, &256u32.to_ne_bytes()));
    attrs.extend(attr(6, &256u32.to_ne_bytes()));
    let rings = rings_from_message(&message(27, 0, 5, 16, 1, &attrs))
        .expect("decodes")
        .expect("a reply")
        .rings;
    assert_eq!((rings.rx, rings.rx_max), (Some(256), Some(256)));
    assert_eq!((rings.tx, rings.tx_max), (None, None));
}

#[test]
fn the_running_kernel_resolves_the_family_and_loopback_has_no_rings() {
    let mut ethtool = match EthtoolNetlink::open() {
        Ok(socket) => socket,
        // A kernel without CONFIG_ETHTOOL_NETLINK (before 5.6): nothing live to ask.
        Err(e) => return eprintln!("SKIPPED: {}", crate::error_chain(&e)),
    };
    // Loopback has no ethtool ring operations: EOPNOTSUPP, named, no decoding of silence.
    match ethtool.rings("lo") {
        Err(EthtoolError::NotSupported { ifname, what, .. }) => {
            assert_eq!((ifname.as_str(), what), ("lo", "reading ring sizes"));
        }
        other => panic!("lo answered {other:?}"),
    }
    let err = ethtool.rings("a/b").expect_err("not a name");
    assert!(matches!(err, EthtoolError::InvalidName { .. }), "{err}");
}
