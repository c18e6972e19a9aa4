//! The parsed `mlxconfig`/`mstconfig -e -d BDF query` table. The parser lives in
//! [`dpu_probe::fw_config`] because the agent reads the same table on the BlueField's Arm;
//! this module keeps the host's `check::fw_query` paths.

pub use dpu_probe::fw_config::{
    parse_fw_query, parse_value, FwColumn, FwParam, FwQuery, FwQueryError, FwValue,
};
