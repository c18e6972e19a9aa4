//! A plot against message size on a log₂ axis, drawn by plotters' SVG backend: what `roce
//! perf --report` (bandwidth, latency per test) and `roce nccl-check --report` (bus
//! bandwidth per run) both draw. A point its evidence did not vouch for is hollow.

use plotters::prelude::*;

/// Why a plot could not be drawn.
#[derive(Debug, thiserror::Error)]
#[error("cannot draw the size plot: {0}")]
pub struct PlotError(String);

/// One line of a plot: its legend, its colour, and its points (size in bytes, value,
/// vouched for), in size order.
#[derive(Debug, Clone)]
pub(crate) struct Line {
    pub(crate) label: String,
    pub(crate) colour: RGBColor,
    pub(crate) points: Vec<(f64, f64, bool)>,
}

/// One plot of `lines` against size (a log₂ axis), or nothing when no line has two sizes.
pub(crate) fn against_size(title: &str, unit: &str, lines: &[Line]) -> Result<String, PlotError> {
    if !lines.iter().any(|l| l.points.len() >= 2) {
        return Ok(String::new());
    }
    let fail = |e: &dyn std::fmt::Display| PlotError(e.to_string());
    let points = || lines.iter().flat_map(|l| l.points.iter());
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
        for line in lines {
            let (c, points) = (line.colour, &line.points);
            chart
                .draw_series(LineSeries::new(points.iter().map(|p| (p.0, p.1)), c))
                .map_err(|e| fail(&e))?
                .label(line.label.as_str())
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
