//! The RDMA netlink ABI this client speaks: the numbers of `include/uapi/rdma/rdma_netlink.h`
//! (checked against the header installed here and the kernel's `nldev.c`; docs/counters.md,
//! "RDMA hardware counters over netlink", lists the sources). Kept in one file because
//! they are ABI: the kernel never renumbers them, and a typo here would silently ask for
//! something else.

/// `RDMA_NL_NLDEV`: the client index of the device interface (`enum` after `RDMA_NL_LS`).
pub(crate) const RDMA_NL_NLDEV: u16 = 5;

/// `RDMA_NLDEV_CMD_GET`: one device, or every device with `NLM_F_DUMP`.
pub(crate) const RDMA_NLDEV_CMD_GET: u16 = 1;
/// `RDMA_NLDEV_CMD_STAT_GET`: a port's counters; without `RDMA_NLDEV_ATTR_STAT_RES` the
/// kernel answers with the port's default (hardware) counters.
pub(crate) const RDMA_NLDEV_CMD_STAT_GET: u16 = 17;

/// `RDMA_NLDEV_ATTR_PAD`: the padding `nla_put_u64_64bit` may insert before a u64.
pub(crate) const RDMA_NLDEV_ATTR_PAD: u16 = 0;
/// `RDMA_NLDEV_ATTR_DEV_INDEX` (u32): the kernel's device index.
pub(crate) const RDMA_NLDEV_ATTR_DEV_INDEX: u16 = 1;
/// `RDMA_NLDEV_ATTR_DEV_NAME` (NUL-terminated string): `mlx5_0`.
pub(crate) const RDMA_NLDEV_ATTR_DEV_NAME: u16 = 2;
/// `RDMA_NLDEV_ATTR_PORT_INDEX` (u32): a port number (from 1) in port requests; the number
/// of ports (`rdma_end_port`) in a `RDMA_NLDEV_CMD_GET` answer.
pub(crate) const RDMA_NLDEV_ATTR_PORT_INDEX: u16 = 3;
/// `RDMA_NLDEV_ATTR_STAT_HWCOUNTERS`: the nest of counter entries.
pub(crate) const RDMA_NLDEV_ATTR_STAT_HWCOUNTERS: u16 = 80;
/// `RDMA_NLDEV_ATTR_STAT_HWCOUNTER_ENTRY`: one counter, a nest of name and value.
pub(crate) const RDMA_NLDEV_ATTR_STAT_HWCOUNTER_ENTRY: u16 = 81;
/// `RDMA_NLDEV_ATTR_STAT_HWCOUNTER_ENTRY_NAME` (string): the counter's name, the same as
/// its `hw_counters/` file.
pub(crate) const RDMA_NLDEV_ATTR_STAT_HWCOUNTER_ENTRY_NAME: u16 = 82;
/// `RDMA_NLDEV_ATTR_STAT_HWCOUNTER_ENTRY_VALUE` (u64).
pub(crate) const RDMA_NLDEV_ATTR_STAT_HWCOUNTER_ENTRY_VALUE: u16 = 83;

/// `IB_DEVICE_NAME_MAX`: a device name is shorter than this.
pub(crate) const IB_DEVICE_NAME_MAX: usize = 64;

/// `RDMA_NL_GET_TYPE(client, op)`: the netlink message type of an operation,
/// `(client << 10) + op`.
pub(crate) const fn message_type(op: u16) -> u16 {
    (RDMA_NL_NLDEV << 10) + op
}

/// The names of the attributes decoded here, for error messages.
pub(crate) fn attribute_name(kind: u16) -> &'static str {
    match kind {
        RDMA_NLDEV_ATTR_DEV_INDEX => "RDMA_NLDEV_ATTR_DEV_INDEX",
        RDMA_NLDEV_ATTR_DEV_NAME => "RDMA_NLDEV_ATTR_DEV_NAME",
        RDMA_NLDEV_ATTR_PORT_INDEX => "RDMA_NLDEV_ATTR_PORT_INDEX",
        RDMA_NLDEV_ATTR_STAT_HWCOUNTERS => "RDMA_NLDEV_ATTR_STAT_HWCOUNTERS",
        RDMA_NLDEV_ATTR_STAT_HWCOUNTER_ENTRY => "RDMA_NLDEV_ATTR_STAT_HWCOUNTER_ENTRY",
        RDMA_NLDEV_ATTR_STAT_HWCOUNTER_ENTRY_NAME => "RDMA_NLDEV_ATTR_STAT_HWCOUNTER_ENTRY_NAME",
        RDMA_NLDEV_ATTR_STAT_HWCOUNTER_ENTRY_VALUE => "RDMA_NLDEV_ATTR_STAT_HWCOUNTER_ENTRY_VALUE",
        _ => "an RDMA netlink attribute",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn message_types_follow_rdma_nl_get_type() {
        // Computed from the uapi header with the C preprocessor: 5121 and 5137.
        assert_eq!(message_type(RDMA_NLDEV_CMD_GET), 5121);
        assert_eq!(message_type(RDMA_NLDEV_CMD_STAT_GET), 5137);
    }
}
