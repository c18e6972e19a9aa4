//! What a demo run returns: every step's report, the accounting of the whole run, the
//! serving checks, and the verdict they make together.

use serde::Serialize;

use super::serving::ServingReport;
use super::step_report::{StepReport, StepStatus};

/// One line of "where every byte went".
#[derive(Debug, Clone, Serialize)]
pub struct AccountLine {
    /// Which path: storage, communication, training, serving.
    pub path: &'static str,
    /// What was counted, and where.
    pub what: String,
    /// The amount; None when it could not be read.
    pub value: Option<u64>,
    /// Its unit.
    pub unit: &'static str,
    /// Why the amount is unknown when a counter reset, vanished or appeared during the run
    /// (the run is then inconclusive: never "moved 0").
    #[serde(skip_serializing_if = "Option::is_none")]
    pub inconclusive: Option<String>,
}

/// How the whole run ended, for the exit code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DemoVerdict {
    /// Every step passed and every accounting line was read.
    Passed,
    /// A step failed.
    Failed,
    /// No step failed, but a step's counters or an accounting line's could not be judged
    /// (a counter broke during the run, background too large).
    Inconclusive,
}

/// The whole run, as printed with `-o json` and rendered as the review page.
#[derive(Debug, Clone, Serialize)]
pub struct DemoReport {
    /// The run id (labels, work directory).
    pub run_id: String,
    /// The plan file.
    pub plan: String,
    /// `local` or `kubernetes`.
    pub executor: &'static str,
    /// Every step passed.
    pub passed: bool,
    /// The steps, in order.
    pub steps: Vec<StepReport>,
    /// The accounting of the whole run.
    pub accounting: Vec<AccountLine>,
    /// The serving checks in full.
    pub serving: Option<ServingReport>,
}

impl DemoReport {
    /// The verdict: a failed step dominates; then a step its counters could not judge (the
    /// steps after it skipped for it); then a broken accounting line.
    pub fn verdict(&self) -> DemoVerdict {
        let any = |status| self.steps.iter().any(|s| s.status == status);
        if any(StepStatus::Failed) {
            DemoVerdict::Failed
        } else if any(StepStatus::Inconclusive) {
            DemoVerdict::Inconclusive
        } else if !self.passed {
            DemoVerdict::Failed
        } else if self.accounting.iter().any(|l| l.inconclusive.is_some()) {
            DemoVerdict::Inconclusive
        } else {
            DemoVerdict::Passed
        }
    }
}
