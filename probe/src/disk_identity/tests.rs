use std::os::unix::fs::symlink;

use super::*;

const UUID: &str = "3f2504e0-4f89-11d3-9a0c-0305e82c3301";
const NGUID_DASHED: &str = "0a1b2c3d-4e5f-6071-8293-a4b5c6d7e8f9";
const NGUID: &str = "0a1b2c3d4e5f60718293a4b5c6d7e8f9";

fn disk(root: &Path, name: &str, attrs: &[(&str, &str)]) -> PathBuf {
    let dir = root.join("sys/block").join(name);
    fs::create_dir_all(&dir).expect("disk dir");
    for (attr, value) in attrs {
        fs::write(dir.join(attr), format!("{value}\n")).expect("attribute");
    }
    dir
}

#[test]
fn identifiers_are_read_in_the_kernels_formats_and_normalised() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = disk(
        tmp.path(),
        "nvme0n1",
        &[
            ("uuid", "3F2504E0-4F89-11D3-9A0C-0305E82C3301"),
            ("nguid", NGUID_DASHED),
            ("eui", "00 11 22 33 44 55 66 77"),
        ],
    );
    let id = NamespaceIdentity::read(&dir).expect("identity");
    assert_eq!(id.uuid.as_deref(), Some(UUID));
    assert_eq!(id.nguid.as_deref(), Some(NGUID));
    assert_eq!(id.eui64.as_deref(), Some("0011223344556677"));
    assert_eq!(
        id.to_string(),
        format!("uuid {UUID}, nguid {NGUID}, eui64 0011223344556677")
    );
}

#[test]
fn a_uuid_that_repeats_the_nguid_binds_only_to_those_digits() {
    // uuid_show prints the NGUID when the namespace has no UUID, and SPDK's default NGUID
    // is the bdev's UUID: a disk showing one value in both files agrees with an identity
    // that names either, and with nothing else.
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = disk(
        tmp.path(),
        "nvme0n1",
        &[("uuid", NGUID_DASHED), ("nguid", NGUID_DASHED)],
    );
    let disk_id = NamespaceIdentity::read(&dir).expect("identity");
    let only_nguid = NamespaceIdentity::from_parts(None, Some(NGUID), None).expect("nguid");
    assert_eq!(
        disk_id.agreement(&only_nguid),
        Agreement::Same(vec!["nguid"])
    );
    let same_uuid = NamespaceIdentity::from_parts(Some(NGUID), None, None).expect("uuid");
    assert_eq!(disk_id.agreement(&same_uuid), Agreement::Same(vec!["uuid"]));
    // An agent that configured another UUID is told the disk does not report it.
    let other = NamespaceIdentity::from_parts(Some(UUID), Some(NGUID), None).expect("both");
    assert_eq!(disk_id.agreement(&other), Agreement::Differ("uuid"));
}

#[test]
fn zeros_and_absent_files_are_no_identifier_and_garbage_is_an_error() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let loop_dir = disk(tmp.path(), "loop0", &[("size", "2048")]);
    assert!(NamespaceIdentity::read(&loop_dir).expect("loop").is_empty());
    let zero = disk(
        tmp.path(),
        "nvme1n1",
        &[("uuid", "00000000-0000-0000-0000-000000000000")],
    );
    assert!(NamespaceIdentity::read(&zero).expect("zeros").is_empty());
    let bad = disk(tmp.path(), "nvme2n1", &[("uuid", "not-a-uuid")]);
    let err = NamespaceIdentity::read(&bad).expect_err("garbage");
    assert!(err.to_string().contains("nvme2n1/uuid"), "{err}");
}

#[test]
fn agreement_needs_a_shared_identifier_and_no_disagreeing_one() {
    let id = |u: Option<&str>, n: Option<&str>| {
        NamespaceIdentity::from_parts(u, n, None).expect("identity")
    };
    let full = id(Some(UUID), Some(NGUID));
    assert_eq!(
        full.agreement(&id(Some(UUID), Some(NGUID_DASHED))),
        Agreement::Same(vec!["uuid", "nguid"])
    );
    assert_eq!(
        full.agreement(&id(Some(UUID), None)),
        Agreement::Same(vec!["uuid"])
    );
    // Same UUID, different NGUID: two namespaces, whatever the UUID says.
    assert_eq!(
        full.agreement(&id(Some(UUID), Some("ffffffffffffffffffffffffffffffff"))),
        Agreement::Differ("nguid")
    );
    assert_eq!(
        id(Some(UUID), None).agreement(&id(None, Some(NGUID))),
        Agreement::Unrelated
    );
    assert_eq!(
        NamespaceIdentity::default().agreement(&full),
        Agreement::Unrelated
    );
    let err = NamespaceIdentity::from_parts(None, Some("12"), None).expect_err("short");
    assert_eq!(err.field, "nguid");
}

#[test]
fn a_regular_file_is_not_a_block_device() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let file = tmp.path().join("device.bin");
    fs::write(&file, b"data").expect("file");
    let root = SysRoot::new(tmp.path());
    match block_disk(&root, &file) {
        Err(DeviceError::NotBlock { kind, .. }) => assert_eq!(kind, "a regular file"),
        other => panic!("a regular file was taken for a disk: {other:?}"),
    }
    match block_disk(&root, tmp.path()) {
        Err(DeviceError::NotBlock { kind, .. }) => assert_eq!(kind, "a directory"),
        other => panic!("a directory was taken for a disk: {other:?}"),
    }
    match block_disk(&root, Path::new("/dev/null")) {
        Err(DeviceError::NotBlock { kind, .. }) => assert_eq!(kind, "a character device"),
        other => panic!("/dev/null was taken for a disk: {other:?}"),
    }
    assert!(matches!(
        block_disk(&root, &tmp.path().join("absent")),
        Err(DeviceError::Missing { .. })
    ));
}

#[test]
fn disks_are_found_by_identity_leaving_out_paths_and_hidden_disks() {
    let tmp = tempfile::tempdir().expect("tempdir");
    disk(tmp.path(), "nvme0n1", &[("uuid", UUID), ("dev", "259:0")]);
    disk(tmp.path(), "nvme0c0n1", &[("uuid", UUID), ("dev", "259:1")]);
    disk(
        tmp.path(),
        "nvme9n1",
        &[("uuid", UUID), ("dev", "259:9"), ("hidden", "1")],
    );
    disk(
        tmp.path(),
        "nvme1n1",
        &[
            ("uuid", "11111111-2222-3333-4444-555555555555"),
            ("dev", "259:2"),
        ],
    );
    disk(tmp.path(), "loop0", &[("dev", "7:0")]);
    let root = SysRoot::new(tmp.path());
    let wanted = NamespaceIdentity::from_parts(Some(UUID), None, None).expect("identity");
    let found = disks_with_identity(&root, &wanted).expect("scan");
    let names: Vec<&str> = found.iter().map(|d| d.name.as_str()).collect();
    assert_eq!(names, ["nvme0n1"]);
    assert_eq!(found[0].dev, (259, 0));
    // Nothing carries an identity nobody has.
    let nobody = NamespaceIdentity::from_parts(None, Some(NGUID), None).expect("identity");
    assert!(disks_with_identity(&root, &nobody)
        .expect("scan")
        .is_empty());
}

/// Needs a real block device node (any); the sysfs side is a fixture linked like the
/// kernel's `/sys/dev/block/<major>:<minor>`.
#[test]
fn a_partition_is_bound_through_its_disk() {
    let Some((device, (major, minor))) = ["/dev/loop0", "/dev/vda", "/dev/sda", "/dev/nvme0n1"]
        .into_iter()
        .find_map(|d| block_dev_number(Path::new(d)).ok().map(|n| (d, n)))
    else {
        assert!(
            std::env::var("DPU_TESTS_STRICT").as_deref() != Ok("1"),
            "no block device node on this machine (DPU_TESTS_STRICT=1)"
        );
        eprintln!("SKIPPED: no block device node on this machine");
        return;
    };
    let tmp = tempfile::tempdir().expect("tempdir");
    let disk_dir = disk(tmp.path(), "nvme0n1", &[("uuid", UUID), ("dev", "259:0")]);
    let part = disk_dir.join("nvme0n1p1");
    fs::create_dir_all(&part).expect("partition dir");
    fs::write(part.join("partition"), "1\n").expect("partition attr");
    fs::create_dir_all(tmp.path().join("sys/dev/block")).expect("dev/block");
    symlink(
        "../../block/nvme0n1/nvme0n1p1",
        tmp.path().join(format!("sys/dev/block/{major}:{minor}")),
    )
    .expect("link");
    let found = block_disk(&SysRoot::new(tmp.path()), Path::new(device)).expect("disk");
    assert_eq!(found.name, "nvme0n1");
    assert_eq!(found.partition.as_deref(), Some("nvme0n1p1"));
    assert_eq!(found.dev, (259, 0));
    assert_eq!(found.identity.uuid.as_deref(), Some(UUID));
    // Without its sysfs directory the device is not resolved to anything.
    let empty = tempfile::tempdir().expect("tempdir");
    assert!(matches!(
        block_disk(&SysRoot::new(empty.path()), Path::new(device)),
        Err(DeviceError::NoSysfs { .. })
    ));
}

/// A controller directory at `at` whose `device` link names `function`.
fn controller(at: &Path, function: &str) {
    fs::create_dir_all(at).expect("controller dir");
    symlink(format!("../../../{function}"), at.join("device")).expect("device link");
}

#[test]
fn a_disk_is_reached_through_its_controllers_pci_functions_or_none_over_a_fabric() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let sys = tmp.path().join("sys");
    let devices = sys.join("devices");
    // A PCI NVMe disk: block/nvme0n1/device is the controller, its device the function.
    let nvme0 = devices.join("pci0000:00/0000:3b:00.2/nvme/nvme0");
    controller(&nvme0, "0000:3b:00.2");
    disk(tmp.path(), "nvme0n1", &[]);
    symlink(&nvme0, sys.join("block/nvme0n1/device")).expect("link");
    // A native-multipath head: its device is the subsystem, which links every controller.
    let subsys = devices.join("virtual/nvme-subsystem/nvme-subsys1");
    fs::create_dir_all(&subsys).expect("subsystem");
    for (n, function) in [(1, "0000:af:00.2"), (2, "0000:5e:00.2")] {
        let at = devices.join(format!("pci0000:00/{function}/nvme/nvme{n}"));
        controller(&at, function);
        symlink(&at, subsys.join(format!("nvme{n}"))).expect("subsystem link");
    }
    fs::write(subsys.join("subsysnqn"), "nqn.x\n").expect("attribute");
    disk(tmp.path(), "nvme1n1", &[]);
    symlink(&subsys, sys.join("block/nvme1n1/device")).expect("link");
    // NVMe over a fabric: the controller's device is the fabrics `ctl`, no PCI function.
    let fabric = devices.join("virtual/nvme-fabrics/ctl/nvme3");
    fs::create_dir_all(&fabric).expect("fabric controller");
    symlink("../../ctl", fabric.join("device")).expect("ctl link");
    disk(tmp.path(), "nvme3n1", &[]);
    symlink(&fabric, sys.join("block/nvme3n1/device")).expect("link");
    disk(tmp.path(), "loop0", &[]);

    let root = SysRoot::new(tmp.path());
    assert_eq!(disk_pci_functions(&root, "nvme0n1"), ["0000:3b:00.2"]);
    assert_eq!(
        disk_pci_functions(&root, "nvme1n1"),
        ["0000:5e:00.2", "0000:af:00.2"]
    );
    assert!(disk_pci_functions(&root, "nvme3n1").is_empty());
    assert!(disk_pci_functions(&root, "loop0").is_empty());
    assert!(disk_pci_functions(&root, "nosuch").is_empty());
}
