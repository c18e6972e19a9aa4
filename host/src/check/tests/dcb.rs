//! The `dcb.*` checks on configurations decoded from canned `RTM_GETDCB` answers, laid
//! out byte by byte as the kernel's `dcbnl_ieee_fill` writes them: a correct lossless
//! setup, PFC on the wrong priority, PFC off, PCP trust, a RoCE class without ETS
//! bandwidth, the rdma_cm ToS from a configfs fixture file, and a fixture root.

use std::fs;

use dpu_probe::dcb::read_roce_tos;
use dpu_probe::SysRoot;

use super::super::dcb;
use super::super::facts::{AgentFacts, HostFacts};
use super::super::rules::{judge, CheckVerdict, Expectations, FactValue, Facts, Status};
use crate::facts::dcb::{DcbFacts, DcbRail};
use crate::facts::dcb_fixture::{decoded, facts_with, lossless, Setup, IF};

type Check = fn(&DcbFacts, Option<&str>, &mut Facts) -> CheckVerdict;

const CHECKS: [(&str, Check); 4] = [
    ("dcb.pfc", dcb::pfc),
    ("dcb.trust", dcb::trust),
    ("dcb.chain", dcb::roce_chain),
    ("dcb.ets", dcb::ets),
];

fn run(id: &str, facts: &DcbFacts) -> (CheckVerdict, Facts) {
    let (_, check) = CHECKS.iter().find(|(i, _)| *i == id).expect("a dcb check");
    let mut f = Facts::new();
    let verdict = check(facts, Some(IF), &mut f);
    (verdict, f)
}

fn status(id: &str, facts: &DcbFacts) -> (Status, String) {
    let (v, _) = run(id, facts);
    (v.status, v.detail)
}

#[test]
fn a_correct_lossless_setup_passes_every_check() {
    let facts = facts_with(&lossless(), 106);
    for (id, _) in CHECKS {
        let (s, detail) = status(id, &facts);
        assert_eq!(s, Status::Pass, "{id}: {detail}");
    }
    let (v, f) = run("dcb.chain", &facts);
    assert_eq!(
        v.detail,
        "RoCE traffic (ToS 106 → DSCP 26) maps to priority 3 by the APP table; PFC is enabled on priority 3"
    );
    assert_eq!(f["roce_priority"], FactValue::Int(3));
    assert_eq!(f["dscp"], FactValue::Int(26));
    assert_eq!(f["priority_source"], FactValue::from("app-table"));
    let (v, f) = run("dcb.ets", &facts);
    assert!(
        v.detail.starts_with("RoCE priority 3 → TC3; TC0 ets 50%"),
        "{}",
        v.detail
    );
    assert_eq!(f["roce_tc"], FactValue::Int(3));
    assert_eq!(
        status("dcb.trust", &facts).1,
        "ens1f0np0 trusts DSCP (2 DSCP → priority entries in the APP table)"
    );
}

#[test]
fn pfc_on_the_wrong_priority_fails_with_the_named_chain() {
    let setup = Setup {
        pfc_en: 1 << 4,
        ..lossless()
    };
    let facts = facts_with(&setup, 106);
    let (s, detail) = status("dcb.chain", &facts);
    assert_eq!(s, Status::Fail);
    assert_eq!(
        detail,
        "RoCE traffic (ToS 106 → DSCP 26) maps to priority 3; PFC is enabled on priority 4"
    );
    let (s, detail) = status("dcb.pfc", &facts);
    assert_eq!(s, Status::Fail);
    assert!(
        detail
            .contains("PFC is enabled on priority 4 but RoCE traffic (DSCP 26) maps to priority 3"),
        "{detail}"
    );
}

#[test]
fn pfc_off_everywhere_fails() {
    let setup = Setup {
        pfc_en: 0,
        ..lossless()
    };
    let facts = facts_with(&setup, 106);
    let (s, detail) = status("dcb.pfc", &facts);
    assert_eq!(s, Status::Fail);
    assert!(
        detail.starts_with("PFC is off on every priority of ens1f0np0"),
        "{detail}"
    );
    let (s, detail) = status("dcb.chain", &facts);
    assert_eq!(s, Status::Fail);
    assert!(
        detail.ends_with("PFC is enabled on no priority"),
        "{detail}"
    );
}

#[test]
fn pfc_on_more_priorities_than_roce_warns() {
    let setup = Setup {
        pfc_en: (1 << 3) | (1 << 4),
        ..lossless()
    };
    let (s, detail) = status("dcb.pfc", &facts_with(&setup, 106));
    assert_eq!(s, Status::Warn);
    assert!(detail.starts_with("PFC on priorities 3, 4"), "{detail}");
}

#[test]
fn pcp_trust_warns_and_the_chain_skips() {
    let setup = Setup {
        dscp_prio: vec![],
        ..lossless()
    };
    let facts = facts_with(&setup, 106);
    let (v, f) = run("dcb.trust", &facts);
    assert_eq!(v.status, Status::Warn);
    assert!(
        v.detail.contains("trusts PCP") && v.detail.contains("routed RoCE v2"),
        "{}",
        v.detail
    );
    assert_eq!(f["trust"], FactValue::from("pcp"));
    let (s, detail) = status("dcb.chain", &facts);
    assert_eq!(s, Status::Skip);
    assert!(detail.contains("trusts PCP"), "{detail}");
}

#[test]
fn dscp_trust_without_an_entry_uses_the_default_dscp_map() {
    // Trust DSCP (an entry for DSCP 48 only): DSCP 26 falls to 26 >> 3 = priority 3.
    let setup = Setup {
        dscp_prio: vec![(48, 6)],
        ..lossless()
    };
    let (v, f) = run("dcb.chain", &facts_with(&setup, 106));
    assert_eq!(v.status, Status::Pass, "{}", v.detail);
    assert!(v.detail.contains("default DSCP>>3 map"), "{}", v.detail);
    assert_eq!(f["priority_source"], FactValue::from("default-dscp-map"));
}

#[test]
fn a_roce_class_without_ets_bandwidth_warns() {
    let setup = Setup {
        tc_tx_bw: [100, 0, 0, 0, 0, 0, 0, 0],
        ..lossless()
    };
    let (s, detail) = status("dcb.ets", &facts_with(&setup, 106));
    assert_eq!(s, Status::Warn);
    assert!(
        detail.starts_with("the RoCE priority 3 is in TC3, which has 0% under ETS"),
        "{detail}"
    );
}

#[test]
fn the_rdma_cm_tos_comes_from_the_configfs_fixture_file() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = SysRoot::new(dir.path());
    // Without the configfs entry: the kernel's default ToS 0.
    let default = read_roce_tos(&root, "mlx5_0", 1).expect("default");
    assert_eq!((default.tos, default.file.as_ref()), (0, None));
    let port = dir.path().join("sys/kernel/config/rdma_cm/mlx5_0/ports/1");
    fs::create_dir_all(&port).expect("mkdir");
    fs::write(port.join("default_roce_tos"), "106\n").expect("write");
    let tos = read_roce_tos(&root, "mlx5_0", 1).expect("read");
    assert_eq!((tos.tos, tos.dscp()), (106, 26));
    let mut facts = DcbFacts::default();
    facts.rails.insert(
        IF.to_owned(),
        DcbRail {
            config: Ok(decoded(&lossless())),
            tos: Ok(tos),
        },
    );
    let (v, f) = run("dcb.chain", &facts);
    assert_eq!(v.status, Status::Pass, "{}", v.detail);
    assert_eq!(f["roce_tos"], FactValue::Int(106));
    assert!(f["tos_source"]
        .as_str()
        .is_some_and(|s| s.ends_with("ports/1/default_roce_tos")));
    // ToS 0 (no configfs): DSCP 0 → priority 0, which PFC does not cover.
    let (s, detail) = status("dcb.chain", &facts_with(&lossless(), 0));
    assert_eq!(s, Status::Fail);
    assert_eq!(
        detail,
        "RoCE traffic (ToS 0 → DSCP 0) maps to priority 0; PFC is enabled on priority 3"
    );
    // A malformed file is an error naming it.
    fs::write(port.join("default_roce_tos"), "lots\n").expect("write");
    let error = read_roce_tos(&root, "mlx5_0", 1).expect_err("malformed");
    assert!(error.to_string().contains("default_roce_tos"), "{error}");
}

#[test]
fn a_fixture_root_skips_every_check_with_the_reason() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = SysRoot::new(dir.path());
    let mut facts = DcbFacts::default();
    facts.read_rail(&root, IF, Some(("mlx5_0", 1)));
    for (id, _) in CHECKS {
        let (s, detail) = status(id, &facts);
        assert_eq!(s, Status::Skip, "{id}");
        assert!(detail.contains("not under --sys-root"), "{id}: {detail}");
    }
    facts.read_rail(&root, "bad/name", None);
    let mut f = Facts::new();
    let v = dcb::pfc(&facts, Some("bad/name"), &mut f);
    assert_eq!(v.status, Status::Skip);
    assert!(v.detail.contains("invalid interface name"), "{}", v.detail);
    let mut f = Facts::new();
    let v = dcb::pfc(&facts, Some("ens2"), &mut f);
    assert_eq!(v.detail, "the DCB configuration of ens2 was not read");
}

#[test]
fn judge_runs_the_dcb_checks_once_per_rail() {
    let dir = tempfile::tempdir().expect("tempdir");
    let host = HostFacts::gather(&SysRoot::new(dir.path()));
    let results = judge(&host, &AgentFacts::NotAsked, &Expectations::default());
    for (id, _) in CHECKS {
        let (_, v) = results.iter().find(|(i, _)| *i == id).expect("judged");
        assert_eq!(v.status, Status::Skip, "{id}: {}", v.detail);
    }
}
