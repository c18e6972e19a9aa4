use super::*;
use crate::testing::{SysTree, DGX_H100_RAILS};

use PciRelation::*;

#[test]
fn a_dgx_h100_pairs_each_gpu_with_its_own_connectx7() {
    let tree = SysTree::new();
    for (hb, ibdev, numa) in DGX_H100_RAILS {
        tree.gpu_tray_slot(hb, ibdev, numa, numa);
    }
    let topo = read_pci_topology(&tree.root()).expect("topology");
    let gpus: Vec<_> = topo.gpus().iter().map(|g| &g.placement.address).collect();
    assert_eq!(
        gpus,
        [
            "0000:1b:00.0",
            "0000:43:00.0",
            "0000:52:00.0",
            "0000:61:00.0",
            "0000:9d:00.0",
            "0000:c3:00.0",
            "0000:d1:00.0",
            "0000:df:00.0"
        ]
    );
    let nics: Vec<_> = topo.nics().iter().map(|n| n.ibdev.as_str()).collect();
    assert_eq!(
        nics,
        ["mlx5_0", "mlx5_3", "mlx5_4", "mlx5_5", "mlx5_6", "mlx5_9", "mlx5_10", "mlx5_11"],
        "in PCIe order, not name order"
    );
    assert_eq!(topo.nics()[0].ports, [1]);
    assert_eq!(topo.nics()[0].placement.host_bridge_name(), "pci0000:15");
    assert_eq!(
        topo.nics()[0].placement.bridges,
        ["0000:15:01.0", "0000:16:00.0", "0000:17:00.0"]
    );
    // What `nvidia-smi topo -m` shows on such a box: PIX on the diagonal, NODE to the
    // other NICs of the socket, SYS across.
    for g in 0..8 {
        let row: Vec<_> = topo.row(g).iter().map(|r| r.label()).collect();
        let want: Vec<_> = (0..8)
            .map(|n| match (n == g, n / 4 == g / 4) {
                (true, _) => "PIX",
                (false, true) => "NODE",
                (false, false) => "SYS",
            })
            .collect();
        assert_eq!(row, want, "GPU {g}");
        assert_eq!(topo.nearest_nics(g), Some((Pix, vec![g])));
    }
    assert_eq!(topo.gpus()[4].placement.numa_node, Some(1));
    assert!(topo.unplaced_rdma().is_empty());
}

fn placed(host_bridge: &str, bridges: &[&str], numa: Option<u32>) -> PciPlacement {
    PciPlacement {
        address: "0000:00:00.0".to_owned(),
        host_bridge: host_bridge.to_owned(),
        bridges: bridges.iter().map(|b| (*b).to_owned()).collect(),
        numa_node: numa,
    }
}

#[test]
fn relations_follow_the_nvidia_smi_legend() {
    let rp = "0000:15:01.0";
    let up = "0000:16:00.0";
    let gpu = placed("pci0000:15", &[rp, up, "0000:17:01.0"], Some(0));
    let cases = [
        // Two downstream ports of one switch: a single switch between them.
        (
            placed("pci0000:15", &[rp, up, "0000:17:00.0"], Some(0)),
            Pix,
        ),
        // The same downstream port (same bus): no bridge between them.
        (
            placed("pci0000:15", &[rp, up, "0000:17:01.0"], Some(0)),
            Pix,
        ),
        // A second switch below another downstream port of the first.
        (
            placed(
                "pci0000:15",
                &[rp, up, "0000:17:02.0", "0000:19:00.0", "0000:1a:00.0"],
                Some(0),
            ),
            Pxb,
        ),
        // Another root port of the same host bridge.
        (placed("pci0000:15", &["0000:15:03.0"], Some(0)), Phb),
        // Another host bridge, same NUMA node; then another node; then unknown.
        (placed("pci0000:3d", &["0000:3d:01.0"], Some(0)), Node),
        (placed("pci0000:97", &["0000:97:01.0"], Some(1)), Sys),
        (placed("pci0000:97", &["0000:97:01.0"], None), NodeOrSys),
    ];
    for (nic, want) in cases {
        assert_eq!(pci_relation(&gpu, &nic), want, "{nic:?}");
        assert_eq!(pci_relation(&nic, &gpu), want, "symmetric: {nic:?}");
    }
    assert!(Pix < Pxb && Pxb < Phb && Phb < Node && Node < NodeOrSys && NodeOrSys < Sys);
    assert_eq!(NodeOrSys.label(), "NODE|SYS");
}

#[test]
fn an_unknown_numa_node_is_never_guessed() {
    let tree = SysTree::new();
    tree.gpu("pci0000:15/0000:15:01.0/0000:16:00.0", "-1");
    // No numa_node file at all (a kernel without CONFIG_NUMA).
    tree.pci_function(
        "pci0000:97/0000:97:01.0/0000:98:00.0",
        "0x15b3",
        "0x020000",
        None,
    );
    tree.rdma_device("mlx5_0", "pci0000:97/0000:97:01.0/0000:98:00.0");
    let topo = read_pci_topology(&tree.root()).expect("topology");
    assert_eq!(topo.gpus()[0].placement.numa_node, None);
    assert_eq!(topo.nics()[0].placement.numa_node, None);
    assert_eq!(topo.relation(0, 0), Some(NodeOrSys));
}

#[test]
fn only_nvidia_3d_and_vga_functions_are_gpus_and_soft_rdma_is_unplaced() {
    let tree = SysTree::new();
    tree.gpu("pci0000:15/0000:15:01.0/0000:16:00.0", "0");
    // An H100's sibling functions that are not GPUs: NVSwitch (bridge class), audio.
    tree.pci_function(
        "pci0000:15/0000:15:02.0/0000:17:00.0",
        "0x10de",
        "0x068000",
        Some("0"),
    );
    tree.pci_function(
        "pci0000:15/0000:15:01.0/0000:16:00.1",
        "0x10de",
        "0x040300",
        Some("0"),
    );
    tree.pci_function("pci0000:00/0000:00:02.0", "0x10de", "0x030000", Some("0"));
    // rxe0 has no PCI function: no `device` link.
    tree.dir("sys/class/infiniband/rxe0/ports/1");
    let topo = read_pci_topology(&tree.root()).expect("topology");
    let gpus: Vec<_> = topo
        .gpus()
        .iter()
        .map(|g| (g.placement.address.as_str(), g.class_code))
        .collect();
    assert_eq!(
        gpus,
        [("0000:00:02.0", 0x030000), ("0000:16:00.0", 0x030200)]
    );
    assert!(topo.nics().is_empty());
    assert_eq!(topo.unplaced_rdma(), ["rxe0"]);
    assert_eq!(topo.nearest_nics(0), None);
    assert_eq!(topo.gpus()[0].placement.bridges, Vec::<String>::new());
}

#[test]
fn an_empty_root_has_no_gpu_and_no_nic() {
    let topo = read_pci_topology(&SysTree::new().root()).expect("topology");
    assert_eq!(topo, PciTopology::default());
}

#[test]
fn a_hyper_v_host_bridge_below_vmbus_is_found() {
    // Azure GPU VMs: each passed-through device gets its own host bridge under VMBus.
    let tree = SysTree::new();
    let vmbus = "LNXSYSTM:00/LNXSYBUS:00/ACPI0004:00/VMBUS:00/00000001-0000";
    let dir = format!("sys/devices/{vmbus}/pci0001:00/0001:00:00.0");
    tree.attrs(
        &dir,
        &[
            ("vendor", "0x10de"),
            ("class", "0x030200"),
            ("numa_node", "0"),
        ],
    );
    tree.link("sys/bus/pci/devices/0001:00:00.0", &dir);
    let topo = read_pci_topology(&tree.root()).expect("topology");
    let gpu = &topo.gpus()[0].placement;
    assert_eq!(gpu.host_bridge_name(), "pci0001:00");
    assert!(gpu.host_bridge.starts_with("LNXSYSTM:00/"), "{gpu:?}");
    assert!(gpu.bridges.is_empty());
}

fn error_text(root: &SysRoot) -> String {
    let err = read_pci_topology(root).expect_err("an error");
    crate::error_chain(&err)
}

#[test]
fn malformed_or_unreadable_files_are_errors_naming_the_file() {
    let tree = SysTree::new();
    tree.gpu("pci0000:15/0000:15:01.0/0000:16:00.0", "zero");
    let text = error_text(&tree.root());
    assert!(
        text.contains("0000:16:00.0/numa_node") && text.contains("\"zero\""),
        "{text}"
    );

    let tree = SysTree::new();
    tree.gpu("pci0000:15/0000:15:01.0/0000:16:00.0", "0");
    tree.attr(
        "sys/devices/pci0000:15/0000:15:01.0/0000:16:00.0/class",
        "3D controller",
    );
    let text = error_text(&tree.root());
    assert!(
        text.contains("0000:16:00.0/class") && text.contains("hexadecimal"),
        "{text}"
    );

    let tree = SysTree::new();
    tree.gpu("pci0000:15/0000:15:01.0/0000:16:00.0", "0");
    let vendor = tree.path("sys/devices/pci0000:15/0000:15:01.0/vendor");
    fs::remove_file(&vendor).expect("rm");
    fs::create_dir(&vendor).expect("a directory where the file should be");
    let text = error_text(&tree.root());
    assert!(
        text.contains("cannot read") && text.contains("0000:15:01.0/vendor"),
        "{text}"
    );
}

#[test]
fn a_gpu_outside_any_pci_hierarchy_is_an_error_naming_its_link() {
    let tree = SysTree::new();
    // A copied tree where the entry is a plain directory instead of a link into
    // sys/devices: its place on PCIe is unknowable.
    tree.attrs(
        "sys/bus/pci/devices/0000:16:00.0",
        &[("vendor", "0x10de"), ("class", "0x030200")],
    );
    let text = error_text(&tree.root());
    assert!(
        text.contains("bus/pci/devices/0000:16:00.0") && text.contains("not under sys/devices"),
        "{text}"
    );

    let tree = SysTree::new();
    let gpu = "sys/devices/platform/gpu0/0000:16:00.0";
    tree.attrs(gpu, &[("vendor", "0x10de"), ("class", "0x030200")]);
    tree.link("sys/bus/pci/devices/0000:16:00.0", gpu);
    let text = error_text(&tree.root());
    assert!(text.contains("no PCI host bridge"), "{text}");
}

#[test]
fn a_dangling_rdma_device_link_is_an_error_naming_it() {
    let tree = SysTree::new();
    tree.link(
        "sys/class/infiniband/mlx5_0/device",
        "sys/devices/pci0000:15/0000:15:01.0",
    );
    let text = error_text(&tree.root());
    assert!(text.contains("mlx5_0/device"), "{text}");
}
