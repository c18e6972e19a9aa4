//! Each rule against hand-built facts: the classic faults must be diagnosed by name.

use std::net::{IpAddr, Ipv4Addr};

use dpu_probe::netdev::NetdevInfo;
use dpu_probe::pci::topology::PciTopology;
use dpu_probe::pci::{classify, PciFunction, PcieLink};
use dpu_probe::rdma::{GidEntry, RdmaDeviceInfo, RdmaPortInfo};
use dpu_proto::v1;

use super::super::facts::{AgentFacts, HostFacts};
use super::super::rules::{judge, CheckVerdict, Expectations, Status};
use dpu_probe::fw_config::FwFacts;

pub(super) fn nic(address: &str, width: u32) -> PciFunction {
    let (kind, generation) = classify(0x15b3, 0xa2dc, Some(0x020000));
    PciFunction {
        address: address.to_owned(),
        vendor_id: Some(0x15b3),
        device_id: Some(0xa2dc),
        kind,
        generation,
        driver: Some("mlx5_core".to_owned()),
        current_link: PcieLink {
            speed_gts: Some(32.0),
            width: Some(width),
        },
        max_link: PcieLink {
            speed_gts: Some(32.0),
            width: Some(16),
        },
        firmware_version: Some("32.41.1000".to_owned()),
        netdevs: vec!["ens1f0np0".to_owned()],
        rdma_devices: vec!["mlx5_0".to_owned()],
        ..Default::default()
    }
}

pub(super) fn netdev(ifname: &str, mtu: u32, carrier: bool) -> NetdevInfo {
    NetdevInfo {
        ifname: ifname.to_owned(),
        mtu,
        operstate: if carrier { "up" } else { "down" }.to_owned(),
        carrier: Some(carrier),
        pci_address: Some("0000:3b:00.0".to_owned()),
        ..Default::default()
    }
}

pub(super) fn gid(index: u32, kind: &str, ndev: &str, ip: Option<IpAddr>) -> GidEntry {
    GidEntry {
        index,
        gid: String::new(),
        gid_type: Some(kind.to_owned()),
        netdev: Some(ndev.to_owned()),
        ip,
    }
}

pub(super) fn v4() -> Option<IpAddr> {
    Some(IpAddr::V4(Ipv4Addr::new(192, 168, 100, 1)))
}

pub(super) fn port(state: u32, phys: &str, gids: Vec<GidEntry>) -> RdmaPortInfo {
    RdmaPortInfo {
        port: 1,
        state,
        state_text: if state == 4 { "ACTIVE" } else { "DOWN" }.to_owned(),
        phys_state: phys.to_owned(),
        link_layer: "Ethernet".to_owned(),
        gids,
        ..Default::default()
    }
}

pub(super) fn healthy_gids() -> Vec<GidEntry> {
    vec![
        gid(0, "IB/RoCE v1", "ens1f0np0", None),
        gid(1, "RoCE v2", "ens1f0np0", None),
        gid(2, "IB/RoCE v1", "ens1f0np0", v4()),
        gid(3, "RoCE v2", "ens1f0np0", v4()),
    ]
}

pub(super) fn host(
    width: u32,
    carrier: bool,
    port: RdmaPortInfo,
    extra: Vec<NetdevInfo>,
) -> HostFacts {
    let mut netdevs = vec![netdev("ens1f0np0", 9000, carrier)];
    netdevs.extend(extra);
    HostFacts {
        pci: Ok(vec![nic("0000:3b:00.0", width)]),
        netdevs: Ok(netdevs),
        rdma: Ok(vec![RdmaDeviceInfo {
            ibdev: "mlx5_0".to_owned(),
            pci_address: Some("0000:3b:00.0".to_owned()),
            ports: vec![port],
            ..Default::default()
        }]),
        ib_ports: Ok(vec![]),
        gpu_topology: Ok(PciTopology::default()),
        firmware: FwFacts::NotRun("a hand-built host".to_owned()),
        gdr: Default::default(),
        dcb: Default::default(),
        hypervisor: None,
    }
}

pub(super) fn verdict(results: &[(&'static str, CheckVerdict)], id: &str) -> CheckVerdict {
    results
        .iter()
        .find(|(i, _)| *i == id)
        .map(|(_, v)| v.clone())
        .unwrap_or_else(|| panic!("no result for {id}"))
}

pub(super) fn agent(model: &str, fw: &str, mode: v1::DpuMode, uplink_mtu: u32) -> AgentFacts {
    let rep = |ifname: &str, role: v1::NetdevRole, mtu| v1::Netdev {
        ifname: ifname.to_owned(),
        role: role as i32,
        mtu,
        ..Default::default()
    };
    AgentFacts::Reached {
        serving: true,
        system: Box::new(Ok(v1::System {
            model: model.to_owned(),
            firmware_version: fw.to_owned(),
            dpu_mode: mode as i32,
            ..Default::default()
        })),
        netdevs: Ok(vec![
            rep("p0", v1::NetdevRole::UplinkRepresentor, uplink_mtu),
            rep("pf0hpf", v1::NetdevRole::PfRepresentor, 9000),
        ]),
        fabric: Box::new(Err("Unimplemented: not served by this agent".to_owned())),
    }
}

#[test]
fn a_healthy_lab_passes_except_the_gid_index_warning() {
    let h = host(16, true, port(4, "5: LinkUp", healthy_gids()), vec![]);
    let a = agent("BlueField-3", "32.41.1000", v1::DpuMode::Dpu, 9216);
    let results = judge(
        &h,
        &a,
        &Expectations {
            mtu: Some(9000),
            ..Default::default()
        },
    );
    for (id, v) in &results {
        let expected = match *id {
            "rdma.gid" => Status::Warn,
            // A RoCE lab: the InfiniBand checks have nothing to judge.
            id if id.starts_with("ib.") => Status::Skip,
            // Without GPUs the GPU–NIC topology checks have nothing to judge.
            id if id.starts_with("gpu.") => Status::Skip,
            // ... and so have the GPUDirect RDMA checks.
            id if id.starts_with("gdr.") => Status::Skip,
            // A hand-built host runs no firmware tool (fw_tests.rs judges canned output).
            id if id.starts_with("fw.") => Status::Skip,
            // A hand-built host has no DCB facts (dcb_tests.rs judges canned answers).
            id if id.starts_with("dcb.") => Status::Skip,
            _ => Status::Pass,
        };
        assert_eq!(v.status, expected, "{id}: {}", v.detail);
    }
    let gid = verdict(&results, "rdma.gid");
    assert!(
        gid.detail.contains("index 3") && gid.detail.contains("-x 3"),
        "{}",
        gid.detail
    );
}

#[test]
fn a_narrow_pcie_link_fails_with_the_finding() {
    let h = host(8, true, port(4, "5: LinkUp", healthy_gids()), vec![]);
    let v = verdict(
        &judge(&h, &AgentFacts::NotAsked, &Expectations::default()),
        "pcie.link",
    );
    assert_eq!(v.status, Status::Fail);
    assert!(v.detail.contains("x8 of x16"), "{}", v.detail);
}

#[test]
fn link_up_but_port_not_active_is_named() {
    let h = host(16, true, port(1, "5: LinkUp", healthy_gids()), vec![]);
    let v = verdict(
        &judge(&h, &AgentFacts::NotAsked, &Expectations::default()),
        "rdma.port",
    );
    assert_eq!(v.status, Status::Fail);
    assert!(
        v.detail
            .starts_with("physical link up but RDMA port not ACTIVE"),
        "{}",
        v.detail
    );
}

#[test]
fn no_roce_v2_ipv4_gid_fails() {
    let gids = vec![
        gid(0, "IB/RoCE v1", "ens1f0np0", None),
        gid(1, "RoCE v2", "ens1f0np0", None),
    ];
    let h = host(16, true, port(4, "5: LinkUp", gids), vec![]);
    let v = verdict(
        &judge(&h, &AgentFacts::NotAsked, &Expectations::default()),
        "rdma.gid",
    );
    assert_eq!(v.status, Status::Fail, "{}", v.detail);
}

#[test]
fn a_vlan_with_a_smaller_mtu_on_the_port_is_an_mtu_mismatch() {
    let mut gids = healthy_gids();
    gids.push(gid(4, "RoCE v2", "ens1f0np0.100", v4()));
    let vlan = netdev("ens1f0np0.100", 1500, true);
    let h = host(16, true, port(4, "5: LinkUp", gids), vec![vlan]);
    let v = verdict(
        &judge(&h, &AgentFacts::NotAsked, &Expectations::default()),
        "rdma.mtu",
    );
    assert_eq!(v.status, Status::Fail);
    assert!(
        v.detail
            .contains("MTU mismatch between netdev and RDMA port"),
        "{}",
        v.detail
    );
}

#[test]
fn the_wrong_mtu_is_a_failure_when_one_is_required() {
    let h = host(16, true, port(4, "5: LinkUp", healthy_gids()), vec![]);
    let v = verdict(
        &judge(
            &h,
            &AgentFacts::NotAsked,
            &Expectations {
                mtu: Some(4200),
                ..Default::default()
            },
        ),
        "netdev.mtu",
    );
    assert_eq!(v.status, Status::Fail);
}

#[test]
fn an_agent_on_another_card_or_in_nic_mode_is_inconsistent() {
    let h = host(16, true, port(4, "5: LinkUp", healthy_gids()), vec![]);
    let other = agent("BlueField-2", "24.40.1000", v1::DpuMode::Nic, 9216);
    let v = verdict(
        &judge(&h, &other, &Expectations::default()),
        "agent.consistent",
    );
    assert_eq!(v.status, Status::Fail);
    for needle in ["BlueField-2", "24.40.1000", "DPU_MODE_NIC"] {
        assert!(v.detail.contains(needle), "{needle}: {}", v.detail);
    }
}

#[test]
fn a_small_uplink_mtu_on_the_dpu_fails() {
    let h = host(16, true, port(4, "5: LinkUp", healthy_gids()), vec![]);
    let a = agent("BlueField-3", "32.41.1000", v1::DpuMode::Dpu, 1500);
    let v = verdict(&judge(&h, &a, &Expectations::default()), "agent.mtu");
    assert_eq!(v.status, Status::Fail);
    assert!(v.detail.contains("p0 MTU 1500"), "{}", v.detail);
}

#[test]
fn nothing_to_check_is_skipped_not_passed() {
    let h = HostFacts {
        pci: Ok(vec![]),
        netdevs: Ok(vec![]),
        rdma: Ok(vec![]),
        ib_ports: Ok(vec![]),
        gpu_topology: Ok(PciTopology::default()),
        firmware: FwFacts::NotRun("a hand-built host".to_owned()),
        gdr: Default::default(),
        dcb: Default::default(),
        hypervisor: None,
    };
    let results = judge(&h, &AgentFacts::NotAsked, &Expectations::default());
    assert_eq!(verdict(&results, "pcie.bluefield").status, Status::Fail);
    assert_eq!(
        verdict(&results, "pcie.bluefield").fix,
        None,
        "bare metal: the catalog's fix"
    );
    for (id, v) in results.iter().skip(1) {
        assert_eq!(v.status, Status::Skip, "{id}: {}", v.detail);
        assert!(!v.detail.is_empty(), "{id} says why");
    }

    // The same empty machine as a virtual machine: still a failure, named as a VM's, and
    // a fix without a card to reseat.
    let vm = HostFacts {
        hypervisor: Some("QEMU".to_owned()),
        ..h
    };
    let results = judge(&vm, &AgentFacts::NotAsked, &Expectations::default());
    let v = verdict(&results, "pcie.bluefield");
    assert_eq!(v.status, Status::Fail);
    assert!(v.detail.contains("virtual machine (QEMU)"), "{}", v.detail);
    let fix = v.fix.expect("a fix for a VM");
    assert!(!fix.contains("reseat") && fix.contains("VFIO"), "{fix}");
    let described = crate::check::describe(results);
    assert_eq!(described[0].fix, fix, "the printed fix is the VM's");
}

#[test]
fn the_facts_judged_are_typed_values_in_the_json() {
    let h = host(8, true, port(4, "5: LinkUp", healthy_gids()), vec![]);
    let a = agent("BlueField-3", "32.41.1000", v1::DpuMode::Dpu, 9216);
    let results = super::super::describe(judge(&h, &a, &Expectations::default()));
    let json = serde_json::to_value(&results).expect("results serialize");
    let facts = |id: &str| {
        json.as_array()
            .and_then(|all| all.iter().find(|r| r["id"] == id))
            .map(|r| r["facts"].clone())
            .unwrap_or_else(|| panic!("no result {id}"))
    };
    let gid = facts("rdma.gid");
    assert_eq!(gid["gid_index"], serde_json::json!(3), "a number: {gid}");
    assert!(gid["gid_index"].is_u64());
    assert_eq!(gid["gid_type"], "RoCE v2");
    assert_eq!(gid["gid_ip"], "192.168.100.1");
    assert_eq!(gid["interface"], "ens1f0np0");
    assert_eq!(gid["rdma_device"], "mlx5_0");
    assert_eq!(gid["rdma_port"], serde_json::json!(1));
    assert_eq!(gid["candidates"].as_array().map(Vec::len), Some(1));
    assert_eq!(facts("rdma.link-layer")["link_layer"], "Ethernet");
    let mtu = facts("netdev.mtu");
    assert_eq!(mtu["mtu"], serde_json::json!(9000));
    assert_eq!(mtu["path_mtu"], serde_json::json!(4096));
    assert!(mtu.get("expected_mtu").is_none(), "absent, not null: {mtu}");
    let link = &facts("pcie.link")["functions"][0];
    assert_eq!(link["width"], serde_json::json!(8));
    assert_eq!(link["max_width"], serde_json::json!(16));
    assert_eq!(link["speed_gts"], serde_json::json!(32.0));
    assert_eq!(link["degraded"], serde_json::json!(true));
    let agent = facts("agent.consistent");
    assert_eq!(agent["agent_model"], "BlueField-3");
    assert_eq!(agent["agent_firmware"], "32.41.1000");
    assert_eq!(agent["agent_mode"], "DPU_MODE_DPU");
    assert_eq!(
        facts("agent.mtu")["dpu_netdevs"][0]["mtu"],
        serde_json::json!(9216)
    );
    // The existing fields are still there.
    for r in json.as_array().into_iter().flatten() {
        for field in ["id", "status", "detail", "verifies", "why", "fix"] {
            assert!(r[field].is_string(), "{field}: {r}");
        }
        assert!(r["facts"].is_object(), "{r}");
    }
}
