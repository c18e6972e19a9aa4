//! `roce perf --report`'s plots against message size: bandwidth (Gb/s) and latency (µs)
//! per test, one line each over a log₂ size axis, drawn by plotters' SVG backend (as the
//! experiment page is). A run whose counters did not say what its tool claims (flagged, or
//! an unknown path) is drawn hollow: its number is shown but not vouched for. Only drawn
//! when some test ran at two sizes or more; with one size per test the bar charts say it
//! all.

use std::collections::BTreeMap;

use plotters::prelude::*;

use super::perf::{PathVerdict, PerfReport, PerfRun, PerfTest};

/// Why a plot could not be drawn.
#[derive(Debug, thiserror::Error)]
#[error("cannot draw the size plot: {0}")]
pub struct PlotError(String);

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

/// One plot of `series` against size, or nothing when no test has two sizes.
fn plot(title: &str, unit: &str, series: &Series) -> Result<String, PlotError> {
    if !series.values().any(|p| p.len() >= 2) {
        return Ok(String::new());
    }
    let fail = |e: &dyn std::fmt::Display| PlotError(e.to_string());
    let points = || series.values().flatten();
    let low = points().map(|p| p.0).fold(f64::INFINITY, f64::min).max(1.0);
    let high = points().map(|p| p.0).fold(0.0, f64::max).max(low * 2.0);
    let top = points()
        .map(|p| p.1)
        .fold(0.0, f64::max)
        .max(f64::MIN_POSITIVE)
        * 1.1;
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (760, 360)).into_drawing_area();
        root.fill(&WHITE).map_err(|e| fail(&e))?;
        let mut chart = ChartBuilder::on(&root)
            .caption(title, ("sans-serif", 16))
            .margin(12)
            .x_label_area_size(34)
            .y_label_area_size(64)
            .build_cartesian_2d((low / 1.5..high * 1.5).log_scale(), 0.0..top)
            .map_err(|e| fail(&e))?;
        chart
            .configure_mesh()
            .x_desc("message size, bytes (log scale)")
            .y_desc(unit)
            .x_label_formatter(&|x| format!("{}", x.round()))
            .draw()
            .map_err(|e| fail(&e))?;
        for (test, points) in series {
            let c = colour(test);
            chart
                .draw_series(LineSeries::new(points.iter().map(|p| (p.0, p.1)), c))
                .map_err(|e| fail(&e))?
                .label(*test)
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 16, y)], c));
            chart
                .draw_series(points.iter().map(|&(x, y, good)| {
                    let style = if good { c.filled() } else { c.stroke_width(2) };
                    Circle::new((x, y), 4, style)
                }))
                .map_err(|e| fail(&e))?;
        }
        chart
            .configure_series_labels()
            .background_style(WHITE.mix(0.8))
            .border_style(BLACK)
            .draw()
            .map_err(|e| fail(&e))?;
        root.present().map_err(|e| fail(&e))?;
    }
    Ok(svg)
}

/// The bandwidth and latency plots against size, each an `<svg>` (empty strings when no
/// test ran at two sizes).
pub fn size_plots(report: &PerfReport) -> Result<(String, String), PlotError> {
    let (bw, lat) = series(report);
    Ok((
        plot("Bandwidth against message size", "Gb/s", &bw)?,
        plot("Latency (typical) against message size", "µs", &lat)?,
    ))
}

#[cfg(test)]
#[path = "perf_plot_tests.rs"]
mod tests;
