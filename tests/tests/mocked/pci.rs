//! `Inventory.ListPciFunctions` against the fixture trees: the BlueField-3 NIC function
//! with its PCIe link, the host's rshim and SNAP NVMe functions, and a narrow link shown
//! as current width below max width (the API has no degraded flag; clients compare).

use dpu_proto::v1::{self, inventory_client::InventoryClient};
use dpu_tests::fixture;
use dpu_tests::harness::{AgentOptions, AgentProcess};

use crate::Lab;

async fn list(agent: &AgentProcess, all_mellanox: bool) -> Vec<v1::PciFunction> {
    InventoryClient::new(agent.channel().await)
        .list_pci_functions(v1::ListPciFunctionsRequest { all_mellanox })
        .await
        .expect("ListPciFunctions")
        .into_inner()
        .functions
}

fn bdf(f: &v1::PciFunction) -> &str {
    f.address.as_ref().map_or("", |a| a.bdf.as_str())
}

fn link(l: Option<&v1::PcieLink>) -> (f64, u32) {
    l.map_or((0.0, 0), |l| (l.speed_gts, l.width))
}

#[tokio::test]
async fn dpu_lists_the_bluefield3_nic_function_with_its_link() {
    let lab = Lab::start();
    let functions = list(&lab.agent, false).await;
    assert_eq!(functions.len(), 1, "{functions:#?}");
    let nic = &functions[0];
    assert_eq!(bdf(nic), "0000:03:00.0");
    assert_eq!(nic.kind, v1::PciFunctionKind::BluefieldNic as i32);
    assert_eq!(
        (nic.vendor_id.as_str(), nic.device_id.as_str()),
        ("0x15b3", "0xa2dc")
    );
    assert_eq!(nic.class_code, "0x020000");
    assert_eq!(nic.generation, "BlueField-3");
    assert_eq!(nic.driver, "mlx5_core");
    assert_eq!(nic.numa_node, -1);
    assert_eq!(link(nic.current_link.as_ref()), (32.0, 16));
    assert_eq!(link(nic.max_link.as_ref()), (32.0, 16));
    assert_eq!(nic.netdevs, ["p0", "pf0hpf", "pf0vf0"]);
    assert_eq!(nic.rdma_devices, ["mlx5_0"]);
}

#[tokio::test]
async fn host_lists_emulated_functions_and_the_narrow_link() {
    let (dir, root) = fixture::bluefield3_host_tempdir();
    let agent = AgentProcess::start(&AgentOptions::new(dir.path(), &root));
    let functions = list(&agent, false).await;
    let summary: Vec<_> = functions.iter().map(|f| (bdf(f), f.kind)).collect();
    assert_eq!(
        summary,
        [
            ("0000:3b:00.0", v1::PciFunctionKind::BluefieldNic as i32),
            ("0000:3b:00.1", v1::PciFunctionKind::BluefieldNic as i32),
            ("0000:3b:00.2", v1::PciFunctionKind::Rshim as i32),
            ("0000:3e:00.0", v1::PciFunctionKind::SnapNvme as i32),
        ],
        "the ConnectX-7 and the Intel NIC are not BlueField functions"
    );

    let (pf0, pf1) = (&functions[0], &functions[1]);
    assert_eq!(link(pf0.current_link.as_ref()), link(pf0.max_link.as_ref()));
    assert_eq!(pf0.netdevs, ["ens1f0np0"]);
    assert_eq!(pf0.rdma_devices, ["mlx5_0"]);
    assert_eq!(pf0.numa_node, 0);
    // The finding: x8 of x16 on the second PF.
    assert_eq!(link(pf1.current_link.as_ref()), (32.0, 8));
    assert_eq!(link(pf1.max_link.as_ref()), (32.0, 16));

    let rshim = &functions[2];
    assert_eq!(rshim.generation, "BlueField-3");
    assert_eq!(rshim.driver, "", "unbound");
    assert_eq!(rshim.current_link, None, "no link files: absent, not x0");
    let snap = &functions[3];
    assert_eq!(
        (snap.device_id.as_str(), snap.class_code.as_str()),
        ("0x6001", "0x010802")
    );
    assert_eq!(snap.driver, "nvme");

    let all = list(&agent, true).await;
    let extra: Vec<_> = all
        .iter()
        .filter(|f| !functions.iter().any(|g| bdf(g) == bdf(f)))
        .map(|f| (bdf(f), f.kind))
        .collect();
    assert_eq!(
        extra,
        [("0000:5e:00.0", v1::PciFunctionKind::OtherMellanox as i32)],
        "all_mellanox adds the plain ConnectX-7, never the Intel NIC"
    );
}
