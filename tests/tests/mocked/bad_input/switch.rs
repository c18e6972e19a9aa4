//! Bad input rows of the Switch service (no OVS in this tier: validation must come first).

use dpu_proto::v1;

use super::specs::*;
use super::values::*;
use super::Req;

pub(super) fn rows(add: &mut impl FnMut(&'static str, &str, String, Req)) {
    // ---- Switch (no OVS in this tier: validation must come first).
    for name in bad_ifnames() {
        add(
            "CreateBridge",
            "bridge_id",
            name.clone(),
            Req::CreateBridge(v1::CreateBridgeRequest {
                bridge_id: name.clone(),
                ..Default::default()
            }),
        );
        let bridge = format!("bridges/{name}");
        add(
            "GetBridge",
            "name",
            bridge.clone(),
            Req::GetBridge(v1::GetBridgeRequest {
                name: bridge.clone(),
            }),
        );
        add(
            "DeleteBridge",
            "name",
            bridge.clone(),
            Req::DeleteBridge(v1::DeleteBridgeRequest {
                name: bridge.clone(),
                allow_missing: true,
                options: None,
            }),
        );
        add(
            "ListPorts",
            "parent",
            bridge.clone(),
            Req::ListPorts(v1::ListPortsRequest {
                parent: bridge.clone(),
            }),
        );
        add(
            "CreatePort",
            "parent",
            bridge.clone(),
            Req::CreatePort(v1::CreatePortRequest {
                parent: bridge.clone(),
                port_id: "pf0hpf".to_owned(),
                ..Default::default()
            }),
        );
        add(
            "CreatePort",
            "port_id",
            name.clone(),
            Req::CreatePort(v1::CreatePortRequest {
                parent: "bridges/ovsbr1".to_owned(),
                port_id: name.clone(),
                ..Default::default()
            }),
        );
        for port in [
            format!("bridges/ovsbr1/ports/{name}"),
            format!("{bridge}/ports/pf0hpf"),
        ] {
            add(
                "DeletePort",
                "name",
                port.clone(),
                Req::DeletePort(v1::DeletePortRequest {
                    name: port,
                    allow_missing: true,
                    options: None,
                }),
            );
        }
        if !name.is_empty() {
            add(
                "ListFlows",
                "in_port",
                name.clone(),
                Req::ListFlows(v1::ListFlowsRequest {
                    in_port: name.clone(),
                    ..Default::default()
                }),
            );
        }
        add(
            "ListTcFilters",
            "netdev",
            name.clone(),
            Req::ListTcFilters(v1::ListTcFiltersRequest {
                netdev: name.clone(),
            }),
        );
        let netdev = format!("netdevs/{name}");
        add(
            "GetNetdev",
            "name",
            netdev.clone(),
            Req::GetNetdev(v1::GetNetdevRequest { name: netdev }),
        );
    }
    for name in [
        "",
        "bridges",
        "bridges/ovsbr1",
        "bridges/ovsbr1/ports",
        "bridges/ovsbr1/port/pf0hpf",
        "bridges/ovsbr1/ports/pf0hpf/x",
        "netdevs/pf0hpf",
    ] {
        add(
            "DeletePort",
            "name",
            name.to_owned(),
            Req::DeletePort(v1::DeletePortRequest {
                name: name.to_owned(),
                allow_missing: true,
                options: None,
            }),
        );
    }
    for dp in ["System", "system;reboot", "../netdev", "system\0"] {
        add(
            "CreateBridge",
            "datapath_type",
            dp.to_owned(),
            Req::CreateBridge(v1::CreateBridgeRequest {
                bridge_id: "ovsbr9".to_owned(),
                datapath_type: dp.to_owned(),
                options: None,
            }),
        );
    }
    for (seconds, nanos) in [(-1, 0), (0, 0), (0, -1), (601, 0), (i64::MAX, 0)] {
        let options = Some(v1::ApplyOptions {
            timeout: Some(duration(seconds, nanos)),
            dry_run: false,
        });
        add(
            "CreateSubsystem",
            "options.timeout",
            format!("{seconds}s{nanos}ns"),
            Req::CreateSubsystem(v1::CreateSubsystemRequest {
                subsystem: Some(v1::Subsystem {
                    nqn: "nqn.2022-10.io.nvda.nvme:9".to_owned(),
                    ..Default::default()
                }),
                options,
            }),
        );
        add(
            "CreateBridge",
            "options.timeout",
            format!("{seconds}s{nanos}ns"),
            Req::CreateBridge(v1::CreateBridgeRequest {
                bridge_id: "ovsbr9".to_owned(),
                datapath_type: String::new(),
                options,
            }),
        );
        add(
            "UpdateOffloadSettings",
            "options.timeout",
            format!("{seconds}s{nanos}ns"),
            Req::UpdateOffload(v1::UpdateOffloadSettingsRequest {
                hw_offload: Some(true),
                options,
                ..Default::default()
            }),
        );
    }
    for it in ["Internal", "patch;reboot", "a b", &long(33), "../x"] {
        add(
            "CreatePort",
            "interface_type",
            it.to_owned(),
            Req::CreatePort(v1::CreatePortRequest {
                parent: "bridges/ovsbr1".to_owned(),
                port_id: "p0".to_owned(),
                interface_type: it.to_owned(),
                ..Default::default()
            }),
        );
    }
    for (key, value) in [
        ("", "x"),
        ("a b", "x"),
        ("peer\n", "x"),
        ("peer", "x\0"),
        ("peer", "x\ny"),
    ]
    .map(|(k, v)| (k.to_owned(), v.to_owned()))
    .into_iter()
    .chain([(long(65), "x".to_owned()), ("peer".to_owned(), long(257))])
    {
        add(
            "CreatePort",
            "interface_options",
            format!("{key:?}={value:?}"),
            Req::CreatePort(v1::CreatePortRequest {
                parent: "bridges/ovsbr1".to_owned(),
                port_id: "p0".to_owned(),
                interface_options: [(key, value)].into(),
                ..Default::default()
            }),
        );
    }
    for policy in [4, 99, -1] {
        add(
            "UpdateOffloadSettings",
            "tc_policy",
            policy.to_string(),
            Req::UpdateOffload(v1::UpdateOffloadSettingsRequest {
                tc_policy: policy,
                ..Default::default()
            }),
        );
    }
    for ms in [0, 499] {
        add(
            "UpdateOffloadSettings",
            "max_idle_ms",
            ms.to_string(),
            Req::UpdateOffload(v1::UpdateOffloadSettingsRequest {
                max_idle_ms: Some(ms),
                ..Default::default()
            }),
        );
    }
    for filter in [99, -1] {
        add(
            "ListFlows",
            "filter",
            filter.to_string(),
            Req::ListFlows(v1::ListFlowsRequest {
                filter,
                ..Default::default()
            }),
        );
    }
    for dp in [
        "system@ovs;reboot",
        "system@$(id)",
        "system ovs",
        "../system@ovs-system",
        "system@ovs\0",
        &long(65),
    ] {
        add(
            "ListFlows",
            "datapath",
            dp.to_owned(),
            Req::ListFlows(v1::ListFlowsRequest {
                datapath: dp.to_owned(),
                ..Default::default()
            }),
        );
    }
    let packet = v1::FlowPacket {
        src_ip: "10.0.0.2".to_owned(),
        dst_ip: "10.0.0.1".to_owned(),
        ip_proto: 17,
        src_port: 40_001,
        dst_port: 9,
    };
    for (field, bad) in [
        (
            "covering.src_ip",
            v1::FlowPacket {
                src_ip: "10.0.0.2; reboot".to_owned(),
                ..packet.clone()
            },
        ),
        (
            "covering.dst_ip",
            v1::FlowPacket {
                dst_ip: long(300),
                ..packet.clone()
            },
        ),
        (
            "covering.ip_proto",
            v1::FlowPacket {
                ip_proto: u32::MAX,
                ..packet.clone()
            },
        ),
        (
            "covering.src_port",
            v1::FlowPacket {
                src_port: 65_536,
                ..packet.clone()
            },
        ),
    ] {
        add(
            "ListFlows",
            field,
            format!("{bad:?}"),
            Req::ListFlows(v1::ListFlowsRequest {
                covering: Some(bad),
                ..Default::default()
            }),
        );
    }
}
