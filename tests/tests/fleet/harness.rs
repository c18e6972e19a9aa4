//! The fleet harness itself, asked without dpuctl fleet: each fault is visible where the
//! agent shows it (generated gRPC clients, and dpuctl against the one node), and a healthy
//! node next to them shows none of them — so the fleet tests below test the CLI, not a
//! fault that silently did not apply.

use std::time::Duration;

use dpu_proto::v1::{self, inventory_client::InventoryClient};
use dpu_tests::fleet::{
    Fault, Fleet, FleetNode, FleetSpec, FLEET_MTU, NIC_FUNCTION, UPLINK, WRONG_MTU,
};
use dpu_tests::harness::{dpuctl, unix_channel};

/// What the agent shows of the three fixture faults: uplink RDMA port state, NIC
/// function link width (current, max) and uplink MTU.
#[derive(Debug, PartialEq)]
struct Shown {
    port_state: v1::RdmaPortState,
    width: (u32, u32),
    uplink_mtu: u32,
}

async fn shown(node: &FleetNode) -> Shown {
    let mut inventory = InventoryClient::new(unix_channel(node.agent().socket()).await);
    let rdma = inventory
        .list_rdma_devices(v1::ListRdmaDevicesRequest::default())
        .await
        .expect("ListRdmaDevices")
        .into_inner();
    let port = rdma.devices[0].ports[0].clone();
    let pci = inventory
        .list_pci_functions(v1::ListPciFunctionsRequest::default())
        .await
        .expect("ListPciFunctions")
        .into_inner();
    let nic = pci
        .functions
        .iter()
        .find(|f| f.address.as_ref().is_some_and(|a| a.bdf == NIC_FUNCTION))
        .unwrap_or_else(|| panic!("no {NIC_FUNCTION} in {pci:?}"));
    let netdevs = inventory
        .list_netdevs(v1::ListNetdevsRequest::default())
        .await
        .expect("ListNetdevs")
        .into_inner();
    let uplink = netdevs
        .netdevs
        .iter()
        .find(|n| n.ifname == UPLINK)
        .expect("the uplink");
    Shown {
        port_state: port.state(),
        width: (
            nic.current_link.as_ref().map_or(0, |l| l.width),
            nic.max_link.as_ref().map_or(0, |l| l.width),
        ),
        uplink_mtu: uplink.mtu,
    }
}

#[test]
fn each_fault_shows_where_the_agent_reads_it_and_a_healthy_node_shows_none() {
    let spec = FleetSpec::healthy(6)
        .with_fault(1, Fault::RdmaPortDown)
        .with_fault(2, Fault::NarrowPcieLink)
        .with_fault(3, Fault::WrongMtu)
        .with_fault(4, Fault::Hung)
        .with_fault(5, Fault::UntrustedTls);
    let fleet = Fleet::start(&spec);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let healthy = Shown {
        port_state: v1::RdmaPortState::Active,
        width: (16, 16),
        uplink_mtu: FLEET_MTU,
    };
    let expected = [
        ("node-000", Shown { ..healthy }),
        (
            "node-001",
            Shown {
                port_state: v1::RdmaPortState::Down,
                ..healthy
            },
        ),
        (
            "node-002",
            Shown {
                width: (8, 16),
                ..healthy
            },
        ),
        (
            "node-003",
            Shown {
                uplink_mtu: WRONG_MTU,
                ..healthy
            },
        ),
        // Served on its Unix socket too: only the TCP listener's trust is wrong.
        ("node-005", Shown { ..healthy }),
    ];
    runtime.block_on(async {
        for (name, want) in expected {
            assert_eq!(shown(fleet.node(name)).await, want, "{name}");
        }
        // The hung agent accepts the connection (the kernel's backlog) and answers
        // nothing.
        let hung = fleet.node("node-004");
        let call = tokio::time::timeout(Duration::from_secs(2), shown(hung)).await;
        assert!(call.is_err(), "the SIGSTOPped agent answered: {call:?}");
    });
    let state = std::fs::read_to_string(format!(
        "/proc/{}/stat",
        fleet.node("node-004").agent().pid()
    ))
    .expect("/proc/PID/stat");
    assert!(
        state.contains(") T "),
        "the hung agent is not stopped: {state}"
    );

    // The TLS node refuses the inventory's CA and serves the right one.
    let tls_node = fleet.node("node-005");
    let as_client = |tls: &dpu_tests::fleet::ClientTlsFiles| {
        let files = [&tls.ca, &tls.cert, &tls.key].map(|p| p.display().to_string());
        dpuctl(&[
            "--agent",
            tls_node.endpoint(),
            "--ca",
            &files[0],
            "--cert",
            &files[1],
            "--key",
            &files[2],
            "--tls-name",
            &tls.tls_name,
            "--timeout",
            "5",
            "dpu",
            "info",
        ])
    };
    let refused = as_client(tls_node.tls().expect("the inventory's TLS files"));
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert_eq!(
        refused.status.code(),
        Some(2),
        "an untrusted agent certificate: {stderr}"
    );
    let trusted = as_client(tls_node.trusted_tls().expect("the fleet CA's files"));
    assert!(
        trusted.status.success(),
        "the same agent with the fleet's CA: {}",
        String::from_utf8_lossy(&trusted.stderr)
    );

    // The inventory lists every node once, the TLS node on TCP with its files.
    let inventory = std::fs::read_to_string(fleet.inventory()).expect("inventory");
    let parsed: toml::Table = inventory.parse().expect("the inventory is TOML");
    let targets = parsed["target"].as_array().expect("[[target]]");
    assert_eq!(targets.len(), 6, "{inventory}");
    let tls_entry = targets
        .iter()
        .find(|t| t["name"].as_str() == Some("node-005"))
        .expect("node-005");
    assert_eq!(tls_entry["agent"].as_str(), Some(tls_node.endpoint()));
    assert!(tls_node.endpoint().starts_with("tcp:127.0.0.1:"));
    assert!(tls_entry.get("ca").is_some(), "{inventory}");
}
