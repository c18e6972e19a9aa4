//! Status codes at the API edge: unknown resources are NOT_FOUND naming them, malformed
//! requests are INVALID_ARGUMENT naming the field, calls for a backend that is off (OVS
//! in this tier) are UNAVAILABLE naming it, and nothing invalid reaches a backend.

use dpu_proto::v1::{self, inventory_client::InventoryClient, storage_client::StorageClient};
use dpu_proto::v1::{counters_client::CountersClient, switch_client::SwitchClient};
use tonic::Code;

use crate::Lab;

#[tokio::test]
async fn unknown_resources_are_not_found() {
    let lab = Lab::start();
    let mut inventory = InventoryClient::new(lab.agent.channel().await);
    let err = inventory
        .get_netdev(v1::GetNetdevRequest {
            name: "netdevs/pf0vf9".to_owned(),
        })
        .await
        .expect_err("no such netdev");
    assert_eq!(err.code(), Code::NotFound, "{err:?}");
    assert!(err.message().contains("pf0vf9"), "{}", err.message());

    let err = inventory
        .get_rdma_device(v1::GetRdmaDeviceRequest {
            name: "rdmaDevices/mlx5_7".to_owned(),
        })
        .await
        .expect_err("no such RDMA device");
    assert_eq!(err.code(), Code::NotFound, "{err:?}");

    // The positive control: the same calls find what the fixture has.
    let netdev = inventory
        .get_netdev(v1::GetNetdevRequest {
            name: "netdevs/pf0hpf".to_owned(),
        })
        .await
        .expect("pf0hpf exists")
        .into_inner();
    assert_eq!(netdev.role, v1::NetdevRole::PfRepresentor as i32);
    assert_eq!(netdev.mtu, 9000);
    let device = inventory
        .get_rdma_device(v1::GetRdmaDeviceRequest {
            name: "rdmaDevices/mlx5_0".to_owned(),
        })
        .await
        .expect("mlx5_0 exists")
        .into_inner();
    let port = &device.ports[0];
    assert_eq!(port.state, v1::RdmaPortState::Active as i32);
    assert_eq!(port.roce_path_mtu, 4096);
    let v2_ipv4: Vec<_> = port
        .gids
        .iter()
        .filter(|g| g.r#type == v1::GidType::RoceV2 as i32 && g.ip_address == "192.168.100.2")
        .map(|g| g.index)
        .collect();
    assert_eq!(v2_ipv4, [3]);
}

#[tokio::test]
async fn malformed_requests_are_invalid_argument_naming_the_field() {
    let lab = Lab::start();
    let channel = lab.agent.channel().await;
    let mut inventory = InventoryClient::new(channel.clone());
    let mut storage = StorageClient::new(channel.clone());
    let mut switch = SwitchClient::new(channel.clone());
    let mut counters = CountersClient::new(channel);

    let mut failures = Vec::new();
    let mut expect = |what: &str, result: Result<(), tonic::Status>, field: &str| match result {
        Err(status)
            if status.code() == Code::InvalidArgument && status.message().contains(field) => {}
        other => failures.push(format!(
            "{what}: expected INVALID_ARGUMENT naming {field:?}, got {other:?}"
        )),
    };

    expect(
        "netdev name with a slash",
        inventory
            .get_netdev(v1::GetNetdevRequest {
                name: "netdevs/a/b".to_owned(),
            })
            .await
            .map(drop),
        "name",
    );
    expect(
        "netdev name with shell metacharacters",
        inventory
            .get_netdev(v1::GetNetdevRequest {
                name: "netdevs/eth0;reboot".to_owned(),
            })
            .await
            .map(drop),
        "ifname",
    );
    expect(
        "subsystem with a bad NQN",
        storage
            .get_subsystem(v1::GetSubsystemRequest {
                name: "subsystems/not-an-nqn".to_owned(),
            })
            .await
            .map(drop),
        "name",
    );
    expect(
        "namespace id 0",
        storage
            .get_namespace(v1::GetNamespaceRequest {
                name: "subsystems/nqn.2022-10.io.nvda.nvme:0/namespaces/0".to_owned(),
            })
            .await
            .map(drop),
        "nsid",
    );
    expect(
        "IPv6 address with family IPV4",
        storage
            .create_remote_controller(v1::CreateRemoteControllerRequest {
                remote_controller_id: "r0".to_owned(),
                spec: Some(v1::RemoteControllerSpec {
                    transport: v1::NvmeTransport::Rdma as i32,
                    address_family: v1::AddressFamily::Ipv4 as i32,
                    traddr: "2001:db8::1".to_owned(),
                    subnqn: "nqn.2016-06.io.spdk:cnode1".to_owned(),
                    ..Default::default()
                }),
                options: None,
            })
            .await
            .map(drop),
        "spec.traddr",
    );
    expect(
        "missing spec",
        storage
            .create_remote_controller(v1::CreateRemoteControllerRequest {
                remote_controller_id: "r0".to_owned(),
                spec: None,
                options: None,
            })
            .await
            .map(drop),
        "spec",
    );
    expect(
        "bridge name too long for a netdev",
        switch
            .create_bridge(v1::CreateBridgeRequest {
                bridge_id: "a-very-long-bridge-name".to_owned(),
                ..Default::default()
            })
            .await
            .map(drop),
        "bridge_id",
    );
    expect(
        "unknown flow filter value",
        switch
            .list_flows(v1::ListFlowsRequest {
                filter: 42,
                ..Default::default()
            })
            .await
            .map(drop),
        "filter",
    );
    expect(
        "watch interval too short",
        counters
            .watch(v1::WatchRequest {
                selectors: Vec::new(),
                interval: Some(dpu_proto::pbjson_types::Duration {
                    seconds: 0,
                    nanos: 1_000,
                }),
                max_snapshots: 1,
            })
            .await
            .map(drop),
        "interval",
    );
    assert!(failures.is_empty(), "{}", failures.join("\n"));

    // Validation happens before any backend call: SNAP saw only health probes, if anything
    // (`dpu health`'s version check, the Storage health probe's volume listing).
    let methods: Vec<String> = lab.snap.requests().into_iter().map(|(m, _)| m).collect();
    assert!(
        methods
            .iter()
            .all(|m| m == "spdk_get_version" || m == "bdev_get_bdevs"),
        "invalid requests reached SNAP: {methods:?}"
    );
}

#[tokio::test]
async fn valid_requests_for_missing_objects_are_not_found_naming_them() {
    let lab = Lab::start();
    let mut storage = StorageClient::new(lab.agent.channel().await);
    let err = storage
        .get_subsystem(v1::GetSubsystemRequest {
            name: "subsystems/nqn.2022-10.io.nvda.nvme:0".to_owned(),
        })
        .await
        .expect_err("nothing was created");
    assert_eq!(err.code(), Code::NotFound, "{err:?}");
    assert!(
        err.message().contains("nqn.2022-10.io.nvda.nvme:0"),
        "{}",
        err.message()
    );
}

#[tokio::test]
async fn switch_calls_without_ovs_are_unavailable_naming_it() {
    let lab = Lab::start();
    let mut switch = SwitchClient::new(lab.agent.channel().await);
    let mut failures = Vec::new();
    let mut expect = |what: &str, result: Result<(), tonic::Status>| match result {
        Err(status) if status.code() == Code::Unavailable && status.message().contains("ovsdb") => {
        }
        other => failures.push(format!(
            "{what}: expected UNAVAILABLE naming ovsdb, got {other:?}"
        )),
    };
    expect(
        "ListBridges",
        switch
            .list_bridges(v1::ListBridgesRequest {})
            .await
            .map(drop),
    );
    expect(
        "CreateBridge",
        switch
            .create_bridge(v1::CreateBridgeRequest {
                bridge_id: "ovsbr1".to_owned(),
                ..Default::default()
            })
            .await
            .map(drop),
    );
    expect(
        "DeletePort",
        switch
            .delete_port(v1::DeletePortRequest {
                name: "bridges/ovsbr1/ports/pf0hpf".to_owned(),
                ..Default::default()
            })
            .await
            .map(drop),
    );
    expect(
        "GetOffloadSettings",
        switch
            .get_offload_settings(v1::GetOffloadSettingsRequest {})
            .await
            .map(drop),
    );
    expect(
        "UpdateOffloadSettings",
        switch
            .update_offload_settings(v1::UpdateOffloadSettingsRequest {
                hw_offload: Some(true),
                ..Default::default()
            })
            .await
            .map(drop),
    );
    expect(
        "ListFlows",
        switch
            .list_flows(v1::ListFlowsRequest::default())
            .await
            .map(drop),
    );
    assert!(failures.is_empty(), "{}", failures.join("\n"));

    // tc filters come from the kernel, not from OVS: served without it.
    let err = switch
        .list_tc_filters(v1::ListTcFiltersRequest {
            netdev: "dpunosuch0".to_owned(),
        })
        .await
        .expect_err("no such netdev");
    assert_eq!(err.code(), Code::NotFound, "{err:?}");
    assert!(err.message().contains("dpunosuch0"), "{}", err.message());

    // dpuctl says the same, with exit code 2.
    let endpoint = lab.agent.endpoint();
    let out = dpu_tests::harness::dpuctl(&["--agent", &endpoint, "switch", "bridges"]);
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("Unavailable") && stderr.contains("ovsdb"),
        "{stderr}"
    );
}
