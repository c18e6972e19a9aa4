//! How every proof's report is shown: the lines as a table (or the report as JSON), the
//! trials, the reasons and notes, the verdict with its witnesses, the HTML file when asked,
//! and the exit code (0 only for PROVEN). `prove storage`, `prove switch` and `prove qos`
//! share it.

use std::path::Path;

use anyhow::Context as _;
use dpu_host::accounting::{Outcome as LineOutcome, Verdict};
use dpu_host::prove::{self, ProofReport};

use super::env::Env;
use crate::exit::Exit;
use crate::output;

fn number(value: Option<u64>) -> String {
    value.map_or_else(|| "-".to_owned(), |v| v.to_string())
}

/// Prints the report (table or JSON), writes the HTML file if asked, and maps the
/// verdict to the exit code: 0 only for PROVEN.
pub(super) fn finish(
    env: &Env<'_>,
    report: &ProofReport,
    html_path: Option<&Path>,
) -> anyhow::Result<Exit> {
    if let Some(path) = html_path {
        std::fs::write(path, prove::html::render(report))
            .with_context(|| format!("cannot write the report {}", path.display()))?;
    }
    if env.json() {
        output::json(report)?;
    } else {
        output::line(&format!("{}: {}", report.proof, report.workload))?;
        let mut table = output::table([
            "expectation",
            "side",
            "before",
            "after",
            "delta",
            "background",
            "expected",
            "result",
        ]);
        for line in &report.lines {
            let side = line.expectation.select.side.as_str();
            let result = match &line.outcome {
                LineOutcome::Met => "met".to_owned(),
                LineOutcome::NotMet(_) => "NOT MET".to_owned(),
                LineOutcome::Inconclusive(_) => "inconclusive".to_owned(),
                LineOutcome::Waived(_) => "WAIVED".to_owned(),
            };
            table.add_row([
                format!(
                    "{}\n{} {}",
                    line.expectation.name,
                    line.expectation.select.source.as_str(),
                    line.expectation.select.counter
                ),
                side.to_owned(),
                number(line.before),
                number(line.after),
                number(line.delta),
                number(line.background),
                line.expectation.rule.describe(),
                result,
            ]);
        }
        output::print_table(&table)?;
        if !report.trials.is_empty() {
            let mut trials = output::table(["trial", "work", "seconds", "verdict"]);
            for trial in &report.trials {
                trials.add_row([
                    trial.trial.to_string(),
                    trial.work.to_string(),
                    format!("{:.2}", trial.seconds),
                    trial.verdict.as_str().to_owned(),
                ]);
            }
            output::print_table(&trials)?;
        }
        for line in &report.lines {
            if let LineOutcome::NotMet(why)
            | LineOutcome::Inconclusive(why)
            | LineOutcome::Waived(why) = &line.outcome
            {
                output::line(&format!("- {}: {why}", line.expectation.name))?;
            }
        }
        for note in &report.notes {
            output::line(&format!("note: {note}"))?;
        }
        output::line(&format!(
            "verdict: {} ({} witness{}: {})",
            report.verdict.as_str(),
            report.witnesses.len(),
            if report.witnesses.len() == 1 {
                ""
            } else {
                "es"
            },
            report.witnesses.join(", ")
        ))?;
    }
    Ok(match report.verdict {
        Verdict::Proven => Exit::Success,
        Verdict::NotProven => Exit::Failed,
        Verdict::Inconclusive => Exit::Inconclusive,
    })
}
