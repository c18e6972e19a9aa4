//! The DCB netlink ABI this reader speaks: the numbers and struct sizes of
//! `include/uapi/linux/dcbnl.h` and `include/uapi/linux/rtnetlink.h`, checked against the
//! kernel's `net/dcb/dcbnl.c` (`dcbnl_ieee_fill`) and the headers installed here (sources:
//! `docs/reference/dcb-netlink.md`). Kept in one file because they are ABI: the kernel
//! never renumbers them, and a typo here would silently ask for something else.

/// `RTM_GETDCB`: the rtnetlink message type of a DCB request, and of its answer.
pub(crate) const RTM_GETDCB: u16 = 78;
/// `RTM_SETDCB`: the message type of a DCB set request, and of its answer.
pub(crate) const RTM_SETDCB: u16 = 79;
/// `AF_UNSPEC`: `dcbmsg.dcb_family` of every DCB request.
pub(crate) const AF_UNSPEC: u8 = 0;
/// `DCB_CMD_IEEE_SET` (`enum dcbnl_commands`): change the IEEE 802.1Qaz configuration.
pub(crate) const DCB_CMD_IEEE_SET: u8 = 20;
/// `DCB_CMD_IEEE_GET` (`enum dcbnl_commands`): the IEEE 802.1Qaz configuration.
pub(crate) const DCB_CMD_IEEE_GET: u8 = 21;
/// `sizeof(struct dcbmsg)`: the family header before the attributes.
pub(crate) const DCBMSG_LEN: usize = 4;

/// `DCB_ATTR_IFNAME` (`enum dcbnl_attrs`, NUL-terminated string): the interface.
pub(crate) const DCB_ATTR_IFNAME: u16 = 1;
/// `DCB_ATTR_IEEE` (nest): everything `DCB_CMD_IEEE_GET` answers with.
pub(crate) const DCB_ATTR_IEEE: u16 = 13;

/// `DCB_ATTR_IEEE_ETS` (`enum ieee_attrs`, `struct ieee_ets`).
pub(crate) const DCB_ATTR_IEEE_ETS: u16 = 1;
/// `DCB_ATTR_IEEE_PFC` (`struct ieee_pfc`).
pub(crate) const DCB_ATTR_IEEE_PFC: u16 = 2;
/// `DCB_ATTR_IEEE_APP_TABLE` (nest of `DCB_ATTR_IEEE_APP` / `DCB_ATTR_DCB_APP`).
pub(crate) const DCB_ATTR_IEEE_APP_TABLE: u16 = 3;

/// `DCB_ATTR_IEEE_APP` (`enum ieee_attrs_app`, `struct dcb_app`): an IEEE-selector entry.
pub(crate) const DCB_ATTR_IEEE_APP: u16 = 1;
/// `DCB_ATTR_DCB_APP` (`struct dcb_app`): a non-standard-selector entry (PCP, 255), 6.2+.
pub(crate) const DCB_ATTR_DCB_APP: u16 = 2;

/// `IEEE_8021QAZ_MAX_TCS`: traffic classes and priorities per array.
pub(crate) const MAX_TCS: usize = 8;
/// `sizeof(struct ieee_ets)`: three `u8`s and seven `u8[8]` arrays, no padding.
pub(crate) const IEEE_ETS_LEN: usize = 3 + 7 * MAX_TCS;
/// `sizeof(struct ieee_pfc)`: `u8 pfc_cap, pfc_en, mbc`, a pad byte, `u16 delay`, two pad
/// bytes, then `u64 requests[8]` at 8 and `u64 indications[8]` at 72.
pub(crate) const IEEE_PFC_LEN: usize = 136;
/// Offset of `ieee_pfc.delay`.
pub(crate) const IEEE_PFC_DELAY_AT: usize = 4;
/// Offset of `ieee_pfc.requests`.
pub(crate) const IEEE_PFC_REQUESTS_AT: usize = 8;
/// Offset of `ieee_pfc.indications`.
pub(crate) const IEEE_PFC_INDICATIONS_AT: usize = 72;
/// `sizeof(struct dcb_app)`: `u8 selector, u8 priority, u16 protocol`.
pub(crate) const DCB_APP_LEN: usize = 4;

/// `IFNAMSIZ`: an interface name is shorter than this (the kernel's policy for
/// `DCB_ATTR_IFNAME` is `IFNAMSIZ - 1` characters).
pub(crate) const IFNAMSIZ: usize = 16;

/// The names of the attributes decoded here, for error messages.
pub(crate) fn attribute_name(kind: u16, within_ieee: bool) -> &'static str {
    match (within_ieee, kind) {
        (false, DCB_ATTR_IFNAME) => "DCB_ATTR_IFNAME",
        (false, DCB_ATTR_IEEE) => "DCB_ATTR_IEEE",
        (true, DCB_ATTR_IEEE_ETS) => "DCB_ATTR_IEEE_ETS",
        (true, DCB_ATTR_IEEE_PFC) => "DCB_ATTR_IEEE_PFC",
        (true, DCB_ATTR_IEEE_APP_TABLE) => "DCB_ATTR_IEEE_APP_TABLE",
        (false, _) => "a DCB attribute",
        (true, _) => "a DCB_ATTR_IEEE attribute",
    }
}
