//! DCB netlink (`RTM_GETDCB`, what iproute2's `dcb` and `mlnx_qos` read): the IEEE
//! 802.1Qaz configuration of an interface (ETS shares and priority → traffic-class map,
//! the priorities PFC makes lossless, the APP table whose DSCP entries mean "trust
//! dscp"), and the rdma_cm default ToS from configfs. Together they tell whether RoCE
//! traffic lands on a lossless priority: the `dcb.*` checks of `dpuctl check`.
//!
//! Owns: the `DCB_CMD_IEEE_GET` request and answer decoding (every truncation an error
//! naming the attribute), a blocking `NETLINK_ROUTE` socket for it on the shared reply
//! reader ([`DcbNetlink`]), and the live-only rule ([`read_dcb_config`]: a `--sys-root`
//! tree has no driver to ask); one set, `DCB_CMD_IEEE_SET` of the PFC object
//! ([`DcbNetlink::set_ieee_pfc`]), for the `pfc` knob of `dpu-host`'s A/B/A experiments.
//! Must not: send `DCB_CMD_IEEE_DEL` or any other set command. Sources and what is
//! unverified: `docs/reference/dcb-netlink.md`.

mod abi;
mod config;
mod decode;
mod error;
mod handle;
mod pfc_set;
mod request;
mod roce_tos;
#[cfg(test)]
mod test_bytes;

pub use config::{
    tsa_name, DcbApp, DcbConfig, IeeeEts, IeeePfc, APP_SEL_DSCP, TSA_CB_SHAPER, TSA_ETS,
    TSA_STRICT, TSA_VENDOR,
};
pub use error::DcbError;
pub use handle::{read_dcb_config, DcbNetlink};
pub(crate) use request::ifname_problem;
pub use roce_tos::{read_roce_tos, roce_tos_path, RoceTos};

/// Decodes one `RTM_GETDCB` answer (`nlmsghdr` included) as the socket does, for callers
/// that hold canned answer bytes (tests of the checks built on it, fuzzing). `Ok(None)`
/// for a message of another type.
pub fn decode_ieee_answer(
    message: &[u8],
) -> Result<Option<DcbConfig>, netlink_packet_core::DecodeError> {
    decode::dcb_config_from_message(message)
}

#[cfg(test)]
mod tests;
