//! Firmware settings, read-only: what `mlxconfig -e -d BDF query` (NVIDIA MFT) or
//! `mstconfig -e -d BDF query` (Debian's `mstflint`) prints for every NVIDIA/Mellanox NIC
//! function 0, parsed into typed parameters (DPU or NIC mode, link types, SR-IOV, NVMe
//! emulation, RoCE congestion control, current and next-boot values). Shared by
//! `dpuctl check` on the host and the agent on the BlueField's Arm, which report the same
//! facts for their side.
//!
//! Owns: the query-output parser ([`parse_fw_query`], pure), locating and running the tool
//! with an argument vector and a deadline ([`SystemFwTool`]), and querying every card at
//! once ([`gather_fw`]: live root and root only). Must not: pass any verb but `query` to
//! the tool. Format and sources: `docs/reference/firmware-config.md`.

mod gather;
mod query;
mod tool;

pub use gather::{gather_fw, gather_fw_devices, FwDevice, FwFacts, MAX_PARALLEL_QUERIES};
pub use query::{parse_fw_query, parse_value, FwColumn, FwParam, FwQuery, FwQueryError, FwValue};
pub use tool::{
    query_args, run_with_deadline, FwTool, FwToolRunner, SystemFwTool, ToolOutput, QUERY_TIMEOUT,
    TOOL_NAMES,
};
