//! `--select`: only the matching targets are asked, by name, by label and by a label's
//! absence, every selector having to match; a selection that matches nothing is refused.

use dpu_tests::fleet::{Fault, Fleet, FleetSpec};

use super::run_fleet;

#[test]
fn select_asks_only_the_matching_targets() {
    // r0: node-000..002, r1: node-003..005; node-004's RDMA port is down.
    let mut spec = FleetSpec::healthy(6).with_fault(4, Fault::RdmaPortDown);
    spec.rack_size = 3;
    let lab = Fleet::start(&spec);
    let check = ["check"];
    let cases: [(&[&str], &[&str], i32); 5] = [
        (
            &["--select", "rack=r0"],
            &["node-000", "node-001", "node-002"],
            0,
        ),
        (
            &["--select", "rack!=r0"],
            &["node-003", "node-004", "node-005"],
            1,
        ),
        (&["--select", "node-004"], &["node-004"], 1),
        (
            &["--select", "rack=r1", "--select", "name!=node-004"],
            &["node-003", "node-005"],
            0,
        ),
        (
            &[],
            &[
                "node-000", "node-001", "node-002", "node-003", "node-004", "node-005",
            ],
            1,
        ),
    ];
    for (select, names, code) in cases {
        let run = run_fleet(lab.inventory(), select, &check);
        let ctx = run.context();
        let mut got = run.names();
        got.sort_unstable();
        assert_eq!(got, names, "{select:?}: {ctx}");
        assert_eq!(run.report["targets"], names.len(), "{select:?}: {ctx}");
        assert_eq!(run.code, Some(code), "{select:?}: {ctx}");
    }
    let run = run_fleet(lab.inventory(), &["--select", "rack=r9"], &check);
    assert_eq!(
        run.code,
        Some(2),
        "a selection of nothing: {}",
        run.context()
    );
    assert!(
        run.stderr.contains("rack=r9"),
        "the refusal names the selector: {}",
        run.context()
    );
}
