//! The fake's virtio-blk methods in both dialects: what they take (the public clients'
//! keys), what they keep, and what they refuse.

use super::*;

/// A fake of `dialect` whose table has the default NVMe PFs and one virtio-blk PF, with
/// remote controller `R` attached (bdev `Rn1`).
fn vblk_fixture(dialect: FakeDialect) -> Fixture {
    let fixture = fixture(dialect);
    let mut table = FakePf::default_table();
    table.push(FakePf::virtio_blk(0));
    fixture.snap.set_functions(table);
    let mut fixture = fixture;
    fixture
        .conn
        .ok("bdev_nvme_attach_controller", attach("R", "192.0.2.10"));
    fixture
}

#[test]
fn snap4_creates_lists_and_destroys_a_virtio_blk_controller_by_its_name() {
    let Fixture {
        _dir,
        snap,
        mut conn,
    } = vblk_fixture(FakeDialect::Snap4);
    let name = conn.ok(
        "virtio_blk_controller_create",
        json!({"ctrl": "vm1_vblk", "pf_id": 0, "bdev": "Rn1", "num_queues": 4,
               "queue_size": 256, "serial": "VM1DISK"}),
    );
    assert_eq!(name, "vm1_vblk");
    let kept = &snap.state().virtio_blk["vm1_vblk"];
    assert_eq!(
        (
            kept.function.as_str(),
            kept.pci_bdf.as_str(),
            kept.bdev.as_str()
        ),
        ("vblk-pf0", "03:00.4", "Rn1")
    );
    assert_eq!((kept.queue_size, kept.serial.as_str()), (256, "VM1DISK"));
    let list = conn.ok("virtio_blk_controller_list", Value::Null);
    assert_eq!(list[0]["ctrl_id"], "vm1_vblk");
    assert_eq!(list[0]["bdev"], "Rn1");
    assert_eq!(list[0]["queue_size"], 256);
    // The function shows its controller; the NVMe PF of the same index stays free.
    let functions = conn.ok("emulation_function_list", json!({"all": true}));
    let vblk = functions
        .as_array()
        .expect("list")
        .iter()
        .find(|f| f["emulation_type"] == "VBLK")
        .expect("VBLK PF");
    assert_eq!(vblk["ctrl_id"], "vm1_vblk");
    assert_eq!(functions[0]["ctrl_id"], "");
    // The bdev is claimed: no namespace can use it.
    conn.ok("nvme_subsystem_create", json!({"nqn": NQN}));
    let (code, message) = conn.refused(
        "nvme_namespace_create",
        json!({"nqn": NQN, "nsid": 1, "bdev_name": "Rn1", "bdev_type": "spdk"}),
    );
    assert_eq!(code, -16, "{message}");
    assert!(message.contains("vm1_vblk"), "{message}");
    conn.ok(
        "virtio_blk_controller_destroy",
        json!({"ctrl": "vm1_vblk", "force": true}),
    );
    assert!(snap.state().virtio_blk.is_empty());
    let (code, message) =
        conn.refused("virtio_blk_controller_destroy", json!({"ctrl": "vm1_vblk"}));
    assert_eq!(code, -19);
    assert!(message.contains("not found"), "{message}");
}

#[test]
fn snap4_refuses_what_snap_would() {
    let Fixture {
        _dir,
        snap,
        mut conn,
    } = vblk_fixture(FakeDialect::Snap4);
    let create = |extra: Value| {
        let mut p = json!({"bdev": "Rn1"});
        for (k, v) in extra.as_object().expect("object") {
            p[k] = v.clone();
        }
        p
    };
    // An NVMe function is not a virtio-blk one.
    let (code, message) = conn.refused(
        "virtio_blk_controller_create",
        create(json!({"pci_bdf": "03:00.2"})),
    );
    assert_eq!(code, -19, "{message}");
    assert!(message.contains("virtio-blk"), "{message}");
    // An unknown bdev.
    let (code, message) = conn.refused(
        "virtio_blk_controller_create",
        json!({"pf_id": 0, "bdev": "Nope"}),
    );
    assert_eq!(code, -19, "{message}");
    assert!(message.contains("Nope"), "{message}");
    // SNAP 3's keys are not SNAP 4's.
    assert_eq!(
        conn.refused(
            "virtio_blk_controller_create",
            create(json!({"pf_id": 0, "queue_depth": 64}))
        ),
        decode_failed()
    );
    conn.ok(
        "virtio_blk_controller_create",
        create(json!({"vuid": "MT2334XZ0001VBLKS0D0F4"})),
    );
    // The function is taken, and so is the bdev.
    let (code, message) = conn.refused(
        "virtio_blk_controller_create",
        create(json!({"pf_id": 0, "ctrl": "second"})),
    );
    assert_eq!(code, -17, "{message}");
    let (code, message) = conn.refused(
        "virtio_blk_controller_create",
        create(json!({"pf_id": 0, "vf_id": 1})),
    );
    assert_eq!(code, -16, "{message}");
    assert_eq!(snap.state().virtio_blk.len(), 1);
    assert!(
        snap.state().virtio_blk.contains_key("VblkCtrl0"),
        "SNAP's own name"
    );
}

#[test]
fn snap3_takes_snap_rpc_py_keys_and_lists_virtio_blk_in_controller_list() {
    let Fixture {
        _dir,
        snap,
        mut conn,
    } = vblk_fixture(FakeDialect::Snap3);
    // Exactly what `snap_rpc.py controller_virtio_blk_create mlx5_0 --bdev_type spdk
    // --bdev Rn1 --pf_id 0 --num_queues 4 --queue_depth 64` sends (recover: no --new).
    let name = conn.ok(
        "controller_virtio_blk_create",
        json!({"emulation_manager": "mlx5_0", "bdev_type": "spdk", "recover": true,
               "pf_id": 0, "num_queues": 4, "queue_depth": 64, "bdev": "Rn1"}),
    );
    assert_eq!(name, "VblkEmu0pf0");
    assert_eq!(snap.state().virtio_blk["VblkEmu0pf0"].queue_size, 64);
    let list = conn.ok("controller_list", Value::Null);
    assert_eq!(
        list,
        json!([{"name": "VblkEmu0pf0", "emulation_manager": "mlx5_0", "type": "virtio_blk",
                "pci_index": 0, "pci_bdf": "03:00.4"}])
    );
    assert_eq!(
        conn.ok("controller_list", json!({"type": "nvme"})),
        json!([])
    );
    // Only one way to name the function (snap_rpc.py's own rule).
    let (code, _) = conn.refused(
        "controller_virtio_blk_create",
        json!({"emulation_manager": "mlx5_0", "bdev_type": "spdk", "bdev": "Rn1",
               "pf_id": 0, "pci_bdf": "03:00.4"}),
    );
    assert_eq!(code, -22);
    // SNAP 4's `ctrl` is not a SNAP 3 key.
    assert_eq!(
        conn.refused(
            "controller_virtio_blk_create",
            json!({"emulation_manager": "mlx5_0", "bdev_type": "spdk", "bdev": "Rn1",
                   "pf_id": 0, "ctrl": "x"})
        ),
        decode_failed()
    );
    conn.ok(
        "controller_virtio_blk_delete",
        json!({"name": "VblkEmu0pf0", "force": true}),
    );
    assert!(snap.state().virtio_blk.is_empty());
    assert_eq!(
        conn.refused(
            "controller_virtio_blk_delete",
            json!({"name": "VblkEmu0pf0"})
        )
        .0,
        -19
    );
}
