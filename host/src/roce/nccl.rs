//! nccl-tests (`all_reduce_perf` and friends) result tables, and the NCCL_DEBUG=INFO lines
//! that tell which network transport NCCL used (reference §3.3, §3.4): a run can succeed
//! while its data went over TCP sockets instead of RoCE, and only the log says so.

pub mod check;
pub mod corroborate;
pub mod plot;
pub mod transport;

use super::{finite, ParseError};

/// The data check of one placement: `#wrong` count, the older `error` magnitude, or
/// `N/A` when checking was off (`-c 0`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum NcclCheck {
    /// `#wrong`: number of wrong elements.
    Wrong(u64),
    /// `error` (older releases): the largest error found.
    Error(f64),
    /// `N/A`: not checked.
    NotChecked,
}

/// Out-of-place or in-place results of one row.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct NcclPlacement {
    /// `time` (or `cputime` with `-C 1`), microseconds.
    pub time_us: f64,
    /// `algbw`, GB/s (10^9).
    pub algbw_gbps: f64,
    /// `busbw`, GB/s (10^9): the number to compare with the link speed.
    pub busbw_gbps: f64,
    /// `#wrong` / `error`.
    pub check: NcclCheck,
}

/// One result row (one message size).
#[derive(Debug, Clone, PartialEq)]
pub struct NcclRow {
    /// `size` in bytes.
    pub size: u64,
    /// `count` in elements.
    pub count: u64,
    /// `type`, e.g. `float`.
    pub dtype: String,
    /// `redop`, e.g. `sum` (`none` for collectives without one).
    pub redop: String,
    /// `root` (-1 when not rooted); None in releases without the column.
    pub root: Option<i64>,
    /// The out-of-place placement.
    pub out_of_place: NcclPlacement,
    /// The in-place placement.
    pub in_place: NcclPlacement,
}

/// A parsed nccl-tests run.
#[derive(Debug, Clone, PartialEq)]
pub struct NcclResults {
    /// The rows, in output order.
    pub rows: Vec<NcclRow>,
    /// `# Avg bus bandwidth`, GB/s, when the footer was printed.
    pub avg_busbw_gbps: Option<f64>,
    /// `iters: N` of the run header (`# nThread 1 nGpus 1 ... warmup iters: 5 iters: 20
    /// agg iters: 1 ...`): the timed collectives per size and placement are `iters` x
    /// `agg iters`. None when the header was not in the log.
    pub iters: Option<u64>,
    /// `agg iters: N` of the same header (releases before it have none: 1).
    pub agg_iters: Option<u64>,
}

impl NcclResults {
    /// The bytes one rank moved over its links in the timed collectives, by nccl-tests'
    /// own bus model: `busbw` is the size times the collective's link factor (2(n-1)/n for
    /// all-reduce) over the time, so `busbw x time` is one collective's bus bytes, summed
    /// over the rows, both placements, and `iters x agg iters` (1 each when the header is
    /// missing). Warm-up collectives are left out: this is a floor on what the run moved,
    /// never an estimate above it.
    pub fn bus_bytes(&self) -> u64 {
        let per_iteration: f64 = self
            .rows
            .iter()
            .map(|r| {
                // GB/s (10^9 B/s) x microseconds = 10^3 bytes.
                (r.out_of_place.busbw_gbps * r.out_of_place.time_us
                    + r.in_place.busbw_gbps * r.in_place.time_us)
                    * 1e3
            })
            .sum();
        let collectives = self.iters.unwrap_or(1).max(1) * self.agg_iters.unwrap_or(1).max(1);
        // `as` saturates for a float out of range; the factors are parsed counts.
        (per_iteration * collectives as f64) as u64
    }
}

/// `iters: N` and `agg iters: N` from the nccl-tests run header, when this `#` line is it.
fn run_header(comment: &str) -> Option<(Option<u64>, Option<u64>)> {
    if !comment.contains("iters:") {
        return None;
    }
    let words: Vec<&str> = comment.split_whitespace().collect();
    let after = |i: usize| words.get(i + 1).and_then(|w| w.parse::<u64>().ok());
    let mut iters = None;
    let mut agg_iters = None;
    for (i, word) in words.iter().enumerate() {
        if *word != "iters:" {
            continue;
        }
        match i.checked_sub(1).and_then(|p| words.get(p)) {
            Some(&"warmup") => {}
            Some(&"agg") => agg_iters = after(i),
            _ => iters = after(i),
        }
    }
    Some((iters, agg_iters))
}

/// Column positions of one placement in a row.
#[derive(Debug, Clone, Copy)]
struct PlacementCols {
    time: usize,
    algbw: usize,
    busbw: usize,
    check: usize,
}

/// Column positions found from the `#  size  count ...` header line.
#[derive(Debug, Clone, Copy)]
struct Layout {
    width: usize,
    root: Option<usize>,
    out_of_place: PlacementCols,
    in_place: PlacementCols,
}

/// Parses nccl-tests stdout. `#` lines other than the header and footer, and NCCL INFO
/// lines mixed in, are skipped; a line that starts with a number after the header must be
/// a full row.
pub fn parse_results(text: &str) -> Result<NcclResults, ParseError> {
    let mut layout = None;
    let mut rows = Vec::new();
    let mut avg_busbw_gbps = None;
    let mut iterations = (None, None);
    for (i, line) in text.lines().enumerate() {
        let trimmed = line.trim();
        if let Some(comment) = trimmed.strip_prefix('#') {
            let comment = comment.trim();
            if let Some(value) = comment.strip_prefix("Avg bus bandwidth") {
                let number = value.trim_start().trim_start_matches(':');
                let number = number.split_whitespace().next().unwrap_or("");
                let Some(avg) = finite(number) else {
                    return Err(ParseError::at(i, line, "Avg bus bandwidth is not a number"));
                };
                avg_busbw_gbps = Some(avg);
            } else if let Some(found) = run_header(comment) {
                iterations = found;
            } else if comment.starts_with("size") && comment.contains("busbw") {
                layout = Some(header(i, line, comment)?);
            }
            continue;
        }
        let first = trimmed.split_whitespace().next().unwrap_or("");
        if first.parse::<u64>().is_err() {
            continue;
        }
        let Some(layout) = layout else {
            return Err(ParseError::at(
                i,
                line,
                "a result row before the table header",
            ));
        };
        rows.push(row(i, line, &layout)?);
    }
    if rows.is_empty() {
        return Err(ParseError::whole("no nccl-tests result rows"));
    }
    Ok(NcclResults {
        rows,
        avg_busbw_gbps,
        iters: iterations.0,
        agg_iters: iterations.1,
    })
}

/// Finds the columns by name; the second `time`/`cputime` starts the in-place half.
fn header(index: usize, line: &str, names: &str) -> Result<Layout, ParseError> {
    let names: Vec<&str> = names.split_whitespace().collect();
    let pos = |want: &[&str], from: usize| {
        names
            .iter()
            .enumerate()
            .skip(from)
            .find(|(_, n)| want.contains(n))
            .map(|(p, _)| p)
    };
    let bad = || {
        ParseError::at(
            index,
            line,
            "not an nccl-tests header (size count ... busbw)",
        )
    };
    let placement = |from: usize| -> Option<PlacementCols> {
        let time = pos(&["time", "cputime"], from)?;
        Some(PlacementCols {
            time,
            algbw: pos(&["algbw"], time)?,
            busbw: pos(&["busbw"], time)?,
            check: pos(&["#wrong", "error"], time)?,
        })
    };
    let out_of_place = placement(0).ok_or_else(bad)?;
    let in_place = placement(out_of_place.check.saturating_add(1)).ok_or_else(bad)?;
    if names.get(1) != Some(&"count") || pos(&["type"], 0) != Some(2) {
        return Err(bad());
    }
    Ok(Layout {
        width: names.len(),
        root: pos(&["root"], 0),
        out_of_place,
        in_place,
    })
}

/// Parses one row laid out as `layout`.
fn row(index: usize, line: &str, layout: &Layout) -> Result<NcclRow, ParseError> {
    let v: Vec<&str> = line.split_whitespace().collect();
    if v.len() != layout.width {
        let why = format!("{} values under {} columns", v.len(), layout.width);
        return Err(ParseError::at(index, line, why));
    }
    let at = |p: usize| v.get(p).copied().unwrap_or("");
    let count = |p: usize| {
        at(p)
            .parse::<u64>()
            .map_err(|_| ParseError::at(index, line, "size/count is not a count"))
    };
    let num = |p: usize| finite(at(p)).ok_or_else(|| ParseError::at(index, line, "not a number"));
    let placement = |c: &PlacementCols| -> Result<NcclPlacement, ParseError> {
        let check = match at(c.check) {
            "N/A" => NcclCheck::NotChecked,
            text => match text.parse::<u64>() {
                Ok(n) => NcclCheck::Wrong(n),
                Err(_) => NcclCheck::Error(num(c.check)?),
            },
        };
        Ok(NcclPlacement {
            time_us: num(c.time)?,
            algbw_gbps: num(c.algbw)?,
            busbw_gbps: num(c.busbw)?,
            check,
        })
    };
    let root = match layout.root {
        Some(p) => Some(
            at(p)
                .parse::<i64>()
                .map_err(|_| ParseError::at(index, line, "root is not an integer"))?,
        ),
        None => None,
    };
    Ok(NcclRow {
        size: count(0)?,
        count: count(1)?,
        dtype: at(2).to_owned(),
        redop: at(3).to_owned(),
        root,
        out_of_place: placement(&layout.out_of_place)?,
        in_place: placement(&layout.in_place)?,
    })
}

#[cfg(test)]
pub(crate) mod tests;
