//! Running the firmware configuration tool read-only for every NVIDIA/Mellanox NIC
//! function 0 (`TOOL -e -d BDF query`, an argument vector, a deadline, the cards at once).
//! It lives in [`dpu_probe::fw_config`] because the agent queries the BlueField's own
//! functions the same way; this module keeps the host's `check::fw_tool` paths.

pub use dpu_probe::fw_config::{
    gather_fw, gather_fw_devices, query_args, FwDevice, FwFacts, FwTool, FwToolRunner,
    SystemFwTool, ToolOutput, MAX_PARALLEL_QUERIES, QUERY_TIMEOUT, TOOL_NAMES,
};
