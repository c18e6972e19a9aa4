//! The answer decoder against byte-exact `RTM_GETDCB` answers laid out as
//! `dcbnl_ieee_fill` writes them (nests flagged `NLA_F_NESTED`, structs in host byte
//! order with the C padding of `struct ieee_pfc`), and one answer per failure:
//! truncation, unknown layout, missing nest. Also the request bytes and name validation.

use super::super::abi;
use super::super::decode::dcb_config_from_message;
use super::super::request::{validate_ifname, IeeeGetRequest};
use super::super::test_bytes::{ieee_pfc, nla};
use super::super::{DcbApp, DcbError};

const NLA_F_NESTED: u16 = 0x8000;

fn nest(kind: u16, children: &[Vec<u8>]) -> Vec<u8> {
    nla(kind | NLA_F_NESTED, &children.concat())
}

/// `struct ieee_ets`: TC0 and TC3 at 50 % each under ETS, priority 3 → TC3, the rest → TC0.
fn ets_bytes() -> Vec<u8> {
    let mut ets = vec![0u8, 8, 0];
    ets.extend([50, 0, 0, 50, 0, 0, 0, 0]); // tc_tx_bw
    ets.extend([0; 8]); // tc_rx_bw
    ets.extend([2, 0, 0, 2, 0, 0, 0, 0]); // tc_tsa: ets, strict ...
    ets.extend([0, 0, 0, 3, 0, 0, 0, 0]); // prio_tc
    ets.extend([0; 24]); // tc_reco_bw, tc_reco_tsa, reco_prio_tc
    assert_eq!(ets.len(), 59);
    ets
}

/// `struct ieee_pfc`: PFC on priority 3, delay 0x1234, 7 requests and 9 indications on 3.
fn pfc_bytes() -> Vec<u8> {
    ieee_pfc(0b0000_1000, 0x1234, 3, 7, 9)
}

fn app(selector: u8, priority: u8, protocol: u16) -> Vec<u8> {
    let mut value = vec![selector, priority];
    value.extend(protocol.to_ne_bytes());
    nla(abi::DCB_ATTR_IEEE_APP, &value)
}

/// A whole answer: `nlmsghdr`, `dcbmsg`, then `attributes`.
fn answer(cmd: u8, attributes: &[Vec<u8>]) -> Vec<u8> {
    let body = attributes.concat();
    let len = 16 + 4 + body.len();
    let mut out = Vec::new();
    out.extend((len as u32).to_ne_bytes());
    out.extend(abi::RTM_GETDCB.to_ne_bytes());
    out.extend(0u16.to_ne_bytes());
    out.extend(7u32.to_ne_bytes());
    out.extend(0u32.to_ne_bytes());
    out.extend([0, cmd, 0, 0]);
    out.extend(body);
    out
}

fn ifname() -> Vec<u8> {
    nla(abi::DCB_ATTR_IFNAME, b"ens1f0np0\0")
}

fn ieee(children: &[Vec<u8>]) -> Vec<u8> {
    nest(abi::DCB_ATTR_IEEE, children)
}

fn lossless_answer() -> Vec<u8> {
    let apps = nest(
        abi::DCB_ATTR_IEEE_APP_TABLE,
        &[app(5, 3, 26), app(5, 6, 48), app(1, 4, 0x8915)],
    );
    let maxrate = nla(7, &[0; 64]);
    let dcbx = nla(14, &[0x8]);
    answer(
        abi::DCB_CMD_IEEE_GET,
        &[
            ifname(),
            ieee(&[
                nla(abi::DCB_ATTR_IEEE_ETS, &ets_bytes()),
                maxrate,
                nla(abi::DCB_ATTR_IEEE_PFC, &pfc_bytes()),
                apps,
            ]),
            dcbx,
        ],
    )
}

fn decode_error(message: &[u8]) -> String {
    dcb_config_from_message(message)
        .expect_err("must not decode")
        .to_string()
}

#[test]
fn a_full_answer_decodes_every_field() {
    let config = dcb_config_from_message(&lossless_answer())
        .expect("decodes")
        .expect("an RTM_GETDCB answer");
    assert_eq!(config.ifname, "ens1f0np0");
    let ets = config.ets.expect("ETS");
    assert_eq!(ets.ets_cap, 8);
    assert_eq!(ets.tc_tx_bw, [50, 0, 0, 50, 0, 0, 0, 0]);
    assert_eq!(ets.tc_tsa[3], 2);
    assert_eq!(ets.prio_tc, [0, 0, 0, 3, 0, 0, 0, 0]);
    let pfc = config.pfc.expect("PFC");
    assert_eq!(pfc.pfc_cap, 8);
    assert_eq!(pfc.enabled_priorities(), [3]);
    assert_eq!(pfc.delay, 0x1234);
    assert_eq!(pfc.requests[3], 7);
    assert_eq!(pfc.indications[3], 9);
    assert_eq!(
        config.apps,
        [
            DcbApp {
                selector: 5,
                priority: 3,
                protocol: 26
            },
            DcbApp {
                selector: 5,
                priority: 6,
                protocol: 48
            },
            DcbApp {
                selector: 1,
                priority: 4,
                protocol: 0x8915
            },
        ]
    );
    assert!(config.trusts_dscp());
    assert_eq!(config.dscp_priority(26), Some(3));
    assert_eq!(config.dscp_priority(10), None);
}

#[test]
fn a_driver_without_ets_pfc_or_apps_decodes_to_none_and_pcp_trust() {
    let bytes = answer(
        abi::DCB_CMD_IEEE_GET,
        &[ifname(), ieee(&[nest(abi::DCB_ATTR_IEEE_APP_TABLE, &[])])],
    );
    let config = dcb_config_from_message(&bytes)
        .expect("decodes")
        .expect("answer");
    assert_eq!((config.ets, config.pfc), (None, None));
    assert!(config.apps.is_empty());
    assert!(!config.trusts_dscp());
}

#[test]
fn other_message_types_are_skipped() {
    let mut bytes = lossless_answer();
    bytes[4..6].copy_from_slice(&16u16.to_ne_bytes());
    assert_eq!(dcb_config_from_message(&bytes).expect("skipped"), None);
}

#[test]
fn a_truncated_ets_names_the_attribute() {
    let bytes = answer(
        abi::DCB_CMD_IEEE_GET,
        &[
            ifname(),
            ieee(&[nla(abi::DCB_ATTR_IEEE_ETS, &ets_bytes()[..40])]),
        ],
    );
    let error = decode_error(&bytes);
    assert!(
        error.contains("DCB_ATTR_IEEE_ETS is 40 bytes, its struct is 59 (truncated)"),
        "{error}"
    );
}

#[test]
fn a_pfc_of_another_layout_names_the_attribute() {
    let mut long = pfc_bytes();
    long.extend([0; 8]);
    let bytes = answer(
        abi::DCB_CMD_IEEE_GET,
        &[ifname(), ieee(&[nla(abi::DCB_ATTR_IEEE_PFC, &long)])],
    );
    let error = decode_error(&bytes);
    assert!(
        error.contains("DCB_ATTR_IEEE_PFC is 144 bytes") && error.contains("unknown layout"),
        "{error}"
    );
}

#[test]
fn a_short_app_entry_is_an_error() {
    let short = nla(abi::DCB_ATTR_IEEE_APP, &[5, 3]);
    let bytes = answer(
        abi::DCB_CMD_IEEE_GET,
        &[
            ifname(),
            ieee(&[nest(abi::DCB_ATTR_IEEE_APP_TABLE, &[short])]),
        ],
    );
    let error = decode_error(&bytes);
    assert!(error.contains("struct dcb_app is 4"), "{error}");
}

#[test]
fn an_answer_without_the_ieee_nest_is_an_error() {
    let bytes = answer(abi::DCB_CMD_IEEE_GET, &[ifname()]);
    assert_eq!(decode_error(&bytes), "the answer has no DCB_ATTR_IEEE");
}

#[test]
fn an_attribute_running_past_the_end_is_an_error_not_a_panic() {
    let mut bytes = lossless_answer();
    // Cut the datagram in the middle of the PFC struct, and fix nlmsg_len to match.
    bytes.truncate(16 + 4 + 12 + 4 + 4 + 60 + 4 + 64 + 40);
    let len = bytes.len() as u32;
    bytes[..4].copy_from_slice(&len.to_ne_bytes());
    let error = decode_error(&bytes);
    assert!(error.contains("DCB_ATTR_IEEE"), "{error}");
    for cut in 0..lossless_answer().len() {
        let _ = dcb_config_from_message(&lossless_answer()[..cut]);
    }
}

#[test]
fn an_answer_to_another_command_is_an_error() {
    let bytes = answer(abi::DCB_CMD_IEEE_GET + 1, &[ifname(), ieee(&[])]);
    assert!(decode_error(&bytes).contains("DCB command 22"));
}

#[test]
fn the_request_is_rtm_getdcb_ieee_get_with_the_interface_name() {
    let bytes = IeeeGetRequest::new("ens1f0np0").expect("valid").encode(42);
    let mut expected = Vec::new();
    expected.extend(36u32.to_ne_bytes()); // 16 + 4 + nla(4 + 10 → 12)
    expected.extend(78u16.to_ne_bytes());
    expected.extend(0x0005u16.to_ne_bytes()); // NLM_F_REQUEST | NLM_F_ACK
    expected.extend(42u32.to_ne_bytes());
    expected.extend(0u32.to_ne_bytes());
    expected.extend([0, 21, 0, 0]);
    expected.extend(nla(1, b"ens1f0np0\0"));
    assert_eq!(bytes, expected);
}

#[test]
fn interface_names_are_validated_before_any_request() {
    for bad in ["", "..", "a/b", "eth 0", "averyveryverylongname", "x\0y"] {
        assert!(
            matches!(validate_ifname(bad), Err(DcbError::InvalidName { .. })),
            "{bad:?}"
        );
    }
    validate_ifname("ens1f0np0").expect("valid");
    let root = crate::SysRoot::new("/tmp/fixture");
    assert!(matches!(
        super::super::read_dcb_config(&root, "ens1f0np0"),
        Err(DcbError::NotLive { .. })
    ));
}
