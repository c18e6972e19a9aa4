//! The agent's declarative Storage service over the stateful fake SNAP: whole exposures in
//! both dialects, idempotence, rollback of a change that fails half-way, dry runs, the
//! fine-grained objects and their rules, io stats, and reconciliation after an agent
//! SIGKILL and after a SNAP restart that lost everything.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use dpu_proto::v1;
use dpu_proto::v1::storage_client::StorageClient;
use dpu_tests::fake_snap::{FakeDialect, FakeSnap, FakeSnapState};
use dpu_tests::fixture;
use dpu_tests::harness::{AgentOptions, AgentProcess};
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
        let (dir, root) = fixture::bluefield3_tempdir();
        let mut options = AgentOptions::new(dir.path(), &root);
        options.config_toml = config.to_owned();
        let snap = FakeSnap::start_with(&options.snap_socket, dialect).expect("fake SNAP");
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
        self.snap
            .requests()
            .iter()
            .filter(|(m, _)| m == method)
            .count()
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
