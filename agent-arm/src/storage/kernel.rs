//! The kernel backend: the Linux kernel's nvme-fabrics initiator and nvmet target, for
//! the lab and for machines without SNAP.
//!
//! What maps to what:
//! - a remote controller is an nvme-fabrics connection (`/dev/nvme-fabrics`); its volumes
//!   are the namespaces the kernel found (`/dev/nvmeXnY`), named `{id}n{nsid}` like SPDK
//!   names bdevs, so volume names do not change with the backend;
//! - any other whole disk in `/sys/block` (a null_blk, a loop device) is a volume too;
//! - a subsystem and its namespaces are an nvmet subsystem in configfs, exported on the
//!   ports listed in `[kernel] export_ports`;
//! - there are no emulated PCI controllers: the host reaches a namespace over the fabric
//!   (an export port) or, in the lab, reads the remote controller's block device, which
//!   it shares with the agent (block devices are not namespaced). Creating a controller
//!   is refused with FAILED_PRECONDITION saying so, and exposures have none.
//!
//! Every kernel call is a few small file writes; they run on the blocking pool.

use std::path::PathBuf;

use dpu_nvmeof::kernel::{
    ConnectSpec, Fabrics, FabricsController, KernelError, KernelErrorKind, KernelPaths,
    NamespaceSpec, Nvmet, PortSpec, SubsystemSpec, Transport,
};
use dpu_probe::block::is_multipath_path_disk;
use dpu_probe::disk_identity::NamespaceIdentity;
use dpu_proto::v1;

use super::backend::{BackendError, FailureKind, ObservedController, VolumeInfo, VolumeIo};
use super::desired::{
    split_volume_id, volume_id, BackendController, ControllerDoc, NamespaceDoc, Remotes,
    SubsystemDoc,
};
use super::remote::{decode_remote, RemoteTransport};
use crate::config::Config;

/// Why a controller cannot be created here, said whenever one is asked for.
const NO_PCI_EMULATION: &str = "the kernel storage backend has no PCI emulation, so it \
    cannot create NVMe controllers: hosts reach its subsystems over the fabric ([kernel] \
    export_ports), and in the lab the host reads the remote controller's block device \
    (see the exposure's host_device)";

/// The kernel backend.
#[derive(Debug)]
pub(crate) struct KernelBackend {
    paths: KernelPaths,
    ports: Vec<PortSpec>,
    hostnqn: Option<String>,
}

fn kind_of(err: &KernelError) -> FailureKind {
    match err.kind() {
        KernelErrorKind::Exists => FailureKind::AlreadyExists,
        KernelErrorKind::NotFound => FailureKind::NotFound,
        KernelErrorKind::Busy => FailureKind::Busy,
        KernelErrorKind::Unsupported => FailureKind::Unsupported,
        KernelErrorKind::Invalid => FailureKind::Invalid,
        _ => FailureKind::Other,
    }
}

/// Runs a kernel call on the blocking pool, naming the operation in its error.
async fn blocking<T, F>(operation: String, f: F) -> Result<T, BackendError>
where
    F: FnOnce() -> Result<T, KernelError> + Send + 'static,
    T: Send + 'static,
{
    match tokio::task::spawn_blocking(f).await {
        Ok(Ok(value)) => Ok(value),
        Ok(Err(err)) => Err(BackendError::new(kind_of(&err), operation, err)),
        Err(join) => Err(BackendError::new(FailureKind::Other, operation, join)),
    }
}

fn unsupported<T>() -> Result<T, BackendError> {
    Err(BackendError::plain(
        FailureKind::Unsupported,
        NO_PCI_EMULATION,
    ))
}

impl KernelBackend {
    pub(crate) fn new(config: &Config) -> Self {
        // Ports are numbered by their place in the list, from 1.
        let ports = config
            .kernel
            .export_ports
            .iter()
            .zip(1u16..)
            .map(|(port, id)| port.clone().with_id(id))
            .collect();
        Self {
            paths: KernelPaths::under(&config.kernel.root),
            ports,
            hostnqn: (!config.kernel.hostnqn.is_empty()).then(|| config.kernel.hostnqn.clone()),
        }
    }

    fn connect_spec(&self, spec: &v1::RemoteControllerSpec) -> Result<ConnectSpec, BackendError> {
        let target = decode_remote(spec)?;
        let transport = match target.transport {
            RemoteTransport::Tcp => Transport::Tcp,
            RemoteTransport::Rdma => Transport::Rdma,
        };
        let mut connect = ConnectSpec::new(transport, target.subnqn);
        connect.traddr = Some(target.traddr);
        connect.trsvcid = Some(target.trsvcid);
        connect.hostnqn = target.hostnqn.or_else(|| self.hostnqn.clone());
        connect.nr_io_queues = target.num_io_queues;
        connect.ctrl_loss_tmo = target.reconnect.ctrl_loss_timeout_sec;
        connect.reconnect_delay = target.reconnect.reconnect_delay_sec;
        connect.fast_io_fail_tmo = target.reconnect.fast_io_fail_timeout_sec;
        connect.hdr_digest = target.header_digest;
        connect.data_digest = target.data_digest;
        Ok(connect)
    }

    fn fabrics(&self) -> Fabrics {
        Fabrics::new(&self.paths)
    }

    fn nvmet(&self) -> Nvmet {
        Nvmet::new(&self.paths)
    }

    /// The connected controller of remote `id`, if any.
    async fn connected(
        &self,
        id: &str,
        remotes: &Remotes,
    ) -> Result<Option<FabricsController>, BackendError> {
        let Some(entry) = remotes.get(id) else {
            return Ok(None);
        };
        let spec = self.connect_spec(&entry.spec)?;
        let fabrics = self.fabrics();
        blocking(
            format!("find the nvme-fabrics controller of {id}"),
            move || fabrics.find_connected(&spec),
        )
        .await
    }

    /// The block device behind a volume: a remote controller's namespace, or a disk.
    async fn device_of(&self, volume: &str, remotes: &Remotes) -> Result<String, BackendError> {
        if let Some((remote, nsid)) = split_volume_id(volume) {
            if remotes.contains_key(remote) {
                let ctrl = self.connected(remote, remotes).await?.ok_or_else(|| {
                    BackendError::plain(
                        FailureKind::NotFound,
                        format!("volumes/{volume}: remote controller {remote} is not connected"),
                    )
                })?;
                let ns = ctrl
                    .namespaces
                    .iter()
                    .find(|ns| ns.nsid == nsid)
                    .ok_or_else(|| {
                        BackendError::plain(
                            FailureKind::NotFound,
                            format!(
                                "volumes/{volume}: controller {} has no namespace {nsid}",
                                ctrl.device
                            ),
                        )
                    })?;
                return Ok(ns.disk.clone());
            }
        }
        let disk = self.paths.sys.join("block").join(volume);
        if volume.contains('/') || !disk.exists() {
            return Err(BackendError::plain(
                FailureKind::NotFound,
                format!("volumes/{volume}: no remote controller volume and no /sys/block/{volume}"),
            ));
        }
        Ok(volume.to_owned())
    }

    pub(crate) async fn can_suspend(&self) -> Result<bool, BackendError> {
        Ok(false)
    }

    pub(crate) async fn ensure_remote(
        &self,
        id: &str,
        spec: &v1::RemoteControllerSpec,
    ) -> Result<(), BackendError> {
        let connect = self.connect_spec(spec)?;
        let fabrics = self.fabrics();
        blocking(
            format!("connect remote controller {id} over nvme-fabrics"),
            move || {
                if fabrics.find_connected(&connect)?.is_none() {
                    let made = fabrics.connect(&connect)?;
                    wait_for_namespaces(&fabrics, &connect, &made.device)?;
                }
                Ok(())
            },
        )
        .await
    }

    pub(crate) async fn remove_remote(
        &self,
        id: &str,
        remotes: &Remotes,
    ) -> Result<(), BackendError> {
        let Some(ctrl) = self.connected(id, remotes).await? else {
            return Ok(());
        };
        let fabrics = self.fabrics();
        blocking(
            format!("disconnect {} (remote controller {id})", ctrl.device),
            move || fabrics.disconnect(&ctrl.device).map(drop),
        )
        .await
    }

    pub(crate) async fn volumes(&self, remotes: &Remotes) -> Result<Vec<VolumeInfo>, BackendError> {
        let mut volumes = Vec::new();
        for id in remotes.keys() {
            let Some(ctrl) = self.connected(id, remotes).await? else {
                continue;
            };
            for ns in ctrl.namespaces {
                let block_size = u64::from(ns.logical_block_size.max(1));
                volumes.push(VolumeInfo {
                    id: volume_id(id, ns.nsid),
                    block_size,
                    num_blocks: ns.size_bytes / block_size,
                    uuid: ns.uuid.unwrap_or_default(),
                    device: Some(format!("/dev/{}", ns.disk)),
                    identity: None,
                    qos: None,
                });
            }
        }
        let block = self.paths.sys.join("block");
        let disks = tokio::task::spawn_blocking(move || list_disks(block))
            .await
            .unwrap_or_default();
        for (disk, block_size, bytes) in disks {
            if !volumes
                .iter()
                .any(|v| v.device.as_deref() == Some(&format!("/dev/{disk}")))
            {
                volumes.push(VolumeInfo {
                    device: Some(format!("/dev/{disk}")),
                    id: disk,
                    block_size,
                    num_blocks: bytes / block_size.max(1),
                    uuid: String::new(),
                    identity: None,
                    qos: None,
                });
            }
        }
        Ok(volumes)
    }

    /// Fills in each volume's disk identity as this machine's kernel reads it
    /// (`/sys/block/<disk>/{uuid,nguid,eui}`): how a host that sees the same disk
    /// recognises it. Kept out of [`Self::volumes`], which counter snapshots call on every
    /// reading and which needs no identity.
    pub(crate) async fn read_disk_identities(&self, volumes: &mut [VolumeInfo]) {
        let block = self.paths.sys.join("block");
        let devices: Vec<Option<String>> = volumes.iter().map(|v| v.device.clone()).collect();
        let identities = tokio::task::spawn_blocking(move || {
            devices
                .iter()
                .map(|device| {
                    let disk = device.as_deref()?.strip_prefix("/dev/")?;
                    NamespaceIdentity::read(&block.join(disk))
                        .ok()
                        .filter(|id| !id.is_empty())
                })
                .collect::<Vec<_>>()
        })
        .await
        .unwrap_or_default();
        for (volume, identity) in volumes.iter_mut().zip(identities) {
            volume.identity = identity;
        }
    }

    pub(crate) async fn ensure_subsystem(
        &self,
        nqn: &str,
        doc: &SubsystemDoc,
    ) -> Result<(), BackendError> {
        let spec = SubsystemSpec {
            nqn: nqn.to_owned(),
            allowed_hosts: Vec::new(),
            serial: (!doc.serial_number.is_empty()).then(|| doc.serial_number.clone()),
            model: (!doc.model_number.is_empty()).then(|| doc.model_number.clone()),
        };
        let (nvmet, ports, nqn) = (self.nvmet(), self.ports.clone(), nqn.to_owned());
        blocking(format!("create nvmet subsystem {}", spec.nqn), move || {
            if nvmet.ensure_subsystem(&spec)?.is_changed() {
                tracing::info!(nqn, "nvmet subsystem created");
            }
            for port in &ports {
                let port_changed = nvmet.ensure_port(port)?.is_changed();
                if nvmet.link_subsystem(port.id, &nqn)?.is_changed() || port_changed {
                    tracing::info!(nqn, port = port.id, "nvmet subsystem exported on port");
                }
            }
            Ok(())
        })
        .await
    }

    pub(crate) async fn remove_subsystem(&self, nqn: &str) -> Result<(), BackendError> {
        let (nvmet, ports, owned) = (self.nvmet(), self.ports.clone(), nqn.to_owned());
        blocking(format!("delete nvmet subsystem {nqn}"), move || {
            for port in &ports {
                if nvmet.unlink_subsystem(port.id, &owned)?.is_changed() {
                    tracing::info!(nqn = owned, port = port.id, "nvmet subsystem unexported");
                }
            }
            nvmet.remove_subsystem(&owned, false).map(drop)
        })
        .await
    }

    pub(crate) async fn ensure_namespace(
        &self,
        nqn: &str,
        nsid: u32,
        doc: &NamespaceDoc,
        remotes: &Remotes,
    ) -> Result<(), BackendError> {
        let disk = self.device_of(&doc.volume, remotes).await?;
        let spec = NamespaceSpec {
            nsid,
            device_path: format!("/dev/{disk}"),
            uuid: (!doc.uuid.is_empty()).then(|| doc.uuid.clone()),
        };
        let (nvmet, owned) = (self.nvmet(), nqn.to_owned());
        blocking(
            format!("create nvmet namespace {nsid} of {nqn} on /dev/{disk}"),
            move || nvmet.ensure_namespace(&owned, &spec).map(drop),
        )
        .await
    }

    pub(crate) async fn remove_namespace(&self, nqn: &str, nsid: u32) -> Result<(), BackendError> {
        let (nvmet, owned) = (self.nvmet(), nqn.to_owned());
        blocking(
            format!("delete nvmet namespace {nsid} of {nqn}"),
            move || nvmet.remove_namespace(&owned, nsid).map(drop),
        )
        .await
    }

    pub(crate) async fn controllers(&self) -> Result<Vec<ObservedController>, BackendError> {
        Ok(Vec::new())
    }

    /// nvmet namespaces take a UUID here; NGUID and EUI-64 are refused rather than dropped.
    pub(crate) async fn check_namespace(&self, doc: &NamespaceDoc) -> Result<(), BackendError> {
        for (value, what) in [(&doc.nguid, "NGUID"), (&doc.eui64, "EUI-64")] {
            if !value.is_empty() {
                return Err(BackendError::plain(
                    FailureKind::Unsupported,
                    format!(
                        "the kernel backend (nvmet) cannot set a namespace {what}; leave it empty"
                    ),
                ));
            }
        }
        Ok(())
    }

    pub(crate) async fn create_controller(
        &self,
        _nqn: &str,
        _id: &str,
        _doc: &ControllerDoc,
    ) -> Result<BackendController, BackendError> {
        unsupported()
    }

    /// Nothing can have been created, so removing is always done.
    pub(crate) async fn remove_controller(
        &self,
        _nqn: &str,
        _ctrl: &BackendController,
    ) -> Result<(), BackendError> {
        Ok(())
    }

    pub(crate) async fn attach(
        &self,
        _nqn: &str,
        _ctrl: &BackendController,
        _nsid: u32,
        _ns: &NamespaceDoc,
    ) -> Result<(), BackendError> {
        unsupported()
    }

    pub(crate) async fn detach(
        &self,
        _nqn: &str,
        _ctrl: &BackendController,
        _nsid: u32,
    ) -> Result<(), BackendError> {
        unsupported()
    }

    pub(crate) async fn set_running(
        &self,
        _ctrl: &BackendController,
        _running: bool,
    ) -> Result<(), BackendError> {
        unsupported()
    }

    pub(crate) async fn volume_io(
        &self,
        volume: &str,
        remotes: &Remotes,
    ) -> Result<VolumeIo, BackendError> {
        let disk = self.device_of(volume, remotes).await?;
        let fabrics = self.fabrics();
        let stats = blocking(format!("read /sys/block/{disk}/stat"), move || {
            fabrics.io_stats(&disk)
        })
        .await?;
        let source = stats
            .counted_on
            .iter()
            .map(|d| format!("sysfs:/sys/block/{d}/stat"))
            .collect::<Vec<_>>()
            .join(" + ");
        Ok(VolumeIo {
            bytes_read: stats.read_bytes,
            read_ops: stats.read_ios,
            bytes_written: stats.write_bytes,
            write_ops: stats.write_ios,
            bytes_unmapped: stats
                .raw
                .discard
                .map_or(0, |d| d.sectors.saturating_mul(512)),
            unmap_ops: stats.raw.discard.map_or(0, |d| d.ios),
            // /sys/block/*/stat counts milliseconds.
            read_latency_ticks: stats.raw.read_ticks,
            write_latency_ticks: stats.raw.write_ticks,
            unmap_latency_ticks: stats.raw.discard.map_or(0, |d| d.ticks),
            tick_rate_hz: 1000,
            source,
        })
    }
}

/// How long a new connection may take to report its namespaces: the kernel scans them
/// after `connect` returns, so without waiting a caller would see no volumes yet.
const NAMESPACE_SCAN_WAIT: std::time::Duration = std::time::Duration::from_secs(15);

/// Waits (on the blocking pool) until the new controller is live with its namespaces
/// scanned. A target that exports none is not an error: the wait just ends.
fn wait_for_namespaces(
    fabrics: &Fabrics,
    connect: &ConnectSpec,
    device: &str,
) -> Result<(), KernelError> {
    let deadline = std::time::Instant::now() + NAMESPACE_SCAN_WAIT;
    loop {
        let ready = fabrics
            .find_connected(connect)?
            .is_some_and(|c| c.state == "live" && !c.namespaces.is_empty());
        if ready {
            return Ok(());
        }
        if std::time::Instant::now() > deadline {
            tracing::warn!(
                device,
                "connected, but no namespace appeared within {NAMESPACE_SCAN_WAIT:?}"
            );
            return Ok(());
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

/// Whole disks in `/sys/block` with their logical block size and size in bytes, without
/// multipath path nodes (`nvme0c0n1`), which are not usable devices. A disk whose size
/// cannot be read is left out rather than reported with made-up geometry.
fn list_disks(block: PathBuf) -> Vec<(String, u64, u64)> {
    let Ok(entries) = std::fs::read_dir(&block) else {
        return Vec::new();
    };
    let number =
        |path: PathBuf| -> Option<u64> { std::fs::read_to_string(path).ok()?.trim().parse().ok() };
    let mut disks: Vec<(String, u64, u64)> = entries
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|name| !is_multipath_path_disk(name))
        .filter_map(|name| {
            let dir = block.join(&name);
            // `size` counts 512-byte sectors whatever the device's block size.
            let bytes = number(dir.join("size"))?.saturating_mul(512);
            let block_size = number(dir.join("queue/logical_block_size")).unwrap_or(512);
            Some((name, block_size, bytes))
        })
        .collect();
    disks.sort();
    disks
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn local_disks_carry_their_real_geometry_or_are_left_out() {
        let dir = tempfile::tempdir().expect("tempdir");
        let write = |rel: &str, text: &str| {
            let path = dir.path().join(rel);
            std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
            std::fs::write(path, text).expect("write");
        };
        write("nullb0/size", "2048\n");
        write("nullb0/queue/logical_block_size", "4096\n");
        write("nvme0c0n1/size", "8\n");
        write("loop7/queue/logical_block_size", "512\n");
        let disks = list_disks(dir.path().to_path_buf());
        assert_eq!(disks, [("nullb0".to_owned(), 4096, 2048 * 512)]);
    }
}
