use std::fs;
use std::os::unix::fs::symlink;

use super::*;

const VOLUME: &str = "volumes/r0n1";
const UUID: &str = "3f2504e0-4f89-11d3-9a0c-0305e82c3301";
const OTHER_UUID: &str = "11111111-2222-3333-4444-555555555555";
const NGUID: &str = "0a1b2c3d4e5f60718293a4b5c6d7e8f9";

fn wire(uuid: &str, nguid: &str, source: &str) -> v1::DiskIdentity {
    v1::DiskIdentity {
        uuid: uuid.to_owned(),
        nguid: nguid.to_owned(),
        eui64: String::new(),
        source: source.to_owned(),
        host_pci_functions: Vec::new(),
    }
}

fn volume(identities: Vec<v1::DiskIdentity>) -> v1::Volume {
    v1::Volume {
        name: VOLUME.to_owned(),
        host_identities: identities,
        ..v1::Volume::default()
    }
}

fn wanted(identities: Vec<v1::DiskIdentity>) -> Vec<VolumeIdentity> {
    volume_identities(&volume(identities)).expect("identities")
}

/// A real block device node of this machine, or a reason to skip (never under
/// `DPU_TESTS_STRICT=1`).
fn some_block_device() -> Option<(PathBuf, (u32, u32))> {
    let found = ["/dev/loop0", "/dev/vda", "/dev/sda", "/dev/nvme0n1"]
        .into_iter()
        .find_map(|d| {
            block_dev_number(Path::new(d))
                .ok()
                .map(|n| (PathBuf::from(d), n))
        });
    if found.is_none() {
        assert!(
            std::env::var("DPU_TESTS_STRICT").as_deref() != Ok("1"),
            "no block device node on this machine (DPU_TESTS_STRICT=1)"
        );
        eprintln!("SKIPPED: no block device node on this machine");
    }
    found
}

/// A sys root where the device numbered `dev` is disk `name` with `attrs`.
fn root_with_disk(
    dev: (u32, u32),
    name: &str,
    attrs: &[(&str, &str)],
) -> (tempfile::TempDir, SysRoot) {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path().join("sys/block").join(name);
    fs::create_dir_all(&dir).expect("disk");
    fs::write(dir.join("dev"), format!("{}:{}\n", dev.0, dev.1)).expect("dev");
    for (attr, value) in attrs {
        fs::write(dir.join(attr), format!("{value}\n")).expect("attribute");
    }
    fs::create_dir_all(tmp.path().join("sys/dev/block")).expect("dev/block");
    symlink(
        format!("../../block/{name}"),
        tmp.path()
            .join(format!("sys/dev/block/{}:{}", dev.0, dev.1)),
    )
    .expect("link");
    let root = SysRoot::new(tmp.path());
    (tmp, root)
}

#[test]
fn a_volume_without_an_identity_binds_nothing() {
    let err = volume_identities(&volume(Vec::new())).expect_err("no identity");
    assert!(
        matches!(err, BindError::VolumeWithoutIdentity { .. }),
        "{err}"
    );
    // Empty identities are none either.
    let err = volume_identities(&volume(vec![wire("", "", "disk /dev/nvme0n1")]))
        .expect_err("empty identity");
    assert!(
        matches!(err, BindError::VolumeWithoutIdentity { .. }),
        "{err}"
    );
    let err =
        volume_identities(&volume(vec![wire("xyz", "", "namespace n")])).expect_err("malformed");
    assert!(err.to_string().contains("namespace n"), "{err}");
}

#[test]
fn a_regular_file_is_refused_naming_it() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let file = tmp.path().join("device.bin");
    fs::write(&file, b"data").expect("file");
    let err = bind_device(
        &SysRoot::new(tmp.path()),
        &file,
        VOLUME,
        &wanted(vec![wire(UUID, "", "disk /dev/nvme0n1")]),
    )
    .expect_err("a regular file is no disk");
    let text = dpu_probe::error_chain(&err);
    assert!(
        text.contains("device.bin") && text.contains("a regular file") && text.contains(VOLUME),
        "{text}"
    );
}

#[test]
fn the_device_is_bound_when_an_identity_agrees() {
    let Some((device, dev)) = some_block_device() else {
        return;
    };
    let (_tmp, root) = root_with_disk(dev, "nvme0n1", &[("uuid", UUID)]);
    let want = wanted(vec![
        // The volume's own disk on the DPU differs: the host sees the emulated namespace.
        wire(OTHER_UUID, "", "disk /dev/nvme1n1 on the agent's machine"),
        wire(UUID, NGUID, "namespace subsystems/nqn.x/namespaces/1"),
    ]);
    let binding = bind_device(&root, &device, VOLUME, &want).expect("bound");
    assert_eq!(binding.agreed_on, ["uuid"]);
    assert_eq!(
        binding.matched.source,
        "namespace subsystems/nqn.x/namespaces/1"
    );
    assert_eq!(binding.disk.name, "nvme0n1");
    let note = binding.note(VOLUME);
    assert!(note.contains("uuid agree") && note.contains(UUID), "{note}");
}

#[test]
fn another_namespace_is_refused_naming_both_identities() {
    let Some((device, dev)) = some_block_device() else {
        return;
    };
    let (_tmp, root) = root_with_disk(dev, "nvme1n1", &[("uuid", OTHER_UUID)]);
    let err = bind_device(
        &root,
        &device,
        VOLUME,
        &wanted(vec![wire(
            UUID,
            "",
            "disk /dev/nvme0n1 on the agent's machine",
        )]),
    )
    .expect_err("another namespace");
    let text = err.to_string();
    assert!(
        matches!(err, BindError::Mismatch { field: "uuid", .. }),
        "{text}"
    );
    assert!(
        text.contains(UUID) && text.contains(OTHER_UUID) && text.contains("nvme1n1"),
        "both identities are named: {text}"
    );
}

#[test]
fn a_disk_without_identity_or_without_a_shared_kind_is_refused() {
    let Some((device, dev)) = some_block_device() else {
        return;
    };
    let want = wanted(vec![wire(UUID, "", "namespace n")]);
    let (_tmp, root) = root_with_disk(dev, "loop0", &[]);
    let err = bind_device(&root, &device, VOLUME, &want).expect_err("no identity");
    assert!(matches!(err, BindError::NoIdentity { .. }), "{err}");
    let (_tmp, root) = root_with_disk(dev, "nvme0n1", &[("nguid", NGUID)]);
    let err = bind_device(&root, &device, VOLUME, &want).expect_err("nothing shared");
    assert!(matches!(err, BindError::Unrelated { .. }), "{err}");
}

#[test]
fn without_a_device_the_one_disk_carrying_the_identity_is_found() {
    let want = wanted(vec![wire(
        UUID,
        "",
        "disk /dev/nvme0n1 on the agent's machine",
    )]);
    // None carries it: a clear error naming the identity.
    let empty = tempfile::tempdir().expect("tempdir");
    let err = find_device(&SysRoot::new(empty.path()), VOLUME, &want).expect_err("none");
    assert!(
        matches!(err, BindError::NotFound { .. }) && err.to_string().contains(UUID),
        "{err}"
    );
    // What to do is the device parameter, named as a field (dpuctl says `--device`).
    let said = dpu_probe::error_chain(&err);
    assert!(
        said.ends_with("running? Pass the disk with device"),
        "{said}"
    );
    assert!(!said.contains("--"), "{said}");
    // The disk carries it but /dev has no node of that name: refused, not guessed.
    let (_tmp, root) = root_with_disk((259, 77), "nvme77n1", &[("uuid", UUID)]);
    let err = find_device(&root, VOLUME, &want).expect_err("no node");
    assert!(matches!(err, BindError::NoNode { .. }), "{err}");
    // Two heads with one identity (a host that connected the same namespace twice).
    let (tmp, root) = root_with_disk((259, 0), "nvme0n1", &[("uuid", UUID)]);
    let second = tmp.path().join("sys/block/nvme1n1");
    fs::create_dir_all(&second).expect("second disk");
    fs::write(second.join("uuid"), UUID).expect("uuid");
    fs::write(second.join("dev"), "259:1").expect("dev");
    let err = find_device(&root, VOLUME, &want).expect_err("several");
    assert!(
        matches!(err, BindError::Several { .. }) && err.to_string().contains("nvme0n1, nvme1n1"),
        "{err}"
    );
    let said = dpu_probe::error_chain(&err);
    assert!(
        said.ends_with("(nvme0n1, nvme1n1): pass one with device"),
        "{said}"
    );
    // A real node whose numbers are the disk's: bound.
    let Some((device, dev)) = some_block_device() else {
        return;
    };
    let name = device.file_name().and_then(|n| n.to_str()).expect("name");
    let (_tmp, root) = root_with_disk(dev, name, &[("uuid", UUID)]);
    let binding = find_device(&root, VOLUME, &want).expect("found");
    assert_eq!(binding.device, device);
}

/// The emulated namespace's identity with the host PCI function of its controller.
fn placed(functions: &[&str]) -> v1::DiskIdentity {
    v1::DiskIdentity {
        host_pci_functions: functions.iter().map(|f| (*f).to_owned()).collect(),
        ..wire(UUID, "", "namespace subsystems/nqn.x/namespaces/1")
    }
}

/// Makes disk `name` under `root`'s tree an NVMe disk on controller `nvme9`, whose
/// `device` link names `function` (a PCI address, or `ctl` for a fabrics controller).
fn reached_through(root: &SysRoot, name: &str, function: &str) {
    let controller = root.sys("devices/nvme9");
    fs::create_dir_all(&controller).expect("controller");
    symlink(format!("../../{function}"), controller.join("device")).expect("device link");
    symlink(&controller, root.sys("block").join(name).join("device")).expect("link");
}

/// The same identity reached another way (the host's own NVMe/TCP connection to a target
/// that exports the namespace with the identity the emulation passes on, or another PCI
/// function) is refused, naming both; through the emulated controller's function it binds
/// and the note says so.
#[test]
fn the_same_identity_on_another_path_than_the_emulated_controller_is_refused() {
    let Some((device, dev)) = some_block_device() else {
        return;
    };
    let want = wanted(vec![placed(&["0000:3B:00.2"])]);
    assert_eq!(want[0].host_pci_functions, ["0000:3b:00.2"], "normalised");

    let (_tmp, root) = root_with_disk(dev, "nvme0n1", &[("uuid", UUID)]);
    reached_through(&root, "nvme0n1", "0000:3b:00.2");
    let binding = bind_device(&root, &device, VOLUME, &want).expect("bound");
    assert_eq!(binding.pci_function.as_deref(), Some("0000:3b:00.2"));
    let note = binding.note(VOLUME);
    assert!(
        note.ends_with("on the emulated controller's PCI function 0000:3b:00.2"),
        "{note}"
    );

    let (_tmp, root) = root_with_disk(dev, "nvme1n1", &[("uuid", UUID)]);
    reached_through(&root, "nvme1n1", "ctl");
    let err = bind_device(&root, &device, VOLUME, &want).expect_err("over a fabric");
    let text = err.to_string();
    assert!(matches!(err, BindError::OtherPath { .. }), "{text}");
    assert!(
        text.contains("no PCI function (NVMe over a fabric") && text.contains("0000:3b:00.2"),
        "{text}"
    );

    let (_tmp, root) = root_with_disk(dev, "nvme2n1", &[("uuid", UUID)]);
    reached_through(&root, "nvme2n1", "0000:5e:00.0");
    let err = bind_device(&root, &device, VOLUME, &want).expect_err("another function");
    let text = err.to_string();
    assert!(
        text.contains("PCI function 0000:5e:00.0") && text.contains("not the emulated"),
        "{text}"
    );

    // Control: an identity without functions (the agent does not know where the host
    // sees the controller) binds by identity alone, as before.
    let unplaced = wanted(vec![placed(&[])]);
    let binding = bind_device(&root, &device, VOLUME, &unplaced).expect("bound");
    assert_eq!(binding.pci_function, None);
}

#[test]
fn a_malformed_pci_function_from_the_agent_is_refused() {
    let err =
        volume_identities(&volume(vec![placed(&["3b:00.2; rm"])])).expect_err("not a PCI address");
    assert!(
        matches!(err, BindError::BadAgentPciFunction { .. }),
        "{err}"
    );
    assert!(err.to_string().contains("3b:00.2; rm"), "{err}");
}
