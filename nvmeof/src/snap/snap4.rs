//! DOCA SNAP (SNAP 4, BlueField-3) NVMe emulation methods, keys per storage.md §2.3.

use serde::de::IgnoredAny;
use serde::{Deserialize, Serialize};

use super::unverified::{ControllerInfo, Ctrl, CtrlNs, SubsystemCreate};
use super::{SnapCall, SnapClient};

/// Params of `nvme_namespace_create` (DPF's keys).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct NamespaceCreate {
    /// Subsystem NQN.
    pub nqn: String,
    /// Namespace id, unique per subsystem.
    pub nsid: u32,
    /// The backing bdev (e.g. `RemoteNvme0n1`).
    pub bdev_name: String,
    /// Namespace UUID.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub uuid: Option<String>,
    /// Always `spdk` for SPDK bdevs.
    pub bdev_type: &'static str,
}

impl NamespaceCreate {
    /// A namespace `nsid` of `nqn` backed by the SPDK bdev `bdev_name`.
    pub fn new(nqn: &str, nsid: u32, bdev_name: &str, uuid: Option<&str>) -> Self {
        Self {
            nqn: nqn.to_owned(),
            nsid,
            bdev_name: bdev_name.to_owned(),
            uuid: uuid.map(str::to_owned),
            bdev_type: "spdk",
        }
    }
}

/// Params of `nvme_controller_create`: the function is addressed by PF/VF index, PCI BDF
/// (`bb:dd.f`, no domain) or VUID. `nqn`, `pf_id`/`vf_id`, `pci_bdf`, `vuid` and `suspended`
/// match DPF and NVIDIA's docs; `ctrl`, `num_queues` and `mdts` are **UNVERIFIED** (the CLI
/// flags `--ctrl`, `--num_queues`, `--mdts` of public lab scripts) and sent only when set.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ControllerCreate {
    /// Subsystem NQN.
    pub nqn: String,
    /// The controller's name (its `ctrl_id` from then on), so a create the agent could not
    /// record is found again by name instead of guessed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ctrl: Option<String>,
    /// PF index.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pf_id: Option<u32>,
    /// VF index (with `pf_id`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub vf_id: Option<u32>,
    /// PCI BDF of the emulated function, `bb:dd.f` as `emulation_function_list` shows it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pci_bdf: Option<String>,
    /// The function's VUID (NVIDIA's recommended addressing: it never changes).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub vuid: Option<String>,
    /// I/O queues offered to the host.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub num_queues: Option<u32>,
    /// Maximum data transfer size (power of two of the page size).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mdts: Option<u32>,
    /// Create suspended so the host sees it only after namespaces are attached and
    /// `nvme_controller_resume` runs (the reference flow); [`SnapClient`] always sets it.
    pub suspended: bool,
}

/// `nvme_controller_create`'s answer.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct ControllerCreated {
    /// E.g. `NVMeCtrl1`.
    pub ctrl_id: String,
}

/// One entry of `nvme_subsystem_list` (fields the agent uses).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct SubsystemInfo {
    /// Subsystem NQN.
    pub nqn: String,
    /// Its namespaces.
    #[serde(default)]
    pub namespaces: Vec<NamespaceInfo>,
    /// Its controllers.
    #[serde(default)]
    pub controllers: Vec<SubsystemController>,
}

/// A namespace in `nvme_subsystem_list`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct NamespaceInfo {
    /// Namespace id.
    pub nsid: u32,
    /// Backing bdev.
    pub bdev: String,
}

/// A controller in `nvme_subsystem_list` (DPF's capture: `ctrl_id, mdts, vhca_id, nqn,
/// plugged, state, num_queues, max_queues, namespaces`).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct SubsystemController {
    /// Controller id.
    pub ctrl_id: String,
    /// Run state, `"STARTED"` when the host can use it
    /// ([`STATE_STARTED`](super::unverified::STATE_STARTED)); absent in some releases.
    #[serde(default)]
    pub state: Option<String>,
}

impl SubsystemController {
    /// Whether it is suspended: `None` when SNAP does not say.
    pub fn suspended(&self) -> Option<bool> {
        self.state
            .as_deref()
            .filter(|s| !s.is_empty())
            .map(|s| !s.eq_ignore_ascii_case(super::unverified::STATE_STARTED))
    }
}

/// One PF of `emulation_function_list` (DPF's shape: `hotplugged, emulation_type, pf_index,
/// pci_bdf, vhca_id, vuid, ctrl_id, vfs`); every member is optional so a release that adds
/// or drops one still decodes.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct EmulationFunctionInfo {
    /// `nvme`, `virtio_blk`, ...
    #[serde(default)]
    pub emulation_type: String,
    /// PF index.
    #[serde(default)]
    pub pf_index: Option<u32>,
    /// The BDF the host sees, `bb:dd.f` (DPF's "not enumerated" sentinel is `00:00.0`).
    #[serde(default)]
    pub pci_bdf: String,
    /// The stable virtual unit id.
    #[serde(default)]
    pub vuid: String,
    /// The controller on it; empty when free.
    #[serde(default)]
    pub ctrl_id: String,
    /// Its VFs.
    #[serde(default)]
    pub vfs: Vec<EmulationVfInfo>,
}

/// One VF of an [`EmulationFunctionInfo`].
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct EmulationVfInfo {
    /// VF index, 0-based.
    #[serde(default)]
    pub vf_index: Option<u32>,
    /// The BDF the host sees.
    #[serde(default)]
    pub pci_bdf: String,
    /// The stable virtual unit id.
    #[serde(default)]
    pub vuid: String,
    /// The controller on it; empty when free.
    #[serde(default)]
    pub ctrl_id: String,
}

#[derive(Serialize)]
struct All {
    all: bool,
}

#[derive(Serialize)]
struct Nqn<'a> {
    nqn: &'a str,
}

#[derive(Serialize)]
struct NqnNsid<'a> {
    nqn: &'a str,
    nsid: u32,
}

#[derive(Serialize)]
struct Destroy<'a> {
    ctrl_id: &'a str,
    force: bool,
}

/// SNAP 4 answers object results whose shape varies by release; they are not relied on.
pub type Ignored = IgnoredAny;

impl SnapClient {
    /// `nvme_subsystem_create`.
    pub fn nvme_subsystem_create(&self, params: &SubsystemCreate) -> SnapCall<Ignored> {
        self.call("nvme_subsystem_create", params)
    }

    /// `nvme_subsystem_destroy {nqn}`.
    pub fn nvme_subsystem_destroy(&self, nqn: &str) -> SnapCall<Ignored> {
        self.call("nvme_subsystem_destroy", Nqn { nqn })
    }

    /// `nvme_subsystem_list`.
    pub fn nvme_subsystem_list(&self) -> SnapCall<Vec<SubsystemInfo>> {
        self.call_bare("nvme_subsystem_list")
    }

    /// `emulation_function_list {all: true}`: every emulated PCI function, with the
    /// controller using it.
    pub fn emulation_function_list(&self) -> SnapCall<Vec<EmulationFunctionInfo>> {
        self.call("emulation_function_list", All { all: true })
    }

    /// `nvme_namespace_create`.
    pub fn nvme_namespace_create(&self, params: &NamespaceCreate) -> SnapCall<Ignored> {
        self.call("nvme_namespace_create", params)
    }

    /// `nvme_namespace_destroy {nqn, nsid}`.
    pub fn nvme_namespace_destroy(&self, nqn: &str, nsid: u32) -> SnapCall<Ignored> {
        self.call("nvme_namespace_destroy", NqnNsid { nqn, nsid })
    }

    /// `nvme_controller_create`, always suspended (`suspended` is forced to true).
    pub fn nvme_controller_create(&self, params: &ControllerCreate) -> SnapCall<ControllerCreated> {
        let params = ControllerCreate {
            suspended: true,
            ..params.clone()
        };
        self.call("nvme_controller_create", params)
    }

    /// `nvme_controller_destroy {ctrl_id, force}`.
    pub fn nvme_controller_destroy(&self, ctrl_id: &str, force: bool) -> SnapCall<Ignored> {
        self.call("nvme_controller_destroy", Destroy { ctrl_id, force })
    }

    /// `nvme_controller_list` (entry shape UNVERIFIED, see [`ControllerInfo`]).
    pub fn nvme_controller_list(&self) -> SnapCall<Vec<ControllerInfo>> {
        self.call_bare("nvme_controller_list")
    }

    /// `nvme_controller_attach_ns {ctrl_id, nsid}`.
    pub fn nvme_controller_attach_ns(&self, ctrl_id: &str, nsid: u32) -> SnapCall<Ignored> {
        self.call("nvme_controller_attach_ns", CtrlNs { ctrl_id, nsid })
    }

    /// `nvme_controller_detach_ns {ctrl_id, nsid}`.
    pub fn nvme_controller_detach_ns(&self, ctrl_id: &str, nsid: u32) -> SnapCall<Ignored> {
        self.call("nvme_controller_detach_ns", CtrlNs { ctrl_id, nsid })
    }

    /// `nvme_controller_suspend {ctrl_id}`.
    pub fn nvme_controller_suspend(&self, ctrl_id: &str) -> SnapCall<Ignored> {
        self.call("nvme_controller_suspend", Ctrl { ctrl_id })
    }

    /// `nvme_controller_resume {ctrl_id}`: the host sees the controller from now on.
    pub fn nvme_controller_resume(&self, ctrl_id: &str) -> SnapCall<Ignored> {
        self.call("nvme_controller_resume", Ctrl { ctrl_id })
    }
}
