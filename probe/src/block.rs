//! Block device I/O statistics from `/sys/block/*/stat` (format:
//! `docs/reference/storage.md` §4.3; kernel `Documentation/block/stat.rst` and
//! `block/genhd.c` `part_stat_show`).
//!
//! On the host these are the proof that reads of a SNAP-emulated namespace happened:
//! their byte deltas must match the DPU's bdev deltas.
//!
//! Sample names (object `blockDevices/{name}`), in file order:
//!
//! | field | counter | unit | width |
//! |---|---|---|---|
//! | 1–4 | `read_ios`, `read_merges`, `read_bytes` (sectors × 512), `read_ticks` | Operations, Operations, Bytes, Milliseconds | 64, 64, 64, 32 |
//! | 5–8 | `write_ios`, `write_merges`, `write_bytes`, `write_ticks` | same | same |
//! | 9 | `in_flight` (gauge) | Operations | – |
//! | 10–11 | `io_ticks`, `time_in_queue` | Milliseconds | 32 |
//! | 12–15 (4.18+) | `discard_ios`, `discard_merges`, `discard_bytes`, `discard_ticks` | as reads | as reads |
//! | 16–17 (5.5+) | `flush_ios`, `flush_ticks` | Operations, Milliseconds | 64, 32 |
//!
//! Sectors are always 512 bytes whatever the LBA size, so `*_bytes` = sectors × 512
//! (`.scaled(512)`). The kernel prints the millisecond fields as `unsigned int` (they wrap
//! at 2^32 ms, about 49.7 days) and the counts as `unsigned long` (64-bit on the 64-bit
//! machines this runs on).

use std::path::Path;

use crate::root::{list_dir, read_attr};
use crate::snapshot::{Sample, Source, Unit};
use crate::{ProbeError, SysRoot};

/// One `stat` file, parsed. Discard and flush fields are optional because older kernels
/// print 11 or 15 fields.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct BlockStat {
    /// Reads completed.
    pub read_ios: u64,
    /// Adjacent reads merged.
    pub read_merges: u64,
    /// 512-byte sectors read.
    pub read_sectors: u64,
    /// Milliseconds spent reading.
    pub read_ticks: u64,
    /// Writes completed.
    pub write_ios: u64,
    /// Adjacent writes merged.
    pub write_merges: u64,
    /// 512-byte sectors written.
    pub write_sectors: u64,
    /// Milliseconds spent writing.
    pub write_ticks: u64,
    /// Requests in flight now (a level, not a count).
    pub in_flight: u64,
    /// Milliseconds the device had I/O in flight.
    pub io_ticks: u64,
    /// Weighted milliseconds of I/O (sum of per-request times).
    pub time_in_queue: u64,
    /// Discard fields, kernel 4.18+.
    pub discard: Option<DiscardStat>,
    /// Flush fields, kernel 5.5+.
    pub flush: Option<FlushStat>,
}

/// Discard statistics (fields 12–15).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct DiscardStat {
    /// Discards completed.
    pub ios: u64,
    /// Discards merged.
    pub merges: u64,
    /// 512-byte sectors discarded.
    pub sectors: u64,
    /// Milliseconds spent discarding.
    pub ticks: u64,
}

/// Flush statistics (fields 16–17).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct FlushStat {
    /// Flushes completed.
    pub ios: u64,
    /// Milliseconds spent flushing.
    pub ticks: u64,
}

/// Bytes per `stat` sector, fixed by the kernel regardless of the device's LBA size.
pub const SECTOR_BYTES: u32 = 512;

/// Parses the content of a `stat` file; `path` only names the file in errors. Accepts 11,
/// 15 or 17 fields, and more (fields a newer kernel appends are ignored, as `iostat`
/// does); anything else is a format error.
pub fn parse_block_stat(text: &str, path: &Path) -> Result<BlockStat, ProbeError> {
    let format_error = |detail: String| ProbeError::Format {
        path: path.to_owned(),
        detail,
    };
    let fields = text
        .split_whitespace()
        .enumerate()
        .map(|(i, field)| {
            field
                .parse::<u64>()
                .map_err(|_| format_error(format!("field {} is not a number: {field:?}", i + 1)))
        })
        .collect::<Result<Vec<u64>, ProbeError>>()?;
    let n = fields.len();
    if !(n == 11 || n == 15 || n >= 17) {
        return Err(format_error(format!(
            "expected 11, 15 or 17 fields, found {n}"
        )));
    }
    let f = |i: usize| fields[i];
    Ok(BlockStat {
        read_ios: f(0),
        read_merges: f(1),
        read_sectors: f(2),
        read_ticks: f(3),
        write_ios: f(4),
        write_merges: f(5),
        write_sectors: f(6),
        write_ticks: f(7),
        in_flight: f(8),
        io_ticks: f(9),
        time_in_queue: f(10),
        discard: (n >= 15).then(|| DiscardStat {
            ios: f(11),
            merges: f(12),
            sectors: f(13),
            ticks: f(14),
        }),
        flush: (n >= 17).then(|| FlushStat {
            ios: f(15),
            ticks: f(16),
        }),
    })
}

/// The object name of a block device in snapshots: `blockDevices/{name}`.
pub fn block_object(name: &str) -> String {
    format!("blockDevices/{name}")
}

/// Turns a parsed `stat` into samples named as in the module table.
pub fn block_stat_samples(name: &str, stat: &BlockStat) -> Vec<Sample> {
    let object = block_object(name);
    let count = |counter: &'static str, value: u64| {
        Sample::cumulative(Source::Block, &object, counter, value, Unit::Operations)
    };
    let bytes = |counter: &'static str, sectors: u64| {
        Sample::cumulative(Source::Block, &object, counter, sectors, Unit::Bytes)
            .scaled(SECTOR_BYTES)
    };
    let ms = |counter: &'static str, value: u64| {
        Sample::cumulative(Source::Block, &object, counter, value, Unit::Milliseconds)
            .with_width(32)
    };
    let mut samples = vec![
        count("read_ios", stat.read_ios),
        count("read_merges", stat.read_merges),
        bytes("read_bytes", stat.read_sectors),
        ms("read_ticks", stat.read_ticks),
        count("write_ios", stat.write_ios),
        count("write_merges", stat.write_merges),
        bytes("write_bytes", stat.write_sectors),
        ms("write_ticks", stat.write_ticks),
        Sample::gauge(
            Source::Block,
            &object,
            "in_flight",
            stat.in_flight,
            Unit::Operations,
        ),
        ms("io_ticks", stat.io_ticks),
        ms("time_in_queue", stat.time_in_queue),
    ];
    if let Some(d) = stat.discard {
        samples.extend([
            count("discard_ios", d.ios),
            count("discard_merges", d.merges),
            bytes("discard_bytes", d.sectors),
            ms("discard_ticks", d.ticks),
        ]);
    }
    if let Some(fl) = stat.flush {
        samples.extend([count("flush_ios", fl.ios), ms("flush_ticks", fl.ticks)]);
    }
    samples
}

/// Reads `/sys/block/{name}/stat`; [`ProbeError::NotFound`] when the device does not
/// exist.
pub fn read_block_stat(root: &SysRoot, name: &str) -> Result<BlockStat, ProbeError> {
    let dir = root.sys("block").join(name);
    if name.is_empty() || name.contains('/') || name.starts_with('.') || !crate::root::is_dir(&dir)
    {
        return Err(ProbeError::NotFound {
            what: "block device",
            name: name.to_owned(),
            root: root.sys("block"),
        });
    }
    let path = dir.join("stat");
    parse_block_stat(&read_attr(&path)?, &path)
}

/// Reads one device's statistics as samples.
pub fn read_block_samples(root: &SysRoot, name: &str) -> Result<Vec<Sample>, ProbeError> {
    Ok(block_stat_samples(name, &read_block_stat(root, name)?))
}

/// Every block device in `/sys/block` (whole disks: partitions live below their disk),
/// sorted; an absent directory means none.
pub fn list_block_devices(root: &SysRoot) -> Result<Vec<String>, ProbeError> {
    list_dir(&root.sys("block"))
}

/// Whether a name is an NVMe namespace head, `nvme<X>n<Y>`. Excluded: partitions
/// (`nvme0n1p1`) and the hidden per-path devices of native multipath (`nvme0c1n1`),
/// because with multipath the kernel accounts I/O on the head node too, and summing both
/// would count every byte twice.
pub fn is_nvme_namespace(name: &str) -> bool {
    let Some(rest) = name.strip_prefix("nvme") else {
        return false;
    };
    let Some((controller, namespace)) = rest.split_once('n') else {
        return false;
    };
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    digits(controller) && digits(namespace)
}

/// Whether `name` is an NVMe native-multipath path disk (`nvme<S>c<C>n<H>`): hidden, it
/// carries its head's identifiers but I/O goes to the head.
pub fn is_multipath_path_disk(name: &str) -> bool {
    let Some(rest) = name.strip_prefix("nvme") else {
        return false;
    };
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    match rest.split_once('c') {
        Some((subsys, tail)) => match tail.split_once('n') {
            Some((ctrl, ns)) => digits(subsys) && digits(ctrl) && digits(ns),
            None => false,
        },
        None => false,
    }
}

/// The NVMe namespace heads among the block devices: what a storage proof reads on the
/// host.
pub fn list_nvme_namespaces(root: &SysRoot) -> Result<Vec<String>, ProbeError> {
    Ok(list_block_devices(root)?
        .into_iter()
        .filter(|name| is_nvme_namespace(name))
        .collect())
}

#[cfg(test)]
mod tests;
