//! A proof report as one self-contained HTML page (no scripts, no external files) that a
//! lab engineer can attach to a ticket: the verdict, a bar chart of each expectation's
//! measured change against what it required, host side and DPU side in two colours, and
//! the full table.

use std::fmt::Write as _;

use super::report::ProofReport;
use crate::accounting::{Outcome, Rule, Side};

use crate::render::escape;

/// The bar chart: one row per expectation, bar length = net change relative to the
/// largest of (net change, required bound) over all rows, with the bound marked.
fn chart(report: &ProofReport) -> String {
    const WIDTH: f64 = 560.0;
    const ROW: usize = 34;
    let bound = |rule: Rule| match rule {
        Rule::AtLeast(v) | Rule::AtMost(v) => v,
        Rule::Between(_, max) => max,
    };
    let scale = report
        .lines
        .iter()
        .map(|l| l.net.unwrap_or(0).max(bound(l.expectation.rule)))
        .max()
        .unwrap_or(1)
        .max(1) as f64;
    let height = report.lines.len() * ROW + 30;
    let mut svg = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"900\" height=\"{height}\" \
         font-family=\"sans-serif\" font-size=\"12\">"
    );
    for (i, line) in report.lines.iter().enumerate() {
        let y = i * ROW + 10;
        let net = line.net.unwrap_or(0) as f64;
        let side = line.expectation.select.side.as_str();
        let colour = match line.expectation.select.side {
            Side::Host => "#d9822b",
            Side::Dpu => "#2b6cd9",
            Side::FarEnd => "#1a7f37",
        };
        let len = (net / scale * WIDTH).max(1.0);
        let mark = bound(line.expectation.rule) as f64 / scale * WIDTH + 300.0;
        let _ = write!(
            svg,
            "<text x=\"0\" y=\"{ty}\">{side}: {name}</text>\
             <rect x=\"300\" y=\"{y}\" width=\"{len:.1}\" height=\"18\" fill=\"{colour}\"/>\
             <line x1=\"{mark:.1}\" y1=\"{y0}\" x2=\"{mark:.1}\" y2=\"{y1}\" stroke=\"black\" stroke-dasharray=\"3,2\"/>",
            ty = y + 13,
            name = escape(&line.expectation.name),
            y0 = y.saturating_sub(3),
            y1 = y + 21,
        );
    }
    let _ = write!(
        svg,
        "<text x=\"300\" y=\"{}\">bars: measured change net of background; dashed: the bound \
         (minimum for the DPU side, maximum for the host side)</text></svg>",
        report.lines.len() * ROW + 25
    );
    svg
}

/// The whole page.
pub fn render(report: &ProofReport) -> String {
    let verdict = report.verdict.as_str();
    let colour = match verdict {
        "PROVEN" => "#1a7f37",
        "NOT PROVEN" => "#cf222e",
        _ => "#9a6700",
    };
    let mut rows = String::new();
    for line in &report.lines {
        let (result, why) = match &line.outcome {
            Outcome::Met => ("met", String::new()),
            Outcome::NotMet(w) => ("NOT MET", w.clone()),
            Outcome::Inconclusive(w) => ("inconclusive", w.clone()),
            Outcome::Waived(w) => ("waived", w.clone()),
        };
        let n = |v: Option<u64>| v.map_or_else(|| "-".to_owned(), |v| v.to_string());
        let _ = write!(
            rows,
            "<tr><td>{}<br><small>{} {} of {}</small></td><td>{}</td><td>{}</td><td>{}</td>\
             <td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}<br><small>{}</small></td></tr>",
            escape(&line.expectation.name),
            line.expectation.select.source.as_str(),
            escape(&line.expectation.select.counter),
            escape(&line.expectation.select.objects.join(", ")),
            line.expectation.select.side.as_str(),
            n(line.before),
            n(line.after),
            n(line.delta),
            n(line.background),
            n(line.net),
            escape(&line.expectation.rule.describe()),
            result,
            escape(&why),
        );
    }
    let trials = if report.trials.is_empty() {
        String::new()
    } else {
        let rows: String = report
            .trials
            .iter()
            .map(|t| {
                format!(
                    "<tr><td>{}</td><td>{}</td><td>{:.2}</td><td>{}</td></tr>",
                    t.trial,
                    t.work,
                    t.seconds,
                    t.verdict.as_str()
                )
            })
            .collect();
        format!(
            "<h2>Trials</h2><table><tr><th>trial</th><th>work</th><th>seconds</th>\
             <th>verdict</th></tr>{rows}</table>"
        )
    };
    let notes: String = report
        .notes
        .iter()
        .map(|n| format!("<li>{}</li>", escape(n)))
        .collect();
    format!(
        "<!DOCTYPE html><html><head><meta charset=\"utf-8\"><title>dpuctl prove {proof}: {verdict}</title>\
         <style>body{{font-family:sans-serif;margin:2em}}table{{border-collapse:collapse}}\
         td,th{{border:1px solid #ccc;padding:4px 8px;text-align:right}}td:first-child{{text-align:left}}</style>\
         </head><body><h1>dpuctl prove {proof}: <span style=\"color:{colour}\">{verdict}</span></h1>\
         <p>{workload}</p><p>witnesses: {witnesses}</p>{chart}<table><tr><th>expectation</th><th>side</th><th>before</th>\
         <th>after</th><th>delta</th><th>background</th><th>net</th><th>expected</th><th>result</th></tr>\
         {rows}</table>{trials}<ul>{notes}</ul></body></html>\n",
        proof = report.proof,
        workload = escape(&report.workload),
        witnesses = escape(&report.witnesses.join(", ")),
        chart = chart(report),
    )
}
