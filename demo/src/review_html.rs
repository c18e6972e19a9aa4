//! The review (course chapter 12.4) as one self-contained HTML page, the same kind the
//! proofs and `roce perf` write: every step with its verdict and facts, the accounting of
//! the whole run, and the serving checks.

use std::fmt::Write as _;

use super::report::DemoReport;
use super::step_report::StepStatus;
use dpu_host::render::escape;

/// The whole page.
pub fn render(report: &DemoReport) -> String {
    let mut steps = String::new();
    for s in &report.steps {
        let colour = match s.status {
            StepStatus::Passed => "#1a7f37",
            StepStatus::Failed => "#cf222e",
            StepStatus::Inconclusive => "#bc4c00",
            StepStatus::Skipped => "#9a6700",
        };
        let details: String = s
            .details
            .iter()
            .map(|d| format!("<li>{}</li>", escape(d)))
            .collect();
        let _ = write!(
            steps,
            "<tr><td>{}</td><td style=\"color:{colour}\"><b>{:?}</b></td><td>{:.1}</td><td>{}<ul>{details}</ul></td></tr>",
            escape(s.title),
            s.status,
            s.seconds,
            escape(&s.reason),
        );
    }
    let mut accounting = String::new();
    for l in &report.accounting {
        let _ = write!(
            accounting,
            "<tr><td>{}</td><td>{}</td><td>{}</td></tr>",
            escape(l.path),
            escape(&l.what),
            l.value
                .map_or_else(|| "-".to_owned(), |v| format!("{v} {}", l.unit)),
        );
    }
    let serving = report
        .serving
        .as_ref()
        .and_then(|s| serde_json::to_string_pretty(s).ok())
        .map(|j| format!("<h2>Serving checks</h2><pre>{}</pre>", escape(&j)))
        .unwrap_or_default();
    let verdict = if report.passed { "PASSED" } else { "FAILED" };
    format!(
        "<!DOCTYPE html><html><head><meta charset=\"utf-8\"><title>dpuctl demo {run}</title>\
         <style>body{{font-family:sans-serif;margin:2em}}table{{border-collapse:collapse}}\
         td,th{{border:1px solid #ccc;padding:4px 8px;vertical-align:top}}</style></head><body>\
         <h1>Training-storage demo, run {run}: {verdict}</h1><p>Plan {plan}, {executor} executor.</p>\
         <h2>Steps</h2><table><tr><th>step</th><th>result</th><th>s</th><th>why and what was found</th></tr>{steps}</table>\
         <h2>Where the bytes went</h2><table><tr><th>path</th><th>counted</th><th>amount</th></tr>{accounting}</table>\
         {serving}</body></html>\n",
        run = escape(&report.run_id),
        plan = escape(&report.plan),
        executor = report.executor,
    )
}
