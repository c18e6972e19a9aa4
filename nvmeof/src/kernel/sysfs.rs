//! Host-side sysfs views: fabrics controllers under `/sys/class/nvme/`, their namespaces,
//! and per-disk I/O counters from `/sys/block/<disk>/stat`.
//!
//! Namespace discovery reads the controller's own directory,
//! `/sys/class/nvme/nvme<N>/`, because both kernel layouts put something there:
//! - without native multipath the namespace disk `nvme<N>n<H>` is a child of the
//!   controller device, so it is listed there under its own name;
//! - with native multipath (`CONFIG_NVME_MULTIPATH`, the default in most distributions)
//!   the controller lists the hidden per-path disk `nvme<S>c<N>n<H>` and the disk users
//!   see, the head `nvme<S>n<H>`, lives under the subsystem; `S` is the subsystem
//!   instance and `H` the head instance in both names (`nvme_mpath_set_disk_name`), so
//!   the head name is derived by dropping `c<N>`.
//!
//! Either way the namespace is reported under its head disk name, and its attributes are
//! read from `/sys/block/<head>/` (where I/O is accounted, storage.md §4.3), falling back
//! to the entry in the controller directory if the head is not in `/sys/block`. The NSID
//! comes from the disk's `nsid` attribute; only if that is absent is it taken from the
//! `n<H>` suffix, which is the head instance and usually, not always, the NSID.

use std::path::{Path, PathBuf};

use dpu_probe::block::{parse_block_stat, BlockStat, SECTOR_BYTES};

use super::configfs::{list_names, present, read_attr, read_optional};
use super::KernelError;

/// A fabrics controller as sysfs shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FabricsController {
    /// The controller device, `nvme<N>`.
    pub device: String,
    /// `transport` (`tcp`, `rdma`, `loop`, `fc`).
    pub transport: String,
    /// `traddr` from `address`.
    pub traddr: Option<String>,
    /// `trsvcid` from `address`.
    pub trsvcid: Option<String>,
    /// The local address: `host_traddr` (RDMA) or `src_addr` (TCP) from `address`.
    pub host_traddr: Option<String>,
    /// `subsysnqn`.
    pub subsysnqn: String,
    /// `hostnqn`, if the kernel has the attribute.
    pub hostnqn: Option<String>,
    /// `state`: `live`, `connecting`, `resetting`, `deleting`, `dead`, ...
    pub state: String,
    /// `cntlid`, if readable.
    pub cntlid: Option<u32>,
    /// Namespaces reachable through this controller.
    pub namespaces: Vec<KernelNamespace>,
}

/// A namespace as the host's block layer sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KernelNamespace {
    /// The head disk name, `nvme<S>n<H>`: where I/O is accounted.
    pub disk: String,
    /// The NSID.
    pub nsid: u32,
    /// `size` × 512.
    pub size_bytes: u64,
    /// `queue/logical_block_size`.
    pub logical_block_size: u32,
    /// `uuid`, present only when the namespace reports one.
    pub uuid: Option<String>,
    /// `wwid`.
    pub wwid: Option<String>,
}

/// Cumulative I/O counters of one disk, in bytes (sectors × 512), so the CLI can compare
/// them with the DPU's bdev byte counters.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DiskIoStats {
    /// The disks whose `stat` was read: the disk itself, or, for an NVMe multipath head
    /// whose own accounting is off (`queue/iostats` = 0, the kernel's default for heads),
    /// its path devices `nvme<S>c<C>n<H>`, summed.
    pub counted_on: Vec<String>,
    /// Reads completed.
    pub read_ios: u64,
    /// Bytes read.
    pub read_bytes: u64,
    /// Writes completed.
    pub write_ios: u64,
    /// Bytes written.
    pub write_bytes: u64,
    /// Everything `stat` reports, as parsed.
    pub raw: BlockStat,
}

/// Parses a controller's `address`, `key=value` pairs separated by commas (TCP appends
/// `,src_addr=` after stripping `nvmf_get_address`'s newline; a newline is accepted as
/// a separator too in case a kernel does not strip it).
pub(crate) fn parse_address(address: &str) -> Vec<(&str, &str)> {
    address
        .trim()
        .split([',', '\n'])
        .filter_map(|kv| kv.split_once('='))
        .map(|(k, v)| (k.trim(), v.trim()))
        .collect()
}

pub(crate) fn controllers(sys: &Path) -> Result<Vec<FabricsController>, KernelError> {
    let class = sys.join("class/nvme");
    let mut out = Vec::new();
    for name in list_names(&class)? {
        if !is_numbered(name.strip_prefix("nvme")) {
            continue;
        }
        if let Some(ctrl) = read_controller(sys, &class.join(&name), name)? {
            out.push(ctrl);
        }
    }
    out.sort_by_key(|c| {
        c.device
            .strip_prefix("nvme")
            .and_then(|n| n.parse::<u32>().ok())
    });
    Ok(out)
}

fn is_numbered(s: Option<&str>) -> bool {
    s.is_some_and(|s| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()))
}

/// `None` for PCIe controllers and for one that vanished while being read.
fn read_controller(
    sys: &Path,
    dir: &Path,
    device: String,
) -> Result<Option<FabricsController>, KernelError> {
    let Some(transport) = read_optional(&dir.join("transport"))? else {
        return Ok(None);
    };
    if transport == "pcie" {
        return Ok(None);
    }
    let address = read_optional(&dir.join("address"))?.unwrap_or_default();
    let pairs = parse_address(&address);
    let get = |key: &str| {
        pairs
            .iter()
            .find(|(k, _)| *k == key)
            .map(|(_, v)| (*v).to_owned())
    };
    Ok(Some(FabricsController {
        traddr: get("traddr"),
        trsvcid: get("trsvcid"),
        host_traddr: get("host_traddr").or_else(|| get("src_addr")),
        subsysnqn: read_optional(&dir.join("subsysnqn"))?.unwrap_or_default(),
        hostnqn: read_optional(&dir.join("hostnqn"))?,
        state: read_optional(&dir.join("state"))?.unwrap_or_default(),
        cntlid: read_optional(&dir.join("cntlid"))?.and_then(|c| c.parse().ok()),
        namespaces: namespaces(sys, dir)?,
        transport,
        device,
    }))
}

/// Splits `nvme<A>n<B>` or `nvme<A>c<C>n<B>` into the head name `nvme<A>n<B>` and `B`.
fn head_disk(name: &str) -> Option<(String, u32)> {
    let rest = name.strip_prefix("nvme")?;
    let (front, ns) = rest.split_once('n')?;
    let subsys = match front.split_once('c') {
        Some((subsys, ctrl)) if is_numbered(Some(ctrl)) => subsys,
        Some(_) => return None,
        None => front,
    };
    if !is_numbered(Some(subsys)) || !is_numbered(Some(ns)) {
        return None;
    }
    Some((format!("nvme{subsys}n{ns}"), ns.parse().ok()?))
}

fn namespaces(sys: &Path, ctrl_dir: &Path) -> Result<Vec<KernelNamespace>, KernelError> {
    let mut out: Vec<KernelNamespace> = Vec::new();
    for entry in list_names(ctrl_dir)? {
        let Some((disk, suffix)) = head_disk(&entry) else {
            continue;
        };
        if out.iter().any(|n| n.disk == disk) {
            continue;
        }
        let head = sys.join("block").join(&disk);
        let dir = if present(&head) {
            head
        } else {
            ctrl_dir.join(&entry)
        };
        out.push(read_namespace(&dir, disk, suffix)?);
    }
    out.sort_by(|a, b| a.disk.cmp(&b.disk));
    Ok(out)
}

fn number<T: std::str::FromStr>(path: PathBuf, text: &str) -> Result<T, KernelError> {
    text.trim().parse().map_err(|_| KernelError::Format {
        path,
        detail: format!("expected a number, got {text:?}"),
    })
}

fn read_namespace(dir: &Path, disk: String, suffix: u32) -> Result<KernelNamespace, KernelError> {
    let nsid = match read_optional(&dir.join("nsid"))? {
        Some(text) => number(dir.join("nsid"), &text)?,
        None => suffix,
    };
    let size_path = dir.join("size");
    let sectors: u64 = number(size_path.clone(), &read_attr(&size_path)?)?;
    let lbs_path = dir.join("queue/logical_block_size");
    Ok(KernelNamespace {
        nsid,
        size_bytes: sectors.saturating_mul(u64::from(SECTOR_BYTES)),
        logical_block_size: number(lbs_path.clone(), &read_attr(&lbs_path)?)?,
        uuid: read_optional(&dir.join("uuid"))?,
        wwid: read_optional(&dir.join("wwid"))?,
        disk,
    })
}

pub(crate) fn io_stats(sys: &Path, disk: &str) -> Result<DiskIoStats, KernelError> {
    if disk.is_empty() || disk.contains(['/', '\0']) || disk.starts_with('.') {
        return Err(KernelError::invalid(
            "disk",
            disk,
            "must be a block device name",
        ));
    }
    let dir = sys.join("block").join(disk);
    if !present(&dir) {
        return Err(KernelError::NotFound {
            what: "block device",
            path: dir,
        });
    }
    let counted_on = match multipath_paths(sys, disk, &dir) {
        Some(paths) => paths,
        None => vec![disk.to_owned()],
    };
    let mut raw: Option<BlockStat> = None;
    for name in &counted_on {
        let stat = read_stat(&sys.join("block").join(name).join("stat"))?;
        raw = Some(match raw {
            None => stat,
            Some(sum) => add_stats(&sum, &stat),
        });
    }
    let raw = raw.unwrap_or_default();
    let bytes = |sectors: u64| sectors.saturating_mul(u64::from(SECTOR_BYTES));
    Ok(DiskIoStats {
        counted_on,
        read_ios: raw.read_ios,
        read_bytes: bytes(raw.read_sectors),
        write_ios: raw.write_ios,
        write_bytes: bytes(raw.write_sectors),
        raw,
    })
}

fn read_stat(path: &Path) -> Result<BlockStat, KernelError> {
    let text = std::fs::read_to_string(path).map_err(|e| KernelError::io("read", path, e))?;
    parse_block_stat(&text, path).map_err(|e| KernelError::Format {
        path: path.to_path_buf(),
        detail: e.to_string(),
    })
}

/// The path devices of NVMe multipath head `disk` (`nvme<S>n<H>` → `nvme<S>c<C>n<H>`), when
/// the head does not account I/O itself; `None` to read the disk's own `stat`.
fn multipath_paths(sys: &Path, disk: &str, dir: &Path) -> Option<Vec<String>> {
    let iostats = std::fs::read_to_string(dir.join("queue/iostats")).ok()?;
    if iostats.trim() != "0" {
        return None;
    }
    let rest = disk.strip_prefix("nvme")?;
    let (subsys, head) = rest.split_once('n')?;
    if !is_numbered(Some(subsys)) || !is_numbered(Some(head)) {
        return None;
    }
    let prefix = format!("nvme{subsys}c");
    let mut paths: Vec<String> = std::fs::read_dir(sys.join("block"))
        .ok()?
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|name| {
            name.strip_prefix(&prefix)
                .and_then(|r| r.split_once('n'))
                .is_some_and(|(ctrl, h)| is_numbered(Some(ctrl)) && h == head)
        })
        .collect();
    paths.sort();
    (!paths.is_empty()).then_some(paths)
}

fn add_stats(a: &BlockStat, b: &BlockStat) -> BlockStat {
    let sum = |x: u64, y: u64| x.saturating_add(y);
    BlockStat {
        read_ios: sum(a.read_ios, b.read_ios),
        read_merges: sum(a.read_merges, b.read_merges),
        read_sectors: sum(a.read_sectors, b.read_sectors),
        read_ticks: sum(a.read_ticks, b.read_ticks),
        write_ios: sum(a.write_ios, b.write_ios),
        write_merges: sum(a.write_merges, b.write_merges),
        write_sectors: sum(a.write_sectors, b.write_sectors),
        write_ticks: sum(a.write_ticks, b.write_ticks),
        in_flight: sum(a.in_flight, b.in_flight),
        io_ticks: sum(a.io_ticks, b.io_ticks),
        time_in_queue: sum(a.time_in_queue, b.time_in_queue),
        discard: match (a.discard, b.discard) {
            (Some(x), Some(y)) => Some(dpu_probe::block::DiscardStat {
                ios: sum(x.ios, y.ios),
                merges: sum(x.merges, y.merges),
                sectors: sum(x.sectors, y.sectors),
                ticks: sum(x.ticks, y.ticks),
            }),
            (x, y) => x.or(y),
        },
        flush: match (a.flush, b.flush) {
            (Some(x), Some(y)) => Some(dpu_probe::block::FlushStat {
                ios: sum(x.ios, y.ios),
                ticks: sum(x.ticks, y.ticks),
            }),
            (x, y) => x.or(y),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn head_names_from_both_layouts() {
        assert_eq!(head_disk("nvme3n1"), Some(("nvme3n1".to_owned(), 1)));
        assert_eq!(head_disk("nvme0c3n2"), Some(("nvme0n2".to_owned(), 2)));
        for not_a_disk in ["ng3n1", "nvme3", "nvme3n1p1", "nvme0cXn1", "nvme", "hwmon0"] {
            assert_eq!(head_disk(not_a_disk), None, "{not_a_disk}");
        }
    }

    #[test]
    fn address_pairs() {
        assert_eq!(
            parse_address("traddr=10.0.0.2,trsvcid=4420,src_addr=10.0.0.1\n"),
            vec![
                ("traddr", "10.0.0.2"),
                ("trsvcid", "4420"),
                ("src_addr", "10.0.0.1")
            ]
        );
        assert!(parse_address("").is_empty());
    }
}
