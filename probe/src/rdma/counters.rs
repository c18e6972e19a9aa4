//! RDMA port counters as snapshot [`Sample`]s: the IB PMA `ports/N/counters/` and the
//! driver's `ports/N/hw_counters/` (and `<dev>/hw_counters/`), with units and widths from
//! `docs/reference/rdma-bluefield.md` §1.1–1.3.
//!
//! These are the counters that tell RoCE from TCP: on mlx5, `port_xmit_data` and
//! `port_rcv_data` count only RDMA traffic, in 4-byte words.
//!
//! Widths, and why most are "unknown" (0, which the diff reads as "a decrease is a reset"):
//! - mlx5 advertises `IB_PMA_CLASS_CAP_EXT_WIDTH`, so the kernel uses the extended table:
//!   data and packet counters are 64-bit. The extended table is the only one with
//!   `unicast_*`/`multicast_*` files, so their presence is the test.
//! - Without them the table is the legacy one (32-bit data/packets) or the "no IETF" one
//!   (64-bit, kernel `sysfs.c` `get_counter_table`); the two cannot be told apart from the
//!   files, and legacy IB PMA counters saturate rather than wrap (IBA PortCounters;
//!   UNVERIFIED on hardware), so a decrease there is a reset either way.
//! - Error counters are 4–16-bit saturating PMA fields; `port_xmit_wait` is 32-bit.
//! - mlx5 Q counters in `hw_counters` are 32-bit in hardware (`counters.c` reads `be32`),
//!   congestion and extended PPCNT counters 64-bit, and the printed value adds the history
//!   of bound counters, so no modulus is clean: a decrease is treated as a reset, which a
//!   proof reports as inconclusive instead of inventing a delta.
//!
//! On the live system a sampler reads a port's `hw_counters` over RDMA netlink instead
//! (one request per port, [`crate::rdma::netlink`]), giving the same samples built by
//! `hw_sample`; the PMA `counters/` and device-wide `hw_counters/` are always read here.

use std::borrow::Cow;
use std::io;

use nix::errno::Errno;

use crate::counter_file::KeptDir;
use crate::root::list_dir;
use crate::snapshot::{Sample, Source, SpareStrings, Unit};
use crate::{ProbeError, SysRoot};

/// The snapshot object of a port: `rdmaDevices/{ibdev}/ports/{port}`.
pub fn port_object(ibdev: &str, port: u32) -> String {
    format!("rdmaDevices/{ibdev}/ports/{port}")
}

/// The snapshot object of a device (for device-wide `hw_counters`): `rdmaDevices/{ibdev}`.
pub fn device_object(ibdev: &str) -> String {
    format!("rdmaDevices/{ibdev}")
}

/// The unit of a `counters/` (IB PMA) file. Unknown names are [`Unit::Unspecified`]
/// rather than a guess, because a proof compares units.
pub fn pma_counter_unit(name: &str) -> Unit {
    match name {
        // 4-byte words on the wire; the sample multiplies by 4.
        "port_xmit_data" | "port_rcv_data" => Unit::Bytes,
        "port_xmit_packets"
        | "port_rcv_packets"
        | "unicast_xmit_packets"
        | "unicast_rcv_packets"
        | "multicast_xmit_packets"
        | "multicast_rcv_packets" => Unit::Packets,
        "symbol_error"
        | "port_rcv_errors"
        | "port_rcv_remote_physical_errors"
        | "port_rcv_switch_relay_errors"
        | "link_error_recovery"
        | "link_downed"
        | "port_xmit_constraint_errors"
        | "port_rcv_constraint_errors"
        | "local_link_integrity_errors"
        | "excessive_buffer_overrun_errors"
        | "port_xmit_discards"
        | "VL15_dropped" => Unit::Events,
        "port_xmit_wait" => Unit::Ticks,
        _ => Unit::Unspecified,
    }
}

/// Whole words (between underscores) that mark a counter of errors, retries or drops.
const EVENT_WORDS: [&str; 14] = [
    "err", "error", "errors", "retrans", "retry", "retries", "drop", "drops", "dropped", "discard",
    "discards", "timeout", "nak", "exceeded",
];

/// The unit of a `hw_counters/` file: the reference's mlx5 table first (also for the
/// `vport_` copies the Arm exposes for representors, and `_per_qp` variants), then the
/// name's suffix (`_bytes`, `_packets`/`_pkts`, `_requests`), then error-like words
/// (Events); [`Unit::Unspecified`] when nothing matches, e.g. rxe's `ack_deferred`.
pub fn hw_counter_unit(name: &str) -> Unit {
    let base = name.strip_prefix("vport_").unwrap_or(name);
    let base = base.strip_suffix("_per_qp").unwrap_or(base);
    match base {
        "rx_write_requests" | "rx_read_requests" | "rx_atomic_requests" | "rx_dct_connect" => {
            return Unit::Operations
        }
        // CNPs and CE-marked packets are packets on the wire.
        "np_ecn_marked_roce_packets"
        | "np_cnp_sent"
        | "rp_cnp_ignored"
        | "rp_cnp_handled"
        | "rx_icrc_encapsulated" => return Unit::Packets,
        "out_of_buffer"
        | "out_of_sequence"
        | "duplicate_request"
        | "roce_adp_retrans"
        | "roce_adp_retrans_to"
        | "roce_slow_restart"
        | "roce_slow_restart_cnps"
        | "roce_slow_restart_trans" => return Unit::Events,
        _ => {}
    }
    if base.ends_with("_bytes") {
        Unit::Bytes
    } else if base.ends_with("_packets") || base.ends_with("_pkts") {
        Unit::Packets
    } else if base.ends_with("_requests") {
        Unit::Operations
    } else if base.contains("out_of") || base.split('_').any(|word| EVENT_WORDS.contains(&word)) {
        Unit::Events
    } else {
        Unit::Unspecified
    }
}

/// The kept counter directories of one RDMA object between snapshots: a port's
/// `counters/` and `hw_counters/`, or a device's own `hw_counters/` (no `pma`). What a
/// sampler holds per object so a `Watch` reads each counter with one `pread` (see
/// [`KeptDir`]). A snapshot goes through it in three steps: [`ObjectDirs::prepare`]
/// (listing and descriptors) and the parse ([`parse_port_counters`],
/// [`parse_device_hw_counters`]) stay outside the read window; only
/// [`ObjectDirs::read_all`] is inside it.
#[derive(Debug)]
pub(crate) struct ObjectDirs {
    pma: Option<KeptDir>,
    hw: KeptDir,
    /// The port's `hw_counters` come from RDMA netlink this snapshot: the directory is
    /// neither opened nor read.
    hw_elsewhere: bool,
}

impl ObjectDirs {
    /// A port's directories; the names are checked, nothing is opened yet.
    pub(crate) fn port(root: &SysRoot, ibdev: &str, port: u32) -> Result<Self, ProbeError> {
        let dir = port_path(root, ibdev, port)?;
        Ok(Self {
            pma: Some(KeptDir::new(dir.join("counters"))),
            hw: KeptDir::new(dir.join("hw_counters")),
            hw_elsewhere: false,
        })
    }

    /// A device's own `hw_counters/`.
    pub(crate) fn device(root: &SysRoot, ibdev: &str) -> Result<Self, ProbeError> {
        let dir = device_path(root, ibdev)?;
        Ok(Self {
            pma: None,
            hw: KeptDir::new(dir.join("hw_counters")),
            hw_elsewhere: false,
        })
    }

    /// Before the read window: brings the listings up to date (one `stat` per directory
    /// when nothing changed) and opens a descriptor for every counter file.
    /// `hw_elsewhere` says the port's `hw_counters` were read over RDMA netlink.
    pub(crate) fn prepare(&mut self, hw_elsewhere: bool) -> Result<(), ProbeError> {
        self.hw_elsewhere = hw_elsewhere;
        if let Some(pma) = &mut self.pma {
            if pma.refresh()? {
                pma.open_all();
            }
        }
        if !hw_elsewhere && self.hw.refresh()? {
            self.hw.open_all();
        }
        Ok(())
    }

    /// The read window's part: every prepared counter file, read back to back.
    pub(crate) fn read_all(&mut self) {
        if let Some(pma) = &mut self.pma {
            pma.read_all();
        }
        if !self.hw_elsewhere {
            self.hw.read_all();
        }
    }

    /// Descriptors kept open for this object.
    #[cfg(test)]
    pub(crate) fn open_files(&self) -> usize {
        self.pma.as_ref().map_or(0, KeptDir::open_files) + self.hw.open_files()
    }
}

/// The IB PMA counters of one port. A port without `counters/` (non-mlx5 providers,
/// soft-RoCE) gives an empty list, not an error.
pub fn read_pma_counters(
    root: &SysRoot,
    ibdev: &str,
    port: u32,
) -> Result<Vec<Sample>, ProbeError> {
    port_dir(root, ibdev, port)?;
    let mut dir = KeptDir::new(port_path(root, ibdev, port)?.join("counters"));
    dir.refresh()?;
    dir.read_all();
    let mut samples = Vec::new();
    parse_pma_into(
        &dir,
        &port_object(ibdev, port),
        &mut samples,
        &mut SpareStrings::default(),
    )?;
    Ok(samples)
}

/// Parses a port's read PMA directory into `out`; `false` when there is no such
/// directory.
fn parse_pma_into(
    dir: &KeptDir,
    object: &str,
    out: &mut Vec<Sample>,
    spare: &mut SpareStrings,
) -> Result<bool, ProbeError> {
    if !dir.is_listed() {
        return Ok(false);
    }
    let extended = dir
        .names()
        .any(|n| n.starts_with("unicast_") || n.starts_with("multicast_"));
    out.reserve(dir.len());
    for index in 0..dir.len() {
        let Some(raw) = parse_counter(dir, index)? else {
            continue;
        };
        let name = dir.counter_name(index);
        let unit = pma_counter_unit(&name);
        let is_data = matches!(&*name, "port_xmit_data" | "port_rcv_data");
        let width = if extended && (is_data || unit == Unit::Packets) {
            64
        } else {
            0
        };
        let sample = Sample::cumulative(Source::Rdma, spare.string(object), name, raw, unit)
            .with_width(width);
        out.push(if is_data { sample.scaled(4) } else { sample });
    }
    Ok(true)
}

/// The driver counters of one port. A missing `hw_counters/` is normal (some devices and
/// firmware have none) and gives an empty list.
pub fn read_hw_counters(root: &SysRoot, ibdev: &str, port: u32) -> Result<Vec<Sample>, ProbeError> {
    port_dir(root, ibdev, port)?;
    let mut dir = KeptDir::new(port_path(root, ibdev, port)?.join("hw_counters"));
    dir.refresh()?;
    dir.read_all();
    let mut samples = Vec::new();
    parse_hw_into(
        &dir,
        &port_object(ibdev, port),
        &mut samples,
        &mut SpareStrings::default(),
    )?;
    Ok(samples)
}

/// Both families of one port, PMA first.
pub fn read_port_counters(
    root: &SysRoot,
    ibdev: &str,
    port: u32,
) -> Result<Vec<Sample>, ProbeError> {
    let mut dirs = ObjectDirs::port(root, ibdev, port)?;
    dirs.prepare(false)?;
    dirs.read_all();
    parse_port_counters(root, ibdev, port, &dirs, None, &mut SpareStrings::default())
}

/// [`read_port_counters`]' samples from a sampler's prepared and read directories; `hw`
/// is the port's `hw_counters` family when it was read over RDMA netlink, so only the
/// PMA files were read. Object strings come from `spare` where it has them.
pub(crate) fn parse_port_counters(
    root: &SysRoot,
    ibdev: &str,
    port: u32,
    dirs: &ObjectDirs,
    hw: Option<Vec<Sample>>,
    spare: &mut SpareStrings,
) -> Result<Vec<Sample>, ProbeError> {
    let object = port_object(ibdev, port);
    let mut samples = Vec::new();
    let has_pma = match &dirs.pma {
        Some(pma) => parse_pma_into(pma, &object, &mut samples, spare)?,
        None => false,
    };
    let has_hw = match hw {
        Some(hw) => {
            samples.extend(hw);
            true
        }
        None => parse_hw_into(&dirs.hw, &object, &mut samples, spare)?,
    };
    if !has_pma && !has_hw {
        // Neither directory: the port itself may be gone, which is an error, not "no
        // counters". Checked only here so the common case costs one stat per directory.
        port_dir(root, ibdev, port)?;
    }
    Ok(samples)
}

/// The counter names of a port's `hw_counters/` (without `lifespan`), sorted; `None`
/// when the port has no such directory. What a netlink reading must cover to replace the
/// files.
pub(crate) fn hw_counter_names(
    root: &SysRoot,
    ibdev: &str,
    port: u32,
) -> Result<Option<Vec<String>>, ProbeError> {
    port_dir(root, ibdev, port)?;
    let mut dir = KeptDir::new(port_path(root, ibdev, port)?.join("hw_counters"));
    if !dir.refresh()? {
        return Ok(None);
    }
    Ok(Some(
        dir.names()
            .filter(|name| *name != "lifespan")
            .map(str::to_owned)
            .collect(),
    ))
}

/// One `hw_counters` sample, whichever way it was read: unit from [`hw_counter_unit`],
/// width unknown.
pub(crate) fn hw_sample(
    object: impl Into<String>,
    name: impl Into<Cow<'static, str>>,
    raw: u64,
) -> Sample {
    let name = name.into();
    let unit = hw_counter_unit(&name);
    Sample::cumulative(Source::RdmaHw, object, name, raw, unit).with_width(0)
}

/// Device-wide driver counters (`<dev>/hw_counters/`: older mlx5 kernels in switchdev
/// mode expose Q counters only there), object `rdmaDevices/{ibdev}`.
pub fn read_device_hw_counters(root: &SysRoot, ibdev: &str) -> Result<Vec<Sample>, ProbeError> {
    device_dir(root, ibdev)?;
    let mut dirs = ObjectDirs::device(root, ibdev)?;
    dirs.prepare(false)?;
    dirs.read_all();
    parse_device_hw_counters(root, ibdev, &dirs, &mut SpareStrings::default())
}

/// [`read_device_hw_counters`]' samples from a sampler's prepared and read directories.
pub(crate) fn parse_device_hw_counters(
    root: &SysRoot,
    ibdev: &str,
    dirs: &ObjectDirs,
    spare: &mut SpareStrings,
) -> Result<Vec<Sample>, ProbeError> {
    let mut samples = Vec::new();
    if !parse_hw_into(&dirs.hw, &device_object(ibdev), &mut samples, spare)? {
        device_dir(root, ibdev)?;
    }
    Ok(samples)
}

/// The ports of a device, by number; non-numeric entries are ignored.
pub fn list_ports(root: &SysRoot, ibdev: &str) -> Result<Vec<u32>, ProbeError> {
    let mut ports: Vec<u32> = list_dir(&device_dir(root, ibdev)?.join("ports"))?
        .iter()
        .filter_map(|p| p.parse().ok())
        .collect();
    ports.sort_unstable();
    Ok(ports)
}

/// The counters of one object, or why they could not be read: one entry per object so a
/// snapshot records a failing port as an error and keeps the others.
#[derive(Debug)]
pub struct ObjectCounters {
    /// `rdmaDevices/{ibdev}` or `rdmaDevices/{ibdev}/ports/{port}`.
    pub object: String,
    /// The samples, or the error naming the file.
    pub result: Result<Vec<Sample>, ProbeError>,
}

/// Every device's device-wide counters and every port's counters. Fails only when the
/// device list itself cannot be read; an absent `/sys/class/infiniband` means none.
pub fn read_all_counters(root: &SysRoot) -> Result<Vec<ObjectCounters>, ProbeError> {
    let mut out = Vec::new();
    for ibdev in list_dir(&root.sys("class/infiniband"))? {
        read_device_counters_into(root, &ibdev, &mut out);
    }
    Ok(out)
}

/// One device's device-wide counters and every port's counters, as [`read_all_counters`]
/// does for all devices. Device-wide counters appear only when the directory exists.
pub fn read_device_counters(
    root: &SysRoot,
    ibdev: &str,
) -> Result<Vec<ObjectCounters>, ProbeError> {
    device_dir(root, ibdev)?;
    let mut out = Vec::new();
    read_device_counters_into(root, ibdev, &mut out);
    Ok(out)
}

fn read_device_counters_into(root: &SysRoot, ibdev: &str, out: &mut Vec<ObjectCounters>) {
    let device_hw = root.sys("class/infiniband").join(ibdev).join("hw_counters");
    if crate::root::is_dir(&device_hw) {
        out.push(ObjectCounters {
            object: device_object(ibdev),
            result: read_device_hw_counters(root, ibdev),
        });
    }
    match list_ports(root, ibdev) {
        Ok(ports) => out.extend(ports.into_iter().map(|port| ObjectCounters {
            object: port_object(ibdev, port),
            result: read_port_counters(root, ibdev, port),
        })),
        Err(e) => out.push(ObjectCounters {
            object: device_object(ibdev),
            result: Err(e),
        }),
    }
}

/// Where a device's directory is, for a name that stays one path component; nothing is
/// checked on disk.
fn device_path(root: &SysRoot, ibdev: &str) -> Result<std::path::PathBuf, ProbeError> {
    if is_plain_name(ibdev) {
        Ok(root.sys("class/infiniband").join(ibdev))
    } else {
        Err(ProbeError::NotFound {
            what: "RDMA device",
            name: ibdev.to_owned(),
            root: root.sys("class/infiniband"),
        })
    }
}

/// Where a port's directory is; see [`device_path`].
fn port_path(root: &SysRoot, ibdev: &str, port: u32) -> Result<std::path::PathBuf, ProbeError> {
    Ok(device_path(root, ibdev)?
        .join("ports")
        .join(port.to_string()))
}

fn device_dir(root: &SysRoot, ibdev: &str) -> Result<std::path::PathBuf, ProbeError> {
    let dir = device_path(root, ibdev)?;
    if crate::root::is_dir(&dir) {
        Ok(dir)
    } else {
        Err(ProbeError::NotFound {
            what: "RDMA device",
            name: ibdev.to_owned(),
            root: root.sys("class/infiniband"),
        })
    }
}

fn port_dir(root: &SysRoot, ibdev: &str, port: u32) -> Result<std::path::PathBuf, ProbeError> {
    let dir = device_dir(root, ibdev)?
        .join("ports")
        .join(port.to_string());
    if crate::root::is_dir(&dir) {
        Ok(dir)
    } else {
        Err(ProbeError::NotFound {
            what: "RDMA port",
            name: format!("{ibdev}/{port}"),
            root: root.sys("class/infiniband"),
        })
    }
}

/// A name that stays one path component.
fn is_plain_name(name: &str) -> bool {
    !name.is_empty() && name != "." && name != ".." && !name.contains('/')
}

/// Parses a read `hw_counters/` directory into `out`; `false` when there is none.
fn parse_hw_into(
    dir: &KeptDir,
    object: &str,
    out: &mut Vec<Sample>,
    spare: &mut SpareStrings,
) -> Result<bool, ProbeError> {
    if !dir.is_listed() {
        return Ok(false);
    }
    out.reserve(dir.len());
    for index in 0..dir.len() {
        // `lifespan` is the cache period of these counters (ms), a setting, not a count.
        if dir.name(index) == "lifespan" {
            continue;
        }
        if let Some(raw) = parse_counter(dir, index)? {
            out.push(hw_sample(
                spare.string(object),
                dir.counter_name(index),
                raw,
            ));
        }
    }
    Ok(true)
}

/// One decimal counter from the last read. `None` when the counter is not available: the
/// read failed with EINVAL/EOPNOTSUPP/ENODATA (the driver declines), the file vanished
/// since the listing, or the PMA is absent (`N/A (no PMA)`, mlx4 VFs). Other read errors
/// and malformed values name the file.
fn parse_counter(dir: &KeptDir, index: usize) -> Result<Option<u64>, ProbeError> {
    let path = |dir: &KeptDir| dir.file_path(dir.name(index));
    let value = match dir.text(index) {
        Ok(text) => text,
        Err(e) if is_unavailable(&e) => return Ok(None),
        Err(e) => return Err(ProbeError::read(path(dir), e)),
    };
    if value.starts_with("N/A") {
        return Ok(None);
    }
    value.parse().map(Some).map_err(|_| ProbeError::Format {
        path: path(dir),
        detail: format!(
            "expected a decimal counter, got {:?}",
            value.chars().take(40).collect::<String>()
        ),
    })
}

/// Whether a read error means "this attribute has no value here" rather than a fault:
/// the kernel answers EINVAL for empty GID attributes and EOPNOTSUPP/ENODATA for counters
/// a device does not support; NotFound covers a file removed since the listing.
pub(crate) fn is_unavailable(e: &io::Error) -> bool {
    e.kind() == io::ErrorKind::NotFound
        || matches!(
            e.raw_os_error().map(Errno::from_raw),
            Some(Errno::EINVAL | Errno::EOPNOTSUPP | Errno::ENODATA)
        )
}

#[cfg(test)]
mod tests;
