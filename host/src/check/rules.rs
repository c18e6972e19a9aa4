//! The judgements: each check is a function from the gathered facts to a verdict with a
//! one-line detail that names what was seen. Nothing here reads the machine.

use std::net::IpAddr;

use dpu_probe::pci::PciFunctionKind;
use dpu_probe::rdma::{perftest_default_gid_index, roce_path_mtu, GidEntry};
use dpu_proto::v1;
use serde::Serialize;

use super::facts::{AgentFacts, DataInterface, HostFacts};

/// A check's verdict.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    /// As it should be.
    Pass,
    /// Works, but something is likely to bite (a tool would pick the wrong GID index).
    Warn,
    /// Wrong: the lab will not work like this.
    Fail,
    /// Could not be checked here; says why. Never counted as a pass.
    Skip,
}

/// A verdict and what it is based on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verdict {
    /// Pass, warn, fail or skip.
    pub status: Status,
    /// What was found.
    pub detail: String,
}

fn pass(detail: impl Into<String>) -> Verdict {
    Verdict {
        status: Status::Pass,
        detail: detail.into(),
    }
}
fn warn(detail: impl Into<String>) -> Verdict {
    Verdict {
        status: Status::Warn,
        detail: detail.into(),
    }
}
fn fail(detail: impl Into<String>) -> Verdict {
    Verdict {
        status: Status::Fail,
        detail: detail.into(),
    }
}
fn skip(detail: impl Into<String>) -> Verdict {
    Verdict {
        status: Status::Skip,
        detail: detail.into(),
    }
}

/// User choices that change what "right" means.
#[derive(Debug, Clone, Default)]
pub struct Expectations {
    /// The data interface to check instead of the first BlueField one.
    pub interface: Option<String>,
    /// The MTU it must have.
    pub mtu: Option<u32>,
}

/// Runs every rule, in catalog order.
pub fn judge(
    host: &HostFacts,
    agent: &AgentFacts,
    expect: &Expectations,
) -> Vec<(&'static str, Verdict)> {
    let data = host.data_interface(expect.interface.as_deref());
    vec![
        ("pcie.bluefield", pcie_bluefield(host)),
        ("pcie.link", pcie_link(host)),
        ("netdev.up", netdev_up(host, data.as_ref())),
        ("netdev.mtu", netdev_mtu(host, data.as_ref(), expect.mtu)),
        ("rdma.bound", rdma_bound(host, data.as_ref())),
        ("rdma.port", rdma_port(host, data.as_ref())),
        ("rdma.link-layer", rdma_link_layer(host, data.as_ref())),
        ("rdma.gid", rdma_gid(host, data.as_ref())),
        ("rdma.mtu", rdma_mtu(host, data.as_ref())),
        ("agent.reachable", agent_reachable(agent)),
        ("agent.consistent", agent_consistent(host, agent)),
        ("agent.mtu", agent_mtu(host, agent, data.as_ref())),
    ]
}

const NO_INTERFACE: &str = "no BlueField data interface found on this host; pass --interface IF";

fn pcie_bluefield(host: &HostFacts) -> Verdict {
    let functions = match &host.pci {
        Ok(functions) => functions,
        Err(e) => return skip(format!("cannot list PCI functions: {e}")),
    };
    let recovery: Vec<_> = functions
        .iter()
        .filter(|f| f.kind == PciFunctionKind::FlashRecovery)
        .map(|f| f.address.as_str())
        .collect();
    if !recovery.is_empty() {
        return fail(format!(
            "{} in flash recovery (livefish): the card booted without usable firmware",
            recovery.join(", ")
        ));
    }
    let nics = host.bluefield_nics();
    if nics.is_empty() {
        return fail("no BlueField NIC function (15b3:a2d2/a2d6/a2d9/a2dc/a2df) on PCIe");
    }
    let unbound: Vec<_> = nics
        .iter()
        .filter(|f| f.driver.as_deref() != Some("mlx5_core"))
        .map(|f| {
            format!(
                "{} (driver {})",
                f.address,
                f.driver.as_deref().unwrap_or("none")
            )
        })
        .collect();
    if !unbound.is_empty() {
        return fail(format!("not driven by mlx5_core: {}", unbound.join(", ")));
    }
    let names: Vec<_> = nics
        .iter()
        .map(|f| format!("{} {}", f.address, f.model().unwrap_or("BlueField")))
        .collect();
    pass(names.join(", "))
}

fn pcie_link(host: &HostFacts) -> Verdict {
    let nics = host.bluefield_nics();
    if nics.is_empty() {
        return skip("no BlueField NIC function to check");
    }
    let mut findings = Vec::new();
    let mut seen = Vec::new();
    for f in &nics {
        match f.link_degraded() {
            Some(true) => findings.push(format!(
                "{}: {}",
                f.address,
                f.link_finding().unwrap_or_default()
            )),
            Some(false) => seen.push(format!(
                "{} x{} {} GT/s",
                f.address,
                f.current_link.width.unwrap_or_default(),
                f.current_link.speed_gts.unwrap_or_default()
            )),
            None => {}
        }
    }
    if !findings.is_empty() {
        fail(findings.join("; "))
    } else if seen.is_empty() {
        skip("no PCIe link speed/width files for the BlueField functions (virtual machine?)")
    } else {
        pass(format!("at maximum: {}", seen.join(", ")))
    }
}

fn netdev_up(host: &HostFacts, data: Option<&DataInterface>) -> Verdict {
    let Some(data) = data else {
        return skip(NO_INTERFACE);
    };
    let Some(n) = host.netdev(&data.ifname) else {
        return fail(format!("interface {} does not exist", data.ifname));
    };
    match (n.operstate.as_str(), n.carrier) {
        ("up", Some(true)) => pass(format!(
            "{} up with carrier ({})",
            n.ifname, data.chosen_because
        )),
        (state, Some(true)) => fail(format!("{} has carrier but operstate {state}", n.ifname)),
        (state, _) => fail(format!("{} operstate {state}, no carrier", n.ifname)),
    }
}

fn netdev_mtu(host: &HostFacts, data: Option<&DataInterface>, expected: Option<u32>) -> Verdict {
    let Some(data) = data else {
        return skip(NO_INTERFACE);
    };
    let Some(n) = host.netdev(&data.ifname) else {
        return skip(format!("interface {} does not exist", data.ifname));
    };
    let roce = roce_path_mtu(n.mtu).map_or("too small for RoCE".to_owned(), |m| {
        format!("RoCE path MTU {m}")
    });
    match expected {
        Some(want) if want != n.mtu => fail(format!(
            "{} MTU {} but {want} expected ({roce})",
            n.ifname, n.mtu
        )),
        Some(_) => pass(format!("{} MTU {} ({roce})", n.ifname, n.mtu)),
        None => pass(format!(
            "{} MTU {} ({roce}); pass --mtu N to require a value",
            n.ifname, n.mtu
        )),
    }
}

fn rdma_bound(host: &HostFacts, data: Option<&DataInterface>) -> Verdict {
    let Some(data) = data else {
        return skip(NO_INTERFACE);
    };
    if let Err(e) = &host.rdma {
        return skip(format!("cannot list RDMA devices: {e}"));
    }
    match host.rdma_port_for(&data.ifname) {
        Some((device, port)) => pass(format!(
            "{} port {} on {}",
            device.ibdev, port.port, data.ifname
        )),
        None => fail(format!("no RDMA device is bound to {}", data.ifname)),
    }
}

fn rdma_port(host: &HostFacts, data: Option<&DataInterface>) -> Verdict {
    let Some(data) = data else {
        return skip(NO_INTERFACE);
    };
    let Some((device, port)) = host.rdma_port_for(&data.ifname) else {
        return skip(format!("no RDMA port bound to {}", data.ifname));
    };
    let active = port.state == 4;
    let link_up = port.phys_state.contains("LinkUp");
    let carrier = host.netdev(&data.ifname).and_then(|n| n.carrier) == Some(true);
    let what = format!("{}/{}", device.ibdev, port.port);
    match (active, link_up) {
        (true, true) => pass(format!("{what} ACTIVE, {}", port.phys_state)),
        (false, _) if carrier => fail(format!(
            "physical link up but RDMA port not ACTIVE: {what} state {} ({}), phys_state {}",
            port.state, port.state_text, port.phys_state
        )),
        _ => fail(format!(
            "{what} state {} ({}), phys_state {}: the link is down",
            port.state, port.state_text, port.phys_state
        )),
    }
}

fn rdma_link_layer(host: &HostFacts, data: Option<&DataInterface>) -> Verdict {
    let Some(data) = data else {
        return skip(NO_INTERFACE);
    };
    let Some((device, port)) = host.rdma_port_for(&data.ifname) else {
        return skip(format!("no RDMA port bound to {}", data.ifname));
    };
    match port.link_layer.as_str() {
        "Ethernet" => pass(format!("{}/{} Ethernet: RoCE", device.ibdev, port.port)),
        "InfiniBand" => pass(format!("{}/{} InfiniBand", device.ibdev, port.port)),
        other => fail(format!(
            "{}/{} link layer {other:?}",
            device.ibdev, port.port
        )),
    }
}

fn is_roce_v2_ipv4(g: &GidEntry, ifname: &str) -> bool {
    g.gid_type.as_deref() == Some("RoCE v2")
        && g.netdev.as_deref() == Some(ifname)
        && matches!(g.ip, Some(IpAddr::V4(_)))
}

fn rdma_gid(host: &HostFacts, data: Option<&DataInterface>) -> Verdict {
    let Some(data) = data else {
        return skip(NO_INTERFACE);
    };
    let Some((device, port)) = host.rdma_port_for(&data.ifname) else {
        return skip(format!("no RDMA port bound to {}", data.ifname));
    };
    if port.link_layer == "InfiniBand" {
        return skip("InfiniBand port: GID index selection is a RoCE concern");
    }
    let v2: Vec<&GidEntry> = port
        .gids
        .iter()
        .filter(|g| is_roce_v2_ipv4(g, &data.ifname))
        .collect();
    let Some(first) = v2.first() else {
        return fail(format!(
            "no RoCE v2 IPv4 GID for {} on {}/{}: the interface has no IPv4 address, or RoCE v2 is off",
            data.ifname, device.ibdev, port.port
        ));
    };
    let ip = first.ip.map(|ip| ip.to_string()).unwrap_or_default();
    if v2.len() > 1 {
        let all: Vec<_> = v2
            .iter()
            .map(|g| {
                format!(
                    "{} ({})",
                    g.index,
                    g.ip.map(|ip| ip.to_string()).unwrap_or_default()
                )
            })
            .collect();
        return warn(format!(
            "several RoCE v2 IPv4 GIDs: {}; pick one explicitly (-x N, NCCL_IB_GID_INDEX=N)",
            all.join(", ")
        ));
    }
    // What tools pick when not told: perftest master scores the table, older perftest
    // and many tools take index 0. Either differing from the right index is a trap.
    let perftest = perftest_default_gid_index(&port.gids);
    let mut traps = Vec::new();
    if perftest != Some(first.index) {
        traps.push(format!(
            "perftest without -x picks {}",
            perftest.map_or("nothing".to_owned(), |i| format!("index {i}"))
        ));
    }
    if first.index != 0 {
        traps.push("tools defaulting to index 0 use a RoCE v1/link-local GID".to_owned());
    }
    if traps.is_empty() {
        pass(format!("RoCE v2 IPv4 GID index {} = {ip}", first.index))
    } else {
        warn(format!(
            "RoCE v2 IPv4 GID index {} = {ip}; {}: pass -x {} (perftest) and NCCL_IB_GID_INDEX={}",
            first.index,
            traps.join("; "),
            first.index,
            first.index
        ))
    }
}

fn rdma_mtu(host: &HostFacts, data: Option<&DataInterface>) -> Verdict {
    let Some(data) = data else {
        return skip(NO_INTERFACE);
    };
    let Some(n) = host.netdev(&data.ifname) else {
        return skip(format!("interface {} does not exist", data.ifname));
    };
    let Some((device, port)) = host.rdma_port_for(&data.ifname) else {
        return skip(format!("no RDMA port bound to {}", data.ifname));
    };
    // The netdevs the port's RoCE v2 GIDs belong to: the data interface itself, or VLAN
    // and bond interfaces on top of it.
    let mut others = Vec::new();
    for g in port
        .gids
        .iter()
        .filter(|g| g.gid_type.as_deref() == Some("RoCE v2"))
    {
        let Some(ndev) = g.netdev.as_deref() else {
            continue;
        };
        if ndev == n.ifname {
            continue;
        }
        if let Some(other) = host.netdev(ndev) {
            if other.mtu != n.mtu && !others.iter().any(|(name, _)| name == &other.ifname) {
                others.push((other.ifname.clone(), other.mtu));
            }
        }
    }
    if others.is_empty() {
        return pass(format!(
            "{}/{} uses {} at MTU {}",
            device.ibdev, port.port, n.ifname, n.mtu
        ));
    }
    let list: Vec<_> = others
        .iter()
        .map(|(name, mtu)| format!("{name} MTU {mtu}"))
        .collect();
    fail(format!(
        "MTU mismatch between netdev and RDMA port: {} MTU {} but {}/{} also carries RoCE v2 GIDs of {}",
        n.ifname,
        n.mtu,
        device.ibdev,
        port.port,
        list.join(", ")
    ))
}

fn agent_reachable(agent: &AgentFacts) -> Verdict {
    match agent {
        AgentFacts::NotAsked => skip("--no-agent"),
        AgentFacts::Unreachable(e) => fail(e.clone()),
        AgentFacts::Reached { serving: true, .. } => pass("SERVING"),
        AgentFacts::Reached { serving: false, .. } => {
            fail("the agent answers but reports NOT_SERVING (see dpuctl dpu health)")
        }
    }
}

fn agent_consistent(host: &HostFacts, agent: &AgentFacts) -> Verdict {
    let system = match agent {
        AgentFacts::NotAsked => return skip("--no-agent"),
        AgentFacts::Unreachable(_) => return skip("agent not reachable"),
        AgentFacts::Reached { system, .. } => match system.as_ref() {
            Ok(s) => s,
            Err(e) => return fail(format!("Inventory.GetSystem: {e}")),
        },
    };
    let nics = host.bluefield_nics();
    if nics.is_empty() {
        return skip("no BlueField on this host to compare with");
    }
    let mut problems = Vec::new();
    let host_models: Vec<&str> = nics.iter().filter_map(|f| f.model()).collect();
    if !system.model.is_empty() && !host_models.iter().any(|m| *m == system.model) {
        problems.push(format!(
            "the agent runs on a {} but this host has {}",
            system.model,
            host_models.join(", ")
        ));
    }
    let host_fw: Vec<&str> = nics
        .iter()
        .filter_map(|f| f.firmware_version.as_deref())
        .collect();
    if !system.firmware_version.is_empty()
        && !host_fw.is_empty()
        && !host_fw.contains(&system.firmware_version.as_str())
    {
        problems.push(format!(
            "firmware {} on the agent's card, {} on this host's: a different card",
            system.firmware_version,
            host_fw.join(", ")
        ));
    }
    let mode = v1::DpuMode::try_from(system.dpu_mode).unwrap_or(v1::DpuMode::Unspecified);
    if mode != v1::DpuMode::Dpu {
        problems.push(format!(
            "the agent reports {} (no uplink and host-PF representors): offload needs DPU mode",
            mode.as_str_name()
        ));
    }
    if problems.is_empty() {
        pass(format!(
            "{} firmware {} in DPU mode",
            system.model, system.firmware_version
        ))
    } else {
        fail(problems.join("; "))
    }
}

fn agent_mtu(host: &HostFacts, agent: &AgentFacts, data: Option<&DataInterface>) -> Verdict {
    let netdevs = match agent {
        AgentFacts::NotAsked => return skip("--no-agent"),
        AgentFacts::Unreachable(_) => return skip("agent not reachable"),
        AgentFacts::Reached {
            netdevs: Err(e), ..
        } => return fail(format!("Inventory.ListNetdevs: {e}")),
        AgentFacts::Reached { netdevs: Ok(n), .. } => n,
    };
    let Some(host_netdev) = data.and_then(|d| host.netdev(&d.ifname)) else {
        return skip(NO_INTERFACE);
    };
    let path: Vec<&v1::Netdev> = netdevs
        .iter()
        .filter(|n| {
            matches!(
                v1::NetdevRole::try_from(n.role),
                Ok(v1::NetdevRole::UplinkRepresentor | v1::NetdevRole::PfRepresentor)
            )
        })
        .collect();
    if path.is_empty() {
        return skip("the agent shows no uplink or host-PF representor");
    }
    let small: Vec<_> = path
        .iter()
        .filter(|n| n.mtu < host_netdev.mtu)
        .map(|n| format!("{} MTU {}", n.ifname, n.mtu))
        .collect();
    let all: Vec<_> = path
        .iter()
        .map(|n| format!("{} {}", n.ifname, n.mtu))
        .collect();
    if small.is_empty() {
        pass(format!(
            "host {} {}; DPU {}",
            host_netdev.ifname,
            host_netdev.mtu,
            all.join(", ")
        ))
    } else {
        fail(format!(
            "MTU mismatch: host {} MTU {} but on the DPU {}",
            host_netdev.ifname,
            host_netdev.mtu,
            small.join(", ")
        ))
    }
}
