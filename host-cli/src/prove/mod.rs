//! `dpuctl prove ...`: before/after counter accounting on both sides that proves traffic
//! went through the DPU offload, or says which expectation failed and what that means.
//! The engine (`accounting`) is shared by every proof; each proof only chooses its
//! workload and its expectations.

pub(crate) mod accounting;
pub(crate) mod html;
mod storage;
mod switch;

use std::path::Path;

use anyhow::Context as _;
use serde::Serialize;

use self::accounting::{Line, Outcome as LineOutcome, Side, Verdict};
use crate::cli::ProveCommand;
use crate::commands::Env;
use crate::outcome::Outcome;
use crate::output;

/// Everything a proof found, as printed, written as JSON and rendered as HTML.
#[derive(Debug, Serialize)]
pub(crate) struct ProofReport {
    pub(crate) proof: &'static str,
    pub(crate) verdict: Verdict,
    /// What was done, in one sentence.
    pub(crate) workload: String,
    pub(crate) lines: Vec<Line>,
    /// Facts about the run and what was not accounted, with the reason.
    pub(crate) notes: Vec<String>,
}

pub(crate) async fn run(env: &Env<'_>, cmd: &ProveCommand) -> anyhow::Result<Outcome> {
    match cmd {
        ProveCommand::Storage(args) => storage::run(env, args).await,
        ProveCommand::Switch(args) => switch::run(env, args).await,
    }
}

fn number(value: Option<u64>) -> String {
    value.map_or_else(|| "-".to_owned(), |v| v.to_string())
}

/// Prints the report (table or JSON), writes the HTML file if asked, and maps the
/// verdict to the exit code: 0 only for PROVEN.
pub(crate) fn finish(
    env: &Env<'_>,
    report: &ProofReport,
    html_path: Option<&Path>,
) -> anyhow::Result<Outcome> {
    if let Some(path) = html_path {
        std::fs::write(path, html::render(report))
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
            let side = match line.expectation.select.side {
                Side::Host => "host",
                Side::Dpu => "dpu",
            };
            let result = match &line.outcome {
                LineOutcome::Met => "met".to_owned(),
                LineOutcome::NotMet(_) => "NOT MET".to_owned(),
                LineOutcome::Inconclusive(_) => "inconclusive".to_owned(),
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
        for line in &report.lines {
            if let LineOutcome::NotMet(why) | LineOutcome::Inconclusive(why) = &line.outcome {
                output::line(&format!("- {}: {why}", line.expectation.name))?;
            }
        }
        for note in &report.notes {
            output::line(&format!("note: {note}"))?;
        }
        output::line(&format!("verdict: {}", report.verdict.as_str()))?;
    }
    Ok(match report.verdict {
        Verdict::Proven => Outcome::Success,
        Verdict::NotProven => Outcome::Failed,
        Verdict::Inconclusive => Outcome::Inconclusive,
    })
}
