//! `fleet check`: the DPU-side checklist, judged on what each agent reports.
//!
//! Why these checks: they are the faults that make one node of a training job slow or
//! broken while it still answers pings — an uplink RDMA port not ACTIVE, a PCIe link
//! trained below its width or speed, an MTU that differs from the fabric's, no RoCE v2
//! GID — and they can be judged from the agent alone, for two hundred nodes in seconds.
//! The facts every node should share (firmware, DPU mode, agent version, MTUs, GID
//! indexes, offload settings) are returned for drift, so an odd node stands out even when
//! each fact passes on its own.

use std::collections::BTreeMap;

use dpu_proto::v1;

use super::dpu_facts::DpuFacts;
use super::health_causes;
use super::report::{NodeOutcome, NodeStatus, Problem};
use crate::agent::health::{enum_name, AgentHealth};

/// What `fleet check` holds every node to.
#[derive(Debug, Clone, Default)]
pub struct DpuExpectations {
    /// The MTU every uplink must have (`--mtu`); `None`: MTUs are compared as drift only.
    pub mtu: Option<u32>,
}

/// Check ids, as the report and docs/fleet.md name them.
pub mod ids {
    /// The agent's own health status is SERVING.
    pub const SERVING: &str = "agent.serving";
    /// Every service the agent offers is serving (or disabled on purpose).
    pub const SERVICES: &str = "agent.services";
    /// Every uplink RDMA port is ACTIVE.
    pub const RDMA_PORT: &str = "dpu.rdma-port";
    /// Every BlueField PCI function's link runs at its maximum width and speed.
    pub const PCIE_LINK: &str = "dpu.pcie-link";
    /// Every uplink has the expected MTU.
    pub const MTU: &str = "dpu.mtu";
    /// Every ACTIVE Ethernet uplink port has a RoCE v2 GID.
    pub const GID: &str = "dpu.gid";
}

/// Judges one node: its health and inventory against the expectations.
pub fn judge(health: &AgentHealth, facts: &DpuFacts, expect: &DpuExpectations) -> NodeOutcome {
    let mut problems = Vec::new();
    serving(health, &mut problems);
    rdma_ports(facts, &mut problems);
    pcie_links(facts, &mut problems);
    mtu(facts, expect, &mut problems);
    gids(facts, &mut problems);
    NodeOutcome {
        problems,
        facts: serde_json::json!({
            "healthy": health.healthy(),
            "uplinks": facts.uplinks().iter().map(|n| serde_json::json!({
                "ifname": n.ifname, "mtu": n.mtu, "carrier": n.carrier,
            })).collect::<Vec<_>>(),
        }),
        compared: compared(facts),
        skipped: None,
    }
}

/// The agent's health, one problem per thing to fix ([`health_causes::problems`]): the
/// agent itself not SERVING fails the node; a down backend (with the services it stops)
/// or a down service warns.
fn serving(health: &AgentHealth, problems: &mut Vec<Problem>) {
    for cause in health_causes::problems(health) {
        let (status, check) = if cause.cause == health_causes::AGENT_NOT_SERVING {
            (NodeStatus::Fail, ids::SERVING)
        } else {
            (NodeStatus::Warn, ids::SERVICES)
        };
        problems.push(Problem::new(status, check, cause.cause, cause.detail));
    }
}

fn rdma_ports(facts: &DpuFacts, problems: &mut Vec<Problem>) {
    for (device, port) in facts.uplink_ports() {
        if port.state == v1::RdmaPortState::Active as i32 {
            continue;
        }
        let state = v1::RdmaPortState::try_from(port.state)
            .unwrap_or(v1::RdmaPortState::Unspecified)
            .as_str_name();
        let on = if port.netdev.is_empty() {
            String::new()
        } else {
            format!(" ({})", port.netdev)
        };
        problems.push(Problem::new(
            NodeStatus::Fail,
            ids::RDMA_PORT,
            "RDMA port not ACTIVE",
            format!(
                "{} port {}{on} is {}, physical state {}",
                device.ibdev,
                port.port,
                enum_name(state, "RDMA_PORT_STATE_").to_ascii_uppercase(),
                if port.phys_state.is_empty() {
                    "unknown"
                } else {
                    &port.phys_state
                }
            ),
        ));
    }
}

fn pcie_links(facts: &DpuFacts, problems: &mut Vec<Problem>) {
    for function in facts
        .pci_functions
        .iter()
        .filter(|f| f.kind == v1::PciFunctionKind::BluefieldNic as i32)
    {
        let (Some(current), Some(max)) = (&function.current_link, &function.max_link) else {
            continue;
        };
        if current.width >= max.width && current.speed_gts >= max.speed_gts {
            continue;
        }
        let bdf = function
            .address
            .as_ref()
            .map_or("an unnamed function", |a| a.bdf.as_str());
        problems.push(Problem::new(
            NodeStatus::Fail,
            ids::PCIE_LINK,
            "PCIe link below its maximum",
            format!(
                "{bdf}: x{} at {} GT/s of x{} at {} GT/s",
                current.width, current.speed_gts, max.width, max.speed_gts
            ),
        ));
    }
}

fn mtu(facts: &DpuFacts, expect: &DpuExpectations, problems: &mut Vec<Problem>) {
    let Some(expected) = expect.mtu else {
        return;
    };
    for netdev in facts.uplinks().into_iter().filter(|n| n.mtu != expected) {
        problems.push(Problem::new(
            NodeStatus::Fail,
            ids::MTU,
            "MTU differs from --mtu",
            format!(
                "{} has MTU {}, expected {expected}",
                netdev.ifname, netdev.mtu
            ),
        ));
    }
}

fn gids(facts: &DpuFacts, problems: &mut Vec<Problem>) {
    for (device, port) in facts.uplink_ports() {
        let ethernet = port.link_layer == v1::LinkLayer::Ethernet as i32;
        let active = port.state == v1::RdmaPortState::Active as i32;
        if !ethernet || !active || roce_v2_gid(port).is_some() {
            continue;
        }
        problems.push(Problem::new(
            NodeStatus::Fail,
            ids::GID,
            "no RoCE v2 GID",
            format!(
                "{} port {} has {} GID(s), none RoCE v2 with an IP address",
                device.ibdev,
                port.port,
                port.gids.len()
            ),
        ));
    }
}

/// The GID index NCCL and perftest would use: the lowest RoCE v2 entry with an address.
fn roce_v2_gid(port: &v1::RdmaPort) -> Option<u32> {
    port.gids
        .iter()
        .filter(|g| g.r#type == v1::GidType::RoceV2 as i32 && !g.ip_address.is_empty())
        .map(|g| g.index)
        .min()
}

/// The facts every node should share, for drift.
pub fn compared(facts: &DpuFacts) -> BTreeMap<String, String> {
    let s = &facts.system;
    let mut out = BTreeMap::new();
    let mut put = |key: String, value: String| {
        if !value.is_empty() {
            out.insert(key, value);
        }
    };
    put("firmware".into(), s.firmware_version.clone());
    put("model".into(), s.model.clone());
    let mode = v1::DpuMode::try_from(s.dpu_mode).unwrap_or(v1::DpuMode::Unspecified);
    if mode != v1::DpuMode::Unspecified {
        put(
            "dpu mode".into(),
            enum_name(mode.as_str_name(), "DPU_MODE_"),
        );
    }
    put("agent version".into(), s.agent_version.clone());
    put(
        "kernel".into(),
        s.os.as_ref()
            .map(|o| o.kernel_release.clone())
            .unwrap_or_default(),
    );
    for netdev in facts.uplinks() {
        put(format!("mtu {}", netdev.ifname), netdev.mtu.to_string());
    }
    for (device, port) in facts.uplink_ports() {
        let name = format!("{}/{}", device.ibdev, port.port);
        if let Some(index) = roce_v2_gid(port) {
            put(format!("gid index {name}"), index.to_string());
        }
        if port.roce_path_mtu != 0 {
            put(
                format!("roce path mtu {name}"),
                port.roce_path_mtu.to_string(),
            );
        }
    }
    if let Some(offload) = &facts.offload {
        put("hw-offload".into(), offload.hw_offload.to_string());
        let policy = v1::TcPolicy::try_from(offload.tc_policy).unwrap_or(v1::TcPolicy::Unspecified);
        put(
            "tc-policy".into(),
            enum_name(policy.as_str_name(), "TC_POLICY_"),
        );
    }
    out
}

#[cfg(test)]
mod tests;
