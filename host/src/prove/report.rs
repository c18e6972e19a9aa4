//! What a proof returns: the verdict, every line with its numbers, and the notes.

use serde::Serialize;

use crate::accounting::{Line, Verdict};

/// Everything a proof found, as printed, written as JSON and rendered as HTML.
#[derive(Debug, Serialize)]
pub struct ProofReport {
    /// Which proof: `storage` or `switch`.
    pub proof: &'static str,
    /// PROVEN, NOT PROVEN or INCONCLUSIVE.
    pub verdict: Verdict,
    /// What was done, in one sentence.
    pub workload: String,
    /// One line per expectation, with its numbers and outcome.
    pub lines: Vec<Line>,
    /// Facts about the run and what was not accounted, with the reason.
    pub notes: Vec<String>,
}
