//! The DPU side of the `dcb.*` and `fw.*` checks: in DPU mode QoS lives on the Arm's
//! uplinks (p0, p1), not on the host PF, and the BlueField's firmware settings may not be
//! readable from a restricted host. The agent reads both with the host's own probe code
//! (`Inventory.GetFabricConfig`); this module turns its answer back into [`DcbFacts`] and
//! [`FwFacts`] and judges them with the same rules, each result's `subject` naming the DPU
//! side: `dpu:p0` for an uplink, `dpu:0000:03:00.0` for a PCI function, `dpu` when nothing
//! narrower is known (the agent could not answer or read the part).
//!
//! The ToS judged on an uplink is its own RDMA port's rdma_cm default on the Arm (traffic
//! the Arm originates: SNAP NVMe-oF/RDMA); the host's RoCE traffic is judged on the host's
//! rails, so the two agree only if both use the same ToS.
//!
//! Results come only when the agent was reached: with `--no-agent`, or no agent
//! answering, `agent.reachable` already says why and nothing is added here.

use dpu_probe::fabric_wire::{dcb_from_wire, fw_from_wire, roce_tos_from_wire};
use dpu_proto::v1;

use super::dcb;
use super::facts::AgentFacts;
use super::fw;
use super::fw_profile::FwProfile;
use super::verdict::{skip, CheckVerdict, Facts};
use crate::facts::dcb::{DcbFacts, DcbRail};
use dpu_probe::fw_config::FwFacts;

/// The subject prefix of every DPU-side result.
pub(super) const DPU_SUBJECT: &str = "dpu";

/// The checks judged per uplink, in catalog order.
const DCB_CHECKS: [&str; 4] = ["dcb.pfc", "dcb.trust", "dcb.chain", "dcb.ets"];

/// One `dcb.*` rule, as `dcb.rs` defines them.
type DcbCheck = fn(&DcbFacts, Option<&str>, &mut Facts) -> CheckVerdict;

/// The checks judged per firmware device, in catalog order.
const FW_CHECKS: [&str; 4] = ["fw.tool", "fw.mode", "fw.profile", "fw.pending"];

/// Every DPU-side result; empty unless the agent was reached.
pub(super) fn judge(
    agent: &AgentFacts,
    profile: Option<&FwProfile>,
) -> Vec<(&'static str, CheckVerdict)> {
    let AgentFacts::Reached { fabric, .. } = agent else {
        return Vec::new();
    };
    let config = match fabric.as_ref() {
        Ok(config) => config,
        Err(e) => {
            let why =
                format!("the agent did not report the DPU side: Inventory.GetFabricConfig: {e}");
            return DCB_CHECKS
                .iter()
                .chain(&FW_CHECKS)
                .map(|id| (*id, subject(skip(why.clone()), DPU_SUBJECT.to_owned())))
                .collect();
        }
    };
    let mut results = judge_uplinks(config);
    results.extend(judge_firmware(config.firmware.as_ref(), profile));
    results
}

fn subject(mut verdict: CheckVerdict, subject: String) -> CheckVerdict {
    verdict.subject = Some(subject);
    verdict
}

fn rule(
    id: &'static str,
    subject_name: String,
    check: impl Fn(&mut Facts) -> CheckVerdict,
) -> (&'static str, CheckVerdict) {
    let mut facts = Facts::new();
    let mut verdict = check(&mut facts);
    verdict.facts = facts;
    (id, subject(verdict, subject_name))
}

/// The agent's uplinks as the rails the `dcb.*` checks take.
pub(super) fn uplink_facts(config: &v1::FabricConfig) -> DcbFacts {
    let mut facts = DcbFacts::default();
    for uplink in &config.uplinks {
        let dcb = match &uplink.dcb {
            Some(v1::uplink_dcb::Dcb::Config(c)) => dcb_from_wire(&uplink.ifname, c)
                .map_err(|e| format!("the agent's DCB answer for {}: {e}", uplink.ifname)),
            Some(v1::uplink_dcb::Dcb::DcbError(e)) => Err(format!("on the DPU: {e}")),
            None => Err(format!("the agent sent no DCB part for {}", uplink.ifname)),
        };
        let tos = match &uplink.tos {
            Some(v1::uplink_dcb::Tos::RoceTos(t)) => roce_tos_from_wire(t)
                .map_err(|e| format!("the agent's ToS for {}: {e}", uplink.ifname)),
            Some(v1::uplink_dcb::Tos::RoceTosError(e)) => Err(format!("on the DPU: {e}")),
            None => Err(format!("the agent sent no ToS for {}", uplink.ifname)),
        };
        facts
            .rails
            .insert(uplink.ifname.clone(), DcbRail { config: dcb, tos });
    }
    facts
}

fn judge_uplinks(config: &v1::FabricConfig) -> Vec<(&'static str, CheckVerdict)> {
    if config.uplinks.is_empty() {
        let why = "the agent shows no uplink representor (p0, p1): the DPU is not in DPU mode, or its eswitch is not in switchdev mode";
        return DCB_CHECKS
            .iter()
            .map(|id| (*id, subject(skip(why), DPU_SUBJECT.to_owned())))
            .collect();
    }
    let facts = uplink_facts(config);
    let checks: [(&'static str, DcbCheck); 4] = [
        ("dcb.pfc", dcb::pfc),
        ("dcb.trust", dcb::trust),
        ("dcb.chain", dcb::roce_chain),
        ("dcb.ets", dcb::ets),
    ];
    // Grouped by check, uplinks in order within each, like the host's rails.
    checks
        .iter()
        .flat_map(|(id, check)| {
            let facts = &facts;
            config.uplinks.iter().map(move |u| {
                rule(id, format!("{DPU_SUBJECT}:{}", u.ifname), |f| {
                    check(facts, Some(&u.ifname), f)
                })
            })
        })
        .collect()
}

fn judge_firmware(
    wire: Option<&v1::FirmwareSettings>,
    profile: Option<&FwProfile>,
) -> Vec<(&'static str, CheckVerdict)> {
    let facts = match wire.map(|w| fw_from_wire(w, "on the DPU: ")) {
        Some(Ok(facts)) => facts,
        Some(Err(e)) => FwFacts::NotRun(format!("the agent's firmware answer: {e}")),
        None => FwFacts::NotRun("the agent sent no firmware part".to_owned()),
    };
    let judge_one = |facts: &FwFacts, name: String| -> Vec<(&'static str, CheckVerdict)> {
        FW_CHECKS
            .iter()
            .map(|id| {
                rule(id, name.clone(), |f| match *id {
                    "fw.tool" => fw::tool(facts, f),
                    "fw.mode" => fw::mode(facts, profile, f),
                    "fw.profile" => fw::profile(facts, profile, f),
                    _ => fw::pending(facts, f),
                })
            })
            .collect()
    };
    match &facts {
        FwFacts::Queried { tool, devices } if !devices.is_empty() => {
            let per_device: Vec<Vec<_>> = devices
                .iter()
                .map(|d| {
                    let one = FwFacts::Queried {
                        tool: tool.clone(),
                        devices: vec![d.clone()],
                    };
                    judge_one(&one, format!("{DPU_SUBJECT}:{}", d.address))
                })
                .collect();
            // Grouped by check, devices in order within each.
            (0..FW_CHECKS.len())
                .flat_map(|i| per_device.iter().map(move |d| d[i].clone()))
                .collect()
        }
        _ => judge_one(&facts, DPU_SUBJECT.to_owned()),
    }
}
