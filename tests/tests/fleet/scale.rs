//! Two hundred agents, twelve of them broken (tests/src/fleet.rs `FleetSpec::standard`):
//! `fleet health` and `fleet check --mtu 9000` find every broken node with its fault,
//! group them by cause, show the MTU drift, and blame none of the 188 healthy ones.

use std::collections::BTreeSet;

use dpu_tests::fleet::{
    Fault, Fleet, FleetSpec, FLEET_MTU, NIC_FUNCTION, RDMA_DEVICE, UPLINK, WRONG_MTU,
};
use serde_json::Value;

use super::{problems, run_fleet_paced, text, FleetRun, Pace, CALL_TIMEOUT_FIRST, DEADLINE_FIRST};

/// Slack over `--deadline` that a hung node's own time may take: the runner's wake-up
/// and the report, not a performance bound.
const DEADLINE_GRACE_MS: f64 = 2_000.0;

fn set<'a>(names: impl IntoIterator<Item = &'a str>) -> BTreeSet<&'a str> {
    names.into_iter().collect()
}

/// The nodes of the group with check id `check` (asserting there is exactly one).
fn group_nodes<'a>(run: &'a FleetRun, check: &str) -> BTreeSet<&'a str> {
    cause_group_nodes(run, check, None)
}

/// The nodes of the group with check id `check` and, when given, `cause` (asserting
/// there is exactly one).
fn cause_group_nodes<'a>(run: &'a FleetRun, check: &str, cause: Option<&str>) -> BTreeSet<&'a str> {
    let groups: Vec<&Value> = run
        .groups()
        .iter()
        .filter(|g| g["check"] == check && cause.is_none_or(|c| g["cause"] == c))
        .collect();
    assert_eq!(
        groups.len(),
        1,
        "one {check} group ({cause:?}): {:#?}",
        run.groups()
    );
    groups[0]["nodes"]
        .as_array()
        .expect("a group's nodes")
        .iter()
        .map(text)
        .collect()
}

/// Every healthy node is PASS without a problem, in no group and odd in no drift.
fn assert_none_blamed(run: &FleetRun, fleet: &Fleet) {
    let healthy = set(fleet.healthy());
    assert_eq!(healthy.len(), 188);
    for name in &healthy {
        let row = run.node(name);
        assert_eq!(row["status"], "PASS", "{name}: {row}");
        assert!(
            row["problems"].as_array().is_none_or(Vec::is_empty),
            "{name}: {row}"
        );
    }
    for group in run.groups() {
        for node in group["nodes"].as_array().expect("a group's nodes") {
            assert!(!healthy.contains(text(node)), "healthy {node} in {group}");
        }
    }
    for drift in run.drift() {
        if let Some(odd) = drift["odd"].as_object() {
            for name in odd.keys() {
                assert!(
                    !healthy.contains(name.as_str()),
                    "healthy {name} drifts: {drift}"
                );
            }
        }
    }
}

/// The cause of a hung node's `agent.reachable` problem.
const HUNG_CAUSE: &str = "agent did not answer in time";
/// The cause of an untrusted-TLS node's `agent.reachable` problem.
const TLS_CAUSE: &str = "TLS handshake failed";

/// The hung and the TLS-refused nodes: UNREACHABLE with `agent.reachable`, each kind with
/// its own cause and in its own group (issue 35: one "agent unreachable" group hid which
/// was which), the hung ones within their deadline and saying which limit they ran out
/// (`hung_says`), the TLS ones naming the certificate or TLS.
fn assert_unreachable(run: &FleetRun, fleet: &Fleet, pace: Pace, hung_says: &[&str]) {
    let deadline_ms: f64 = pace.deadline.parse::<f64>().expect("deadline") * 1000.0;
    let kinds = [
        (Fault::Hung, HUNG_CAUSE, hung_says),
        (
            Fault::UntrustedTls,
            TLS_CAUSE,
            &["tls", "handshake", "certificate"][..],
        ),
    ];
    for (fault, cause, says) in kinds {
        for name in fleet.with_fault(fault) {
            let row = run.node(name);
            assert_eq!(row["status"], "UNREACHABLE", "{name}: {row}");
            let found = problems(row, "agent.reachable");
            assert_eq!(found.len(), 1, "{name}: {row}");
            assert_eq!(found[0]["cause"], cause, "{name}: {row}");
            let detail = text(&found[0]["detail"]).to_lowercase();
            assert!(
                says.iter().any(|w| detail.contains(w)),
                "{name} ({fault:?}): the detail should say one of {says:?}: {row}"
            );
            if fault == Fault::Hung {
                let elapsed = row["elapsed_ms"].as_f64().expect("elapsed_ms");
                assert!(
                    elapsed <= deadline_ms + DEADLINE_GRACE_MS,
                    "{name} took {elapsed} ms, past its {deadline_ms} ms deadline: {row}"
                );
            }
        }
    }
    for (fault, cause, _) in kinds {
        assert_eq!(
            cause_group_nodes(run, "agent.reachable", Some(cause)),
            set(fleet.with_fault(fault)),
            "the {cause:?} group"
        );
    }
    let reachable_groups = run
        .groups()
        .iter()
        .filter(|g| g["check"] == "agent.reachable")
        .count();
    assert_eq!(reachable_groups, 2, "{:#?}", run.groups());
}

#[test]
fn two_hundred_agents_every_fault_found_grouped_and_no_healthy_node_blamed() {
    let fleet = Fleet::start(&FleetSpec::standard());

    // health: only the agents that cannot be asked are not PASS; a hung agent runs out
    // the per-call --timeout.
    let pace = CALL_TIMEOUT_FIRST;
    let run = run_fleet_paced(pace, fleet.inventory(), &[], &["health"]);
    let ctx = run.context();
    assert_eq!(run.code, Some(1), "{ctx}");
    assert_eq!(run.report["command"], "health", "{ctx}");
    assert_eq!(run.report["targets"], 200, "{ctx}");
    assert_eq!(run.nodes().len(), 200, "{ctx}");
    assert_unreachable(&run, &fleet, pace, &["timeout", "timed out"]);
    for fault in [Fault::RdmaPortDown, Fault::NarrowPcieLink, Fault::WrongMtu] {
        for name in fleet.with_fault(fault) {
            assert_eq!(
                run.node(name)["status"],
                "PASS",
                "{fault:?} is not a health fault: {ctx}"
            );
        }
    }
    assert_none_blamed(&run, &fleet);
    assert_eq!(run.report["summary"]["PASS"], 196, "{ctx}");
    assert_eq!(run.report["summary"]["UNREACHABLE"], 4, "{ctx}");

    // check: every broken node FAIL with its own check, grouped by cause; a hung agent
    // runs out its --deadline.
    let mtu = FLEET_MTU.to_string();
    let pace = DEADLINE_FIRST;
    let pages = tempfile::tempdir().expect("tempdir");
    let html = pages.path().join("fleet-check.html");
    let html_arg = html.display().to_string();
    let run = run_fleet_paced(
        pace,
        fleet.inventory(),
        &["--html", &html_arg],
        &["check", "--mtu", &mtu],
    );
    let ctx = run.context();
    assert_eq!(run.code, Some(1), "{ctx}");
    assert_eq!(run.report["command"], "check", "{ctx}");
    // The page names every faulty node in its groups and has a row for every node. With
    // DPU_FLEET_HTML_OUT set the page is kept there (docs/fleet.md shows one).
    let page = std::fs::read_to_string(&html).expect("the --html page");
    assert!(
        page.contains("<title>dpuctl fleet check: 8 FAIL, 4 UNREACHABLE, 188 PASS</title>"),
        "{ctx}"
    );
    assert_eq!(page.matches("<tr id=\"n-").count(), 200, "a row per node");
    for fault in [
        Fault::RdmaPortDown,
        Fault::NarrowPcieLink,
        Fault::WrongMtu,
        Fault::Hung,
    ] {
        for name in fleet.with_fault(fault) {
            assert!(
                page.contains(&format!("id=\"n-{name}\"")),
                "{name} on the page"
            );
        }
    }
    if let Some(out) = std::env::var_os("DPU_FLEET_HTML_OUT") {
        std::fs::copy(&html, out).expect("keep the page");
    }
    assert_eq!(run.report["targets"], 200, "{ctx}");
    assert_unreachable(&run, &fleet, pace, &["deadline"]);
    let wrong_mtu = WRONG_MTU.to_string();
    let expected: [(Fault, &str, &str, Vec<&str>); 3] = [
        (
            Fault::RdmaPortDown,
            "dpu.rdma-port",
            "RDMA port not ACTIVE",
            vec![RDMA_DEVICE, "DOWN"],
        ),
        (
            Fault::NarrowPcieLink,
            "dpu.pcie-link",
            "PCIe link below its maximum",
            vec![NIC_FUNCTION, "x8", "x16"],
        ),
        (
            Fault::WrongMtu,
            "dpu.mtu",
            "MTU differs from --mtu",
            vec![UPLINK, &wrong_mtu],
        ),
    ];
    for (fault, check, cause, words) in &expected {
        let broken = fleet.with_fault(*fault);
        for name in &broken {
            let row = run.node(name);
            assert_eq!(row["status"], "FAIL", "{name} ({fault:?}): {row}");
            let found = problems(row, check);
            assert_eq!(
                found.len(),
                1,
                "{name} ({fault:?}) has one {check} problem: {row}"
            );
            assert_eq!(found[0]["cause"], *cause, "{name}: {row}");
            let detail = text(&found[0]["detail"]);
            for word in words {
                assert!(
                    detail.contains(word),
                    "{name}: {check} detail names {word:?}: {row}"
                );
            }
            // Its fault is its only problem: a port down is not also blamed on the link.
            let others: Vec<&Value> = row["problems"]
                .as_array()
                .expect("problems")
                .iter()
                .filter(|p| p["check"] != *check)
                .collect();
            assert!(
                others.is_empty(),
                "{name} ({fault:?}) blamed for more: {row}"
            );
        }
        assert_eq!(
            group_nodes(&run, check),
            set(broken),
            "the {check} group: {ctx}"
        );
        let group = run
            .groups()
            .iter()
            .find(|g| g["check"] == *check)
            .expect("group");
        assert_eq!(group["cause"], *cause, "{group}");
        assert_eq!(group["status"], "FAIL", "{group}");
    }
    assert_none_blamed(&run, &fleet);
    assert_eq!(run.report["summary"]["PASS"], 188, "{ctx}");
    assert_eq!(run.report["summary"]["FAIL"], 8, "{ctx}");
    assert_eq!(run.report["summary"]["UNREACHABLE"], 4, "{ctx}");

    // Drift: the wrong-MTU nodes against the 9000 of the majority.
    let mtu_drift: Vec<&Value> = run
        .drift()
        .iter()
        .filter(|d| text(&d["fact"]).contains("mtu") && text(&d["fact"]).contains(UPLINK))
        .collect();
    assert_eq!(
        mtu_drift.len(),
        1,
        "one uplink MTU drift: {:#?}",
        run.drift()
    );
    let drift = mtu_drift[0];
    assert_eq!(drift["majority"], mtu, "{drift}");
    assert!(
        drift["majority_nodes"].as_u64().unwrap_or(0) >= 188,
        "{drift}"
    );
    let odd = drift["odd"].as_object().expect("odd nodes");
    assert_eq!(
        odd.keys().map(String::as_str).collect::<BTreeSet<_>>(),
        set(fleet.with_fault(Fault::WrongMtu)),
        "{drift}"
    );
    assert!(odd.values().all(|v| *v == wrong_mtu), "{drift}");
}
