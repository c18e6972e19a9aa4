//! The table a person reads (issue 35): a last line that counts every status, the most
//! severe first, so that one unreachable node does not hide the failed ones.

use dpu_tests::fleet::{Fault, Fleet, FleetSpec};
use dpu_tests::harness::dpuctl;

use super::CALL_TIMEOUT_FIRST;

#[test]
fn the_table_ends_with_every_status_counted_most_severe_first() {
    let spec = FleetSpec::healthy(5)
        .with_fault(3, Fault::RdmaPortDown)
        .with_fault(1, Fault::UntrustedTls)
        .with_fault(4, Fault::RdmaPortDown);
    let fleet = Fleet::start(&spec);
    let inventory = fleet.inventory().display().to_string();
    let out = dpuctl(&[
        "--timeout",
        CALL_TIMEOUT_FIRST.timeout,
        "fleet",
        "--inventory",
        &inventory,
        "--deadline",
        CALL_TIMEOUT_FIRST.deadline,
        "check",
    ]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let ctx = format!(
        "exit {:?}\nstdout:\n{stdout}\nstderr: {}",
        out.status.code(),
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(out.status.code(), Some(1), "{ctx}");
    let last = stdout.lines().last().unwrap_or_default();
    assert!(last.starts_with("check of 5 node(s) in "), "{ctx}");
    assert!(
        last.ends_with(" s: 2 FAIL, 1 UNREACHABLE, 2 PASS"),
        "the counts, most severe first: {ctx}"
    );
}
