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

/// **UNVERIFIED** (keys of the optional fields): params of SNAP 4 `nvme_subsystem_create`.
/// `nqn` is confirmed (DPF, which sends nothing else); `serial_number`/`model_number` are
/// guessed from the CLI flags `-sn`/`--model_number` and the SNAP 3 method's keys, `nn` from
/// the CLI flag `-nn`. The optional keys are sent only when the operator set the value, so a
/// wrong guess can break only the requests that use it.
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
    /// Maximum number of namespaces (Identify Controller NN).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub nn: Option<u32>,
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

/// **UNVERIFIED** (shape from NVIDIA's live-upgrade script, not SNAP's source): one entry of
/// SNAP 4 `nvme_controller_list`: `ctrl_id, vhca_id, nqn, mdts, num_queues, namespaces`. No
/// public shape carries a run state; that comes from `nvme_subsystem_list` (see
/// [`SubsystemController::state`](super::SubsystemController::state)).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct ControllerInfo {
    /// Controller id, e.g. `NVMeCtrl1` or the `ctrl` name given at create.
    pub ctrl_id: String,
    /// The subsystem it belongs to.
    #[serde(default)]
    pub nqn: Option<String>,
}

/// **UNVERIFIED** (the value for a suspended controller): the run state SNAP 4 reports for
/// a controller in `nvme_subsystem_list`. DPF's capture shows `"STARTED"`; what a suspended
/// one shows is not published, so anything else reads as "not running" and an absent state
/// as unknown.
pub const STATE_STARTED: &str = "STARTED";
