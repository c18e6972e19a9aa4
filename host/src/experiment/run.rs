//! Running a plan: recover a dead experiment's journal, journal the knob's original value,
//! set A, run the phases in the plan's order (each trial one [`Measure`]ment, one
//! number), and put the original value back whatever happens (the end, a failed trial, a
//! cancel from Ctrl-C or SIGTERM), then judge the trials ([`super::stats::analyse`]).
//!
//! If the machine's value is not A when the experiment starts, A is applied first and
//! the value found is what the journal records and the end restores: the experiment
//! measures A and B, and leaves the machine as it found it.

use std::path::{Path, PathBuf};

use serde::Serialize;

pub use super::cancel::Cancel;
use super::design::Arm;
use super::journal::{self, JournalEntry, JournalError, JournalKnob, Recovery};
use super::knob::{values_text, KnobError, MachineKnob};
use super::measure::{Measure, MeasureError};
use super::plan::{Knob, Plan};
use super::stats::{analyse, StatsConfig, StatsError};
use super::verdict::Analysis;
use crate::observe::Observer;
use crate::roce::perf::RdmaEvidence;

/// Where a run keeps its journal and finds the kernel's files.
#[derive(Debug, Clone)]
pub struct RunSettings {
    /// The journal file.
    pub journal: PathBuf,
    /// The plan file, recorded in the journal.
    pub plan_file: PathBuf,
    /// `/` on a machine; a temporary directory in tests.
    pub root: PathBuf,
    /// The statistics' settings.
    pub stats: StatsConfig,
}

/// What happens during a run, in order, for progress output.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum ExperimentEvent {
    /// A journal left by a dead experiment was undone before starting.
    Recovered {
        /// The knob.
        knob: String,
        /// The value restored.
        original: String,
        /// The dead experiment's pid.
        pid: u32,
    },
    /// The knob's value when the experiment started.
    Original {
        /// The knob.
        knob: String,
        /// Its value.
        value: String,
        /// Whether it differs from A (then A is applied first, and this value restored
        /// at the end).
        differs_from_a: bool,
    },
    /// A phase starts with the knob at `value`.
    Phase {
        /// `A1`, `B1`, ...
        label: String,
        /// The knob's value.
        value: String,
    },
    /// A trial gave its number.
    Trial {
        /// The phase.
        label: String,
        /// 1-based within the phase.
        trial: u32,
        /// The metric.
        value: f64,
    },
    /// A trial ran but its counters did not corroborate it: refused, not counted.
    Refused {
        /// The phase.
        label: String,
        /// 1-based within the phase.
        trial: u32,
        /// The number it would have given.
        value: f64,
        /// Why it is refused.
        reason: String,
    },
    /// The knob is back at its original value and the journal removed.
    Reverted {
        /// The knob.
        knob: String,
        /// The value restored.
        value: String,
    },
}

/// What a finished run reports.
#[derive(Debug, Clone, Serialize)]
pub struct RunReport {
    /// The knob, described (`mtu of ens1f0np0`, `env NCCL_ALGO`).
    pub knob: String,
    /// Its A and B as text.
    pub a: String,
    /// B.
    pub b: String,
    /// What the metric measures (`BW average Gb/s at 65536 B`).
    pub metric: String,
    /// Every trial, per phase, and the verdict.
    pub analysis: Analysis,
    /// Every trial in the order run, refused ones included, with the counters that
    /// corroborated (or refused) it where the measurement has them.
    pub trials: Vec<TrialRecord>,
    /// The value the knob was restored to (`None` for an env knob).
    pub restored: Option<String>,
}

/// One trial as run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TrialRecord {
    /// The phase, `A1`, `B1`, ...
    pub phase: String,
    /// 1-based within the phase.
    pub trial: u32,
    /// The number the measurement gave.
    pub value: f64,
    /// Whether it is one of the data points; false for a refused trial.
    pub counted: bool,
    /// Why it was refused (`INCONCLUSIVE: ...`, `NOT PROVEN: ...`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub refused: Option<String>,
    /// The RDMA port's counters around it (`roce-perf`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rdma: Option<RdmaEvidence>,
}

/// Why a run stopped without a verdict. Every variant is raised after the knob was
/// restored, except [`RunError::Revert`], which says it could not be.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RunError {
    /// The journal refused (another experiment running, unreadable) or could not be written.
    #[error(transparent)]
    Journal(#[from] JournalError),
    /// Reading or applying the knob failed.
    #[error(transparent)]
    Knob(#[from] KnobError),
    /// A trial failed.
    #[error("phase {label} trial {trial}")]
    Trial {
        /// The phase.
        label: String,
        /// The trial.
        trial: u32,
        /// Why.
        #[source]
        source: MeasureError,
    },
    /// The run was cancelled (Ctrl-C, SIGTERM).
    #[error("cancelled during phase {label}; the knob was restored")]
    Cancelled {
        /// The phase running when it was cancelled.
        label: String,
    },
    /// The trials gave different kinds of metric (a perftest table that changed type).
    #[error("trial metrics differ: {first} then {then}")]
    MixedMetrics {
        /// The first trial's.
        first: String,
        /// A later one's.
        then: String,
    },
    /// The statistics refused the trials.
    #[error(transparent)]
    Stats(#[from] StatsError),
    /// The knob could not be restored: the journal is kept, and `dpuctl experiment
    /// recover` retries.
    #[error("the knob could not be restored (the journal {} is kept; run `dpuctl experiment recover`){}",
        journal.display(),
        after.as_deref().map(|e| format!(" after: {e}")).unwrap_or_default())]
    Revert {
        /// The journal.
        journal: PathBuf,
        /// The run's own error, when the revert followed one.
        after: Option<Box<RunError>>,
        /// Why the restore failed.
        #[source]
        source: Box<KnobError>,
    },
}

/// Runs `plan`: `knob` is its machine control (`None` for an env knob), `measure` one
/// trial. The knob is restored and the journal removed before this returns, unless the
/// error says otherwise.
pub fn run(
    plan: &Plan,
    settings: &RunSettings,
    knob: Option<&dyn MachineKnob>,
    measure: &mut dyn Measure,
    cancel: &Cancel,
    observer: &mut dyn Observer<ExperimentEvent>,
) -> Result<RunReport, RunError> {
    if let Recovery::Restored {
        knob,
        original,
        pid,
        ..
    } = journal::recover(&settings.journal, &settings.root)?
    {
        observer.event(&ExperimentEvent::Recovered {
            knob,
            original,
            pid,
        });
    }
    let (a, b) = values_text(&plan.knob);
    let described = match (&plan.knob, knob) {
        (Knob::Env { name, .. }, _) => format!("env {name}"),
        (_, Some(k)) => k.describe(),
        (_, None) => "knob".to_owned(),
    };
    let Some(control) = knob else {
        let trials = run_phases(plan, None, measure, cancel, observer, (&a, &b))?;
        return finish(plan, settings, described, (a, b), trials, None);
    };
    let original = control.read_current()?;
    let Some(journal_knob) = JournalKnob::of(&plan.knob) else {
        return Err(RunError::Knob(KnobError::Unsupported {
            knob: described,
            why: "no journal form".to_owned(),
        }));
    };
    let entry = JournalEntry::for_this_process(journal_knob, original.clone(), &settings.plan_file);
    journal::write_new(&settings.journal, &entry)?;
    observer.event(&ExperimentEvent::Original {
        knob: described.clone(),
        value: original.clone(),
        differs_from_a: original != a,
    });
    let result = run_phases(plan, Some(control), measure, cancel, observer, (&a, &b));
    if let Err(source) = control.apply(&original) {
        return Err(RunError::Revert {
            journal: settings.journal.clone(),
            after: result.err().map(Box::new),
            source: Box::new(source),
        });
    }
    journal::remove(&settings.journal)?;
    observer.event(&ExperimentEvent::Reverted {
        knob: described.clone(),
        value: original.clone(),
    });
    let trials = result?;
    finish(plan, settings, described, (a, b), trials, Some(original))
}

/// The trials of every phase with their metric's name, and every trial as run.
struct Trials {
    phases: Vec<Vec<f64>>,
    metric: String,
    records: Vec<TrialRecord>,
}

/// Runs the phases; the caller restores the knob whatever this returns.
fn run_phases(
    plan: &Plan,
    control: Option<&dyn MachineKnob>,
    measure: &mut dyn Measure,
    cancel: &Cancel,
    observer: &mut dyn Observer<ExperimentEvent>,
    (a, b): (&str, &str),
) -> Result<Trials, RunError> {
    let mut phases = Vec::new();
    let mut records = Vec::new();
    let mut metric: Option<String> = None;
    let labels = plan.order.labels();
    for (arm, label) in plan.order.arms().iter().zip(labels) {
        if cancel.is_set() {
            return Err(RunError::Cancelled { label });
        }
        let value = match arm {
            Arm::A => a,
            Arm::B => b,
        };
        if let Some(control) = control {
            control.apply(value)?;
        }
        let env = match &plan.knob {
            Knob::Env { name, .. } => vec![(name.clone(), value.to_owned())],
            _ => Vec::new(),
        };
        observer.event(&ExperimentEvent::Phase {
            label: label.clone(),
            value: value.to_owned(),
        });
        let mut values = Vec::new();
        for trial in 1..=plan.trials {
            if cancel.is_set() {
                return Err(RunError::Cancelled { label });
            }
            let result = match measure.measure(&env, cancel) {
                Ok(result) => result,
                Err(MeasureError::Cancelled) => return Err(RunError::Cancelled { label }),
                Err(MeasureError::Refused(refusal)) => {
                    observer.event(&ExperimentEvent::Refused {
                        label: label.clone(),
                        trial,
                        value: refusal.value,
                        reason: refusal.reason.clone(),
                    });
                    records.push(TrialRecord {
                        phase: label.clone(),
                        trial,
                        value: refusal.value,
                        counted: false,
                        refused: Some(refusal.reason),
                        rdma: Some(refusal.rdma),
                    });
                    continue;
                }
                Err(source) => {
                    return Err(RunError::Trial {
                        label,
                        trial,
                        source,
                    })
                }
            };
            match &metric {
                None => metric = Some(result.name.clone()),
                Some(first) if *first != result.name => {
                    return Err(RunError::MixedMetrics {
                        first: first.clone(),
                        then: result.name,
                    })
                }
                Some(_) => {}
            }
            observer.event(&ExperimentEvent::Trial {
                label: label.clone(),
                trial,
                value: result.value,
            });
            values.push(result.value);
            records.push(TrialRecord {
                phase: label.clone(),
                trial,
                value: result.value,
                counted: true,
                refused: None,
                rdma: result.rdma,
            });
        }
        phases.push(values);
    }
    Ok(Trials {
        phases,
        metric: metric.unwrap_or_default(),
        records,
    })
}

fn finish(
    plan: &Plan,
    settings: &RunSettings,
    knob: String,
    (a, b): (String, String),
    trials: Trials,
    restored: Option<String>,
) -> Result<RunReport, RunError> {
    let mut analysis = analyse(plan.order, &trials.phases, plan.better, &settings.stats)?;
    let refused: Vec<String> = trials
        .records
        .iter()
        .filter(|r| !r.counted)
        .map(|r| format!("{} trial {}", r.phase, r.trial))
        .collect();
    if !refused.is_empty() {
        analysis.summary = format!(
            "{} ({} refused, not counted: their RDMA counters did not corroborate the \
             traffic: {})",
            analysis.summary,
            refused.len(),
            refused.join(", ")
        );
    }
    Ok(RunReport {
        knob,
        a,
        b,
        metric: trials.metric,
        analysis,
        trials: trials.records,
        restored,
    })
}

/// The default settings for a plan file: the journal at `journal`, files under `/`.
pub fn settings(plan_file: &Path, journal: &Path) -> RunSettings {
    RunSettings {
        journal: journal.to_owned(),
        plan_file: plan_file.to_owned(),
        root: PathBuf::from("/"),
        stats: StatsConfig::default(),
    }
}

#[cfg(test)]
mod tests;
