//! `roce perf --report`'s plots against message size: bandwidth (Gb/s) and latency (µs)
//! per test, one line each over a log₂ size axis, drawn by plotters' SVG backend (as the
//! experiment page is). A run whose counters did not say what its tool claims (flagged, or
//! an unknown path) is drawn hollow: its number is shown but not vouched for. Only drawn
//! when some test ran at two sizes or more; with one size per test the bar charts say it
//! all.

use std::collections::BTreeMap;

use plotters::prelude::*;

use super::super::size_plot::{against_size, Line, PlotError};
use super::{PathVerdict, PerfReport, PerfRun, PerfTest};

/// A test's points: (size, value, vouched for by the counters).
type Series = BTreeMap<&'static str, Vec<(f64, f64, bool)>>;

/// Whether the run's counters say what its tool claims.
fn vouched(run: &PerfRun) -> bool {
    !run.flagged
        && match run.test.is_rdma() {
            true => run.rdma.path == PathVerdict::Rdma,
            false => run.rdma.path == PathVerdict::NotRdma,
        }
}

/// The bandwidth tests' and the latency tests' points.
fn series(report: &PerfReport) -> (Series, Series) {
    let (mut bw, mut lat) = (Series::new(), Series::new());
    for run in report.runs.iter().filter(|r| r.error.is_none()) {
        let (map, value) = if run.test.is_bandwidth() {
            (&mut bw, run.bw_gbps)
        } else {
            (&mut lat, run.lat_typical_us.or(run.lat_avg_us))
        };
        if let Some(value) = value.filter(|v| v.is_finite()) {
            map.entry(run.test.name())
                .or_default()
                .push((run.size as f64, value, vouched(run)));
        }
    }
    for points in bw.values_mut().chain(lat.values_mut()) {
        points.sort_by(|a, b| a.0.total_cmp(&b.0));
    }
    (bw, lat)
}

/// A colour per test, the same on both plots.
fn colour(test: &str) -> RGBColor {
    let index = PerfTest::ALL
        .iter()
        .position(|t| t.name() == test)
        .unwrap_or(0);
    let (r, g, b) = Palette99::pick(index).to_rgba().rgb();
    RGBColor(r, g, b)
}

/// Each test's points as a line in its own colour.
fn lines(series: &Series) -> Vec<Line> {
    series
        .iter()
        .map(|(test, points)| Line {
            label: (*test).to_owned(),
            colour: colour(test),
            points: points.clone(),
        })
        .collect()
}

/// The bandwidth and latency plots against size, each an `<svg>` (empty strings when no
/// test ran at two sizes).
pub fn size_plots(report: &PerfReport) -> Result<(String, String), PlotError> {
    let (bw, lat) = series(report);
    Ok((
        against_size("Bandwidth against message size", "Gb/s", &lines(&bw))?,
        against_size("Latency (typical) against message size", "µs", &lines(&lat))?,
    ))
}

#[cfg(test)]
mod tests;
