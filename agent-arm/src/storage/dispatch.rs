//! The configured storage backend and the forwarding of each operation to it, so the
//! reconciler ([`mod@super::converge`]) never needs to know which backend it drives. Kept apart
//! from the contract types ([`super::backend`]) that the backends themselves use, so that
//! no backend imports the file that names it.

use dpu_proto::v1;

use super::backend::{
    BackendError, EmulationFunction, FailureKind, ObservedController, VolumeInfo, VolumeIo,
};
use super::desired::{
    BackendController, ControllerDoc, NamespaceDoc, QosDoc, Remotes, SubsystemDoc,
};
use super::kernel::KernelBackend;
use super::snap::SnapBackend;
use super::virtio_blk_doc::{VirtioBlkBackend, VirtioBlkDoc};
use dpu_nvmeof::snap::VirtioBlkSeen;
/// The configured backend.
#[derive(Debug)]
pub(crate) enum Backend {
    Snap(SnapBackend),
    Kernel(KernelBackend),
    /// No storage: `[storage] backend = "snap"` with `[snap] enabled = false` (an agent
    /// for counters and OVS only). Reads find nothing; every change is refused with
    /// [`DISABLED`], so nothing is half-applied and the reason names the keys to change.
    Disabled,
}

/// Why a storage change is refused when the agent runs without a storage backend.
pub(crate) const DISABLED: &str = "storage is disabled by configuration ([snap] enabled = \
     false): set [snap] enabled = true where SNAP runs, or [storage] backend = \"kernel\"";

/// Why the kernel backend refuses `extra_paths`: the agent drives nvme-fabrics one path
/// per controller; native NVMe multipath there is not built.
pub(crate) const KERNEL_NO_MULTIPATH: &str = "extra_paths: the kernel backend (Linux \
    nvme-fabrics) attaches one path per remote controller; multipath needs the snap backend";

/// Why QoS limits are refused on the kernel backend.
pub(crate) const KERNEL_NO_QOS: &str = "the kernel backend (Linux nvmet / nvme-fabrics) has no \
     per-volume QoS limits; they need the snap backend (SPDK's bdev_set_qos_limit)";

/// Why virtio-blk controllers are refused on the kernel backend.
pub(crate) const KERNEL_NO_VIRTIO_BLK: &str = "the kernel backend (Linux nvmet / nvme-fabrics) \
     emulates no PCI functions: virtio-blk controllers need the snap backend (SNAP)";

/// Forwards one call to whichever backend is configured; the disabled backend refuses it.
macro_rules! dispatch {
    ($self:ident, $b:ident => $call:expr) => {
        match $self {
            Backend::Snap($b) => $call,
            Backend::Kernel($b) => $call,
            Backend::Disabled => Err(disabled()),
        }
    };
}

/// The refusal of every operation of the disabled backend.
fn disabled() -> BackendError {
    BackendError::plain(FailureKind::Unsupported, DISABLED)
}

impl Backend {
    /// Short name for logs and `IoStats.source`.
    pub(crate) fn name(&self) -> &'static str {
        match self {
            Self::Snap(_) => "snap",
            Self::Kernel(_) => "kernel",
            Self::Disabled => "disabled",
        }
    }

    /// Whether controllers can be suspended: SNAP 3 controllers are live from creation.
    pub(crate) async fn can_suspend(&self) -> Result<bool, BackendError> {
        dispatch!(self, b => b.can_suspend().await)
    }

    pub(crate) async fn ensure_remote(
        &self,
        id: &str,
        spec: &v1::RemoteControllerSpec,
    ) -> Result<(), BackendError> {
        if matches!(self, Backend::Kernel(_)) && !spec.extra_paths.is_empty() {
            return Err(BackendError::plain(
                FailureKind::Unsupported,
                KERNEL_NO_MULTIPATH,
            ));
        }
        dispatch!(self, b => b.ensure_remote(id, spec).await)
    }

    /// Each path of remote `id` with its state; none where the backend does not report
    /// paths (kernel).
    pub(crate) async fn remote_paths(
        &self,
        id: &str,
        spec: &v1::RemoteControllerSpec,
    ) -> Result<Vec<v1::NvmePath>, BackendError> {
        match self {
            Backend::Snap(b) => b.remote_paths(id, spec).await,
            Backend::Kernel(_) | Backend::Disabled => Ok(Vec::new()),
        }
    }

    pub(crate) async fn remove_remote(
        &self,
        id: &str,
        remotes: &Remotes,
    ) -> Result<(), BackendError> {
        dispatch!(self, b => b.remove_remote(id, remotes).await)
    }

    /// Refuses, before the document changes, QoS limits on a backend that has none.
    pub(crate) fn check_qos(&self) -> Result<(), BackendError> {
        match self {
            Backend::Snap(_) => Ok(()),
            Backend::Kernel(_) => Err(BackendError::plain(FailureKind::Unsupported, KERNEL_NO_QOS)),
            Backend::Disabled => Err(disabled()),
        }
    }

    /// Gives volume `volume` exactly `limits` (idempotent: nothing is sent when the backend
    /// already reports them).
    pub(crate) async fn ensure_qos(
        &self,
        volume: &str,
        limits: &QosDoc,
    ) -> Result<(), BackendError> {
        match self {
            Backend::Snap(b) => b.ensure_qos(volume, limits).await,
            Backend::Kernel(_) => Err(BackendError::plain(FailureKind::Unsupported, KERNEL_NO_QOS)),
            Backend::Disabled => Err(disabled()),
        }
    }

    /// Lifts every limit of volume `volume`; a volume that is gone has none.
    pub(crate) async fn remove_qos(&self, volume: &str) -> Result<(), BackendError> {
        match self {
            Backend::Snap(b) => b.remove_qos(volume).await,
            // Never set there (refused by `check_qos`): nothing to lift.
            Backend::Kernel(_) => Ok(()),
            Backend::Disabled => Err(disabled()),
        }
    }

    /// Every volume the backend has (attached remote namespaces and any others).
    pub(crate) async fn volumes(&self, remotes: &Remotes) -> Result<Vec<VolumeInfo>, BackendError> {
        match self {
            // No backend, no volumes: an answer, not an error (counters and /metrics list
            // none).
            Backend::Disabled => Ok(Vec::new()),
            _ => dispatch!(self, b => b.volumes(remotes).await),
        }
    }

    /// Fills in the identity of each volume's disk on this machine, where it has one.
    pub(crate) async fn read_disk_identities(&self, volumes: &mut [VolumeInfo]) {
        match self {
            Backend::Snap(b) => b.read_disk_identities(volumes).await,
            Backend::Kernel(b) => b.read_disk_identities(volumes).await,
            Backend::Disabled => {}
        }
    }

    pub(crate) async fn ensure_subsystem(
        &self,
        nqn: &str,
        doc: &SubsystemDoc,
    ) -> Result<(), BackendError> {
        dispatch!(self, b => b.ensure_subsystem(nqn, doc).await)
    }

    pub(crate) async fn remove_subsystem(&self, nqn: &str) -> Result<(), BackendError> {
        dispatch!(self, b => b.remove_subsystem(nqn).await)
    }

    pub(crate) async fn ensure_namespace(
        &self,
        nqn: &str,
        nsid: u32,
        doc: &NamespaceDoc,
        remotes: &Remotes,
    ) -> Result<(), BackendError> {
        dispatch!(self, b => b.ensure_namespace(nqn, nsid, doc, remotes).await)
    }

    pub(crate) async fn remove_namespace(&self, nqn: &str, nsid: u32) -> Result<(), BackendError> {
        dispatch!(self, b => b.remove_namespace(nqn, nsid).await)
    }

    pub(crate) async fn controllers(&self) -> Result<Vec<ObservedController>, BackendError> {
        match self {
            Backend::Disabled => Ok(Vec::new()),
            _ => dispatch!(self, b => b.controllers().await),
        }
    }

    /// Creates controller `id` of `nqn`, suspended where the backend can.
    pub(crate) async fn create_controller(
        &self,
        nqn: &str,
        id: &str,
        doc: &ControllerDoc,
    ) -> Result<BackendController, BackendError> {
        dispatch!(self, b => b.create_controller(nqn, id, doc).await)
    }

    /// The backend id controller `id` of `nqn` is created with, where the agent chooses it
    /// (SNAP 4's `ctrl`): a controller made just before a crash is found by it.
    pub(crate) async fn controller_name(
        &self,
        nqn: &str,
        id: &str,
    ) -> Result<Option<String>, BackendError> {
        match self {
            Backend::Snap(b) => b.controller_name(nqn, id).await,
            Backend::Kernel(_) => Ok(None),
            Backend::Disabled => Err(disabled()),
        }
    }

    /// The functions controllers can be created on, where the backend can list them.
    pub(crate) async fn emulation_functions(&self) -> Result<Vec<EmulationFunction>, BackendError> {
        match self {
            Backend::Snap(b) => b.emulation_functions().await,
            Backend::Kernel(_) => Err(BackendError::plain(
                FailureKind::Unsupported,
                "the kernel backend emulates no PCI functions",
            )),
            Backend::Disabled => Err(disabled()),
        }
    }

    /// Refuses, before the document changes, namespace identifiers the backend cannot set.
    pub(crate) async fn check_namespace(&self, doc: &NamespaceDoc) -> Result<(), BackendError> {
        dispatch!(self, b => b.check_namespace(doc).await)
    }

    pub(crate) async fn remove_controller(
        &self,
        nqn: &str,
        ctrl: &BackendController,
    ) -> Result<(), BackendError> {
        dispatch!(self, b => b.remove_controller(nqn, ctrl).await)
    }

    pub(crate) async fn attach(
        &self,
        nqn: &str,
        ctrl: &BackendController,
        nsid: u32,
        ns: &NamespaceDoc,
    ) -> Result<(), BackendError> {
        dispatch!(self, b => b.attach(nqn, ctrl, nsid, ns).await)
    }

    pub(crate) async fn detach(
        &self,
        nqn: &str,
        ctrl: &BackendController,
        nsid: u32,
    ) -> Result<(), BackendError> {
        dispatch!(self, b => b.detach(nqn, ctrl, nsid).await)
    }

    pub(crate) async fn set_running(
        &self,
        ctrl: &BackendController,
        running: bool,
    ) -> Result<(), BackendError> {
        dispatch!(self, b => b.set_running(ctrl, running).await)
    }

    /// Refuses, before the document changes, virtio-blk on a backend without emulation.
    pub(crate) fn check_virtio_blk(&self) -> Result<(), BackendError> {
        match self {
            Backend::Snap(_) => Ok(()),
            Backend::Kernel(_) => Err(BackendError::plain(
                FailureKind::Unsupported,
                KERNEL_NO_VIRTIO_BLK,
            )),
            Backend::Disabled => Err(disabled()),
        }
    }

    /// The virtio-blk controllers the backend has; none where it cannot have any.
    pub(crate) async fn virtio_blk_list(&self) -> Result<Vec<VirtioBlkSeen>, BackendError> {
        match self {
            Backend::Snap(b) => b.list_virtio_blk().await,
            Backend::Kernel(_) | Backend::Disabled => Ok(Vec::new()),
        }
    }

    /// The name virtio-blk controller `id` is created with, where the agent chooses it
    /// (SNAP 4's `ctrl`).
    pub(crate) async fn virtio_blk_name(&self, id: &str) -> Result<Option<String>, BackendError> {
        match self {
            Backend::Snap(b) => b.virtio_blk_name(id).await,
            Backend::Kernel(_) => Ok(None),
            Backend::Disabled => Err(disabled()),
        }
    }

    /// Creates virtio-blk controller `id`.
    pub(crate) async fn create_virtio_blk(
        &self,
        id: &str,
        doc: &VirtioBlkDoc,
    ) -> Result<VirtioBlkBackend, BackendError> {
        match self {
            Backend::Snap(b) => b.create_virtio_blk(id, doc).await,
            Backend::Kernel(_) => Err(BackendError::plain(
                FailureKind::Unsupported,
                KERNEL_NO_VIRTIO_BLK,
            )),
            Backend::Disabled => Err(disabled()),
        }
    }

    /// Removes the virtio-blk controller SNAP names `name`; gone counts as done.
    pub(crate) async fn remove_virtio_blk(&self, name: &str) -> Result<(), BackendError> {
        match self {
            Backend::Snap(b) => b.remove_virtio_blk(name).await,
            // Never created there (refused by `check_virtio_blk`): nothing to remove.
            Backend::Kernel(_) => Ok(()),
            Backend::Disabled => Err(disabled()),
        }
    }

    pub(crate) async fn volume_io(
        &self,
        volume: &str,
        remotes: &Remotes,
    ) -> Result<VolumeIo, BackendError> {
        dispatch!(self, b => b.volume_io(volume, remotes).await)
    }
}
