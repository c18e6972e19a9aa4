//! [`NvmeEmulation`]: one interface over the SNAP 4 and SNAP 3 method sets, so callers expose
//! a bdev to the host without caring which dialect the DPU runs. Whatever a dialect has no
//! key for is refused ([`SnapError::Unsupported`]) before anything is sent, never dropped.

use super::snap3::{Snap3ControllerCreate, Snap3NamespaceAttach, Snap3Subsystem};
use super::snap4::{ControllerCreate, NamespaceCreate};
use super::unverified::SubsystemCreate;
use super::{SnapClient, SnapDialect, SnapError};

/// Model number SNAP 3 is given when the operator sets none (SNAP 3 requires one).
pub const DEFAULT_MODEL_NUMBER: &str = "dpu-agent NVMe";

/// The emulated PCI function a controller is created on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EmulatedFunction {
    /// A physical function by index.
    Pf {
        /// PF index.
        pf_id: u32,
    },
    /// A virtual function of a PF.
    Vf {
        /// PF index.
        pf_id: u32,
        /// VF index.
        vf_id: u32,
    },
    /// A function by the PCI BDF the host sees, `bb:dd.f` as SNAP writes it (no domain).
    PciBdf(String),
    /// A function by its VUID (NVIDIA's recommended addressing: it never changes).
    Vuid(String),
}

impl EmulatedFunction {
    /// `(pf_id, vf_id, pci_bdf, vuid)`, each set only for the addressing used.
    pub(super) fn parts(&self) -> (Option<u32>, Option<u32>, Option<String>, Option<String>) {
        match self {
            Self::Pf { pf_id } => (Some(*pf_id), None, None, None),
            Self::Vf { pf_id, vf_id } => (Some(*pf_id), Some(*vf_id), None, None),
            Self::PciBdf(bdf) => (None, None, Some(bdf.clone()), None),
            Self::Vuid(vuid) => (None, None, None, Some(vuid.clone())),
        }
    }
}

impl std::fmt::Display for EmulatedFunction {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Pf { pf_id } => write!(f, "PF {pf_id}"),
            Self::Vf { pf_id, vf_id } => write!(f, "PF {pf_id} VF {vf_id}"),
            Self::PciBdf(bdf) => write!(f, "PCI function {bdf}"),
            Self::Vuid(vuid) => write!(f, "VUID {vuid}"),
        }
    }
}

/// A created emulated controller: SNAP 4 names it by `ctrl_id`, SNAP 3 by subsystem + `cntlid`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ControllerRef {
    /// `ctrl_id` (SNAP 4) or controller name (SNAP 3).
    pub name: String,
    /// SNAP 3's controller id; `None` on SNAP 4.
    pub cntlid: Option<u16>,
}

/// What a subsystem is created with; `None` leaves the value to SNAP.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SubsystemParams<'a> {
    /// Serial number (SNAP 3 requires one: derived from the NQN when absent).
    pub serial_number: Option<&'a str>,
    /// Model number (SNAP 3 requires one: [`DEFAULT_MODEL_NUMBER`] when absent).
    pub model_number: Option<&'a str>,
    /// Maximum valid NSID.
    pub max_namespaces: Option<u32>,
}

/// What a controller is created with; `None` leaves the value to SNAP.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ControllerParams {
    /// SNAP 4: the name (`ctrl`) the controller gets, so it can be found again after a
    /// crash; SNAP 3 names controllers itself.
    pub name: Option<String>,
    /// The host-visible function.
    pub function: EmulatedFunction,
    /// I/O queues offered to the host.
    pub num_queues: Option<u32>,
    /// Maximum data transfer size.
    pub mdts: Option<u32>,
    /// SNAP 3: the RDMA device that emulates; discovered with `emulation_managers_list`
    /// (the first that supports NVMe) when absent.
    pub emulation_manager: Option<String>,
}

/// The identifiers a namespace reports to the host; `None` leaves them to SNAP.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct NamespaceIds<'a> {
    /// UUID.
    pub uuid: Option<&'a str>,
    /// NGUID, 32 hex digits (SNAP 3 only).
    pub nguid: Option<&'a str>,
    /// EUI-64, 16 hex digits (SNAP 3 only).
    pub eui64: Option<&'a str>,
}

/// A serial number derived from the NQN (FNV-1a, 16 hex digits), so a SNAP 3 subsystem keeps
/// the same serial across re-creation and the host does not see a new disk.
pub fn default_serial(nqn: &str) -> String {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in nqn.bytes() {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
    }
    format!("{hash:016X}")
}

/// SNAP NVMe emulation in whichever dialect the peer speaks.
#[derive(Debug, Clone)]
pub enum NvmeEmulation {
    /// DOCA SNAP (`nvme_*` methods).
    Snap4(SnapClient),
    /// mlnx_snap (`subsystem_nvme_*`, `controller_nvme_*` methods).
    Snap3(SnapClient),
}

impl NvmeEmulation {
    /// Uses `dialect` (from config); `None` for plain SPDK, which cannot emulate NVMe.
    pub fn new(client: SnapClient, dialect: SnapDialect) -> Option<Self> {
        match dialect {
            SnapDialect::Snap4 => Some(Self::Snap4(client)),
            SnapDialect::Snap3 => Some(Self::Snap3(client)),
            SnapDialect::PlainSpdk => None,
        }
    }

    /// Asks the peer (`rpc_get_methods`) which dialect it speaks.
    pub async fn detect(client: SnapClient) -> Result<Option<Self>, SnapError> {
        let dialect = client.dialect().await?;
        Ok(Self::new(client, dialect))
    }

    /// The dialect in use.
    pub fn dialect(&self) -> SnapDialect {
        match self {
            Self::Snap4(_) => SnapDialect::Snap4,
            Self::Snap3(_) => SnapDialect::Snap3,
        }
    }

    /// The dialect's name for messages.
    pub fn dialect_name(&self) -> &'static str {
        match self {
            Self::Snap4(_) => "DOCA SNAP 4",
            Self::Snap3(_) => "mlnx_snap 3",
        }
    }

    /// The underlying client, for the dialect-independent SPDK methods.
    pub fn client(&self) -> &SnapClient {
        match self {
            Self::Snap4(c) | Self::Snap3(c) => c,
        }
    }

    fn unsupported(&self, what: impl Into<String>) -> SnapError {
        SnapError::Unsupported {
            dialect: self.dialect_name(),
            what: what.into(),
        }
    }

    /// Refuses namespace identifiers the dialect has no key for (SNAP 4's
    /// `nvme_namespace_create` takes only a UUID), so a caller can check before changing
    /// anything.
    pub fn check_namespace_ids(&self, ids: &NamespaceIds<'_>) -> Result<(), SnapError> {
        if matches!(self, Self::Snap4(_)) {
            if ids.nguid.is_some() {
                return Err(self.unsupported(
                    "set a namespace NGUID (nvme_namespace_create takes only a UUID)",
                ));
            }
            if ids.eui64.is_some() {
                return Err(self.unsupported(
                    "set a namespace EUI-64 (nvme_namespace_create takes only a UUID)",
                ));
            }
        }
        Ok(())
    }

    /// Creates subsystem `nqn`.
    pub async fn create_subsystem(
        &self,
        nqn: &str,
        params: &SubsystemParams<'_>,
    ) -> Result<(), SnapError> {
        match self {
            Self::Snap4(c) => {
                let params = SubsystemCreate {
                    nqn: nqn.to_owned(),
                    serial_number: params.serial_number.map(str::to_owned),
                    model_number: params.model_number.map(str::to_owned),
                    nn: params.max_namespaces,
                };
                c.nvme_subsystem_create(&params).execute().await.map(drop)
            }
            Self::Snap3(c) => {
                let params = Snap3Subsystem {
                    nqn: nqn.to_owned(),
                    serial_number: params
                        .serial_number
                        .map_or_else(|| default_serial(nqn), str::to_owned),
                    model_number: params
                        .model_number
                        .unwrap_or(DEFAULT_MODEL_NUMBER)
                        .to_owned(),
                    number_namespaces: params.max_namespaces,
                };
                c.subsystem_nvme_create(&params).execute().await.map(drop)
            }
        }
    }

    /// Destroys subsystem `nqn`.
    pub async fn destroy_subsystem(&self, nqn: &str) -> Result<(), SnapError> {
        match self {
            Self::Snap4(c) => c.nvme_subsystem_destroy(nqn).execute().await.map(drop),
            Self::Snap3(c) => c.subsystem_nvme_delete(nqn).execute().await.map(drop),
        }
    }

    /// The SNAP 3 emulation manager: the first of `emulation_managers_list` that emulates
    /// NVMe.
    pub async fn discover_emulation_manager(&self) -> Result<String, SnapError> {
        let managers = self.client().emulation_managers_list().execute().await?;
        managers
            .into_iter()
            .find(|m| m.supported_types.iter().any(|t| t == "nvme"))
            .map(|m| m.emulation_manager)
            .ok_or_else(|| {
                self.unsupported(
                    "emulate NVMe: emulation_managers_list names no manager supporting nvme",
                )
            })
    }

    /// Creates a controller of `nqn` on `params.function`; on SNAP 4 it starts suspended
    /// until [`start_controller`](Self::start_controller).
    pub async fn create_controller(
        &self,
        nqn: &str,
        params: &ControllerParams,
    ) -> Result<ControllerRef, SnapError> {
        let (pf_id, vf_id, pci_bdf, vuid) = params.function.parts();
        match self {
            Self::Snap4(c) => {
                let create = ControllerCreate {
                    nqn: nqn.to_owned(),
                    ctrl: params.name.clone(),
                    pf_id,
                    vf_id,
                    pci_bdf,
                    vuid,
                    num_queues: params.num_queues,
                    mdts: params.mdts,
                    suspended: true,
                };
                let created = c.nvme_controller_create(&create).execute().await?;
                Ok(ControllerRef {
                    name: created.ctrl_id,
                    cntlid: None,
                })
            }
            Self::Snap3(c) => {
                let emulation_manager = match &params.emulation_manager {
                    Some(manager) => manager.clone(),
                    None => self.discover_emulation_manager().await?,
                };
                let create = Snap3ControllerCreate {
                    nqn: nqn.to_owned(),
                    emulation_manager,
                    pf_id,
                    vf_id,
                    pci_bdf,
                    vuid,
                    nr_io_queues: params.num_queues,
                    mdts: params.mdts,
                };
                let created = c.controller_nvme_create(&create).execute().await?;
                Ok(ControllerRef {
                    name: created.name,
                    cntlid: Some(created.cntlid),
                })
            }
        }
    }

    /// Exposes `bdev` as namespace `nsid` through `ctrl` (SNAP 4: namespace create + attach).
    pub async fn add_namespace(
        &self,
        nqn: &str,
        ctrl: &ControllerRef,
        nsid: u32,
        bdev: &str,
        ids: &NamespaceIds<'_>,
    ) -> Result<(), SnapError> {
        self.check_namespace_ids(ids)?;
        match self {
            Self::Snap4(c) => {
                let ns = NamespaceCreate::new(nqn, nsid, bdev, ids.uuid);
                c.nvme_namespace_create(&ns).execute().await?;
                c.nvme_controller_attach_ns(&ctrl.name, nsid)
                    .execute()
                    .await
                    .map(drop)
            }
            Self::Snap3(c) => {
                let params = Snap3NamespaceAttach {
                    bdev_type: "spdk",
                    bdev: bdev.to_owned(),
                    nsid,
                    subnqn: nqn.to_owned(),
                    cntlid: ctrl.cntlid.unwrap_or(0),
                    uuid: ids.uuid.map(str::to_owned),
                    nguid: ids.nguid.map(str::to_owned),
                    eui64: ids.eui64.map(str::to_owned),
                };
                c.controller_nvme_namespace_attach(&params)
                    .execute()
                    .await
                    .map(drop)
            }
        }
    }

    /// Undoes [`add_namespace`](Self::add_namespace).
    pub async fn remove_namespace(
        &self,
        nqn: &str,
        ctrl: &ControllerRef,
        nsid: u32,
    ) -> Result<(), SnapError> {
        match self {
            Self::Snap4(c) => {
                c.nvme_controller_detach_ns(&ctrl.name, nsid)
                    .execute()
                    .await?;
                c.nvme_namespace_destroy(nqn, nsid)
                    .execute()
                    .await
                    .map(drop)
            }
            Self::Snap3(c) => c
                .controller_nvme_namespace_detach(nqn, ctrl.cntlid.unwrap_or(0), nsid)
                .execute()
                .await
                .map(drop),
        }
    }

    /// Lets the host see the controller (SNAP 4 resume; SNAP 3 controllers are already live).
    pub async fn start_controller(&self, ctrl: &ControllerRef) -> Result<(), SnapError> {
        match self {
            Self::Snap4(c) => c
                .nvme_controller_resume(&ctrl.name)
                .execute()
                .await
                .map(drop),
            Self::Snap3(_) => Ok(()),
        }
    }

    /// Destroys the controller (SNAP 4 with `force`).
    pub async fn destroy_controller(
        &self,
        nqn: &str,
        ctrl: &ControllerRef,
    ) -> Result<(), SnapError> {
        match self {
            Self::Snap4(c) => c
                .nvme_controller_destroy(&ctrl.name, true)
                .execute()
                .await
                .map(drop),
            Self::Snap3(c) => c
                .controller_nvme_delete(nqn, ctrl.cntlid.unwrap_or(0))
                .execute()
                .await
                .map(drop),
        }
    }
}
