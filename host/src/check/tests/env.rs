//! `check --env` from judged facts: the settings of a ready fabric, refusals that name the
//! checks, and quoting that survives a hostile interface name.

use std::process::Command;

use dpu_probe::rdma::RdmaPortInfo;

use std::path::PathBuf;

use dpu_probe::dcb::RoceTos;

use super::super::env::{fabric_env, lossless_fabric_env, shell_quote, EnvRefused, FabricEnv};
use super::super::facts::{AgentFacts, HostFacts};
use super::super::rules::{judge, Expectations, Status};
use super::super::{describe, CheckResult};
use super::rules::{gid, healthy_gids, host, netdev, port, v4};
use crate::facts::dcb::DcbFacts;
use crate::facts::dcb_fixture::{facts_with, lossless, Setup, IF};
use dpu_probe::fw_config::FwFacts;

fn results(h: &HostFacts) -> Vec<CheckResult> {
    describe(judge(h, &AgentFacts::NotAsked, &Expectations::default()))
}

fn env_of(h: &HostFacts) -> Result<FabricEnv, EnvRefused> {
    fabric_env(&results(h))
}

fn ready() -> HostFacts {
    // A x8 link: a failed check the settings do not depend on.
    host(8, true, port(4, "5: LinkUp", healthy_gids()), vec![])
}

/// What `sh` makes of `script` followed by `tail`, as stdout.
fn sh(script: &str, tail: &str) -> String {
    let out = Command::new("sh")
        .arg("-c")
        .arg(format!("{script}{tail}"))
        .output()
        .expect("run sh");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("utf-8")
}

#[test]
fn a_ready_fabric_gives_nccl_ucx_and_perftest_settings() {
    let env = env_of(&ready()).expect("settings");
    assert_eq!(
        env.exports(),
        "export NCCL_IB_HCA=mlx5_0:1\n\
         export NCCL_IB_GID_INDEX=3\n\
         export NCCL_SOCKET_IFNAME=ens1f0np0\n\
         export UCX_NET_DEVICES=mlx5_0:1\n\
         export UCX_IB_GID_INDEX=3\n\
         export PERFTEST_FLAGS='-d mlx5_0 -i 1 -x 3'\n"
    );
    let json = serde_json::to_value(&env).expect("serialize");
    assert_eq!(json["NCCL_IB_GID_INDEX"], "3");
    assert_eq!(
        sh(
            &env.exports(),
            "echo \"$NCCL_IB_GID_INDEX|$PERFTEST_FLAGS\""
        ),
        "3|-d mlx5_0 -i 1 -x 3\n"
    );
}

#[test]
fn no_roce_v2_gid_is_refused_naming_the_check() {
    let gids = vec![
        gid(0, "IB/RoCE v1", "ens1f0np0", None),
        gid(1, "RoCE v2", "ens1f0np0", None),
    ];
    let h = host(16, true, port(4, "5: LinkUp", gids), vec![]);
    let refused = env_of(&h).expect_err("refused");
    let ids: Vec<_> = refused.unmet.iter().map(|u| u.id).collect();
    assert_eq!(ids, ["rdma.gid"]);
    assert_eq!(refused.unmet[0].status, Status::Fail);
    assert!(refused.to_string().contains("rdma.gid"), "{refused}");
}

#[test]
fn a_port_that_is_not_active_or_a_missing_interface_is_refused() {
    let h = host(16, true, port(1, "5: LinkUp", healthy_gids()), vec![]);
    let refused = env_of(&h).expect_err("refused");
    assert_eq!(refused.unmet[0].id, "rdma.port");

    let none = HostFacts {
        pci: Ok(vec![]),
        netdevs: Ok(vec![]),
        rdma: Ok(vec![]),
        ib_ports: Ok(vec![]),
        gpu_topology: Ok(Default::default()),
        firmware: FwFacts::NotRun("a hand-built host".to_owned()),
        gdr: Default::default(),
        dcb: Default::default(),
        hypervisor: None,
    };
    let refused = env_of(&none).expect_err("refused");
    let ids: Vec<_> = refused.unmet.iter().map(|u| u.id).collect();
    assert_eq!(ids, ["netdev.up", "rdma.bound"], "{refused}");
    assert!(refused.unmet.iter().all(|u| u.status == Status::Skip));
}

#[test]
fn several_roce_v2_gids_are_refused_rather_than_guessed() {
    let mut gids = healthy_gids();
    gids.push(gid(5, "RoCE v2", "ens1f0np0", v4()));
    let h = host(16, true, port(4, "5: LinkUp", gids), vec![]);
    let refused = env_of(&h).expect_err("refused");
    assert_eq!(refused.unmet.len(), 1);
    assert_eq!(refused.unmet[0].id, "rdma.gid");
    assert_eq!(refused.unmet[0].status, Status::Warn);
    assert!(refused.unmet[0].detail.contains("no gid_index"));
}

#[test]
fn infiniband_needs_no_gid_index() {
    let p = RdmaPortInfo {
        link_layer: "InfiniBand".to_owned(),
        ..port(4, "5: LinkUp", healthy_gids())
    };
    let env = env_of(&host(16, true, p, vec![])).expect("settings");
    assert_eq!(env.get("NCCL_IB_GID_INDEX"), None);
    assert_eq!(env.get("UCX_IB_GID_INDEX"), None);
    assert_eq!(env.get("PERFTEST_FLAGS"), Some("-d mlx5_0 -i 1"));
}

#[test]
fn a_hostile_interface_name_stays_one_literal_value() {
    let evil = "x';touch \"$MARK\";echo '$(id)`id`";
    let mut gids = healthy_gids();
    for g in &mut gids {
        g.netdev = Some(evil.to_owned());
    }
    let mut h = host(
        16,
        true,
        port(4, "5: LinkUp", gids),
        vec![netdev(evil, 9000, true)],
    );
    if let (Ok(pci), Ok(netdevs)) = (&mut h.pci, &mut h.netdevs) {
        pci[0].netdevs = vec![evil.to_owned()];
        netdevs.remove(0);
    }
    let env = env_of(&h).expect("settings");
    assert_eq!(env.get("NCCL_SOCKET_IFNAME"), Some(evil));
    let dir = tempfile::tempdir().expect("tempdir");
    let mark = dir.path().join("injected");
    let script = format!(
        "MARK={}\n{}",
        shell_quote(mark.to_str().expect("utf-8")),
        env.exports()
    );
    assert_eq!(
        sh(&script, "printf %s \"$NCCL_SOCKET_IFNAME\""),
        evil,
        "the value round-trips"
    );
    assert!(!mark.exists(), "nothing in the value ran");
}

#[test]
fn shell_quote_leaves_plain_words_and_single_quotes_the_rest() {
    assert_eq!(shell_quote("mlx5_0:1"), "mlx5_0:1");
    assert_eq!(shell_quote(""), "''");
    assert_eq!(shell_quote("a b"), "'a b'");
    assert_eq!(shell_quote("~x"), "'~x'");
    assert_eq!(shell_quote("it's"), r"'it'\''s'");
    assert_eq!(shell_quote("$(id)"), "'$(id)'");
}

// ---- the traffic class from the DCB chain ----

fn lossless_env(dcb: &DcbFacts) -> Result<FabricEnv, EnvRefused> {
    lossless_fabric_env(&results(&ready()), dcb)
}

#[test]
fn a_lossless_rail_gives_the_traffic_class_to_nccl_ucx_and_perftest() {
    let env = lossless_env(&facts_with(&lossless(), 106)).expect("settings");
    assert_eq!(
        env.exports(),
        "export NCCL_IB_HCA=mlx5_0:1\n\
         export NCCL_IB_GID_INDEX=3\n\
         export NCCL_IB_TC=106\n\
         export NCCL_SOCKET_IFNAME=ens1f0np0\n\
         export UCX_NET_DEVICES=mlx5_0:1\n\
         export UCX_IB_GID_INDEX=3\n\
         export UCX_IB_TRAFFIC_CLASS=106\n\
         export PERFTEST_FLAGS='-d mlx5_0 -i 1 -x 3 --tclass=106'\n"
    );
    assert_eq!(
        env.notes.len(),
        1,
        "rdma_cm agrees, so one note: {:?}",
        env.notes
    );
    assert!(
        env.notes[0].starts_with("NCCL_IB_TC=106 (DSCP 26, ECN bits 10) lands on a PFC-enabled priority: ens1f0np0 priority 3 by the APP table"),
        "{}",
        env.notes[0]
    );
    let json = serde_json::to_value(&env).expect("serialize");
    assert_eq!(json["NCCL_IB_TC"], "106");
    assert!(json.get("notes").is_none(), "notes are not variables");
    // Without DCB facts asked for, nothing about the traffic class.
    let plain = env_of(&ready()).expect("settings");
    assert_eq!(plain.get("NCCL_IB_TC"), None);
    assert!(plain.notes.is_empty());
}

#[test]
fn the_rdma_cm_default_tos_that_differs_is_a_note_with_the_fix() {
    // The kernel default, ToS 0: no configfs entry.
    let mut dcb = facts_with(&lossless(), 0);
    dcb.rails.get_mut(IF).expect("rail").tos = Ok(RoceTos { tos: 0, file: None });
    let env = lossless_env(&dcb).expect("settings");
    assert_eq!(
        env.get("NCCL_IB_TC"),
        Some("106"),
        "DSCP 26, the RoCE convention"
    );
    assert_eq!(env.notes.len(), 2, "{:?}", env.notes);
    let note = &env.notes[1];
    assert!(
        note.starts_with("mlx5_0/1: the rdma_cm default ToS is 0 (the kernel default: no /sys/kernel/config/rdma_cm/mlx5_0/ports/1/default_roce_tos), not 106")
            && note.contains("DSCP 0 does not land on a PFC priority, so they are lossy")
            && note.contains("mkdir /sys/kernel/config/rdma_cm/mlx5_0 && echo 106 > /sys/kernel/config/rdma_cm/mlx5_0/ports/1/default_roce_tos"),
        "{note}"
    );
    // A configfs value on the PFC priority but without ECN bits is kept for both.
    let env = lossless_env(&facts_with(&lossless(), 104)).expect("settings");
    assert_eq!(env.get("NCCL_IB_TC"), Some("104"));
    assert_eq!(env.notes.len(), 1, "{:?}", env.notes);
    // Another lossless DSCP in configfs: named, and said to be lossless.
    let four = Setup {
        pfc_en: (1 << 3) | (1 << 4),
        ..lossless()
    };
    let mut dcb = facts_with(&four, 106);
    dcb.rails.get_mut(IF).expect("rail").tos = Ok(RoceTos {
        tos: 130,
        file: Some(PathBuf::from(
            "/sys/kernel/config/rdma_cm/mlx5_0/ports/1/default_roce_tos",
        )),
    });
    let env = lossless_env(&dcb).expect("settings");
    assert_eq!(
        env.get("NCCL_IB_TC"),
        Some("130"),
        "the rdma_cm ToS, lossless on 4"
    );
}

#[test]
fn no_dscp_on_a_pfc_priority_is_refused_naming_the_rail() {
    let off = Setup {
        pfc_en: 0,
        ..lossless()
    };
    let refused = lossless_env(&facts_with(&off, 106)).expect_err("refused");
    assert_eq!(refused.unmet.len(), 1);
    assert_eq!(refused.unmet[0].id, "dcb.chain");
    assert_eq!(refused.unmet[0].status, Status::Fail);
    assert!(
        refused.unmet[0]
            .detail
            .starts_with("no DSCP maps to a PFC-enabled priority on every rail: ens1f0np0: PFC is enabled on no priority"),
        "{}",
        refused.unmet[0].detail
    );
    assert!(refused.to_string().contains("dcb.chain"), "{refused}");
}

#[test]
fn an_unread_configuration_or_pcp_trust_leaves_the_traffic_class_out_with_the_reason() {
    let env = lossless_env(&DcbFacts::default()).expect("settings");
    assert_eq!(env.get("NCCL_IB_TC"), None);
    assert_eq!(env.get("PERFTEST_FLAGS"), Some("-d mlx5_0 -i 1 -x 3"));
    assert_eq!(
        env.notes,
        ["NCCL_IB_TC, UCX_IB_TRAFFIC_CLASS and --tclass are not set (the traffic class comes from each rail's DCB configuration): ens1f0np0: its DCB configuration was not read"]
    );
    // A fixture root: the reason is the dcb.* checks' own.
    let dir = tempfile::tempdir().expect("tempdir");
    let mut dcb = DcbFacts::default();
    dcb.read_rail(
        &dpu_probe::SysRoot::new(dir.path()),
        IF,
        Some(("mlx5_0", 1)),
    );
    let env = lossless_env(&dcb).expect("settings");
    assert!(
        env.notes[0].contains("not under --sys-root"),
        "{:?}",
        env.notes
    );
    let pcp = Setup {
        dscp_prio: vec![],
        ..lossless()
    };
    let env = lossless_env(&facts_with(&pcp, 106)).expect("settings");
    assert_eq!(env.get("UCX_IB_TRAFFIC_CLASS"), None);
    assert!(
        env.notes[0].contains("ens1f0np0 trusts PCP"),
        "{:?}",
        env.notes
    );
}

#[test]
fn infiniband_takes_no_traffic_class() {
    let p = RdmaPortInfo {
        link_layer: "InfiniBand".to_owned(),
        ..port(4, "5: LinkUp", healthy_gids())
    };
    let env = lossless_fabric_env(&results(&host(16, true, p, vec![])), &DcbFacts::default())
        .expect("settings");
    assert_eq!(env.get("NCCL_IB_TC"), None);
    assert!(env.notes.is_empty(), "{:?}", env.notes);
}
