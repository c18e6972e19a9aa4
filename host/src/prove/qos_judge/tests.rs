//! `prove qos` judged on synthetic windows: a held limit PROVEN, and every way it could be
//! printed when false answered NOT PROVEN or INCONCLUSIVE.

use std::time::{Duration, SystemTime};

use dpu_probe::snapshot::{diff, Sample, Snapshot, Source, Unit};
use dpu_proto::v1;

use super::*;
use crate::accounting::Evidence;
use crate::prove::qos::limit_to_prove;

const MIB: u64 = 1 << 20;
/// 8 MiB/s, the limit under test.
const LIMIT: u64 = 8 * MIB;

fn limit() -> ReadLimit {
    ReadLimit {
        bytes_per_sec: LIMIT,
        from: "r_mbytes_per_sec 8".to_owned(),
    }
}

fn watched() -> Watched {
    Watched {
        volume: "volumes/r0n1".to_owned(),
        disk: "blockDevices/loop0".to_owned(),
        host_nics: vec!["netdevs/eth0".to_owned()],
    }
}

fn snapshot(at_ms: u64, samples: &[(Source, &str, &str, u64)]) -> Snapshot {
    let at = Duration::from_millis(at_ms);
    Snapshot {
        taken_at: SystemTime::UNIX_EPOCH + at,
        monotonic_start: at,
        monotonic_end: at,
        boot_id: Some("boot".to_owned()),
        samples: samples
            .iter()
            .map(|(source, object, counter, value)| {
                Sample::cumulative(*source, *object, counter.to_string(), *value, Unit::Bytes)
            })
            .collect(),
        errors: Vec::new(),
        read: dpu_probe::snapshot::ReadReport::default(),
    }
}

/// A window whose read ran `seconds` and whose counters are `seconds + 0.2` apart: the
/// volume counted `(before, after)`, the host disk `disk` bytes, the NIC `nic` bytes.
fn window(kind: WindowKind, seconds: f64, volume: (u64, u64), disk: u64, nic: u64) -> Window {
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
    let span = (seconds * 1000.0) as u64 + 200;
    let dpu = |v, at| snapshot(at, &[(Source::Volume, "volumes/r0n1", "bytes_read", v)]);
    let host = |d, n, at| {
        snapshot(
            at,
            &[
                (Source::Block, "blockDevices/loop0", "read_bytes", d),
                (Source::Netdev, "netdevs/eth0", "rx_bytes", n),
            ],
        )
    };
    let quiet_dpu = diff(
        &snapshot(0, &[(Source::Volume, "volumes/r0n1", "bytes_read", 0)]),
        &snapshot(500, &[(Source::Volume, "volumes/r0n1", "bytes_read", 0)]),
    );
    Window {
        kind,
        evidence: Evidence {
            host: diff(&host(1000, 50, 0), &host(1000 + disk, 50 + nic, span)),
            dpu: diff(&dpu(volume.0, 0), &dpu(volume.1, span)),
            host_background: Some(diff(&host(0, 0, 0), &host(0, 0, 500))),
            dpu_background: Some(quiet_dpu),
            far_end: None,
            far_end_background: None,
        },
        read: ReadDone {
            bytes: volume.1.saturating_sub(volume.0),
            ios: 0,
            seconds,
        },
    }
}

/// A limited-shaped window that read `bytes` in `seconds` on both sides, NIC quiet.
fn at(kind: WindowKind, seconds: f64, bytes: u64) -> Window {
    window(kind, seconds, (10, 10 + bytes), bytes, 0)
}

fn abc(limited: u64, lifted: u64, restored: u64) -> Vec<Window> {
    vec![
        at(WindowKind::Limited, 2.0, limited),
        at(WindowKind::Lifted, 1.0, lifted),
        at(WindowKind::Restored, 2.0, restored),
    ]
}

fn judged(windows: &[Window]) -> QosJudged {
    judge(&watched(), &limit(), 0.15, windows)
}

fn outcome_of<'a>(j: &'a QosJudged, name: &str) -> &'a Outcome {
    &j.lines
        .iter()
        .find(|l| l.expectation.name.contains(name))
        .unwrap_or_else(|| panic!("no line {name}: {:#?}", j.lines))
        .outcome
}

#[test]
fn a_held_limit_with_headroom_is_proven() {
    let j = judged(&abc(2 * LIMIT, 6 * LIMIT, 2 * LIMIT));
    assert_eq!(j.verdict, Verdict::Proven, "{:#?}", j.lines);
    assert_eq!(j.windows.len(), 3);
    assert!(j.windows.iter().all(|w| w.verdict == Verdict::Proven));
    // The bounds: the limit over the read's 2 s less 15% .. over the counters' 2.2 s plus 15%.
    let (low, high) = j.windows[0].bounds;
    assert_eq!(low, (LIMIT as f64 * 2.0 * 0.85) as u64);
    assert_eq!(high, (LIMIT as f64 * 2.2 * 1.15) as u64);
}

#[test]
fn a_rate_above_the_limit_is_not_proven_whatever_the_lift_shows() {
    // Unenforced: the limited windows read as fast as the lifted one.
    let j = judged(&abc(12 * LIMIT, 6 * LIMIT, 12 * LIMIT));
    assert_eq!(j.verdict, Verdict::NotProven, "{:#?}", j.lines);
    assert!(
        matches!(outcome_of(&j, "limited: DPU"), Outcome::NotMet(w) if w.contains("not enforced")),
        "{:#?}",
        j.lines
    );
    // Only the restored window over the limit (the limit not set back): still NOT PROVEN.
    let j = judged(&abc(2 * LIMIT, 6 * LIMIT, 12 * LIMIT));
    assert_eq!(j.verdict, Verdict::NotProven);
    assert!(matches!(
        outcome_of(&j, "restored: DPU"),
        Outcome::NotMet(_)
    ));
    // Above the limit with the device too slow to show headroom: no slow device explains it.
    let j = judged(&abc(3 * LIMIT, 3 * LIMIT / 2, 2 * LIMIT));
    assert_eq!(j.verdict, Verdict::NotProven, "{:#?}", j.lines);
}

#[test]
fn a_device_no_faster_than_the_limit_is_inconclusive() {
    // Unlimited, 1.2x the limit: a device as slow as the limit.
    let j = judged(&abc(2 * LIMIT, LIMIT * 6 / 5, 2 * LIMIT));
    assert_eq!(j.verdict, Verdict::Inconclusive, "{:#?}", j.lines);
    assert!(
        matches!(outcome_of(&j, "lifted"), Outcome::Inconclusive(w) if w.contains("slow device")),
        "{:#?}",
        j.lines
    );
    // Slower than the limit even: under the bounds is the slow device, not a failed limit.
    let j = judged(&abc(LIMIT, LIMIT / 2, LIMIT));
    assert_eq!(j.verdict, Verdict::Inconclusive, "{:#?}", j.lines);
    assert!(
        matches!(outcome_of(&j, "limited: DPU"), Outcome::Inconclusive(w) if w.contains("lower bound"))
    );
}

#[test]
fn under_the_limit_with_headroom_shown_is_not_proven() {
    // The device reads 6x the limit unlimited, but only half the limit limited: something
    // else throttles, or the limit is tighter than the agent says.
    let j = judged(&abc(LIMIT, 6 * LIMIT, LIMIT));
    assert_eq!(j.verdict, Verdict::NotProven, "{:#?}", j.lines);
    assert!(matches!(outcome_of(&j, "limited: DPU"), Outcome::NotMet(w) if w.contains("below it")));
}

#[test]
fn a_reset_counter_is_inconclusive_never_zero() {
    let mut windows = abc(2 * LIMIT, 6 * LIMIT, 2 * LIMIT);
    // The volume's counter went back to near 0 across the limited window.
    windows[0] = window(WindowKind::Limited, 2.0, (100 * LIMIT, 10), 2 * LIMIT, 0);
    windows[0].read.bytes = 2 * LIMIT;
    let j = judged(&windows);
    assert_eq!(j.verdict, Verdict::Inconclusive, "{:#?}", j.lines);
    assert!(
        matches!(outcome_of(&j, "limited: DPU"), Outcome::Inconclusive(w) if w.contains("reset"))
    );
}

#[test]
fn the_host_nic_carrying_the_read_is_not_proven() {
    let mut windows = abc(2 * LIMIT, 6 * LIMIT, 2 * LIMIT);
    windows[0] = window(
        WindowKind::Limited,
        2.0,
        (10, 10 + 2 * LIMIT),
        2 * LIMIT,
        2 * LIMIT,
    );
    let j = judged(&windows);
    assert_eq!(j.verdict, Verdict::NotProven, "{:#?}", j.lines);
    assert!(matches!(outcome_of(&j, "host NICs"), Outcome::NotMet(_)));
}

#[test]
fn without_the_lift_within_the_limit_is_inconclusive_and_above_it_not_proven() {
    let j = judged(&[at(WindowKind::Limited, 2.0, 2 * LIMIT)]);
    assert_eq!(j.verdict, Verdict::Inconclusive, "{:#?}", j.lines);
    assert!(
        matches!(outcome_of(&j, "lifted"), Outcome::Inconclusive(w) if w.contains("not lifted, as asked")),
        "{:#?}",
        j.lines
    );
    let j = judged(&[at(WindowKind::Limited, 2.0, 10 * LIMIT)]);
    assert_eq!(j.verdict, Verdict::NotProven, "{:#?}", j.lines);
    let j = judged(&[at(WindowKind::Limited, 2.0, LIMIT / 4)]);
    assert_eq!(j.verdict, Verdict::Inconclusive, "{:#?}", j.lines);
}

fn limits(ios: u64, rw: u64, r: u64, w: u64) -> v1::QosLimits {
    v1::QosLimits {
        rw_ios_per_sec: ios,
        rw_mbytes_per_sec: rw,
        r_mbytes_per_sec: r,
        w_mbytes_per_sec: w,
    }
}

#[test]
fn the_tightest_read_limit_is_judged() {
    assert_eq!(
        read_limit(&limits(0, 0, 8, 0), 4096).map(|l| l.bytes_per_sec),
        Some(LIMIT)
    );
    assert_eq!(
        read_limit(&limits(0, 4, 8, 0), 4096).map(|l| l.bytes_per_sec),
        Some(4 * MIB)
    );
    // 1000 IOPS of 128 KiB reads: 125 MiB/s, looser than 8 MiB/s; of 4 KiB: tighter.
    assert_eq!(
        read_limit(&limits(1000, 0, 8, 0), 128 << 10).map(|l| l.bytes_per_sec),
        Some(LIMIT)
    );
    let ios = read_limit(&limits(1000, 0, 8, 0), 4096).expect("a limit");
    assert_eq!(ios.bytes_per_sec, 1000 * 4096);
    assert!(ios.from.contains("rw_ios_per_sec"), "{}", ios.from);
    assert_eq!(read_limit(&limits(0, 0, 0, 8), 4096), None, "write-only");
}

#[test]
fn bad_parameters_are_refused_by_name() {
    let good = crate::prove::qos::QosParams {
        volume: None,
        device: None,
        duration: Duration::from_secs(2),
        bs: 128 << 10,
        iodepth: 16,
        tolerance: 0.15,
        lift: true,
    };
    assert!(crate::prove::qos::check(&good).is_ok());
    let refused = |p: crate::prove::qos::QosParams| {
        crate::prove::qos::check(&p)
            .expect_err("refused")
            .to_string()
    };
    for tolerance in [0.0, 1.0, -0.1, f64::NAN] {
        let why = refused(crate::prove::qos::QosParams {
            tolerance,
            ..good.clone()
        });
        assert!(why.starts_with("tolerance must be a fraction"), "{why}");
    }
    let why = refused(crate::prove::qos::QosParams {
        duration: Duration::ZERO,
        ..good.clone()
    });
    assert!(why.starts_with("duration must be"), "{why}");
    let why = refused(crate::prove::qos::QosParams {
        bs: 1000,
        ..good.clone()
    });
    assert!(
        why.starts_with("block size 1000 is not a multiple of 512"),
        "{why}"
    );
}

fn volume(desired: Option<v1::QosLimits>, applied: Option<v1::QosLimits>) -> v1::Volume {
    v1::Volume {
        name: "volumes/r0n1".to_owned(),
        qos: desired,
        applied_qos: applied,
        ..v1::Volume::default()
    }
}

#[test]
fn what_cannot_be_proven_is_refused_before_anything_is_read() {
    let refused = |v: v1::Volume| limit_to_prove(&v, 4096).expect_err("refused").to_string();
    let why = refused(volume(None, Some(limits(0, 0, 0, 0))));
    assert!(why.contains("nothing to prove"), "{why}");
    let why = refused(volume(Some(limits(0, 0, 0, 0)), None));
    assert!(why.contains("nothing to prove"), "{why}");
    let why = refused(volume(Some(limits(0, 0, 8, 0)), None));
    assert!(why.contains("does not report"), "{why}");
    let why = refused(volume(Some(limits(0, 0, 8, 0)), Some(limits(0, 0, 0, 0))));
    assert!(
        why.contains("unlimited") && why.contains("r_mbytes_per_sec 8"),
        "both named: {why}"
    );
    let why = refused(volume(Some(limits(0, 0, 0, 8)), Some(limits(0, 0, 0, 8))));
    assert!(why.contains("cannot be proven by reads"), "{why}");
    let (limit, original) = limit_to_prove(
        &volume(Some(limits(0, 0, 8, 0)), Some(limits(0, 0, 8, 0))),
        4096,
    )
    .expect("provable");
    assert_eq!((limit.bytes_per_sec, original), (LIMIT, limits(0, 0, 8, 0)));
}
