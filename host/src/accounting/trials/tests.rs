//! The dose–response rules on judged lines: agreement between trials, quiet gaps, and the
//! verdict over both, each with the control that keeps it honest.

use dpu_probe::snapshot::Source;

use super::*;
use crate::accounting::{Expectation, Rule, Select, Side};

const WITNESS: &str = "DPU volumes/r0n1 served the read";
const CONTROL: &str = "host NICs did not carry the data";
const MIB: u64 = 1 << 20;

fn expectation(name: &str, rule: Rule) -> Expectation {
    Expectation {
        name: name.to_owned(),
        select: Select {
            side: Side::Dpu,
            source: Source::Volume,
            objects: vec!["volumes/r0n1".to_owned()],
            counter: "bytes_read".to_owned(),
        },
        rule,
        why: String::new(),
        if_failed: String::new(),
        traffic: 0,
        waiver: None,
        unformed: None,
    }
}

/// A judged line with `net` and `outcome`.
fn judged(name: &str, rule: Rule, net: u64, outcome: Outcome) -> Line {
    Line {
        expectation: expectation(name, rule),
        before: Some(0),
        after: Some(net),
        delta: Some(net),
        background: Some(0),
        net: Some(net),
        outcome,
    }
}

/// A trial whose volume counted `net` for `work` bytes read (judged by the N..1.5N rule)
/// and whose host NIC stayed still.
fn trial(work: u64, net: u64) -> Vec<Line> {
    let rule = Rule::Between(work, work + work / 2);
    let outcome = if rule.holds(net) {
        Outcome::Met
    } else {
        Outcome::NotMet("not served".to_owned())
    };
    vec![
        judged(WITNESS, rule, net, outcome),
        judged(CONTROL, Rule::AtMost(work / 20), 0, Outcome::Met),
    ]
}

fn outcome<'a>(lines: &'a [Line], name: &str) -> &'a Outcome {
    &lines
        .iter()
        .find(|l| l.expectation.name == name)
        .expect("line")
        .outcome
}

#[test]
fn weights_alternate_so_no_two_neighbouring_trials_are_alike() {
    assert_eq!(weights(1), vec![1]);
    assert_eq!(weights(3), vec![1, 2, 1]);
    assert_eq!(weights(4), vec![1, 2, 1, 2]);
}

#[test]
fn trials_that_count_their_own_work_agree_and_stay_met() {
    let work = [16 * MIB, 32 * MIB, 16 * MIB];
    let mut trials: Vec<Vec<Line>> = work.iter().map(|&w| trial(w, w + 4096)).collect();
    hold_to_agreement(&mut trials, &work, WITNESS);
    for lines in &trials {
        assert_eq!(*outcome(lines, WITNESS), Outcome::Met);
    }
    assert_eq!(verdict(&trials, &[]), Verdict::Proven);
}

/// Another reader adds 7 MiB during the first trial only: 16 + 7 MiB is within that
/// trial's 16..24 MiB, so one window would be met; against the other trials it is 1.44
/// per byte where they count 1.00, and the trial is named.
#[test]
fn a_reader_during_one_trial_makes_that_trial_disagree_and_the_proof_inconclusive() {
    let work = [16 * MIB, 32 * MIB, 16 * MIB];
    let mut trials = vec![
        trial(work[0], work[0] + 7 * MIB),
        trial(work[1], work[1]),
        trial(work[2], work[2]),
    ];
    assert_eq!(
        *outcome(&trials[0], WITNESS),
        Outcome::Met,
        "one window passes"
    );
    hold_to_agreement(&mut trials, &work, WITNESS);
    match outcome(&trials[0], WITNESS) {
        Outcome::Inconclusive(why) => {
            assert!(why.starts_with("trial 1:"), "{why}");
            assert!(why.contains("volumes/r0n1 bytes_read"), "{why}");
        }
        other => panic!("trial 1 must disagree: {other:?}"),
    }
    assert_eq!(*outcome(&trials[1], WITNESS), Outcome::Met);
    assert_eq!(*outcome(&trials[2], WITNESS), Outcome::Met);
    assert_eq!(verdict(&trials, &[]), Verdict::Inconclusive);
}

/// Within the tolerance is agreement: 5% more in one trial is not a reader.
#[test]
fn a_small_difference_between_trials_is_agreement() {
    let work = [16 * MIB, 32 * MIB, 16 * MIB];
    let mut trials = vec![
        trial(work[0], work[0] + work[0] / 20),
        trial(work[1], work[1]),
        trial(work[2], work[2]),
    ];
    hold_to_agreement(&mut trials, &work, WITNESS);
    assert_eq!(*outcome(&trials[0], WITNESS), Outcome::Met);
}

/// A line that already failed keeps its failure; one trial alone has nothing to agree with.
#[test]
fn agreement_never_turns_a_failure_into_anything_else_and_needs_two_trials() {
    let work = [16 * MIB, 32 * MIB];
    let mut trials = vec![trial(work[0], 0), trial(work[1], work[1])];
    hold_to_agreement(&mut trials, &work, WITNESS);
    assert!(matches!(outcome(&trials[0], WITNESS), Outcome::NotMet(_)));

    let mut alone = vec![trial(work[0], work[0] + 7 * MIB)];
    hold_to_agreement(&mut alone, &work[..1], WITNESS);
    assert_eq!(*outcome(&alone[0], WITNESS), Outcome::Met);
}

#[test]
fn a_gap_line_not_met_is_inconclusive_and_a_quiet_one_is_met() {
    use dpu_probe::snapshot::{diff, Sample, Snapshot, Unit};
    use std::time::{Duration, SystemTime};
    let at = |secs: u64, value: u64| Snapshot {
        taken_at: SystemTime::UNIX_EPOCH,
        monotonic_start: Duration::from_secs(secs),
        monotonic_end: Duration::from_secs(secs),
        boot_id: Some("boot".to_owned()),
        samples: vec![Sample::cumulative(
            Source::Volume,
            "volumes/r0n1".to_owned(),
            "bytes_read".to_owned(),
            value,
            Unit::Bytes,
        )],
        errors: Vec::new(),
        read: dpu_probe::snapshot::ReadReport::default(),
    };
    let gap = expectation("nothing else read volumes/r0n1", Rule::AtMost(MIB));
    let evidence = |moved: u64| Evidence {
        host: diff(&at(0, 0), &at(1, 0)),
        dpu: diff(&at(2, 100), &at(3, 100 + moved)),
        host_background: None,
        dpu_background: Some(diff(&at(0, 100), &at(1, 100))),
        far_end: None,
        far_end_background: None,
    };
    let busy = judge_gap(std::slice::from_ref(&gap), &evidence(8 * MIB));
    match &busy[0].outcome {
        Outcome::Inconclusive(why) => assert!(why.contains("no workload ran"), "{why}"),
        other => panic!("a busy gap is inconclusive: {other:?}"),
    }
    let quiet = judge_gap(std::slice::from_ref(&gap), &evidence(4096));
    assert_eq!(quiet[0].outcome, Outcome::Met);
}

#[test]
fn the_verdict_over_trials_and_gaps() {
    let work = 16 * MIB;
    let met = || trial(work, work);
    let failed = || trial(work, 0);
    let quiet = vec![judged("gap", Rule::AtMost(MIB), 0, Outcome::Met)];
    let busy = vec![judged(
        "gap",
        Rule::AtMost(MIB),
        8 * MIB,
        Outcome::Inconclusive("moved while no workload ran".to_owned()),
    )];
    // Every trial met, every gap quiet.
    assert_eq!(
        verdict(&[met(), met()], std::slice::from_ref(&quiet)),
        Verdict::Proven
    );
    // Control: one busy gap is enough to withhold PROVEN.
    assert_eq!(
        verdict(&[met(), met()], std::slice::from_ref(&busy)),
        Verdict::Inconclusive
    );
    // Every trial failed: the read did not go that way.
    assert_eq!(verdict(&[failed(), failed()], &[]), Verdict::NotProven);
    // Some met, some failed: the counters did not follow the workload.
    assert_eq!(verdict(&[met(), failed()], &[]), Verdict::Inconclusive);
    // A negative control that failed in one trial: the data went another way at least once.
    let mut bypass = met();
    bypass[1] = judged(
        CONTROL,
        Rule::AtMost(work / 20),
        work,
        Outcome::NotMet("bytes crossed the host's own NIC".to_owned()),
    );
    assert_eq!(verdict(&[met(), bypass], &[]), Verdict::NotProven);
    // No trial at all proves nothing.
    assert_eq!(verdict(&[], &[]), Verdict::Inconclusive);
}
