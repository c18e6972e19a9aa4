//! virtio-blk emulation, next to NVMe: SNAP emulates a PCI virtio block device backed by one
//! bdev, which is what hosts running VMs ask for. Both dialects, typed as the NVMe calls are
//! (a handle method builds a [`SnapCall`], `execute` sends it), and dispatched by
//! [`NvmeEmulation`] so callers need not know the dialect.
//!
//! Sources (docs/reference/storage.md §2.6): mlnx_snap 3 keys are snap-rdma's own client
//! (`rpc/snap_rpc.py`, `rpc/md/controller_virtio_blk_*.md`), the primary source for that
//! dialect. DOCA SNAP 4 keys are **UNVERIFIED**: its source is not public and no public JSON
//! capture exists; the names are the CLI flags of NVIDIA's live-upgrade script and public
//! lab scripts (`--ctrl`, `--pf_id`, `--vf_id`, `--vuid`, `--bdev`, `--num_queues`,
//! `--queue_size`) taken as JSON keys the way `snap_rpc.py` maps its flags, plus `pci_bdf`
//! and `serial` from the SNAP 3 method; the list shape is the live-upgrade script's reads.

use serde::{Deserialize, Serialize};

use super::emulation::EmulatedFunction;
use super::snap4::Ignored;
use super::{NvmeEmulation, SnapCall, SnapClient, SnapError};

/// **UNVERIFIED** (keys, see the module doc): params of SNAP 4 `virtio_blk_controller_create`.
/// Optional values are sent only when set, so a wrong guess breaks only the requests that use
/// it. No `suspended`: the controller is created running, as NVIDIA's examples create it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct VirtioBlkCreate {
    /// The controller's name (its `ctrl_id` from then on), chosen by the agent so a create
    /// whose reply was lost is found again by name.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ctrl: Option<String>,
    /// PF index (of SNAP's virtio-blk functions).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pf_id: Option<u32>,
    /// VF index (with `pf_id`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub vf_id: Option<u32>,
    /// PCI BDF of the function, `bb:dd.f`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pci_bdf: Option<String>,
    /// The function's VUID.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub vuid: Option<String>,
    /// The backing bdev.
    pub bdev: String,
    /// Virtqueues offered to the host.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub num_queues: Option<u32>,
    /// Entries per virtqueue.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub queue_size: Option<u32>,
    /// Serial number the host reads.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub serial: Option<String>,
}

/// SNAP 4 `virtio_blk_controller_create`'s answer: not captured publicly (UNVERIFIED), so
/// both shapes SNAP's methods use are taken: the bare name, or an object with `ctrl_id`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(untagged)]
pub enum VirtioBlkCreated {
    /// `"VblkCtrl1"`.
    Name(String),
    /// `{"ctrl_id": "VblkCtrl1"}`.
    Object {
        /// The controller's name.
        ctrl_id: String,
    },
    /// Anything else (`true`): the name asked for with `ctrl` is the name.
    Other(Ignored),
}

/// **UNVERIFIED** (shape from NVIDIA's live-upgrade script, which reads `ctrl_id`, `bdev`,
/// `vhca_id`, `num_queues`, `queue_size`, ...): one entry of SNAP 4
/// `virtio_blk_controller_list`. No public shape carries a run state; `state` is read when a
/// release gives one.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct VirtioBlkControllerInfo {
    /// Controller name.
    pub ctrl_id: String,
    /// Backing bdev (`"none"` for a controller without one).
    #[serde(default)]
    pub bdev: Option<String>,
    /// Virtqueues.
    #[serde(default)]
    pub num_queues: Option<u32>,
    /// Entries per virtqueue.
    #[serde(default)]
    pub queue_size: Option<u32>,
    /// Run state, when reported.
    #[serde(default)]
    pub state: Option<String>,
}

/// Params of mlnx_snap 3 `controller_virtio_blk_create` (snap_rpc.py: the emulation manager
/// positional, `--bdev_type` required, one of `pci_bdf`/`pf_id`/`vuid`). snap_rpc.py also
/// sends `recover` (true unless `--new`); its method page and OPI's client do not, and a
/// mlnx_snap older than that flag would refuse the unknown key, so it is left out.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Snap3VirtioBlkCreate {
    /// RDMA device managing the emulation, e.g. `mlx5_0`.
    pub emulation_manager: String,
    /// Always `spdk` for SPDK bdevs.
    pub bdev_type: &'static str,
    /// The backing bdev.
    pub bdev: String,
    /// PF index.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pf_id: Option<u32>,
    /// VF index (with `pf_id`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub vf_id: Option<u32>,
    /// PCI BDF, `bb:dd.f`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pci_bdf: Option<String>,
    /// The function's VUID.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub vuid: Option<String>,
    /// Virtqueues.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub num_queues: Option<u32>,
    /// Entries per virtqueue.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub queue_depth: Option<u32>,
    /// Serial number.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub serial: Option<String>,
}

/// One `controller_list` entry of any type (SNAP 3); virtio-blk ones have `type`
/// `"virtio_blk"` and no `subnqn` (its method page's example).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct Snap3ListedController {
    /// Controller name, e.g. `VblkEmu0pf0`.
    pub name: String,
    /// `nvme`, `virtio_blk`, ...
    #[serde(default, rename = "type")]
    pub kind: String,
    /// The host-visible BDF.
    #[serde(default)]
    pub pci_bdf: Option<String>,
}

#[derive(Serialize)]
struct Ctrl<'a> {
    ctrl: &'a str,
    force: bool,
}

#[derive(Serialize)]
struct Name<'a> {
    name: &'a str,
    force: bool,
}

impl SnapClient {
    /// `virtio_blk_controller_create` (SNAP 4; keys UNVERIFIED).
    pub fn virtio_blk_controller_create(
        &self,
        params: &VirtioBlkCreate,
    ) -> SnapCall<VirtioBlkCreated> {
        self.call("virtio_blk_controller_create", params)
    }

    /// `virtio_blk_controller_destroy {ctrl, force}` (SNAP 4; the key `ctrl` is the CLI
    /// flag `--ctrl`, UNVERIFIED).
    pub fn virtio_blk_controller_destroy(&self, ctrl: &str, force: bool) -> SnapCall<Ignored> {
        self.call("virtio_blk_controller_destroy", Ctrl { ctrl, force })
    }

    /// `virtio_blk_controller_list` (SNAP 4; entry shape UNVERIFIED).
    pub fn virtio_blk_controller_list(&self) -> SnapCall<Vec<VirtioBlkControllerInfo>> {
        self.call_bare("virtio_blk_controller_list")
    }

    /// `controller_virtio_blk_create` (SNAP 3): answers the controller's name.
    pub fn controller_virtio_blk_create(&self, params: &Snap3VirtioBlkCreate) -> SnapCall<String> {
        self.call("controller_virtio_blk_create", params)
    }

    /// `controller_virtio_blk_delete {name, force}` (SNAP 3).
    pub fn controller_virtio_blk_delete(&self, name: &str, force: bool) -> SnapCall<Ignored> {
        self.call("controller_virtio_blk_delete", Name { name, force })
    }

    /// `controller_list` (SNAP 3) with every entry's type; snap_rpc.py sends it without
    /// params (its `--type` filter is built and never passed), so the filter is ours.
    pub fn controller_list_typed(&self) -> SnapCall<Vec<Snap3ListedController>> {
        self.call_bare("controller_list")
    }
}

/// What a virtio-blk controller is created with; `None` leaves the value to SNAP.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VirtioBlkParams {
    /// SNAP 4: the name (`ctrl`) it gets; SNAP 3 names controllers itself.
    pub name: Option<String>,
    /// The host-visible function.
    pub function: EmulatedFunction,
    /// The backing bdev.
    pub bdev: String,
    /// Virtqueues.
    pub num_queues: Option<u32>,
    /// Entries per virtqueue.
    pub queue_size: Option<u32>,
    /// Serial number.
    pub serial: Option<String>,
    /// SNAP 3: the emulation manager; the first of `emulation_managers_list` that supports
    /// `virtio_blk` when absent.
    pub emulation_manager: Option<String>,
}

/// A virtio-blk controller as SNAP lists it, in either dialect.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VirtioBlkSeen {
    /// Its name.
    pub name: String,
    /// Its bdev, when listed.
    pub bdev: Option<String>,
    /// `None` when SNAP does not say.
    pub suspended: Option<bool>,
}

impl NvmeEmulation {
    /// The SNAP 3 emulation manager for virtio-blk: the first of `emulation_managers_list`
    /// that supports `virtio_blk`.
    async fn virtio_blk_manager(&self) -> Result<String, SnapError> {
        let managers = self.client().emulation_managers_list().execute().await?;
        managers
            .into_iter()
            .find(|m| m.supported_types.iter().any(|t| t == "virtio_blk"))
            .map(|m| m.emulation_manager)
            .ok_or_else(|| SnapError::Unsupported {
                dialect: self.dialect_name(),
                what: "emulate virtio-blk: emulation_managers_list names no manager supporting \
                       virtio_blk"
                    .to_owned(),
            })
    }

    /// Creates a virtio-blk controller; gives its name.
    pub async fn create_virtio_blk(&self, params: &VirtioBlkParams) -> Result<String, SnapError> {
        let (pf_id, vf_id, pci_bdf, vuid) = params.function.parts();
        match self {
            Self::Snap4(c) => {
                let create = VirtioBlkCreate {
                    ctrl: params.name.clone(),
                    pf_id,
                    vf_id,
                    pci_bdf,
                    vuid,
                    bdev: params.bdev.clone(),
                    num_queues: params.num_queues,
                    queue_size: params.queue_size,
                    serial: params.serial.clone(),
                };
                let created = c.virtio_blk_controller_create(&create).execute().await?;
                Ok(match (created, &params.name) {
                    (VirtioBlkCreated::Name(name), _)
                    | (VirtioBlkCreated::Object { ctrl_id: name }, _) => name,
                    (VirtioBlkCreated::Other(_), Some(name)) => name.clone(),
                    (VirtioBlkCreated::Other(_), None) => String::new(),
                })
            }
            Self::Snap3(c) => {
                let emulation_manager = match &params.emulation_manager {
                    Some(manager) => manager.clone(),
                    None => self.virtio_blk_manager().await?,
                };
                let create = Snap3VirtioBlkCreate {
                    emulation_manager,
                    bdev_type: "spdk",
                    bdev: params.bdev.clone(),
                    pf_id,
                    vf_id,
                    pci_bdf,
                    vuid,
                    num_queues: params.num_queues,
                    queue_depth: params.queue_size,
                    serial: params.serial.clone(),
                };
                c.controller_virtio_blk_create(&create).execute().await
            }
        }
    }

    /// Destroys virtio-blk controller `name` (with `force`: the agent removes only what it
    /// created, and the host's I/O is the caller's decision, made before asking).
    pub async fn destroy_virtio_blk(&self, name: &str) -> Result<(), SnapError> {
        match self {
            Self::Snap4(c) => c
                .virtio_blk_controller_destroy(name, true)
                .execute()
                .await
                .map(drop),
            Self::Snap3(c) => c
                .controller_virtio_blk_delete(name, true)
                .execute()
                .await
                .map(drop),
        }
    }

    /// The virtio-blk controllers SNAP has.
    pub async fn list_virtio_blk(&self) -> Result<Vec<VirtioBlkSeen>, SnapError> {
        Ok(match self {
            Self::Snap4(c) => c
                .virtio_blk_controller_list()
                .execute()
                .await?
                .into_iter()
                .map(|v| VirtioBlkSeen {
                    suspended: v
                        .state
                        .as_deref()
                        .filter(|s| !s.is_empty())
                        .map(|s| !s.eq_ignore_ascii_case(super::unverified::STATE_STARTED)),
                    name: v.ctrl_id,
                    bdev: v.bdev.filter(|b| b != "none"),
                })
                .collect(),
            Self::Snap3(c) => c
                .controller_list_typed()
                .execute()
                .await?
                .into_iter()
                .filter(|e| e.kind == "virtio_blk")
                .map(|e| VirtioBlkSeen {
                    name: e.name,
                    bdev: None,
                    // mlnx_snap 3 controllers run from creation (no `suspend` asked).
                    suspended: Some(false),
                })
                .collect(),
        })
    }
}

#[cfg(test)]
mod tests;
