//! One step of the demo as the report shows it: what it checked, whether it passed and
//! why, how long it took, and the numbers behind the verdict. Shared by both executors so
//! the review reads the same whichever ran.

use std::time::Instant;

use indicatif::{ProgressBar, ProgressStyle};
use serde::Serialize;

/// How a step ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum StepStatus {
    /// Its checks held.
    Passed,
    /// A check failed or the step could not run; `reason` says which.
    Failed,
    /// Not run because a step it needs failed (or the plan leaves it out).
    Skipped,
}

/// The outcome of one step.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct StepReport {
    /// Short name: storage, communication, training, merge, serving, review, cleanup.
    pub(crate) name: &'static str,
    /// What the step is for, in the course's words.
    pub(crate) title: &'static str,
    /// How it ended.
    pub(crate) status: StepStatus,
    /// Why it failed or was skipped; the headline when it passed.
    pub(crate) reason: String,
    /// Wall time.
    pub(crate) seconds: f64,
    /// Facts found on the way (files read, transport used, loss, answers ...).
    pub(crate) details: Vec<String>,
}

impl StepReport {
    /// A step not run because `because` failed.
    pub(crate) fn skipped(name: &'static str, title: &'static str, because: &str) -> Self {
        Self {
            name,
            title,
            status: StepStatus::Skipped,
            reason: format!("skipped: {because}"),
            seconds: 0.0,
            details: Vec::new(),
        }
    }

    /// Whether it passed.
    pub(crate) fn passed(&self) -> bool {
        self.status == StepStatus::Passed
    }
}

/// What a step body returns: pass or fail with a reason, plus details.
#[derive(Debug, Default)]
pub(crate) struct Outcome {
    /// None: passed; Some(reason): failed.
    pub(crate) failure: Option<String>,
    /// The headline when passed.
    pub(crate) headline: String,
    /// Facts.
    pub(crate) details: Vec<String>,
}

impl Outcome {
    /// A failure with `reason`, keeping the details gathered so far.
    pub(crate) fn fail(mut self, reason: impl Into<String>) -> Self {
        self.failure.get_or_insert(reason.into());
        self
    }

    /// Records a fact.
    pub(crate) fn note(&mut self, fact: impl Into<String>) {
        self.details.push(fact.into());
    }
}

/// Shows a spinner while a step runs (stderr, hidden when not a terminal), then one line
/// with its verdict and time.
pub(crate) struct Progress {
    bar: ProgressBar,
    started: Instant,
    index: usize,
    total: usize,
}

impl std::fmt::Debug for Progress {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Progress")
            .field("index", &self.index)
            .finish()
    }
}

impl Progress {
    /// Starts the display of step `index` of `total`.
    pub(crate) fn start(index: usize, total: usize, title: &str) -> Self {
        let bar = ProgressBar::new_spinner();
        if let Ok(style) = ProgressStyle::with_template("{spinner} [{prefix}] {msg} {elapsed}") {
            bar.set_style(style);
        }
        bar.set_prefix(format!("{index}/{total}"));
        bar.set_message(title.to_owned());
        bar.enable_steady_tick(std::time::Duration::from_millis(200));
        Self {
            bar,
            started: Instant::now(),
            index,
            total,
        }
    }

    /// Ends the display and turns `outcome` into the step's report.
    pub(crate) fn finish(
        self,
        name: &'static str,
        title: &'static str,
        outcome: Outcome,
    ) -> StepReport {
        let seconds = self.started.elapsed().as_secs_f64();
        self.bar.finish_and_clear();
        let (status, reason) = match outcome.failure {
            None => (StepStatus::Passed, outcome.headline),
            Some(r) => (StepStatus::Failed, r),
        };
        eprintln!(
            "[{}/{}] {title}: {} in {seconds:.1} s{}",
            self.index,
            self.total,
            if status == StepStatus::Passed {
                "PASSED"
            } else {
                "FAILED"
            },
            if reason.is_empty() {
                String::new()
            } else {
                format!(" — {reason}")
            }
        );
        StepReport {
            name,
            title,
            status,
            reason,
            seconds,
            details: outcome.details,
        }
    }
}
