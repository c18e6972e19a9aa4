//! `prove storage` binds its device to the volume by NVMe namespace identity before it
//! counts anything (issue 31, scenario 1): a regular file, or a disk that is another
//! namespace, is refused with exit 2 naming both sides, even while the volume's counters
//! would move; without `--device` the one disk carrying the volume's identity is found.
//!
//! The disks are loop devices (real block devices, read with O_DIRECT) whose identity the
//! test writes into its `--sys-root` tree, as the kernel shows it under `/sys/block`.

use dpu_tests::command::{describe, stdout_json as json};
use dpu_tests::harness::dpuctl;
use dpu_tests::skip;

use crate::host_session::{
    disk_tempdir, emulated_loop, expose_volume, expose_volume_on, host_root_with_netdev_stats,
    identified_loop, place_on_function, volume_host_uuid,
};
use crate::Lab;

const OTHER_UUID: &str = "11111111-2222-3333-4444-555555555555";

fn prove(endpoint: &str, sys_root: &str, device: Option<&str>) -> std::process::Output {
    let mut args = vec![
        "--agent",
        endpoint,
        "--sys-root",
        sys_root,
        "-o",
        "json",
        "prove",
        "storage",
        "--volume",
        "disk0n1",
        "--size",
        "256k",
        "--bs",
        "64k",
        "--idle",
        "0.1",
    ];
    if let Some(device) = device {
        args.extend(["--device", device]);
    }
    dpuctl(&args)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_device_is_bound_to_the_volume_by_identity_before_anything_is_counted() {
    let lab = Lab::start();
    expose_volume(&lab);
    let endpoint = lab.agent.endpoint();
    let uuid = volume_host_uuid(&lab, "volumes/disk0n1").await;
    let dir = disk_tempdir();
    let file = dir.path().join("device.bin");
    std::fs::write(&file, vec![7u8; 1 << 20]).expect("write the device file");
    let file_text = file.to_str().expect("utf-8 path");

    // A regular file: refused before any reading, naming the file and what it is.
    let (_host_dir, host_root) = host_root_with_netdev_stats();
    let root_text = host_root.to_str().expect("utf-8 path");
    let out = prove(&endpoint, root_text, Some(file_text));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{}", describe(&out));
    assert!(
        stderr.contains(file_text) && stderr.contains("a regular file"),
        "{stderr}"
    );
    assert!(
        out.stdout.is_empty(),
        "no verdict for an unbound device: {}",
        describe(&out)
    );

    // A disk that is another namespace: refused, naming both identities.
    let (_other_dir, other_root) = host_root_with_netdev_stats();
    let other = match identified_loop(&file, OTHER_UUID, &[&other_root]) {
        Ok(disk) => disk,
        Err(why) => skip!("the proof binds a real block device: {why}"),
    };
    let other_root_text = other_root.to_str().expect("utf-8 path");
    let out = prove(&endpoint, other_root_text, other.path.to_str());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{}", describe(&out));
    assert!(
        stderr.contains(OTHER_UUID) && stderr.contains(&uuid) && stderr.contains("uuid differs"),
        "both identities are named: {stderr}"
    );
    drop(other);

    // Control: the disk that carries the volume's identity, on the emulated controller's
    // PCI function (PF 0, 03:00.2 in the fake's table), is bound and read, and found
    // without --device. (NOT PROVEN: the fake SNAP counts no read through an emulated
    // controller; what matters here is which device was read.)
    let bound = match emulated_loop(&file, &uuid, &[&host_root]) {
        Ok(disk) => disk,
        Err(why) => skip!("the proof binds a real block device: {why}"),
    };
    let bound_text = bound.path.to_str().expect("utf-8 path");
    for device in [Some(bound_text), None] {
        let out = prove(&endpoint, root_text, device);
        let report = json(&out);
        assert_eq!(out.status.code(), Some(1), "{report:#}\n{}", describe(&out));
        let notes = report["notes"].to_string();
        assert!(
            notes.contains(&format!(
                "{bound_text} (disk {}) is volumes/disk0n1",
                bound.name
            )) && notes.contains(&format!("uuid agree with uuid {uuid}")),
            "the binding is in the notes: {notes}"
        );
        assert!(
            notes.contains(&format!("read 262144 bytes from {bound_text}")),
            "{notes}"
        );
    }
}

/// The emulated controller placed on PCI function 03:00.2 (the fake SNAP's first PF): the
/// agent names that function beside the namespace's identity, and a disk that carries the
/// identity but is not reached through it (here a loop device: no PCI controller at all,
/// as an NVMe/TCP connection to the same namespace would have none) is refused before
/// anything is counted. Control: the same disk shown by the sys tree on that function's
/// controller is bound, and the note names the function. The same for a controller placed
/// by PF index and by VF index, whose address the agent learns from SNAP's
/// `emulation_function_list` when it creates the controller (PF 0 is 03:00.2, its VF 1
/// 03:0c.1 in the fake's table).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_disk_with_the_identity_on_another_path_than_the_emulated_function_is_refused() {
    for (placement, bdf) in [
        (&["--pci", "03:00.2"][..], "03:00.2"),
        (&["--pf", "0"][..], "03:00.2"),
        (&["--pf", "0", "--vf", "1"][..], "03:0c.1"),
    ] {
        refused_off_the_emulated_function_and_bound_on_it(placement, bdf).await;
    }
}

/// One placement of [`a_disk_with_the_identity_on_another_path_than_the_emulated_function_is_refused`].
async fn refused_off_the_emulated_function_and_bound_on_it(placement: &[&str], bdf: &str) {
    let lab = Lab::start();
    expose_volume_on(&lab, "rdma", placement);
    let endpoint = lab.agent.endpoint();
    let uuid = volume_host_uuid(&lab, "volumes/disk0n1").await;
    let dir = disk_tempdir();
    let file = dir.path().join("device.bin");
    std::fs::write(&file, vec![7u8; 1 << 20]).expect("write the device file");
    let (_host_dir, host_root) = host_root_with_netdev_stats();
    let root_text = host_root.to_str().expect("utf-8 path");
    let disk = match identified_loop(&file, &uuid, &[&host_root]) {
        Ok(disk) => disk,
        Err(why) => skip!("the proof binds a real block device: {why}"),
    };
    let device = disk.path.to_str().expect("utf-8 path");
    let function = format!("0000:{bdf}");
    let out = prove(&endpoint, root_text, Some(device));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        out.status.code(),
        Some(2),
        "{placement:?}: {}",
        describe(&out)
    );
    assert!(
        stderr.contains("no PCI function") && stderr.contains(&function),
        "{placement:?}: {stderr}"
    );
    assert!(out.stdout.is_empty(), "nothing counted: {}", describe(&out));

    // The same disk, as the host's sysfs shows an emulated namespace.
    place_on_function(&host_root, &disk.name, &function);
    let out = prove(&endpoint, root_text, Some(device));
    let report = json(&out);
    let notes = report["notes"].to_string();
    assert!(
        notes.contains(&format!(
            "on the emulated controller's PCI function {function}"
        )),
        "{placement:?}: {notes}\n{}",
        describe(&out)
    );
}
