//! A `roce-perf` trial counts only when the RDMA port's counters corroborate it: each
//! refusal (counters still for an RDMA test, a reset counter, a TCP test that moved the
//! port) beside the same run with counters that do corroborate, which counts.

use std::time::Duration;

use super::*;
use crate::roce::perf::{account, Background};
use crate::roce::rdma_evidence::{CounterSource, PortReading};

/// soft-RoCE-shaped readings: packets only, sent and received.
fn reading(sent: u64, rcvd: u64) -> PortReading {
    use dpu_probe::snapshot::{ReadReport, Sample, Snapshot, Source, Unit};
    let sample = |name: &'static str, v| {
        Sample::cumulative(
            Source::RdmaHw,
            "rdmaDevices/rxe0/ports/1",
            name,
            v,
            Unit::Packets,
        )
    };
    PortReading {
        snapshot: Snapshot {
            taken_at: std::time::SystemTime::UNIX_EPOCH,
            monotonic_start: Duration::ZERO,
            monotonic_end: Duration::ZERO,
            boot_id: Some("b".to_owned()),
            samples: vec![sample("sent_pkts", sent), sample("rcvd_pkts", rcvd)],
            errors: Vec::new(),
            read: ReadReport::default(),
        },
        source: CounterSource::Sysfs,
    }
}

/// A finished `test` run of 100 x 64 KiB at MTU 1024 (6,400 packets of payload), 0.5
/// Gb/s or 120 µs, its counters `before` and `after`.
fn run(test: PerfTest, before: (u64, u64), after: (u64, u64)) -> PerfRun {
    let mut run = PerfRun::empty(test, 65_536, CounterSource::Sysfs);
    if test.is_bandwidth() {
        run.bw_gbps = Some(0.5);
    } else {
        run.lat_typical_us = Some(120.0);
        run.lat_avg_us = Some(130.0);
    }
    run.rdma.payload_packets = 6_400;
    run.rdma.payload_bytes = 6_553_600;
    account(
        &mut run.rdma,
        &reading(before.0, before.1),
        &reading(after.0, after.1),
        &Background::default(),
        1.0,
    );
    run
}

fn refusal(result: Result<Metric, MeasureError>) -> Refusal {
    match result {
        Err(MeasureError::Refused(refusal)) => *refusal,
        other => panic!("expected a refused trial, got {other:?}"),
    }
}

#[test]
fn an_rdma_trial_whose_counters_moved_by_its_payload_counts() {
    let metric =
        judge(&run(PerfTest::WriteBw, (1_000, 1_000), (7_500, 1_200))).expect("corroborated");
    assert_eq!(metric.value, 0.5);
    assert_eq!(metric.name, "ib_write_bw BW average Gb/s at 65536 B");
    let rdma = metric.rdma.expect("its counters are kept");
    assert_eq!(rdma.path, PathVerdict::Rdma);
    assert_eq!(rdma.packets_delta, Some(6_700));
}

#[test]
fn an_rdma_trial_whose_counters_did_not_move_is_refused_not_counted() {
    let refused = refusal(judge(&run(
        PerfTest::WriteBw,
        (1_000, 1_000),
        (1_003, 1_002),
    )));
    assert!(
        refused.reason.starts_with("NOT PROVEN"),
        "{}",
        refused.reason
    );
    assert!(
        refused.reason.contains("moved 5 packets"),
        "{}",
        refused.reason
    );
    assert_eq!(refused.value, 0.5, "the number is kept, for the report");
    assert_eq!(refused.rdma.path, PathVerdict::NotRdma);
}

#[test]
fn a_counter_reset_during_a_trial_refuses_it_as_inconclusive_never_zero() {
    let refused = refusal(judge(&run(PerfTest::WriteBw, (1_000, 1_000), (3, 7_000))));
    assert!(
        refused.reason.starts_with("INCONCLUSIVE"),
        "{}",
        refused.reason
    );
    assert!(refused.reason.contains("reset"), "{}", refused.reason);
    assert_eq!(refused.rdma.packets_delta, None, "no count invented");
}

#[test]
fn a_movement_between_a_tenth_and_the_payload_is_inconclusive() {
    let refused = refusal(judge(&run(PerfTest::SendBw, (0, 0), (2_000, 1_000))));
    assert!(
        refused.reason.starts_with("INCONCLUSIVE"),
        "{}",
        refused.reason
    );
    assert!(
        refused.reason.contains("3000 packets"),
        "{}",
        refused.reason
    );
}

#[test]
fn a_tcp_trial_counts_on_a_still_port_and_is_refused_when_it_moved_the_port() {
    let still = judge(&run(PerfTest::TcpBw, (0, 0), (2, 1))).expect("a still port");
    assert_eq!(still.rdma.map(|r| r.path), Some(PathVerdict::NotRdma));
    let moved = refusal(judge(&run(PerfTest::TcpBw, (0, 0), (6_000, 1_000))));
    assert!(moved.reason.contains("a TCP run moved"), "{}", moved.reason);
}

#[test]
fn a_latency_trial_gives_its_typical_latency() {
    let metric = judge(&run(PerfTest::WriteLat, (0, 0), (3_200, 3_200))).expect("corroborated");
    assert_eq!(metric.value, 120.0);
    assert_eq!(metric.name, "ib_write_lat t_typical µs at 65536 B");
}

#[test]
fn a_failed_run_stops_the_experiment_as_a_failed_trial() {
    let mut failed = run(PerfTest::WriteBw, (0, 0), (7_000, 0));
    failed.error = Some("ib_write_bw failed (exit Some(1)): Couldn't connect".to_owned());
    match judge(&failed) {
        Err(MeasureError::Run { test, reason }) => {
            assert_eq!(test, "ib_write_bw");
            assert!(reason.contains("Couldn't connect"), "{reason}");
        }
        other => panic!("expected a failed run, got {other:?}"),
    }
}
