//! The DPU-side `dcb.*` and `fw.*` results from an agent's `GetFabricConfig` answer: a
//! lossless uplink passes and one with PFC on the wrong priority fails by name, an uplink
//! the agent could not read skips with its reason, firmware in NIC mode after the next
//! reset is named, and an agent that cannot answer skips everything on the DPU side.

use dpu_probe::dcb::{DcbConfig, RoceTos};
use dpu_probe::fabric_wire::{dcb_to_wire, fw_to_wire, roce_tos_to_wire};
use dpu_probe::fw_config::{parse_fw_query, FwDevice, FwFacts, FwTool};
use dpu_probe::pci::PciFunctionKind;
use dpu_proto::v1;

use super::super::dpu_side::judge;
use super::super::facts::AgentFacts;
use super::super::rules::{CheckVerdict, Status};
use crate::facts::dcb_fixture::{decoded, lossless, Setup};

fn uplink(ifname: &str, config: Result<DcbConfig, &str>, tos: u8) -> v1::UplinkDcb {
    v1::UplinkDcb {
        ifname: ifname.to_owned(),
        dcb: Some(match config {
            Ok(c) => v1::uplink_dcb::Dcb::Config(dcb_to_wire(&c)),
            Err(e) => v1::uplink_dcb::Dcb::DcbError(e.to_owned()),
        }),
        tos: Some(v1::uplink_dcb::Tos::RoceTos(roce_tos_to_wire(&RoceTos {
            tos,
            file: None,
        }))),
    }
}

fn reached(fabric: Result<v1::FabricConfig, String>) -> AgentFacts {
    AgentFacts::Reached {
        serving: true,
        system: Box::new(Err("not asked".to_owned())),
        netdevs: Ok(Vec::new()),
        fabric: Box::new(fabric),
    }
}

fn find<'a>(
    results: &'a [(&'static str, CheckVerdict)],
    id: &str,
    subject: &str,
) -> &'a CheckVerdict {
    results
        .iter()
        .find(|(i, v)| *i == id && v.subject.as_deref() == Some(subject))
        .map(|(_, v)| v)
        .unwrap_or_else(|| panic!("no {id} for {subject}: {results:#?}"))
}

const DPU_MODE: &str = "Device type:        BlueField3\n\
Configurations:                              Default         Current         Next Boot\n\
         INTERNAL_CPU_MODEL                  EMBEDDED_CPU(1) EMBEDDED_CPU(1) EMBEDDED_CPU(1)\n\
         INTERNAL_CPU_OFFLOAD_ENGINE         ENABLED(0)      ENABLED(0)      ENABLED(0)\n";

const NIC_MODE_NEXT_BOOT: &str = "Device type:        BlueField3\n\
Configurations:                              Default         Current         Next Boot\n\
         INTERNAL_CPU_MODEL                  EMBEDDED_CPU(1) EMBEDDED_CPU(1) EMBEDDED_CPU(1)\n\
*        INTERNAL_CPU_OFFLOAD_ENGINE         ENABLED(0)      ENABLED(0)      DISABLED(1)\n";

fn firmware(table: &str) -> v1::FirmwareSettings {
    fw_to_wire(&FwFacts::Queried {
        tool: FwTool {
            name: "mstconfig",
            path: "/usr/bin/mstconfig".into(),
        },
        devices: vec![FwDevice {
            address: "0000:03:00.0".to_owned(),
            kind: PciFunctionKind::BlueFieldNic,
            model: Some("BlueField-3"),
            query: Ok(parse_fw_query(table).expect("table")),
        }],
    })
}

#[test]
fn a_lossless_uplink_passes_and_pfc_on_the_wrong_priority_fails_by_name() {
    let wrong = Setup {
        pfc_en: 1 << 4,
        ..lossless()
    };
    let mut p1 = decoded(&wrong);
    p1.ifname = "p1".to_owned();
    let mut p0 = decoded(&lossless());
    p0.ifname = "p0".to_owned();
    let config = v1::FabricConfig {
        uplinks: vec![uplink("p0", Ok(p0), 106), uplink("p1", Ok(p1), 106)],
        firmware: Some(firmware(DPU_MODE)),
    };
    let results = judge(&reached(Ok(config)), None);
    for id in ["dcb.pfc", "dcb.trust", "dcb.chain", "dcb.ets"] {
        let v = find(&results, id, "dpu:p0");
        assert_eq!(v.status, Status::Pass, "{id}: {}", v.detail);
    }
    let chain = find(&results, "dcb.chain", "dpu:p1");
    assert_eq!(chain.status, Status::Fail);
    assert_eq!(
        chain.detail,
        "RoCE traffic (ToS 106 → DSCP 26) maps to priority 3; PFC is enabled on priority 4"
    );
    assert_eq!(find(&results, "dcb.pfc", "dpu:p1").status, Status::Fail);
    assert_eq!(
        chain.facts.get("interface").and_then(|v| v.as_str()),
        Some("p1")
    );
    // Grouped by check: both uplinks' dcb.pfc before any dcb.trust.
    let order: Vec<(&str, Option<&str>)> = results
        .iter()
        .take(4)
        .map(|(id, v)| (*id, v.subject.as_deref()))
        .collect();
    assert_eq!(
        order,
        [
            ("dcb.pfc", Some("dpu:p0")),
            ("dcb.pfc", Some("dpu:p1")),
            ("dcb.trust", Some("dpu:p0")),
            ("dcb.trust", Some("dpu:p1")),
        ]
    );
    // The healthy firmware is not blamed.
    for id in ["fw.tool", "fw.mode", "fw.pending"] {
        let v = find(&results, id, "dpu:0000:03:00.0");
        assert_eq!(v.status, Status::Pass, "{id}: {}", v.detail);
    }
}

#[test]
fn an_uplink_the_agent_could_not_read_skips_with_its_reason() {
    let config = v1::FabricConfig {
        uplinks: vec![uplink(
            "p0",
            Err("p0 does not support DCB (the kernel answered: Operation not supported)"),
            0,
        )],
        firmware: Some(v1::FirmwareSettings {
            unavailable: v1::FirmwareUnavailable::NotRoot as i32,
            unavailable_detail: "reading firmware settings (mlxconfig/mstconfig) needs root: the agent runs as uid 1000".to_owned(),
            ..Default::default()
        }),
    };
    let results = judge(&reached(Ok(config)), None);
    for id in ["dcb.pfc", "dcb.trust", "dcb.chain", "dcb.ets"] {
        let v = find(&results, id, "dpu:p0");
        assert_eq!(v.status, Status::Skip);
        assert_eq!(
            v.detail,
            "on the DPU: p0 does not support DCB (the kernel answered: Operation not supported)"
        );
    }
    // fw.profile skips first for want of --profile; the others carry the agent's reason.
    assert_eq!(find(&results, "fw.profile", "dpu").status, Status::Skip);
    for id in ["fw.tool", "fw.mode", "fw.pending"] {
        let v = find(&results, id, "dpu");
        assert_eq!(v.status, Status::Skip);
        assert!(
            v.detail.starts_with("on the DPU: ") && v.detail.contains("uid 1000"),
            "{}",
            v.detail
        );
    }
}

#[test]
fn nic_mode_after_the_next_reset_is_named_on_the_dpu_side() {
    let config = v1::FabricConfig {
        uplinks: Vec::new(),
        firmware: Some(firmware(NIC_MODE_NEXT_BOOT)),
    };
    let results = judge(&reached(Ok(config)), None);
    let mode = find(&results, "fw.mode", "dpu:0000:03:00.0");
    assert_eq!(mode.status, Status::Warn, "{}", mode.detail);
    assert!(
        mode.detail.contains("takes effect after a firmware reset"),
        "{}",
        mode.detail
    );
    let pending = find(&results, "fw.pending", "dpu:0000:03:00.0");
    assert_eq!(pending.status, Status::Warn);
    assert!(
        pending
            .detail
            .contains("INTERNAL_CPU_OFFLOAD_ENGINE ENABLED(0) -> DISABLED(1)"),
        "{}",
        pending.detail
    );
    // No uplinks: each dcb check skips once, saying why.
    let pfc = find(&results, "dcb.pfc", "dpu");
    assert_eq!(pfc.status, Status::Skip);
    assert!(
        pfc.detail.contains("no uplink representor"),
        "{}",
        pfc.detail
    );
}

#[test]
fn an_agent_without_the_rpc_skips_the_dpu_side_and_no_agent_adds_nothing() {
    let results = judge(
        &reached(Err(
            "Unimplemented: unknown method GetFabricConfig".to_owned()
        )),
        None,
    );
    assert_eq!(results.len(), 8);
    for (id, v) in &results {
        assert_eq!(
            (v.status, v.subject.as_deref()),
            (Status::Skip, Some("dpu")),
            "{id}"
        );
        assert!(
            v.detail
                .contains("Inventory.GetFabricConfig: Unimplemented"),
            "{}",
            v.detail
        );
    }
    assert!(judge(&AgentFacts::NotAsked, None).is_empty());
    assert!(judge(&AgentFacts::Unreachable("refused".to_owned()), None).is_empty());
}
