use super::*;
use crate::testing::SysTree;

/// Writes a function under `sys/devices/pci0000:3a/{bdf}` and links it from
/// `sys/bus/pci/devices`, the way the kernel lays it out. Returns its directory.
fn function(tree: &SysTree, bdf: &str, attrs: &[(&str, &str)]) -> String {
    let dir = format!("sys/devices/pci0000:3a/{bdf}");
    tree.attrs(&dir, attrs);
    tree.link(&format!("sys/bus/pci/devices/{bdf}"), &dir);
    dir
}

fn bf3(width: &str) -> Vec<(&str, &str)> {
    vec![
        ("vendor", "0x15b3"),
        ("device", "0xa2dc"),
        ("subsystem_vendor", "0x15b3"),
        ("subsystem_device", "0x0051"),
        ("class", "0x020000"),
        ("numa_node", "0"),
        ("current_link_speed", "32.0 GT/s PCIe"),
        ("current_link_width", width),
        ("max_link_speed", "32.0 GT/s PCIe"),
        ("max_link_width", "16"),
    ]
}

fn host_tree() -> (SysTree, SysRoot) {
    let tree = SysTree::new();
    let pf0 = function(&tree, "0000:3b:00.0", &bf3("16"));
    function(&tree, "0000:3b:00.1", &bf3("8"));
    function(
        &tree,
        "0000:3b:00.2",
        &[
            ("vendor", "0x15b3"),
            ("device", "0xc2d5"),
            ("class", "0x080100"),
            ("numa_node", "-1"),
        ],
    );
    function(
        &tree,
        "0000:3d:00.0",
        &[
            ("vendor", "0x15b3"),
            ("device", "0x6001"),
            ("class", "0x010802"),
        ],
    );
    function(
        &tree,
        "0000:01:00.0",
        &[
            ("vendor", "0x8086"),
            ("device", "0x1521"),
            ("class", "0x020000"),
        ],
    );
    function(
        &tree,
        "0000:5e:00.0",
        &[
            ("vendor", "0x15b3"),
            ("device", "0x1021"),
            ("class", "0x020000"),
        ],
    );
    // Driver, netdev and RDMA device of the first PF.
    let driver = "sys/bus/pci/drivers/mlx5_core";
    tree.dir(driver);
    tree.link(&format!("{pf0}/driver"), driver);
    tree.dir(&format!("{pf0}/net/ens1f0np0"));
    tree.attr(&format!("{pf0}/infiniband/mlx5_0/fw_ver"), "32.41.1000");
    let root = tree.root();
    (tree, root)
}

#[test]
fn classifies_the_reference_id_table() {
    use BlueFieldGeneration::*;
    use PciFunctionKind::*;
    let m = MELLANOX_VENDOR_ID;
    for (vendor, device, class, kind, generation) in [
        (m, 0xa2d2, None, BlueFieldNic, Some(BlueField1)),
        (m, 0xa2d6, None, BlueFieldNic, Some(BlueField2)),
        (m, 0xa2d9, None, BlueFieldNic, Some(BlueField3Lx)),
        (m, 0xa2dc, None, BlueFieldNic, Some(BlueField3)),
        (m, 0xa2df, None, BlueFieldNic, Some(BlueField4)),
        (m, 0xa2d3, None, BlueFieldVf, None),
        (m, 0xa2db, Some(0x060400), Soc, Some(BlueField3)),
        (m, 0xc2d3, None, Rshim, Some(BlueField2)),
        (m, 0xc2d5, Some(0x080100), Rshim, Some(BlueField3)),
        (m, 0xc2d6, None, Rshim, Some(BlueField4)),
        (m, 0xc2d1, None, AuxChannel, None),
        (m, 0x021c, None, FlashRecovery, Some(BlueField3)),
        (m, 0x6001, Some(0x010802), SnapNvme, None),
        (m, 0x1234, Some(0x010802), SnapNvme, None),
        (m, 0x1021, Some(0x020000), ConnectX, None),
        (m, 0x1017, Some(0x020000), OtherMellanox, None),
        (VIRTIO_VENDOR_ID, 0x1041, None, VirtioNet, None),
        (VIRTIO_VENDOR_ID, 0x1042, None, VirtioBlk, None),
        (VIRTIO_VENDOR_ID, 0x1000, None, Other, None),
        (0x8086, 0x6001, Some(0x010802), Other, None),
    ] {
        assert_eq!(
            classify(vendor, device, class),
            (kind, generation),
            "{vendor:04x}:{device:04x}"
        );
    }
    assert!(SnapNvme.is_bluefield_related());
    assert!(!ConnectX.is_bluefield_related());
    assert_eq!(BlueField3.name(), "BlueField-3");
}

#[test]
fn link_speed_and_width_parse_old_and_new_kernel_formats() {
    assert_eq!(parse_link_speed("16.0 GT/s PCIe"), Some(16.0));
    assert_eq!(parse_link_speed("16 GT/s"), Some(16.0));
    assert_eq!(parse_link_speed("2.5 GT/s PCIe"), Some(2.5));
    assert_eq!(parse_link_speed("Unknown"), None);
    assert_eq!(parse_link_speed("Unknown speed"), None);
    assert_eq!(parse_link_speed(""), None);
    assert_eq!(parse_link_speed("NaN GT/s"), None);
    assert_eq!(parse_link_width("16"), Some(16));
    assert_eq!(parse_link_width("x8"), Some(8));
    assert_eq!(parse_link_width("0"), None);
    assert_eq!(parse_link_width("wide"), None);
}

#[test]
fn lists_bluefield_functions_with_details_and_flags_the_narrow_link() {
    let (_dir, root) = host_tree();
    let functions = list_pci_functions(&root, PciFilter::BlueField).expect("list");
    let addresses: Vec<_> = functions.iter().map(|f| f.address.as_str()).collect();
    assert_eq!(
        addresses,
        [
            "0000:3b:00.0",
            "0000:3b:00.1",
            "0000:3b:00.2",
            "0000:3d:00.0"
        ]
    );

    let pf0 = &functions[0];
    assert_eq!(pf0.kind, PciFunctionKind::BlueFieldNic);
    assert_eq!(pf0.model(), Some("BlueField-3"));
    assert_eq!((pf0.vendor_id, pf0.device_id), (Some(0x15b3), Some(0xa2dc)));
    assert_eq!(pf0.subsystem_device_id, Some(0x0051));
    assert_eq!(pf0.class_code, Some(0x020000));
    assert_eq!(pf0.driver.as_deref(), Some("mlx5_core"));
    assert_eq!(pf0.numa_node, Some(0));
    assert_eq!(pf0.current_link.width, Some(16));
    assert_eq!(pf0.max_link.speed_gts, Some(32.0));
    assert_eq!(pf0.link_degraded(), Some(false));
    assert_eq!(pf0.link_finding(), None);
    assert_eq!(pf0.netdevs, ["ens1f0np0"]);
    assert_eq!(pf0.rdma_devices, ["mlx5_0"]);
    assert_eq!(pf0.firmware_version.as_deref(), Some("32.41.1000"));
    assert_eq!(pf0.slot(), "0000:3b:00");

    let pf1 = &functions[1];
    assert_eq!(pf1.link_degraded(), Some(true));
    let finding = pf1.link_finding().expect("finding");
    assert!(finding.contains("x8 of x16"), "{finding}");
    assert!(finding.contains("about 50%"), "{finding}");
    assert_eq!(pf1.driver, None, "unbound");
    assert!(pf1.netdevs.is_empty() && pf1.firmware_version.is_none());

    let rshim = &functions[2];
    assert_eq!(rshim.kind, PciFunctionKind::Rshim);
    assert_eq!(rshim.numa_node, None, "-1 means no NUMA information");
    assert_eq!(rshim.link_degraded(), None, "no link files");
    assert!(!rshim.current_link.is_known());
    assert_eq!(rshim.slot(), pf0.slot(), "same card");

    assert_eq!(functions[3].kind, PciFunctionKind::SnapNvme);

    let mellanox = list_pci_functions(&root, PciFilter::Mellanox).expect("list");
    assert_eq!(mellanox.len(), 5, "plus the ConnectX-7");
    assert_eq!(mellanox[4].kind, PciFunctionKind::ConnectX);
    let all = list_pci_functions(&root, PciFilter::All).expect("list");
    assert_eq!(all.len(), 6);
    assert_eq!(all[0].address, "0000:01:00.0");
}

#[test]
fn garbage_and_absent_files_never_fail_the_listing() {
    let tree = SysTree::new();
    let root = tree.root();
    assert!(list_pci_functions(&root, PciFilter::All)
        .expect("no bus dir")
        .is_empty());
    function(
        &tree,
        "0000:00:01.0",
        &[
            ("vendor", "banana"),
            ("class", "0xzz"),
            ("numa_node", "many"),
            ("current_link_speed", "Unknown"),
            ("current_link_width", "0"),
        ],
    );
    function(&tree, "0000:00:02.0", &[]);
    // Not a function address: ignored.
    tree.dir("sys/bus/pci/devices/readme");
    let all = list_pci_functions(&root, PciFilter::All).expect("list");
    assert_eq!(all.len(), 2);
    for f in &all {
        assert_eq!(f.kind, PciFunctionKind::Other);
        assert_eq!((f.vendor_id, f.class_code, f.numa_node), (None, None, None));
        assert_eq!(f.link_degraded(), None);
    }
    assert!(list_pci_functions(&root, PciFilter::BlueField)
        .expect("list")
        .is_empty());
}

#[test]
fn reads_one_function_and_reports_absent_ones() {
    let (_dir, root) = host_tree();
    let rshim = read_pci_function(&root, "0000:3b:00.2").expect("rshim");
    assert_eq!(rshim.generation, Some(BlueFieldGeneration::BlueField3));
    for missing in ["0000:99:00.0", "../../etc"] {
        let err = read_pci_function(&root, missing).expect_err("absent");
        assert!(matches!(err, ProbeError::NotFound { .. }), "{err}");
    }
}

#[test]
fn rdma_device_is_found_through_the_class_link_when_the_function_lacks_infiniband() {
    let (tree, root) = host_tree();
    tree.attr("sys/class/infiniband/mlx5_1/fw_ver", "32.41.1000");
    tree.link(
        "sys/class/infiniband/mlx5_1/device",
        "sys/devices/pci0000:3a/0000:3b:00.1",
    );
    let f = read_pci_function(&root, "0000:3b:00.1").expect("pf1");
    assert_eq!(f.rdma_devices, ["mlx5_1"]);
    assert_eq!(f.firmware_version.as_deref(), Some("32.41.1000"));
}

#[test]
fn speed_only_downgrade_is_degraded_too() {
    let f = PciFunction {
        current_link: PcieLink {
            speed_gts: Some(16.0),
            width: None,
        },
        max_link: PcieLink {
            speed_gts: Some(32.0),
            width: Some(16),
        },
        ..PciFunction::default()
    };
    assert_eq!(f.link_degraded(), Some(true));
    let finding = f.link_finding().expect("finding");
    assert!(finding.contains("16.0 of 32.0 GT/s"), "{finding}");
    assert!(
        !finding.contains('%'),
        "no bandwidth estimate without widths"
    );
}
