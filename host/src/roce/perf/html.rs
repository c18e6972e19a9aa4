//! `roce perf --report`: one self-contained HTML page (no scripts, no external files), the
//! same kind of page the proofs write: the verdict, bar charts of bandwidth, latency and
//! CPU per run (TCP and RDMA side by side at each size), bandwidth and latency against
//! message size when a test ran at several ([`super::plot`]), and the full table with
//! the counter evidence.

use std::fmt::Write as _;

use super::PerfReport;
use crate::render::escape;
use crate::roce::perf::{PathVerdict, PerfRun};

/// One bar: label, value, colour.
type Bar = (String, f64, &'static str);

fn colour(run: &PerfRun) -> &'static str {
    if run.test.is_rdma() {
        "#2b6cd9"
    } else {
        "#d9822b"
    }
}

/// A horizontal bar chart with the value printed at the end of each bar.
fn chart(title: &str, unit: &str, bars: &[Bar]) -> String {
    if bars.is_empty() {
        return String::new();
    }
    const WIDTH: f64 = 520.0;
    const ROW: usize = 22;
    let max = bars
        .iter()
        .map(|b| b.1)
        .fold(0.0_f64, f64::max)
        .max(f64::MIN_POSITIVE);
    let height = bars.len() * ROW + 10;
    let mut svg = format!(
        "<h2>{}</h2><svg xmlns=\"http://www.w3.org/2000/svg\" width=\"900\" height=\"{height}\" \
         font-family=\"sans-serif\" font-size=\"12\">",
        escape(title)
    );
    for (i, (label, value, fill)) in bars.iter().enumerate() {
        let y = i * ROW + 4;
        let len = (value / max * WIDTH).max(1.0);
        let _ = write!(
            svg,
            "<text x=\"0\" y=\"{ty}\">{label}</text><rect x=\"220\" y=\"{y}\" width=\"{len:.1}\" \
             height=\"16\" fill=\"{fill}\"/><text x=\"{tx:.1}\" y=\"{ty}\">{value:.3} {unit}</text>",
            ty = y + 12,
            label = escape(label),
            tx = 226.0 + len,
            unit = escape(unit),
        );
    }
    svg.push_str("</svg>");
    svg
}

fn label(run: &PerfRun) -> String {
    format!("{} {} B", run.test.name(), run.size)
}

/// The whole page.
pub fn render(report: &PerfReport) -> String {
    let ok = |r: &&PerfRun| r.error.is_none();
    let bw: Vec<Bar> = report
        .runs
        .iter()
        .filter(ok)
        .filter_map(|r| Some((label(r), r.bw_gbps?, colour(r))))
        .collect();
    let lat: Vec<Bar> = report
        .runs
        .iter()
        .filter(ok)
        .filter_map(|r| Some((label(r), r.lat_avg_us?, colour(r))))
        .collect();
    let cpu: Vec<Bar> = report
        .runs
        .iter()
        .filter(ok)
        .flat_map(|r| {
            [
                r.cpu_local_pct
                    .map(|v| (format!("{} here", label(r)), v, colour(r))),
                r.cpu_peer_pct
                    .map(|v| (format!("{} peer", label(r)), v, "#6e7781")),
            ]
        })
        .flatten()
        .collect();
    let sizes = match super::plot::size_plots(report) {
        Ok((bw, lat)) => format!("{bw}{lat}"),
        Err(e) => format!("<p>{}</p>", escape(&e.to_string())),
    };
    let mut rows = String::new();
    for r in &report.runs {
        let n = |v: Option<f64>| v.map_or_else(|| "-".to_owned(), |v| format!("{v:.3}"));
        let _ = write!(
            rows,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td>\
             <td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            r.test.name(),
            r.size,
            n(r.bw_gbps),
            n(r.lat_avg_us),
            n(r.lat_p99_us),
            n(r.cpu_local_s),
            n(r.cpu_peer_s),
            r.rdma
                .packets_delta
                .map_or_else(|| "-".to_owned(), |v| v.to_string()),
            r.rdma.payload_packets,
            match r.rdma.path {
                PathVerdict::Rdma => "RDMA",
                PathVerdict::NotRdma => "not RDMA",
                PathVerdict::Unknown => "unknown",
            },
            escape(&match (&r.error, r.flagged) {
                (Some(e), _) => format!("FAILED: {e}"),
                (None, true) => "FLAGGED: the counters contradict the tool".to_owned(),
                _ => String::new(),
            }),
        );
    }
    format!(
        "<!DOCTYPE html><html><head><meta charset=\"utf-8\"><title>dpuctl roce perf: {peer}</title>\
         <style>body{{font-family:sans-serif;margin:2em}}table{{border-collapse:collapse}}\
         td,th{{border:1px solid #ccc;padding:4px 8px;text-align:right}}</style></head><body>\
         <h1>RoCE performance: {verdict}</h1>\
         <p>local {local}; peer {peer} at {addr}: {remote}. Orange: TCP (qperf); blue: RDMA \
         (perftest); grey: the peer's CPU. \"path\" is decided from the local RDMA port \
         counters alone: RDMA when they moved by at least 90% of the payload, not RDMA under \
         10%.</p>{bw}{lat}{cpu}{sizes}<h2>Runs</h2><table><tr><th>test</th><th>size B</th><th>Gb/s</th>\
         <th>lat avg µs</th><th>lat p99 µs</th><th>CPU here s</th><th>CPU peer s</th>\
         <th>RDMA pkts Δ</th><th>payload pkts</th><th>path</th><th></th></tr>{rows}</table>\
         </body></html>\n",
        peer = escape(&report.peer),
        verdict = escape(report.verdict),
        local = escape(&report.local.to_string()),
        addr = escape(&report.peer_address),
        remote = escape(&report.remote.to_string()),
        bw = chart("Bandwidth", "Gb/s", &bw),
        lat = chart("Latency (average)", "µs", &lat),
        cpu = chart("CPU, % of one core during the run", "%", &cpu),
    )
}
