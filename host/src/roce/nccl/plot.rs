//! `roce nccl-check --report FILE.html`: nccl-tests' bus bandwidth against message size,
//! one line per run (a log per algorithm, say `NCCL_ALGO=Ring` in one file and `Tree` in
//! another), on one self-contained page with the numbers beside it. nccl-tests prints no
//! algorithm of its own, so each line is named as the caller names the run (its file).

use std::collections::BTreeSet;
use std::fmt::Write as _;

use plotters::style::{Color as _, Palette as _, Palette99, RGBColor};

use super::super::size_plot::{against_size, Line, PlotError};
use super::NcclResults;
use crate::render::escape;

/// One nccl-tests run to draw: its name and its parsed table.
#[derive(Debug, Clone, Copy)]
pub struct NamedRun<'a> {
    /// How the page names the run (a file name).
    pub name: &'a str,
    /// Its rows.
    pub results: &'a NcclResults,
}

/// Each run's out-of-place bus bandwidth (GB/s) per size, the number nccl-tests tells to
/// compare with the link speed; a size whose data check failed is drawn hollow.
fn lines(runs: &[NamedRun<'_>]) -> Vec<Line> {
    runs.iter()
        .enumerate()
        .map(|(i, run)| {
            let (r, g, b) = Palette99::pick(i).to_rgba().rgb();
            let mut points: Vec<(f64, f64, bool)> = run
                .results
                .rows
                .iter()
                .filter(|row| row.out_of_place.busbw_gbps.is_finite())
                .map(|row| {
                    let checked = !matches!(
                        row.out_of_place.check,
                        super::NcclCheck::Wrong(n) if n > 0
                    );
                    (row.size as f64, row.out_of_place.busbw_gbps, checked)
                })
                .collect();
            points.sort_by(|a, b| a.0.total_cmp(&b.0));
            Line {
                label: run.name.to_owned(),
                colour: RGBColor(r, g, b),
                points,
            }
        })
        .collect()
}

/// The page: the plot (when some run has two sizes or more) and a table of every run's
/// bus bandwidth per size.
pub fn page(runs: &[NamedRun<'_>]) -> Result<String, PlotError> {
    let svg = against_size(
        "nccl-tests bus bandwidth against message size",
        "busbw, GB/s",
        &lines(runs),
    )?;
    let sizes: BTreeSet<u64> = runs
        .iter()
        .flat_map(|r| r.results.rows.iter().map(|row| row.size))
        .collect();
    let mut html = String::from(
        "<!DOCTYPE html><html><head><meta charset=\"utf-8\"><title>nccl-tests bus bandwidth</title>\
         <style>body{font-family:sans-serif;margin:2em}table{border-collapse:collapse}\
         td,th{border:1px solid #ccc;padding:2px 8px;text-align:right}</style></head><body>\
         <h1>nccl-tests bus bandwidth against message size</h1>",
    );
    if svg.is_empty() {
        html.push_str("<p>No run has two sizes or more: nothing to draw against size.</p>");
    } else {
        html.push_str(&svg);
    }
    html.push_str("<table><tr><th>size, bytes</th>");
    for run in runs {
        let _ = write!(html, "<th>{} busbw GB/s</th>", escape(run.name));
    }
    html.push_str("</tr>");
    for size in sizes {
        let _ = write!(html, "<tr><td>{size}</td>");
        for run in runs {
            let cell = run
                .results
                .rows
                .iter()
                .find(|row| row.size == size)
                .map_or(String::new(), |row| {
                    format!("{:.2}", row.out_of_place.busbw_gbps)
                });
            let _ = write!(html, "<td>{cell}</td>");
        }
        html.push_str("</tr>");
    }
    html.push_str("</table></body></html>\n");
    Ok(html)
}

#[cfg(test)]
mod tests;
