//! A remote controller with two paths over the fake SNAP (issue 36 part 3): what the agent
//! sends (every path attached with `multipath: "multipath"`, the policy on the bdev), the
//! rollback when one path cannot be attached (nothing half-applied), and the paths the
//! status reports. The same against real SPDK is `tests/tests/spdk/multipath.rs`.

use dpu_proto::v1;
use dpu_proto::v1::storage_client::StorageClient;
use dpu_tests::fake_snap::{FakeDialect, FakeSnap};
use dpu_tests::fixture;
use dpu_tests::harness::{AgentOptions, AgentProcess};
use tonic::Code;

const REMOTE_NQN: &str = "nqn.2016-06.io.spdk:cnode1";

fn two_path_spec() -> v1::RemoteControllerSpec {
    v1::RemoteControllerSpec {
        transport: v1::NvmeTransport::Rdma as i32,
        address_family: v1::AddressFamily::Ipv4 as i32,
        traddr: "192.0.2.10".to_owned(),
        trsvcid: 4420,
        subnqn: REMOTE_NQN.to_owned(),
        extra_paths: vec![v1::NvmePathAddress {
            traddr: "192.0.2.11".to_owned(),
            trsvcid: 4420,
        }],
        multipath_policy: v1::MultipathPolicy::ActiveActive as i32,
        ..Default::default()
    }
}

#[tokio::test]
async fn a_path_that_cannot_attach_rolls_the_remote_back_and_two_that_can_are_reported() {
    let (dir, root) = fixture::bluefield3_tempdir();
    let options = AgentOptions::new(dir.path(), &root);
    let snap = FakeSnap::start_with(&options.snap_socket, FakeDialect::Snap4).expect("fake SNAP");
    let agent = AgentProcess::start(&options);
    let mut client = StorageClient::new(agent.channel().await);
    let create = || v1::CreateRemoteControllerRequest {
        remote_controller_id: "r0".to_owned(),
        spec: Some(two_path_spec()),
        options: None,
    };

    // The second path's target does not listen: the create fails and nothing stays.
    snap.refuse_connections_to("192.0.2.11", "4420");
    let status = client
        .create_remote_controller(create())
        .await
        .expect_err("one path cannot be attached");
    assert_eq!(status.code(), Code::Unavailable, "{status:?}");
    assert!(
        snap.state().nvme_controllers.is_empty(),
        "the first path stayed attached: {:?}",
        snap.state().nvme_controllers
    );
    let listed = client
        .list_remote_controllers(v1::ListRemoteControllersRequest::default())
        .await
        .expect("list")
        .into_inner();
    assert!(listed.remote_controllers.is_empty(), "{listed:?}");

    // Both listen: two paths under one controller, each attached in multipath mode, the
    // policy set on the bdev.
    snap.accept_connections_to("192.0.2.11", "4420");
    let created = client
        .create_remote_controller(create())
        .await
        .expect("create")
        .into_inner();
    let state = snap.state();
    let controller = state.nvme_controllers.get("r0").expect("r0 in SNAP");
    let ports: Vec<&str> = controller
        .ctrlrs
        .iter()
        .map(|c| c.paths[0].traddr.as_str())
        .collect();
    assert_eq!(ports, ["192.0.2.10", "192.0.2.11"]);
    let attaches = snap.requests_of("bdev_nvme_attach_controller");
    assert!(
        attaches.iter().all(|p| p["multipath"] == "multipath"),
        "{attaches:?}"
    );
    assert_eq!(
        state.bdevs.get("r0n1").map(|b| b.mp_policy.as_str()),
        Some("active_active")
    );
    let paths = created.status.expect("status").paths;
    let shown: Vec<(String, i32)> = paths.iter().map(|p| (p.traddr.clone(), p.state)).collect();
    let usable = v1::NvmePathState::Usable as i32;
    assert_eq!(
        shown,
        [
            ("192.0.2.10".to_owned(), usable),
            ("192.0.2.11".to_owned(), usable)
        ]
    );

    // A path SPDK lost is reported missing, and the next converge attaches it again.
    dpu_nvmeof::SnapClient::new(snap.path())
        .bdev_nvme_detach_path("r0", "192.0.2.11", "4420")
        .execute()
        .await
        .expect("detach one path behind the agent's back");
    let got = client
        .get_remote_controller(v1::GetRemoteControllerRequest {
            name: "remoteControllers/r0".to_owned(),
        })
        .await
        .expect("get")
        .into_inner();
    let states: Vec<i32> = got
        .status
        .expect("status")
        .paths
        .iter()
        .map(|p| p.state)
        .collect();
    assert_eq!(states, [usable, v1::NvmePathState::Missing as i32]);
    client
        .create_remote_controller(create())
        .await
        .expect("the same create converges");
    assert_eq!(snap.state().nvme_controllers["r0"].ctrlrs.len(), 2);
}
