//! The document rules of virtio-blk controllers, each with the case it must let through.

use super::*;
use crate::storage::desired::{ControllerDoc, SubsystemDoc};

const NQN: &str = "nqn.2026-01.io.example:host";

fn pci(bdf: &str) -> v1::EmulationFunction {
    v1::EmulationFunction {
        function: Some(v1::emulation_function::Function::PciAddress(
            v1::PciAddress {
                bdf: bdf.to_owned(),
            },
        )),
    }
}

fn pf(index: u32) -> v1::EmulationFunction {
    v1::EmulationFunction {
        function: Some(v1::emulation_function::Function::PfVf(v1::PfVf {
            pf_index: index,
            vf_index: None,
        })),
    }
}

fn disk(function: v1::EmulationFunction, volume: &str) -> VirtioBlkDoc {
    VirtioBlkDoc {
        function,
        volume: volume.to_owned(),
        num_queues: 4,
        ..VirtioBlkDoc::default()
    }
}

/// A document with remote controller `r0` (volumes `r0n1`, `r0n2`, ...) and subsystem NQN.
fn doc() -> Desired {
    let mut doc = Desired::default();
    doc.remotes
        .insert("r0".into(), Entry::new(v1::RemoteControllerSpec::default()));
    doc.subsystems
        .insert(NQN.into(), Entry::new(SubsystemDoc::default()));
    doc
}

#[test]
fn the_same_create_twice_changes_nothing_and_another_spec_is_refused_naming_fields() {
    let mut doc = doc();
    create(&mut doc, "vm1", disk(pf(0), "r0n1"), false).expect("create");
    let once = doc.clone();
    create(&mut doc, "vm1", disk(pf(0), "r0n1"), false).expect("again");
    assert_eq!(doc, once);
    let other = VirtioBlkDoc {
        queue_size: 256,
        ..disk(pf(0), "r0n2")
    };
    let err = create(&mut doc, "vm1", other, false).expect_err("differs");
    assert!(matches!(err, StorageError::AlreadyExists(_)), "{err}");
    assert!(err.to_string().contains("volume, queue_size"), "{err}");
}

#[test]
fn a_volume_backs_one_namespace_or_virtio_blk_controller() {
    let mut doc = doc();
    // Not from a remote of the document and not known to the backend.
    let err = create(&mut doc, "vm1", disk(pf(0), "Malloc0"), false).expect_err("absent");
    assert!(
        err.to_string().contains("volumes/Malloc0 does not exist"),
        "{err}"
    );
    create(&mut doc, "vm0", disk(pf(1), "Malloc0"), true).expect("known to the backend");
    create(&mut doc, "vm1", disk(pf(0), "r0n1"), false).expect("create");
    let err = create(&mut doc, "vm2", disk(pf(2), "r0n1"), false).expect_err("shared");
    assert!(
        err.to_string()
            .contains("already backs virtioBlkControllers/vm1"),
        "{err}"
    );
    // A namespace cannot take it either (the document's one list of volume users).
    assert_eq!(doc.users_of_volume("r0n1"), [Key::VirtioBlk("vm1".into())]);
    // Nor can the remote go while it backs the controller.
    assert_eq!(users_of_remote(&doc, "r0"), [Key::VirtioBlk("vm1".into())]);
    assert!(users_of_remote(&doc, "r1").is_empty());
    // Deleted, the volume is free again.
    assert_eq!(delete(&mut doc, "vm1").len(), 1);
    assert!(doc.users_of_volume("r0n1").is_empty());
    assert!(delete(&mut doc, "vm1").is_empty(), "already going");
}

#[test]
fn one_controller_per_host_function_across_nvme_and_virtio_blk() {
    let mut doc = doc();
    doc.controllers.entry(NQN.into()).or_default().insert(
        "c0".into(),
        Entry::new(ControllerDoc {
            function: pci("03:00.2"),
            ..ControllerDoc::default()
        }),
    );
    doc.controllers.entry(NQN.into()).or_default().insert(
        "c1".into(),
        Entry::new(ControllerDoc {
            function: pf(0),
            ..ControllerDoc::default()
        }),
    );
    // The same PCI address is one host function whatever the kind: refused naming both.
    let err = create(&mut doc, "vm1", disk(pci("0000:03:00.2"), "r0n1"), false).expect_err("taken");
    assert!(matches!(err, StorageError::AlreadyExists(_)), "{err}");
    let text = err.to_string();
    assert!(
        text.contains("virtioBlkControllers/vm1") && text.contains("controllers/c0"),
        "{text}"
    );
    // PF 0 of the virtio-blk functions is not PF 0 of the NVMe ones.
    create(&mut doc, "vm1", disk(pf(0), "r0n1"), false).expect("another function");
    // Two virtio-blk controllers on one virtio-blk PF are refused.
    let err = create(&mut doc, "vm2", disk(pf(0), "r0n2"), false).expect_err("taken");
    assert!(
        err.to_string().contains("virtioBlkControllers/vm1"),
        "{err}"
    );
    // And an NVMe controller on the host function a virtio-blk one has.
    create(&mut doc, "vm3", disk(pci("03:00.4"), "r0n3"), false).expect("free function");
    let key = Key::Controller(NQN.into(), "c2".into());
    let err = refuse_nvme_on_taken_function(&doc, &key, &pci("03:00.4")).expect_err("taken");
    assert!(
        err.to_string().contains("virtioBlkControllers/vm3"),
        "{err}"
    );
    refuse_nvme_on_taken_function(&doc, &key, &pf(0)).expect("the NVMe PF 0 is free");
}

#[test]
fn the_view_reports_snaps_state_never_the_desired_one() {
    let mut wanted = disk(pf(0), "r0n1");
    assert_eq!(
        view("vm1", &wanted, None).state,
        v1::ControllerState::Unspecified as i32
    );
    assert_eq!(
        view("vm1", &wanted, Some(&[])).state,
        v1::ControllerState::Failed as i32,
        "never created"
    );
    wanted.backend = Some(VirtioBlkBackend {
        id: "vm1_vblk".into(),
        host_bdf: Some("03:00.4".into()),
    });
    let seen = |suspended| VirtioBlkSeen {
        name: "vm1_vblk".into(),
        bdev: Some("r0n1".into()),
        suspended,
    };
    let running = view("vm1", &wanted, Some(&[seen(Some(false))]));
    assert_eq!(running.state, v1::ControllerState::Running as i32);
    assert_eq!(running.name, "virtioBlkControllers/vm1");
    assert_eq!(running.volume, "volumes/r0n1");
    assert_eq!(running.backend_id, "vm1_vblk");
    assert_eq!(
        running.host_pci_address.map(|p| p.bdf).as_deref(),
        Some("0000:03:00.4")
    );
    assert_eq!(
        view("vm1", &wanted, Some(&[seen(None)])).state,
        v1::ControllerState::Unspecified as i32
    );
    assert_eq!(snap_name("vm1"), "vm1_vblk");
}
