//! The SNAP backend of `dpu-nvmeof` against the stateful [`FakeSnap`]: both dialects' expose
//! flows and their reverse, `bdev_get_iostat` in both request forms, SNAP's refusals
//! surfacing with its own message, and transport faults (cut reply, slow reply, restart).

mod agent;
mod cli;
mod demo;

use std::path::PathBuf;
use std::time::Duration;

use dpu_nvmeof::snap::{
    AddressFamilyParam, AttachController, ControllerCreate, EmulatedFunction, NamespaceCreate,
    SubsystemCreate, TransportType,
};
use dpu_nvmeof::{NvmeEmulation, SnapClient, SnapDialect, SnapError, SnapErrorKind};
use dpu_tests::fake_snap::{FakeDialect, FakeSnap, IostatForm};
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

    let emu = NvmeEmulation::detect(client.clone())
        .await
        .expect("detect")
        .expect("SNAP");
    assert_eq!(emu.dialect(), SnapDialect::Snap4);
    emu.create_subsystem(NQN, "SN0001", "BlueField NVMe")
        .await
        .expect("subsystem");
    let ctrl = emu
        .create_controller(NQN, &EmulatedFunction::Pf { pf_id: 0 })
        .await
        .expect("controller");
    let state = snap.state();
    assert!(state.controllers[&ctrl.name].suspended, "created suspended");
    emu.add_namespace(
        NQN,
        &ctrl,
        1,
        "RemoteNvme0n1",
        Some("11111111-2222-3333-4444-555555555555"),
    )
    .await
    .expect("namespace");
    emu.start_controller(&ctrl).await.expect("resume");
    let state = snap.state();
    assert!(!state.controllers[&ctrl.name].suspended);
    assert!(state.controllers[&ctrl.name].namespaces.contains(&1));
    let subsystems = client.nvme_subsystem_list().execute().await.expect("list");
    assert_eq!(subsystems[0].nqn, NQN);
    assert_eq!(subsystems[0].namespaces[0].bdev, "RemoteNvme0n1");
    assert_eq!(subsystems[0].controllers[0].ctrl_id, ctrl.name);
    let controllers = client.nvme_controller_list().execute().await.expect("list");
    assert_eq!(controllers[0].suspended, Some(false));

    // The wire: exact methods and keys of the reference flow.
    let sent: Vec<_> = snap.requests();
    let create = sent
        .iter()
        .find(|(m, _)| m == "nvme_controller_create")
        .expect("sent");
    assert_eq!(
        create.1,
        serde_json::json!({"nqn": NQN, "pf_id": 0, "suspended": true})
    );
    let attach = sent
        .iter()
        .find(|(m, _)| m == "nvme_controller_attach_ns")
        .expect("sent");
    assert_eq!(
        attach.1,
        serde_json::json!({"ctrl_id": ctrl.name, "nsid": 1})
    );

    // Reverse: suspend, detach + destroy namespace, destroy controller, subsystem, remote.
    client
        .nvme_controller_suspend(&ctrl.name)
        .execute()
        .await
        .expect("suspend");
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
async fn snap4_raw_methods_by_bdf() {
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
    };
    client
        .nvme_subsystem_create(&sub)
        .execute()
        .await
        .expect("sub");
    client
        .nvme_namespace_create(&NamespaceCreate::new(NQN, 1, "R1n1", None))
        .execute()
        .await
        .expect("ns");
    let create = ControllerCreate {
        nqn: NQN.to_owned(),
        pf_id: None,
        vf_id: None,
        pci_bdf: Some("af:00.2".to_owned()),
        suspended: false,
    };
    let ctrl = client
        .nvme_controller_create(&create)
        .execute()
        .await
        .expect("ctrl");
    assert!(
        snap.state().controllers[&ctrl.ctrl_id].suspended,
        "always suspended"
    );
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
    emu.create_subsystem(NQN, "SN1", "MN1").await.expect("sub");
    let ctrl = emu
        .create_controller(NQN, &EmulatedFunction::Vf { pf_id: 0, vf_id: 2 })
        .await
        .expect("ctrl");
    assert!(ctrl.cntlid.is_some());
    emu.add_namespace(NQN, &ctrl, 1, "RemoteNvme0n1", None)
        .await
        .expect("ns");
    emu.start_controller(&ctrl).await.expect("no-op on SNAP 3");
    assert!(snap.state().controllers[&ctrl.name].namespaces.contains(&1));
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
async fn iostat_in_both_request_forms() {
    let Setup { _dir, snap, client } = setup(FakeDialect::Snap4);
    client
        .bdev_nvme_attach_controller(&remote("R"))
        .execute()
        .await
        .expect("attach");
    assert!(snap.record_io("Rn1", 8192, 4096));
    for form in [
        IostatForm::NamesOnly,
        IostatForm::NameOnly,
        IostatForm::Both,
    ] {
        snap.set_iostat_form(form);
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
    let forms: Vec<_> = snap
        .requests()
        .into_iter()
        .filter(|(m, _)| m == "bdev_get_iostat")
        .map(|(_, p)| p)
        .collect();
    // names (ok), names (refused) + name (ok), names (ok).
    assert_eq!(forms.len(), 4, "{forms:?}");
    assert_eq!(forms[2], serde_json::json!({"name": "Rn1"}));
    let all = client.bdev_get_iostat(None).execute().await.expect("all");
    assert_eq!(all.bdevs.len(), 1);
    let err = client
        .bdev_get_iostat(Some("nope"))
        .execute()
        .await
        .expect_err("unknown bdev");
    refused(&err, SnapErrorKind::NotFound, "Bdev nope does not exist");
}

#[tokio::test]
async fn refusals_surface_snaps_message_and_classify() {
    let Setup {
        _dir,
        snap: _snap,
        client,
    } = setup(FakeDialect::Snap4);
    client
        .bdev_nvme_attach_controller(&remote("R"))
        .execute()
        .await
        .expect("attach");
    let err = client
        .bdev_nvme_attach_controller(&remote("R"))
        .execute()
        .await
        .expect_err("duplicate");
    refused(
        &err,
        SnapErrorKind::AlreadyExists,
        "A controller named R already exists",
    );
    let emu = NvmeEmulation::new(client.clone(), SnapDialect::Snap4).expect("emu");
    emu.create_subsystem(NQN, "s", "m").await.expect("sub");
    let err = emu.create_subsystem(NQN, "s", "m").await.expect_err("dup");
    refused(&err, SnapErrorKind::AlreadyExists, "already exists");
    let ctrl = emu
        .create_controller(NQN, &EmulatedFunction::Pf { pf_id: 0 })
        .await
        .expect("ctrl");
    let err = emu
        .create_controller(NQN, &EmulatedFunction::Pf { pf_id: 0 })
        .await
        .expect_err("function taken");
    refused(&err, SnapErrorKind::AlreadyExists, "pf0 already exists");
    let err = emu
        .add_namespace(NQN, &ctrl, 1, "ghost", None)
        .await
        .expect_err("unknown bdev");
    refused(&err, SnapErrorKind::NotFound, "bdev ghost not found");
    emu.add_namespace(NQN, &ctrl, 1, "Rn1", None)
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
    let err = client
        .bdev_get_bdevs(Some("ghost"))
        .execute()
        .await
        .expect_err("unknown bdev");
    refused(&err, SnapErrorKind::NotFound, "ghost not found");
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
    emu.create_subsystem(NQN, "s", "m").await.expect("sub");
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
