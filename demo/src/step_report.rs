//! One step of the demo as the report shows it: what it checked, whether it passed and
//! why, how long it took, and the numbers behind the verdict. Shared by both executors so
//! the review reads the same whichever ran.

use std::sync::{Mutex, PoisonError};
use std::time::Instant;

use dpu_host::observe::Observer;

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
pub struct StepOutcome {
    /// None: passed; Some(reason): failed.
    pub failure: Option<String>,
    /// Some(reason): the counters could not judge the step (only where no check failed).
    pub undecided: Option<String>,
    /// The headline when passed.
    pub headline: String,
    /// Facts.
    pub details: Vec<String>,
}

impl StepOutcome {
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

/// What a run tells its observer as steps start and end (`dpuctl` draws a spinner and a
/// verdict line on stderr; tests and embedders may watch or [`Ignore`] it). The library
/// itself never prints.
///
/// [`Ignore`]: dpu_host::observe::Ignore
#[derive(Debug, Clone, Copy)]
pub enum StepEvent<'a> {
    /// Step `index` of `total` (1-based) has started.
    Started {
        /// 1-based.
        index: usize,
        /// Steps in the run.
        total: usize,
        /// What the step is for.
        title: &'a str,
    },
    /// Step `index` of `total` has ended with `report`.
    Finished {
        /// 1-based.
        index: usize,
        /// Steps in the run.
        total: usize,
        /// How it ended.
        report: &'a StepReport,
    },
}

/// The run's observer as its steps share it: every step of a run holds the same one
/// (the context is `Copy` and lives across awaits), so the `&mut` observer the caller
/// lent is behind a lock, taken only to tell one event. `Send` so a run stays a `Send`
/// future.
pub struct SharedObserver<'o> {
    observer: Mutex<&'o mut (dyn for<'e> Observer<StepEvent<'e>> + Send)>,
}

impl<'o> SharedObserver<'o> {
    /// Shares `observer` between the steps of one run.
    pub fn new(observer: &'o mut (dyn for<'e> Observer<StepEvent<'e>> + Send)) -> Self {
        Self {
            observer: Mutex::new(observer),
        }
    }

    /// Tells `event`. An observer that panicked on an earlier event is still told: the
    /// lock only keeps events apart, it guards no state of the run.
    fn tell(&self, event: &StepEvent<'_>) {
        let mut observer = self.observer.lock().unwrap_or_else(PoisonError::into_inner);
        observer.event(event);
    }
}

impl std::fmt::Debug for SharedObserver<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SharedObserver").finish_non_exhaustive()
    }
}

/// One running step: tells the observer it started, times it, and turns its outcome into
/// the step's report.
pub struct Progress<'a> {
    observer: &'a SharedObserver<'a>,
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
    pub fn start(
        observer: &'a SharedObserver<'a>,
        index: usize,
        total: usize,
        title: &str,
    ) -> Self {
        observer.tell(&StepEvent::Started {
            index,
            total,
            title,
        });
        Self {
            observer,
            started: Instant::now(),
            index,
            total,
        }
    }

    /// Ends the step and turns `outcome` into its report.
    pub fn finish(
        self,
        name: &'static str,
        title: &'static str,
        outcome: StepOutcome,
    ) -> StepReport {
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
        self.observer.tell(&StepEvent::Finished {
            index: self.index,
            total: self.total,
            report: &report,
        });
        report
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What a recording observer kept of one event.
    fn seen(event: &StepEvent<'_>) -> String {
        match event {
            StepEvent::Started {
                index,
                total,
                title,
            } => format!("started {index}/{total} {title}"),
            StepEvent::Finished {
                index,
                total,
                report,
            } => format!(
                "finished {index}/{total} {} {:?} {}",
                report.name, report.status, report.reason
            ),
        }
    }

    #[test]
    fn a_step_tells_its_start_then_its_report_as_returned() {
        let mut events = Vec::new();
        let mut record = |event: &StepEvent<'_>| events.push(seen(event));
        // The steps of a run share one observer for the whole run.
        let (passed, failed) = {
            let shared = SharedObserver::new(&mut record);
            let passed = Progress::start(&shared, 2, 7, "storage through the DPU").finish(
                "storage",
                "storage through the DPU",
                StepOutcome {
                    headline: "read 1 file".to_owned(),
                    ..StepOutcome::default()
                },
            );
            let failed = Progress::start(&shared, 3, 7, "communication").finish(
                "communication",
                "communication",
                StepOutcome::default().fail("no NET/IB"),
            );
            (passed, failed)
        };
        assert_eq!(passed.status, StepStatus::Passed);
        assert_eq!(failed.status, StepStatus::Failed);
        assert_eq!(
            events,
            [
                "started 2/7 storage through the DPU",
                "finished 2/7 storage Passed read 1 file",
                "started 3/7 communication",
                "finished 3/7 communication Failed no NET/IB",
            ]
        );
    }

    /// Built, not run: a run stays a `Send` future while its steps share the observer (why
    /// the observer the caller lends is `+ Send`); without that bound this does not build.
    #[allow(dead_code)]
    fn a_run_is_a_send_future(
        session: &dpu_host::agent::session::Session,
        args: &crate::run::TrainingStorage,
        observer: &mut (dyn for<'e> Observer<StepEvent<'e>> + Send),
    ) {
        fn send<T: Send>(_: T) {}
        send(crate::run::training_storage(session, args, observer));
    }
}
