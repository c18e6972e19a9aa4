//! The size plots: drawn when a test ran at two sizes or more (a point per run, hollow when
//! the counters did not vouch for it), absent with one size per test (the control).

use super::*;
use crate::roce::endpoint::Endpoint;
use crate::roce::perf::Background;
use crate::roce::rdma_evidence::CounterSource;

fn run(test: PerfTest, size: u64, value: f64, path: PathVerdict) -> PerfRun {
    let mut run = PerfRun::empty(test, size, CounterSource::Sysfs);
    if test.is_bandwidth() {
        run.bw_gbps = Some(value);
    } else {
        run.lat_typical_us = Some(value);
    }
    run.rdma.path = path;
    run
}

fn report(runs: Vec<PerfRun>) -> PerfReport {
    let ep = Endpoint {
        ibdev: "rxe0".to_owned(),
        port: 1,
        gid_index: 1,
        ipv4: None,
        netdev: None,
    };
    PerfReport {
        peer: "target".to_owned(),
        peer_address: "10.10.0.1".to_owned(),
        local: ep.clone(),
        remote: ep,
        verdict: "ok",
        background: Background::default(),
        runs,
    }
}

#[test]
fn every_size_is_a_point_and_a_run_the_counters_did_not_vouch_for_is_hollow() {
    let (bw, lat) = size_plots(&report(vec![
        run(PerfTest::WriteBw, 4096, 10.0, PathVerdict::Rdma),
        run(PerfTest::WriteBw, 65_536, 40.0, PathVerdict::Rdma),
        run(PerfTest::WriteBw, 1_048_576, 90.0, PathVerdict::Unknown),
        run(PerfTest::TcpBw, 65_536, 9.0, PathVerdict::NotRdma),
        run(PerfTest::SendLat, 2, 3.0, PathVerdict::Rdma),
        run(PerfTest::SendLat, 4096, 5.0, PathVerdict::Rdma),
    ]))
    .expect("drawn");
    assert_eq!(bw.matches("<svg").count(), 1, "{bw}");
    assert_eq!(
        bw.matches("<circle").count(),
        4,
        "a point per bandwidth run"
    );
    let hollow = bw
        .split('<')
        .filter(|e| e.starts_with("circle") && e.contains("fill=\"none\""))
        .count();
    assert_eq!(
        hollow, 1,
        "one hollow point, the run with an unknown path: {bw}"
    );
    assert!(
        bw.contains("ib_write_bw") && bw.contains("tcp_bw"),
        "legend"
    );
    assert_eq!(lat.matches("<circle").count(), 2, "{lat}");
    assert!(lat.contains("ib_send_lat"));
}

#[test]
fn with_one_size_per_test_there_is_no_size_plot() {
    let (bw, lat) = size_plots(&report(vec![
        run(PerfTest::WriteBw, 65_536, 40.0, PathVerdict::Rdma),
        run(PerfTest::TcpBw, 65_536, 9.0, PathVerdict::NotRdma),
        run(PerfTest::SendLat, 4096, 5.0, PathVerdict::Rdma),
    ]))
    .expect("nothing to draw");
    assert_eq!((bw.as_str(), lat.as_str()), ("", ""));
}
