//! virtio-blk controllers through the agent over the fake SNAP, both dialects: created,
//! listed, got and deleted; applied twice with one create; re-created after SNAP restarted
//! and lost them; a create whose reply was lost rolled back by the agent's own name; a
//! function an NVMe controller has refused naming both; and bad input refused field by
//! field with nothing sent to SNAP.

use super::*;
use dpu_tests::fake_snap::FakePf;

/// An agent over a fake of `dialect` whose table has a virtio-blk PF (`03:00.4`) beside the
/// NVMe ones, with remote controller `r0` attached (volumes `r0n1`).
async fn vblk_bench(dialect: FakeDialect) -> (Bench, StorageClient<Channel>) {
    let bench = Bench::start_with(dialect, "[storage]\nreconcile_interval = 1\n", |snap| {
        let mut table = FakePf::default_table();
        table.push(FakePf::virtio_blk(0));
        snap.set_functions(table);
    });
    let mut storage = bench.client().await;
    storage
        .create_remote_controller(v1::CreateRemoteControllerRequest {
            remote_controller_id: "r0".to_owned(),
            spec: Some(remote_spec()),
            options: None,
        })
        .await
        .expect("remote");
    (bench, storage)
}

fn pci(bdf: &str) -> v1::EmulationFunction {
    v1::EmulationFunction {
        function: Some(v1::emulation_function::Function::PciAddress(
            v1::PciAddress {
                bdf: bdf.to_owned(),
            },
        )),
    }
}

fn disk(function: v1::EmulationFunction) -> v1::VirtioBlkController {
    v1::VirtioBlkController {
        function: Some(function),
        volume: "volumes/r0n1".to_owned(),
        num_queues: 4,
        queue_size: 256,
        serial: "VM1DISK".to_owned(),
        ..Default::default()
    }
}

fn create_request(id: &str, ctrl: v1::VirtioBlkController) -> v1::CreateVirtioBlkControllerRequest {
    v1::CreateVirtioBlkControllerRequest {
        virtio_blk_controller_id: id.to_owned(),
        virtio_blk_controller: Some(ctrl),
        options: None,
    }
}

fn creates(bench: &Bench) -> usize {
    bench.calls("virtio_blk_controller_create") + bench.calls("controller_virtio_blk_create")
}

async fn create_list_get_delete(dialect: FakeDialect) {
    let (bench, mut storage) = vblk_bench(dialect).await;
    let made = storage
        .create_virtio_blk_controller(create_request("vm1", disk(pf0())))
        .await
        .expect("create")
        .into_inner();
    assert_eq!(made.name, "virtioBlkControllers/vm1");
    assert_eq!(made.volume, "volumes/r0n1");
    // SNAP 3 controllers run from creation; SNAP 4's list publishes no run state, so the
    // agent says unknown rather than passing the desired state off as observed.
    let observed = match dialect {
        FakeDialect::Snap4 => v1::ControllerState::Unspecified,
        FakeDialect::Snap3 => v1::ControllerState::Running,
    } as i32;
    assert_eq!(made.state, observed, "{made:?}");
    let state = bench.snap.state();
    assert_eq!(state.virtio_blk.len(), 1, "{state:?}");
    let (name, kept) = state.virtio_blk.iter().next().expect("one");
    assert_eq!(made.backend_id, *name);
    assert_eq!(
        (kept.function.as_str(), kept.bdev.as_str(), kept.queue_size),
        ("vblk-pf0", "r0n1", 256)
    );
    assert_eq!(kept.serial, "VM1DISK");
    match dialect {
        FakeDialect::Snap4 => {
            assert_eq!(name, "vm1_vblk", "the agent's own name");
            // The function was checked free first, and its address learnt.
            assert!(
                bench.first("emulation_function_list")
                    < bench.first("virtio_blk_controller_create")
            );
            assert_eq!(
                made.host_pci_address.map(|p| p.bdf).as_deref(),
                Some("0000:03:00.4")
            );
        }
        FakeDialect::Snap3 => {
            assert!(name.starts_with("VblkEmu"), "{name}");
            assert_eq!(
                bench.snap.requests_of("controller_virtio_blk_create")[0]["emulation_manager"],
                "mlx5_0"
            );
        }
    }
    // The same request again: accepted, nothing sent.
    storage
        .create_virtio_blk_controller(create_request("vm1", disk(pf0())))
        .await
        .expect("again");
    assert_eq!(creates(&bench), 1);
    let listed = storage
        .list_virtio_blk_controllers(v1::ListVirtioBlkControllersRequest { page: None })
        .await
        .expect("list")
        .into_inner()
        .virtio_blk_controllers;
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0].state, observed);
    let got = storage
        .get_virtio_blk_controller(v1::GetVirtioBlkControllerRequest {
            name: "virtioBlkControllers/vm1".to_owned(),
        })
        .await
        .expect("get")
        .into_inner();
    assert_eq!(got.serial, "VM1DISK");
    // The volume backs it: no namespace may take it, and the remote cannot go.
    storage
        .create_subsystem(v1::CreateSubsystemRequest {
            subsystem: Some(v1::Subsystem {
                nqn: HOST_NQN.to_owned(),
                ..Default::default()
            }),
            options: None,
        })
        .await
        .expect("subsystem");
    let err = storage
        .create_namespace(v1::CreateNamespaceRequest {
            parent: format!("subsystems/{HOST_NQN}"),
            namespace: Some(v1::Namespace {
                nsid: 1,
                volume: "volumes/r0n1".to_owned(),
                ..Default::default()
            }),
            options: None,
        })
        .await
        .expect_err("the volume is taken");
    assert_eq!(err.code(), Code::FailedPrecondition, "{}", err.message());
    assert!(
        err.message().contains("virtioBlkControllers/vm1"),
        "{}",
        err.message()
    );
    let err = storage
        .delete_remote_controller(v1::DeleteRemoteControllerRequest {
            name: "remoteControllers/r0".to_owned(),
            allow_missing: false,
            options: None,
        })
        .await
        .expect_err("in use");
    assert_eq!(err.code(), Code::FailedPrecondition, "{}", err.message());
    assert!(
        err.message().contains("virtioBlkControllers/vm1"),
        "{}",
        err.message()
    );
    // Deleted: gone from SNAP and from the listing.
    let deleted = storage
        .delete_virtio_blk_controller(v1::DeleteVirtioBlkControllerRequest {
            name: "virtioBlkControllers/vm1".to_owned(),
            allow_missing: false,
            options: None,
        })
        .await
        .expect("delete")
        .into_inner();
    assert!(deleted.deleted);
    assert!(bench.snap.state().virtio_blk.is_empty());
    let err = storage
        .get_virtio_blk_controller(v1::GetVirtioBlkControllerRequest {
            name: "virtioBlkControllers/vm1".to_owned(),
        })
        .await
        .expect_err("gone");
    assert_eq!(err.code(), Code::NotFound);
    assert!(
        !saved_text(&bench.state_file()).contains("vm1"),
        "forgotten"
    );
}

#[tokio::test]
async fn snap4_virtio_blk_is_created_listed_and_deleted_once() {
    create_list_get_delete(FakeDialect::Snap4).await;
}

#[tokio::test]
async fn snap3_virtio_blk_is_created_listed_and_deleted_once() {
    create_list_get_delete(FakeDialect::Snap3).await;
}

async fn snap_restart_recreates(dialect: FakeDialect) {
    let (bench, mut storage) = vblk_bench(dialect).await;
    storage
        .create_virtio_blk_controller(create_request("vm1", disk(pf0())))
        .await
        .expect("create");
    assert_eq!(creates(&bench), 1);
    let mut bench = bench;
    bench.snap.restart().expect("restart SNAP");
    assert!(bench.snap.state().virtio_blk.is_empty(), "SNAP lost it");
    wait_for(
        "the reconciler to re-create it",
        Duration::from_secs(20),
        || {
            bench
                .snap
                .state()
                .virtio_blk
                .values()
                .any(|c| c.bdev == "r0n1" && c.function == "vblk-pf0")
        },
    )
    .await;
    assert_eq!(creates(&bench), 2, "re-created once");
    // Asked again, nothing is created twice.
    storage
        .create_virtio_blk_controller(create_request("vm1", disk(pf0())))
        .await
        .expect("again");
    assert_eq!(creates(&bench), 2, "converging again changes nothing");
    assert_eq!(bench.snap.state().virtio_blk.len(), 1);
}

#[tokio::test]
async fn snap4_virtio_blk_is_recreated_after_snap_restarts() {
    snap_restart_recreates(FakeDialect::Snap4).await;
}

#[tokio::test]
async fn snap3_virtio_blk_is_recreated_after_snap_restarts() {
    snap_restart_recreates(FakeDialect::Snap3).await;
}

#[tokio::test]
async fn a_lost_virtio_blk_create_reply_is_rolled_back_by_the_agents_name() {
    let (bench, mut storage) = vblk_bench(FakeDialect::Snap4).await;
    bench.snap.cut_next_reply("virtio_blk_controller_create");
    let err = storage
        .create_virtio_blk_controller(create_request("vm1", disk(pf0())))
        .await
        .expect_err("the reply was lost");
    assert!(
        err.message()
            .contains("rolled back: the change left nothing behind"),
        "{}",
        err.message()
    );
    // SNAP did create it (the control: the destroy names what the create made) and the
    // rollback removed it by the name the agent gave.
    let created = bench.snap.requests_of("virtio_blk_controller_create");
    let destroyed = bench.snap.requests_of("virtio_blk_controller_destroy");
    assert_eq!(created.len(), 1);
    assert_eq!(destroyed.len(), 1, "{destroyed:?}");
    assert_eq!(destroyed[0]["ctrl"], created[0]["ctrl"]);
    assert!(
        bench.snap.state().virtio_blk.is_empty(),
        "{:?}",
        bench.snap.state()
    );
    assert!(!saved_text(&bench.state_file()).contains("vm1"));
    // Asked again, it is made once.
    storage
        .create_virtio_blk_controller(create_request("vm1", disk(pf0())))
        .await
        .expect("create");
    assert_eq!(bench.snap.state().virtio_blk.len(), 1);
}

#[tokio::test]
async fn a_function_an_nvme_controller_has_is_refused_naming_both() {
    let (bench, mut storage) = vblk_bench(FakeDialect::Snap4).await;
    storage
        .create_subsystem(v1::CreateSubsystemRequest {
            subsystem: Some(v1::Subsystem {
                nqn: HOST_NQN.to_owned(),
                ..Default::default()
            }),
            options: None,
        })
        .await
        .expect("subsystem");
    storage
        .create_controller(create_controller_request("c0", pci("03:00.2")))
        .await
        .expect("nvme controller");
    let err = storage
        .create_virtio_blk_controller(create_request("vm1", disk(pci("0000:03:00.2"))))
        .await
        .expect_err("taken");
    assert_eq!(err.code(), Code::AlreadyExists, "{}", err.message());
    assert!(
        err.message().contains("virtioBlkControllers/vm1")
            && err
                .message()
                .contains(&format!("subsystems/{HOST_NQN}/controllers/c0")),
        "{}",
        err.message()
    );
    assert_eq!(creates(&bench), 0, "nothing reached SNAP");
    // Control: the virtio-blk PF 0 is another function than the NVMe PF 0, and is free.
    storage
        .create_virtio_blk_controller(create_request("vm1", disk(pf0())))
        .await
        .expect("virtio-blk PF 0");
    // And an NVMe function named by a virtio-blk placement is refused by SNAP's list.
    let err = storage
        .create_virtio_blk_controller(v1::CreateVirtioBlkControllerRequest {
            virtio_blk_controller_id: "vm2".to_owned(),
            virtio_blk_controller: Some(v1::VirtioBlkController {
                volume: "volumes/r0n2".to_owned(),
                ..disk(pci("03:00.3"))
            }),
            options: None,
        })
        .await
        .expect_err("an NVMe function");
    assert_eq!(err.code(), Code::FailedPrecondition, "{}", err.message());
    assert!(
        err.message().contains("not a virtio-blk function"),
        "{}",
        err.message()
    );
    assert_eq!(creates(&bench), 1);
}

#[tokio::test]
async fn bad_virtio_blk_input_is_refused_naming_the_field() {
    let (bench, mut storage) = vblk_bench(FakeDialect::Snap4).await;
    let cases: Vec<(&str, v1::CreateVirtioBlkControllerRequest)> = vec![
        (
            "virtio_blk_controller_id",
            create_request("1vm", disk(pf0())),
        ),
        (
            "virtio_blk_controller_id",
            create_request("vm/1", disk(pf0())),
        ),
        (
            "virtio_blk_controller",
            v1::CreateVirtioBlkControllerRequest {
                virtio_blk_controller: None,
                ..create_request("vm1", disk(pf0()))
            },
        ),
        (
            "virtio_blk_controller.function",
            create_request(
                "vm1",
                v1::VirtioBlkController {
                    function: None,
                    ..disk(pf0())
                },
            ),
        ),
        (
            "virtio_blk_controller.function.pci_address.bdf",
            create_request("vm1", disk(pci("0001:03:00.4"))),
        ),
        (
            "virtio_blk_controller.volume",
            create_request(
                "vm1",
                v1::VirtioBlkController {
                    volume: "r0n1".to_owned(),
                    ..disk(pf0())
                },
            ),
        ),
        (
            "virtio_blk_controller.num_queues",
            create_request(
                "vm1",
                v1::VirtioBlkController {
                    num_queues: 5000,
                    ..disk(pf0())
                },
            ),
        ),
        (
            "virtio_blk_controller.queue_size",
            create_request(
                "vm1",
                v1::VirtioBlkController {
                    queue_size: 100,
                    ..disk(pf0())
                },
            ),
        ),
        (
            "virtio_blk_controller.queue_size",
            create_request(
                "vm1",
                v1::VirtioBlkController {
                    queue_size: 65536,
                    ..disk(pf0())
                },
            ),
        ),
        (
            "virtio_blk_controller.serial",
            create_request(
                "vm1",
                v1::VirtioBlkController {
                    serial: "S".repeat(21),
                    ..disk(pf0())
                },
            ),
        ),
        (
            "virtio_blk_controller.serial",
            create_request(
                "vm1",
                v1::VirtioBlkController {
                    serial: "bad\nserial".to_owned(),
                    ..disk(pf0())
                },
            ),
        ),
    ];
    for (field, request) in cases {
        let err = storage
            .create_virtio_blk_controller(request.clone())
            .await
            .expect_err(field);
        assert_eq!(
            err.code(),
            Code::InvalidArgument,
            "{field}: {}",
            err.message()
        );
        assert!(err.message().contains(field), "{field}: {}", err.message());
    }
    // A volume that does not exist is a precondition, naming it.
    let err = storage
        .create_virtio_blk_controller(create_request(
            "vm1",
            v1::VirtioBlkController {
                volume: "volumes/Nope".to_owned(),
                ..disk(pf0())
            },
        ))
        .await
        .expect_err("no such volume");
    assert_eq!(err.code(), Code::FailedPrecondition, "{}", err.message());
    assert!(err.message().contains("volumes/Nope"), "{}", err.message());
    for name in [
        "virtioBlkControllers/1x",
        "remoteControllers/r0",
        "virtioBlkControllers/",
    ] {
        let err = storage
            .get_virtio_blk_controller(v1::GetVirtioBlkControllerRequest {
                name: name.to_owned(),
            })
            .await
            .expect_err(name);
        assert_eq!(
            err.code(),
            Code::InvalidArgument,
            "{name}: {}",
            err.message()
        );
        assert!(err.message().contains("name"), "{name}: {}", err.message());
    }
    assert_eq!(creates(&bench), 0, "nothing reached SNAP");
    assert!(
        !saved_text(&bench.state_file()).contains("virtio"),
        "nor the state file"
    );
    // Control: the same request with good values is accepted.
    storage
        .create_virtio_blk_controller(create_request("vm1", disk(pf0())))
        .await
        .expect("good input");
}

/// `dpuctl storage virtio-blk create|list|get|delete`, `-o json` read back.
#[tokio::test]
async fn dpuctl_creates_lists_gets_and_deletes_virtio_blk_controllers() {
    let (bench, _storage) = vblk_bench(FakeDialect::Snap4).await;
    let endpoint = bench.agent().endpoint();
    let dpuctl = |args: &[&str]| {
        let mut all = vec![
            "--agent",
            endpoint.as_str(),
            "-o",
            "json",
            "storage",
            "virtio-blk",
        ];
        all.extend_from_slice(args);
        let out = dpu_tests::harness::dpuctl(&all);
        (
            out.status.code(),
            serde_json::from_slice::<Value>(&out.stdout).unwrap_or(Value::Null),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let (code, made, err) = dpuctl(&[
        "create",
        "--id",
        "vm1",
        "--volume",
        "r0n1",
        "--pci",
        "0000:03:00.4",
        "--num-queues",
        "4",
        "--queue-size",
        "128",
        "--serial",
        "VM1",
    ]);
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(made["name"], "virtioBlkControllers/vm1", "{made}");
    assert_eq!(made["volume"], "volumes/r0n1");
    assert_eq!(bench.snap.state().virtio_blk["vm1_vblk"].pci_bdf, "03:00.4");
    let (code, listed, err) = dpuctl(&["list"]);
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(
        listed["virtioBlkControllers"][0]["backendId"], "vm1_vblk",
        "{listed}"
    );
    let (code, got, err) = dpuctl(&["get", "vm1"]);
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(got["serial"], "VM1", "{got}");
    // A bad field is refused by the agent, naming it; a non-zero exit.
    let (code, _, err) = dpuctl(&[
        "create",
        "--id",
        "vm2",
        "--volume",
        "r0n1",
        "--pf",
        "0",
        "--queue-size",
        "100",
    ]);
    assert_ne!(code, Some(0));
    assert!(err.contains("queue_size"), "{err}");
    let (code, reply, err) = dpuctl(&["delete", "vm1"]);
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(reply["deleted"], true, "{reply}");
    assert!(bench.snap.state().virtio_blk.is_empty());
    let (code, _, err) = dpuctl(&["get", "vm1"]);
    assert_ne!(code, Some(0), "gone");
    assert!(err.contains("does not exist"), "{err}");
}

/// The keys each documented client sends for a virtio-blk method (docs/reference/storage.md
/// §2.6): mlnx_snap 3's from its own `snap_rpc.py`, DOCA SNAP 4's from the CLI flags of
/// NVIDIA's live-upgrade and lab scripts (UNVERIFIED), with the ones every request needs.
fn documented(method: &str) -> Option<(&'static [&'static str], &'static [&'static str])> {
    Some(match method {
        "controller_virtio_blk_create" => (
            &[
                "emulation_manager",
                "bdev_type",
                "recover",
                "pci_bdf",
                "pf_id",
                "vf_id",
                "num_queues",
                "queue_depth",
                "size_max",
                "seg_max",
                "bdev",
                "serial",
                "force_in_order",
                "suspend",
                "mem",
                "vuid",
                "admin_q",
            ],
            &["emulation_manager", "bdev_type"],
        ),
        "controller_virtio_blk_delete" => (&["name", "vuid", "force"], &[]),
        "virtio_blk_controller_create" => (
            &[
                "ctrl",
                "pf_id",
                "vf_id",
                "pci_bdf",
                "vuid",
                "vhca_id",
                "bdev",
                "num_queues",
                "queue_size",
                "seg_max",
                "size_max",
                "serial",
                "vblk_id",
                "suspended",
                "live_update_listener",
                "force_in_order",
                "admin_q",
                "read_only",
            ],
            &[],
        ),
        "virtio_blk_controller_destroy" => (&["ctrl", "force"], &["ctrl"]),
        "virtio_blk_controller_list" | "controller_list" => (&["ctrl", "type"], &[]),
        _ => return None,
    })
}

/// What in `params` of `method` no documented client sends, or that one needs and is
/// missing; empty when it conforms.
fn off_the_documented_shape(method: &str, params: &Value) -> Vec<String> {
    let Some((allowed, required)) = documented(method) else {
        return vec![format!("{method} is not a documented virtio-blk method")];
    };
    let keys: Vec<&str> = params
        .as_object()
        .map(|m| m.keys().map(String::as_str).collect())
        .unwrap_or_default();
    let mut off: Vec<String> = keys
        .iter()
        .filter(|k| !allowed.contains(k))
        .map(|k| format!("{method}: unknown key {k}"))
        .collect();
    off.extend(
        required
            .iter()
            .filter(|k| !keys.contains(k))
            .map(|k| format!("{method}: missing {k}")),
    );
    off
}

/// Conformance: every virtio-blk request the agent made in both dialects has the
/// documented shape, and the check catches a request that has not.
#[tokio::test]
async fn the_agents_virtio_blk_requests_have_the_documented_shapes() {
    let mut checked = 0;
    for dialect in [FakeDialect::Snap4, FakeDialect::Snap3] {
        let (bench, mut storage) = vblk_bench(dialect).await;
        storage
            .create_virtio_blk_controller(create_request("vm1", disk(pf0())))
            .await
            .expect("create");
        storage
            .list_virtio_blk_controllers(v1::ListVirtioBlkControllersRequest { page: None })
            .await
            .expect("list");
        storage
            .delete_virtio_blk_controller(v1::DeleteVirtioBlkControllerRequest {
                name: "virtioBlkControllers/vm1".to_owned(),
                allow_missing: false,
                options: None,
            })
            .await
            .expect("delete");
        for (method, params) in bench.snap.requests() {
            if method.contains("virtio_blk") || method == "controller_list" {
                let off = off_the_documented_shape(&method, &params);
                assert!(off.is_empty(), "{dialect:?}: {off:?} in {params}");
                checked += 1;
            }
        }
    }
    assert!(
        checked >= 6,
        "creates, lists and deletes of both dialects: {checked}"
    );
    // Negative controls: the other dialect's key, a missing required key.
    assert!(!off_the_documented_shape(
        "controller_virtio_blk_create",
        &json!({"emulation_manager": "mlx5_0", "bdev_type": "spdk", "ctrl": "x"})
    )
    .is_empty());
    assert!(
        !off_the_documented_shape("virtio_blk_controller_destroy", &json!({"name": "x"}))
            .is_empty()
    );
    assert!(!off_the_documented_shape(
        "virtio_blk_controller_create",
        &json!({"pf_id": 0, "queue_depth": 64})
    )
    .is_empty());
}
