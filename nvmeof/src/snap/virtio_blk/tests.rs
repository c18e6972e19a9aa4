//! The exact requests the virtio-blk calls send in both dialects and how their answers
//! decode, against a peer on a real Unix socket that records what it got.

use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::UnixListener;

use super::*;
use crate::snap::SnapDialect;

/// Answers each request, in order, with the next of `results`; gives back every request
/// (method and params) as received.
async fn peer(listener: UnixListener, results: Vec<Value>) -> Vec<Value> {
    let (mut stream, _) = listener.accept().await.expect("accept");
    let mut buf = Vec::new();
    let mut seen = Vec::new();
    for result in results {
        let request = loop {
            let mut values = serde_json::Deserializer::from_slice(&buf).into_iter::<Value>();
            if let Some(Ok(v)) = values.next() {
                let end = values.byte_offset();
                buf.drain(..end);
                break v;
            }
            let mut chunk = [0_u8; 1024];
            let n = stream.read(&mut chunk).await.expect("read");
            assert_ne!(n, 0, "client hung up");
            buf.extend_from_slice(&chunk[..n]);
        };
        let reply = json!({"jsonrpc": "2.0", "id": request["id"], "result": result});
        seen.push(json!({"method": request["method"], "params": request.get("params")}));
        stream
            .write_all(reply.to_string().as_bytes())
            .await
            .expect("write");
    }
    seen
}

/// An emulation of `dialect` on a fresh socket whose peer answers `results`.
fn bench(
    dialect: SnapDialect,
    results: Vec<Value>,
) -> (
    tempfile::TempDir,
    NvmeEmulation,
    tokio::task::JoinHandle<Vec<Value>>,
) {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("snap.sock");
    let listener = UnixListener::bind(&path).expect("bind");
    let server = tokio::spawn(peer(listener, results));
    let emulation = NvmeEmulation::new(SnapClient::new(&path), dialect).expect("emulates");
    (dir, emulation, server)
}

fn params(function: EmulatedFunction) -> VirtioBlkParams {
    VirtioBlkParams {
        name: Some("vm1_0a1b2c3d".to_owned()),
        function,
        bdev: "r0n1".to_owned(),
        num_queues: Some(4),
        queue_size: Some(128),
        serial: Some("VM1DISK".to_owned()),
        emulation_manager: None,
    }
}

#[tokio::test]
async fn snap4_create_sends_its_name_function_and_only_the_values_set() {
    let (_dir, snap, server) = bench(
        SnapDialect::Snap4,
        vec![
            json!("vm1_0a1b2c3d"),
            json!({"ctrl_id": "VblkCtrl7"}),
            json!(true),
        ],
    );
    let name = snap
        .create_virtio_blk(&params(EmulatedFunction::Vf { pf_id: 0, vf_id: 1 }))
        .await
        .expect("create");
    assert_eq!(name, "vm1_0a1b2c3d");
    let bare = VirtioBlkParams {
        name: None,
        num_queues: None,
        queue_size: None,
        serial: None,
        ..params(EmulatedFunction::Vuid("MT2334XZ0001VBLKS0D0F4".into()))
    };
    assert_eq!(
        snap.create_virtio_blk(&bare).await.expect("create"),
        "VblkCtrl7"
    );
    // An answer that names nothing: the name asked for is the name.
    let by_bdf = params(EmulatedFunction::PciBdf("03:00.4".into()));
    assert_eq!(
        snap.create_virtio_blk(&by_bdf).await.expect("create"),
        "vm1_0a1b2c3d"
    );
    let seen = server.await.expect("peer");
    assert_eq!(
        seen[0],
        json!({"method": "virtio_blk_controller_create", "params": {
            "ctrl": "vm1_0a1b2c3d", "pf_id": 0, "vf_id": 1, "bdev": "r0n1",
            "num_queues": 4, "queue_size": 128, "serial": "VM1DISK"}})
    );
    assert_eq!(
        seen[1]["params"],
        json!({"vuid": "MT2334XZ0001VBLKS0D0F4", "bdev": "r0n1"})
    );
    assert_eq!(seen[2]["params"]["pci_bdf"], "03:00.4");
    assert!(seen[2]["params"].get("pf_id").is_none(), "{}", seen[2]);
}

#[tokio::test]
async fn snap3_create_finds_a_virtio_blk_manager_and_sends_snap_rpc_py_keys() {
    let (_dir, snap, server) = bench(
        SnapDialect::Snap3,
        vec![
            json!([
                {"emulation_manager": "mlx5_0", "hotplug_support": true,
                 "supported_types": ["nvme"]},
                {"emulation_manager": "mlx5_2", "hotplug_support": true,
                 "supported_types": ["nvme", "virtio_blk"]}
            ]),
            json!("VblkEmu0pf0"),
        ],
    );
    let name = snap
        .create_virtio_blk(&params(EmulatedFunction::Pf { pf_id: 0 }))
        .await
        .expect("create");
    assert_eq!(name, "VblkEmu0pf0");
    let seen = server.await.expect("peer");
    assert_eq!(seen[0]["method"], "emulation_managers_list");
    // No `ctrl` (SNAP 3 names its own), queue size as `queue_depth`, the bdev type.
    assert_eq!(
        seen[1],
        json!({"method": "controller_virtio_blk_create", "params": {
            "emulation_manager": "mlx5_2", "bdev_type": "spdk", "bdev": "r0n1",
            "pf_id": 0, "num_queues": 4, "queue_depth": 128, "serial": "VM1DISK"}})
    );
}

#[tokio::test]
async fn snap3_without_a_virtio_blk_manager_is_refused_before_any_create() {
    let (_dir, snap, server) = bench(
        SnapDialect::Snap3,
        vec![json!([{"emulation_manager": "mlx5_0", "supported_types": ["nvme"]}])],
    );
    let err = snap
        .create_virtio_blk(&params(EmulatedFunction::Pf { pf_id: 0 }))
        .await
        .expect_err("no manager");
    assert!(err.to_string().contains("virtio_blk"), "{err}");
    assert_eq!(
        server.await.expect("peer").len(),
        1,
        "only the manager list"
    );
}

#[tokio::test]
async fn destroys_name_the_controller_with_each_dialects_key() {
    let (_dir, snap4, server4) = bench(SnapDialect::Snap4, vec![json!(true)]);
    snap4
        .destroy_virtio_blk("vm1_0a1b2c3d")
        .await
        .expect("destroy");
    assert_eq!(
        server4.await.expect("peer")[0],
        json!({"method": "virtio_blk_controller_destroy",
               "params": {"ctrl": "vm1_0a1b2c3d", "force": true}})
    );
    let (_dir3, snap3, server3) = bench(SnapDialect::Snap3, vec![json!(true)]);
    snap3
        .destroy_virtio_blk("VblkEmu0pf0")
        .await
        .expect("destroy");
    assert_eq!(
        server3.await.expect("peer")[0],
        json!({"method": "controller_virtio_blk_delete",
               "params": {"name": "VblkEmu0pf0", "force": true}})
    );
}

#[tokio::test]
async fn lists_decode_each_dialects_shape() {
    let (_dir, snap4, server4) = bench(
        SnapDialect::Snap4,
        vec![json!([
            {"ctrl_id": "vm1_0a1b2c3d", "vhca_id": 5, "num_queues": 4, "queue_size": 128,
             "seg_max": 32, "size_max": 65536, "vblk_id": 0, "bdev": "r0n1",
             "force_in_order": false, "admin_q": false, "read_only": false},
            {"ctrl_id": "VblkCtrl2", "bdev": "none", "state": "STARTED"}
        ])],
    );
    let seen = snap4.list_virtio_blk().await.expect("list");
    assert_eq!(
        seen,
        [
            VirtioBlkSeen {
                name: "vm1_0a1b2c3d".into(),
                bdev: Some("r0n1".into()),
                suspended: None,
            },
            VirtioBlkSeen {
                name: "VblkCtrl2".into(),
                bdev: None,
                suspended: Some(false),
            },
        ]
    );
    assert_eq!(
        server4.await.expect("peer")[0],
        json!({"method": "virtio_blk_controller_list", "params": null})
    );
    // SNAP 3's controller_list mixes types (its method page's example): only virtio-blk.
    let (_dir3, snap3, server3) = bench(
        SnapDialect::Snap3,
        vec![json!([
            {"subnqn": "nqn.2014.08.org.nvmexpress.snap:cnode1", "cntlid": 1,
             "name": "NvmeEmu0", "emulation_manager": "mlx5_2", "type": "nvme",
             "pci_index": 0, "pci_bdf": "83:00.1"},
            {"name": "VblkEmu0", "emulation_manager": "mlx5_0", "type": "virtio_blk",
             "pci_index": 0, "pci_bdf": "84:00.1"}
        ])],
    );
    let seen = snap3.list_virtio_blk().await.expect("list");
    assert_eq!(seen.len(), 1, "{seen:?}");
    assert_eq!(seen[0].name, "VblkEmu0");
    assert_eq!(
        server3.await.expect("peer")[0],
        json!({"method": "controller_list", "params": null})
    );
}
