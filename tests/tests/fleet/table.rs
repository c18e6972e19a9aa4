//! The table a person reads (issue 35): the failing nodes listed first, then by name, and
//! a last line that counts every status, the most severe first, so that one unreachable
//! node does not hide the failed ones. The JSON keeps target order.

use dpu_tests::fleet::{Fault, Fleet, FleetSpec};
use dpu_tests::harness::dpuctl;

use super::{run_fleet, CALL_TIMEOUT_FIRST};

#[test]
fn the_table_lists_the_failing_first_and_ends_with_every_status_counted() {
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
    // The rows, in the order the table prints them.
    let rows: Vec<(&str, &str)> = stdout
        .lines()
        .filter_map(|line| {
            let cells: Vec<&str> = line
                .split(['│', '┆'])
                .map(str::trim)
                .filter(|c| !c.is_empty())
                .collect();
            match cells.as_slice() {
                [name, status, ..] if name.starts_with("node-") => Some((*name, *status)),
                _ => None,
            }
        })
        .collect();
    assert_eq!(
        rows,
        [
            ("node-003", "FAIL"),
            ("node-004", "FAIL"),
            ("node-001", "UNREACHABLE"),
            ("node-000", "PASS"),
            ("node-002", "PASS"),
        ],
        "{ctx}"
    );
    let last = stdout.lines().last().unwrap_or_default();
    assert!(last.starts_with("check of 5 node(s) in "), "{ctx}");
    assert!(
        last.ends_with(" s: 2 FAIL, 1 UNREACHABLE, 2 PASS"),
        "the counts, most severe first: {ctx}"
    );

    // The JSON's rows stay in target order.
    let run = run_fleet(fleet.inventory(), &[], &["check"]);
    assert_eq!(
        run.names(),
        ["node-000", "node-001", "node-002", "node-003", "node-004"],
        "{}",
        run.context()
    );
}
