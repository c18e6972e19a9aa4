//! The SNAP backend: NVIDIA SNAP (DOCA SNAP 4 on BlueField-3, mlnx_snap 3 on BlueField-2)
//! through its SPDK JSON-RPC socket.
//!
//! The dialect is taken from the configuration or, with `auto`, asked once from the peer
//! (`rpc_get_methods`) on first use and kept; a peer that turns out to be plain SPDK can
//! attach remote controllers but not emulate NVMe, and says so. SPDK's own codes decide
//! what a refusal means (snap-audit.md §2.1, checked against a real `spdk_tgt` v24.01 in
//! the `spdk` test tier).

use std::path::Path;
use std::time::Duration;

use dpu_nvmeof::snap::{
    AddressFamilyParam, AttachController, ControllerParams, ControllerRef, EmulatedFunction,
    EmulationFunctionInfo, NamespaceCreate, NamespaceIds, NvmeController, NvmeEmulation, QosLimits,
    Snap3NamespaceAttach, SnapClient, SnapDialect, SnapError, SnapErrorKind, SubsystemParams,
    TransportType,
};
use tokio::sync::OnceCell;

use super::backend::{
    BackendError, EmulationFunction, FailureKind, ObservedController, VolumeInfo, VolumeIo,
};
use super::desired::{
    BackendController, ControllerDoc, NamespaceDoc, QosDoc, Remotes, SubsystemDoc,
};
use super::multipath::PathAddress;
use super::remote::{decode_remote, RemoteTarget, RemoteTransport};
use dpu_proto::v1;

/// The SNAP JSON-RPC backend.
#[derive(Debug)]
pub(crate) struct SnapBackend {
    client: SnapClient,
    configured: Option<SnapDialect>,
    detected: OnceCell<SnapDialect>,
    /// SNAP 3's emulation manager from the configuration; discovered when `None`.
    emulation_manager: Option<String>,
}

fn kind_of(err: &SnapError) -> FailureKind {
    match err.kind() {
        SnapErrorKind::AlreadyExists => FailureKind::AlreadyExists,
        SnapErrorKind::Conflict => FailureKind::Conflict,
        SnapErrorKind::NotFound => FailureKind::NotFound,
        SnapErrorKind::Busy => FailureKind::Busy,
        SnapErrorKind::Transient => FailureKind::Unavailable,
        SnapErrorKind::MethodNotFound
        | SnapErrorKind::ParamsRejected
        | SnapErrorKind::Unsupported => FailureKind::Unsupported,
        SnapErrorKind::InvalidParams => FailureKind::Invalid,
        _ => FailureKind::Other,
    }
}

pub(super) fn failed(operation: impl Into<String>) -> impl FnOnce(SnapError) -> BackendError {
    let operation = operation.into();
    move |err| BackendError::new(kind_of(&err), operation, err)
}

/// Treats "already exists" as done (never a [`FailureKind::Conflict`]: that object is not
/// the one asked for).
fn existing_ok(result: Result<(), BackendError>) -> Result<(), BackendError> {
    match result {
        Err(e) if e.kind == FailureKind::AlreadyExists => Ok(()),
        other => other,
    }
}

/// Treats "not found" as done.
pub(super) fn missing_ok(result: Result<(), BackendError>) -> Result<(), BackendError> {
    match result {
        Err(e) if e.kind == FailureKind::NotFound => Ok(()),
        other => other,
    }
}

/// The name the agent gives the SNAP 4 controller of API controller `id` in subsystem
/// `nqn` (`ctrl` at create): unique across subsystems and the same every time, so a
/// controller created just before a crash is found again by name.
pub(crate) fn controller_name(nqn: &str, id: &str) -> String {
    let mut hash: u32 = 0x811c_9dc5;
    for byte in nqn.bytes() {
        hash ^= u32::from(byte);
        hash = hash.wrapping_mul(0x0100_0193);
    }
    format!("{id}_{hash:08x}")
}

/// Whether the attached controller `seen` goes where `target` asks, path by path as SPDK
/// compares them (traddr, trsvcid, subnqn; hostnqn when the spec sets one): every path
/// SPDK has is one of the spec's (a spec path SPDK lacks is attached by the reconciler,
/// [`SnapBackend::attach_missing_paths`]).
pub(super) fn same_target(seen: &NvmeController, target: &RemoteTarget) -> bool {
    let paths = target.paths();
    seen.ctrlrs.iter().all(|path| {
        path.trid
            .trtype
            .eq_ignore_ascii_case(&target.transport.to_string())
            && paths
                .iter()
                .any(|p| path.trid.traddr == p.traddr && path.trid.trsvcid == p.trsvcid.to_string())
            && path.trid.subnqn == target.subnqn
            && target
                .hostnqn
                .as_ref()
                .is_none_or(|want| path.host.as_ref().is_some_and(|h| &h.nqn == want))
    }) && !seen.ctrlrs.is_empty()
}

pub(super) fn describe_paths(seen: &NvmeController) -> String {
    let paths: Vec<String> = seen
        .ctrlrs
        .iter()
        .map(|p| {
            format!(
                "{} {}:{} {}",
                p.trid.trtype.to_ascii_lowercase(),
                p.trid.traddr,
                p.trid.trsvcid,
                p.trid.subnqn
            )
        })
        .collect();
    paths.join(", ")
}

/// The params of attaching `path` of `target` as controller `id`.
pub(super) fn attach_params(
    id: &str,
    target: &RemoteTarget,
    path: &PathAddress,
) -> AttachController {
    AttachController {
        name: id.to_owned(),
        trtype: match target.transport {
            RemoteTransport::Tcp => TransportType::Tcp,
            RemoteTransport::Rdma => TransportType::Rdma,
        },
        adrfam: match target.family {
            dpu_nvmeof::AddressFamily::Ipv6 => AddressFamilyParam::Ipv6,
            _ => AddressFamilyParam::Ipv4,
        },
        traddr: path.traddr.clone(),
        trsvcid: path.trsvcid.to_string(),
        subnqn: target.subnqn.clone(),
        hostnqn: target.hostnqn.clone(),
        hdgst: target.header_digest,
        ddgst: target.data_digest,
        num_io_queues: target.num_io_queues,
        ctrlr_loss_timeout_sec: target.reconnect.ctrl_loss_timeout_sec,
        reconnect_delay_sec: target.reconnect.reconnect_delay_sec,
        fast_io_fail_timeout_sec: target.reconnect.fast_io_fail_timeout_sec,
    }
}

/// A failed `bdev_nvme_attach_controller` of `target` as controller `id`, by SPDK's code.
pub(super) fn attach_failed(id: &str, target: &RemoteTarget, e: SnapError) -> BackendError {
    match e.code() {
        // A target that cannot be reached or does not serve the subsystem. Seen from
        // spdk_tgt v24.01 (tests/tests/spdk): nothing listening answers -19 "No such
        // device", an unknown subnqn -32602 "Invalid parameters"
        // (rpc_bdev_nvme_attach_controller_done); v24.09 and later answer -5. Decode
        // failures are -32603 and bad values -22, so none of these is the caller's fault.
        Some(-32602 | -19 | -5) => BackendError::new(
            FailureKind::Unavailable,
            format!(
                "cannot connect remote controller {id} to {}: the target did not accept \
                 the connection (nothing listening there, or no such subsystem)",
                target.describe()
            ),
            e,
        ),
        // -17 "File exists": another controller name is already connected to this very
        // path and subsystem (SPDK refuses a second one). Not done: `id` does not exist.
        Some(-17) => BackendError::new(
            FailureKind::Conflict,
            format!(
                "cannot attach remote controller {id}: SPDK already has another controller \
                 connected to {}",
                target.describe()
            ),
            e,
        ),
        _ => failed(format!("bdev_nvme_attach_controller {id}"))(e),
    }
}

/// DPF's `pci_bdf` for a function the host has not enumerated.
const NOT_ENUMERATED_BDF: &str = "00:00.0";

/// Which kind of emulated function a controller needs: SNAP lists NVMe and virtio-blk
/// functions apart (`emulation_type` `NVME` / `VBLK`), each kind with its own PF indexes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum FunctionKind {
    Nvme,
    VirtioBlk,
}

impl FunctionKind {
    /// Whether SNAP's `emulation_type` is this kind. DPF filters on "NVME" and NVIDIA's
    /// live-upgrade script on "NVME"/"VBLK"; compared without case so either spelling is
    /// found, and an absent type is taken as NVMe (the releases that list only NVMe).
    fn lists(self, emulation_type: &str) -> bool {
        match self {
            Self::Nvme => emulation_type.is_empty() || emulation_type.eq_ignore_ascii_case("nvme"),
            Self::VirtioBlk => {
                emulation_type.eq_ignore_ascii_case("vblk")
                    || emulation_type.eq_ignore_ascii_case("virtio_blk")
            }
        }
    }

    fn label(self) -> &'static str {
        match self {
            Self::Nvme => "NVMe",
            Self::VirtioBlk => "virtio-blk",
        }
    }
}

/// Whether `info` (one PF of `emulation_function_list`) or one of its VFs is `function`
/// of `kind`; gives the controller on it (empty when free) and the BDF.
fn find_function<'a>(
    list: &'a [EmulationFunctionInfo],
    function: &EmulatedFunction,
    kind: FunctionKind,
) -> Option<(&'a str, &'a str)> {
    for pf in list.iter().filter(|f| kind.lists(&f.emulation_type)) {
        match function {
            EmulatedFunction::Pf { pf_id } if pf.pf_index == Some(*pf_id) => {
                return Some((&pf.ctrl_id, &pf.pci_bdf))
            }
            EmulatedFunction::Vf { pf_id, vf_id } if pf.pf_index == Some(*pf_id) => {
                return pf
                    .vfs
                    .iter()
                    .find(|vf| vf.vf_index == Some(*vf_id))
                    .map(|vf| (vf.ctrl_id.as_str(), vf.pci_bdf.as_str()));
            }
            EmulatedFunction::PciBdf(bdf) => {
                if pf.pci_bdf.eq_ignore_ascii_case(bdf) {
                    return Some((&pf.ctrl_id, &pf.pci_bdf));
                }
                if let Some(vf) = pf
                    .vfs
                    .iter()
                    .find(|vf| vf.pci_bdf.eq_ignore_ascii_case(bdf))
                {
                    return Some((&vf.ctrl_id, &vf.pci_bdf));
                }
            }
            EmulatedFunction::Vuid(vuid) => {
                if &pf.vuid == vuid {
                    return Some((&pf.ctrl_id, &pf.pci_bdf));
                }
                if let Some(vf) = pf.vfs.iter().find(|vf| &vf.vuid == vuid) {
                    return Some((&vf.ctrl_id, &vf.pci_bdf));
                }
            }
            _ => {}
        }
    }
    None
}

pub(super) fn decode_function(
    function: &v1::EmulationFunction,
) -> Result<EmulatedFunction, BackendError> {
    super::function::decode(function).map_err(|e| {
        BackendError::plain(
            FailureKind::Invalid,
            format!("the stored emulation function is unusable: {e}"),
        )
    })
}

/// The document's limits in SPDK's `bdev_set_qos_limit` terms (the same keys and units).
fn spdk_limits(doc: &QosDoc) -> QosLimits {
    QosLimits {
        rw_ios_per_sec: doc.rw_ios_per_sec,
        rw_mbytes_per_sec: doc.rw_mbytes_per_sec,
        r_mbytes_per_sec: doc.r_mbytes_per_sec,
        w_mbytes_per_sec: doc.w_mbytes_per_sec,
    }
}

/// SPDK's `assigned_rate_limits` in the document's terms.
fn doc_limits(spdk: &QosLimits) -> QosDoc {
    QosDoc {
        rw_ios_per_sec: spdk.rw_ios_per_sec,
        rw_mbytes_per_sec: spdk.rw_mbytes_per_sec,
        r_mbytes_per_sec: spdk.r_mbytes_per_sec,
        w_mbytes_per_sec: spdk.w_mbytes_per_sec,
    }
}

pub(super) fn nonzero(value: u32) -> Option<u32> {
    (value != 0).then_some(value)
}

pub(super) fn nonempty(value: &str) -> Option<&str> {
    (!value.is_empty()).then_some(value)
}

fn namespace_ids(doc: &NamespaceDoc) -> NamespaceIds<'_> {
    NamespaceIds {
        uuid: nonempty(&doc.uuid),
        nguid: nonempty(&doc.nguid),
        eui64: nonempty(&doc.eui64),
    }
}

impl SnapBackend {
    /// A client of `socket` whose every call is bounded by `call_timeout`.
    pub(crate) fn new(
        socket: &Path,
        configured: Option<SnapDialect>,
        call_timeout: Duration,
        emulation_manager: Option<String>,
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
            emulation_manager,
        }
    }

    /// The client, shared (clones share one connection) with the health checks.
    pub(crate) fn client(&self) -> &SnapClient {
        &self.client
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
    pub(super) async fn emulation(&self) -> Result<NvmeEmulation, BackendError> {
        let dialect = self.emulating().await?;
        NvmeEmulation::new(self.client.clone(), dialect).ok_or_else(|| {
            BackendError::plain(FailureKind::Unsupported, "plain SPDK cannot emulate NVMe")
        })
    }

    /// SNAP 3's emulation manager from the configuration; discovered when `None`.
    pub(super) fn emulation_manager(&self) -> Option<String> {
        self.emulation_manager.clone()
    }

    pub(crate) async fn can_suspend(&self) -> Result<bool, BackendError> {
        Ok(self.emulating().await? == SnapDialect::Snap4)
    }

    /// The name a controller of the API gets in SNAP (SNAP 4 only: SNAP 3 names its own).
    pub(crate) async fn controller_name(
        &self,
        nqn: &str,
        id: &str,
    ) -> Result<Option<String>, BackendError> {
        Ok((self.emulating().await? == SnapDialect::Snap4).then(|| controller_name(nqn, id)))
    }

    /// Refuses, before anything changes, what this dialect has no key for.
    pub(crate) async fn check_namespace(&self, doc: &NamespaceDoc) -> Result<(), BackendError> {
        if doc.nguid.is_empty() && doc.eui64.is_empty() {
            return Ok(());
        }
        let emulation = self.emulation().await?;
        emulation
            .check_namespace_ids(&namespace_ids(doc))
            .map_err(failed("namespace identifiers"))
    }

    /// Attaches remote `id`, or finds it attached already. An existing controller of that
    /// name that goes elsewhere is a conflict, never "done": SPDK itself would add the new
    /// address as a second path (failover) or refuse with -22, so the agent checks first.
    pub(crate) async fn ensure_remote(
        &self,
        id: &str,
        spec: &v1::RemoteControllerSpec,
    ) -> Result<(), BackendError> {
        let target = decode_remote(spec)?;
        match self.client.bdev_nvme_get_controllers(id).execute().await {
            Ok(found) => {
                if let Some(seen) = found.iter().find(|c| c.name == id) {
                    return if same_target(seen, &target) {
                        self.attach_missing_paths(id, &target, Some(seen)).await
                    } else {
                        Err(BackendError::plain(
                            FailureKind::Conflict,
                            format!(
                                "SPDK already has a controller named {id} attached to {} \
                                 (asked: {}); detach it first",
                                describe_paths(seen),
                                target.describe()
                            ),
                        ))
                    };
                }
            }
            Err(e)
                if matches!(
                    e.kind(),
                    SnapErrorKind::NotFound | SnapErrorKind::MethodNotFound
                ) => {}
            Err(e) => return Err(failed(format!("bdev_nvme_get_controllers {id}"))(e)),
        }
        if !target.extra_paths.is_empty() {
            return self.attach_missing_paths(id, &target, None).await;
        }
        let params = attach_params(id, &target, &target.paths()[0]);
        let result = self
            .client
            .bdev_nvme_attach_controller(&params)
            .execute()
            .await
            .map(drop);
        // -114: attached between the check above and this call (same path): done.
        existing_ok(result.map_err(|e| attach_failed(id, &target, e)))
    }

    /// Detaches remote `id`, unless the controller SPDK has under that name goes somewhere
    /// else than the document's spec: that one is not the agent's (a create refused as a
    /// conflict is rolled back through here) and is left alone.
    pub(crate) async fn remove_remote(
        &self,
        id: &str,
        remotes: &Remotes,
    ) -> Result<(), BackendError> {
        if let Some(entry) = remotes.get(id) {
            let target = decode_remote(&entry.spec)?;
            match self.client.bdev_nvme_get_controllers(id).execute().await {
                Ok(found) => match found.iter().find(|c| c.name == id) {
                    Some(seen) if !same_target(seen, &target) => {
                        tracing::warn!(remote = id, attached = %describe_paths(seen), "not detaching a controller of that name that goes elsewhere: it is not this agent's");
                        return Ok(());
                    }
                    Some(_) => {}
                    None => return Ok(()),
                },
                Err(e) if e.kind() == SnapErrorKind::NotFound => return Ok(()),
                Err(e) if e.kind() == SnapErrorKind::MethodNotFound => {}
                Err(e) => return Err(failed(format!("bdev_nvme_get_controllers {id}"))(e)),
            }
        }
        missing_ok(
            self.client
                .bdev_nvme_detach_controller(id)
                .execute()
                .await
                .map(drop)
                .map_err(failed(format!("bdev_nvme_detach_controller {id}"))),
        )
    }

    /// SPDK bdevs have no disk on this machine: a host recognises a SNAP volume only by the
    /// namespaces it backs, which the desired document holds.
    pub(crate) async fn read_disk_identities(&self, _volumes: &mut [VolumeInfo]) {}

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
                identity: None,
                qos: b.assigned_rate_limits.as_ref().map(doc_limits),
            })
            .collect())
    }

    /// The limits SPDK reports in force on bdev `volume` (`None`: it does not report them).
    async fn assigned_limits(&self, volume: &str) -> Result<Option<QosLimits>, BackendError> {
        let bdevs = self
            .client
            .bdev_get_bdevs(Some(volume))
            .execute()
            .await
            .map_err(failed(format!("bdev_get_bdevs {volume}")))?;
        Ok(bdevs
            .into_iter()
            .find(|b| b.name == volume)
            .and_then(|b| b.assigned_rate_limits))
    }

    /// Gives bdev `volume` exactly `limits`, all four keys at once (a key left out would keep
    /// SPDK's old limit of that type); nothing is sent when SPDK already reports them, so a
    /// converge pass changes nothing on a volume that is as asked.
    pub(crate) async fn ensure_qos(
        &self,
        volume: &str,
        limits: &QosDoc,
    ) -> Result<(), BackendError> {
        let want = spdk_limits(limits);
        if self.assigned_limits(volume).await? == Some(want) {
            return Ok(());
        }
        self.client
            .bdev_set_qos_limit(volume, want)
            .execute()
            .await
            .map(drop)
            .map_err(failed(format!("bdev_set_qos_limit {volume}")))
    }

    /// Lifts every limit of bdev `volume`; a bdev that is gone (detached, SNAP restarted
    /// without it) has none.
    pub(crate) async fn remove_qos(&self, volume: &str) -> Result<(), BackendError> {
        match self.assigned_limits(volume).await {
            Ok(Some(have)) if have.is_unlimited() => return Ok(()),
            Ok(_) => {}
            Err(e) if e.kind == FailureKind::NotFound => return Ok(()),
            Err(e) => return Err(e),
        }
        missing_ok(
            self.client
                .bdev_set_qos_limit(volume, QosLimits::default())
                .execute()
                .await
                .map(drop)
                .map_err(failed(format!("bdev_set_qos_limit {volume}"))),
        )
    }

    /// Serial and model numbers and the namespace limit are sent only when the operator set
    /// them (SNAP 4's keys for them are unverified, snap-audit.md F3); SNAP 3 requires serial
    /// and model and gets stable defaults.
    pub(crate) async fn ensure_subsystem(
        &self,
        nqn: &str,
        doc: &SubsystemDoc,
    ) -> Result<(), BackendError> {
        let params = SubsystemParams {
            serial_number: nonempty(&doc.serial_number),
            model_number: nonempty(&doc.model_number),
            max_namespaces: nonzero(doc.max_namespaces),
        };
        existing_ok(
            self.emulation()
                .await?
                .create_subsystem(nqn, &params)
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
        let emulation = self.emulation().await?;
        if emulation.dialect() == SnapDialect::Snap3 {
            return Ok(());
        }
        emulation
            .check_namespace_ids(&namespace_ids(doc))
            .map_err(failed(format!("nvme_namespace_create {nqn} nsid {nsid}")))?;
        let params = NamespaceCreate::new(nqn, nsid, &doc.volume, nonempty(&doc.uuid));
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

    /// The emulated controllers. SNAP 4's run state comes from `nvme_subsystem_list`
    /// (`state`, "STARTED" when running); none is reported where SNAP says nothing.
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
                .filter(|c| c.is_nvme())
                .map(|c| ObservedController {
                    id: c.name,
                    nqn: c.subnqn,
                    cntlid: c.cntlid,
                    suspended: Some(false),
                })
                .collect(),
            _ => self
                .client
                .nvme_subsystem_list()
                .execute()
                .await
                .map_err(failed(operation))?
                .into_iter()
                .flat_map(|sub| {
                    let nqn = sub.nqn;
                    sub.controllers
                        .into_iter()
                        .map(move |c| ObservedController {
                            suspended: c.suspended(),
                            id: c.ctrl_id,
                            nqn: Some(nqn.clone()),
                            cntlid: None,
                        })
                })
                .collect(),
        })
    }

    /// SNAP 4: the function must exist and be free (`emulation_function_list`); a SNAP
    /// without that method is not asked. Gives the function's host PCI address as SNAP
    /// lists it, when it is one (DPF's `00:00.0` means not enumerated: none).
    pub(super) async fn check_function_free(
        &self,
        function: &EmulatedFunction,
        name: &str,
        kind: FunctionKind,
    ) -> Result<Option<String>, BackendError> {
        let list = match self.client.emulation_function_list().execute().await {
            Ok(list) => list,
            Err(e) if e.kind() == SnapErrorKind::MethodNotFound => return Ok(None),
            Err(e) => return Err(failed("emulation_function_list")(e)),
        };
        match find_function(&list, function, kind) {
            None => Err(BackendError::plain(
                FailureKind::Unsupported,
                format!(
                    "{function} is not a{} {} function SNAP emulates on this DPU \
                     (emulation_function_list lists {} PFs)",
                    if kind == FunctionKind::Nvme { "n" } else { "" },
                    kind.label(),
                    list.len()
                ),
            )),
            Some((ctrl, bdf)) if !ctrl.is_empty() && ctrl != name => Err(BackendError::plain(
                FailureKind::Busy,
                format!("{function} ({bdf}) is in use by SNAP controller {ctrl}"),
            )),
            Some((_, bdf)) => Ok(super::function::snap_bdf(bdf)
                .ok()
                .filter(|bdf| bdf != NOT_ENUMERATED_BDF)),
        }
    }

    /// The functions SNAP 4 emulates (`emulation_function_list`), PFs and their VFs.
    pub(crate) async fn emulation_functions(&self) -> Result<Vec<EmulationFunction>, BackendError> {
        if self.emulating().await? != SnapDialect::Snap4 {
            return Err(BackendError::plain(
                FailureKind::Unsupported,
                "mlnx_snap 3 lists functions in another shape (emulation_functions_list), \
                 which this agent does not read",
            ));
        }
        let list = self
            .client
            .emulation_function_list()
            .execute()
            .await
            .map_err(failed("emulation_function_list"))?;
        let mut functions = Vec::new();
        for pf in list {
            let pf_index = pf.pf_index.unwrap_or_default();
            functions.push(EmulationFunction {
                pf_index,
                vf_index: None,
                pci_bdf: pf.pci_bdf,
                vuid: pf.vuid,
                emulation_type: pf.emulation_type.clone(),
                controller: pf.ctrl_id,
            });
            functions.extend(pf.vfs.into_iter().map(|vf| EmulationFunction {
                pf_index,
                vf_index: vf.vf_index,
                pci_bdf: vf.pci_bdf,
                vuid: vf.vuid,
                emulation_type: pf.emulation_type.clone(),
                controller: vf.ctrl_id,
            }));
        }
        Ok(functions)
    }

    pub(crate) async fn create_controller(
        &self,
        nqn: &str,
        id: &str,
        doc: &ControllerDoc,
    ) -> Result<BackendController, BackendError> {
        let function = decode_function(&doc.function)?;
        let emulation = self.emulation().await?;
        let name = (emulation.dialect() == SnapDialect::Snap4).then(|| controller_name(nqn, id));
        let host_bdf = match &name {
            Some(name) => {
                self.check_function_free(&function, name, FunctionKind::Nvme)
                    .await?
            }
            None => None,
        };
        let params = ControllerParams {
            name,
            function,
            num_queues: nonzero(doc.num_queues),
            mdts: nonzero(doc.mdts),
            emulation_manager: self.emulation_manager.clone(),
        };
        let created = emulation
            .create_controller(nqn, &params)
            .await
            .map_err(failed(format!("create controller {id} of {nqn}")))?;
        Ok(BackendController {
            id: created.name,
            cntlid: created.cntlid,
            host_bdf,
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
                    uuid: nonempty(&ns.uuid).map(str::to_owned),
                    nguid: nonempty(&ns.nguid).map(str::to_owned),
                    eui64: nonempty(&ns.eui64).map(str::to_owned),
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
            // SNAP refuses to resume a running controller ("not suspended") and, presumably,
            // to suspend a suspended one; when the list could not say, that refusal means the
            // controller is where we want it.
            Err(e) if suspended.is_none() && e.kind == FailureKind::Busy => Ok(()),
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
    use dpu_nvmeof::snap::{EmulationVfInfo, NvmeControllerPath, PathHost, TransportId};

    #[test]
    fn controller_names_are_stable_and_unique_per_subsystem() {
        let a = controller_name("nqn.2026-01.io.example:a", "c0");
        assert_eq!(a, controller_name("nqn.2026-01.io.example:a", "c0"));
        assert_ne!(a, controller_name("nqn.2026-01.io.example:b", "c0"));
        assert!(a.starts_with("c0_"), "{a}");
    }

    fn attached(traddr: &str, subnqn: &str, host: &str) -> NvmeController {
        NvmeController {
            name: "r0".to_owned(),
            ctrlrs: vec![NvmeControllerPath {
                state: "enabled".to_owned(),
                trid: TransportId {
                    trtype: "TCP".to_owned(),
                    adrfam: "IPv4".to_owned(),
                    traddr: traddr.to_owned(),
                    trsvcid: "4420".to_owned(),
                    subnqn: subnqn.to_owned(),
                },
                host: Some(PathHost {
                    nqn: host.to_owned(),
                }),
            }],
        }
    }

    #[test]
    fn an_attached_controller_is_the_target_only_when_every_path_matches() {
        let spec = v1::RemoteControllerSpec {
            transport: v1::NvmeTransport::Tcp as i32,
            address_family: v1::AddressFamily::Ipv4 as i32,
            traddr: "127.0.0.1".to_owned(),
            subnqn: "nqn.2016-06.io.spdk:cnode1".to_owned(),
            ..Default::default()
        };
        let target = RemoteTarget::decode(&spec).expect("valid");
        let host = "nqn.2014-08.org.nvmexpress:uuid:1";
        assert!(same_target(
            &attached("127.0.0.1", "nqn.2016-06.io.spdk:cnode1", host),
            &target
        ));
        assert!(!same_target(
            &attached("127.0.0.2", "nqn.2016-06.io.spdk:cnode1", host),
            &target
        ));
        assert!(!same_target(
            &attached("127.0.0.1", "nqn.2016-06.io.spdk:cnode2", host),
            &target
        ));
        let with_host = RemoteTarget {
            hostnqn: Some("nqn.2014-08.org.nvmexpress:uuid:2".to_owned()),
            ..target.clone()
        };
        assert!(!same_target(
            &attached("127.0.0.1", "nqn.2016-06.io.spdk:cnode1", host),
            &with_host
        ));
        let empty = NvmeController {
            name: "r0".to_owned(),
            ctrlrs: Vec::new(),
        };
        assert!(!same_target(&empty, &target));
    }

    #[test]
    fn functions_are_found_by_index_bdf_and_vuid() {
        let list = vec![EmulationFunctionInfo {
            emulation_type: "nvme".to_owned(),
            pf_index: Some(0),
            pci_bdf: "03:00.2".to_owned(),
            vuid: "MT1NVMES0D0F2".to_owned(),
            ctrl_id: String::new(),
            vfs: vec![EmulationVfInfo {
                vf_index: Some(0),
                pci_bdf: "03:00.4".to_owned(),
                vuid: "MT1NVMES0D0F4".to_owned(),
                ctrl_id: "NVMeCtrl2".to_owned(),
            }],
        }];
        assert_eq!(
            find_function(
                &list,
                &EmulatedFunction::Pf { pf_id: 0 },
                FunctionKind::Nvme
            ),
            Some(("", "03:00.2"))
        );
        assert_eq!(
            find_function(
                &list,
                &EmulatedFunction::Vf { pf_id: 0, vf_id: 0 },
                FunctionKind::Nvme
            ),
            Some(("NVMeCtrl2", "03:00.4"))
        );
        assert_eq!(
            find_function(
                &list,
                &EmulatedFunction::PciBdf("03:00.4".to_owned()),
                FunctionKind::Nvme
            ),
            Some(("NVMeCtrl2", "03:00.4"))
        );
        assert_eq!(
            find_function(
                &list,
                &EmulatedFunction::Vuid("MT1NVMES0D0F2".to_owned()),
                FunctionKind::Nvme
            ),
            Some(("", "03:00.2"))
        );
        assert_eq!(
            find_function(
                &list,
                &EmulatedFunction::Pf { pf_id: 1 },
                FunctionKind::Nvme
            ),
            None
        );
        assert_eq!(
            find_function(
                &list,
                &EmulatedFunction::Vf { pf_id: 0, vf_id: 1 },
                FunctionKind::Nvme
            ),
            None
        );
        // A virtio-blk function of the same index is another function: the NVMe list
        // does not offer it, the virtio-blk one does.
        let vblk = vec![EmulationFunctionInfo {
            emulation_type: "VBLK".to_owned(),
            pf_index: Some(0),
            pci_bdf: "03:00.5".to_owned(),
            vuid: "MT1VBLKS0D0F5".to_owned(),
            ctrl_id: String::new(),
            vfs: Vec::new(),
        }];
        let pf0 = EmulatedFunction::Pf { pf_id: 0 };
        assert_eq!(find_function(&vblk, &pf0, FunctionKind::Nvme), None);
        assert_eq!(
            find_function(&vblk, &pf0, FunctionKind::VirtioBlk),
            Some(("", "03:00.5"))
        );
        assert_eq!(find_function(&list, &pf0, FunctionKind::VirtioBlk), None);
    }
}
