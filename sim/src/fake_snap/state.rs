//! The fake's SNAP state and method handlers for both dialects: what SNAP keeps (bdevs and
//! NVMe-oF controllers from `bdev_nvme_attach_controller`, subsystems, namespaces,
//! emulated controllers) and what it refuses, answered as SPDK-style JSON-RPC errors
//! `(code, message)`.
//!
//! - `decode.rs`: SPDK's strict param decoding (`spdk_json_decode_object`).
//! - `bdev.rs`: the standard SPDK methods, as SPDK v24.01's handlers answer them.
//! - `nvme.rs`: DOCA SNAP 4's NVMe emulation methods (shapes from NVIDIA's public
//!   clients; UNVERIFIED per method).
//! - `snap3.rs`: mlnx_snap 3's methods (per snap-rdma `rpc/snap_rpc.py` and `rpc/md`).
//! - `virtio_blk.rs`: virtio-blk emulation in both dialects.
//!
//! What the fake does not know about a real SNAP is written at each handler as
//! **UNVERIFIED**.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::hash::{BuildHasher, Hasher};

use serde_json::Value;

mod bdev;
mod decode;
mod multipath;
mod nvme;
mod snap3;
mod virtio_blk;

pub use decode::{DECODE_FAILED_CODE, DECODE_FAILED_MESSAGE};

/// SPDK's "invalid params" code (`SPDK_JSONRPC_ERROR_INVALID_PARAMS`).
pub(crate) const INVALID_PARAMS: i64 = -32602;
/// -EIO.
pub(crate) const EIO: i64 = -5;
/// -ENXIO.
pub(crate) const ENXIO: i64 = -6;
/// -ENODEV, what SPDK answers for unknown bdevs and controllers.
pub(crate) const ENODEV: i64 = -19;
/// -EEXIST.
pub(crate) const EEXIST: i64 = -17;
/// -EBUSY.
pub(crate) const EBUSY: i64 = -16;
/// -ENOENT.
pub(crate) const ENOENT: i64 = -2;
/// -EINVAL.
pub(crate) const EINVAL: i64 = -22;
/// -EALREADY (Linux: 114).
pub(crate) const EALREADY: i64 = -114;
/// A generic "invalid state" code the fake uses for SNAP refusals (UNVERIFIED).
pub(crate) const INVALID_STATE: i64 = -1;

/// A JSON-RPC error the fake answers with (defined beside the decoder, its first user, so
/// that file imports nothing from this one).
pub(crate) use decode::RpcError;

pub(crate) fn err<T>(code: i64, message: impl Into<String>) -> Result<T, RpcError> {
    Err((code, message.into()))
}

/// `spdk_strerror(-code)` for the codes the fake uses.
pub(crate) fn strerror(code: i64) -> &'static str {
    match code {
        EIO => "Input/output error",
        ENXIO => "No such device or address",
        ENODEV => "No such device",
        EEXIST => "File exists",
        EBUSY => "Device or resource busy",
        ENOENT => "No such file or directory",
        EINVAL => "Invalid argument",
        EALREADY => "Operation already in progress",
        _ => "Unknown error",
    }
}

/// `(code, spdk_strerror(-code))`, the way SPDK answers a bare errno.
pub(crate) fn errno<T>(code: i64) -> Result<T, RpcError> {
    err(code, strerror(code))
}

/// Which SNAP method set the fake speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum FakeDialect {
    /// DOCA SNAP 4 (`nvme_subsystem_create`, ...).
    #[default]
    Snap4,
    /// mlnx_snap 3 (`subsystem_nvme_create`, ...).
    Snap3,
}

/// The SPDK release the fake reports (`spdk_get_version`) and whose version-dependent
/// behaviour it follows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FakeSpdkVersion {
    /// E.g. 24.
    pub major: u32,
    /// E.g. 1.
    pub minor: u32,
    /// E.g. 0.
    pub patch: u32,
    /// E.g. `""` or `"-pre"`.
    pub suffix: String,
}

impl Default for FakeSpdkVersion {
    /// SPDK v24.01, what DOCA SNAP 4 is built on.
    fn default() -> Self {
        Self {
            major: 24,
            minor: 1,
            patch: 0,
            suffix: String::new(),
        }
    }
}

impl FakeSpdkVersion {
    /// Parses `v24.01`, `24.01`, `v24.01.1`, `v26.05-pre`; `None` if it is not a version.
    pub fn parse(text: &str) -> Option<Self> {
        let text = text.trim();
        let text = text.strip_prefix("SPDK ").unwrap_or(text);
        let text = text.strip_prefix('v').unwrap_or(text);
        let digits_end = text
            .find(|c: char| !c.is_ascii_digit() && c != '.')
            .unwrap_or(text.len());
        let (numbers, suffix) = text.split_at(digits_end);
        let mut parts = numbers.split('.');
        let major = parts.next()?.parse().ok()?;
        let minor = parts.next()?.parse().ok()?;
        let patch = match parts.next() {
            Some(p) => p.parse().ok()?,
            None => 0,
        };
        if parts.next().is_some() {
            return None;
        }
        Some(Self {
            major,
            minor,
            patch,
            suffix: suffix.to_owned(),
        })
    }

    /// Whether this release is `major.minor` or later.
    pub fn at_least(&self, major: u32, minor: u32) -> bool {
        (self.major, self.minor) >= (major, minor)
    }

    /// `spdk_get_version`'s result (`lib/rpc/rpc.c`: `SPDK_VERSION_STRING` and `fields`).
    pub fn reply(&self) -> Value {
        serde_json::json!({
            "version": self.to_string(),
            "fields": {"major": self.major, "minor": self.minor, "patch": self.patch,
                       "suffix": self.suffix},
        })
    }
}

impl fmt::Display for FakeSpdkVersion {
    /// `SPDK_VERSION_STRING`: `SPDK v24.01`, `SPDK v24.01.1`, `SPDK v26.05-pre`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "SPDK v{}.{:02}", self.major, self.minor)?;
        if self.patch != 0 {
            write!(f, ".{}", self.patch)?;
        }
        write!(f, "{}", self.suffix)
    }
}

/// A bdev and its counters.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FakeBdev {
    /// The `bdev_nvme_attach_controller` controller it belongs to.
    pub controller: String,
    /// Bytes read so far.
    pub bytes_read: u64,
    /// Read ops so far.
    pub num_read_ops: u64,
    /// Bytes written so far.
    pub bytes_written: u64,
    /// Write ops so far.
    pub num_write_ops: u64,
    /// The QoS limits in force, as `assigned_rate_limits` reports them (IOPS, then MiB/s
    /// read+write, read, write; 0 = unlimited), set by `bdev_set_qos_limit`.
    pub qos: [u64; 4],
    /// The multipath policy `bdev_nvme_set_multipath_policy` set; empty: SPDK's default,
    /// active-passive.
    pub mp_policy: String,
}

/// One NVMe-oF transport id (`struct spdk_nvme_transport_id`), as SPDK keeps it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FakeTrid {
    /// `RDMA`, `TCP`, `PCIe`, ... (`spdk_nvme_transport_id_trtype_str`).
    pub trtype: String,
    /// `IPv4`, `IPv6`, `IB`, `FC`; `None` when the attach gave none.
    pub adrfam: Option<String>,
    /// Target address.
    pub traddr: String,
    /// Target service id (port); empty when the attach gave none.
    pub trsvcid: String,
    /// Target subsystem NQN; empty when the attach gave none.
    pub subnqn: String,
}

impl FakeTrid {
    /// `spdk_nvme_transport_id_compare` == 0.
    fn same(&self, other: &Self) -> bool {
        self.trtype.eq_ignore_ascii_case(&other.trtype)
            && self.traddr.eq_ignore_ascii_case(&other.traddr)
            && self.adrfam == other.adrfam
            && self.trsvcid.eq_ignore_ascii_case(&other.trsvcid)
            && self.subnqn == other.subnqn
    }

    /// `nvme_bdev_dump_trid_json`: empty members are left out.
    fn json(&self) -> Value {
        let mut m = serde_json::Map::new();
        m.insert("trtype".into(), self.trtype.clone().into());
        if let Some(adrfam) = &self.adrfam {
            m.insert("adrfam".into(), adrfam.clone().into());
        }
        for (key, value) in [
            ("traddr", &self.traddr),
            ("trsvcid", &self.trsvcid),
            ("subnqn", &self.subnqn),
        ] {
            if !value.is_empty() {
                m.insert(key.into(), value.clone().into());
            }
        }
        Value::Object(m)
    }
}

/// One `struct nvme_ctrlr` of a bdev_nvme controller: its paths (the active one first,
/// then the alternate failover paths) and the host side.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FakeNvmeCtrlr {
    /// Active path first, then `alternate_trids`.
    pub paths: Vec<FakeTrid>,
    /// Host NQN it connected with (SPDK's default `nqn.2014-08.org.nvmexpress:uuid:…`
    /// when the attach gave none).
    pub hostnqn: String,
    /// `hostaddr`, empty when not given.
    pub hostaddr: String,
    /// `hostsvcid`, empty when not given.
    pub hostsvcid: String,
    /// The controller id the target assigned.
    pub cntlid: u16,
}

/// A controller made by `bdev_nvme_attach_controller` (`struct nvme_bdev_ctrlr`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FakeNvmeController {
    /// Its `nvme_ctrlr`s: one, or more when paths were added in multipath mode.
    pub ctrlrs: Vec<FakeNvmeCtrlr>,
    /// Its bdevs, `<name>n<nsid>`.
    pub bdevs: Vec<String>,
}

/// A namespace of a subsystem.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FakeNamespace {
    /// Backing bdev.
    pub bdev: String,
    /// UUID: as given, or one the fake picked at random when none was.
    pub uuid: String,
    /// NGUID, if given (SNAP 3 only).
    pub nguid: Option<String>,
    /// EUI-64, if given (SNAP 3 only).
    pub eui64: Option<String>,
    /// Controllers it is attached to (at most one: SNAP does not share namespaces).
    pub controllers: BTreeSet<String>,
}

/// A subsystem.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FakeSubsystem {
    /// Serial number (`sn`).
    pub serial_number: String,
    /// Model number (`mn`).
    pub model_number: String,
    /// Maximum NSID (`nn`).
    pub nn: u32,
    /// Maximum number of allowed namespaces (`mnan`).
    pub mnan: u32,
    /// Namespaces by nsid.
    pub namespaces: BTreeMap<u32, FakeNamespace>,
}

/// An emulated controller.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FakeController {
    /// Its subsystem.
    pub nqn: String,
    /// Controller id within the subsystem (SNAP 3 addressing).
    pub cntlid: u16,
    /// The function it emulates: `pf0` or `pf0vf1` (PF index, 0-based VF index).
    pub function: String,
    /// That function's PCI BDF, `bb:dd.f`.
    pub pci_bdf: String,
    /// That function's VHCA id.
    pub vhca_id: u32,
    /// That function's VUID.
    pub vuid: String,
    /// Whether it is suspended (SNAP 4 creates it suspended when asked).
    pub suspended: bool,
    /// I/O queues (SNAP 4 `num_queues`, SNAP 3 `nr_io_queues`).
    pub num_queues: u32,
    /// Maximum data transfer size.
    pub mdts: u32,
    /// SNAP 3: the emulation manager it was created on.
    pub emulation_manager: Option<String>,
    /// Attached nsids.
    pub namespaces: BTreeSet<u32>,
}

/// An emulated virtio-blk controller.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FakeVirtioBlk {
    /// The function: `vblk-pf0` or `vblk-pf0vf1` (PF index, 0-based VF index).
    pub function: String,
    /// That function's BDF, `bb:dd.f`.
    pub pci_bdf: String,
    /// That function's VHCA id.
    pub vhca_id: u32,
    /// That function's VUID.
    pub vuid: String,
    /// Backing bdev; empty for none.
    pub bdev: String,
    /// Virtqueues.
    pub num_queues: u32,
    /// Entries per virtqueue (SNAP 4 `queue_size`, SNAP 3 `queue_depth`).
    pub queue_size: u32,
    /// Serial number; empty when none was given.
    pub serial: String,
    /// SNAP 3: the emulation manager it was created on.
    pub emulation_manager: Option<String>,
}

/// A virtual function of an emulated PF, as `emulation_function_list` lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FakeVf {
    /// 0-based VF index (`vf_index`; SNAP 4 `vf_id` addresses it).
    pub vf_index: u32,
    /// Host-visible BDF, `bb:dd.f`.
    pub pci_bdf: String,
    /// VHCA id.
    pub vhca_id: u32,
    /// VUID.
    pub vuid: String,
}

/// An emulated PCI physical function, as `emulation_function_list` lists it (S-DPF shape).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FakePf {
    /// Hot-plugged (as opposed to a static PF).
    pub hotplugged: bool,
    /// `NVME` for NVMe functions (S-DPF compares against `"NVME"`); other types cannot
    /// host an NVMe controller.
    pub emulation_type: String,
    /// PF index (`pf_index`; `pf_id` addresses it).
    pub pf_index: u32,
    /// Host-visible BDF, `bb:dd.f` (no PCI domain).
    pub pci_bdf: String,
    /// VHCA id.
    pub vhca_id: u32,
    /// VUID.
    pub vuid: String,
    /// Its VFs.
    pub vfs: Vec<FakeVf>,
}

impl FakePf {
    /// The default table: two static NVMe PFs (`03:00.2`, `03:00.3`) with two VFs each
    /// (`03:0c.0`/`03:0c.1`, `03:0d.0`/`03:0d.1`), VUIDs in the S-DPF style
    /// (`MT2334XZ0001NVMES0D0F2`, VFs `…VF1`, `…VF2`). UNVERIFIED: BDFs and ids are made up
    /// in the shape S-DPF's test data shows.
    pub fn default_table() -> Vec<Self> {
        (0..2_u32)
            .map(|pf| {
                let vuid = format!("MT2334XZ0001NVMES0D0F{}", pf + 2);
                Self {
                    hotplugged: false,
                    emulation_type: "NVME".to_owned(),
                    pf_index: pf,
                    pci_bdf: format!("03:00.{}", pf + 2),
                    vhca_id: pf + 2,
                    vfs: (0..2_u32)
                        .map(|vf| FakeVf {
                            vf_index: vf,
                            pci_bdf: format!("03:{:02x}.{vf}", 0x0c + pf),
                            vhca_id: 98 + pf * 2 + vf,
                            vuid: format!("{vuid}VF{}", vf + 1),
                        })
                        .collect(),
                    vuid,
                }
            })
            .collect()
    }
}

/// A SNAP 3 emulation manager, as `emulation_managers_list` lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FakeEmulationManager {
    /// The RDMA device, e.g. `mlx5_0`.
    pub emulation_manager: String,
    /// Whether it can hot-plug functions.
    pub hotplug_support: bool,
    /// `nvme`, `virtio_blk`, `virtio_net`.
    pub supported_types: Vec<String>,
}

impl FakeEmulationManager {
    /// The default list: `mlx5_0` with hotplug, emulating `nvme` and `virtio_blk` (the
    /// `emulation_managers_list` md page's first entry).
    pub fn default_list() -> Vec<Self> {
        vec![Self {
            emulation_manager: "mlx5_0".to_owned(),
            hotplug_support: true,
            supported_types: vec!["nvme".to_owned(), "virtio_blk".to_owned()],
        }]
    }
}

/// What the fake is configured with: kept across [`FakeSnap::restart`] (it is the DPU's
/// hardware and software, not SNAP's runtime state).
///
/// [`FakeSnap::restart`]: super::FakeSnap::restart
#[derive(Debug, Clone)]
pub(crate) struct Config {
    pub(crate) version: FakeSpdkVersion,
    pub(crate) functions: Vec<FakePf>,
    pub(crate) managers: Vec<FakeEmulationManager>,
    /// `(traddr, trsvcid)` pairs no controller can connect to.
    pub(crate) refused: BTreeSet<(String, String)>,
    /// `nvme_subsystem_list` leaves the controllers' `state` out, as a SNAP release that
    /// does not report it would (the agent must then say "unknown", not assume).
    pub(crate) hide_controller_state: bool,
    /// Targets that serve only these subsystems (`(traddr, trsvcid)` → subnqns); an
    /// address not listed serves every subsystem.
    pub(crate) serves: BTreeMap<(String, String), BTreeSet<String>>,
}

impl Default for Config {
    fn default() -> Self {
        Self {
            version: FakeSpdkVersion::default(),
            functions: FakePf::default_table(),
            managers: FakeEmulationManager::default_list(),
            refused: BTreeSet::new(),
            serves: BTreeMap::new(),
            hide_controller_state: false,
        }
    }
}

/// Everything the fake SNAP keeps; lost on [`FakeSnap::restart`](super::FakeSnap::restart).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FakeSnapState {
    /// Bdevs by name.
    pub bdevs: BTreeMap<String, FakeBdev>,
    /// `bdev_nvme_attach_controller` controllers by name.
    pub nvme_controllers: BTreeMap<String, FakeNvmeController>,
    /// Subsystems by NQN.
    pub subsystems: BTreeMap<String, FakeSubsystem>,
    /// Emulated controllers by `ctrl_id` (SNAP 4) or name (SNAP 3).
    pub controllers: BTreeMap<String, FakeController>,
    /// Emulated virtio-blk controllers by name.
    pub virtio_blk: BTreeMap<String, FakeVirtioBlk>,
    /// The host NQN SPDK connects with when an attach gives none (a random UUID per
    /// process, as `spdk_nvme_ctrlr_get_default_ctrlr_opts` makes it).
    pub default_hostnqn: String,
    next_ctrl: u32,
    next_cntlid: u16,
}

impl Default for FakeSnapState {
    fn default() -> Self {
        Self {
            bdevs: BTreeMap::new(),
            nvme_controllers: BTreeMap::new(),
            subsystems: BTreeMap::new(),
            controllers: BTreeMap::new(),
            virtio_blk: BTreeMap::new(),
            default_hostnqn: format!("nqn.2014-08.org.nvmexpress:uuid:{}", random_uuid()),
            next_ctrl: 0,
            next_cntlid: 0,
        }
    }
}

/// A random version-4 UUID, lower case (what SNAP picks when a namespace is created
/// without one; UNVERIFIED that it is random rather than derived).
pub(crate) fn random_uuid() -> String {
    let mut bytes = [0_u8; 16];
    for (i, chunk) in bytes.chunks_mut(8).enumerate() {
        let mut h = std::collections::hash_map::RandomState::new().build_hasher();
        h.write_usize(i);
        h.write_u128(
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_nanos())
                .unwrap_or_default(),
        );
        chunk.copy_from_slice(&h.finish().to_le_bytes());
    }
    bytes[6] = (bytes[6] & 0x0f) | 0x40;
    bytes[8] = (bytes[8] & 0x3f) | 0x80;
    let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    format!(
        "{}-{}-{}-{}-{}",
        &hex[..8],
        &hex[8..12],
        &hex[12..16],
        &hex[16..20],
        &hex[20..]
    )
}

impl FakeSnapState {
    /// Handles one SNAP/SPDK method that touches state; `None` when it is not one of them.
    pub(crate) fn dispatch(
        &mut self,
        config: &Config,
        dialect: FakeDialect,
        method: &str,
        p: Option<&Value>,
    ) -> Option<Result<Value, RpcError>> {
        use FakeDialect::{Snap3, Snap4};
        Some(match (dialect, method) {
            (_, "bdev_nvme_attach_controller") => self.attach(config, p),
            (_, "bdev_nvme_detach_controller") => self.detach(p),
            (_, "bdev_nvme_get_controllers") => self.get_controllers(p),
            (_, "bdev_get_bdevs") => self.get_bdevs(p),
            (_, "bdev_get_iostat") => self.iostat(&config.version, p),
            (_, "bdev_set_qos_limit") => self.set_qos_limit(p),
            (_, "bdev_nvme_set_multipath_policy") => self.set_multipath_policy(p),
            (_, "bdev_nvme_get_io_paths") => self.get_io_paths(config, p),
            (Snap4, "nvme_subsystem_create") => self.subsystem_create(p),
            (Snap4, "nvme_subsystem_destroy") => self.subsystem_destroy(p),
            (Snap4, "nvme_subsystem_list") => self.subsystem_list(config, p),
            (Snap4, "nvme_namespace_create") => self.namespace_create(p),
            (Snap4, "nvme_namespace_destroy") => self.namespace_destroy(p),
            (Snap4, "nvme_controller_create") => self.controller_create(config, p),
            (Snap4, "nvme_controller_destroy") => self.controller_destroy(p),
            (Snap4, "nvme_controller_list") => self.controller_list(p),
            (Snap4, "nvme_controller_attach_ns") => self.attach_ns(p),
            (Snap4, "nvme_controller_detach_ns") => self.detach_ns(p),
            (Snap4, "nvme_controller_suspend") => self.set_suspended(p, true),
            (Snap4, "nvme_controller_resume") => self.set_suspended(p, false),
            (Snap4, "emulation_function_list") => self.function_list(config, p),
            (Snap4, "virtio_blk_controller_create") => self.vblk_create4(config, p),
            (Snap4, "virtio_blk_controller_destroy") => self.vblk_destroy4(p),
            (Snap4, "virtio_blk_controller_list") => self.vblk_list4(p),
            (Snap3, "controller_virtio_blk_create") => self.vblk_create3(config, p),
            (Snap3, "controller_virtio_blk_delete") => self.vblk_delete3(p),
            (Snap3, "subsystem_nvme_create") => self.subsystem_create3(p),
            (Snap3, "subsystem_nvme_delete") => self.subsystem_delete3(p),
            (Snap3, "subsystem_nvme_list") => self.subsystem_list3(p),
            (Snap3, "controller_nvme_create") => self.controller_create3(config, p),
            (Snap3, "controller_nvme_delete") => self.controller_delete3(p),
            (Snap3, "controller_list") => self.controller_list3(p),
            (Snap3, "controller_nvme_namespace_attach") => self.attach_ns3(p),
            (Snap3, "controller_nvme_namespace_detach") => self.detach_ns3(p),
            (Snap3, "emulation_managers_list") => Self::managers_list3(config, p),
            (Snap3, "emulation_functions_list") => Self::functions_list3(config, p),
            _ => return None,
        })
    }

    /// The `ticks` `bdev_get_iostat` reports: a 2 GHz clock since the fake's process
    /// started (monotonic, and not part of the state, so reading counters changes nothing).
    fn ticks() -> u64 {
        static START: std::sync::OnceLock<std::time::Instant> = std::sync::OnceLock::new();
        let elapsed = START.get_or_init(std::time::Instant::now).elapsed();
        123_456_789 + u64::try_from(elapsed.as_nanos() * 2).unwrap_or(u64::MAX)
    }

    /// A free SNAP 4 controller name `NVMeCtrl<n>`.
    fn next_ctrl_name(&mut self) -> String {
        loop {
            self.next_ctrl += 1;
            let name = format!("NVMeCtrl{}", self.next_ctrl);
            if !self.controllers.contains_key(&name) {
                return name;
            }
        }
    }

    /// The next controller id a remote target assigns.
    fn next_remote_cntlid(&mut self) -> u16 {
        self.next_cntlid = self.next_cntlid.wrapping_add(1).max(1);
        self.next_cntlid
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_parse_and_print_like_spdk_version_string() {
        let v = FakeSpdkVersion::default();
        assert_eq!(v.to_string(), "SPDK v24.01");
        assert_eq!(
            v.reply(),
            serde_json::json!({"version": "SPDK v24.01",
                "fields": {"major": 24, "minor": 1, "patch": 0, "suffix": ""}})
        );
        let pre = FakeSpdkVersion::parse("v26.05-pre").expect("parse");
        assert_eq!((pre.major, pre.minor, pre.suffix.as_str()), (26, 5, "-pre"));
        assert_eq!(pre.to_string(), "SPDK v26.05-pre");
        let patch = FakeSpdkVersion::parse("SPDK v24.01.1").expect("parse");
        assert_eq!(patch.to_string(), "SPDK v24.01.1");
        assert!(patch.at_least(24, 1) && !patch.at_least(24, 5));
        assert!(FakeSpdkVersion::parse("latest").is_none());
    }

    #[test]
    fn random_uuids_are_v4_and_differ() {
        let (a, b) = (random_uuid(), random_uuid());
        assert!(decode::is_uuid(&a), "{a}");
        assert_eq!(&a[14..15], "4");
        assert_ne!(a, b);
    }

    #[test]
    fn the_default_function_table_has_two_pfs_with_two_vfs() {
        let table = FakePf::default_table();
        assert_eq!(table.len(), 2);
        assert_eq!(table[0].pci_bdf, "03:00.2");
        assert_eq!(table[0].vuid, "MT2334XZ0001NVMES0D0F2");
        assert_eq!(table[1].vfs[1].pci_bdf, "03:0d.1");
        assert_eq!(table[0].vfs[0].vuid, "MT2334XZ0001NVMES0D0F2VF1");
    }
}
