//! An A/B/A MTU experiment on the lab's RDMA path (issue 37): `dpuctl experiment run` on
//! the DPU side (the init netns, where `p0` carries soft-RoCE `rxe0`) sets `p0`'s MTU
//! 1500 → 4200 → 1500 through netlink, and every trial is one `roce perf` run of
//! `ib_write_bw` against the target, started over ssh, its RDMA port counters read before
//! and after.
//!
//! Asserted: the run ends with a verdict (any of the four: under TCG the bandwidth is
//! noise-dominated, so which one is not the point), every trial was corroborated by the
//! port counters (path `rdma`, moved at least 90 % of its payload's packets), the knob
//! reached the RDMA path (the payload counts 6,400 packets of 1024 B in A and 1,600 of
//! 4096 B in B: rxe's active MTU follows the netdev's), and afterwards `p0` is back at
//! 1500 with rxe0's active MTU back at 1024, no journal left, and the page has one SVG
//! with a point per trial.
//!
//! The target's `t0` is raised to 4200 for the experiment (B's 4096-byte frames must fit
//! there too; the knob changes one side only) and set back to 1500 after.
//! `DPU_EXPERIMENT_LAB_PAGE=PATH` keeps the page (docs/examples/experiment-lab.html).

use serde_json::Value;

use crate::{shown, Lab};

/// 3 trials a phase and 100 messages of 64 KiB keep it near 40 s under TCG.
const PLAN: &str = "\
trials = 3
[measurement]
kind = \"roce-perf\"
peer = \"target\"
test = \"write_bw\"
size = 65536
iterations = 100
[knob]
kind = \"mtu\"
interface = \"p0\"
a = 1500
b = 4200
";

/// The payload's packets of one trial: 100 x 64 KiB at the path MTU.
fn payload_packets(path_mtu: u64) -> u64 {
    100 * 65_536 / path_mtu
}

fn active_mtu(lab: &Lab, vm: &str, ns: &str) -> String {
    let (code, out, err) = lab.run(vm, ns, "ibv_devinfo -d rxe0 | grep active_mtu");
    assert_eq!(code, 0, "{err}");
    out.split_whitespace().nth(1).unwrap_or_default().to_owned()
}

pub(crate) fn an_mtu_experiment_over_soft_roce_ends_with_a_verdict_and_the_mtu_back(lab: &Lab) {
    let target = |script: &str| {
        let (code, out, err) = lab.run("target", "none", script);
        assert_eq!(code, 0, "{script}: {out}{err}");
    };
    target("ip link set t0 mtu 4200");
    let dpu = |script: &str| lab.run("bluefield", "dpu", script);
    let (code, _, err) = dpu(&format!(
        "mkdir -p /tmp/exp && cat > /tmp/exp/mtu.toml <<'PLAN'\n{PLAN}PLAN"
    ));
    assert_eq!(code, 0, "{err}");
    let started = std::time::Instant::now();
    let (code, stdout, stderr) = dpu(
        "dpuctl -o json experiment run /tmp/exp/mtu.toml --journal /tmp/exp/journal.json \
         --html /tmp/exp/page.html",
    );
    shown(&format!(
        "[lab] experiment: exit {code} in {:.1} s",
        started.elapsed().as_secs_f64()
    ));
    target("ip link set t0 mtu 1500");
    assert!(
        code == 0 || code == 3,
        "exit {code}: a verdict is 0 or 3\n{stdout}\n{stderr}"
    );
    let report: Value = serde_json::from_str(&stdout)
        .unwrap_or_else(|e| panic!("not JSON ({e}): {stdout}\n{stderr}"));
    let verdict = report["analysis"]["verdict"].as_str().unwrap_or_default();
    assert!(
        ["IMPROVEMENT", "REGRESSION", "NO_EFFECT", "INCONCLUSIVE"].contains(&verdict),
        "{report:#}"
    );
    assert_eq!(code == 3, verdict == "INCONCLUSIVE", "{report:#}");
    shown(&format!(
        "[lab] experiment verdict: {verdict}: {}",
        report["analysis"]["summary"]
    ));
    let trials = report["trials"].as_array().expect("trials");
    assert_eq!(trials.len(), 9, "{report:#}");
    for trial in trials {
        assert_eq!(trial["counted"], true, "{trial:#}");
        let rdma = &trial["rdma"];
        assert_eq!(rdma["path"], "rdma", "{trial:#}");
        let in_b = trial["phase"].as_str().is_some_and(|p| p.starts_with('B'));
        let payload = payload_packets(if in_b { 4096 } else { 1024 });
        assert_eq!(rdma["payload_packets"], payload, "the path MTU: {trial:#}");
        let moved = rdma["packets_delta"].as_u64().expect("a packet count");
        assert!(moved >= payload * 9 / 10, "{trial:#}");
        assert!(
            trial["value"].as_f64().is_some_and(|v| v > 0.0),
            "{trial:#}"
        );
    }
    for phase in report["analysis"]["phases"].as_array().expect("phases") {
        assert_eq!(
            phase["trials"].as_array().map(Vec::len),
            Some(3),
            "{phase:#}"
        );
    }
    // The real kernel is back at A: the netdev and the rxe port that follows it.
    let (_, mtu, _) = dpu("cat /sys/class/net/p0/mtu");
    assert_eq!(mtu.trim(), "1500");
    assert_eq!(active_mtu(lab, "bluefield", "dpu"), "1024");
    let (code, _, _) = dpu("test -e /tmp/exp/journal.json");
    assert_ne!(code, 0, "the journal was removed");
    let (code, page, _) = dpu("cat /tmp/exp/page.html");
    assert_eq!(code, 0);
    assert_eq!(page.matches("<svg").count(), 1, "one plot");
    assert_eq!(page.matches("<circle").count(), 9, "a point per trial");
    if let Some(keep) = std::env::var_os("DPU_EXPERIMENT_LAB_PAGE") {
        std::fs::write(&keep, &page).expect("keep the page");
    }
}
