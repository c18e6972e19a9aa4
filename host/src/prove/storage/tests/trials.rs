//! The storage proof as trials, from in-memory counters: the read through the DPU, and each
//! way another reader or a bypass shows in trials and gaps, through [`judge`] with three
//! trials (`storage::run`'s default).

use super::*;
use crate::accounting::measure::fixture::readings;
use crate::accounting::measure::Trials;
use crate::accounting::trials::MAX_TRIALS;

const MIB: u64 = 1 << 20;
/// `--size 64m --trials 3`: 16, 32 and 16 MiB.
const WORK: [u64; 3] = [16 * MIB, 32 * MIB, 16 * MIB];

/// Growth per segment of a three-trial run: the idle window, the step before the first
/// trial, trial 1, gap 1, trial 2, gap 2, trial 3.
type Segments = [u64; 7];

/// Each trial's own work on a path, nothing in the idle window or the gaps.
fn per_trial(extra: [u64; 3]) -> Segments {
    [
        0,
        0,
        WORK[0] + extra[0],
        0,
        WORK[1] + extra[1],
        0,
        WORK[2] + extra[2],
    ]
}

/// A run whose volume grows by `volume`, the DPU's RDMA port by `dpu_rdma` and the host's
/// data NIC by `host_nic`; the gRPC session adds a little everywhere.
fn run(volume: Segments, dpu_rdma: Segments, host_nic: Segments) -> Trials<()> {
    counters(volume, dpu_rdma, host_nic).trials(vec![(); 3])
}

/// [`run`]'s counters, before they are read as trials.
fn counters(volume: Segments, dpu_rdma: Segments, host_nic: Segments) -> Scenario {
    Scenario::default()
        .series(
            Side::Dpu,
            Source::Volume,
            VOLUME,
            "bytes_read",
            Unit::Bytes,
            &readings(3 << 30, &volume),
        )
        .series(
            Side::Dpu,
            Source::Rdma,
            DPU_PORT,
            "port_rcv_data",
            Unit::Bytes,
            &readings(9 << 30, &dpu_rdma),
        )
        .series(
            Side::Host,
            Source::Netdev,
            HOST_NIC,
            "rx_bytes",
            Unit::Bytes,
            &readings(5 << 20, &host_nic),
        )
        .series(
            Side::Host,
            Source::Netdev,
            "netdevs/eno1",
            "rx_bytes",
            Unit::Bytes,
            &readings(10_000, &[2048; 7]),
        )
        .series(
            Side::Host,
            Source::Rdma,
            HOST_PORT,
            "port_rcv_data",
            Unit::Bytes,
            &readings(1 << 20, &[0; 7]),
        )
}

fn judge_run(m: &Trials<()>) -> Judged {
    judge(&target(true), &WORK, m, &ports(&[HOST_PORT], &[]), &[])
}

/// What the DPU's uplink carries for a read through it: the data and 2% of headers.
fn uplink() -> Segments {
    per_trial([WORK[0] / 50, WORK[1] / 50, WORK[2] / 50])
}

#[test]
fn trial_sizes_follow_one_two_one_in_whole_blocks() {
    assert_eq!(trial_sizes(64 * MIB, MIB, 3), Ok(WORK.to_vec()));
    assert_eq!(trial_sizes(64 * MIB, MIB, 1), Ok(vec![64 * MIB]));
    // 10 MiB in 1:2:1 parts of whole 1 MiB blocks: 2, 4 and 2 MiB (the rest unread).
    assert_eq!(
        trial_sizes(10 * MIB, MIB, 3),
        Ok(vec![2 * MIB, 4 * MIB, 2 * MIB])
    );
    // Control: fewer bytes than one block per unit cannot be split; four blocks can.
    assert_eq!(trial_sizes(3 * MIB, MIB, 3), Err(4 * MIB));
}

#[test]
fn a_read_through_the_dpu_in_three_trials_is_proven_trial_by_trial() {
    let m = run(per_trial([4096; 3]), uplink(), [0; 7]);
    let judged = judge_run(&m);
    assert_eq!(judged.verdict, Verdict::Proven, "{:#?}", judged.lines);
    assert_eq!(judged.per_trial, [Verdict::Proven; 3]);
    let names = names(&judged.lines);
    assert_eq!(
        names,
        [
            "trial 1: DPU volumes/r0n1 served the read",
            "trial 1: DPU RDMA ports received the data",
            "trial 1: host NICs did not carry the data",
            "trial 1: host RDMA ports did not carry the data",
            "gap 1: nothing else read volumes/r0n1",
            "trial 2: DPU volumes/r0n1 served the read",
            "trial 2: DPU RDMA ports received the data",
            "trial 2: host NICs did not carry the data",
            "trial 2: host RDMA ports did not carry the data",
            "gap 2: nothing else read volumes/r0n1",
            "trial 3: DPU volumes/r0n1 served the read",
            "trial 3: DPU RDMA ports received the data",
            "trial 3: host NICs did not carry the data",
            "trial 3: host RDMA ports did not carry the data",
        ]
    );
    // Each trial is held to its own size.
    let second = line(&judged.lines, "trial 2: DPU volumes/r0n1 served the read");
    assert_eq!(
        second.expectation.rule,
        Rule::Between(WORK[1], WORK[1] * 3 / 2)
    );
    assert_eq!(second.delta, Some(WORK[1] + 4096));
    let gap = line(&judged.lines, "gap 1: nothing else read volumes/r0n1");
    assert_eq!(gap.expectation.rule, Rule::AtMost(WORK[0] / 20));
    assert_eq!(gap.delta, Some(0));
}

/// Another tenant starts reading the volume after the idle window, 4 MiB per window: every
/// trial is within its N..1.5N, yet the gaps, when the proof reads nothing, see the volume
/// read. (One busy all the time is background: measured in the idle window, subtracted.)
#[test]
fn another_reader_that_starts_after_the_idle_window_shows_in_the_gaps() {
    let reader = 4 * MIB;
    let volume = [
        0,
        reader,
        WORK[0] + reader,
        reader,
        WORK[1] + reader,
        reader,
        WORK[2] + reader,
    ];
    let judged = judge_run(&run(volume, uplink(), [0; 7]));
    assert_eq!(judged.verdict, Verdict::Inconclusive, "{:#?}", judged.lines);
    let named = inconclusive(&judged.lines);
    assert!(
        named.iter().any(
            |(name, why)| *name == "gap 1: nothing else read volumes/r0n1"
                && why.contains("no workload ran")
        ),
        "{named:?}"
    );
    assert!(
        failed(&judged.lines).is_empty(),
        "nothing failed: {:?}",
        failed(&judged.lines)
    );
}

/// Another reader during the first trial only adds 7 MiB: within trial 1's 16..24 MiB, so
/// one window would pass; against trials 2 and 3 it is named.
#[test]
fn another_reader_during_one_trial_is_named_and_inconclusive() {
    let judged = judge_run(&run(per_trial([7 * MIB, 0, 0]), uplink(), [0; 7]));
    assert_eq!(judged.verdict, Verdict::Inconclusive, "{:#?}", judged.lines);
    assert_eq!(
        judged.per_trial,
        [Verdict::Inconclusive, Verdict::Proven, Verdict::Proven]
    );
    let (name, why) = inconclusive(&judged.lines)[0];
    assert_eq!(name, "trial 1: DPU volumes/r0n1 served the read");
    assert!(
        why.starts_with("trial 1:") && why.contains("bytes_read"),
        "{why}"
    );

    // Control: the same reader in one window of the same size is not seen.
    let one = Scenario::default()
        .grows(
            Side::Dpu,
            Source::Volume,
            VOLUME,
            "bytes_read",
            Unit::Bytes,
            (3 << 30, WORK[0] + 7 * MIB),
        )
        .grows(
            Side::Dpu,
            Source::Rdma,
            DPU_PORT,
            "port_rcv_data",
            Unit::Bytes,
            (9 << 30, WORK[0] + WORK[0] / 50),
        );
    let (verdict, lines, _) = judge_one(
        &target(true),
        WORK[0],
        &one.measured(()),
        &ports(&[], &[]),
        &[],
    );
    assert_eq!(
        verdict,
        Verdict::Proven,
        "one window cannot tell: {lines:#?}"
    );
}

/// The host read the target itself: the volume never moved in any trial.
#[test]
fn a_read_that_never_reached_the_volume_is_not_proven_in_every_trial() {
    let judged = judge_run(&run([0; 7], [0; 7], [0; 7]));
    assert_eq!(judged.verdict, Verdict::NotProven, "{:#?}", judged.lines);
    assert_eq!(judged.per_trial, [Verdict::NotProven; 3]);
}

/// The data crossed the host's NIC in one trial: a negative control failed once, which no
/// other trial can make up for.
#[test]
fn a_bypass_in_one_trial_is_not_proven() {
    let host_nic = [0, 0, 0, 0, WORK[1], 0, 0];
    let judged = judge_run(&run(per_trial([0; 3]), uplink(), host_nic));
    assert_eq!(judged.verdict, Verdict::NotProven, "{:#?}", judged.lines);
    assert_eq!(
        failed_names(&judged.lines),
        ["trial 2: host NICs did not carry the data"]
    );
}

/// Bad parameters are refused before anything is dialled or read, naming the flag.
#[test]
fn a_size_too_small_for_its_trials_or_a_trial_count_out_of_range_is_refused() {
    let args = |size: u64, trials: u32| StorageParams {
        device: None,
        volume: None,
        size,
        bs: MIB,
        iodepth: 8,
        idle: std::time::Duration::from_secs(1),
        trials,
        waive: Vec::new(),
        far_end: None,
        witnesses: 1,
    };
    let (work, trials) = plan(&args(64 * MIB, 3)).expect("plan");
    assert_eq!((work, trials.get()), (WORK.to_vec(), 3));
    let small = plan(&args(3 * MIB, 3)).expect_err("3 MiB in 1:2:1 MiB parts");
    assert_eq!(small.about(), Field::Size);
    assert!(
        small.to_string().contains("at least 4194304 bytes"),
        "{small}"
    );
    let tiny = plan(&args(1024, 1)).expect_err("less than a block");
    assert_eq!(tiny.about(), Field::Size);
    // The library says the fields in words; dpuctl says them as its flags.
    assert_eq!(
        tiny.to_string(),
        format!("size 1024 must be at least block size {MIB}")
    );
    for trials in [0, MAX_TRIALS + 1] {
        let out = plan(&args(64 * MIB, trials)).expect_err("out of range");
        assert_eq!(out.about(), Field::Trials);
        assert!(out.to_string().contains("trials must be 1 to 9"), "{out}");
        assert!(!out.to_string().contains("--"), "no flag: {out}");
    }
}

/// The far end's RDMA port (the storage target, read by its own agent).
const TARGET_PORT: &str = "rdmaDevices/mlx5_0/ports/1";

/// [`run`] with the far end's RDMA port sending `far_end` per segment.
fn run_with_far_end(volume: Segments, dpu_rdma: Segments, far_end: Segments) -> Trials<()> {
    counters(volume, dpu_rdma, [0; 7])
        .series(
            Side::FarEnd,
            Source::Rdma,
            TARGET_PORT,
            "port_xmit_data",
            Unit::Bytes,
            &readings(7 << 30, &far_end),
        )
        .trials(vec![(); 3])
}

/// Two witnesses agree: the DPU served and forwarded the read, and the target, on its own
/// counters, sent it.
#[test]
fn the_far_end_is_a_second_witness_in_every_trial() {
    let m = run_with_far_end(per_trial([4096; 3]), uplink(), uplink());
    let judged = judge_run(&m);
    assert_eq!(judged.verdict, Verdict::Proven, "{:#?}", judged.lines);
    let far = line(&judged.lines, "trial 2: far end sent the data");
    assert_eq!(far.expectation.select.side, Side::FarEnd);
    assert_eq!(far.expectation.select.objects, [TARGET_PORT]);
    assert_eq!(far.expectation.rule, Rule::AtLeast(WORK[1]));
}

/// The DPU's counters moved as if it served the read (another reader, a cache on the DPU
/// replaying), but the target sent nothing: the second witness says no, in every trial.
#[test]
fn a_far_end_that_sent_nothing_is_not_proven() {
    let m = run_with_far_end(per_trial([0; 3]), uplink(), [0; 7]);
    let judged = judge_run(&m);
    assert_eq!(judged.verdict, Verdict::NotProven, "{:#?}", judged.lines);
    assert_eq!(
        failed_names(&judged.lines),
        [
            "trial 1: far end sent the data",
            "trial 2: far end sent the data",
            "trial 3: far end sent the data"
        ]
    );
}

/// A far end asked but without a counter for what it sent: a visible line that cannot be
/// formed, INCONCLUSIVE, never a silent single witness.
#[test]
fn a_far_end_without_send_counters_is_inconclusive() {
    // The far end is read at every reading, but has none of the counters asked for.
    let m = counters(per_trial([0; 3]), uplink(), [0; 7])
        .series(
            Side::FarEnd,
            Source::Rdma,
            TARGET_PORT,
            "port_xmit_data",
            Unit::Bytes,
            &[None; 8],
        )
        .trials(vec![(); 3]);
    let judged = judge_run(&m);
    assert_eq!(judged.verdict, Verdict::Inconclusive, "{:#?}", judged.lines);
    let (name, why) = inconclusive(&judged.lines)[0];
    assert_eq!(name, "trial 1: far end sent the data");
    assert!(why.contains("port_xmit_data or sent_pkts"), "{why}");
}
