//! The `gpu.*` checks against sysfs trees laid out as GPU servers are: a DGX H100 passes
//! all three, and each classic misplacement (a GPU whose nearest NIC is on the other
//! socket, two GPUs on one NIC beside an idle one, a GPU and NIC on different NUMA
//! nodes) is named; a host without GPUs or NICs skips, never passes.

use dpu_probe::testing::{switch_port, SysTree, DGX_H100_RAILS};

use super::super::facts::{AgentFacts, HostFacts};
use super::super::rules::{judge, CheckVerdict, Expectations, Status};
use super::rules::verdict;

/// The host as `dpuctl check` gathers and judges it from `tree`.
fn judged(tree: &SysTree) -> Vec<(&'static str, CheckVerdict)> {
    let host = HostFacts::gather(&tree.root());
    assert!(host.gpu_topology.is_ok(), "{:?}", host.gpu_topology);
    judge(&host, &AgentFacts::NotAsked, &Expectations::default())
}

/// A DGX H100 laid out as its rails are (`DGX_H100_RAILS`).
fn dgx_h100() -> SysTree {
    let tree = SysTree::new();
    for (hb, ibdev, numa) in DGX_H100_RAILS {
        tree.gpu_tray_slot(hb, ibdev, numa, numa);
    }
    tree
}

const GPU_CHECKS: [&str; 3] = ["gpu.nic-affinity", "gpu.nic-sharing", "gpu.numa"];

#[test]
fn a_dgx_h100_passes_every_gpu_check() {
    let results = judged(&dgx_h100());
    for id in GPU_CHECKS {
        let v = verdict(&results, id);
        assert_eq!(v.status, Status::Pass, "{id}: {}", v.detail);
    }
    let affinity = verdict(&results, "gpu.nic-affinity");
    assert!(
        affinity.detail.contains("0000:1b:00.0 -> mlx5_0 PIX")
            && affinity.detail.contains("0000:df:00.0 -> mlx5_11 PIX"),
        "{}",
        affinity.detail
    );
    assert!(
        !affinity.detail.contains("beyond PXB"),
        "{}",
        affinity.detail
    );
}

#[test]
fn the_json_carries_the_topology_matrix() {
    let results = super::super::describe(judged(&dgx_h100()));
    let json = serde_json::to_value(&results).expect("serialize");
    let facts = json
        .as_array()
        .and_then(|all| all.iter().find(|r| r["id"] == "gpu.nic-affinity"))
        .map(|r| r["facts"].clone())
        .expect("gpu.nic-affinity");
    let row0 = serde_json::json!(["PIX", "NODE", "NODE", "NODE", "SYS", "SYS", "SYS", "SYS"]);
    assert_eq!(facts["matrix"][0], row0, "{facts}");
    assert_eq!(facts["matrix"][7][7], "PIX");
    assert_eq!(facts["gpus"][0]["address"], "0000:1b:00.0");
    assert_eq!(facts["gpus"][4]["numa_node"], 1, "a number");
    assert_eq!(facts["gpus"][0]["class"], "0x030200");
    assert_eq!(facts["nics"][1]["rdma_device"], "mlx5_3");
    assert_eq!(facts["nics"][1]["host_bridge"], "pci0000:3d");
    assert_eq!(facts["nics"][1]["ports"], serde_json::json!([1]));
    assert_eq!(
        facts["nearest"][2]["rdma_devices"],
        serde_json::json!(["mlx5_4"])
    );
    assert_eq!(facts["nearest"][2]["relation"], "PIX");
}

/// GPU 1b sits behind a switch on socket 0 with no NIC; the only NIC shares a switch with
/// GPU 9d on socket 1.
fn a_gpu_behind_a_switch_without_a_nic() -> SysTree {
    let tree = SysTree::new();
    tree.gpu(&format!("{}/0000:1b:00.0", switch_port(0x15, 1)), "0");
    tree.gpu_tray_slot(0x97, "mlx5_6", "1", "1");
    tree
}

#[test]
fn a_gpu_whose_nearest_nic_is_on_the_other_socket_warns() {
    let results = judged(&a_gpu_behind_a_switch_without_a_nic());
    let v = verdict(&results, "gpu.nic-affinity");
    assert_eq!(v.status, Status::Warn, "{}", v.detail);
    assert!(
        v.detail
            .starts_with("GPU 0000:1b:00.0 (NUMA node 0): nearest RDMA NIC mlx5_6 (node 1) is SYS"),
        "{}",
        v.detail
    );
    assert!(
        !v.detail.contains("0000:9d:00.0"),
        "that GPU is fine: {}",
        v.detail
    );
    // The same fault seen from NUMA; one NIC is shared but none is idle.
    let numa = verdict(&results, "gpu.numa");
    assert_eq!(numa.status, Status::Warn, "{}", numa.detail);
    assert!(
        numa.detail
            .contains("GPU 0000:1b:00.0 on NUMA node 0 but its nearest NIC mlx5_6 (SYS) on node 1"),
        "{}",
        numa.detail
    );
    let sharing = verdict(&results, "gpu.nic-sharing");
    assert_eq!(sharing.status, Status::Pass, "{}", sharing.detail);
    assert!(
        sharing.detail.contains("none left idle"),
        "{}",
        sharing.detail
    );
}

#[test]
fn a_gpu_behind_another_switch_of_its_socket_warns_that_nccl_gives_it_no_gdr() {
    let tree = SysTree::new();
    tree.gpu(&format!("{}/0000:1b:00.0", switch_port(0x15, 1)), "0");
    tree.nic(
        &format!("{}/0000:40:00.0", switch_port(0x3d, 0)),
        "mlx5_3",
        "0",
    );
    let results = judged(&tree);
    let v = verdict(&results, "gpu.nic-affinity");
    assert_eq!(v.status, Status::Warn, "{}", v.detail);
    assert!(
        v.detail.contains("0000:1b:00.0 -> mlx5_3 NODE")
            && v.detail.contains("beyond PXB for 0000:1b:00.0"),
        "{}",
        v.detail
    );
}

#[test]
fn two_gpus_on_one_nic_beside_an_idle_nic_warn() {
    let tree = SysTree::new();
    // GPUs 1b and 1c and mlx5_0 behind one switch; mlx5_1 alone behind another.
    tree.gpu(&format!("{}/0000:1b:00.0", switch_port(0x15, 1)), "0");
    tree.gpu(&format!("{}/0000:1c:00.0", switch_port(0x15, 2)), "0");
    tree.nic(
        &format!("{}/0000:18:00.0", switch_port(0x15, 0)),
        "mlx5_0",
        "0",
    );
    tree.nic(
        &format!("{}/0000:40:00.0", switch_port(0x3d, 0)),
        "mlx5_1",
        "0",
    );
    let results = judged(&tree);
    let v = verdict(&results, "gpu.nic-sharing");
    assert_eq!(v.status, Status::Warn, "{}", v.detail);
    assert!(
        v.detail.starts_with(
            "GPUs 0000:1b:00.0, 0000:1c:00.0 share nearest NIC mlx5_0 while mlx5_1 is nearest to no GPU"
        ),
        "{}",
        v.detail
    );
    assert_eq!(
        v.facts.get("idle_nics"),
        Some(&vec!["mlx5_1"].into()),
        "{:?}",
        v.facts
    );
    assert_eq!(verdict(&results, "gpu.nic-affinity").status, Status::Pass);
    assert_eq!(verdict(&results, "gpu.numa").status, Status::Pass);
}

#[test]
fn a_gpu_and_its_nic_on_different_numa_nodes_warn() {
    // DGX layout, but the firmware puts GPU 43's switch partner mlx5_3 on node 1.
    let tree = SysTree::new();
    for (hb, ibdev, numa) in DGX_H100_RAILS {
        let nic_numa = if ibdev == "mlx5_3" { "1" } else { numa };
        tree.gpu_tray_slot(hb, ibdev, numa, nic_numa);
    }
    let results = judged(&tree);
    let v = verdict(&results, "gpu.numa");
    assert_eq!(v.status, Status::Warn, "{}", v.detail);
    assert!(
        v.detail.starts_with(
            "GPU 0000:43:00.0 on NUMA node 0 but its nearest NIC mlx5_3 (PIX) on node 1 (one host bridge on two nodes"
        ),
        "{}",
        v.detail
    );
    assert!(!v.detail.contains("0000:1b:00.0"), "{}", v.detail);
    let mismatched = v.facts.get("mismatched").expect("mismatched");
    assert!(
        matches!(mismatched, super::super::rules::FactValue::List(l) if l.len() == 1),
        "{mismatched:?}"
    );
    assert_eq!(verdict(&results, "gpu.nic-affinity").status, Status::Pass);
    assert_eq!(verdict(&results, "gpu.nic-sharing").status, Status::Pass);
}

#[test]
fn an_unknown_numa_node_skips_instead_of_guessing() {
    let tree = SysTree::new();
    tree.gpu(&format!("{}/0000:1b:00.0", switch_port(0x15, 1)), "-1");
    tree.nic(
        &format!("{}/0000:9a:00.0", switch_port(0x97, 0)),
        "mlx5_6",
        "-1",
    );
    let results = judged(&tree);
    let v = verdict(&results, "gpu.nic-affinity");
    assert_eq!(v.status, Status::Skip, "{}", v.detail);
    assert!(
        v.detail
            .contains("NODE cannot be told from SYS for 0000:1b:00.0 -> mlx5_6 NODE|SYS"),
        "{}",
        v.detail
    );
    let v = verdict(&results, "gpu.numa");
    assert_eq!(v.status, Status::Skip, "{}", v.detail);
    assert!(v.detail.contains("unknown"), "{}", v.detail);
}

#[test]
fn a_host_without_gpus_or_nics_skips_with_the_reason() {
    let tree = SysTree::new();
    tree.nic(
        &format!("{}/0000:18:00.0", switch_port(0x15, 0)),
        "mlx5_0",
        "0",
    );
    let results = judged(&tree);
    for id in GPU_CHECKS {
        let v = verdict(&results, id);
        assert_eq!(v.status, Status::Skip, "{id}: {}", v.detail);
        assert!(
            v.detail.starts_with("no NVIDIA GPU on PCIe"),
            "{id}: {}",
            v.detail
        );
    }

    let tree = SysTree::new();
    tree.gpu(&format!("{}/0000:1b:00.0", switch_port(0x15, 1)), "0");
    tree.dir("sys/class/infiniband/rxe0/ports/1");
    let results = judged(&tree);
    for id in GPU_CHECKS {
        let v = verdict(&results, id);
        assert_eq!(v.status, Status::Skip, "{id}: {}", v.detail);
        assert!(
            v.detail
                .starts_with("no RDMA NIC on a PCI function (rxe0 has no PCI function)"),
            "{id}: {}",
            v.detail
        );
    }
}

#[test]
fn an_unreadable_topology_skips_with_the_error() {
    let tree = SysTree::new();
    tree.gpu(&format!("{}/0000:1b:00.0", switch_port(0x15, 1)), "node0");
    let host = HostFacts::gather(&tree.root());
    let results = judge(&host, &AgentFacts::NotAsked, &Expectations::default());
    for id in GPU_CHECKS {
        let v = verdict(&results, id);
        assert_eq!(v.status, Status::Skip, "{id}: {}", v.detail);
        assert!(
            v.detail.starts_with("cannot read the PCIe topology")
                && v.detail.contains("0000:1b:00.0/numa_node"),
            "{id}: {}",
            v.detail
        );
    }
}
