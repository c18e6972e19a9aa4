//! perftest (`ib_{send,write,read}_{bw,lat}`) text output: the test-info header block and
//! the result table. Columns are found by their header names, not positions, because
//! perftest versions differ (older ones lack `t_avg`/`t_stdev` or the percentiles, `-D`
//! prints `t_avg` and `tps average` only, `--cpu_util` and per-port modes add columns).

use super::{finite, ParseError};

/// The test-info block perftest prints before connecting; every field is optional because
/// the set of lines varies by version (reference §6 item 7).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PerftestHeader {
    /// The title line, e.g. `RDMA_Write BW Test`.
    pub test: Option<String>,
    /// `Device`, e.g. `mlx5_0`.
    pub device: Option<String>,
    /// `Transport type` (`IB` on RoCE too).
    pub transport: Option<String>,
    /// `Connection type` (`RC`, `UC`, `UD`, ...).
    pub connection: Option<String>,
    /// `GID index`; None when absent or not a number.
    pub gid_index: Option<u32>,
    /// `Mtu` in bytes (`1024[B]`); None when absent or not a number.
    pub mtu: Option<u32>,
    /// `Link type` (`Ethernet` means RoCE, `IB` InfiniBand).
    pub link_type: Option<String>,
}

/// The bandwidth unit of a BW table: `[MB/sec]`/`[MiB/sec]` (2^20 bytes, per perftest's
/// usage text) or `[Gb/sec]` with `--report_gbits` (10^9 bits).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BwUnit {
    /// MiB/s (printed `MB/sec` by older versions).
    MibPerSec,
    /// Gbit/s (`--report_gbits`).
    GbitPerSec,
}

impl BwUnit {
    /// Bytes per second in one unit, so callers can compare runs made with either flag.
    pub fn bytes_per_sec(self) -> f64 {
        match self {
            Self::MibPerSec => 1_048_576.0,
            Self::GbitPerSec => 1e9 / 8.0,
        }
    }
}

/// One row of a BW table. Values are in the table's unit.
#[derive(Debug, Clone, PartialEq)]
pub struct BwRow {
    /// `#bytes`: message size.
    pub bytes: u64,
    /// `#iterations`.
    pub iterations: u64,
    /// `BW peak`; absent in some modes, and meaningless (0) in duration mode.
    pub peak: Option<f64>,
    /// `BW average`.
    pub average: f64,
    /// `MsgRate[Mpps]`.
    pub msg_rate_mpps: Option<f64>,
}

/// One row of a latency table, in microseconds; absent columns are None.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LatRow {
    /// `#bytes`: message size.
    pub bytes: u64,
    /// `#iterations`.
    pub iterations: u64,
    /// `t_min[usec]`.
    pub t_min: Option<f64>,
    /// `t_max[usec]`.
    pub t_max: Option<f64>,
    /// `t_typical[usec]` (the median).
    pub t_typical: Option<f64>,
    /// `t_avg[usec]`.
    pub t_avg: Option<f64>,
    /// `t_stdev[usec]`.
    pub t_stdev: Option<f64>,
    /// `99% percentile[usec]`.
    pub p99: Option<f64>,
    /// `99.9% percentile[usec]`.
    pub p99_9: Option<f64>,
    /// `tps average` (duration mode).
    pub tps_average: Option<f64>,
}

/// The result table: bandwidth or latency.
#[derive(Debug, Clone, PartialEq)]
pub enum PerftestTable {
    /// From `ib_*_bw`.
    Bandwidth {
        /// The unit of `peak` and `average`.
        unit: BwUnit,
        /// One row per message size.
        rows: Vec<BwRow>,
    },
    /// From `ib_*_lat`.
    Latency {
        /// One row per message size.
        rows: Vec<LatRow>,
    },
}

/// A parsed perftest run.
#[derive(Debug, Clone, PartialEq)]
pub struct PerftestReport {
    /// The test-info block.
    pub header: PerftestHeader,
    /// The result table.
    pub table: PerftestTable,
}

/// A table column perftest prints; `Other` keeps unknown ones (`CPU_Util[%]`, per-port)
/// so rows still line up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Col {
    Bytes,
    Iterations,
    BwPeak(BwUnit),
    BwAverage(BwUnit),
    MsgRate,
    TMin,
    TMax,
    TTypical,
    TAvg,
    TStdev,
    P99,
    P999,
    Tps,
    Other,
}

/// Known column names, longest first where one is a prefix of another.
const NAMES: &[(&str, Col)] = &[
    ("#bytes", Col::Bytes),
    ("#iterations", Col::Iterations),
    ("BW peak[MB/sec]", Col::BwPeak(BwUnit::MibPerSec)),
    ("BW peak[MiB/sec]", Col::BwPeak(BwUnit::MibPerSec)),
    ("BW peak[Gb/sec]", Col::BwPeak(BwUnit::GbitPerSec)),
    ("BW average[MB/sec]", Col::BwAverage(BwUnit::MibPerSec)),
    ("BW average[MiB/sec]", Col::BwAverage(BwUnit::MibPerSec)),
    ("BW average[Gb/sec]", Col::BwAverage(BwUnit::GbitPerSec)),
    ("MsgRate[Mpps]", Col::MsgRate),
    ("t_min[usec]", Col::TMin),
    ("t_max[usec]", Col::TMax),
    ("t_typical[usec]", Col::TTypical),
    ("t_avg[usec]", Col::TAvg),
    ("t_stdev[usec]", Col::TStdev),
    ("99.9% percentile[usec]", Col::P999),
    ("99% percentile[usec]", Col::P99),
    ("tps average", Col::Tps),
];

/// Parses the whole stdout of one perftest run (either side).
pub fn parse(text: &str) -> Result<PerftestReport, ParseError> {
    let mut header = PerftestHeader::default();
    let mut lines = text.lines().enumerate();
    let cols = loop {
        let Some((i, line)) = lines.next() else {
            return Err(ParseError::whole(
                "no perftest result table (#bytes header)",
            ));
        };
        if line.trim_start().starts_with("#bytes") {
            break columns(i, line)?;
        }
        read_header_line(line, &mut header);
    };
    let bw_unit = cols.iter().find_map(|c| match c {
        Col::BwAverage(u) | Col::BwPeak(u) => Some(*u),
        _ => None,
    });
    let mut bw_rows = Vec::new();
    let mut lat_rows = Vec::new();
    for (i, line) in lines {
        let trimmed = line.trim();
        if trimmed.starts_with("---") {
            break;
        }
        if trimmed.is_empty() {
            continue;
        }
        let values: Vec<&str> = trimmed.split_whitespace().collect();
        if values.len() != cols.len() {
            let why = format!("{} values under {} columns", values.len(), cols.len());
            return Err(ParseError::at(i, line, why));
        }
        let mut lat = LatRow::default();
        let (mut peak, mut average, mut rate) = (None, None, None);
        for (col, value) in cols.iter().zip(&values) {
            let num = || finite(value).ok_or_else(|| ParseError::at(i, line, "not a number"));
            let int = || {
                value
                    .parse::<u64>()
                    .map_err(|_| ParseError::at(i, line, "not a count"))
            };
            match col {
                Col::Bytes => lat.bytes = int()?,
                Col::Iterations => lat.iterations = int()?,
                Col::BwPeak(_) => peak = Some(num()?),
                Col::BwAverage(_) => average = Some(num()?),
                Col::MsgRate => rate = Some(num()?),
                Col::TMin => lat.t_min = Some(num()?),
                Col::TMax => lat.t_max = Some(num()?),
                Col::TTypical => lat.t_typical = Some(num()?),
                Col::TAvg => lat.t_avg = Some(num()?),
                Col::TStdev => lat.t_stdev = Some(num()?),
                Col::P99 => lat.p99 = Some(num()?),
                Col::P999 => lat.p99_9 = Some(num()?),
                Col::Tps => lat.tps_average = Some(num()?),
                Col::Other => {}
            }
        }
        match average {
            Some(average) => bw_rows.push(BwRow {
                bytes: lat.bytes,
                iterations: lat.iterations,
                peak,
                average,
                msg_rate_mpps: rate,
            }),
            None => lat_rows.push(lat),
        }
    }
    let table = match bw_unit {
        Some(unit) => PerftestTable::Bandwidth {
            unit,
            rows: bw_rows,
        },
        None => PerftestTable::Latency { rows: lat_rows },
    };
    let empty = match &table {
        PerftestTable::Bandwidth { rows, .. } => rows.is_empty(),
        PerftestTable::Latency { rows } => rows.is_empty(),
    };
    if empty {
        return Err(ParseError::whole("perftest result table has no rows"));
    }
    Ok(PerftestReport { header, table })
}

/// Splits the `#bytes ...` header into columns by matching known names (they contain
/// single spaces, so splitting on whitespace runs would not do); an unknown name runs to
/// its `]` or the next gap of two spaces or a tab. The table must have `#bytes`, `#iterations` and either `BW average` or
/// some latency column.
fn columns(index: usize, line: &str) -> Result<Vec<Col>, ParseError> {
    let mut cols = Vec::new();
    let mut rest = line.trim();
    while !rest.is_empty() {
        let known = NAMES.iter().find(|(name, _)| rest.starts_with(name));
        let (len, col) = match known {
            Some((name, col)) => (name.len(), *col),
            None => {
                // Columns are separated by 2+ spaces or tabs; a name ends at its `]`.
                let gap = rest.find("  ").into_iter().chain(rest.find('\t'));
                let close = rest.find(']').map(|c| c.saturating_add(1));
                let end = gap.chain(close).min().unwrap_or(rest.len());
                (end.max(1), Col::Other)
            }
        };
        cols.push(col);
        rest = rest.get(len..).unwrap_or("").trim_start();
    }
    let has = |want: fn(&Col) -> bool| cols.iter().any(want);
    let is_lat = |c: &Col| {
        matches!(
            c,
            Col::TMin | Col::TMax | Col::TTypical | Col::TAvg | Col::TStdev | Col::P99 | Col::P999
        )
    };
    if !has(|c| *c == Col::Bytes) || !has(|c| *c == Col::Iterations) {
        return Err(ParseError::at(index, line, "no #bytes/#iterations columns"));
    }
    if !has(|c| matches!(c, Col::BwAverage(_))) && !has(is_lat) {
        return Err(ParseError::at(
            index,
            line,
            "neither BW average nor latency columns",
        ));
    }
    Ok(cols)
}

/// Reads the `Key : value` pairs of one test-info line (two pairs per line, separated by
/// tabs) into `header`; lines without known keys are ignored.
fn read_header_line(line: &str, header: &mut PerftestHeader) {
    let trimmed = line.trim();
    if trimmed.ends_with(" Test") && !trimmed.contains(':') {
        header.test = Some(trimmed.to_owned());
        return;
    }
    let mut rest = trimmed;
    while let Some(colon) = rest.find(':') {
        let key = rest[..colon]
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ");
        let after = rest[colon.saturating_add(1)..].trim_start();
        let value = after.split_whitespace().next().unwrap_or("");
        rest = &after[value.len()..];
        let owned = || Some(value.to_owned()).filter(|v| !v.is_empty());
        match key.to_ascii_lowercase().as_str() {
            "device" => header.device = owned(),
            "transport type" => header.transport = owned(),
            "connection type" => header.connection = owned(),
            "link type" => header.link_type = owned(),
            "gid index" => header.gid_index = value.parse().ok(),
            "mtu" => header.mtu = value.trim_end_matches("[B]").parse().ok(),
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests;
