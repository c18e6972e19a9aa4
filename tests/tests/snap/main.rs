//! The SNAP backend of `dpu-nvmeof` against the stateful [`FakeSnap`], which answers as
//! SPDK v24.01 and NVIDIA's public SNAP clients show: both dialects' expose flows and their
//! reverse with the exact keys on the wire, `bdev_get_iostat` in the form the release
//! takes, SPDK's and SNAP's refusals surfacing with their own code and message, and
//! transport faults (cut reply, slow reply, restart).

mod agent;
mod cli;
mod conformance;
mod demo;
mod multipath;

use std::path::PathBuf;
use std::time::Duration;

use dpu_nvmeof::snap::{
    AddressFamilyParam, AttachController, ControllerCreate, ControllerParams, EmulatedFunction,
    IostatForm, NamespaceCreate, NamespaceIds, SubsystemCreate, SubsystemParams, TransportType,
};
use dpu_nvmeof::{NvmeEmulation, SnapClient, SnapDialect, SnapError, SnapErrorKind};
use dpu_tests::fake_snap::{FakeDialect, FakeSnap};
use serde_json::json;
use tempfile::TempDir;

const NQN: &str = "nqn.2022-10.io.nvda.nvme:0";
const REMOTE_NQN: &str = "nqn.2016-06.io.spdk:cnode1";

struct Setup {
    _dir: TempDir,
    snap: FakeSnap,
    client: SnapClient,
}

fn setup(dialect: FakeDialect) -> Setup {
    let dir = tempfile::tempdir().expect("tempdir");
    let path: PathBuf = dir.path().join("spdk.sock");
    let snap = FakeSnap::start_with(&path, dialect).expect("fake SNAP");
    let client = SnapClient::new(&path);
    Setup {
        _dir: dir,
        snap,
        client,
    }
}

fn remote(name: &str) -> AttachController {
    AttachController {
        name: name.to_owned(),
        trtype: TransportType::Rdma,
        adrfam: AddressFamilyParam::Ipv4,
        traddr: "192.0.2.10".to_owned(),
        trsvcid: "4420".to_owned(),
        subnqn: REMOTE_NQN.to_owned(),
        hostnqn: None,
        hdgst: false,
        ddgst: false,
        num_io_queues: None,
        ctrlr_loss_timeout_sec: None,
        reconnect_delay_sec: None,
        fast_io_fail_timeout_sec: None,
    }
}

fn pf(pf_id: u32) -> ControllerParams {
    ControllerParams {
        name: None,
        function: EmulatedFunction::Pf { pf_id },
        num_queues: None,
        mdts: None,
        emulation_manager: None,
    }
}

fn refused(err: &SnapError, kind: SnapErrorKind, message: &str) {
    assert_eq!(err.kind(), kind, "{err:?}");
    let got = err.message().expect("SNAP's own message");
    assert!(got.contains(message), "{got:?} lacks {message:?}");
    assert!(err.code().is_some());
    assert!(!err.is_transient());
}

#[tokio::test]
async fn snap4_expose_flow_and_its_reverse() {
    let Setup { _dir, snap, client } = setup(FakeDialect::Snap4);
    let bdevs = client
        .bdev_nvme_attach_controller(&remote("RemoteNvme0"))
        .execute()
        .await
        .expect("attach");
    assert_eq!(bdevs, ["RemoteNvme0n1"]);
    let listed = client.bdev_get_bdevs(None).execute().await.expect("bdevs");
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0].name, "RemoteNvme0n1");
    let attached = client
        .bdev_nvme_get_controllers("RemoteNvme0")
        .execute()
        .await
        .expect("get_controllers");
    let path = &attached[0].ctrlrs[0];
    assert_eq!(
        (
            path.trid.trtype.as_str(),
            path.trid.adrfam.as_str(),
            path.trid.traddr.as_str(),
            path.trid.trsvcid.as_str(),
            path.trid.subnqn.as_str()
        ),
        ("RDMA", "IPv4", "192.0.2.10", "4420", REMOTE_NQN)
    );
    assert!(path
        .host
        .as_ref()
        .is_some_and(|h| h.nqn.starts_with("nqn.2014-08.org.nvmexpress:uuid:")));

    let emu = NvmeEmulation::detect(client.clone())
        .await
        .expect("detect")
        .expect("SNAP");
    assert_eq!(emu.dialect(), SnapDialect::Snap4);
    // Serial and model left to SNAP: only the NQN goes out (as DPF sends it).
    emu.create_subsystem(NQN, &SubsystemParams::default())
        .await
        .expect("subsystem");
    let params = ControllerParams {
        name: Some("c0_test".to_owned()),
        num_queues: Some(8),
        mdts: Some(6),
        ..pf(0)
    };
    let ctrl = emu
        .create_controller(NQN, &params)
        .await
        .expect("controller");
    assert_eq!(ctrl.name, "c0_test", "the name given is the ctrl_id");
    let state = snap.state();
    let created = &state.controllers[&ctrl.name];
    assert!(created.suspended, "created suspended");
    assert_eq!((created.num_queues, created.mdts), (8, 6));
    let ids = NamespaceIds {
        uuid: Some("11111111-2222-3333-4444-555555555555"),
        ..NamespaceIds::default()
    };
    emu.add_namespace(NQN, &ctrl, 1, "RemoteNvme0n1", &ids)
        .await
        .expect("namespace");
    emu.start_controller(&ctrl).await.expect("resume");
    let state = snap.state();
    assert!(!state.controllers[&ctrl.name].suspended);
    assert!(state.controllers[&ctrl.name].namespaces.contains(&1));
    let subsystems = client.nvme_subsystem_list().execute().await.expect("list");
    assert_eq!(subsystems[0].nqn, NQN);
    assert_eq!(subsystems[0].namespaces[0].bdev, "RemoteNvme0n1");
    let listed = &subsystems[0].controllers[0];
    assert_eq!(listed.ctrl_id, ctrl.name);
    assert_eq!(listed.state.as_deref(), Some("STARTED"));
    assert_eq!(listed.suspended(), Some(false));
    let controllers = client.nvme_controller_list().execute().await.expect("list");
    assert_eq!(controllers[0].ctrl_id, ctrl.name);
    assert_eq!(controllers[0].nqn.as_deref(), Some(NQN));

    // The wire: exact methods and keys of the reference flow.
    assert_eq!(
        snap.requests_of("nvme_subsystem_create"),
        [json!({"nqn": NQN})]
    );
    assert_eq!(
        snap.requests_of("nvme_controller_create"),
        [
            json!({"nqn": NQN, "ctrl": "c0_test", "pf_id": 0, "num_queues": 8, "mdts": 6,
                "suspended": true})
        ]
    );
    assert_eq!(
        snap.requests_of("nvme_namespace_create"),
        [json!({"nqn": NQN, "nsid": 1, "bdev_name": "RemoteNvme0n1",
                "uuid": "11111111-2222-3333-4444-555555555555", "bdev_type": "spdk"})]
    );
    assert_eq!(
        snap.requests_of("nvme_controller_attach_ns"),
        [json!({"ctrl_id": ctrl.name, "nsid": 1})]
    );
    assert_eq!(
        snap.requests_of("bdev_nvme_attach_controller"),
        [
            json!({"name": "RemoteNvme0", "trtype": "rdma", "adrfam": "ipv4",
                "traddr": "192.0.2.10", "trsvcid": "4420", "subnqn": REMOTE_NQN})
        ]
    );

    // Reverse: suspend, detach + destroy namespace, destroy controller, subsystem, remote.
    client
        .nvme_controller_suspend(&ctrl.name)
        .execute()
        .await
        .expect("suspend");
    let subsystems = client.nvme_subsystem_list().execute().await.expect("list");
    assert_eq!(subsystems[0].controllers[0].suspended(), Some(true));
    emu.remove_namespace(NQN, &ctrl, 1)
        .await
        .expect("remove ns");
    emu.destroy_controller(NQN, &ctrl)
        .await
        .expect("destroy ctrl");
    emu.destroy_subsystem(NQN).await.expect("destroy subsystem");
    let detached = client
        .bdev_nvme_detach_controller("RemoteNvme0")
        .execute()
        .await
        .expect("detach");
    assert!(detached);
    let state = snap.state();
    assert!(state.bdevs.is_empty() && state.subsystems.is_empty() && state.controllers.is_empty());
}

#[tokio::test]
async fn snap4_subsystem_keys_are_sent_only_when_set() {
    let Setup { _dir, snap, client } = setup(FakeDialect::Snap4);
    let emu = NvmeEmulation::new(client.clone(), SnapDialect::Snap4).expect("emu");
    let params = SubsystemParams {
        serial_number: Some("SN0001"),
        model_number: Some("BlueField NVMe"),
        max_namespaces: Some(32),
    };
    emu.create_subsystem(NQN, &params).await.expect("subsystem");
    assert_eq!(
        snap.requests_of("nvme_subsystem_create"),
        [
            json!({"nqn": NQN, "serial_number": "SN0001", "model_number": "BlueField NVMe",
                "nn": 32})
        ]
    );
    let sub = &snap.state().subsystems[NQN];
    assert_eq!(
        (
            sub.serial_number.as_str(),
            sub.model_number.as_str(),
            sub.nn
        ),
        ("SN0001", "BlueField NVMe", 32)
    );
    // SNAP 4 has no key for a namespace NGUID or EUI-64: refused before anything is sent.
    let ctrl = dpu_nvmeof::snap::ControllerRef {
        name: "c".to_owned(),
        cntlid: None,
    };
    let ids = NamespaceIds {
        nguid: Some("00112233445566778899aabbccddeeff"),
        ..NamespaceIds::default()
    };
    let err = emu
        .add_namespace(NQN, &ctrl, 1, "x", &ids)
        .await
        .expect_err("no nguid key");
    assert_eq!(err.kind(), SnapErrorKind::Unsupported);
    assert!(snap.requests_of("nvme_namespace_create").is_empty());
}

#[tokio::test]
async fn snap4_raw_methods_address_functions_as_emulation_function_list_shows_them() {
    let Setup { _dir, snap, client } = setup(FakeDialect::Snap4);
    client
        .bdev_nvme_attach_controller(&remote("R1"))
        .execute()
        .await
        .expect("attach");
    let sub = SubsystemCreate {
        nqn: NQN.to_owned(),
        serial_number: None,
        model_number: None,
        nn: None,
    };
    client
        .nvme_subsystem_create(&sub)
        .execute()
        .await
        .expect("sub");
    // No uuid sent: SNAP picks one (at random, so it changes when the namespace is
    // re-created; the agent sends its own).
    client
        .nvme_namespace_create(&NamespaceCreate::new(NQN, 1, "R1n1", None))
        .execute()
        .await
        .expect("ns");
    assert_eq!(snap.state().subsystems[NQN].namespaces[&1].uuid.len(), 36);
    let functions = client
        .emulation_function_list()
        .execute()
        .await
        .expect("functions");
    assert_eq!(
        snap.requests_of("emulation_function_list"),
        [json!({"all": true})]
    );
    assert_eq!(functions.len(), 2);
    let bdf = functions[0].vfs[1].pci_bdf.clone();
    assert_eq!(bdf, "03:0c.1");
    assert!(functions[0].ctrl_id.is_empty());
    let create = |pci_bdf: &str| ControllerCreate {
        nqn: NQN.to_owned(),
        ctrl: None,
        pf_id: None,
        vf_id: None,
        pci_bdf: Some(pci_bdf.to_owned()),
        vuid: None,
        num_queues: None,
        mdts: None,
        suspended: false,
    };
    // SNAP's BDF has no PCI domain.
    let err = client
        .nvme_controller_create(&create("0000:03:0c.1"))
        .execute()
        .await
        .expect_err("domain");
    refused(&err, SnapErrorKind::NotFound, "0000:03:0c.1");
    let ctrl = client
        .nvme_controller_create(&create(&bdf))
        .execute()
        .await
        .expect("ctrl");
    assert!(
        snap.state().controllers[&ctrl.ctrl_id].suspended,
        "always suspended"
    );
    assert_eq!(snap.state().controllers[&ctrl.ctrl_id].function, "pf0vf1");
    let functions = client
        .emulation_function_list()
        .execute()
        .await
        .expect("functions");
    assert_eq!(functions[0].vfs[1].ctrl_id, ctrl.ctrl_id);
    // By VUID.
    let by_vuid = ControllerCreate {
        pci_bdf: None,
        vuid: Some(functions[1].vuid.clone()),
        ..create("")
    };
    let other = client
        .nvme_controller_create(&by_vuid)
        .execute()
        .await
        .expect("by vuid");
    assert_eq!(snap.state().controllers[&other.ctrl_id].function, "pf1");
    client
        .nvme_controller_attach_ns(&ctrl.ctrl_id, 1)
        .execute()
        .await
        .expect("attach ns");
    client
        .nvme_controller_resume(&ctrl.ctrl_id)
        .execute()
        .await
        .expect("resume");
    client
        .nvme_controller_destroy(&ctrl.ctrl_id, true)
        .execute()
        .await
        .expect("forced destroy with ns attached");
    client
        .nvme_controller_destroy(&other.ctrl_id, true)
        .execute()
        .await
        .expect("destroy");
    client
        .nvme_namespace_destroy(NQN, 1)
        .execute()
        .await
        .expect("ns destroy");
    client
        .nvme_subsystem_destroy(NQN)
        .execute()
        .await
        .expect("sub destroy");
}

#[tokio::test]
async fn snap3_dialect_flow() {
    let Setup { _dir, snap, client } = setup(FakeDialect::Snap3);
    client
        .bdev_nvme_attach_controller(&remote("RemoteNvme0"))
        .execute()
        .await
        .expect("attach");
    let emu = NvmeEmulation::detect(client.clone())
        .await
        .expect("detect")
        .expect("SNAP");
    assert_eq!(emu.dialect(), SnapDialect::Snap3);
    let params = SubsystemParams {
        serial_number: Some("SN1"),
        model_number: Some("MN1"),
        max_namespaces: None,
    };
    // subsystem_nvme_create answers the string "true" (the md page): still a success.
    emu.create_subsystem(NQN, &params).await.expect("sub");
    let params = ControllerParams {
        function: EmulatedFunction::Vf { pf_id: 0, vf_id: 1 },
        num_queues: Some(8),
        mdts: Some(4),
        ..pf(0)
    };
    let ctrl = emu.create_controller(NQN, &params).await.expect("ctrl");
    assert!(ctrl.cntlid.is_some());
    // The emulation manager was discovered, not assumed.
    assert_eq!(snap.requests_of("emulation_managers_list").len(), 1);
    assert_eq!(
        snap.requests_of("controller_nvme_create"),
        [
            json!({"nqn": NQN, "emulation_manager": "mlx5_0", "pf_id": 0, "vf_id": 1,
                "nr_io_queues": 8, "mdts": 4})
        ]
    );
    let ids = NamespaceIds {
        uuid: Some("11111111-2222-3333-4444-555555555555"),
        nguid: Some("00112233445566778899aabbccddeeff"),
        eui64: Some("0011223344556677"),
    };
    emu.add_namespace(NQN, &ctrl, 1, "RemoteNvme0n1", &ids)
        .await
        .expect("ns");
    emu.start_controller(&ctrl).await.expect("no-op on SNAP 3");
    let state = snap.state();
    assert!(state.controllers[&ctrl.name].namespaces.contains(&1));
    let ns = &state.subsystems[NQN].namespaces[&1];
    assert_eq!(
        ns.nguid.as_deref(),
        Some("00112233445566778899aabbccddeeff")
    );
    assert_eq!(ns.eui64.as_deref(), Some("0011223344556677"));
    let subs = client.subsystem_nvme_list().execute().await.expect("list");
    assert_eq!(subs[0].serial_number, "SN1");
    let methods: Vec<String> = snap.requests().into_iter().map(|(m, _)| m).collect();
    assert!(methods.contains(&"controller_nvme_namespace_attach".to_owned()));
    assert!(
        !methods.iter().any(|m| m.starts_with("nvme_")),
        "{methods:?}"
    );
    emu.remove_namespace(NQN, &ctrl, 1).await.expect("detach");
    emu.destroy_controller(NQN, &ctrl)
        .await
        .expect("delete ctrl");
    emu.destroy_subsystem(NQN).await.expect("delete sub");
    assert!(snap.state().subsystems.is_empty());
    // Configured rather than detected: a SNAP 4 call to SNAP 3 is "Method not found".
    let wrong = NvmeEmulation::new(client, SnapDialect::Snap4).expect("emulation");
    let err = wrong
        .destroy_subsystem(NQN)
        .await
        .expect_err("wrong dialect");
    assert_eq!(err.kind(), SnapErrorKind::MethodNotFound);
}

#[tokio::test]
async fn snap3_uses_the_emulation_manager_snap_lists() {
    let Setup { _dir, snap, client } = setup(FakeDialect::Snap3);
    snap.set_emulation_managers(vec![
        dpu_tests::fake_snap::FakeEmulationManager {
            emulation_manager: "mlx5_1".to_owned(),
            hotplug_support: true,
            supported_types: vec!["virtio_net".to_owned()],
        },
        dpu_tests::fake_snap::FakeEmulationManager {
            emulation_manager: "mlx5_2".to_owned(),
            hotplug_support: true,
            supported_types: vec!["nvme".to_owned(), "virtio_blk".to_owned()],
        },
    ]);
    let emu = NvmeEmulation::new(client.clone(), SnapDialect::Snap3).expect("emu");
    emu.create_subsystem(NQN, &SubsystemParams::default())
        .await
        .expect("sub: serial and model get defaults on SNAP 3");
    let sent = &snap.requests_of("subsystem_nvme_create")[0];
    assert!(sent["serial_number"].is_string() && sent["model_number"].is_string());
    emu.create_controller(NQN, &pf(0)).await.expect("ctrl");
    assert_eq!(
        snap.requests_of("controller_nvme_create")[0]["emulation_manager"],
        "mlx5_2"
    );
    // A manager named in the configuration that SNAP does not have is SNAP's refusal.
    let params = ControllerParams {
        emulation_manager: Some("mlx5_0".to_owned()),
        ..pf(1)
    };
    let err = emu
        .create_controller(NQN, &params)
        .await
        .expect_err("unknown manager");
    assert_eq!(err.kind(), SnapErrorKind::NotFound, "{err:?}");
}

#[tokio::test]
async fn iostat_takes_the_form_of_the_release() {
    for (version, sent) in [
        ("v24.01", json!({"name": "Rn1"})),
        ("v26.01", json!({"name": "Rn1"})),
        ("v26.05", json!({"names": ["Rn1"]})),
    ] {
        let Setup { _dir, snap, client } = setup(FakeDialect::Snap4);
        snap.set_version(version);
        client
            .bdev_nvme_attach_controller(&remote("R"))
            .execute()
            .await
            .expect("attach");
        assert!(snap.record_io("Rn1", 8192, 4096));
        for _ in 0..2 {
            let stats = client
                .bdev_get_iostat(Some("Rn1"))
                .execute()
                .await
                .expect("iostat");
            assert_eq!(stats.tick_rate, 2_000_000_000);
            let b = &stats.bdevs[0];
            assert_eq!(
                (b.name.as_str(), b.bytes_read, b.num_read_ops),
                ("Rn1", 8192, 1)
            );
            assert_eq!((b.bytes_written, b.num_write_ops), (4096, 1));
            assert_eq!(b.read_latency_ticks, 1000);
        }
        // One version query, then the release's form every time, never a refused one.
        assert_eq!(snap.requests_of("spdk_get_version").len(), 1, "{version}");
        assert_eq!(
            snap.requests_of("bdev_get_iostat"),
            [sent.clone(), sent],
            "{version}"
        );
        let all = client.bdev_get_iostat(None).execute().await.expect("all");
        assert_eq!(all.bdevs.len(), 1);
        let err = client
            .bdev_get_iostat(Some("nope"))
            .execute()
            .await
            .expect_err("unknown bdev");
        refused(&err, SnapErrorKind::NotFound, "No such device");
    }
}

#[tokio::test]
async fn iostat_falls_back_when_the_release_changes_under_the_client() {
    let Setup { _dir, snap, client } = setup(FakeDialect::Snap4);
    client
        .bdev_nvme_attach_controller(&remote("R"))
        .execute()
        .await
        .expect("attach");
    client
        .bdev_get_iostat(Some("Rn1"))
        .execute()
        .await
        .expect("v24.01: name");
    assert_eq!(client.iostat_form(), Some(IostatForm::Name));
    // SNAP upgraded to an SPDK without `name`: -32603, then `names`, then kept.
    snap.set_version("v26.05");
    let stats = client
        .bdev_get_iostat(Some("Rn1"))
        .execute()
        .await
        .expect("falls back on -32603");
    assert_eq!(stats.bdevs[0].name, "Rn1");
    assert_eq!(client.iostat_form(), Some(IostatForm::Names));
    let forms = snap.requests_of("bdev_get_iostat");
    assert_eq!(
        forms,
        [
            json!({"name": "Rn1"}),
            json!({"name": "Rn1"}),
            json!({"names": ["Rn1"]})
        ]
    );
}

#[tokio::test]
async fn spdk_refusals_surface_with_their_code_and_classify() {
    let Setup { _dir, snap, client } = setup(FakeDialect::Snap4);
    client
        .bdev_nvme_attach_controller(&remote("R"))
        .execute()
        .await
        .expect("attach");
    // Same name, same path: -114, already there.
    let err = client
        .bdev_nvme_attach_controller(&remote("R"))
        .execute()
        .await
        .expect_err("duplicate");
    assert_eq!(err.code(), Some(-114));
    refused(
        &err,
        SnapErrorKind::AlreadyExists,
        "A controller named R already exists with the specified network path",
    );
    // Same name, another path and subnqn: -22, a conflict (not "done").
    let other = AttachController {
        traddr: "192.0.2.20".to_owned(),
        subnqn: "nqn.2016-06.io.spdk:cnode9".to_owned(),
        ..remote("R")
    };
    let err = client
        .bdev_nvme_attach_controller(&other)
        .execute()
        .await
        .expect_err("other subnqn");
    assert_eq!(err.code(), Some(-22));
    refused(&err, SnapErrorKind::Conflict, "but uses a different subnqn");
    // Same name, another traddr, same subnqn: SPDK v24.01 adds a failover path and succeeds
    // (why the agent asks bdev_nvme_get_controllers first).
    let failover = AttachController {
        traddr: "192.0.2.20".to_owned(),
        ..remote("R")
    };
    let bdevs = client
        .bdev_nvme_attach_controller(&failover)
        .execute()
        .await
        .expect("a failover path");
    assert!(bdevs.is_empty());
    assert_eq!(snap.state().nvme_controllers["R"].ctrlrs[0].paths.len(), 2);
    // The reconnect trio, checked together: -22 "Invalid argument".
    let lonely = AttachController {
        traddr: "192.0.2.30".to_owned(),
        ctrlr_loss_timeout_sec: Some(30),
        ..remote("S")
    };
    let err = client
        .bdev_nvme_attach_controller(&lonely)
        .execute()
        .await
        .expect_err("loss timeout without reconnect delay");
    assert_eq!(
        (err.code(), err.message()),
        (Some(-22), Some("Invalid argument"))
    );
    let forever = AttachController {
        traddr: "192.0.2.30".to_owned(),
        ctrlr_loss_timeout_sec: Some(-1),
        reconnect_delay_sec: Some(5),
        fast_io_fail_timeout_sec: Some(10),
        ..remote("S")
    };
    client
        .bdev_nvme_attach_controller(&forever)
        .execute()
        .await
        .expect("-1 reconnects forever");
    // Another name on a transport id in use: -17, checked before the trio.
    let err = client
        .bdev_nvme_attach_controller(&AttachController {
            ctrlr_loss_timeout_sec: Some(30),
            ..remote("T")
        })
        .execute()
        .await
        .expect_err("same transport id");
    assert_eq!(
        (err.code(), err.message()),
        (Some(-17), Some("File exists"))
    );
    // Nothing listening: v24.01 answers -19 "No such device" (seen on spdk_tgt).
    snap.refuse_connections_to("192.0.2.99", "4420");
    let unreachable = AttachController {
        traddr: "192.0.2.99".to_owned(),
        ..remote("U")
    };
    let err = client
        .bdev_nvme_attach_controller(&unreachable)
        .execute()
        .await
        .expect_err("unreachable");
    assert_eq!(
        (err.code(), err.message()),
        (Some(-19), Some("No such device"))
    );
    // Listening without that subsystem: -32602 "Invalid parameters".
    snap.serve_only("192.0.2.98", "4420", &["nqn.2016-06.io.spdk:other"]);
    let unserved = AttachController {
        traddr: "192.0.2.98".to_owned(),
        ..remote("V")
    };
    let err = client
        .bdev_nvme_attach_controller(&unserved)
        .execute()
        .await
        .expect_err("no such subsystem");
    assert_eq!(
        (err.code(), err.message()),
        (Some(-32602), Some("Invalid parameters"))
    );
    // Unknown names.
    let err = client
        .bdev_nvme_get_controllers("ghost")
        .execute()
        .await
        .expect_err("unknown controller");
    assert_eq!(err.code(), Some(22), "v24.01 sends +EINVAL here");
    refused(
        &err,
        SnapErrorKind::NotFound,
        "Controller ghost does not exist",
    );
    let err = client
        .bdev_nvme_detach_controller("ghost")
        .execute()
        .await
        .expect_err("unknown controller");
    refused(&err, SnapErrorKind::NotFound, "No such device");
    let err = client
        .bdev_get_bdevs(Some("ghost"))
        .execute()
        .await
        .expect_err("unknown bdev");
    refused(&err, SnapErrorKind::NotFound, "No such device");
}

#[tokio::test]
async fn snap_refusals_surface_snaps_message_and_classify() {
    let Setup { _dir, snap, client } = setup(FakeDialect::Snap4);
    client
        .bdev_nvme_attach_controller(&remote("R"))
        .execute()
        .await
        .expect("attach");
    let emu = NvmeEmulation::new(client.clone(), SnapDialect::Snap4).expect("emu");
    emu.create_subsystem(NQN, &SubsystemParams::default())
        .await
        .expect("sub");
    let err = emu
        .create_subsystem(NQN, &SubsystemParams::default())
        .await
        .expect_err("dup");
    refused(&err, SnapErrorKind::AlreadyExists, "already exists");
    let named = ControllerParams {
        name: Some("c0".to_owned()),
        ..pf(0)
    };
    let ctrl = emu.create_controller(NQN, &named).await.expect("ctrl");
    let err = emu
        .create_controller(NQN, &named)
        .await
        .expect_err("name taken");
    refused(
        &err,
        SnapErrorKind::AlreadyExists,
        "Controller c0 already exists",
    );
    let err = emu
        .create_controller(NQN, &pf(0))
        .await
        .expect_err("function taken");
    refused(
        &err,
        SnapErrorKind::AlreadyExists,
        "already exists on function pf0",
    );
    let err = emu
        .create_controller(NQN, &pf(9))
        .await
        .expect_err("no such function");
    refused(&err, SnapErrorKind::NotFound, "pf_id 9");
    let ids = NamespaceIds::default();
    let err = emu
        .add_namespace(NQN, &ctrl, 1, "ghost", &ids)
        .await
        .expect_err("unknown bdev");
    refused(&err, SnapErrorKind::NotFound, "bdev ghost not found");
    // Attaching to a suspended or a running controller both work.
    emu.add_namespace(NQN, &ctrl, 1, "Rn1", &ids)
        .await
        .expect("ns");
    let err = client
        .nvme_controller_attach_ns(&ctrl.name, 1)
        .execute()
        .await
        .expect_err("attached twice");
    refused(
        &err,
        SnapErrorKind::AlreadyExists,
        "Namespace 1 already attached",
    );
    let err = client
        .nvme_namespace_destroy(NQN, 1)
        .execute()
        .await
        .expect_err("in use");
    refused(&err, SnapErrorKind::Busy, "in use");
    emu.start_controller(&ctrl).await.expect("resume");
    let err = emu.start_controller(&ctrl).await.expect_err("resume twice");
    refused(&err, SnapErrorKind::Busy, "is not suspended");
    let err = emu
        .destroy_subsystem(NQN)
        .await
        .expect_err("has controllers");
    refused(&err, SnapErrorKind::Busy, "busy");
    let err = client
        .nvme_controller_destroy("NVMeCtrl99", false)
        .execute()
        .await
        .expect_err("unknown ctrl");
    refused(
        &err,
        SnapErrorKind::NotFound,
        "Controller NVMeCtrl99 not found",
    );
    assert_eq!(snap.state().controllers.len(), 1);
}

#[tokio::test]
async fn cut_reply_is_transient_and_the_next_call_reconnects() {
    let Setup { _dir, snap, client } = setup(FakeDialect::Snap4);
    snap.cut_next_reply("bdev_get_bdevs");
    let err = client
        .bdev_get_bdevs(None)
        .execute()
        .await
        .expect_err("cut mid-reply");
    assert!(err.is_transient(), "{err:?}");
    assert_eq!(err.kind(), SnapErrorKind::Transient);
    assert!(client
        .bdev_get_bdevs(None)
        .execute()
        .await
        .expect("again")
        .is_empty());
}

#[tokio::test]
async fn slow_reply_hits_the_per_call_deadline() {
    let Setup { _dir, snap, client } = setup(FakeDialect::Snap4);
    snap.delay_replies(Some(Duration::from_millis(500)));
    let err = client
        .bdev_get_bdevs(None)
        .timeout(Duration::from_millis(50))
        .execute()
        .await
        .expect_err("too slow");
    assert!(err.is_transient(), "{err:?}");
    assert!(
        matches!(&err, SnapError::Rpc { source: dpu_jsonrpc_timeout, .. } if dpu_jsonrpc_timeout.to_string().contains("no reply within")),
        "{err:?}"
    );
    snap.delay_replies(None);
    client
        .bdev_get_bdevs(None)
        .execute()
        .await
        .expect("fast again");
}

#[tokio::test]
async fn restart_loses_all_state() {
    let Setup {
        _dir,
        mut snap,
        client,
    } = setup(FakeDialect::Snap4);
    client
        .bdev_nvme_attach_controller(&remote("R"))
        .execute()
        .await
        .expect("attach");
    let emu = NvmeEmulation::new(client.clone(), SnapDialect::Snap4).expect("emu");
    emu.create_subsystem(NQN, &SubsystemParams::default())
        .await
        .expect("sub");
    snap.restart().expect("restart");
    let state = snap.state();
    assert!(state.bdevs.is_empty() && state.subsystems.is_empty());
    // The old connection is gone; the client may see that once, then reconnects.
    let mut listed = client.nvme_subsystem_list().execute().await;
    if let Err(e) = &listed {
        assert!(e.is_transient(), "{e:?}");
        listed = client.nvme_subsystem_list().execute().await;
    }
    assert!(listed.expect("list").is_empty());
    assert!(client
        .bdev_get_bdevs(None)
        .execute()
        .await
        .expect("bdevs")
        .is_empty());
}
