//! Bytes laid out by hand from `include/uapi/linux/dcbnl.h` (6.1) for the DCB tests: the
//! reference the encoder and decoder are held to, written once for both test modules.

/// One netlink attribute: u16 length, u16 type, the value, padded to 4 bytes.
pub(super) fn nla(kind: u16, value: &[u8]) -> Vec<u8> {
    let len = 4 + value.len();
    let mut out = Vec::new();
    out.extend_from_slice(&(len as u16).to_ne_bytes());
    out.extend_from_slice(&kind.to_ne_bytes());
    out.extend_from_slice(value);
    out.resize((len + 3) & !3, 0);
    out
}

/// `struct ieee_pfc` field by field: u8 pfc_cap (8), pfc_en, mbc (0), a pad byte, u16
/// delay, two pad bytes, u64 requests[8], u64 indications[8]; `requests` and
/// `indications` on `priority`, zero elsewhere. 136 bytes.
pub(super) fn ieee_pfc(
    pfc_en: u8,
    delay: u16,
    priority: u64,
    requests: u64,
    indications: u64,
) -> Vec<u8> {
    let mut bytes = vec![8u8, pfc_en, 0, 0];
    bytes.extend(delay.to_ne_bytes());
    bytes.extend([0, 0]);
    for i in 0..8u64 {
        bytes.extend((if i == priority { requests } else { 0 }).to_ne_bytes());
    }
    for i in 0..8u64 {
        bytes.extend((if i == priority { indications } else { 0 }).to_ne_bytes());
    }
    assert_eq!(bytes.len(), 136);
    bytes
}
