//! The runner with a fake knob and a fake measurement: phases in the plan's order, the
//! knob's value seen by each trial, and the original value restored (journal removed) at
//! the end, after a failed trial and after a cancel; a live journal refuses a run; a
//! failed restore keeps the journal.

use std::sync::{Arc, Mutex};

use super::*;
use crate::experiment::metric::Metric;
use crate::experiment::plan_load::parse;
use crate::experiment::verdict::ExperimentVerdict;

const MTU_PLAN: &str = r#"
trials = 5
[measurement]
kind = "command"
argv = ["bench"]
parser = "perftest"
[knob]
kind = "mtu"
interface = "fake0"
a = 1500
b = 9000
[metric]
better = "higher"
"#;

/// A knob in memory that logs every value applied.
#[derive(Debug, Clone)]
struct FakeKnob {
    value: Arc<Mutex<String>>,
    applied: Arc<Mutex<Vec<String>>>,
    refuse: Option<String>,
}

impl FakeKnob {
    fn at(value: &str) -> Self {
        Self {
            value: Arc::new(Mutex::new(value.to_owned())),
            applied: Arc::default(),
            refuse: None,
        }
    }
    fn now(&self) -> String {
        self.value.lock().expect("lock").clone()
    }
    fn applied(&self) -> Vec<String> {
        self.applied.lock().expect("lock").clone()
    }
}

impl MachineKnob for FakeKnob {
    fn describe(&self) -> String {
        "fake knob".to_owned()
    }
    fn read_current(&self) -> Result<String, KnobError> {
        Ok(self.now())
    }
    fn apply(&self, value: &str) -> Result<(), KnobError> {
        if self.refuse.as_deref() == Some(value) {
            return Err(KnobError::ReadBack {
                knob: "fake knob".to_owned(),
                wanted: value.to_owned(),
                found: self.now(),
            });
        }
        self.applied.lock().expect("lock").push(value.to_owned());
        *self.value.lock().expect("lock") = value.to_owned();
        Ok(())
    }
}

/// A measurement computed from the knob's value and the trial number.
struct FakeMeasure<F> {
    knob: Option<FakeKnob>,
    seen: Vec<(String, Vec<(String, String)>)>,
    number: F,
}

impl<F> Measure for FakeMeasure<F>
where
    F: FnMut(&str, usize, &Cancel) -> Result<f64, MeasureError> + Send,
{
    fn measure(
        &mut self,
        env: &[(String, String)],
        cancel: &Cancel,
    ) -> Result<Metric, MeasureError> {
        let value = self.knob.as_ref().map(FakeKnob::now).unwrap_or_default();
        self.seen.push((value.clone(), env.to_vec()));
        let n = self.seen.len();
        let key = env.first().map_or(value, |(_, v)| v.clone());
        Ok(Metric {
            value: (self.number)(&key, n, cancel)?,
            name: "fake Gb/s".to_owned(),
            rdma: None,
        })
    }
}

fn settings(dir: &Path) -> RunSettings {
    RunSettings {
        journal: dir.join("journal.json"),
        plan_file: dir.join("plan.toml"),
        root: dir.to_owned(),
        stats: StatsConfig::default(),
    }
}

/// Noise that repeats every 5 trials: ±1 around the level.
fn wobble(n: usize) -> f64 {
    [0.0, 0.7, -0.4, 1.0, -0.9][n % 5]
}

#[test]
fn phases_run_in_order_with_the_knob_set_and_the_original_restored() {
    let dir = tempfile::tempdir().expect("temp dir");
    let plan = parse(MTU_PLAN).expect("plan");
    let knob = FakeKnob::at("1500");
    let mut measure = FakeMeasure {
        knob: Some(knob.clone()),
        seen: Vec::new(),
        number: |mtu: &str, n, _: &Cancel| Ok(if mtu == "9000" { 120.0 } else { 100.0 } + wobble(n)),
    };
    let mut events = Vec::new();
    let report = run(
        &plan,
        &settings(dir.path()),
        Some(&knob),
        &mut measure,
        &Cancel::default(),
        &mut |e: &ExperimentEvent| events.push(e.clone()),
    )
    .expect("the run ends");
    assert_eq!(knob.applied(), ["1500", "9000", "1500", "1500"]);
    let seen: Vec<&str> = measure.seen.iter().map(|(v, _)| v.as_str()).collect();
    assert_eq!(seen[..5], ["1500"; 5]);
    assert_eq!(seen[5..10], ["9000"; 5]);
    assert_eq!(seen[10..], ["1500"; 5]);
    let labels: Vec<_> = events
        .iter()
        .filter_map(|e| match e {
            ExperimentEvent::Phase { label, value } => Some(format!("{label}={value}")),
            _ => None,
        })
        .collect();
    assert_eq!(labels, ["A1=1500", "B1=9000", "A2=1500"]);
    assert!(
        matches!(events.last(), Some(ExperimentEvent::Reverted { value, .. }) if value == "1500")
    );
    assert_eq!(report.analysis.verdict, ExperimentVerdict::Improvement);
    assert_eq!(report.restored.as_deref(), Some("1500"));
    assert_eq!(report.metric, "fake Gb/s");
    assert!(!dir.path().join("journal.json").exists());
}

#[test]
fn a_knob_that_does_not_matter_gives_no_effect() {
    let dir = tempfile::tempdir().expect("temp dir");
    let plan = parse(MTU_PLAN).expect("plan");
    let knob = FakeKnob::at("1500");
    let mut measure = FakeMeasure {
        knob: Some(knob.clone()),
        seen: Vec::new(),
        number: |_: &str, n, _: &Cancel| Ok(100.0 + wobble(n)),
    };
    let report = run(
        &plan,
        &settings(dir.path()),
        Some(&knob),
        &mut measure,
        &Cancel::default(),
        &mut |_: &ExperimentEvent| {},
    )
    .expect("the run ends");
    assert_eq!(report.analysis.verdict, ExperimentVerdict::NoEffect);
}

#[test]
fn a_machine_not_at_a_gets_a_first_and_its_own_value_back() {
    let dir = tempfile::tempdir().expect("temp dir");
    let plan = parse(MTU_PLAN).expect("plan");
    let knob = FakeKnob::at("4200");
    let mut measure = FakeMeasure {
        knob: Some(knob.clone()),
        seen: Vec::new(),
        number: |_: &str, n, _: &Cancel| Ok(100.0 + wobble(n)),
    };
    let mut events = Vec::new();
    run(
        &plan,
        &settings(dir.path()),
        Some(&knob),
        &mut measure,
        &Cancel::default(),
        &mut |e: &ExperimentEvent| events.push(e.clone()),
    )
    .expect("the run ends");
    assert!(events.contains(&ExperimentEvent::Original {
        knob: "fake knob".to_owned(),
        value: "4200".to_owned(),
        differs_from_a: true,
    }));
    assert_eq!(measure.seen[0].0, "1500");
    assert_eq!(knob.now(), "4200");
}

#[test]
fn a_failed_trial_restores_the_knob_and_names_the_phase() {
    let dir = tempfile::tempdir().expect("temp dir");
    let plan = parse(MTU_PLAN).expect("plan");
    let knob = FakeKnob::at("1500");
    let journal = dir.path().join("journal.json");
    let journal_seen = journal.clone();
    let mut measure = FakeMeasure {
        knob: Some(knob.clone()),
        seen: Vec::new(),
        number: move |mtu: &str, _, _: &Cancel| {
            assert!(
                journal_seen.exists(),
                "the journal is written before trials"
            );
            if mtu == "9000" {
                Err(MeasureError::Unsupported("bench crashed".to_owned()))
            } else {
                Ok(100.0)
            }
        },
    };
    let err = run(
        &plan,
        &settings(dir.path()),
        Some(&knob),
        &mut measure,
        &Cancel::default(),
        &mut |_: &ExperimentEvent| {},
    )
    .expect_err("B's first trial fails");
    assert!(
        matches!(&err, RunError::Trial { label, trial: 1, .. } if label == "B1"),
        "{err}"
    );
    assert_eq!(knob.now(), "1500");
    assert_eq!(knob.applied().last().map(String::as_str), Some("1500"));
    assert!(!journal.exists());
}

#[test]
fn a_cancel_mid_phase_stops_the_trials_and_restores_the_knob() {
    let dir = tempfile::tempdir().expect("temp dir");
    let plan = parse(MTU_PLAN).expect("plan");
    let knob = FakeKnob::at("1500");
    let cancel = Cancel::default();
    let trigger = cancel.clone();
    let mut measure = FakeMeasure {
        knob: Some(knob.clone()),
        seen: Vec::new(),
        number: move |_: &str, n, _: &Cancel| {
            if n == 7 {
                trigger.set();
            }
            Ok(100.0)
        },
    };
    let err = run(
        &plan,
        &settings(dir.path()),
        Some(&knob),
        &mut measure,
        &cancel,
        &mut |_: &ExperimentEvent| {},
    )
    .expect_err("cancelled");
    assert!(
        matches!(&err, RunError::Cancelled { label } if label == "B1"),
        "{err}"
    );
    assert_eq!(measure.seen.len(), 7, "no trial after the cancel");
    assert_eq!(knob.now(), "1500");
    assert!(!dir.path().join("journal.json").exists());
}

#[test]
fn a_live_journal_refuses_the_run_before_the_knob_is_touched() {
    let dir = tempfile::tempdir().expect("temp dir");
    let plan = parse(MTU_PLAN).expect("plan");
    let settings = settings(dir.path());
    let other = JournalEntry::for_this_process(
        JournalKnob::Mtu {
            interface: "fake0".to_owned(),
        },
        "1500".to_owned(),
        Path::new("/plans/other.toml"),
    );
    journal::write_new(&settings.journal, &other).expect("written");
    let knob = FakeKnob::at("1500");
    let mut measure = FakeMeasure {
        knob: Some(knob.clone()),
        seen: Vec::new(),
        number: |_: &str, _, _: &Cancel| Ok(1.0),
    };
    let err = run(
        &plan,
        &settings,
        Some(&knob),
        &mut measure,
        &Cancel::default(),
        &mut |_: &ExperimentEvent| {},
    )
    .expect_err("refused");
    assert!(
        err.to_string()
            .starts_with("another experiment is running: pid"),
        "{err}"
    );
    assert!(knob.applied().is_empty());
    assert!(measure.seen.is_empty());
    assert!(settings.journal.exists());
}

#[test]
fn a_restore_that_fails_keeps_the_journal_and_says_so() {
    let dir = tempfile::tempdir().expect("temp dir");
    let plan = parse(MTU_PLAN).expect("plan");
    let mut knob = FakeKnob::at("4200");
    knob.refuse = Some("4200".to_owned());
    let mut measure = FakeMeasure {
        knob: Some(knob.clone()),
        seen: Vec::new(),
        number: |_: &str, n, _: &Cancel| Ok(100.0 + wobble(n)),
    };
    let err = run(
        &plan,
        &settings(dir.path()),
        Some(&knob),
        &mut measure,
        &Cancel::default(),
        &mut |_: &ExperimentEvent| {},
    )
    .expect_err("the restore fails");
    assert!(matches!(err, RunError::Revert { after: None, .. }), "{err}");
    let kept = journal::read(&dir.path().join("journal.json"))
        .expect("readable")
        .expect("kept");
    assert_eq!(kept.original, "4200");
}

#[test]
fn an_env_knob_reaches_the_measurement_and_needs_no_journal() {
    let dir = tempfile::tempdir().expect("temp dir");
    let plan = parse(&MTU_PLAN.replace(
        "kind = \"mtu\"\ninterface = \"fake0\"\na = 1500\nb = 9000",
        "kind = \"env\"\nname = \"NCCL_ALGO\"\na = \"Ring\"\nb = \"Tree\"",
    ))
    .expect("plan");
    let mut measure = FakeMeasure {
        knob: None,
        seen: Vec::new(),
        number: |algo: &str, n, _: &Cancel| {
            Ok(if algo == "Tree" { 80.0 } else { 100.0 } + wobble(n))
        },
    };
    let report = run(
        &plan,
        &settings(dir.path()),
        None,
        &mut measure,
        &Cancel::default(),
        &mut |_: &ExperimentEvent| {},
    )
    .expect("the run ends");
    let algos: Vec<&str> = measure
        .seen
        .iter()
        .map(|(_, env)| env[0].1.as_str())
        .collect();
    assert_eq!(algos[4..6], ["Ring", "Tree"]);
    assert!(measure.seen.iter().all(|(_, env)| env[0].0 == "NCCL_ALGO"));
    assert_eq!(report.analysis.verdict, ExperimentVerdict::Regression);
    assert_eq!(report.knob, "env NCCL_ALGO");
    assert_eq!(report.restored, None);
}

/// A refusal as a `roce-perf` trial whose counters stayed still would give.
fn refused(value: f64) -> MeasureError {
    use crate::roce::perf::{PerfRun, PerfTest};
    use crate::roce::rdma_evidence::CounterSource;
    let rdma = PerfRun::empty(PerfTest::WriteBw, 65_536, CounterSource::Sysfs).rdma;
    MeasureError::Refused(Box::new(crate::experiment::measure::Refusal {
        value,
        name: "fake Gb/s".to_owned(),
        reason: "NOT PROVEN: the RDMA port moved 0 packets".to_owned(),
        rdma,
    }))
}

/// Runs the MTU plan with B at 120 and A at 100; `refuse(mtu, n)` says which trials'
/// counters did not corroborate them.
fn run_refusing(refuse: fn(&str, usize) -> bool) -> (RunReport, Vec<ExperimentEvent>, FakeKnob) {
    let dir = tempfile::tempdir().expect("temp dir");
    let plan = parse(MTU_PLAN).expect("plan");
    let knob = FakeKnob::at("1500");
    let mut measure = FakeMeasure {
        knob: Some(knob.clone()),
        seen: Vec::new(),
        number: move |mtu: &str, n, _: &Cancel| {
            let value = if mtu == "9000" { 120.0 } else { 100.0 } + wobble(n);
            if refuse(mtu, n) {
                Err(refused(value))
            } else {
                Ok(value)
            }
        },
    };
    let mut events = Vec::new();
    let report = run(
        &plan,
        &settings(dir.path()),
        Some(&knob),
        &mut measure,
        &Cancel::default(),
        &mut |e: &ExperimentEvent| events.push(e.clone()),
    )
    .expect("a refused trial does not stop the run");
    assert!(!dir.path().join("journal.json").exists());
    (report, events, knob)
}

#[test]
fn a_refused_trial_is_named_in_the_verdict_and_never_a_data_point() {
    // The 7th trial (B1 trial 2) is refused; it would have been the phase's best.
    let (report, events, knob) = run_refusing(|_, n| n == 7);
    assert_eq!(knob.now(), "1500");
    let b = &report.analysis.phases[1];
    assert_eq!(b.label, "B1");
    assert_eq!(b.trials.len(), 4, "{b:?}");
    assert!(!b.trials.contains(&(120.0 + wobble(7))), "{b:?}");
    assert_eq!(report.trials.len(), 15);
    let not_counted: Vec<_> = report.trials.iter().filter(|t| !t.counted).collect();
    assert_eq!(not_counted.len(), 1);
    assert_eq!(
        (not_counted[0].phase.as_str(), not_counted[0].trial),
        ("B1", 2)
    );
    assert!(not_counted[0]
        .refused
        .as_deref()
        .is_some_and(|r| r.starts_with("NOT PROVEN")));
    assert!(not_counted[0].rdma.is_some());
    assert_eq!(report.analysis.verdict, ExperimentVerdict::Improvement);
    assert!(
        report.analysis.summary.contains("1 refused")
            && report.analysis.summary.contains("B1 trial 2"),
        "{}",
        report.analysis.summary
    );
    assert!(events
        .iter()
        .any(|e| matches!(e, ExperimentEvent::Refused { label, trial: 2, .. } if label == "B1")));
}

#[test]
fn the_same_run_with_every_trial_corroborated_counts_all_of_them() {
    // The negative control of the test above.
    let (report, events, _) = run_refusing(|_, _| false);
    assert_eq!(report.analysis.phases[1].trials.len(), 5);
    assert!(report
        .trials
        .iter()
        .all(|t| t.counted && t.refused.is_none()));
    assert!(
        !report.analysis.summary.contains("refused"),
        "{}",
        report.analysis.summary
    );
    assert!(!events
        .iter()
        .any(|e| matches!(e, ExperimentEvent::Refused { .. })));
}

#[test]
fn a_phase_whose_counters_never_corroborate_makes_the_verdict_inconclusive() {
    let (report, _, knob) = run_refusing(|mtu, _| mtu == "9000");
    assert_eq!(knob.now(), "1500");
    assert_eq!(report.analysis.verdict, ExperimentVerdict::Inconclusive);
    assert!(report.analysis.phases[1].trials.is_empty());
    assert!(
        report.analysis.doubts.iter().any(|d| matches!(d, crate::experiment::verdict::Doubt::TooFewTrials { phase, trials: 0, .. } if phase == "B1")),
        "{:?}",
        report.analysis.doubts
    );
    assert!(
        report.analysis.summary.contains("5 refused"),
        "{}",
        report.analysis.summary
    );
}
