//! Every SNAP JSON key the reference (storage.md §2, §6) marks as not confirmed from source
//! code, isolated here so a check on real hardware (BlueField-3 + DOCA SNAP: read
//! `/var/log/snap-log/rpc-log`, run `rpc_get_methods`) changes one file.
//!
//! **UNVERIFIED** applies to every item in this module: the keys come from CLI flags, lab
//! scripts or third-party clients, not from SNAP's own source.

use serde::{Deserialize, Serialize};

/// **UNVERIFIED**: the key naming a SNAP 4 controller in `nvme_controller_attach_ns`,
/// `nvme_controller_detach_ns`, `nvme_controller_resume` and `nvme_controller_suspend`. DPF
/// sends `ctrl_id`; the CLI flag is `-c/--ctrl` (storage.md §6 question 1).
pub const CTRL_KEY: &str = "ctrl_id";

/// **UNVERIFIED**: the SNAP 3 emulation manager (RDMA device) used when none is configured;
/// opi-nvidia-bridge hard-codes `mlx5_0`, real boards may differ.
pub const DEFAULT_EMULATION_MANAGER: &str = "mlx5_0";

/// **UNVERIFIED** (keys of the optional fields): params of SNAP 4 `nvme_subsystem_create`.
/// `nqn` is confirmed (DPF); `serial_number`/`model_number` are guessed from the CLI flags
/// `-sn`/`-mn` and the SNAP 3 method's keys.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SubsystemCreate {
    /// Subsystem NQN.
    pub nqn: String,
    /// Serial number the host sees.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub serial_number: Option<String>,
    /// Model number the host sees.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model_number: Option<String>,
}

/// **UNVERIFIED** (key name, see [`CTRL_KEY`]): `{ctrl_id, nsid}` for
/// `nvme_controller_attach_ns` / `nvme_controller_detach_ns`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(super) struct CtrlNs<'a> {
    pub(super) ctrl_id: &'a str,
    pub(super) nsid: u32,
}

/// **UNVERIFIED** (key name, see [`CTRL_KEY`]): `{ctrl_id}` for `nvme_controller_resume` and
/// `nvme_controller_suspend`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(super) struct Ctrl<'a> {
    pub(super) ctrl_id: &'a str,
}

/// **UNVERIFIED** (shape not captured, storage.md §6 question 2): one entry of SNAP 4
/// `nvme_controller_list`; only the fields also seen in `nvme_subsystem_list` are read.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct ControllerInfo {
    /// Controller id, e.g. `NVMeCtrl1`.
    pub ctrl_id: String,
    /// The subsystem it belongs to.
    #[serde(default)]
    pub nqn: Option<String>,
    /// Whether it is suspended (absent in some versions).
    #[serde(default)]
    pub suspended: Option<bool>,
}
