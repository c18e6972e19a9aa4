//! The `DCB_CMD_IEEE_SET` request and its answer against bytes laid out by hand from
//! `include/uapi/linux/dcbnl.h` and `rtnetlink.h` (6.1): `RTM_SETDCB` = 79,
//! `DCB_CMD_IEEE_SET` = 20, `DCB_ATTR_IFNAME` = 1, `DCB_ATTR_IEEE` = 13 (nested),
//! `DCB_ATTR_IEEE_PFC` = 2 holding the 136-byte `struct ieee_pfc`.

use super::super::config::IeeePfc;
use super::super::decode::dcb_config_from_message;
use super::super::pfc_set::{ieee_pfc_bytes, ieee_set_status, status_errno, IeeePfcSetRequest};
use super::super::test_bytes::{ieee_pfc, nla};
use super::super::DcbError;

fn message(kind: u16, flags: u16, seq: u32, cmd: u8, attributes: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    out.extend_from_slice(&(16 + 4 + attributes.len() as u32).to_ne_bytes());
    out.extend_from_slice(&kind.to_ne_bytes());
    out.extend_from_slice(&flags.to_ne_bytes());
    out.extend_from_slice(&seq.to_ne_bytes());
    out.extend_from_slice(&0u32.to_ne_bytes());
    out.extend_from_slice(&[0, cmd, 0, 0]);
    out.extend_from_slice(attributes);
    out
}

/// PFC on priorities 3 and 4 of a port that allows 8, delay 0x0102, counters on 3.
fn pfc() -> IeeePfc {
    let mut pfc = IeeePfc {
        pfc_cap: 8,
        pfc_en: 0b0001_1000,
        mbc: 0,
        delay: 0x0102,
        ..IeeePfc::default()
    };
    pfc.requests[3] = 11;
    pfc.indications[3] = 13;
    pfc
}

/// What [`pfc`] is as the kernel lays it out.
fn pfc_by_hand() -> Vec<u8> {
    ieee_pfc(0b0001_1000, 0x0102, 3, 11, 13)
}

#[test]
fn the_struct_is_laid_out_as_the_kernel_reads_it() {
    assert_eq!(ieee_pfc_bytes(&pfc()), pfc_by_hand());
    assert_eq!(pfc_by_hand().len(), 136);
}

#[test]
fn the_set_request_nests_the_pfc_struct_under_dcb_attr_ieee() {
    let nest = nla(13 | 0x8000, &nla(2, &pfc_by_hand()));
    let mut attributes = nla(1, b"p0\0");
    attributes.extend(nest);
    // NLM_F_REQUEST | NLM_F_ACK.
    let expected = message(79, 0x5, 6, 20, &attributes);
    let request = IeeePfcSetRequest::new("p0", &pfc()).expect("valid name");
    assert_eq!(request.encode(6), expected);
}

#[test]
fn what_the_encoder_writes_the_decoder_reads_back() {
    // An IEEE_GET answer carrying the encoder's bytes decodes to the same struct.
    let nest = nla(13 | 0x8000, &nla(2, &ieee_pfc_bytes(&pfc())));
    let mut attributes = nla(1, b"p0\0");
    attributes.extend(nest);
    let config = dcb_config_from_message(&message(78, 0, 1, 21, &attributes))
        .expect("decodes")
        .expect("an answer");
    assert_eq!(config.pfc, Some(pfc()));
}

#[test]
fn the_answer_status_is_the_driver_verdict() {
    let ok = message(79, 0, 6, 20, &nla(13, &[0]));
    assert_eq!(ieee_set_status(&ok).expect("decodes"), Some(0));
    // dcbnl_ieee_set puts (u8)-EINVAL = 0xea when the driver refuses.
    let refused = message(79, 0, 6, 20, &nla(13, &[0xea]));
    let status = ieee_set_status(&refused).expect("decodes").expect("status");
    assert_eq!(status_errno(status), 22);
    assert_eq!(status_errno(0xa1), 95, "(u8)-EOPNOTSUPP");
    // Another message type is skipped; a wrong command or no status is an error.
    assert_eq!(
        ieee_set_status(&message(78, 0, 6, 21, &[])).expect("skip"),
        None
    );
    let err = ieee_set_status(&message(79, 0, 6, 21, &nla(13, &[0]))).expect_err("cmd");
    assert!(err.to_string().contains("DCB command 21"), "{err}");
    let err = ieee_set_status(&message(79, 0, 6, 20, &[])).expect_err("no status");
    assert!(err.to_string().contains("no DCB_ATTR_IEEE"), "{err}");
    let err = ieee_set_status(&message(79, 0, 6, 20, &nla(13, &[0, 0]))).expect_err("u16");
    assert!(err.to_string().contains("2 bytes"), "{err}");
}

#[test]
fn a_bad_name_is_refused_before_any_request() {
    let err = IeeePfcSetRequest::new("p0 x", &pfc()).expect_err("whitespace");
    assert!(matches!(err, DcbError::InvalidName { .. }), "{err}");
}
