//! The switch proof as trials, from in-memory counters: the workload's packets through the
//! offload, and each way other traffic shows in trials and gaps, with the receiver's own
//! count as a second witness, through [`judge`] with three trials (`switch::run`'s
//! default).

use super::*;
use crate::accounting::measure::fixture::readings;
use crate::accounting::measure::Trials;
use crate::accounting::trials::MAX_TRIALS;

/// `--packets 400 --trials 3`: 100, 200 and 100 packets.
const WORK: [u64; 3] = [100, 200, 100];
/// The receiver's interface, as its agent reports it.
const RECEIVER_IF: &str = "netdevs/t1";

/// Growth per segment of a three-trial run: the idle window, the step before the first
/// trial (the warm-up), trial 1, gap 1, trial 2, gap 2, trial 3.
type Segments = [u64; 7];

/// Each trial's own packets plus `extra`, nothing in the idle window or the gaps.
fn per_trial(extra: [u64; 3]) -> Segments {
    [
        0,
        3,
        WORK[0] + extra[0],
        0,
        WORK[1] + extra[1],
        0,
        WORK[2] + extra[2],
    ]
}

fn trial_args(far_end: bool) -> SwitchParams {
    SwitchParams {
        trials: 3,
        far_end: far_end.then(|| Receiver {
            agent: "tcp:192.0.2.20:50051".parse().expect("endpoint"),
            interface: "t1".to_owned(),
        }),
        witnesses: if far_end { 2 } else { 1 },
        ..args(ForwardingLevel::TcSoftware)
    }
}

/// A run in the lab's shape (TC in software, no cpu_hit): the host sends `host`, the tc
/// flows count `tc`, the other levels stay still.
fn counters(host: Segments, tc: Segments) -> Scenario {
    let mut scenario = Scenario::default()
        .series(
            Side::Host,
            Source::Netdev,
            HOST_IF,
            "tx_packets",
            Unit::Packets,
            &readings(90_000, &host),
        )
        .series(
            Side::Dpu,
            Source::OvsFlow,
            &flow_level("tc-software"),
            "packets",
            Unit::Packets,
            &readings(3, &tc),
        );
    for level in ["hardware", "datapath", "unattributed"] {
        scenario = scenario.series(
            Side::Dpu,
            Source::OvsFlow,
            &flow_level(level),
            "packets",
            Unit::Packets,
            &readings(0, &[0; 7]),
        );
    }
    for counter in [upcalls::MISSED, upcalls::LOST] {
        scenario = scenario.series(
            Side::Dpu,
            Source::OvsDatapath,
            "datapaths/system@ovs-system",
            counter,
            Unit::Packets,
            &readings(7, &[0; 7]),
        );
    }
    scenario
}

fn judge_run(args: &SwitchParams, m: &Trials<()>) -> Judged {
    judge(args, &WORK, m, &settings(true), 1)
}

fn line<'a>(lines: &'a [Line], name: &str) -> &'a Line {
    lines
        .iter()
        .find(|l| l.expectation.name == name)
        .unwrap_or_else(|| panic!("no line {name:?} in {:?}", names(lines)))
}

#[test]
fn trial_packets_follow_one_two_one_with_enough_per_unit() {
    assert_eq!(trial_packets(400, 3), Ok(WORK.to_vec()));
    assert_eq!(trial_packets(400, 1), Ok(vec![400]));
    // The rest of an uneven split is not sent: 450 packets are 112, 224, 112.
    assert_eq!(trial_packets(450, 3), Ok(vec![112, 224, 112]));
    // Control: a unit under 50 packets would let the first packets' allowance decide.
    assert_eq!(trial_packets(150, 3), Err(200));
    assert_eq!(trial_packets(49, 1), Err(50));
}

#[test]
fn a_plan_that_cannot_be_split_or_has_too_many_trials_is_refused() {
    let small = SwitchParams {
        packets: 150,
        ..trial_args(false)
    };
    let err = plan(&small).expect_err("150 packets in 3 trials");
    assert!(
        matches!(&err, ProveError::Param(p) if p.about() == Field::Packets),
        "{err:?}"
    );
    let err = err.to_string();
    assert!(
        err.contains("packets 150") && err.contains("at least 200"),
        "{err}"
    );
    let many = SwitchParams {
        trials: MAX_TRIALS + 1,
        ..trial_args(false)
    };
    let err = plan(&many).expect_err("too many trials").to_string();
    assert!(err.contains("trials must be 1 to 9, not 10"), "{err}");
    let (work, trials) = plan(&trial_args(false)).expect("plan");
    assert_eq!((work, trials.get()), (WORK.to_vec(), 3));
    // A name that is no interface is refused before anything is sent.
    let mut bad = trial_args(true);
    if let Some(receiver) = &mut bad.far_end {
        receiver.interface = "t1; reboot".to_owned();
    }
    let err = format!("{:#}", plan(&bad).expect_err("bad name"));
    assert!(err.contains("target interface"), "{err}");
}

#[test]
fn packets_through_tc_in_three_trials_are_proven_trial_by_trial() {
    let m = counters(per_trial([2; 3]), per_trial([0; 3])).trials(vec![(); 3]);
    let judged = judge_run(&trial_args(false), &m);
    assert_eq!(judged.verdict, Verdict::Proven, "{:#?}", judged.lines);
    assert_eq!(judged.per_trial, [Verdict::Proven; 3]);
    let forwarded = at_level("tc-software");
    assert_eq!(
        names(&judged.lines),
        [
            format!("trial 1: {SENT}"),
            format!("trial 1: {forwarded}"),
            "trial 1: slower paths did not carry the flow".to_owned(),
            "trial 1: the datapaths sent no packet up to ovs-vswitchd (upcalls)".to_owned(),
            "trial 1: no upcall was lost".to_owned(),
            "gap 1: nothing else went through the flows from pf0hpf".to_owned(),
            format!("trial 2: {SENT}"),
            format!("trial 2: {forwarded}"),
            "trial 2: slower paths did not carry the flow".to_owned(),
            "trial 2: the datapaths sent no packet up to ovs-vswitchd (upcalls)".to_owned(),
            "trial 2: no upcall was lost".to_owned(),
            "gap 2: nothing else went through the flows from pf0hpf".to_owned(),
            format!("trial 3: {SENT}"),
            format!("trial 3: {forwarded}"),
            "trial 3: slower paths did not carry the flow".to_owned(),
            "trial 3: the datapaths sent no packet up to ovs-vswitchd (upcalls)".to_owned(),
            "trial 3: no upcall was lost".to_owned(),
        ]
    );
    // Each trial is held to its own count.
    let second = line(&judged.lines, &format!("trial 2: {forwarded}"));
    assert_eq!(second.expectation.rule, Rule::AtLeast(200 - FIRST_PACKETS));
    assert_eq!(second.net, Some(200));
}

/// A flow whose match is wider than the workload (NORMAL's L2 megaflow) also carries other
/// traffic, all the time: every trial is met, but the gaps are not quiet.
#[test]
fn other_traffic_through_the_workloads_flows_shows_in_the_gaps() {
    let busy = [0, 3, 140, 40, 240, 40, 140];
    let m = counters(per_trial([0; 3]), busy).trials(vec![(); 3]);
    let judged = judge_run(&trial_args(false), &m);
    assert_eq!(judged.verdict, Verdict::Inconclusive, "{:#?}", judged.lines);
    let gap = line(
        &judged.lines,
        "gap 1: nothing else went through the flows from pf0hpf",
    );
    match &gap.outcome {
        Outcome::Inconclusive(why) => {
            assert!(why.starts_with("moved while no workload ran"), "{why}")
        }
        other => panic!("gap 1 should be inconclusive: {other:?}"),
    }
    // Control: the same flows, quiet between trials, are proven.
    let quiet = counters(per_trial([0; 3]), per_trial([0; 3])).trials(vec![(); 3]);
    assert_eq!(
        judge_run(&trial_args(false), &quiet).verdict,
        Verdict::Proven
    );
}

/// A burst through the flows during one trial only: that trial meets its lower bound, but
/// its growth per packet disagrees with the others, named.
#[test]
fn a_burst_during_one_trial_is_named_and_inconclusive() {
    let m = counters(per_trial([0; 3]), per_trial([60, 0, 0])).trials(vec![(); 3]);
    let judged = judge_run(&trial_args(false), &m);
    assert_eq!(judged.verdict, Verdict::Inconclusive, "{:#?}", judged.lines);
    assert_eq!(
        judged.per_trial,
        [Verdict::Inconclusive, Verdict::Proven, Verdict::Proven]
    );
    let first = line(
        &judged.lines,
        &format!("trial 1: {}", at_level("tc-software")),
    );
    match &first.outcome {
        Outcome::Inconclusive(why) => assert!(
            why.starts_with("trial 1: ") && why.contains("grew 1.60 per unit of work"),
            "{why}"
        ),
        other => panic!("trial 1 should be inconclusive: {other:?}"),
    }
    // Control: one window cannot tell: the burst only adds to a met lower bound.
    let burst = [0, 3, 460, 0, 0, 0, 0];
    let one = counters(burst, burst);
    let judged = judge(
        &SwitchParams {
            trials: 1,
            ..trial_args(false)
        },
        &[400],
        &one.trials(vec![(); 1]),
        &settings(true),
        1,
    );
    assert_eq!(judged.verdict, Verdict::Proven, "{:#?}", judged.lines);
}

/// The receiver counts what arrived, on its own agent: a second witness in every trial.
#[test]
fn the_receiver_is_a_second_witness_in_every_trial() {
    let arrived = counters(per_trial([0; 3]), per_trial([0; 3])).series(
        Side::FarEnd,
        Source::Netdev,
        RECEIVER_IF,
        "rx_packets",
        Unit::Packets,
        &readings(7_000, &per_trial([4; 3])),
    );
    let judged = judge_run(&trial_args(true), &arrived.trials(vec![(); 3]));
    assert_eq!(judged.verdict, Verdict::Proven, "{:#?}", judged.lines);
    let far = line(
        &judged.lines,
        "trial 2: the receiver's t1 counted the packets",
    );
    assert_eq!(far.expectation.select.side, Side::FarEnd);
    assert_eq!(far.expectation.rule, Rule::AtLeast(200 - FIRST_PACKETS));

    // The DPU's flows moved as if they forwarded the packets, but nothing arrived: the
    // second witness says no in every trial.
    let lost = counters(per_trial([0; 3]), per_trial([0; 3])).series(
        Side::FarEnd,
        Source::Netdev,
        RECEIVER_IF,
        "rx_packets",
        Unit::Packets,
        &readings(7_000, &[0; 7]),
    );
    let judged = judge_run(&trial_args(true), &lost.trials(vec![(); 3]));
    assert_eq!(judged.verdict, Verdict::NotProven, "{:#?}", judged.lines);
    assert_eq!(
        failed(&judged.lines)
            .iter()
            .map(|(name, _)| *name)
            .collect::<Vec<_>>(),
        [
            "trial 1: the receiver's t1 counted the packets",
            "trial 2: the receiver's t1 counted the packets",
            "trial 3: the receiver's t1 counted the packets",
        ]
    );
}

/// A receiver asked but without the interface: a visible line that cannot be formed,
/// INCONCLUSIVE, never a silent single witness.
#[test]
fn a_receiver_without_the_interface_is_inconclusive() {
    let elsewhere = counters(per_trial([0; 3]), per_trial([0; 3])).series(
        Side::FarEnd,
        Source::Netdev,
        "netdevs/eth0",
        "rx_packets",
        Unit::Packets,
        &readings(7_000, &per_trial([0; 3])),
    );
    let judged = judge_run(&trial_args(true), &elsewhere.trials(vec![(); 3]));
    assert_eq!(judged.verdict, Verdict::Inconclusive, "{:#?}", judged.lines);
    let (name, why) = inconclusive(&judged.lines)[0];
    assert_eq!(name, "trial 1: the receiver's t1 counted the packets");
    assert!(why.contains("no rx_packets for t1"), "{why}");
}

#[test]
fn two_witnesses_need_the_far_end() {
    let err = Witnesses::check(None, 2).expect_err("no far end");
    // The field to add is the far end's agent; the sentence names both fields.
    assert_eq!(err.about(), Field::TargetAgent);
    let flags = err.render(|field| match field {
        Field::Witnesses => "--witnesses".to_owned(),
        Field::TargetAgent => "--target-agent".to_owned(),
        other => other.words().to_owned(),
    });
    assert!(
        flags.contains("--witnesses 2 needs") && flags.contains("(--target-agent ENDPOINT)"),
        "{flags}"
    );
    assert!(!err.to_string().contains("--"), "{err}");
    let far: dpu_proto::Endpoint = "tcp:192.0.2.20:50051".parse().expect("endpoint");
    assert!(Witnesses::check(Some(&far), 2).is_ok());
    assert!(Witnesses::check(None, 1).is_ok());
    let err = Witnesses::check(Some(&far), 3)
        .expect_err("three")
        .to_string();
    assert!(err.contains("not 3"), "{err}");
}
