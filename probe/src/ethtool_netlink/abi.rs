//! The generic netlink and ethtool netlink ABI this client speaks: the numbers of
//! `include/uapi/linux/genetlink.h` and `include/uapi/linux/ethtool_netlink.h`, checked
//! against the `linux-libc-dev` 6.1 headers installed on the build machine (a C program
//! printing them; sources: `docs/reference/ethtool-netlink.md`). Kept in one file because
//! they are ABI: the kernel never renumbers them, and a typo here would silently ask for
//! something else.

/// `GENL_ID_CTRL`: the message type of the generic netlink controller, which maps family
/// names to the ids the kernel assigned at boot.
pub(crate) const GENL_ID_CTRL: u16 = 16;
/// `CTRL_CMD_NEWFAMILY`: the controller's answer describing one family.
pub(crate) const CTRL_CMD_NEWFAMILY: u8 = 1;
/// `CTRL_CMD_GETFAMILY`: ask the controller about one family, by name.
pub(crate) const CTRL_CMD_GETFAMILY: u8 = 3;
/// `CTRL_ATTR_FAMILY_ID` (u16): the family's message type.
pub(crate) const CTRL_ATTR_FAMILY_ID: u16 = 1;
/// `CTRL_ATTR_FAMILY_NAME` (NUL-terminated string).
pub(crate) const CTRL_ATTR_FAMILY_NAME: u16 = 2;
/// The controller's version as libnl and iproute2 send it (the kernel does not check it).
pub(crate) const CTRL_VERSION: u8 = 1;
/// `GENL_HDRLEN`: `struct genlmsghdr { u8 cmd; u8 version; u16 reserved; }`.
pub(crate) const GENL_HEADER_LEN: usize = 4;

/// `ETHTOOL_GENL_NAME`: the family name the controller resolves.
pub(crate) const ETHTOOL_GENL_NAME: &str = "ethtool";
/// `ETHTOOL_GENL_VERSION`.
pub(crate) const ETHTOOL_GENL_VERSION: u8 = 1;

/// `ETHTOOL_MSG_RINGS_GET` (user → kernel, enum of requests).
pub(crate) const ETHTOOL_MSG_RINGS_GET: u8 = 15;
/// `ETHTOOL_MSG_RINGS_SET` (user → kernel).
pub(crate) const ETHTOOL_MSG_RINGS_SET: u8 = 16;
/// `ETHTOOL_MSG_RINGS_GET_REPLY` (kernel → user, a separate enum: also 16).
pub(crate) const ETHTOOL_MSG_RINGS_GET_REPLY: u8 = 16;

/// `ETHTOOL_A_HEADER_DEV_NAME` (NUL-terminated string) in the request/reply header nest
/// (`ETHTOOL_A_HEADER_DEV_INDEX`, 1, is the reply's other member; not read).
pub(crate) const ETHTOOL_A_HEADER_DEV_NAME: u16 = 2;

/// `ETHTOOL_A_RINGS_HEADER` (nest of `ETHTOOL_A_HEADER_*`).
pub(crate) const ETHTOOL_A_RINGS_HEADER: u16 = 1;
/// `ETHTOOL_A_RINGS_RX_MAX` (u32): the driver's largest RX ring.
pub(crate) const ETHTOOL_A_RINGS_RX_MAX: u16 = 2;
/// `ETHTOOL_A_RINGS_TX_MAX` (u32).
pub(crate) const ETHTOOL_A_RINGS_TX_MAX: u16 = 5;
/// `ETHTOOL_A_RINGS_RX` (u32): the RX ring size in force.
pub(crate) const ETHTOOL_A_RINGS_RX: u16 = 6;
/// `ETHTOOL_A_RINGS_TX` (u32).
pub(crate) const ETHTOOL_A_RINGS_TX: u16 = 9;
