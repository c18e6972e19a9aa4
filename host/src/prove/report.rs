//! What a proof returns: the verdict, every line with its numbers, and the notes.

use serde::Serialize;

use crate::accounting::{Line, Verdict};

/// A proof judged: the verdict, every line, the notes, and each trial's own verdict.
#[derive(Debug)]
pub struct Judged {
    /// The verdict over every trial and gap ([`crate::accounting::trials::verdict`]).
    pub verdict: Verdict,
    /// Every line; with more than one trial each is named by its trial or gap (`trial 2:
    /// ...`, `gap 1: ...`, in the order they ran).
    pub lines: Vec<Line>,
    /// What is not accounted, the waivers, and facts about the run.
    pub notes: Vec<String>,
    /// Each trial's verdict from its own lines (after the agreement check).
    pub per_trial: Vec<Verdict>,
}

/// One trial of a proof run as trials: how much it did and its own verdict.
#[derive(Debug, Clone, Serialize)]
pub struct TrialSummary {
    /// 1 for the first.
    pub trial: u32,
    /// Its work in the proof's unit (bytes read for storage, packets sent for switch).
    pub work: u64,
    /// How long the workload ran.
    pub seconds: f64,
    /// The verdict of its own lines.
    pub verdict: Verdict,
}

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
    /// The trials, when the workload ran as several (each judged on its own window; their
    /// lines are named `trial i: ...`); empty for a single window.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub trials: Vec<TrialSummary>,
    /// The independent witnesses whose counters were judged (`DPU`, `far end (ENDPOINT)`):
    /// a verdict is only as strong as the witnesses that gave it.
    pub witnesses: Vec<String>,
}
