use dpu_proto::v1;

use super::{ids, judge, DpuExpectations};
use crate::agent::health::{AgentHealth, HealthRow};
use crate::fleet::dpu_facts::DpuFacts;
use crate::fleet::report::NodeStatus;

fn healthy() -> AgentHealth {
    AgentHealth {
        system: v1::System::default(),
        rows: vec![HealthRow {
            component: "agent".into(),
            state: "serving".into(),
            healthy: true,
            detail: String::new(),
        }],
    }
}

fn uplink(ifname: &str, mtu: u32) -> v1::Netdev {
    v1::Netdev {
        ifname: ifname.into(),
        mtu,
        role: v1::NetdevRole::UplinkRepresentor as i32,
        ..Default::default()
    }
}

fn port(netdev: &str, state: v1::RdmaPortState) -> v1::RdmaPort {
    v1::RdmaPort {
        port: 1,
        state: state as i32,
        phys_state: "5: LinkUp".into(),
        link_layer: v1::LinkLayer::Ethernet as i32,
        netdev: netdev.into(),
        gids: vec![v1::Gid {
            index: 3,
            gid: "::ffff:192.0.2.1".into(),
            r#type: v1::GidType::RoceV2 as i32,
            netdev: netdev.into(),
            ip_address: "192.0.2.1".into(),
        }],
        ..Default::default()
    }
}

fn nic(width: u32, max_width: u32) -> v1::PciFunction {
    v1::PciFunction {
        address: Some(v1::PciAddress {
            bdf: "0000:03:00.0".into(),
        }),
        kind: v1::PciFunctionKind::BluefieldNic as i32,
        current_link: Some(v1::PcieLink {
            speed_gts: 32.0,
            width,
        }),
        max_link: Some(v1::PcieLink {
            speed_gts: 32.0,
            width: max_width,
        }),
        ..Default::default()
    }
}

fn dpu() -> DpuFacts {
    DpuFacts {
        system: v1::System {
            firmware_version: "32.41.1000".into(),
            dpu_mode: v1::DpuMode::Dpu as i32,
            ..Default::default()
        },
        netdevs: vec![
            uplink("p0", 9000),
            uplink("p1", 9000),
            v1::Netdev {
                ifname: "pf0hpf".into(),
                mtu: 1500,
                role: v1::NetdevRole::PfRepresentor as i32,
                ..Default::default()
            },
        ],
        rdma_devices: vec![
            v1::RdmaDevice {
                ibdev: "mlx5_0".into(),
                ports: vec![port("p0", v1::RdmaPortState::Active)],
                ..Default::default()
            },
            v1::RdmaDevice {
                ibdev: "mlx5_1".into(),
                ports: vec![port("p1", v1::RdmaPortState::Active)],
                ..Default::default()
            },
        ],
        pci_functions: vec![nic(16, 16)],
        offload: None,
    }
}

fn problems(facts: &DpuFacts, mtu: Option<u32>) -> Vec<(String, NodeStatus, String)> {
    judge(&healthy(), facts, &DpuExpectations { mtu })
        .problems
        .into_iter()
        .map(|p| (p.check, p.status, p.detail))
        .collect()
}

#[test]
fn a_healthy_dpu_passes_and_reports_what_drift_compares() {
    let outcome = judge(&healthy(), &dpu(), &DpuExpectations { mtu: Some(9000) });
    assert_eq!(outcome.status(), NodeStatus::Pass, "{:?}", outcome.problems);
    assert_eq!(outcome.compared["firmware"], "32.41.1000");
    assert_eq!(outcome.compared["dpu mode"], "dpu");
    assert_eq!(outcome.compared["mtu p0"], "9000");
    assert_eq!(outcome.compared["gid index mlx5_0/1"], "3");
    assert!(
        !outcome.compared.contains_key("mtu pf0hpf"),
        "a representor's MTU is not the fabric's"
    );
}

#[test]
fn each_fault_is_named_on_its_port() {
    let mut down = dpu();
    down.rdma_devices[1].ports[0].state = v1::RdmaPortState::Down as i32;
    down.rdma_devices[1].ports[0].phys_state = "3: Disabled".into();
    assert_eq!(
        problems(&down, None),
        [(
            ids::RDMA_PORT.to_owned(),
            NodeStatus::Fail,
            "mlx5_1 port 1 (p1) is DOWN, physical state 3: Disabled".to_owned()
        )],
        "a DOWN port has no GID judgement of its own"
    );

    let mut narrow = dpu();
    narrow.pci_functions = vec![nic(8, 16)];
    assert_eq!(
        problems(&narrow, None),
        [(
            ids::PCIE_LINK.to_owned(),
            NodeStatus::Fail,
            "0000:03:00.0: x8 at 32 GT/s of x16 at 32 GT/s".to_owned()
        )]
    );

    let mut small = dpu();
    small.netdevs[0].mtu = 1500;
    assert_eq!(
        problems(&small, Some(9000)),
        [(
            ids::MTU.to_owned(),
            NodeStatus::Fail,
            "p0 has MTU 1500, expected 9000".to_owned()
        )]
    );
    assert!(
        problems(&small, None).is_empty(),
        "without --mtu: drift only"
    );

    let mut no_gid = dpu();
    no_gid.rdma_devices[0].ports[0].gids[0].r#type = v1::GidType::IbRoceV1 as i32;
    assert_eq!(problems(&no_gid, None)[0].0, ids::GID);
}

#[test]
fn an_unhealthy_agent_fails_and_a_sick_service_warns() {
    let mut health = healthy();
    health.rows.push(HealthRow {
        component: "backend snap".into(),
        state: "unavailable".into(),
        healthy: false,
        detail: "connection refused".into(),
    });
    let outcome = judge(&health, &dpu(), &DpuExpectations::default());
    assert_eq!(outcome.status(), NodeStatus::Warn);
    assert_eq!(
        outcome.problems[0].detail,
        "backend snap is unavailable (connection refused)"
    );
    health.rows[0].healthy = false;
    health.rows[0].state = "not_serving".into();
    let outcome = judge(&health, &dpu(), &DpuExpectations::default());
    assert_eq!(outcome.status(), NodeStatus::Fail);
    assert_eq!(outcome.problems[0].check, ids::SERVING);
}

#[test]
fn without_uplink_roles_every_rdma_port_is_judged() {
    let mut plain = dpu();
    for n in &mut plain.netdevs {
        n.role = v1::NetdevRole::Plain as i32;
    }
    plain.rdma_devices[0].ports[0].state = v1::RdmaPortState::Init as i32;
    let found = problems(&plain, None);
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(found[0].2.contains("is INIT"), "{found:?}");
}

/// `fleet check` words the agent's health as `fleet health` does: one WARN per down
/// backend (its services folded in), FAIL only for the agent itself.
#[test]
fn a_node_with_snap_and_ovs_down_warns_once_per_backend() {
    let row = |component: &str, state: &str| HealthRow {
        component: component.into(),
        state: state.into(),
        healthy: matches!(state, "serving" | "ready" | "disabled"),
        detail: String::new(),
    };
    let health = AgentHealth {
        system: v1::System::default(),
        rows: vec![
            row("agent", "serving"),
            row("dpu.v1.Storage", "not-serving"),
            row("dpu.v1.Switch", "not-serving"),
            row(dpu_proto::READINESS_SERVICE, "not-serving"),
            row("backend snap", "unavailable"),
            row("backend ovsdb", "unavailable"),
            row("backend ovs-vswitchd", "unavailable"),
        ],
    };
    let outcome = judge(&health, &dpu(), &DpuExpectations::default());
    let serving: Vec<(&str, NodeStatus, &str)> = outcome
        .problems
        .iter()
        .filter(|p| p.check == ids::SERVICES || p.check == ids::SERVING)
        .map(|p| (p.check.as_str(), p.status, p.cause.as_str()))
        .collect();
    assert_eq!(
        serving,
        [
            (
                ids::SERVICES,
                NodeStatus::Warn,
                "storage: snap backend unavailable"
            ),
            (
                ids::SERVICES,
                NodeStatus::Warn,
                "switch: ovs backend unavailable"
            ),
        ],
        "{:#?}",
        outcome.problems
    );
}
