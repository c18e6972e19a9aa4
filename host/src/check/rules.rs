//! The judgements: each check is a function from the gathered facts to a verdict with a
//! one-line detail that names what was seen, and the same facts as typed values
//! ([`Facts`]) for scripts. Nothing here reads the machine.

use std::net::IpAddr;

use dpu_probe::pci::PciFunctionKind;
use dpu_probe::rdma::{
    perftest_default_gid_index, roce_path_mtu, GidEntry, RdmaDeviceInfo, RdmaPortInfo,
};
use dpu_proto::v1;

use super::dcb;
use super::facts::{AgentFacts, DataInterface, HostFacts};
use super::fw;
use super::fw_profile::FwProfile;
use super::gdr;
use super::gpu;
use super::ib;

use super::verdict::{fail, pass, put, skip, warn};
pub use super::verdict::{CheckVerdict, FactValue, Facts, Status};

/// User choices that change what "right" means.
#[derive(Debug, Clone, Default)]
pub struct Expectations {
    /// The data interfaces (rails) to check (`--interface`, repeatable) instead of every
    /// RDMA port's netdev.
    pub interfaces: Vec<String>,
    /// The RDMA ports whose netdevs to check (`--device DEV[/PORT]`, repeatable), when no
    /// interface is named.
    pub devices: Vec<String>,
    /// The MTU it must have.
    pub mtu: Option<u32>,
    /// The rate (Gbit/s) every InfiniBand port must reach; without it a port narrower
    /// than 4X is a warning.
    pub ib_rate: Option<u32>,
    /// The expected firmware settings (`--profile FILE`); without it `fw.profile` skips.
    pub profile: Option<FwProfile>,
}

/// One rule: fills the facts it judged and returns its verdict.
type Rule<'a> = dyn Fn(&mut Facts) -> CheckVerdict + 'a;

/// Runs every rule, in catalog order; the per-port ones once per rail.
pub fn judge(
    host: &HostFacts,
    agent: &AgentFacts,
    expect: &Expectations,
) -> Vec<(&'static str, CheckVerdict)> {
    let rule = |id, check: &dyn Fn(&mut Facts) -> CheckVerdict| {
        let mut facts = Facts::new();
        let mut verdict = check(&mut facts);
        verdict.facts = facts;
        (id, verdict)
    };
    let (rails, selection_error) = match host.data_interfaces(&expect.interfaces, &expect.devices) {
        Ok(rails) => (rails, None),
        Err(e) => (Vec::new(), Some(e)),
    };
    // The per-port checks, once per rail, each naming its rail; once with no rail (each
    // then skips, or fails on a bad selection) when the host has none.
    let per_rail = |data: Option<&DataInterface>| {
        let rail_name = data.map(|d| d.ifname.as_str());
        let checks: [(&'static str, &Rule<'_>); 11] = [
            ("netdev.up", &|f| netdev_up(host, data, f)),
            ("netdev.mtu", &|f| netdev_mtu(host, data, expect.mtu, f)),
            ("rdma.bound", &|f| match &selection_error {
                Some(e) => fail(e.clone()),
                None => rdma_bound(host, data, f),
            }),
            ("rdma.port", &|f| rdma_port(host, data, f)),
            ("rdma.link-layer", &|f| rdma_link_layer(host, data, f)),
            ("rdma.gid", &|f| rdma_gid(host, data, f)),
            ("rdma.mtu", &|f| rdma_mtu(host, data, f)),
            ("dcb.pfc", &|f| dcb::pfc(&host.dcb, rail_name, f)),
            ("dcb.trust", &|f| dcb::trust(&host.dcb, rail_name, f)),
            ("dcb.chain", &|f| dcb::roce_chain(&host.dcb, rail_name, f)),
            ("dcb.ets", &|f| dcb::ets(&host.dcb, rail_name, f)),
        ];
        checks
            .into_iter()
            .map(|(id, check)| {
                let (id, mut verdict) = rule(id, check);
                verdict.subject = data.map(|d| d.ifname.clone());
                (id, verdict)
            })
            .collect::<Vec<_>>()
    };
    let mut rail_results = Vec::new();
    if rails.is_empty() {
        rail_results.extend(per_rail(None));
    }
    for data in &rails {
        rail_results.extend(per_rail(Some(data)));
    }
    // Catalog order: the rails' checks grouped by check, rails in order within each.
    rail_results.sort_by_key(|(id, _)| super::catalog::CHECKS.iter().position(|c| c.id == *id));
    let bluefield = !host.bluefield_nics().is_empty();
    let mut results = vec![
        rule("pcie.bluefield", &|f| pcie_bluefield(host, f)),
        rule("pcie.link", &|f| pcie_link(host, f)),
    ];
    results.extend(rail_results);
    // The agent's MTU chain is about the BlueField's rail.
    let on_bluefield = |r: &&DataInterface| {
        host.bluefield_nics()
            .iter()
            .any(|f| f.netdevs.contains(&r.ifname))
    };
    let data = rails.iter().find(on_bluefield).or(rails.first());
    results.extend([
        rule("agent.reachable", &|f| agent_reachable(agent, bluefield, f)),
        rule("agent.consistent", &|f| agent_consistent(host, agent, f)),
        rule("agent.mtu", &|f| agent_mtu(host, agent, data, f)),
        rule("ib.port", &|f| ib::port_state(host, f)),
        rule("ib.lid", &|f| ib::lid_assigned(host, f)),
        rule("ib.sm", &|f| ib::subnet_manager(host, f)),
        rule("ib.rate", &|f| ib::rate(host, expect.ib_rate, f)),
        rule("ib.pkey", &|f| ib::default_pkey(host, f)),
        rule("gpu.nic-affinity", &|f| gpu::nic_affinity(host, f)),
        rule("gpu.nic-sharing", &|f| gpu::nic_sharing(host, f)),
        rule("gpu.numa", &|f| gpu::numa(host, f)),
        rule("fw.tool", &|f| fw::tool(&host.firmware, f)),
        rule("fw.mode", &|f| {
            fw::mode(&host.firmware, expect.profile.as_ref(), f)
        }),
        rule("fw.profile", &|f| {
            fw::profile(&host.firmware, expect.profile.as_ref(), f)
        }),
        rule("fw.pending", &|f| fw::pending(&host.firmware, f)),
        rule("gdr.peermem", &|f| {
            gdr::peermem(&host.gdr, &host.gpu_topology, f)
        }),
        rule("gdr.acs", &|f| gdr::acs(&host.gdr, &host.gpu_topology, f)),
        rule("gdr.iommu", &|f| {
            gdr::iommu(&host.gdr, &host.gpu_topology, f)
        }),
    ]);
    // The DPU side (the agent's uplinks and firmware), when the agent answered.
    results.extend(super::dpu_side::judge(agent, expect.profile.as_ref()));
    results
}

/// The data interface's name as a fact.
fn put_interface(f: &mut Facts, data: &DataInterface) {
    f.insert("interface", (&data.ifname).into());
}

/// The RDMA device and port as facts.
fn put_port(f: &mut Facts, device: &RdmaDeviceInfo, port: &RdmaPortInfo) {
    f.insert("rdma_device", (&device.ibdev).into());
    f.insert("rdma_port", port.port.into());
}

/// A netdev's MTU and the RoCE path MTU it implies, as facts.
fn put_mtu(f: &mut Facts, mtu: u32) {
    f.insert("mtu", mtu.into());
    put(f, "path_mtu", roce_path_mtu(mtu));
}

const NO_INTERFACE: &str =
    "no RDMA data interface found on this host; pass --interface IF or --device DEV/PORT";

/// The fix for a virtual machine that has no BlueField: no card to reseat.
const VM_WITHOUT_NIC_FIX: &str = "run dpuctl check on the host that holds the BlueField, or \
     pass its PCI functions through to this virtual machine (VFIO; lspci -d 15b3: then \
     lists them here)";

fn pcie_bluefield(host: &HostFacts, facts: &mut Facts) -> CheckVerdict {
    let functions = match &host.pci {
        Ok(functions) => functions,
        Err(e) => return skip(format!("cannot list PCI functions: {e}")),
    };
    let recovery: Vec<_> = functions
        .iter()
        .filter(|f| f.kind == PciFunctionKind::FlashRecovery)
        .map(|f| f.address.as_str())
        .collect();
    let nics = host.bluefield_nics();
    let records: Vec<Facts> = nics
        .iter()
        .map(|f| {
            let mut r = Facts::new();
            r.insert("address", (&f.address).into());
            put(&mut r, "model", f.model());
            put(&mut r, "driver", f.driver.as_deref());
            put(&mut r, "firmware_version", f.firmware_version.as_deref());
            r
        })
        .collect();
    facts.insert("functions", records.into());
    if !recovery.is_empty() {
        facts.insert("flash_recovery", recovery.clone().into());
        return fail(format!(
            "{} in flash recovery (livefish): the card booted without usable firmware",
            recovery.join(", ")
        ));
    }
    if nics.is_empty() {
        // A GPU server's ConnectX rails without a BlueField: the other checks judge them.
        let rdma: Vec<&str> = host
            .rdma
            .as_deref()
            .unwrap_or_default()
            .iter()
            .filter(|d| d.pci_address.is_some())
            .map(|d| d.ibdev.as_str())
            .collect();
        if !rdma.is_empty() {
            return skip(format!(
                "no BlueField on this host; its RDMA NICs ({}) are checked as rails",
                rdma.join(", ")
            ));
        }
        if let Some(hypervisor) = &host.hypervisor {
            let mut verdict = fail(format!(
                "no BlueField NIC function (15b3:a2d2/a2d6/a2d9/a2dc/a2df) on PCIe: this is a \
                 virtual machine ({hypervisor}) and no BlueField is passed through to it"
            ));
            verdict.fix = Some(VM_WITHOUT_NIC_FIX);
            return verdict;
        }
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

fn pcie_link(host: &HostFacts, facts: &mut Facts) -> CheckVerdict {
    let nics = host.bluefield_nics();
    if nics.is_empty() {
        return skip("no BlueField NIC function to check");
    }
    let mut findings = Vec::new();
    let mut seen = Vec::new();
    let mut records = Vec::new();
    for f in &nics {
        let mut r = Facts::new();
        r.insert("address", (&f.address).into());
        put(&mut r, "width", f.current_link.width);
        put(&mut r, "speed_gts", f.current_link.speed_gts);
        put(&mut r, "max_width", f.max_link.width);
        put(&mut r, "max_speed_gts", f.max_link.speed_gts);
        put(&mut r, "degraded", f.link_degraded());
        records.push(r);
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
    facts.insert("functions", records.into());
    if !findings.is_empty() {
        fail(findings.join("; "))
    } else if seen.is_empty() {
        skip("no PCIe link speed/width files for the BlueField functions (virtual machine?)")
    } else {
        pass(format!("at maximum: {}", seen.join(", ")))
    }
}

fn netdev_up(host: &HostFacts, data: Option<&DataInterface>, f: &mut Facts) -> CheckVerdict {
    let Some(data) = data else {
        return skip(NO_INTERFACE);
    };
    put_interface(f, data);
    f.insert("chosen_because", (&data.chosen_because).into());
    let Some(n) = host.netdev(&data.ifname) else {
        return fail(format!("interface {} does not exist", data.ifname));
    };
    f.insert("operstate", (&n.operstate).into());
    put(f, "carrier", n.carrier);
    match (n.operstate.as_str(), n.carrier) {
        ("up", Some(true)) => pass(format!(
            "{} up with carrier ({})",
            n.ifname, data.chosen_because
        )),
        (state, Some(true)) => fail(format!("{} has carrier but operstate {state}", n.ifname)),
        (state, _) => fail(format!("{} operstate {state}, no carrier", n.ifname)),
    }
}

fn netdev_mtu(
    host: &HostFacts,
    data: Option<&DataInterface>,
    expected: Option<u32>,
    f: &mut Facts,
) -> CheckVerdict {
    let Some(data) = data else {
        return skip(NO_INTERFACE);
    };
    put_interface(f, data);
    put(f, "expected_mtu", expected);
    let Some(n) = host.netdev(&data.ifname) else {
        return skip(format!("interface {} does not exist", data.ifname));
    };
    put_mtu(f, n.mtu);
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

fn rdma_bound(host: &HostFacts, data: Option<&DataInterface>, f: &mut Facts) -> CheckVerdict {
    let Some(data) = data else {
        return skip(NO_INTERFACE);
    };
    put_interface(f, data);
    if let Err(e) = &host.rdma {
        return skip(format!("cannot list RDMA devices: {e}"));
    }
    match host.rdma_port_for(&data.ifname) {
        Some((device, port)) => {
            put_port(f, device, port);
            pass(format!(
                "{} port {} on {}",
                device.ibdev, port.port, data.ifname
            ))
        }
        None => fail(format!("no RDMA device is bound to {}", data.ifname)),
    }
}

fn rdma_port(host: &HostFacts, data: Option<&DataInterface>, f: &mut Facts) -> CheckVerdict {
    let Some(data) = data else {
        return skip(NO_INTERFACE);
    };
    put_interface(f, data);
    let Some((device, port)) = host.rdma_port_for(&data.ifname) else {
        return skip(format!("no RDMA port bound to {}", data.ifname));
    };
    put_port(f, device, port);
    f.insert("port_state", port.state.into());
    f.insert("port_state_text", (&port.state_text).into());
    f.insert("phys_state", (&port.phys_state).into());
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

fn rdma_link_layer(host: &HostFacts, data: Option<&DataInterface>, f: &mut Facts) -> CheckVerdict {
    let Some(data) = data else {
        return skip(NO_INTERFACE);
    };
    put_interface(f, data);
    let Some((device, port)) = host.rdma_port_for(&data.ifname) else {
        return skip(format!("no RDMA port bound to {}", data.ifname));
    };
    put_port(f, device, port);
    f.insert("link_layer", (&port.link_layer).into());
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

/// A GID table entry as facts: `gid_index` (a number), `gid`, `gid_type`, `gid_ip`.
fn gid_facts(f: &mut Facts, g: &GidEntry) {
    f.insert("gid_index", g.index.into());
    f.insert("gid", (&g.gid).into());
    put(f, "gid_type", g.gid_type.as_deref());
    put(f, "gid_ip", g.ip.map(|ip| ip.to_string()));
}

fn rdma_gid(host: &HostFacts, data: Option<&DataInterface>, f: &mut Facts) -> CheckVerdict {
    let Some(data) = data else {
        return skip(NO_INTERFACE);
    };
    put_interface(f, data);
    let Some((device, port)) = host.rdma_port_for(&data.ifname) else {
        return skip(format!("no RDMA port bound to {}", data.ifname));
    };
    put_port(f, device, port);
    f.insert("link_layer", (&port.link_layer).into());
    if port.link_layer == "InfiniBand" {
        return skip("InfiniBand port: GID index selection is a RoCE concern");
    }
    let v2: Vec<&GidEntry> = port
        .gids
        .iter()
        .filter(|g| is_roce_v2_ipv4(g, &data.ifname))
        .collect();
    let candidates: Vec<Facts> = v2
        .iter()
        .map(|g| {
            let mut r = Facts::new();
            gid_facts(&mut r, g);
            r
        })
        .collect();
    f.insert("candidates", candidates.into());
    let perftest = perftest_default_gid_index(&port.gids);
    put(f, "perftest_default_gid_index", perftest);
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
    // Exactly one candidate: the index to use.
    gid_facts(f, first);
    // What tools pick when not told: perftest master scores the table, older perftest
    // and many tools take index 0. Either differing from the right index is a trap.
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

fn rdma_mtu(host: &HostFacts, data: Option<&DataInterface>, f: &mut Facts) -> CheckVerdict {
    let Some(data) = data else {
        return skip(NO_INTERFACE);
    };
    put_interface(f, data);
    let Some(n) = host.netdev(&data.ifname) else {
        return skip(format!("interface {} does not exist", data.ifname));
    };
    put_mtu(f, n.mtu);
    let Some((device, port)) = host.rdma_port_for(&data.ifname) else {
        return skip(format!("no RDMA port bound to {}", data.ifname));
    };
    put_port(f, device, port);
    if port.link_layer == "InfiniBand" {
        return skip("InfiniBand port: RoCE v2 GIDs and their netdev MTUs are a RoCE concern");
    }
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
    let mismatched: Vec<Facts> = others
        .iter()
        .map(|(name, mtu)| {
            let mut r = Facts::new();
            r.insert("interface", name.into());
            put_mtu(&mut r, *mtu);
            r
        })
        .collect();
    f.insert("mismatched", mismatched.into());
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

fn agent_reachable(agent: &AgentFacts, bluefield: bool, f: &mut Facts) -> CheckVerdict {
    if let AgentFacts::Reached { serving, .. } = agent {
        f.insert("serving", (*serving).into());
    }
    match agent {
        AgentFacts::NotAsked => skip("--no-agent"),
        // No BlueField here and no agent answering: nothing says there should be one.
        AgentFacts::Unreachable(e) if !bluefield => skip(format!(
            "no BlueField on this host, and no agent answered ({e})"
        )),
        AgentFacts::Unreachable(e) => fail(e.clone()),
        AgentFacts::Reached { serving: true, .. } => pass("SERVING"),
        AgentFacts::Reached { serving: false, .. } => {
            fail("the agent answers but reports NOT_SERVING (see dpuctl dpu health)")
        }
    }
}

fn agent_consistent(host: &HostFacts, agent: &AgentFacts, f: &mut Facts) -> CheckVerdict {
    let system = match agent {
        AgentFacts::NotAsked => return skip("--no-agent"),
        AgentFacts::Unreachable(_) => return skip("agent not reachable"),
        AgentFacts::Reached { system, .. } => match system.as_ref() {
            Ok(s) => s,
            Err(e) => return fail(format!("Inventory.GetSystem: {e}")),
        },
    };
    let mode = v1::DpuMode::try_from(system.dpu_mode).unwrap_or(v1::DpuMode::Unspecified);
    f.insert("agent_model", (&system.model).into());
    f.insert("agent_firmware", (&system.firmware_version).into());
    f.insert("agent_mode", mode.as_str_name().into());
    let nics = host.bluefield_nics();
    if nics.is_empty() {
        return skip("no BlueField on this host to compare with");
    }
    let mut problems = Vec::new();
    let host_models: Vec<&str> = nics.iter().filter_map(|n| n.model()).collect();
    f.insert("host_models", host_models.clone().into());
    if !system.model.is_empty() && !host_models.iter().any(|m| *m == system.model) {
        problems.push(format!(
            "the agent runs on a {} but this host has {}",
            system.model,
            host_models.join(", ")
        ));
    }
    let host_fw: Vec<&str> = nics
        .iter()
        .filter_map(|n| n.firmware_version.as_deref())
        .collect();
    f.insert("host_firmware", host_fw.clone().into());
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

fn agent_mtu(
    host: &HostFacts,
    agent: &AgentFacts,
    data: Option<&DataInterface>,
    f: &mut Facts,
) -> CheckVerdict {
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
    f.insert("interface", (&host_netdev.ifname).into());
    f.insert("mtu", host_netdev.mtu.into());
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
    let dpu: Vec<Facts> = path
        .iter()
        .map(|n| {
            let mut r = Facts::new();
            r.insert("interface", (&n.ifname).into());
            let role = v1::NetdevRole::try_from(n.role).unwrap_or(v1::NetdevRole::Unspecified);
            r.insert("role", role.as_str_name().into());
            r.insert("mtu", n.mtu.into());
            r
        })
        .collect();
    f.insert("dpu_netdevs", dpu.into());
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
