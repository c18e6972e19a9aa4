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

/// Params of `nvme_controller_create`: the function is addressed by PF/VF index or PCI BDF.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ControllerCreate {
    /// Subsystem NQN.
    pub nqn: String,
    /// PF index.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pf_id: Option<u32>,
    /// VF index (with `pf_id`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub vf_id: Option<u32>,
    /// PCI BDF of the emulated function.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pci_bdf: Option<String>,
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

/// A controller in `nvme_subsystem_list`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct SubsystemController {
    /// Controller id.
    pub ctrl_id: String,
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
