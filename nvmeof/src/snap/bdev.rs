//! Standard SPDK bdev methods SNAP accepts: attaching the remote NVMe-oF controller as a
//! bdev, listing bdevs and reading their 64-bit I/O counters (storage.md §3.2). The types
//! of `bdev_get_iostat` are here; the call itself, which picks its param form, is in
//! `iostat.rs`.

use serde::{Deserialize, Serialize};

use super::{SnapCall, SnapClient};

/// `trtype` of `bdev_nvme_attach_controller`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum TransportType {
    /// NVMe over RDMA (RoCE): the DPU's production path.
    #[serde(rename = "rdma")]
    Rdma,
    /// NVMe over TCP (labs, loopback tests).
    #[serde(rename = "tcp")]
    Tcp,
}

/// `adrfam` of `bdev_nvme_attach_controller`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum AddressFamilyParam {
    /// IPv4 `traddr`.
    #[serde(rename = "ipv4")]
    Ipv4,
    /// IPv6 `traddr`.
    #[serde(rename = "ipv6")]
    Ipv6,
}

/// Params of `bdev_nvme_attach_controller`: connect to a remote NVMe-oF subsystem and create
/// one bdev per namespace, named `<name>n<nsid>`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct AttachController {
    /// Controller name, the prefix of the bdev names.
    pub name: String,
    /// Transport.
    pub trtype: TransportType,
    /// Address family of `traddr`.
    pub adrfam: AddressFamilyParam,
    /// Target address (validate with [`crate::validate_traddr`] first).
    pub traddr: String,
    /// Target service id (port), a string in SPDK's schema.
    pub trsvcid: String,
    /// The remote subsystem's NQN.
    pub subnqn: String,
    /// Host NQN to connect as; SPDK picks its own when absent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hostnqn: Option<String>,
    /// NVMe/TCP header digest.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub hdgst: bool,
    /// NVMe/TCP data digest.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub ddgst: bool,
    /// I/O queues to open; SPDK's default when absent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub num_io_queues: Option<u32>,
    /// Give up reconnecting after this long (-1: never); SPDK's default when absent. SPDK
    /// checks it together with the next two (`bdev_nvme_check_io_error_resiliency_params`)
    /// and refuses an inconsistent trio with -22.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ctrlr_loss_timeout_sec: Option<i32>,
    /// Wait between reconnect attempts; SPDK's default when absent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reconnect_delay_sec: Option<u32>,
    /// Fail I/O after this long without a connection while reconnecting goes on; SPDK's
    /// default when absent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fast_io_fail_timeout_sec: Option<u32>,
}

/// One entry of `bdev_nvme_get_controllers`: a controller name and its paths
/// (`rpc_dump_nvme_bdev_controller_info`, SPDK v24.01).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct NvmeController {
    /// The name given at attach, the prefix of its bdevs.
    pub name: String,
    /// One entry per path (several after a failover or multipath attach).
    #[serde(default)]
    pub ctrlrs: Vec<NvmeControllerPath>,
}

/// One path of an attached NVMe-oF controller (`nvme_ctrlr_info_json`).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct NvmeControllerPath {
    /// E.g. `enabled`, `resetting`, `deleting`.
    #[serde(default)]
    pub state: String,
    /// Where the path goes.
    pub trid: TransportId,
    /// The host side of the connection.
    #[serde(default)]
    pub host: Option<PathHost>,
}

/// An NVMe transport id as SPDK prints it (`nvme_bdev_dump_trid_json`): `trtype` upper
/// case (`TCP`, `RDMA`), `adrfam` as `IPv4`/`IPv6`; empty members are left out.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct TransportId {
    /// `TCP`, `RDMA`, ...
    #[serde(default)]
    pub trtype: String,
    /// `IPv4`, `IPv6`, ...
    #[serde(default)]
    pub adrfam: String,
    /// Target address.
    #[serde(default)]
    pub traddr: String,
    /// Target service id.
    #[serde(default)]
    pub trsvcid: String,
    /// Remote subsystem NQN.
    #[serde(default)]
    pub subnqn: String,
}

/// The `host` object of a controller path.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct PathHost {
    /// The host NQN the path connected as.
    #[serde(default)]
    pub nqn: String,
}

/// One entry of `bdev_get_bdevs` (the fields the agent uses; others are ignored).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct BdevInfo {
    /// Bdev name.
    pub name: String,
    /// E.g. `NVMe disk`.
    #[serde(default)]
    pub product_name: String,
    /// Logical block size in bytes.
    #[serde(default)]
    pub block_size: u64,
    /// Number of blocks.
    #[serde(default)]
    pub num_blocks: u64,
    /// Bdev UUID, when it has one.
    #[serde(default)]
    pub uuid: Option<String>,
    /// Whether a module (e.g. a SNAP namespace) claimed it.
    #[serde(default)]
    pub claimed: bool,
    /// The QoS limits in force (storage.md §7.3: all four keys, 0 = unlimited, bandwidth
    /// in MiB/s); `None` when the peer does not report them.
    #[serde(default)]
    pub assigned_rate_limits: Option<super::QosLimits>,
}

/// `bdev_get_iostat`'s answer.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct Iostat {
    /// Ticks per second, to turn latency ticks into time.
    pub tick_rate: u64,
    /// The tick counter when the stats were taken (absent in some versions).
    #[serde(default)]
    pub ticks: Option<u64>,
    /// Per-bdev counters.
    pub bdevs: Vec<BdevIostat>,
}

/// 64-bit cumulative counters of one bdev.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct BdevIostat {
    /// Bdev name.
    pub name: String,
    /// Bytes read.
    pub bytes_read: u64,
    /// Read operations.
    pub num_read_ops: u64,
    /// Bytes written.
    pub bytes_written: u64,
    /// Write operations.
    pub num_write_ops: u64,
    /// Bytes unmapped.
    #[serde(default)]
    pub bytes_unmapped: u64,
    /// Unmap operations.
    #[serde(default)]
    pub num_unmap_ops: u64,
    /// Sum of read latencies in ticks.
    #[serde(default)]
    pub read_latency_ticks: u64,
    /// Sum of write latencies in ticks.
    #[serde(default)]
    pub write_latency_ticks: u64,
    /// Sum of unmap latencies in ticks.
    #[serde(default)]
    pub unmap_latency_ticks: u64,
}

#[derive(Serialize)]
pub(super) struct IostatByName {
    pub(super) name: String,
}

#[derive(Serialize)]
pub(super) struct IostatByNames {
    pub(super) names: Vec<String>,
}

#[derive(Serialize)]
struct ByName<'a> {
    name: &'a str,
}

impl SnapClient {
    /// `bdev_nvme_attach_controller`: returns the created bdev names (e.g. `["Nvme0n1"]`).
    pub fn bdev_nvme_attach_controller(&self, params: &AttachController) -> SnapCall<Vec<String>> {
        self.call("bdev_nvme_attach_controller", params)
    }

    /// `bdev_nvme_get_controllers {name}`: the attached controller `name` with its paths.
    /// An unknown name is refused (v24.01: code 22, "Controller X does not exist"), which
    /// [`SnapError::kind`](super::SnapError::kind) reads as not found.
    pub fn bdev_nvme_get_controllers(&self, name: &str) -> SnapCall<Vec<NvmeController>> {
        self.call("bdev_nvme_get_controllers", ByName { name })
    }

    /// `bdev_nvme_detach_controller {name}`: removes the controller and its bdevs.
    pub fn bdev_nvme_detach_controller(&self, name: &str) -> SnapCall<bool> {
        self.call("bdev_nvme_detach_controller", ByName { name })
    }

    /// `bdev_get_bdevs`: every bdev, or only `name` (an unknown name is an error).
    pub fn bdev_get_bdevs(&self, name: Option<&str>) -> SnapCall<Vec<BdevInfo>> {
        match name {
            Some(name) => self.call("bdev_get_bdevs", ByName { name }),
            None => self.call_bare("bdev_get_bdevs"),
        }
    }
}
