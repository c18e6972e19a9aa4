//! [`NvmeEmulation`]: one interface over the SNAP 4 and SNAP 3 method sets, so callers expose
//! a bdev to the host without caring which dialect the DPU runs.

use super::snap3::{Snap3ControllerCreate, Snap3NamespaceAttach, Snap3Subsystem};
use super::snap4::{ControllerCreate, NamespaceCreate};
use super::unverified::{SubsystemCreate, DEFAULT_EMULATION_MANAGER};
use super::{SnapClient, SnapDialect, SnapError};

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
    /// A function by PCI BDF.
    PciBdf(String),
}

impl EmulatedFunction {
    fn parts(&self) -> (Option<u32>, Option<u32>, Option<String>) {
        match self {
            Self::Pf { pf_id } => (Some(*pf_id), None, None),
            Self::Vf { pf_id, vf_id } => (Some(*pf_id), Some(*vf_id), None),
            Self::PciBdf(bdf) => (None, None, Some(bdf.clone())),
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

    /// The underlying client, for the dialect-independent SPDK methods.
    pub fn client(&self) -> &SnapClient {
        match self {
            Self::Snap4(c) | Self::Snap3(c) => c,
        }
    }

    /// Creates subsystem `nqn`.
    pub async fn create_subsystem(
        &self,
        nqn: &str,
        serial_number: &str,
        model_number: &str,
    ) -> Result<(), SnapError> {
        match self {
            Self::Snap4(c) => {
                let params = SubsystemCreate {
                    nqn: nqn.to_owned(),
                    serial_number: Some(serial_number.to_owned()),
                    model_number: Some(model_number.to_owned()),
                };
                c.nvme_subsystem_create(&params).execute().await.map(drop)
            }
            Self::Snap3(c) => {
                let params = Snap3Subsystem {
                    nqn: nqn.to_owned(),
                    serial_number: serial_number.to_owned(),
                    model_number: model_number.to_owned(),
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

    /// Creates a controller of `nqn` on `function`; on SNAP 4 it starts suspended until
    /// [`start_controller`](Self::start_controller).
    pub async fn create_controller(
        &self,
        nqn: &str,
        function: &EmulatedFunction,
    ) -> Result<ControllerRef, SnapError> {
        let (pf_id, vf_id, pci_bdf) = function.parts();
        match self {
            Self::Snap4(c) => {
                let params = ControllerCreate {
                    nqn: nqn.to_owned(),
                    pf_id,
                    vf_id,
                    pci_bdf,
                    suspended: true,
                };
                let created = c.nvme_controller_create(&params).execute().await?;
                Ok(ControllerRef {
                    name: created.ctrl_id,
                    cntlid: None,
                })
            }
            Self::Snap3(c) => {
                let params = Snap3ControllerCreate {
                    nqn: nqn.to_owned(),
                    emulation_manager: DEFAULT_EMULATION_MANAGER.to_owned(),
                    pf_id,
                    vf_id,
                    pci_bdf,
                };
                let created = c.controller_nvme_create(&params).execute().await?;
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
        uuid: Option<&str>,
    ) -> Result<(), SnapError> {
        match self {
            Self::Snap4(c) => {
                let ns = NamespaceCreate::new(nqn, nsid, bdev, uuid);
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
                    uuid: uuid.map(str::to_owned),
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
