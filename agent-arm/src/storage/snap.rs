//! The SNAP backend: NVIDIA SNAP (DOCA SNAP 4 on BlueField-3, mlnx_snap 3 on BlueField-2)
//! through its SPDK JSON-RPC socket.
//!
//! The dialect is taken from the configuration or, with `auto`, asked once from the peer
//! (`rpc_get_methods`) on first use and kept; a peer that turns out to be plain SPDK can
//! attach remote controllers but not emulate NVMe, and says so.

use std::path::Path;
use std::time::Duration;

use dpu_nvmeof::snap::{
    AddressFamilyParam, AttachController, ControllerRef, EmulatedFunction, NamespaceCreate,
    NvmeEmulation, Snap3NamespaceAttach, SnapClient, SnapDialect, SnapError, SnapErrorKind,
    TransportType,
};
use dpu_proto::v1;
use tokio::sync::OnceCell;

use super::backend::{BackendError, FailureKind, ObservedController, VolumeInfo, VolumeIo};
use super::desired::{BackendController, ControllerDoc, NamespaceDoc, Remotes, SubsystemDoc};

/// Model number reported to the host when the operator gives none.
const DEFAULT_MODEL: &str = "dpu-agent NVMe";

/// The SNAP JSON-RPC backend.
#[derive(Debug)]
pub(crate) struct SnapBackend {
    client: SnapClient,
    configured: Option<SnapDialect>,
    detected: OnceCell<SnapDialect>,
}

fn kind_of(err: &SnapError) -> FailureKind {
    match err.kind() {
        SnapErrorKind::AlreadyExists => FailureKind::AlreadyExists,
        SnapErrorKind::NotFound => FailureKind::NotFound,
        SnapErrorKind::Busy => FailureKind::Busy,
        SnapErrorKind::Transient => FailureKind::Unavailable,
        SnapErrorKind::MethodNotFound => FailureKind::Unsupported,
        SnapErrorKind::InvalidParams => FailureKind::Invalid,
        _ => FailureKind::Other,
    }
}

fn failed(operation: impl Into<String>) -> impl FnOnce(SnapError) -> BackendError {
    let operation = operation.into();
    move |err| BackendError::new(kind_of(&err), operation, err)
}

/// Treats "already exists" as done.
fn existing_ok(result: Result<(), BackendError>) -> Result<(), BackendError> {
    match result {
        Err(e) if e.kind == FailureKind::AlreadyExists => Ok(()),
        other => other,
    }
}

/// Treats "not found" as done.
fn missing_ok(result: Result<(), BackendError>) -> Result<(), BackendError> {
    match result {
        Err(e) if e.kind == FailureKind::NotFound => Ok(()),
        other => other,
    }
}

/// A serial number derived from the NQN (FNV-1a, 16 hex digits), so a subsystem keeps the
/// same serial across re-creation and the host does not see a new disk.
fn default_serial(nqn: &str) -> String {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in nqn.bytes() {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
    }
    format!("{hash:016X}")
}

/// The SNAP function a controller is created on.
fn emulated_function(function: &v1::EmulationFunction) -> Result<EmulatedFunction, BackendError> {
    use v1::emulation_function::Function;
    match &function.function {
        Some(Function::PfVf(pf)) => Ok(match pf.vf_index {
            Some(vf_id) => EmulatedFunction::Vf {
                pf_id: pf.pf_index,
                vf_id,
            },
            None => EmulatedFunction::Pf { pf_id: pf.pf_index },
        }),
        Some(Function::PciAddress(pci)) => Ok(EmulatedFunction::PciBdf(pci.bdf.clone())),
        Some(Function::Vuid(_)) => Err(BackendError::plain(
            FailureKind::Unsupported,
            "function.vuid: this agent addresses SNAP functions by PF/VF index or PCI address; \
             VUID addressing is not implemented",
        )),
        None => Err(BackendError::plain(
            FailureKind::Invalid,
            "function: one of pf_vf, pci_address or vuid is required",
        )),
    }
}

impl SnapBackend {
    /// A client of `socket` whose every call is bounded by `call_timeout`.
    pub(crate) fn new(
        socket: &Path,
        configured: Option<SnapDialect>,
        call_timeout: Duration,
    ) -> Self {
        let rpc = dpu_jsonrpc::Client::new(
            socket,
            dpu_jsonrpc::ClientOptions {
                call_timeout,
                ..dpu_jsonrpc::ClientOptions::v2()
            },
        );
        Self {
            client: SnapClient::with_client(rpc),
            configured,
            detected: OnceCell::new(),
        }
    }

    async fn dialect(&self) -> Result<SnapDialect, BackendError> {
        if let Some(dialect) = self.configured {
            return Ok(dialect);
        }
        self.detected
            .get_or_try_init(|| async {
                self.client
                    .dialect()
                    .await
                    .map_err(failed("rpc_get_methods (detecting the SNAP dialect)"))
            })
            .await
            .copied()
    }

    /// The dialect, when it can emulate NVMe at all.
    async fn emulating(&self) -> Result<SnapDialect, BackendError> {
        match self.dialect().await? {
            SnapDialect::PlainSpdk => Err(BackendError::plain(
                FailureKind::Unsupported,
                format!(
                    "the SPDK server on {} has no NVMe emulation methods (neither \
                     nvme_subsystem_create nor subsystem_nvme_create): it is plain SPDK, not SNAP",
                    self.client.socket().display()
                ),
            )),
            dialect => Ok(dialect),
        }
    }

    /// The dialect-independent emulation calls.
    async fn emulation(&self) -> Result<NvmeEmulation, BackendError> {
        let dialect = self.emulating().await?;
        NvmeEmulation::new(self.client.clone(), dialect).ok_or_else(|| {
            BackendError::plain(FailureKind::Unsupported, "plain SPDK cannot emulate NVMe")
        })
    }

    pub(crate) async fn can_suspend(&self) -> Result<bool, BackendError> {
        Ok(self.emulating().await? == SnapDialect::Snap4)
    }

    pub(crate) async fn ensure_remote(
        &self,
        id: &str,
        spec: &v1::RemoteControllerSpec,
    ) -> Result<(), BackendError> {
        let trtype = match v1::NvmeTransport::try_from(spec.transport) {
            Ok(v1::NvmeTransport::Tcp) => TransportType::Tcp,
            _ => TransportType::Rdma,
        };
        let adrfam = match v1::AddressFamily::try_from(spec.address_family) {
            Ok(v1::AddressFamily::Ipv6) => AddressFamilyParam::Ipv6,
            _ => AddressFamilyParam::Ipv4,
        };
        let nonzero = |v: u32| (v != 0).then_some(v);
        let params = AttachController {
            name: id.to_owned(),
            trtype,
            adrfam,
            traddr: spec.traddr.clone(),
            trsvcid: (if spec.trsvcid == 0 {
                4420
            } else {
                spec.trsvcid
            })
            .to_string(),
            subnqn: spec.subnqn.clone(),
            hostnqn: (!spec.hostnqn.is_empty()).then(|| spec.hostnqn.clone()),
            hdgst: spec.header_digest,
            ddgst: spec.data_digest,
            num_io_queues: nonzero(spec.num_io_queues),
            ctrlr_loss_timeout_sec: nonzero(spec.ctrl_loss_timeout_sec),
            reconnect_delay_sec: nonzero(spec.reconnect_delay_sec),
        };
        existing_ok(
            self.client
                .bdev_nvme_attach_controller(&params)
                .execute()
                .await
                .map(drop)
                .map_err(failed(format!("bdev_nvme_attach_controller {id}"))),
        )
    }

    pub(crate) async fn remove_remote(
        &self,
        id: &str,
        _remotes: &Remotes,
    ) -> Result<(), BackendError> {
        missing_ok(
            self.client
                .bdev_nvme_detach_controller(id)
                .execute()
                .await
                .map(drop)
                .map_err(failed(format!("bdev_nvme_detach_controller {id}"))),
        )
    }

    pub(crate) async fn volumes(
        &self,
        _remotes: &Remotes,
    ) -> Result<Vec<VolumeInfo>, BackendError> {
        let bdevs = self
            .client
            .bdev_get_bdevs(None)
            .execute()
            .await
            .map_err(failed("bdev_get_bdevs"))?;
        Ok(bdevs
            .into_iter()
            .map(|b| VolumeInfo {
                id: b.name,
                block_size: b.block_size,
                num_blocks: b.num_blocks,
                uuid: b.uuid.unwrap_or_default(),
                device: None,
            })
            .collect())
    }

    pub(crate) async fn ensure_subsystem(
        &self,
        nqn: &str,
        doc: &SubsystemDoc,
    ) -> Result<(), BackendError> {
        let serial = if doc.serial_number.is_empty() {
            default_serial(nqn)
        } else {
            doc.serial_number.clone()
        };
        let model = if doc.model_number.is_empty() {
            DEFAULT_MODEL
        } else {
            &doc.model_number
        };
        existing_ok(
            self.emulation()
                .await?
                .create_subsystem(nqn, &serial, model)
                .await
                .map_err(failed(format!("create subsystem {nqn}"))),
        )
    }

    pub(crate) async fn remove_subsystem(&self, nqn: &str) -> Result<(), BackendError> {
        missing_ok(
            self.emulation()
                .await?
                .destroy_subsystem(nqn)
                .await
                .map_err(failed(format!("delete subsystem {nqn}"))),
        )
    }

    /// SNAP 4 namespaces are objects of their own; SNAP 3 creates them when attaching to a
    /// controller, so there is nothing to do here for SNAP 3.
    pub(crate) async fn ensure_namespace(
        &self,
        nqn: &str,
        nsid: u32,
        doc: &NamespaceDoc,
        _remotes: &Remotes,
    ) -> Result<(), BackendError> {
        if self.emulating().await? == SnapDialect::Snap3 {
            return Ok(());
        }
        let uuid = (!doc.uuid.is_empty()).then_some(doc.uuid.as_str());
        let params = NamespaceCreate::new(nqn, nsid, &doc.volume, uuid);
        existing_ok(
            self.client
                .nvme_namespace_create(&params)
                .execute()
                .await
                .map(drop)
                .map_err(failed(format!(
                    "nvme_namespace_create {nqn} nsid {nsid} on bdev {}",
                    doc.volume
                ))),
        )
    }

    pub(crate) async fn remove_namespace(&self, nqn: &str, nsid: u32) -> Result<(), BackendError> {
        if self.emulating().await? == SnapDialect::Snap3 {
            return Ok(());
        }
        missing_ok(
            self.client
                .nvme_namespace_destroy(nqn, nsid)
                .execute()
                .await
                .map(drop)
                .map_err(failed(format!("nvme_namespace_destroy {nqn} nsid {nsid}"))),
        )
    }

    pub(crate) async fn controllers(&self) -> Result<Vec<ObservedController>, BackendError> {
        let operation = "list controllers";
        Ok(match self.emulating().await? {
            SnapDialect::Snap3 => self
                .client
                .controller_list()
                .execute()
                .await
                .map_err(failed(operation))?
                .into_iter()
                .map(|c| ObservedController {
                    id: c.name,
                    nqn: c.subnqn,
                    cntlid: c.cntlid,
                    suspended: Some(false),
                })
                .collect(),
            _ => self
                .client
                .nvme_controller_list()
                .execute()
                .await
                .map_err(failed(operation))?
                .into_iter()
                .map(|c| ObservedController {
                    id: c.ctrl_id,
                    nqn: c.nqn,
                    cntlid: None,
                    suspended: c.suspended,
                })
                .collect(),
        })
    }

    pub(crate) async fn create_controller(
        &self,
        nqn: &str,
        doc: &ControllerDoc,
    ) -> Result<BackendController, BackendError> {
        let function = emulated_function(&doc.function)?;
        let created = self
            .emulation()
            .await?
            .create_controller(nqn, &function)
            .await
            .map_err(failed(format!("create controller of {nqn}")))?;
        Ok(BackendController {
            id: created.name,
            cntlid: created.cntlid,
        })
    }

    pub(crate) async fn remove_controller(
        &self,
        nqn: &str,
        ctrl: &BackendController,
    ) -> Result<(), BackendError> {
        let ctrl_ref = ControllerRef {
            name: ctrl.id.clone(),
            cntlid: ctrl.cntlid,
        };
        missing_ok(
            self.emulation()
                .await?
                .destroy_controller(nqn, &ctrl_ref)
                .await
                .map_err(failed(format!("delete controller {} of {nqn}", ctrl.id))),
        )
    }

    pub(crate) async fn attach(
        &self,
        nqn: &str,
        ctrl: &BackendController,
        nsid: u32,
        ns: &NamespaceDoc,
    ) -> Result<(), BackendError> {
        let operation = format!("attach nsid {nsid} to controller {}", ctrl.id);
        let result = match (self.emulating().await?, ctrl.cntlid) {
            (SnapDialect::Snap3, Some(cntlid)) => self
                .client
                .controller_nvme_namespace_attach(&Snap3NamespaceAttach {
                    bdev_type: "spdk",
                    bdev: ns.volume.clone(),
                    nsid,
                    subnqn: nqn.to_owned(),
                    cntlid,
                    uuid: (!ns.uuid.is_empty()).then(|| ns.uuid.clone()),
                })
                .execute()
                .await
                .map(drop),
            _ => self
                .client
                .nvme_controller_attach_ns(&ctrl.id, nsid)
                .execute()
                .await
                .map(drop),
        };
        existing_ok(result.map_err(failed(operation)))
    }

    pub(crate) async fn detach(
        &self,
        nqn: &str,
        ctrl: &BackendController,
        nsid: u32,
    ) -> Result<(), BackendError> {
        let operation = format!("detach nsid {nsid} from controller {}", ctrl.id);
        let result = match (self.emulating().await?, ctrl.cntlid) {
            (SnapDialect::Snap3, Some(cntlid)) => self
                .client
                .controller_nvme_namespace_detach(nqn, cntlid, nsid)
                .execute()
                .await
                .map(drop),
            _ => self
                .client
                .nvme_controller_detach_ns(&ctrl.id, nsid)
                .execute()
                .await
                .map(drop),
        };
        missing_ok(result.map_err(failed(operation)))
    }

    /// Resumes or suspends; "already in that state" counts as done. SNAP 3 controllers are
    /// always running.
    pub(crate) async fn set_running(
        &self,
        ctrl: &BackendController,
        running: bool,
    ) -> Result<(), BackendError> {
        if self.emulating().await? == SnapDialect::Snap3 {
            return if running {
                Ok(())
            } else {
                Err(BackendError::plain(
                    FailureKind::Unsupported,
                    "SNAP 3 (mlnx_snap) controllers cannot be suspended",
                ))
            };
        }
        let observed = self.controllers().await?;
        let suspended = observed
            .iter()
            .find(|c| c.id == ctrl.id)
            .and_then(|c| c.suspended);
        if suspended == Some(!running) {
            return Ok(());
        }
        let (call, verb) = if running {
            (self.client.nvme_controller_resume(&ctrl.id), "resume")
        } else {
            (self.client.nvme_controller_suspend(&ctrl.id), "suspend")
        };
        let result = call
            .execute()
            .await
            .map(drop)
            .map_err(failed(format!("{verb} controller {}", ctrl.id)));
        match result {
            // SNAP refuses to resume a running controller ("not suspended"); when the list
            // could not say, that refusal means the controller is where we want it.
            Err(e) if running && suspended.is_none() && e.kind == FailureKind::Busy => Ok(()),
            other => other,
        }
    }

    pub(crate) async fn volume_io(
        &self,
        volume: &str,
        _remotes: &Remotes,
    ) -> Result<VolumeIo, BackendError> {
        let stats = self
            .client
            .bdev_get_iostat(Some(volume))
            .execute()
            .await
            .map_err(failed(format!("bdev_get_iostat {volume}")))?;
        let bdev = stats
            .bdevs
            .into_iter()
            .find(|b| b.name == volume)
            .ok_or_else(|| {
                BackendError::plain(
                    FailureKind::NotFound,
                    format!("bdev_get_iostat did not report bdev {volume}"),
                )
            })?;
        Ok(VolumeIo {
            bytes_read: bdev.bytes_read,
            read_ops: bdev.num_read_ops,
            bytes_written: bdev.bytes_written,
            write_ops: bdev.num_write_ops,
            bytes_unmapped: bdev.bytes_unmapped,
            unmap_ops: bdev.num_unmap_ops,
            read_latency_ticks: bdev.read_latency_ticks,
            write_latency_ticks: bdev.write_latency_ticks,
            unmap_latency_ticks: bdev.unmap_latency_ticks,
            tick_rate_hz: stats.tick_rate,
            source: "spdk:bdev_get_iostat".to_owned(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_serials_are_stable_and_fit_identify() {
        let a = default_serial("nqn.2026-01.io.example:a");
        assert_eq!(a, default_serial("nqn.2026-01.io.example:a"));
        assert_ne!(a, default_serial("nqn.2026-01.io.example:b"));
        assert!(a.len() <= 20 && a.is_ascii(), "{a}");
    }

    #[test]
    fn vuid_functions_are_refused_by_name() {
        let function = v1::EmulationFunction {
            function: Some(v1::emulation_function::Function::Vuid("MT1".into())),
        };
        let err = emulated_function(&function).expect_err("vuid");
        assert_eq!(err.kind, FailureKind::Unsupported);
        assert!(err.describe().contains("vuid"), "{}", err.describe());
    }
}
