//! The contract of a storage backend: the one error type backends report and the types
//! their operations take and return. The enum that picks the configured backend is in
//! [`super::dispatch`], so the backends import this file and this file imports none of them.
//!
//! Operations are small and idempotent in the backend's own terms: "ensure" calls succeed
//! when the object already exists, "remove" calls succeed when it is already gone. The
//! reconciler ([`mod@super::converge`]) composes them; it never needs to know which backend
//! it drives.

use crate::errors::error_chain;

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
    /// The namespace identity of `device` as this machine's kernel reports it, when there
    /// is a device and it reports one: how a host that sees the same disk recognises it.
    pub(crate) identity: Option<dpu_probe::disk_identity::NamespaceIdentity>,
    /// The QoS limits the backend reports in force, when it reports them (SPDK's
    /// `assigned_rate_limits`).
    pub(crate) qos: Option<super::desired::QosDoc>,
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
