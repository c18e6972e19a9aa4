//! `roce dcb`'s configuration view and its tie to the counters, and the lossless ToS
//! `check --env` sets, on the DCB configurations the `dcb.*` check tests decode from
//! canned `RTM_GETDCB` answers (their builders: a correct lossless setup, PFC on the wrong
//! priority, PFC off, PCP trust).

use std::path::PathBuf;

use dpu_probe::dcb::RoceTos;
use dpu_probe::SysRoot;

use super::super::dcb::findings::{Counters, Finding, Severity};
use super::super::dcb::tie::{bytes_text, tie};
use crate::facts::dcb::{DcbFacts, DcbRail};
use crate::facts::dcb_chain::{lossless_tos, tos_of, PrioritySource, RailDcb, TosRail};
use crate::facts::dcb_fixture::{decoded, facts_with, lossless, Setup, IF};

fn view(setup: &Setup, tos: u8) -> RailDcb {
    RailDcb::from_facts(&facts_with(setup, tos), IF).expect("read")
}

fn counters(pairs: &[(&str, u64)]) -> Counters {
    pairs.iter().map(|(k, v)| ((*k).to_owned(), *v)).collect()
}

/// A 1.2 GB RDMA write on priority 3 (both directions counted), some TCP on priority 0,
/// no pauses.
fn run_on_priority_3() -> Counters {
    counters(&[
        ("rx_prio3_bytes", 1_200_000_000),
        ("tx_prio3_bytes", 1_100_000_000),
        ("rx_prio3_pause", 0),
        ("tx_prio3_pause", 0),
        ("rx_prio0_bytes", 48_000),
        ("tx_prio0_bytes", 52_000),
        ("rx_prio0_pause", 0),
        ("tx_prio0_pause", 0),
        ("port_xmit_packets", 300_000),
        ("port_rcv_packets", 290_000),
    ])
}

/// The same run sent with ToS 0: it lands on priority 0.
fn run_on_priority_0() -> Counters {
    counters(&[
        ("rx_prio3_bytes", 0),
        ("tx_prio3_bytes", 0),
        ("rx_prio0_bytes", 1_200_000_000),
        ("tx_prio0_bytes", 1_100_000_000),
        ("rx_prio0_pause", 0),
        ("port_xmit_packets", 300_000),
        ("port_rcv_packets", 290_000),
    ])
}

fn of(findings: &[Finding], severity: Severity) -> Vec<&str> {
    findings
        .iter()
        .filter(|f| f.severity == severity)
        .map(|f| f.meaning.as_str())
        .collect()
}

// ---- the configuration view ----

#[test]
fn the_view_names_the_chain_and_serializes_every_part() {
    let v = view(&lossless(), 106);
    assert_eq!(
        v.chain_text(),
        "RoCE ToS 106 → DSCP 26 → priority 3 (by the APP table); PFC enabled on 3"
    );
    let json = serde_json::to_value(&v).expect("json");
    assert_eq!(json["trust"], "dscp");
    assert_eq!(json["pfc_enabled"], serde_json::json!([3]));
    assert_eq!(
        json["dscp_map"],
        serde_json::json!([{"dscp": 26, "priority": 3}, {"dscp": 48, "priority": 6}])
    );
    assert_eq!(json["ets"]["tc_tx_bw"][3], 50);
    assert_eq!(json["ets"]["tc_tsa"][3], "ets");
    assert_eq!(json["roce"]["priority"], 3);
    assert_eq!(json["roce"]["priority_source"], "app-table");
    assert_eq!(json["roce"]["pfc"], true);
    assert_eq!(json["roce"]["traffic_class"], 3);
    assert!(json["roce"]["tos_source"]
        .as_str()
        .is_some_and(|s| s.ends_with("ports/1/default_roce_tos")));
    assert!(json.get("roce_unknown").is_none());
    // DSCP 24..31 land on priority 3 (26 by its entry, the rest by the default map).
    let dscps: Vec<u8> = v.lossless_dscps.iter().map(|l| l.dscp).collect();
    assert_eq!(dscps, (24..32).collect::<Vec<u8>>());
}

#[test]
fn pcp_trust_and_an_unknown_tos_are_said_in_the_chain() {
    let pcp = Setup {
        dscp_prio: vec![],
        ..lossless()
    };
    let v = view(&pcp, 106);
    assert!(
        v.chain_text().contains("trusts PCP") && v.roce_priority().is_none(),
        "{}",
        v.chain_text()
    );
    assert!(v.lossless_dscps.is_empty());
    let no_port = RailDcb::new(
        &decoded(&lossless()),
        Err("no RDMA port bound to ens1f0np0"),
    );
    assert_eq!(
        no_port.chain_text(),
        "RoCE ToS unknown (no RDMA port bound to ens1f0np0); PFC enabled on 3"
    );
}

#[test]
fn a_fixture_root_has_no_view_and_says_why() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut facts = DcbFacts::default();
    facts.read_rail(&SysRoot::new(dir.path()), IF, Some(("mlx5_0", 1)));
    let why = RailDcb::from_facts(&facts, IF).expect_err("not the live system");
    assert!(why.contains("not under --sys-root"), "{why}");
    let why = RailDcb::from_facts(&facts, "ens9").expect_err("not read");
    assert_eq!(why, "the DCB configuration of ens9 was not read");
}

// ---- the tie to the counters ----

#[test]
fn traffic_on_the_configured_pfc_priority_is_shown_as_proof() {
    let v = view(&lossless(), 106);
    let (proof, findings) = tie(Ok(&v), &run_on_priority_3(), 3);
    assert_eq!(
        proof.summary,
        [
            "RoCE ToS 106 → DSCP 26 → priority 3 (by the APP table); PFC enabled on 3",
            "the run's traffic was counted on priority 3 (rx_prio3_bytes +1.2 GB, tx_prio3_bytes +1.1 GB), pauses on 3: 0",
        ]
    );
    assert_eq!(proof.configured_priority, Some(3));
    assert_eq!(proof.busiest_priority, Some(3));
    assert_eq!(proof.rdma_packets, Some(590_000));
    assert_eq!(
        proof.per_priority.len(),
        2,
        "priorities 0 and 3 have counters"
    );
    assert!(
        of(&findings, Severity::Misconfigured).is_empty(),
        "{findings:?}"
    );
    assert_eq!(of(&findings, Severity::Info).len(), 1, "{findings:?}");
    assert_eq!(
        findings[0].evidence,
        [
            ("rx_prio3_bytes".to_owned(), 1_200_000_000),
            ("tx_prio3_bytes".to_owned(), 1_100_000_000)
        ]
    );
    // PFC at work under congestion: the pauses are counted on the RoCE priority.
    let mut congested = run_on_priority_3();
    congested.insert("rx_prio3_pause".to_owned(), 12);
    let (proof, _) = tie(Ok(&v), &congested, 3);
    assert!(
        proof.summary[1].ends_with("pauses on 3: 12"),
        "{:?}",
        proof.summary
    );
}

#[test]
fn traffic_counted_on_another_priority_than_configured_is_named() {
    let v = view(&lossless(), 106);
    let (proof, findings) = tie(Ok(&v), &run_on_priority_0(), 3);
    assert_eq!(proof.busiest_priority, Some(0));
    let bad = of(&findings, Severity::Misconfigured);
    assert_eq!(bad.len(), 1, "{findings:?}");
    assert!(
        bad[0].starts_with("the configuration puts RoCE on priority 3 (RoCE ToS 106 → DSCP 26")
            && bad[0].contains("counted on priority 0")
            && bad[0].contains("NCCL_IB_TC"),
        "{}",
        bad[0]
    );
    assert!(
        proof.summary[1].starts_with(
            "the run's traffic was counted on priority 0 (rx_prio0_bytes +1.2 GB, tx_prio0_bytes +1.1 GB), not on 3 (priority 3: prio3_bytes +0 B)"
        ),
        "{:?}",
        proof.summary
    );
}

#[test]
fn pfc_on_another_priority_than_roce_is_a_finding_without_counters() {
    let wrong = Setup {
        pfc_en: 1 << 4,
        ..lossless()
    };
    let v = view(&wrong, 106);
    let (proof, findings) = tie(Ok(&v), &Counters::new(), 3);
    assert_eq!(proof.pfc_on_configured, Some(false));
    assert_eq!(
        of(&findings, Severity::Misconfigured),
        ["RoCE traffic (ToS 106 → DSCP 26) maps to priority 3; PFC is enabled on priority 4: RoCE is lossy"]
    );
    let off = Setup {
        pfc_en: 0,
        ..lossless()
    };
    let (_, findings) = tie(Ok(&view(&off, 106)), &Counters::new(), 3);
    assert!(
        of(&findings, Severity::Misconfigured)[0].contains("PFC is enabled on no priority"),
        "{findings:?}"
    );
}

#[test]
fn a_quiet_window_on_a_correct_setup_blames_nothing() {
    let v = view(&lossless(), 106);
    let quiet = counters(&[
        ("rx_prio3_bytes", 0),
        ("rx_prio0_bytes", 9_000),
        ("port_xmit_packets", 0),
        ("port_rcv_packets", 0),
    ]);
    let (proof, findings) = tie(Ok(&v), &quiet, 3);
    assert!(findings.is_empty(), "{findings:?}");
    assert!(
        proof.summary[1].starts_with("no RDMA traffic in the window"),
        "{:?}",
        proof.summary
    );
    // No per-priority byte counters at all (a veth, soft-RoCE): said, nothing blamed.
    let (proof, findings) = tie(Ok(&v), &counters(&[("sent_pkts", 10)]), 3);
    assert!(findings.is_empty());
    assert!(proof.summary[1].contains("counts no per-priority bytes"));
}

#[test]
fn without_the_configuration_the_deltas_are_still_shown() {
    let (proof, findings) = tie(
        Err("DCB is read over netlink from the running kernel only, not under --sys-root /tmp/x"),
        &run_on_priority_0(),
        3,
    );
    assert!(
        proof.summary[0].starts_with("DCB configuration not read (DCB is read over netlink"),
        "{:?}",
        proof.summary
    );
    assert!(proof.summary[1].contains("the configured RoCE priority is unknown"));
    assert_eq!(proof.configured_priority, None);
    assert_eq!(proof.busiest_priority, Some(0));
    assert!(
        findings.is_empty(),
        "nothing to tie, nothing blamed: {findings:?}"
    );
    let json = serde_json::to_value(&proof).expect("json");
    assert_eq!(json["per_priority"][0]["rx_bytes"], 1_200_000_000u64);
}

#[test]
fn a_priority_flag_other_than_the_configured_one_warns() {
    let v = view(&lossless(), 106);
    let (_, findings) = tie(Ok(&v), &run_on_priority_3(), 4);
    assert_eq!(
        of(&findings, Severity::Warning),
        ["the configuration puts RoCE on priority 3, but the counters were judged against --priority 4: pass --priority 3"]
    );
}

#[test]
fn bytes_read_in_decimal_units() {
    assert_eq!(bytes_text(0), "0 B");
    assert_eq!(bytes_text(999), "999 B");
    assert_eq!(bytes_text(1_200_000_000), "1.2 GB");
    assert_eq!(bytes_text(999_960), "1.0 MB");
    assert_eq!(bytes_text(5_000), "5.0 kB");
}

// ---- the lossless ToS for check --env ----

fn rail<'a>(
    ifname: &'a str,
    config: &'a dpu_probe::dcb::DcbConfig,
    tos: Option<&'a RoceTos>,
) -> TosRail<'a> {
    TosRail {
        ifname,
        config,
        rdma_cm: tos,
    }
}

fn rdma_cm(tos: u8) -> RoceTos {
    RoceTos {
        tos,
        file: Some(PathBuf::from(
            "/sys/kernel/config/rdma_cm/mlx5_0/ports/1/default_roce_tos",
        )),
    }
}

#[test]
fn the_rdma_cm_tos_is_kept_when_it_is_lossless_else_dscp_26() {
    let config = decoded(&lossless());
    let tos = rdma_cm(104);
    let chosen = lossless_tos(&[rail(IF, &config, Some(&tos))]).expect("lossless");
    assert_eq!(
        (chosen.tos, chosen.dscp),
        (104, 26),
        "DSCP 26 without ECN bits, as rdma_cm has it"
    );
    assert!(
        chosen.chosen_because.contains("rdma_cm"),
        "{}",
        chosen.chosen_because
    );
    let zero = rdma_cm(0);
    let chosen = lossless_tos(&[rail(IF, &config, Some(&zero))]).expect("lossless");
    assert_eq!((chosen.tos, chosen.dscp), (106, 26));
    assert_eq!(tos_of(26), 106);
    assert_eq!(chosen.rails[0].1.priority, 3);
    assert_eq!(chosen.rails[0].1.source, PrioritySource::AppTable);
}

#[test]
fn an_app_entry_is_preferred_to_the_default_map() {
    // PFC on 6 only: DSCP 48 reaches it by its APP entry, 49..55 only by the default map.
    let six = Setup {
        pfc_en: 1 << 6,
        ..lossless()
    };
    let config = decoded(&six);
    let chosen = lossless_tos(&[rail(IF, &config, None)]).expect("lossless");
    assert_eq!((chosen.dscp, chosen.tos), (48, 194));
    assert!(
        chosen.chosen_because.contains("APP table"),
        "{}",
        chosen.chosen_because
    );
    // PFC on 4: no entry reaches it, the default map's DSCP 32 does.
    let four = Setup {
        pfc_en: 1 << 4,
        ..lossless()
    };
    let config = decoded(&four);
    let chosen = lossless_tos(&[rail(IF, &config, None)]).expect("lossless");
    assert_eq!(chosen.dscp, 32);
    assert!(
        chosen.chosen_because.contains("UNVERIFIED"),
        "{}",
        chosen.chosen_because
    );
}

#[test]
fn no_lossless_dscp_is_refused_naming_each_rail() {
    let off = decoded(&Setup {
        pfc_en: 0,
        ..lossless()
    });
    let e = lossless_tos(&[rail(IF, &off, None)]).expect_err("PFC off");
    assert_eq!(e.rails, ["ens1f0np0: PFC is enabled on no priority"]);
    // mlx5 under DSCP trust lists every DSCP: here all to 0 but 26 → 3; PFC on 4.
    let mut entries: Vec<(u16, u8)> = (0..64).map(|d| (d, 0)).collect();
    entries[26].1 = 3;
    let unreachable = decoded(&Setup {
        pfc_en: 1 << 4,
        dscp_prio: entries,
        ..lossless()
    });
    let e = lossless_tos(&[rail(IF, &unreachable, None)]).expect_err("nothing maps to 4");
    assert!(
        e.rails[0]
            .starts_with("ens1f0np0: PFC on 4, but no DSCP maps there (the APP table maps 0→0"),
        "{e}"
    );
    // Two rails, each lossless on its own priority, none in common.
    let three = decoded(&lossless());
    let six = decoded(&Setup {
        pfc_en: 1 << 6,
        ..lossless()
    });
    let e = lossless_tos(&[rail(IF, &three, None), rail("ens2f0np0", &six, None)])
        .expect_err("disjoint");
    assert_eq!(
        e.rails,
        [
            "ens1f0np0: PFC on 3, reached by DSCP 24..31",
            "ens2f0np0: PFC on 6, reached by DSCP 48..55",
        ]
    );
    assert!(e
        .to_string()
        .starts_with("no DSCP maps to a PFC-enabled priority on every rail"));
}

#[test]
fn a_dcb_rail_read_from_facts_feeds_the_tos() {
    // The check facts' rail, as env reads it: config and ToS from one DcbRail.
    let facts = facts_with(&lossless(), 0);
    let DcbRail { config, tos } = &facts.rails[IF];
    let config = config.as_ref().expect("config");
    let chosen = lossless_tos(&[rail(IF, config, tos.as_ref().ok())]).expect("lossless");
    assert_eq!(chosen.tos, 106);
}
