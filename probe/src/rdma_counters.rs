//! RDMA port counters as snapshot [`Sample`]s: the IB PMA `ports/N/counters/` and the
//! driver's `ports/N/hw_counters/` (and `<dev>/hw_counters/`), with units and widths from
//! `shared/reference/rdma-bluefield.md` §1.1–1.3.
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
//! (one request per port, [`crate::rdma_netlink`]), giving the same samples built by
//! `hw_sample`; the PMA `counters/` and device-wide `hw_counters/` are always read here.

use std::io;
use std::path::Path;

use nix::errno::Errno;

use crate::counter_file::{self, CounterDir, FileCache};
use crate::root::list_dir;
use crate::snapshot::{Sample, Source, Unit};
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

/// The IB PMA counters of one port. A port without `counters/` (non-mlx5 providers,
/// soft-RoCE) gives an empty list, not an error.
pub fn read_pma_counters(
    root: &SysRoot,
    ibdev: &str,
    port: u32,
) -> Result<Vec<Sample>, ProbeError> {
    read_pma_counters_cached(root, ibdev, port, &mut FileCache::default())
}

fn read_pma_counters_cached(
    root: &SysRoot,
    ibdev: &str,
    port: u32,
    cache: &mut FileCache,
) -> Result<Vec<Sample>, ProbeError> {
    let Some(dir) = CounterDir::open(port_dir(root, ibdev, port)?.join("counters"))? else {
        return Ok(Vec::new());
    };
    let names = dir.files()?;
    let extended = names
        .iter()
        .any(|n| n.starts_with("unicast_") || n.starts_with("multicast_"));
    let object = port_object(ibdev, port);
    let mut samples = Vec::with_capacity(names.len());
    for name in &names {
        let Some(raw) = read_counter(&dir, name, cache)? else {
            continue;
        };
        let unit = pma_counter_unit(name);
        let is_data = matches!(name.as_str(), "port_xmit_data" | "port_rcv_data");
        let width = if extended && (is_data || unit == Unit::Packets) {
            64
        } else {
            0
        };
        let sample =
            Sample::cumulative(Source::Rdma, &object, name.clone(), raw, unit).with_width(width);
        samples.push(if is_data { sample.scaled(4) } else { sample });
    }
    Ok(samples)
}

/// The driver counters of one port. A missing `hw_counters/` is normal (some devices and
/// firmware have none) and gives an empty list.
pub fn read_hw_counters(root: &SysRoot, ibdev: &str, port: u32) -> Result<Vec<Sample>, ProbeError> {
    let dir = port_dir(root, ibdev, port)?.join("hw_counters");
    read_hw_dir(&dir, &port_object(ibdev, port), &mut FileCache::default())
}

/// Both families of one port, PMA first.
pub fn read_port_counters(
    root: &SysRoot,
    ibdev: &str,
    port: u32,
) -> Result<Vec<Sample>, ProbeError> {
    read_port_counters_cached(root, ibdev, port, &mut FileCache::default(), None)
}

/// [`read_port_counters`] through a sampler's open-file cache; `hw` is the port's
/// `hw_counters` family when it was already read (over RDMA netlink), so only the PMA
/// files are read here.
pub(crate) fn read_port_counters_cached(
    root: &SysRoot,
    ibdev: &str,
    port: u32,
    cache: &mut FileCache,
    hw: Option<Vec<Sample>>,
) -> Result<Vec<Sample>, ProbeError> {
    let mut samples = read_pma_counters_cached(root, ibdev, port, cache)?;
    match hw {
        Some(hw) => samples.extend(hw),
        None => {
            let dir = port_dir(root, ibdev, port)?.join("hw_counters");
            samples.extend(read_hw_dir(&dir, &port_object(ibdev, port), cache)?);
        }
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
    let Some(dir) = CounterDir::open(port_dir(root, ibdev, port)?.join("hw_counters"))? else {
        return Ok(None);
    };
    let mut names = dir.files()?;
    names.retain(|name| name != "lifespan");
    Ok(Some(names))
}

/// One `hw_counters` sample, whichever way it was read: unit from [`hw_counter_unit`],
/// width unknown.
pub(crate) fn hw_sample(object: &str, name: String, raw: u64) -> Sample {
    let unit = hw_counter_unit(&name);
    Sample::cumulative(Source::RdmaHw, object, name, raw, unit).with_width(0)
}

/// Device-wide driver counters (`<dev>/hw_counters/`: older mlx5 kernels in switchdev
/// mode expose Q counters only there), object `rdmaDevices/{ibdev}`.
pub fn read_device_hw_counters(root: &SysRoot, ibdev: &str) -> Result<Vec<Sample>, ProbeError> {
    read_device_hw_counters_cached(root, ibdev, &mut FileCache::default())
}

/// [`read_device_hw_counters`] through a sampler's open-file cache.
pub(crate) fn read_device_hw_counters_cached(
    root: &SysRoot,
    ibdev: &str,
    cache: &mut FileCache,
) -> Result<Vec<Sample>, ProbeError> {
    let dir = device_dir(root, ibdev)?.join("hw_counters");
    read_hw_dir(&dir, &device_object(ibdev), cache)
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
    if device_hw.is_dir() {
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

fn device_dir(root: &SysRoot, ibdev: &str) -> Result<std::path::PathBuf, ProbeError> {
    let dir = root.sys("class/infiniband").join(ibdev);
    if is_plain_name(ibdev) && dir.is_dir() {
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
    if dir.is_dir() {
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

fn read_hw_dir(dir: &Path, object: &str, cache: &mut FileCache) -> Result<Vec<Sample>, ProbeError> {
    let Some(dir) = CounterDir::open(dir.to_owned())? else {
        return Ok(Vec::new());
    };
    let names = dir.files()?;
    let mut samples = Vec::with_capacity(names.len());
    for name in names {
        // `lifespan` is the cache period of these counters (ms), a setting, not a count.
        if name == "lifespan" {
            continue;
        }
        if let Some(raw) = read_counter(&dir, &name, cache)? {
            samples.push(hw_sample(object, name, raw));
        }
    }
    Ok(samples)
}

/// Reads one decimal counter. `None` when the counter is not available: the read fails
/// with EINVAL/EOPNOTSUPP/ENODATA (the driver declines), the file vanished since the
/// listing, or the PMA is absent (`N/A (no PMA)`, mlx4 VFs). Other read errors and
/// malformed values name the file.
fn read_counter(
    dir: &CounterDir,
    name: &str,
    cache: &mut FileCache,
) -> Result<Option<u64>, ProbeError> {
    let mut buf = counter_file::buffer();
    let value = match cache.read(dir, name, &mut buf) {
        Ok(text) => text,
        Err(e) if is_unavailable(&e) => return Ok(None),
        Err(e) => return Err(ProbeError::read(dir.file_path(name), e)),
    };
    if value.starts_with("N/A") {
        return Ok(None);
    }
    value.parse().map(Some).map_err(|_| ProbeError::Format {
        path: dir.file_path(name),
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
