//! The bus-bandwidth page: a line per run against size, a hollow point where nccl-tests'
//! own data check found wrong elements, every number in the table; no plot when no run
//! has two sizes (the control).

use super::*;
use crate::roce::nccl::parse_results;
use crate::roce::nccl::tests::{ALL_REDUCE_CURRENT, ALL_REDUCE_OLD};

#[test]
fn two_runs_give_two_lines_and_every_number_in_the_table() {
    let ring = parse_results(ALL_REDUCE_CURRENT).expect("parses");
    // The same table with the large size's bandwidth halved: another algorithm's run.
    let tree = parse_results(&ALL_REDUCE_CURRENT.replace("46.70   46.70", "23.35   23.35"))
        .expect("parses");
    let runs = [
        NamedRun {
            name: "ring.log",
            results: &ring,
        },
        NamedRun {
            name: "tree<1>.log",
            results: &tree,
        },
    ];
    let drawn = lines(&runs);
    assert_eq!(drawn.len(), 2);
    assert_eq!(
        drawn[0].points,
        [(8.0, 0.0, true), (134_217_728.0, 46.70, true)]
    );
    assert_ne!(drawn[0].colour, drawn[1].colour, "one colour per run");
    let html = page(&runs).expect("draws");
    assert_eq!(html.matches("<svg").count(), 1, "one plot");
    assert!(
        html.contains("ring.log") && html.contains("tree&lt;1&gt;.log"),
        "names escaped"
    );
    assert!(!html.contains("tree<1>"), "no unescaped name");
    assert!(
        html.contains("<td>134217728</td><td>46.70</td><td>23.35</td>"),
        "{html}"
    );
}

#[test]
fn wrong_elements_draw_a_hollow_point_and_one_size_draws_nothing() {
    let mut bad = parse_results(ALL_REDUCE_CURRENT).expect("parses");
    bad.rows[1].out_of_place.check = crate::roce::nccl::NcclCheck::Wrong(3);
    let run = [NamedRun {
        name: "bad.log",
        results: &bad,
    }];
    assert!(!lines(&run)[0].points[1].2, "not vouched for");
    assert!(lines(&run)[0].points[0].2);
    // One size only (the older layout's sample): the table, no plot.
    let one = parse_results(ALL_REDUCE_OLD).expect("parses");
    let html = page(&[NamedRun {
        name: "old.log",
        results: &one,
    }])
    .expect("renders");
    assert!(!html.contains("<svg"), "nothing to draw against size");
    assert!(html.contains("<td>1048576</td><td>3.19</td>"), "{html}");
}
