//! The agent's declarative Storage service over the stateful fake SNAP: whole exposures in
//! both dialects, idempotence, rollback of a change that fails half-way, dry runs, the
//! fine-grained objects and their rules, io stats, and reconciliation after an agent
//! SIGKILL and after a SNAP restart that lost everything. The fake answers as SPDK v24.01
//! and the public SNAP clients show, so these also pin the agent's wire contract: it asks
//! `bdev_nvme_get_controllers` before attaching, sends serial/model only when set, names
//! SNAP 4 controllers itself (`ctrl`), checks `emulation_function_list` first, sends its own
//! namespace UUID, reads run state from `nvme_subsystem_list`, picks the
//! `bdev_get_iostat` form from `spdk_get_version`, and finds SNAP 3's emulation manager
//! with `emulation_managers_list`.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use dpu_proto::v1;
use dpu_proto::v1::storage_client::StorageClient;
use dpu_tests::fake_snap::{FakeDialect, FakeSnap, FakeSnapState};
use dpu_tests::fixture;
use dpu_tests::harness::{AgentOptions, AgentProcess};
use serde_json::{json, Value};
use tonic::transport::Channel;
use tonic::Code;

const HOST_NQN: &str = "nqn.2022-10.io.nvda.nvme:0";
const REMOTE_NQN: &str = "nqn.2016-06.io.spdk:cnode1";

struct Bench {
    options: AgentOptions,
    snap: FakeSnap,
    agent: Option<AgentProcess>,
    _root: PathBuf,
    _dir: tempfile::TempDir,
}

impl Bench {
    fn start(dialect: FakeDialect, config: &str) -> Self {
        Self::start_with(dialect, config, |_| {})
    }

    /// Like [`start`](Self::start), setting the fake's knobs before the agent runs.
    fn start_with(dialect: FakeDialect, config: &str, configure: impl FnOnce(&FakeSnap)) -> Self {
        let (dir, root) = fixture::bluefield3_tempdir();
        let mut options = AgentOptions::new(dir.path(), &root);
        options.config_toml = config.to_owned();
        let snap = FakeSnap::start_with(&options.snap_socket, dialect).expect("fake SNAP");
        configure(&snap);
        let agent = Some(AgentProcess::start(&options));
        Self {
            options,
            snap,
            agent,
            _root: root,
            _dir: dir,
        }
    }

    async fn client(&self) -> StorageClient<Channel> {
        StorageClient::new(self.agent().channel().await)
    }

    fn agent(&self) -> &AgentProcess {
        self.agent.as_ref().expect("agent running")
    }

    fn state_file(&self) -> PathBuf {
        self.options.dir.join("state/storage.json")
    }

    fn kill_and_restart_agent(&mut self) {
        if let Some(mut agent) = self.agent.take() {
            let status = agent.signal_and_wait("KILL", Duration::from_secs(10));
            assert!(!status.success());
        }
        self.agent = Some(AgentProcess::start(&self.options));
    }

    fn calls(&self, method: &str) -> usize {
        self.snap.requests_of(method).len()
    }

    /// Where `method` was first sent among all requests.
    fn first(&self, method: &str) -> usize {
        let methods: Vec<String> = self.snap.requests().into_iter().map(|(m, _)| m).collect();
        methods
            .iter()
            .position(|m| m == method)
            .unwrap_or_else(|| panic!("{method} never sent: {methods:?}"))
    }

    /// A raw client of the fake, to change SNAP behind the agent's back.
    fn raw(&self) -> dpu_nvmeof::SnapClient {
        dpu_nvmeof::SnapClient::new(self.snap.path())
    }
}

fn pf0() -> v1::EmulationFunction {
    v1::EmulationFunction {
        function: Some(v1::emulation_function::Function::PfVf(v1::PfVf {
            pf_index: 0,
            vf_index: None,
        })),
    }
}

fn remote_spec() -> v1::RemoteControllerSpec {
    v1::RemoteControllerSpec {
        transport: v1::NvmeTransport::Rdma as i32,
        address_family: v1::AddressFamily::Ipv4 as i32,
        traddr: "192.0.2.10".to_owned(),
        trsvcid: 4420,
        subnqn: REMOTE_NQN.to_owned(),
        ..Default::default()
    }
}

fn exposure(id: &str, dry_run: bool) -> v1::ApplyExposureRequest {
    v1::ApplyExposureRequest {
        exposure_id: id.to_owned(),
        spec: Some(v1::ExposureSpec {
            remote: Some(remote_spec()),
            remote_nsid: 1,
            subsystem_nqn: HOST_NQN.to_owned(),
            nsid: 1,
            function: Some(pf0()),
            serial_number: "SN0001".to_owned(),
            model_number: "BlueField NVMe".to_owned(),
        }),
        options: Some(v1::ApplyOptions {
            timeout: None,
            dry_run,
        }),
    }
}

/// Asserts the fake holds exactly exposure `id`'s chain, with the controller running.
fn assert_exposed(state: &FakeSnapState, id: &str) {
    let bdev = format!("{id}n1");
    assert!(state.bdevs.contains_key(&bdev), "bdev {bdev}: {state:?}");
    let sub = state.subsystems.get(HOST_NQN).expect("subsystem");
    assert_eq!(sub.namespaces[&1].bdev, bdev);
    assert_eq!(state.controllers.len(), 1, "{state:?}");
    let ctrl = state.controllers.values().next().expect("controller");
    assert_eq!(ctrl.function, "pf0");
    assert!(!ctrl.suspended, "running");
    assert!(ctrl.namespaces.contains(&1));
}

fn assert_empty(state: &FakeSnapState) {
    assert!(state.bdevs.is_empty(), "{state:?}");
    assert!(state.subsystems.is_empty(), "{state:?}");
    assert!(state.controllers.is_empty(), "{state:?}");
}

async fn wait_for(what: &str, timeout: Duration, mut check: impl FnMut() -> bool) {
    let deadline = Instant::now() + timeout;
    while !check() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Waits until the fake SNAP runs a controller with namespace 1 attached.
async fn wait_until_running(snap: &FakeSnap, what: &str) {
    wait_for(what, Duration::from_secs(20), || {
        snap.state()
            .controllers
            .values()
            .any(|c| !c.suspended && c.namespaces.contains(&1))
    })
    .await;
}

fn saved_text(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_default()
}

fn is_uuid(v: &Value) -> bool {
    v.as_str().is_some_and(|s| {
        let groups: Vec<&str> = s.split('-').collect();
        groups.len() == 5
            && groups
                .iter()
                .zip([8, 4, 4, 4, 12])
                .all(|(g, n)| g.len() == n && g.chars().all(|c| c.is_ascii_hexdigit()))
    })
}

/// What the agent sent for exposure `e1` (see the module doc).
fn assert_wire_contract(bench: &Bench, dialect: FakeDialect) {
    let snap = &bench.snap;
    let state = snap.state();
    assert_eq!(
        snap.requests_of("bdev_nvme_get_controllers").first(),
        Some(&json!({"name": "e1"}))
    );
    assert!(bench.first("bdev_nvme_get_controllers") < bench.first("bdev_nvme_attach_controller"));
    assert_eq!(
        snap.requests_of("bdev_nvme_attach_controller"),
        [
            json!({"name": "e1", "trtype": "rdma", "adrfam": "ipv4", "traddr": "192.0.2.10",
                "trsvcid": "4420", "subnqn": REMOTE_NQN})
        ]
    );
    let ns_uuid = &state.subsystems[HOST_NQN].namespaces[&1].uuid;
    assert!(
        saved_text(&bench.state_file()).contains(ns_uuid.as_str()),
        "the namespace UUID {ns_uuid} is kept in the desired state"
    );
    match dialect {
        FakeDialect::Snap4 => {
            assert_eq!(
                snap.requests_of("nvme_subsystem_create"),
                [json!({"nqn": HOST_NQN, "serial_number": "SN0001",
                        "model_number": "BlueField NVMe"})]
            );
            assert!(bench.first("emulation_function_list") < bench.first("nvme_controller_create"));
            let create = &snap.requests_of("nvme_controller_create")[0];
            let ctrl = create["ctrl"]
                .as_str()
                .expect("the agent names the controller");
            assert!(state.controllers.contains_key(ctrl), "{create} {state:?}");
            assert_eq!(
                (&create["pf_id"], &create["suspended"]),
                (&json!(0), &json!(true))
            );
            assert!(create.get("pci_bdf").is_none() && create.get("vf_id").is_none());
            let ns = &snap.requests_of("nvme_namespace_create")[0];
            assert!(is_uuid(&ns["uuid"]), "the agent sends its own UUID: {ns}");
            assert_eq!(ns["uuid"], json!(ns_uuid));
            assert_eq!(
                (&ns["bdev_name"], &ns["bdev_type"]),
                (&json!("e1n1"), &json!("spdk"))
            );
        }
        FakeDialect::Snap3 => {
            assert!(bench.first("emulation_managers_list") < bench.first("controller_nvme_create"));
            let create = &snap.requests_of("controller_nvme_create")[0];
            assert_eq!(
                (
                    &create["emulation_manager"],
                    &create["pf_id"],
                    &create["nqn"]
                ),
                (&json!("mlx5_0"), &json!(0), &json!(HOST_NQN))
            );
            let attach = &snap.requests_of("controller_nvme_namespace_attach")[0];
            assert!(is_uuid(&attach["uuid"]), "{attach}");
            assert_eq!(
                snap.requests_of("subsystem_nvme_create")[0]["serial_number"],
                "SN0001"
            );
        }
    }
}

async fn expose_and_undo(dialect: FakeDialect) {
    let bench = Bench::start(dialect, "");
    let mut storage = bench.client().await;
    let first = storage
        .apply_exposure(exposure("e1", false))
        .await
        .expect("apply")
        .into_inner();
    assert_eq!(
        first.controller,
        format!("subsystems/{HOST_NQN}/controllers/e1")
    );
    assert_eq!(first.controller_state, v1::ControllerState::Running as i32);
    assert_exposed(&bench.snap.state(), "e1");
    assert!(saved_text(&bench.state_file()).contains("\"e1\""));
    assert_wire_contract(&bench, dialect);

    // The same spec again changes nothing: no second controller, same SNAP state.
    let before = bench.snap.state();
    let creates = bench.calls("nvme_controller_create") + bench.calls("controller_nvme_create");
    storage
        .apply_exposure(exposure("e1", false))
        .await
        .expect("apply again");
    assert_eq!(bench.snap.state(), before);
    assert_eq!(
        bench.calls("nvme_controller_create") + bench.calls("controller_nvme_create"),
        creates
    );

    let listed = storage
        .list_exposures(v1::ListExposuresRequest::default())
        .await
        .expect("list")
        .into_inner();
    assert_eq!(listed.exposures.len(), 1);
    let remotes = storage
        .list_remote_controllers(v1::ListRemoteControllersRequest::default())
        .await
        .expect("remotes")
        .into_inner();
    let volumes = &remotes.remote_controllers[0]
        .status
        .as_ref()
        .expect("status")
        .volumes;
    assert_eq!(volumes[0].name, "volumes/e1n1");

    let deleted = storage
        .delete_exposure(v1::DeleteExposureRequest {
            name: "exposures/e1".to_owned(),
            allow_missing: false,
            options: None,
        })
        .await
        .expect("delete")
        .into_inner();
    assert!(deleted.deleted);
    assert_empty(&bench.snap.state());
    let again = storage
        .delete_exposure(v1::DeleteExposureRequest {
            name: "exposures/e1".to_owned(),
            allow_missing: true,
            options: None,
        })
        .await
        .expect("delete missing with allow_missing")
        .into_inner();
    assert!(!again.deleted);
    let saved = saved_text(&bench.state_file());
    assert!(!saved.contains("e1"), "state still names e1: {saved}");
}

#[tokio::test]
async fn snap4_exposure_is_applied_idempotently_and_deleted_completely() {
    expose_and_undo(FakeDialect::Snap4).await;
}

#[tokio::test]
async fn snap3_exposure_is_applied_idempotently_and_deleted_completely() {
    expose_and_undo(FakeDialect::Snap3).await;
}

#[tokio::test]
async fn a_change_failing_half_way_is_rolled_back_and_says_so() {
    let bench = Bench::start(FakeDialect::Snap4, "");
    // The reply to the attach is lost mid-way: the agent cannot know whether it happened.
    bench.snap.cut_next_reply("nvme_controller_attach_ns");
    let err = bench
        .client()
        .await
        .apply_exposure(exposure("e1", false))
        .await
        .expect_err("attach reply lost");
    assert!(err.message().contains("rolled back"), "{}", err.message());
    assert!(
        err.message().contains("controllers/e1"),
        "{}",
        err.message()
    );
    assert_empty(&bench.snap.state());
    let saved = saved_text(&bench.state_file());
    assert!(
        !saved.contains("e1"),
        "rolled-back change still saved: {saved}"
    );
}

#[tokio::test]
async fn a_dry_run_reaches_neither_snap_nor_the_state_file() {
    let bench = Bench::start(FakeDialect::Snap4, "");
    let reply = bench
        .client()
        .await
        .apply_exposure(exposure("e1", true))
        .await
        .expect("dry run")
        .into_inner();
    assert_eq!(
        reply.namespace,
        format!("subsystems/{HOST_NQN}/namespaces/1")
    );
    assert_eq!(bench.calls("bdev_nvme_attach_controller"), 0);
    assert_eq!(bench.calls("nvme_subsystem_create"), 0);
    assert!(!bench.state_file().exists());
}

#[tokio::test]
async fn fine_grained_objects_follow_the_rules_and_report_io() {
    let bench = Bench::start(FakeDialect::Snap4, "");
    let mut storage = bench.client().await;
    storage
        .create_remote_controller(v1::CreateRemoteControllerRequest {
            remote_controller_id: "r0".to_owned(),
            spec: Some(remote_spec()),
            options: None,
        })
        .await
        .expect("remote");
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
    // Nothing the operator did not set: SNAP picks serial, model and limits.
    assert_eq!(
        bench.snap.requests_of("nvme_subsystem_create"),
        [json!({"nqn": HOST_NQN})]
    );
    storage
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
        .expect("namespace");
    let ctrl_name = format!("subsystems/{HOST_NQN}/controllers/c0");
    let ctrl = storage
        .create_controller(v1::CreateControllerRequest {
            parent: format!("subsystems/{HOST_NQN}"),
            controller_id: "c0".to_owned(),
            controller: Some(v1::Controller {
                function: Some(pf0()),
                ..Default::default()
            }),
            options: None,
        })
        .await
        .expect("controller")
        .into_inner();
    assert_eq!(ctrl.state, v1::ControllerState::Suspended as i32);
    storage
        .attach_namespace(v1::AttachNamespaceRequest {
            controller: ctrl_name.clone(),
            nsid: 1,
            options: None,
        })
        .await
        .expect("attach");
    let ctrl = storage
        .resume_controller(v1::ResumeControllerRequest {
            name: ctrl_name.clone(),
            options: None,
        })
        .await
        .expect("resume")
        .into_inner();
    assert_eq!(ctrl.state, v1::ControllerState::Running as i32);
    assert_eq!(ctrl.attached_nsids, [1]);

    // Nothing in use can be removed, and the refusal names what uses it.
    let err = storage
        .delete_subsystem(v1::DeleteSubsystemRequest {
            name: format!("subsystems/{HOST_NQN}"),
            ..Default::default()
        })
        .await
        .expect_err("in use");
    assert_eq!(err.code(), Code::FailedPrecondition);
    assert!(
        err.message().contains("controllers/c0"),
        "{}",
        err.message()
    );
    let err = storage
        .delete_controller(v1::DeleteControllerRequest {
            name: ctrl_name.clone(),
            ..Default::default()
        })
        .await
        .expect_err("running");
    assert!(err.message().contains("suspend"), "{}", err.message());

    // Stats are SPDK's 64-bit counters of the backing bdev, beyond 32 bits.
    let big = 5 * (1u64 << 32);
    assert!(bench.snap.record_io("r0n1", big, 4096));
    for name in [
        "volumes/r0n1",
        &format!("subsystems/{HOST_NQN}/namespaces/1"),
        &ctrl_name,
    ] {
        let stats = storage
            .get_io_stats(v1::GetIoStatsRequest {
                name: name.to_owned(),
            })
            .await
            .expect("stats")
            .into_inner();
        assert_eq!(stats.bytes_read, big, "{name}");
        assert_eq!(stats.bytes_written, 4096, "{name}");
        assert!(stats.source.contains("bdev_get_iostat"), "{}", stats.source);
    }
    // SPDK v24.01 takes only `name`: the agent asked the release first and never sent
    // the `names` it would refuse.
    assert!(bench.first("spdk_get_version") < bench.first("bdev_get_iostat"));
    let forms = bench.snap.requests_of("bdev_get_iostat");
    assert!(
        forms.iter().all(|p| p == &json!({"name": "r0n1"})),
        "{forms:?}"
    );
    let err = storage
        .get_io_stats(v1::GetIoStatsRequest {
            name: format!("subsystems/{HOST_NQN}/namespaces/9"),
        })
        .await
        .expect_err("unknown namespace");
    assert_eq!(err.code(), Code::NotFound);

    // Detach while running: the agent suspends, detaches and resumes.
    let ctrl = storage
        .detach_namespace(v1::DetachNamespaceRequest {
            controller: ctrl_name.clone(),
            nsid: 1,
            options: None,
        })
        .await
        .expect("detach")
        .into_inner();
    assert!(ctrl.attached_nsids.is_empty());
    let state = bench.snap.state();
    let fake_ctrl = state.controllers.values().next().expect("controller");
    assert!(
        fake_ctrl.namespaces.is_empty() && !fake_ctrl.suspended,
        "{state:?}"
    );
}

#[tokio::test]
async fn an_agent_killed_and_restarted_keeps_its_exposures_and_repairs_a_snap_that_lost_them() {
    let mut bench = Bench::start(FakeDialect::Snap4, "[storage]\nreconcile_interval = 1\n");
    bench
        .client()
        .await
        .apply_exposure(exposure("e1", false))
        .await
        .expect("apply");

    let before = bench.snap.state();
    let ctrl_id = before
        .controllers
        .keys()
        .next()
        .expect("controller")
        .clone();
    let ns_uuid = before.subsystems[HOST_NQN].namespaces[&1].uuid.clone();

    // SIGKILL the agent and restart SNAP, losing SNAP's state: the new agent re-applies.
    bench.snap.restart().expect("restart SNAP");
    assert_empty(&bench.snap.state());
    bench.kill_and_restart_agent();
    wait_until_running(
        &bench.snap,
        "the exposure to be re-applied after the agent restart",
    )
    .await;
    assert_exposed(&bench.snap.state(), "e1");

    // SNAP restarts under the running agent: the background reconciler repairs it.
    bench.snap.restart().expect("restart SNAP again");
    wait_until_running(&bench.snap, "the background reconciler to repair SNAP").await;
    assert_exposed(&bench.snap.state(), "e1");
    // Re-created under the same controller name and namespace UUID: the host sees the
    // same disk (SNAP would pick a new random UUID if the agent sent none).
    let after = bench.snap.state();
    assert!(after.controllers.contains_key(&ctrl_id), "{after:?}");
    assert_eq!(after.subsystems[HOST_NQN].namespaces[&1].uuid, ns_uuid);
    let got = bench
        .client()
        .await
        .get_exposure(v1::GetExposureRequest {
            name: "exposures/e1".to_owned(),
        })
        .await
        .expect("get")
        .into_inner();
    assert_eq!(got.controller_state, v1::ControllerState::Running as i32);
}

#[tokio::test]
async fn an_agent_killed_in_the_middle_of_an_apply_finishes_it_after_restart() {
    let mut bench = Bench::start(FakeDialect::Snap4, "");
    bench.snap.delay_replies(Some(Duration::from_millis(300)));
    let channel = bench.agent().channel().await;
    let apply = tokio::spawn(async move {
        StorageClient::new(channel)
            .apply_exposure(exposure("e1", false))
            .await
    });
    let snap = &bench.snap;
    wait_for(
        "the apply to reach SNAP's subsystem step",
        Duration::from_secs(20),
        || {
            snap.requests()
                .iter()
                .any(|(m, _)| m == "nvme_subsystem_create")
        },
    )
    .await;
    bench.kill_and_restart_agent();
    assert!(
        apply.await.expect("join").is_err(),
        "the killed agent cannot have answered"
    );
    bench.snap.delay_replies(None);
    wait_until_running(&bench.snap, "the interrupted apply to complete").await;
    assert_exposed(&bench.snap.state(), "e1");
}

#[tokio::test]
async fn conflicting_and_missing_objects_get_precise_codes() {
    let bench = Bench::start(FakeDialect::Snap4, "");
    let mut storage = bench.client().await;
    storage
        .apply_exposure(exposure("e1", false))
        .await
        .expect("apply");
    let mut other = exposure("e1", false);
    if let Some(spec) = other.spec.as_mut() {
        spec.serial_number = "OTHER".to_owned();
    }
    let err = storage
        .apply_exposure(other)
        .await
        .expect_err("changed spec");
    assert_eq!(err.code(), Code::AlreadyExists);
    let err = storage
        .apply_exposure(exposure("e2", false))
        .await
        .expect_err("same subsystem");
    assert_eq!(err.code(), Code::AlreadyExists);
    assert!(err.message().contains(HOST_NQN), "{}", err.message());
    let err = storage
        .get_subsystem(v1::GetSubsystemRequest {
            name: "subsystems/nqn.2022-10.io.nvda.nvme:9".to_owned(),
        })
        .await
        .expect_err("missing");
    assert_eq!(err.code(), Code::NotFound);
    let err = storage
        .delete_remote_controller(v1::DeleteRemoteControllerRequest {
            name: "remoteControllers/e1".to_owned(),
            ..Default::default()
        })
        .await
        .expect_err("owned by the exposure");
    assert_eq!(err.code(), Code::FailedPrecondition);
    assert!(err.message().contains("exposures/e1"), "{}", err.message());
}

/// The remote `r0`, the subsystem and namespace 1 on `r0n1`, through the fine-grained API.
async fn remote_subsystem_namespace(storage: &mut StorageClient<Channel>, max_namespaces: u32) {
    remote_and_subsystem(storage, max_namespaces).await;
    storage
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
        .expect("namespace");
}

/// The remote `r0` and the subsystem, through the fine-grained API.
async fn remote_and_subsystem(storage: &mut StorageClient<Channel>, max_namespaces: u32) {
    storage
        .create_remote_controller(v1::CreateRemoteControllerRequest {
            remote_controller_id: "r0".to_owned(),
            spec: Some(remote_spec()),
            options: None,
        })
        .await
        .expect("remote");
    storage
        .create_subsystem(v1::CreateSubsystemRequest {
            subsystem: Some(v1::Subsystem {
                nqn: HOST_NQN.to_owned(),
                max_namespaces,
                ..Default::default()
            }),
            options: None,
        })
        .await
        .expect("subsystem");
}

fn create_controller_request(
    id: &str,
    function: v1::EmulationFunction,
) -> v1::CreateControllerRequest {
    v1::CreateControllerRequest {
        parent: format!("subsystems/{HOST_NQN}"),
        controller_id: id.to_owned(),
        controller: Some(v1::Controller {
            function: Some(function),
            num_queues: 8,
            mdts: 6,
            ..Default::default()
        }),
        options: None,
    }
}

#[tokio::test]
async fn snap4_controllers_get_the_agents_name_the_bdf_without_domain_and_their_sizes() {
    let bench = Bench::start(FakeDialect::Snap4, "");
    let mut storage = bench.client().await;
    remote_subsystem_namespace(&mut storage, 16).await;
    assert_eq!(
        bench.snap.requests_of("nvme_subsystem_create"),
        [json!({"nqn": HOST_NQN, "nn": 16})]
    );
    // `lspci -D` style: the domain is dropped, SNAP's pci_bdf is bb:dd.f.
    let function = v1::EmulationFunction {
        function: Some(v1::emulation_function::Function::PciAddress(
            v1::PciAddress {
                bdf: "0000:03:00.3".to_owned(),
            },
        )),
    };
    let ctrl = storage
        .create_controller(create_controller_request("c1", function))
        .await
        .expect("controller")
        .into_inner();
    let create = &bench.snap.requests_of("nvme_controller_create")[0];
    assert_eq!(
        (&create["pci_bdf"], &create["num_queues"], &create["mdts"]),
        (&json!("03:00.3"), &json!(8), &json!(6))
    );
    let name = create["ctrl"].as_str().expect("ctrl");
    assert_eq!(ctrl.backend_id, name);
    let state = bench.snap.state();
    let made = &state.controllers[name];
    assert_eq!(
        (made.function.as_str(), made.num_queues, made.mdts),
        ("pf1", 8, 6)
    );
    // No such function on this DPU: refused before SNAP is asked to create anything.
    let missing = v1::EmulationFunction {
        function: Some(v1::emulation_function::Function::PfVf(v1::PfVf {
            pf_index: 7,
            vf_index: None,
        })),
    };
    let err = storage
        .create_controller(create_controller_request("c2", missing))
        .await
        .expect_err("no PF 7");
    assert_eq!(err.code(), Code::FailedPrecondition, "{}", err.message());
    assert_eq!(bench.calls("nvme_controller_create"), 1);
}

#[tokio::test]
async fn a_function_another_controller_uses_is_refused_without_a_create() {
    let bench = Bench::start(FakeDialect::Snap4, "");
    let mut storage = bench.client().await;
    remote_subsystem_namespace(&mut storage, 0).await;
    // Someone else's controller on PF 0 (another subsystem, made behind the agent's back).
    let raw = bench.raw();
    raw.nvme_subsystem_create(&dpu_nvmeof::snap::SubsystemCreate {
        nqn: "nqn.2022-10.io.nvda.nvme:other".to_owned(),
        serial_number: None,
        model_number: None,
        nn: None,
    })
    .execute()
    .await
    .expect("other subsystem");
    raw.nvme_controller_create(&dpu_nvmeof::snap::ControllerCreate {
        nqn: "nqn.2022-10.io.nvda.nvme:other".to_owned(),
        ctrl: Some("theirs".to_owned()),
        pf_id: Some(0),
        vf_id: None,
        pci_bdf: None,
        vuid: None,
        num_queues: None,
        mdts: None,
        suspended: false,
    })
    .execute()
    .await
    .expect("their controller");
    let creates = bench.calls("nvme_controller_create");
    let err = storage
        .create_controller(create_controller_request("c0", pf0()))
        .await
        .expect_err("PF 0 is taken");
    assert_eq!(err.code(), Code::FailedPrecondition, "{}", err.message());
    assert!(err.message().contains("theirs"), "{}", err.message());
    assert_eq!(bench.calls("nvme_controller_create"), creates);
}

#[tokio::test]
async fn a_remote_name_attached_elsewhere_is_already_exists_and_left_alone() {
    let bench = Bench::start(FakeDialect::Snap4, "");
    // r0 already attached, to another target: SPDK would add the agent's address as a
    // failover path (v24.01, same subnqn) and answer success.
    let raw = bench.raw();
    raw.bdev_nvme_attach_controller(&dpu_nvmeof::snap::AttachController {
        name: "r0".to_owned(),
        trtype: dpu_nvmeof::snap::TransportType::Tcp,
        adrfam: dpu_nvmeof::snap::AddressFamilyParam::Ipv4,
        traddr: "198.51.100.7".to_owned(),
        trsvcid: "4420".to_owned(),
        subnqn: REMOTE_NQN.to_owned(),
        hostnqn: None,
        hdgst: false,
        ddgst: false,
        num_io_queues: None,
        ctrlr_loss_timeout_sec: None,
        reconnect_delay_sec: None,
        fast_io_fail_timeout_sec: None,
    })
    .execute()
    .await
    .expect("someone else's r0");
    let before = bench.snap.state();
    let err = bench
        .client()
        .await
        .create_remote_controller(v1::CreateRemoteControllerRequest {
            remote_controller_id: "r0".to_owned(),
            spec: Some(remote_spec()),
            options: None,
        })
        .await
        .expect_err("r0 goes elsewhere");
    assert_eq!(err.code(), Code::AlreadyExists, "{}", err.message());
    assert!(err.message().contains("198.51.100.7"), "{}", err.message());
    assert_eq!(
        bench.snap.state(),
        before,
        "no failover path added, nothing detached: {:?}",
        bench.snap.requests()
    );
    assert_eq!(
        bench.calls("bdev_nvme_attach_controller"),
        1,
        "only the test's own attach"
    );
}

#[tokio::test]
async fn an_unreachable_remote_is_unavailable() {
    let bench = Bench::start_with(FakeDialect::Snap4, "", |snap| {
        snap.refuse_connections_to("192.0.2.10", "4420");
    });
    let err = bench
        .client()
        .await
        .create_remote_controller(v1::CreateRemoteControllerRequest {
            remote_controller_id: "r0".to_owned(),
            spec: Some(remote_spec()),
            options: None,
        })
        .await
        .expect_err("the target refuses");
    assert_eq!(err.code(), Code::Unavailable, "{}", err.message());
    assert!(bench.snap.state().nvme_controllers.is_empty());
}

#[tokio::test]
async fn the_reconnect_trio_reaches_spdk_as_spdk_checks_it() {
    let bench = Bench::start(FakeDialect::Snap4, "");
    let spec = v1::RemoteControllerSpec {
        ctrl_loss_timeout_sec: -1,
        reconnect_delay_sec: 5,
        fast_io_fail_timeout_sec: 10,
        ..remote_spec()
    };
    bench
        .client()
        .await
        .create_remote_controller(v1::CreateRemoteControllerRequest {
            remote_controller_id: "r0".to_owned(),
            spec: Some(spec),
            options: None,
        })
        .await
        .expect("reconnect forever");
    let sent = &bench.snap.requests_of("bdev_nvme_attach_controller")[0];
    assert_eq!(
        (
            &sent["ctrlr_loss_timeout_sec"],
            &sent["reconnect_delay_sec"],
            &sent["fast_io_fail_timeout_sec"]
        ),
        (&json!(-1), &json!(5), &json!(10))
    );
}

#[tokio::test]
async fn io_stats_on_spdk_26_05_use_names() {
    let bench = Bench::start_with(FakeDialect::Snap4, "", |snap| snap.set_version("v26.05"));
    let mut storage = bench.client().await;
    storage
        .create_remote_controller(v1::CreateRemoteControllerRequest {
            remote_controller_id: "r0".to_owned(),
            spec: Some(remote_spec()),
            options: None,
        })
        .await
        .expect("remote");
    assert!(bench.snap.record_io("r0n1", 4096, 0));
    let stats = storage
        .get_io_stats(v1::GetIoStatsRequest {
            name: "volumes/r0n1".to_owned(),
        })
        .await
        .expect("stats")
        .into_inner();
    assert_eq!(stats.bytes_read, 4096);
    assert_eq!(
        bench.snap.requests_of("bdev_get_iostat"),
        [json!({"names": ["r0n1"]})]
    );
}

#[tokio::test]
async fn a_controller_suspended_behind_the_agents_back_is_resumed() {
    let bench = Bench::start(FakeDialect::Snap4, "[storage]\nreconcile_interval = 1\n");
    bench
        .client()
        .await
        .apply_exposure(exposure("e1", false))
        .await
        .expect("apply");
    let ctrl = bench
        .snap
        .state()
        .controllers
        .keys()
        .next()
        .expect("controller")
        .clone();
    bench
        .raw()
        .nvme_controller_suspend(&ctrl)
        .execute()
        .await
        .expect("suspend behind the agent's back");
    assert!(bench.snap.state().controllers[&ctrl].suspended);
    // Only nvme_subsystem_list's `state` says so (nvme_controller_list has no run state).
    wait_until_running(&bench.snap, "the reconciler to resume the controller").await;
    assert!(bench.calls("nvme_controller_resume") >= 2);
}

#[tokio::test]
async fn a_lost_controller_create_reply_leaves_no_orphan() {
    let bench = Bench::start(FakeDialect::Snap4, "[storage]\nreconcile_interval = 1\n");
    // The create happens, but its reply is lost: the agent cannot know the id SNAP gave,
    // only the name it asked for (which is enough to undo or adopt it).
    bench.snap.cut_next_reply("nvme_controller_create");
    let mut storage = bench.client().await;
    let first = storage.apply_exposure(exposure("e1", false)).await;
    if first.is_err() {
        // Rolled back or left for the next apply, but never a second controller.
        assert!(bench.snap.state().controllers.len() <= 1);
    }
    // Applying again works, at once or once the background retry has cleaned up.
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        match storage.apply_exposure(exposure("e1", false)).await {
            Ok(_) => break,
            Err(e) if Instant::now() < deadline => {
                let _ = e;
                tokio::time::sleep(Duration::from_millis(250)).await;
            }
            Err(e) => panic!(
                "apply never succeeded again: {e:?}\nSNAP: {:?}",
                bench.snap.state()
            ),
        }
    }
    assert_exposed(&bench.snap.state(), "e1");
    let names: Vec<String> = bench
        .snap
        .requests_of("nvme_controller_create")
        .iter()
        .map(|p| p["ctrl"].as_str().unwrap_or_default().to_owned())
        .collect();
    assert!(
        names.windows(2).all(|w| w[0] == w[1]),
        "the same name every time: {names:?}"
    );
}

#[tokio::test]
async fn snap3_uses_the_emulation_manager_snap_lists() {
    let bench = Bench::start_with(FakeDialect::Snap3, "", |snap| {
        snap.set_emulation_managers(vec![dpu_tests::fake_snap::FakeEmulationManager {
            emulation_manager: "mlx5_2".to_owned(),
            hotplug_support: false,
            supported_types: vec!["nvme".to_owned()],
        }]);
    });
    bench
        .client()
        .await
        .apply_exposure(exposure("e1", false))
        .await
        .expect("apply");
    assert_exposed(&bench.snap.state(), "e1");
    assert_eq!(
        bench.snap.requests_of("controller_nvme_create")[0]["emulation_manager"],
        "mlx5_2"
    );
}

#[tokio::test]
async fn emulation_types_are_matched_whatever_their_case() {
    // DPF compares `emulation_type` with "NVME" (the fake's default); mlnx_snap's pages
    // write "nvme". Either must find the function.
    let bench = Bench::start_with(FakeDialect::Snap4, "", |snap| {
        let mut table = snap.functions();
        for pf in &mut table {
            pf.emulation_type = "nvme".to_owned();
        }
        snap.set_functions(table);
    });
    bench
        .client()
        .await
        .apply_exposure(exposure("e1", false))
        .await
        .expect("apply with lower-case emulation_type");
    assert_exposed(&bench.snap.state(), "e1");
}

#[tokio::test]
async fn a_controller_state_snap_does_not_report_is_unknown_and_the_desired_state_is_applied() {
    let bench = Bench::start_with(
        FakeDialect::Snap4,
        "[storage]\nreconcile_interval = 1\n",
        |snap| snap.hide_controller_state(true),
    );
    let mut storage = bench.client().await;
    storage
        .apply_exposure(exposure("e1", false))
        .await
        .expect("apply");
    let ctrl = bench
        .snap
        .state()
        .controllers
        .keys()
        .next()
        .expect("controller")
        .clone();
    assert!(!bench.snap.state().controllers[&ctrl].suspended, "resumed");
    // SNAP says nothing about the run state: the API says so instead of the desired state.
    let listed = storage
        .get_controller(v1::GetControllerRequest {
            name: format!("subsystems/{HOST_NQN}/controllers/e1"),
        })
        .await
        .expect("get")
        .into_inner();
    assert_eq!(
        v1::ControllerState::try_from(listed.state),
        Ok(v1::ControllerState::Unspecified),
        "{listed:?}"
    );
    // Suspended behind the agent's back, and SNAP still does not say: the reconciler
    // resumes it anyway (a refusal because it already runs counts as done).
    bench
        .raw()
        .nvme_controller_suspend(&ctrl)
        .execute()
        .await
        .expect("suspend behind the agent's back");
    wait_until_running(
        &bench.snap,
        "the reconciler to resume a controller of unknown state",
    )
    .await;
}

#[tokio::test]
async fn namespace_identifiers_snap4_cannot_carry_are_refused_before_anything_changes() {
    let bench = Bench::start(FakeDialect::Snap4, "");
    let mut storage = bench.client().await;
    remote_and_subsystem(&mut storage, 0).await;
    let saved = saved_text(&bench.state_file());
    let before = bench.snap.requests().len();
    for (nguid, eui64, what) in [
        ("00112233445566778899aabbccddeeff", "", "NGUID"),
        ("", "0011223344556677", "EUI-64"),
    ] {
        let err = storage
            .create_namespace(v1::CreateNamespaceRequest {
                parent: format!("subsystems/{HOST_NQN}"),
                namespace: Some(v1::Namespace {
                    nsid: 1,
                    volume: "volumes/r0n1".to_owned(),
                    nguid: nguid.to_owned(),
                    eui64: eui64.to_owned(),
                    ..Default::default()
                }),
                options: None,
            })
            .await
            .expect_err("SNAP 4 has no key for it");
        assert_eq!(err.code(), Code::FailedPrecondition, "{}", err.message());
        assert!(
            err.message().contains("DOCA SNAP 4") && err.message().contains(what),
            "names the dialect and the field: {}",
            err.message()
        );
    }
    assert_eq!(
        saved_text(&bench.state_file()),
        saved,
        "the state file is untouched"
    );
    let mutating: Vec<String> = bench.snap.requests()[before..]
        .iter()
        .map(|(m, _)| m.clone())
        .filter(|m| m.starts_with("nvme_namespace"))
        .collect();
    assert!(mutating.is_empty(), "nothing reached SNAP: {mutating:?}");
}

#[tokio::test]
async fn the_emulation_functions_are_listed_with_the_controller_on_each() {
    let bench = Bench::start(FakeDialect::Snap4, "");
    let mut inventory =
        dpu_proto::v1::inventory_client::InventoryClient::new(bench.agent().channel().await);
    let listed = inventory
        .list_emulation_functions(v1::ListEmulationFunctionsRequest {})
        .await
        .expect("list")
        .into_inner()
        .functions;
    let table = bench.snap.functions();
    let expected: usize = table.iter().map(|pf| 1 + pf.vfs.len()).sum();
    assert_eq!(listed.len(), expected, "{listed:?}");
    assert!(
        listed.iter().all(|f| f.backend_controller.is_empty()),
        "all free"
    );
    assert!(
        listed
            .iter()
            .all(|f| f.pci_bdf.len() == 7 && !f.pci_bdf.contains("0000:")),
        "SNAP's bb:dd.f: {listed:?}"
    );
    bench
        .client()
        .await
        .apply_exposure(exposure("e1", false))
        .await
        .expect("apply");
    let out = dpu_tests::harness::dpuctl(&[
        "--agent",
        &bench.agent().endpoint(),
        "-o",
        "json",
        "storage",
        "functions",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let reply: Value = serde_json::from_slice(&out.stdout).expect("JSON");
    let pf0 = reply["functions"]
        .as_array()
        .expect("functions")
        .iter()
        .find(|f| f["pfIndex"].as_u64().unwrap_or(0) == 0 && f.get("vfIndex").is_none())
        .expect("PF 0")
        .clone();
    let ctrl = bench.snap.state().controllers.keys().next().cloned();
    assert_eq!(pf0["backendController"].as_str(), ctrl.as_deref(), "{pf0}");
}

mod virtio_blk;
