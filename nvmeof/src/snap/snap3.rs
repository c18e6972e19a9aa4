//! mlnx_snap (SNAP 3, BlueField-2) NVMe emulation methods. Keys as mlnx_snap's own client
//! `snap_rpc.py` sends them (snap-rdma `rpc/snap_rpc.py`, the primary source for this
//! dialect; storage.md §1.5/§2.4). Mutating methods answer `true` or, per the method pages,
//! the string `"true"`, so their results are not decoded.

use serde::{Deserialize, Serialize};

use super::snap4::Ignored;
use super::{SnapCall, SnapClient};

/// Params of `subsystem_nvme_create`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Snap3Subsystem {
    /// Subsystem NQN.
    pub nqn: String,
    /// Serial number (required by SNAP 3).
    pub serial_number: String,
    /// Model number (required by SNAP 3).
    pub model_number: String,
    /// Maximum valid NSID (`-nn/--max_nsid` in snap_rpc.py).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub number_namespaces: Option<u32>,
}

/// Params of `controller_nvme_create`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Snap3ControllerCreate {
    /// Subsystem NQN.
    pub nqn: String,
    /// RDMA device managing the emulation, e.g. `mlx5_0` (SNAP 3 has no default; list the
    /// candidates with `emulation_managers_list`).
    pub emulation_manager: String,
    /// PF index.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pf_id: Option<u32>,
    /// VF index (with `pf_id`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub vf_id: Option<u32>,
    /// PCI BDF instead of indexes, `bb:dd.f`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pci_bdf: Option<String>,
    /// The function's VUID instead of indexes or BDF.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub vuid: Option<String>,
    /// I/O queues offered to the host.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub nr_io_queues: Option<u32>,
    /// Maximum data transfer size.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mdts: Option<u32>,
}

/// `controller_nvme_create`'s answer.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct Snap3ControllerCreated {
    /// Controller name, e.g. `NvmeEmu0pf0`.
    pub name: String,
    /// Controller id within the subsystem.
    pub cntlid: u16,
}

/// Params of `controller_nvme_namespace_attach`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Snap3NamespaceAttach {
    /// Always `spdk` for SPDK bdevs.
    pub bdev_type: &'static str,
    /// Backing bdev.
    pub bdev: String,
    /// Namespace id.
    pub nsid: u32,
    /// Subsystem NQN.
    pub subnqn: String,
    /// Controller id.
    pub cntlid: u16,
    /// Namespace UUID.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub uuid: Option<String>,
    /// Namespace NGUID (32 hex digits).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub nguid: Option<String>,
    /// Namespace EUI-64 (16 hex digits).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub eui64: Option<String>,
}

/// One entry of `emulation_managers_list`: an RDMA device that can emulate PCI functions.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct Snap3EmulationManager {
    /// The RDMA device, e.g. `mlx5_0`.
    pub emulation_manager: String,
    /// What it can emulate, e.g. `["nvme", "virtio_blk"]`.
    #[serde(default)]
    pub supported_types: Vec<String>,
}

/// One entry of `subsystem_nvme_list`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct Snap3SubsystemInfo {
    /// Subsystem NQN.
    pub nqn: String,
    /// Serial number.
    #[serde(default)]
    pub serial_number: String,
}

/// One entry of SNAP 3 `controller_list` (storage.md §2 table: `{subnqn, cntlid, name,
/// emulation_manager, type, pci_index, pci_bdf}`; the agent reads the first three).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct Snap3ControllerInfo {
    /// Controller name, e.g. `NvmeEmu0pf0`.
    pub name: String,
    /// Its subsystem.
    #[serde(default)]
    pub subnqn: Option<String>,
    /// Controller id within the subsystem.
    #[serde(default)]
    pub cntlid: Option<u16>,
    /// `nvme`, `virtio_blk`, ... (absent in older answers: NVMe then).
    #[serde(default, rename = "type")]
    pub kind: Option<String>,
}

impl Snap3ControllerInfo {
    /// Whether it is an NVMe controller (virtio-blk ones share `controller_list`).
    pub fn is_nvme(&self) -> bool {
        self.kind.as_deref().is_none_or(|k| k == "nvme")
    }
}

#[derive(Serialize)]
struct Nqn<'a> {
    nqn: &'a str,
}

#[derive(Serialize)]
struct Cntl<'a> {
    subnqn: &'a str,
    cntlid: u16,
}

#[derive(Serialize)]
struct CntlNs<'a> {
    nsid: u32,
    subnqn: &'a str,
    cntlid: u16,
}

impl SnapClient {
    /// `subsystem_nvme_create` (SNAP 3).
    pub fn subsystem_nvme_create(&self, params: &Snap3Subsystem) -> SnapCall<Ignored> {
        self.call("subsystem_nvme_create", params)
    }

    /// `subsystem_nvme_delete {nqn}` (SNAP 3).
    pub fn subsystem_nvme_delete(&self, nqn: &str) -> SnapCall<Ignored> {
        self.call("subsystem_nvme_delete", Nqn { nqn })
    }

    /// `subsystem_nvme_list` (SNAP 3).
    pub fn subsystem_nvme_list(&self) -> SnapCall<Vec<Snap3SubsystemInfo>> {
        self.call_bare("subsystem_nvme_list")
    }

    /// `emulation_managers_list` (SNAP 3): the RDMA devices that can emulate functions.
    pub fn emulation_managers_list(&self) -> SnapCall<Vec<Snap3EmulationManager>> {
        self.call_bare("emulation_managers_list")
    }

    /// `controller_list` (SNAP 3): every emulated controller.
    pub fn controller_list(&self) -> SnapCall<Vec<Snap3ControllerInfo>> {
        self.call_bare("controller_list")
    }

    /// `controller_nvme_create` (SNAP 3); controllers start live, there is no suspend.
    pub fn controller_nvme_create(
        &self,
        params: &Snap3ControllerCreate,
    ) -> SnapCall<Snap3ControllerCreated> {
        self.call("controller_nvme_create", params)
    }

    /// `controller_nvme_delete {subnqn, cntlid}` (SNAP 3).
    pub fn controller_nvme_delete(&self, subnqn: &str, cntlid: u16) -> SnapCall<Ignored> {
        self.call("controller_nvme_delete", Cntl { subnqn, cntlid })
    }

    /// `controller_nvme_namespace_attach` (SNAP 3).
    pub fn controller_nvme_namespace_attach(
        &self,
        params: &Snap3NamespaceAttach,
    ) -> SnapCall<Ignored> {
        self.call("controller_nvme_namespace_attach", params)
    }

    /// `controller_nvme_namespace_detach {nsid, subnqn, cntlid}` (SNAP 3).
    pub fn controller_nvme_namespace_detach(
        &self,
        subnqn: &str,
        cntlid: u16,
        nsid: u32,
    ) -> SnapCall<Ignored> {
        self.call(
            "controller_nvme_namespace_detach",
            CntlNs {
                nsid,
                subnqn,
                cntlid,
            },
        )
    }
}
