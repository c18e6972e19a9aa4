//! The operations every storage backend offers, and the one error type they report.
//!
//! Operations are small and idempotent in the backend's own terms: "ensure" calls succeed
//! when the object already exists, "remove" calls succeed when it is already gone. The
//! reconciler ([`super::converge`]) composes them; it never needs to know which backend
//! it drives.

use super::desired::{BackendController, ControllerDoc, NamespaceDoc, Remotes, SubsystemDoc};
use super::kernel::KernelBackend;
use super::snap::SnapBackend;
use crate::services::status::error_chain;
use dpu_proto::v1;

/// What kind of failure, so the API can answer with the right code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum FailureKind {
    AlreadyExists,
    /// An object of that name exists with other settings: not the one asked for, so never
    /// taken as done.
    Conflict,
    NotFound,
    /// In use, or in the wrong state for the operation.
    Busy,
    /// The backend is not reachable (yet), or ran past its deadline.
    Unavailable,
    /// This backend cannot do what was asked (e.g. PCI emulation in the kernel backend).
    Unsupported,
    /// The backend refused a value.
    Invalid,
    Other,
}

/// A failed backend operation: which operation on which object, and why.
#[derive(Debug, thiserror::Error)]
#[error("{operation}")]
pub(crate) struct BackendError {
    pub(crate) kind: FailureKind,
    /// E.g. "nvme_subsystem_create nqn.2026-01.io.example:a".
    pub(crate) operation: String,
    #[source]
    pub(crate) source: Option<Box<dyn std::error::Error + Send + Sync + 'static>>,
}

impl BackendError {
    pub(crate) fn new(
        kind: FailureKind,
        operation: impl Into<String>,
        source: impl std::error::Error + Send + Sync + 'static,
    ) -> Self {
        Self {
            kind,
            operation: operation.into(),
            source: Some(Box::new(source)),
        }
    }

    /// A failure the agent decided itself, with no underlying error.
    pub(crate) fn plain(kind: FailureKind, what: impl Into<String>) -> Self {
        Self {
            kind,
            operation: what.into(),
            source: None,
        }
    }

    /// The whole chain, e.g. "nvme_controller_attach_ns NVMeCtrl1 nsid 1: SNAP/SPDK
    /// JSON-RPC on /var/tmp/spdk.sock failed: server error -17: Namespace 1 already attached".
    pub(crate) fn describe(&self) -> String {
        error_chain(self)
    }
}

/// A block volume the backend can put behind a namespace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct VolumeInfo {
    /// Volume id (bdev name), without `volumes/`.
    pub(crate) id: String,
    pub(crate) block_size: u64,
    pub(crate) num_blocks: u64,
    pub(crate) uuid: String,
    /// Where the host can read it without emulation, when the backend knows (kernel:
    /// `/dev/nvme1n1`).
    pub(crate) device: Option<String>,
}

/// An emulated controller as the backend reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ObservedController {
    pub(crate) id: String,
    pub(crate) nqn: Option<String>,
    /// SNAP 3's controller id within the subsystem.
    pub(crate) cntlid: Option<u16>,
    /// `None` when the backend does not say.
    pub(crate) suspended: Option<bool>,
}

/// A host-visible function the backend can emulate a controller on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct EmulationFunction {
    pub(crate) pf_index: u32,
    pub(crate) vf_index: Option<u32>,
    /// `bb:dd.f`.
    pub(crate) pci_bdf: String,
    pub(crate) vuid: String,
    pub(crate) emulation_type: String,
    /// The backend controller on it; empty when free.
    pub(crate) controller: String,
}

/// Cumulative I/O counters of one volume.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct VolumeIo {
    pub(crate) bytes_read: u64,
    pub(crate) read_ops: u64,
    pub(crate) bytes_written: u64,
    pub(crate) write_ops: u64,
    pub(crate) bytes_unmapped: u64,
    pub(crate) unmap_ops: u64,
    pub(crate) read_latency_ticks: u64,
    pub(crate) write_latency_ticks: u64,
    pub(crate) unmap_latency_ticks: u64,
    pub(crate) tick_rate_hz: u64,
    pub(crate) source: String,
}

/// The configured backend.
#[derive(Debug)]
pub(crate) enum Backend {
    Snap(SnapBackend),
    Kernel(KernelBackend),
}

/// Forwards one call to whichever backend is configured.
macro_rules! dispatch {
    ($self:ident, $b:ident => $call:expr) => {
        match $self {
            Backend::Snap($b) => $call,
            Backend::Kernel($b) => $call,
        }
    };
}

impl Backend {
    /// Short name for logs and `IoStats.source`.
    pub(crate) fn name(&self) -> &'static str {
        match self {
            Self::Snap(_) => "snap",
            Self::Kernel(_) => "kernel",
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
        dispatch!(self, b => b.ensure_remote(id, spec).await)
    }

    pub(crate) async fn remove_remote(
        &self,
        id: &str,
        remotes: &Remotes,
    ) -> Result<(), BackendError> {
        dispatch!(self, b => b.remove_remote(id, remotes).await)
    }

    /// Every volume the backend has (attached remote namespaces and any others).
    pub(crate) async fn volumes(&self, remotes: &Remotes) -> Result<Vec<VolumeInfo>, BackendError> {
        dispatch!(self, b => b.volumes(remotes).await)
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
        dispatch!(self, b => b.controllers().await)
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

    pub(crate) async fn volume_io(
        &self,
        volume: &str,
        remotes: &Remotes,
    ) -> Result<VolumeIo, BackendError> {
        dispatch!(self, b => b.volume_io(volume, remotes).await)
    }
}
