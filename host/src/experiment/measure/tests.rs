//! A real command as a trial: its env, its failure, its cancel (the command killed), and
//! the metric each parser reads.

use super::*;
use crate::experiment::metric::read_metric;
use crate::roce::nccl::tests::ALL_REDUCE_CURRENT;

fn sh(script: &str, parser: OutputParser) -> CommandMeasure {
    CommandMeasure {
        argv: vec!["sh".to_owned(), "-c".to_owned(), script.to_owned()],
        parser,
    }
}

#[test]
fn the_env_knob_reaches_the_command_and_qperf_bandwidth_is_gbit() {
    let mut m = sh(
        "printf 'tcp_bw:\\n    bw  =  %s GB/sec\\n' \"$NCCL_TEST_BW\"",
        OutputParser::Qperf,
    );
    let env = [("NCCL_TEST_BW".to_owned(), "1.25".to_owned())];
    let metric = m.measure(&env, &Cancel::default()).expect("measured");
    assert!((metric.value - 10.0).abs() < 1e-9, "{metric:?}");
    assert_eq!(metric.name, "tcp_bw bw Gb/s");
}

#[test]
fn a_failing_command_or_output_without_a_table_is_an_error() {
    let mut failing = sh("echo boom >&2; exit 3", OutputParser::Qperf);
    let err = failing
        .measure(&[], &Cancel::default())
        .expect_err("exit 3");
    assert!(err.to_string().contains("exit status: 3: boom"), "{err}");
    let mut empty = sh("true", OutputParser::NcclTests);
    assert!(matches!(
        empty.measure(&[], &Cancel::default()),
        Err(MeasureError::Metric(_))
    ));
    let mut missing = CommandMeasure {
        argv: vec!["/nonexistent/bench".to_owned()],
        parser: OutputParser::Perftest,
    };
    assert!(matches!(
        missing.measure(&[], &Cancel::default()),
        Err(MeasureError::Spawn { .. })
    ));
}

#[test]
fn a_cancel_kills_the_command_and_what_it_started() {
    let dir = tempfile::tempdir().expect("temp dir");
    let pid_file = dir.path().join("grandchild");
    // The command starts a grandchild that would hold stdout open for a minute.
    let mut m = sh(
        &format!("sleep 60 & echo $! > {}; wait", pid_file.display()),
        OutputParser::Qperf,
    );
    let cancel = Cancel::default();
    let trigger = cancel.clone();
    let watched = pid_file.clone();
    let setter = std::thread::spawn(move || {
        while !watched.exists() {
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        trigger.set();
    });
    let err = m.measure(&[], &cancel).expect_err("cancelled");
    setter.join().expect("setter");
    assert!(matches!(err, MeasureError::Cancelled), "{err}");
    let pid: i32 = std::fs::read_to_string(&pid_file)
        .expect("pid")
        .trim()
        .parse()
        .expect("a pid");
    // The grandchild is gone (or a zombie awaiting init): not running `sleep`. A SIGKILL
    // sent to the group is delivered asynchronously (CI saw the killed sleep still `R`,
    // reparented to init, right after the call returned), so its end is awaited, bounded
    // far below the minute it would otherwise run.
    let stat = || std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let alive = |state: &str| {
        state
            .rsplit(')')
            .next()
            .and_then(|rest| rest.split_whitespace().next())
            .is_some_and(|s| s != "Z")
    };
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    let mut state = stat();
    while alive(&state) && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(20));
        state = stat();
    }
    assert!(
        !alive(&state),
        "sleep {pid} still runs 10 s after the cancel: {state}"
    );
}

#[test]
fn nccl_tests_gives_the_largest_size_busbw_and_perftest_its_average_in_gbit() {
    let nccl = read_metric(OutputParser::NcclTests, ALL_REDUCE_CURRENT).expect("parsed");
    assert_eq!(nccl.value, 46.70);
    assert_eq!(nccl.name, "busbw GB/s at 134217728 B (out-of-place)");
    let perftest = "\
---------------------------------------------------------------------------------------
                    RDMA_Write BW Test
 Dual-port       : OFF\t\tDevice         : rxe0
---------------------------------------------------------------------------------------
 #bytes     #iterations    BW peak[MB/sec]    BW average[MB/sec]   MsgRate[Mpps]
 65536      5000             1100.00            1000.00              0.016000
---------------------------------------------------------------------------------------
";
    let bw = read_metric(OutputParser::Perftest, perftest).expect("parsed");
    assert!(
        (bw.value - 1000.0 * 1_048_576.0 * 8.0 / 1e9).abs() < 1e-9,
        "{bw:?}"
    );
    assert_eq!(bw.name, "BW average Gb/s at 65536 B");
}
