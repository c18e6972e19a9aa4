//! One step of the demo as the report shows it: what it checked, whether it passed and
//! why, how long it took, and the numbers behind the verdict. Shared by both executors so
//! the review reads the same whichever ran.

use std::time::Instant;

use serde::Serialize;

/// How a step ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum StepStatus {
    /// Its checks held.
    Passed,
    /// A check failed or the step could not run; `reason` says which.
    Failed,
    /// The step's counters cannot say whether it held (a counter reset or vanished, the
    /// background was too large next to the work); `reason` says which. Never a pass.
    Inconclusive,
    /// Not run because a step it needs failed (or the plan leaves it out).
    Skipped,
}

/// The outcome of one step.
#[derive(Debug, Clone, Serialize)]
pub struct StepReport {
    /// Short name: storage, communication, training, merge, serving, review, cleanup.
    pub name: &'static str,
    /// What the step is for, in the course's words.
    pub title: &'static str,
    /// How it ended.
    pub status: StepStatus,
    /// Why it failed or was skipped; the headline when it passed.
    pub reason: String,
    /// Wall time.
    pub seconds: f64,
    /// Facts found on the way (files read, transport used, loss, answers ...).
    pub details: Vec<String>,
}

impl StepReport {
    /// A step not run because `because` failed.
    pub fn skipped(name: &'static str, title: &'static str, because: &str) -> Self {
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
    pub fn passed(&self) -> bool {
        self.status == StepStatus::Passed
    }
}

/// What a step body returns: pass or fail with a reason, plus details.
#[derive(Debug, Default)]
pub struct Outcome {
    /// None: passed; Some(reason): failed.
    pub failure: Option<String>,
    /// Some(reason): the counters could not judge the step (only where no check failed).
    pub undecided: Option<String>,
    /// The headline when passed.
    pub headline: String,
    /// Facts.
    pub details: Vec<String>,
}

impl Outcome {
    /// A failure with `reason`, keeping the details gathered so far.
    pub fn fail(mut self, reason: impl Into<String>) -> Self {
        self.failure.get_or_insert(reason.into());
        self
    }

    /// The step cannot be judged: `reason` says why. A failure, if any, still wins.
    pub fn inconclusive(mut self, reason: impl Into<String>) -> Self {
        self.undecided.get_or_insert(reason.into());
        self
    }

    /// Records a fact.
    pub fn note(&mut self, fact: impl Into<String>) {
        self.details.push(fact.into());
    }
}

/// Who is told as steps start and end: `dpuctl` draws a spinner and a verdict line on
/// stderr; tests and embedders may watch or stay quiet. The library itself never prints.
pub trait StepObserver: Send + Sync {
    /// Step `index` of `total` (1-based) has started.
    fn started(&self, index: usize, total: usize, title: &str);
    /// Step `index` of `total` has ended with `report`.
    fn finished(&self, index: usize, total: usize, report: &StepReport);
}

/// An observer that ignores everything.
#[derive(Debug, Clone, Copy, Default)]
pub struct Quiet;

impl StepObserver for Quiet {
    fn started(&self, _index: usize, _total: usize, _title: &str) {}
    fn finished(&self, _index: usize, _total: usize, _report: &StepReport) {}
}

/// One running step: tells the observer it started, times it, and turns its outcome into
/// the step's report.
pub struct Progress<'a> {
    observer: &'a dyn StepObserver,
    started: Instant,
    index: usize,
    total: usize,
}

impl std::fmt::Debug for Progress<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Progress")
            .field("index", &self.index)
            .finish()
    }
}

impl<'a> Progress<'a> {
    /// Starts step `index` of `total`.
    pub fn start(observer: &'a dyn StepObserver, index: usize, total: usize, title: &str) -> Self {
        observer.started(index, total, title);
        Self {
            observer,
            started: Instant::now(),
            index,
            total,
        }
    }

    /// Ends the step and turns `outcome` into its report.
    pub fn finish(self, name: &'static str, title: &'static str, outcome: Outcome) -> StepReport {
        let seconds = self.started.elapsed().as_secs_f64();
        let (status, reason) = match (outcome.failure, outcome.undecided) {
            (Some(r), _) => (StepStatus::Failed, r),
            (None, Some(r)) => (StepStatus::Inconclusive, r),
            (None, None) => (StepStatus::Passed, outcome.headline),
        };
        let report = StepReport {
            name,
            title,
            status,
            reason,
            seconds,
            details: outcome.details,
        };
        self.observer.finished(self.index, self.total, &report);
        report
    }
}
