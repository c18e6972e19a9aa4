//! Bad input, tested: one table of every malformed value the API can receive, each sent to
//! every RPC that takes it. Every row must come back INVALID_ARGUMENT with a message that
//! starts with the field it names, and afterwards nothing may have changed on a backend:
//! the fake SNAP saw only read-only calls and the agent's desired-state file is empty.
//!
//! Switch RPCs run without OVS in this tier, so a row answered UNAVAILABLE would mean the
//! agent asked OVS before it looked at the request; none is today.

use dpu_proto::pbjson_types::Duration;
use dpu_proto::v1::{self, counter_selector::Selector, emulation_function::Function};
use dpu_proto::v1::{counters_client::CountersClient, inventory_client::InventoryClient};
use dpu_proto::v1::{storage_client::StorageClient, switch_client::SwitchClient};
use tonic::transport::Channel;
use tonic::Code;

use crate::Lab;

const NQN: &str = "nqn.2016-06.io.spdk:cnode1";
const SUB: &str = "subsystems/nqn.2022-10.io.nvda.nvme:0";
const CTRL: &str = "subsystems/nqn.2022-10.io.nvda.nvme:0/controllers/c0";

/// One request of any service.
enum Req {
    CreateRemote(v1::CreateRemoteControllerRequest),
    GetRemote(v1::GetRemoteControllerRequest),
    DeleteRemote(v1::DeleteRemoteControllerRequest),
    CreateSubsystem(v1::CreateSubsystemRequest),
    GetSubsystem(v1::GetSubsystemRequest),
    DeleteSubsystem(v1::DeleteSubsystemRequest),
    CreateNamespace(v1::CreateNamespaceRequest),
    GetNamespace(v1::GetNamespaceRequest),
    ListNamespaces(v1::ListNamespacesRequest),
    DeleteNamespace(v1::DeleteNamespaceRequest),
    CreateController(v1::CreateControllerRequest),
    GetController(v1::GetControllerRequest),
    ListControllers(v1::ListControllersRequest),
    DeleteController(v1::DeleteControllerRequest),
    AttachNamespace(v1::AttachNamespaceRequest),
    DetachNamespace(v1::DetachNamespaceRequest),
    SuspendController(v1::SuspendControllerRequest),
    ResumeController(v1::ResumeControllerRequest),
    ApplyExposure(v1::ApplyExposureRequest),
    GetExposure(v1::GetExposureRequest),
    DeleteExposure(v1::DeleteExposureRequest),
    GetIoStats(v1::GetIoStatsRequest),
    CreateBridge(v1::CreateBridgeRequest),
    GetBridge(v1::GetBridgeRequest),
    DeleteBridge(v1::DeleteBridgeRequest),
    ListPorts(v1::ListPortsRequest),
    CreatePort(v1::CreatePortRequest),
    DeletePort(v1::DeletePortRequest),
    UpdateOffload(v1::UpdateOffloadSettingsRequest),
    ListFlows(v1::ListFlowsRequest),
    ListTcFilters(v1::ListTcFiltersRequest),
    Snapshot(v1::SnapshotRequest),
    Watch(v1::WatchRequest),
    GetNetdev(v1::GetNetdevRequest),
    ListNetdevs(v1::ListNetdevsRequest),
    GetRdmaDevice(v1::GetRdmaDeviceRequest),
    ListRdmaDevices(v1::ListRdmaDevicesRequest),
}

/// A row: the RPC, the field the answer must name, what is bad, the request.
struct Case {
    rpc: &'static str,
    field: String,
    value: String,
    req: Req,
}

struct Clients {
    storage: StorageClient<Channel>,
    switch: SwitchClient<Channel>,
    counters: CountersClient<Channel>,
    inventory: InventoryClient<Channel>,
}

impl Clients {
    async fn send(&mut self, req: Req) -> Result<(), tonic::Status> {
        let (st, sw, co, inv) = (
            &mut self.storage,
            &mut self.switch,
            &mut self.counters,
            &mut self.inventory,
        );
        match req {
            Req::CreateRemote(r) => st.create_remote_controller(r).await.map(drop),
            Req::GetRemote(r) => st.get_remote_controller(r).await.map(drop),
            Req::DeleteRemote(r) => st.delete_remote_controller(r).await.map(drop),
            Req::CreateSubsystem(r) => st.create_subsystem(r).await.map(drop),
            Req::GetSubsystem(r) => st.get_subsystem(r).await.map(drop),
            Req::DeleteSubsystem(r) => st.delete_subsystem(r).await.map(drop),
            Req::CreateNamespace(r) => st.create_namespace(r).await.map(drop),
            Req::GetNamespace(r) => st.get_namespace(r).await.map(drop),
            Req::ListNamespaces(r) => st.list_namespaces(r).await.map(drop),
            Req::DeleteNamespace(r) => st.delete_namespace(r).await.map(drop),
            Req::CreateController(r) => st.create_controller(r).await.map(drop),
            Req::GetController(r) => st.get_controller(r).await.map(drop),
            Req::ListControllers(r) => st.list_controllers(r).await.map(drop),
            Req::DeleteController(r) => st.delete_controller(r).await.map(drop),
            Req::AttachNamespace(r) => st.attach_namespace(r).await.map(drop),
            Req::DetachNamespace(r) => st.detach_namespace(r).await.map(drop),
            Req::SuspendController(r) => st.suspend_controller(r).await.map(drop),
            Req::ResumeController(r) => st.resume_controller(r).await.map(drop),
            Req::ApplyExposure(r) => st.apply_exposure(r).await.map(drop),
            Req::GetExposure(r) => st.get_exposure(r).await.map(drop),
            Req::DeleteExposure(r) => st.delete_exposure(r).await.map(drop),
            Req::GetIoStats(r) => st.get_io_stats(r).await.map(drop),
            Req::CreateBridge(r) => sw.create_bridge(r).await.map(drop),
            Req::GetBridge(r) => sw.get_bridge(r).await.map(drop),
            Req::DeleteBridge(r) => sw.delete_bridge(r).await.map(drop),
            Req::ListPorts(r) => sw.list_ports(r).await.map(drop),
            Req::CreatePort(r) => sw.create_port(r).await.map(drop),
            Req::DeletePort(r) => sw.delete_port(r).await.map(drop),
            Req::UpdateOffload(r) => sw.update_offload_settings(r).await.map(drop),
            Req::ListFlows(r) => sw.list_flows(r).await.map(drop),
            Req::ListTcFilters(r) => sw.list_tc_filters(r).await.map(drop),
            Req::Snapshot(r) => co.snapshot(r).await.map(drop),
            Req::Watch(r) => co.watch(r).await.map(drop),
            Req::GetNetdev(r) => inv.get_netdev(r).await.map(drop),
            Req::ListNetdevs(r) => inv.list_netdevs(r).await.map(drop),
            Req::GetRdmaDevice(r) => inv.get_rdma_device(r).await.map(drop),
            Req::ListRdmaDevices(r) => inv.list_rdma_devices(r).await.map(drop),
        }
    }
}

fn long(n: usize) -> String {
    "a".repeat(n)
}

/// Client-chosen ids (remote controllers, controllers, exposures): `[A-Za-z][A-Za-z0-9_-]{0,62}`.
fn bad_ids() -> Vec<String> {
    [
        "",
        "a/b",
        "..",
        "../etc",
        "a\0b",
        "a;reboot",
        "$(reboot)",
        "a`id`",
        "a b",
        "1abc",
        "é",
        "a\n",
    ]
    .into_iter()
    .map(str::to_owned)
    .chain([long(64), long(1000)])
    .collect()
}

/// Values every full NQN check (`dpu_nvmeof::Nqn::parse`) refuses.
fn bad_nqns() -> Vec<String> {
    [
        "",
        "iqn.2016-06.io.spdk:cnode1",
        "not-an-nqn",
        "nqn.2016-06.io.spdk:cnode 1",
        "nqn.2016-06.io.spdk:../../etc/passwd",
        "nqn.2016-06.io.spdk:a\0b",
        "nqn.2016-06.io.spdk:a\nb",
        "nqn.2016-6.io.spdk:cnode1",
        "nqn.2016-13.io.spdk:cnode1",
        "nqn.2016-06.io.spdk:",
        "nqn.2014-08.org.nvmexpress:uuid:not-a-uuid",
        "nqn.2016-06.io.spdk:cnöde",
        "nqn.2016-06.io.spdk:a;$(reboot)",
        "nqn.2016-06.io.spdk:a`id`",
        "nqn.2016-06.io.spdk:a,b=c",
    ]
    .into_iter()
    .map(str::to_owned)
    .chain([format!("nqn.2016-06.io.spdk:{}", long(210)), long(1000)])
    .collect()
}

/// `subsystems/{nqn}` names: the NQN checks above plus what only names refuse (non-ASCII,
/// a second segment, path traversal).
fn bad_subsystem_names() -> Vec<String> {
    let mut names: Vec<String> = bad_nqns()
        .into_iter()
        .map(|n| format!("subsystems/{n}"))
        .collect();
    names.extend(
        [
            "",
            "subsystems",
            "subsystems/",
            "subsystems/nqn.2016-06.io.spdk:cnöde",
            "subsystems/../../etc/passwd",
            "subsystems/nqn.2016-06.io.spdk:cnode1/..",
            "../subsystems/nqn.2016-06.io.spdk:cnode1",
            "remoteControllers/r0",
        ]
        .map(str::to_owned),
    );
    names
}

fn bad_namespace_names() -> Vec<String> {
    let mut names: Vec<String> = [
        "0",
        "4294967295",
        "-1",
        "1.0",
        "0x1",
        "",
        "1/..",
        "99999999999",
    ]
    .iter()
    .map(|nsid| format!("{SUB}/namespaces/{nsid}"))
    .collect();
    names.extend(
        bad_subsystem_names()
            .into_iter()
            .filter(|s| !s.is_empty())
            .map(|s| format!("{s}/namespaces/1")),
    );
    names.push(format!("{SUB}/controllers/1"));
    names.push(format!("{SUB}/namespaces/{}", long(1000)));
    names
}

fn bad_controller_names() -> Vec<String> {
    let mut names: Vec<String> = bad_ids()
        .into_iter()
        .map(|id| format!("{SUB}/controllers/{id}"))
        .collect();
    names.extend(
        [
            "subsystems/not-an-nqn",
            "subsystems/nqn.2016-06.io.spdk:cnöde",
        ]
        .map(|s| format!("{s}/controllers/c0")),
    );
    names.push(format!("{SUB}/namespaces/c0"));
    names.push(String::new());
    names
}

/// Flat names `{collection}/{id}` with a bad id, a bad shape or the wrong collection.
fn bad_flat_names(collection: &str, other: &str) -> Vec<String> {
    let mut names: Vec<String> = bad_ids()
        .into_iter()
        .map(|id| format!("{collection}/{id}"))
        .collect();
    names.extend([
        String::new(),
        collection.to_owned(),
        format!("{collection}/a/b"),
        format!("../{collection}/a"),
        format!("{other}/a"),
    ]);
    names
}

/// Interface names (bridges, ports, netdevs): 1-15 bytes of `[A-Za-z0-9_.@-]`, not `.`/`..`,
/// not starting with `-` (an option to `ovs-vsctl`, `ovs-appctl`, `ip`).
fn bad_ifnames() -> Vec<String> {
    [
        "",
        "-rf",
        "-",
        "--help",
        "br0;reboot",
        "$(reboot)",
        "`reboot`",
        "br 0",
        "a-very-long-bridge-name",
        "0123456789abcdef",
        ".",
        "..",
        "br/0",
        "../etc",
        "br\0",
        "br\n",
        "eth0:1",
        "brö",
        "br|x",
        "br&",
        "br>x",
        "br'x",
        "br\"x",
    ]
    .into_iter()
    .map(str::to_owned)
    .chain([long(1000)])
    .collect()
}

fn remote_spec() -> v1::RemoteControllerSpec {
    v1::RemoteControllerSpec {
        transport: v1::NvmeTransport::Rdma as i32,
        address_family: v1::AddressFamily::Ipv4 as i32,
        traddr: "192.0.2.10".to_owned(),
        trsvcid: 4420,
        subnqn: NQN.to_owned(),
        ..Default::default()
    }
}

fn exposure_spec() -> v1::ExposureSpec {
    v1::ExposureSpec {
        remote: Some(remote_spec()),
        remote_nsid: 1,
        subsystem_nqn: "nqn.2022-10.io.nvda.nvme:0".to_owned(),
        nsid: 1,
        function: Some(pf(0)),
        serial_number: "SN0001".to_owned(),
        model_number: "BlueField NVMe".to_owned(),
    }
}

fn remote_of(spec: &mut v1::ExposureSpec) -> &mut v1::RemoteControllerSpec {
    spec.remote.get_or_insert_with(remote_spec)
}

fn pf(pf_index: u32) -> v1::EmulationFunction {
    v1::EmulationFunction {
        function: Some(Function::PfVf(v1::PfVf {
            pf_index,
            vf_index: None,
        })),
    }
}

fn bdf(bdf: &str) -> v1::EmulationFunction {
    v1::EmulationFunction {
        function: Some(Function::PciAddress(v1::PciAddress {
            bdf: bdf.to_owned(),
        })),
    }
}

fn namespace() -> v1::Namespace {
    v1::Namespace {
        nsid: 1,
        volume: "volumes/Nvme0n1".to_owned(),
        ..Default::default()
    }
}

fn controller() -> v1::Controller {
    v1::Controller {
        function: Some(pf(0)),
        ..Default::default()
    }
}

fn duration(seconds: i64, nanos: i32) -> Duration {
    Duration { seconds, nanos }
}

const BAD_BDFS: &[&str] = &[
    "",
    "0000:03:ff.f",
    "0000:03:20.0",
    "0000:03:00.8",
    "3:0.0",
    // SNAP's own form `bb:dd.f` is accepted; a PCI domain other than 0000 cannot be
    // expressed to SNAP (snap-audit F2).
    "0001:03:00.2",
    "ffff:03:00.0",
    "0000:03:00",
    "0000:03:00.0;reboot",
    "../../0000:03:00.0",
    "zzzz:03:00.0",
    "0000:03:00.0\0",
    "0000-03-00.0",
];

const BAD_TRADDRS: &[(i32, &str)] = &[
    (1, "2001:db8::1"),
    (2, "192.0.2.10"),
    (1, "not-an-ip"),
    (1, ""),
    (1, "256.1.1.1"),
    (1, "192.0.2.10:4420"),
    (1, "192.0.2.10;reboot"),
    (1, "192.0.2.10\0"),
    (1, " 192.0.2.10"),
    (2, "[2001:db8::1]"),
    (2, "fe80::1%eth0"),
];

/// Reconnect settings SPDK v24.01 refuses (loss, delay, fast-fail) and the field to change.
const BAD_RECONNECT: [((i32, u32, u32), &str); 9] = [
    ((-2, 1, 0), "ctrl_loss_timeout_sec"),
    ((i32::MIN, 1, 0), "ctrl_loss_timeout_sec"),
    ((0, 5, 0), "reconnect_delay_sec"),
    ((0, 0, 5), "fast_io_fail_timeout_sec"),
    ((-1, 0, 0), "reconnect_delay_sec"),
    ((30, 0, 0), "reconnect_delay_sec"),
    ((30, 31, 0), "reconnect_delay_sec"),
    ((30, 5, 31), "fast_io_fail_timeout_sec"),
    ((30, 10, 5), "fast_io_fail_timeout_sec"),
];

/// THE table.
#[allow(clippy::too_many_lines)]
fn cases() -> Vec<Case> {
    let mut t: Vec<Case> = Vec::new();
    let mut add = |rpc: &'static str, field: &str, value: String, req: Req| {
        t.push(Case {
            rpc,
            field: field.to_owned(),
            value,
            req,
        });
    };

    // ---- Storage: remote controllers.
    let remote = |f: &dyn Fn(&mut v1::RemoteControllerSpec)| {
        let mut spec = remote_spec();
        f(&mut spec);
        Req::CreateRemote(v1::CreateRemoteControllerRequest {
            remote_controller_id: "r0".to_owned(),
            spec: Some(spec),
            options: None,
        })
    };
    for id in bad_ids() {
        let req = Req::CreateRemote(v1::CreateRemoteControllerRequest {
            remote_controller_id: id.clone(),
            spec: Some(remote_spec()),
            options: None,
        });
        add("CreateRemoteController", "remote_controller_id", id, req);
    }
    add(
        "CreateRemoteController",
        "spec",
        "missing".into(),
        Req::CreateRemote(v1::CreateRemoteControllerRequest {
            remote_controller_id: "r0".to_owned(),
            spec: None,
            options: None,
        }),
    );
    for transport in [0, 3, 4, 99, -1, i32::MAX] {
        add(
            "CreateRemoteController",
            "spec.transport",
            transport.to_string(),
            remote(&|s| s.transport = transport),
        );
    }
    for family in [0, 3, 99, -1] {
        add(
            "CreateRemoteController",
            "spec.address_family",
            family.to_string(),
            remote(&|s| s.address_family = family),
        );
    }
    for &(family, addr) in BAD_TRADDRS {
        add(
            "CreateRemoteController",
            "spec.traddr",
            format!("{addr:?} family {family}"),
            remote(&|s| {
                s.address_family = family;
                s.traddr = addr.to_owned();
            }),
        );
    }
    // The reconnect trio by SPDK's bdev_nvme_check_io_error_resiliency_params (F5): each
    // combination SPDK v24.01 refuses with -22, and the field to change.
    for ((loss, delay, fast), field) in BAD_RECONNECT {
        let set = move |s: &mut v1::RemoteControllerSpec| {
            s.ctrl_loss_timeout_sec = loss;
            s.reconnect_delay_sec = delay;
            s.fast_io_fail_timeout_sec = fast;
        };
        add(
            "CreateRemoteController",
            &format!("spec.{field}"),
            format!("({loss}, {delay}, {fast})"),
            remote(&set),
        );
    }
    // trsvcid 0 means "default 4420" (storage.proto), so it is not a bad value.
    for port in [65536, 70000, u32::MAX] {
        add(
            "CreateRemoteController",
            "spec.trsvcid",
            port.to_string(),
            remote(&|s| s.trsvcid = port),
        );
    }
    for nqn in bad_nqns() {
        add(
            "CreateRemoteController",
            "spec.subnqn",
            nqn.clone(),
            remote(&|s| s.subnqn = nqn.clone()),
        );
        if !nqn.is_empty() {
            add(
                "CreateRemoteController",
                "spec.hostnqn",
                nqn.clone(),
                remote(&|s| s.hostnqn = nqn.clone()),
            );
        }
    }
    for queues in [1025, u32::MAX] {
        add(
            "CreateRemoteController",
            "spec.num_io_queues",
            queues.to_string(),
            remote(&|s| s.num_io_queues = queues),
        );
    }
    for name in bad_flat_names("remoteControllers", "exposures") {
        add(
            "GetRemoteController",
            "name",
            name.clone(),
            Req::GetRemote(v1::GetRemoteControllerRequest { name: name.clone() }),
        );
        add(
            "DeleteRemoteController",
            "name",
            name.clone(),
            Req::DeleteRemote(v1::DeleteRemoteControllerRequest {
                name,
                allow_missing: true,
                options: None,
            }),
        );
    }

    // ---- Storage: subsystems.
    let subsystem = |f: &dyn Fn(&mut v1::Subsystem)| {
        let mut sub = v1::Subsystem {
            nqn: "nqn.2022-10.io.nvda.nvme:0".to_owned(),
            serial_number: "SN0001".to_owned(),
            model_number: "BlueField NVMe".to_owned(),
            ..Default::default()
        };
        f(&mut sub);
        Req::CreateSubsystem(v1::CreateSubsystemRequest {
            subsystem: Some(sub),
            options: None,
        })
    };
    add(
        "CreateSubsystem",
        "subsystem",
        "missing".into(),
        Req::CreateSubsystem(v1::CreateSubsystemRequest {
            subsystem: None,
            options: None,
        }),
    );
    for nqn in bad_nqns() {
        add(
            "CreateSubsystem",
            "subsystem.nqn",
            nqn.clone(),
            subsystem(&|s| s.nqn = nqn.clone()),
        );
    }
    for name in [
        "subsystems/nqn.2022-10.io.nvda.nvme:1",
        "subsystems/../nqn.2022-10.io.nvda.nvme:0",
        "nqn.2022-10.io.nvda.nvme:0",
    ] {
        add(
            "CreateSubsystem",
            "subsystem.name",
            name.to_owned(),
            subsystem(&|s| s.name = name.to_owned()),
        );
    }
    for (field, max) in [("serial_number", 20), ("model_number", 40)] {
        let values = [
            long(max + 1),
            long(1000),
            "SNé".to_owned(),
            "SN\0".to_owned(),
            "SN\n".to_owned(),
            "SN\u{7f}".to_owned(),
        ];
        for value in values {
            add(
                "CreateSubsystem",
                &format!("subsystem.{field}"),
                value.clone(),
                subsystem(&|s| {
                    if field == "serial_number" {
                        s.serial_number = value.clone();
                    } else {
                        s.model_number = value.clone();
                    }
                }),
            );
        }
    }
    for name in bad_subsystem_names() {
        add(
            "GetSubsystem",
            "name",
            name.clone(),
            Req::GetSubsystem(v1::GetSubsystemRequest { name: name.clone() }),
        );
        add(
            "DeleteSubsystem",
            "name",
            name.clone(),
            Req::DeleteSubsystem(v1::DeleteSubsystemRequest {
                name: name.clone(),
                allow_missing: true,
                options: None,
            }),
        );
        add(
            "ListNamespaces",
            "parent",
            name.clone(),
            Req::ListNamespaces(v1::ListNamespacesRequest {
                parent: name.clone(),
                page: None,
            }),
        );
        add(
            "ListControllers",
            "parent",
            name.clone(),
            Req::ListControllers(v1::ListControllersRequest {
                parent: name.clone(),
                page: None,
            }),
        );
        add(
            "CreateNamespace",
            "parent",
            name.clone(),
            Req::CreateNamespace(v1::CreateNamespaceRequest {
                parent: name.clone(),
                namespace: Some(namespace()),
                options: None,
            }),
        );
        add(
            "CreateController",
            "parent",
            name.clone(),
            Req::CreateController(v1::CreateControllerRequest {
                parent: name,
                controller_id: "c0".to_owned(),
                controller: Some(controller()),
                options: None,
            }),
        );
    }

    // ---- Storage: namespaces.
    let create_ns = |f: &dyn Fn(&mut v1::Namespace)| {
        let mut ns = namespace();
        f(&mut ns);
        Req::CreateNamespace(v1::CreateNamespaceRequest {
            parent: SUB.to_owned(),
            namespace: Some(ns),
            options: None,
        })
    };
    add(
        "CreateNamespace",
        "namespace",
        "missing".into(),
        Req::CreateNamespace(v1::CreateNamespaceRequest {
            parent: SUB.to_owned(),
            namespace: None,
            options: None,
        }),
    );
    for nsid in [0, u32::MAX] {
        add(
            "CreateNamespace",
            "namespace.nsid",
            nsid.to_string(),
            create_ns(&|n| n.nsid = nsid),
        );
    }
    let bad_volumes = [
        String::new(),
        "Nvme0n1".to_owned(),
        "volumes/".to_owned(),
        "volumes/..".to_owned(),
        "volumes/../../etc/passwd".to_owned(),
        "volumes/a/b".to_owned(),
        "volumes/a;reboot".to_owned(),
        "volumes/$(reboot)".to_owned(),
        "volumes/a b".to_owned(),
        "volumes/a\0".to_owned(),
        "volumes/é".to_owned(),
        format!("volumes/{}", long(256)),
        format!("volumes/{}", long(1000)),
    ];
    for volume in &bad_volumes {
        add(
            "CreateNamespace",
            "namespace.volume",
            volume.clone(),
            create_ns(&|n| n.volume = volume.clone()),
        );
    }
    for uuid in [
        "xyz",
        "3f2504e0-4f89-11d3-9a0c-0305e82c330g",
        "3f2504e04f8911d39a0c0305e82c3301",
        "3f2504e0-4f89-11d3-9a0c-0305e82c3301-",
        "3f2504e0-4f89-11d3-9a0c-0305e82c33",
        "{3f2504e0-4f89-11d3-9a0c-0305e82c3301}",
        "3f2504e0-4f89-11d3-9a0c-0305e82c330é",
    ] {
        add(
            "CreateNamespace",
            "namespace.uuid",
            uuid.to_owned(),
            create_ns(&|n| n.uuid = uuid.to_owned()),
        );
    }
    for (field, digits) in [("nguid", 32), ("eui64", 16)] {
        for value in ["12".to_owned(), "g".repeat(digits), "0".repeat(digits + 1)] {
            add(
                "CreateNamespace",
                &format!("namespace.{field}"),
                value.clone(),
                create_ns(&|n| {
                    if field == "nguid" {
                        n.nguid = value.clone();
                    } else {
                        n.eui64 = value.clone();
                    }
                }),
            );
        }
    }
    for name in bad_namespace_names() {
        add(
            "GetNamespace",
            "name",
            name.clone(),
            Req::GetNamespace(v1::GetNamespaceRequest { name: name.clone() }),
        );
        add(
            "DeleteNamespace",
            "name",
            name.clone(),
            Req::DeleteNamespace(v1::DeleteNamespaceRequest {
                name,
                allow_missing: true,
                options: None,
            }),
        );
    }

    // ---- Storage: controllers.
    let create_ctrl = |f: &dyn Fn(&mut v1::Controller)| {
        let mut ctrl = controller();
        f(&mut ctrl);
        Req::CreateController(v1::CreateControllerRequest {
            parent: SUB.to_owned(),
            controller_id: "c0".to_owned(),
            controller: Some(ctrl),
            options: None,
        })
    };
    for id in bad_ids() {
        add(
            "CreateController",
            "controller_id",
            id.clone(),
            Req::CreateController(v1::CreateControllerRequest {
                parent: SUB.to_owned(),
                controller_id: id,
                controller: Some(controller()),
                options: None,
            }),
        );
    }
    add(
        "CreateController",
        "controller",
        "missing".into(),
        Req::CreateController(v1::CreateControllerRequest {
            parent: SUB.to_owned(),
            controller_id: "c0".to_owned(),
            controller: None,
            options: None,
        }),
    );
    add(
        "CreateController",
        "controller.function",
        "missing".into(),
        create_ctrl(&|c| c.function = None),
    );
    add(
        "CreateController",
        "controller.function",
        "empty oneof".into(),
        create_ctrl(&|c| c.function = Some(v1::EmulationFunction { function: None })),
    );
    for b in BAD_BDFS {
        add(
            "CreateController",
            "controller.function.pci_address.bdf",
            (*b).to_owned(),
            create_ctrl(&|c| c.function = Some(bdf(b))),
        );
    }
    for vuid in [
        String::new(),
        long(65),
        "MT2306XZ-0001".to_owned(),
        "a/b".to_owned(),
        "a;b".to_owned(),
        "é".to_owned(),
    ] {
        add(
            "CreateController",
            "controller.function.vuid",
            vuid.clone(),
            create_ctrl(&|c| {
                c.function = Some(v1::EmulationFunction {
                    function: Some(Function::Vuid(vuid.clone())),
                });
            }),
        );
    }
    add(
        "CreateController",
        "controller.num_queues",
        "1025".into(),
        create_ctrl(&|c| c.num_queues = 1025),
    );
    add(
        "CreateController",
        "controller.mdts",
        "13".into(),
        create_ctrl(&|c| c.mdts = 13),
    );
    for name in bad_controller_names() {
        add(
            "GetController",
            "name",
            name.clone(),
            Req::GetController(v1::GetControllerRequest { name: name.clone() }),
        );
        add(
            "DeleteController",
            "name",
            name.clone(),
            Req::DeleteController(v1::DeleteControllerRequest {
                name: name.clone(),
                allow_missing: true,
                force: true,
                options: None,
            }),
        );
        add(
            "SuspendController",
            "name",
            name.clone(),
            Req::SuspendController(v1::SuspendControllerRequest {
                name: name.clone(),
                options: None,
            }),
        );
        add(
            "ResumeController",
            "name",
            name.clone(),
            Req::ResumeController(v1::ResumeControllerRequest {
                name: name.clone(),
                options: None,
            }),
        );
        add(
            "AttachNamespace",
            "controller",
            name.clone(),
            Req::AttachNamespace(v1::AttachNamespaceRequest {
                controller: name.clone(),
                nsid: 1,
                options: None,
            }),
        );
        add(
            "DetachNamespace",
            "controller",
            name.clone(),
            Req::DetachNamespace(v1::DetachNamespaceRequest {
                controller: name,
                nsid: 1,
                options: None,
            }),
        );
    }
    for nsid in [0, u32::MAX] {
        add(
            "AttachNamespace",
            "nsid",
            nsid.to_string(),
            Req::AttachNamespace(v1::AttachNamespaceRequest {
                controller: CTRL.to_owned(),
                nsid,
                options: None,
            }),
        );
        add(
            "DetachNamespace",
            "nsid",
            nsid.to_string(),
            Req::DetachNamespace(v1::DetachNamespaceRequest {
                controller: CTRL.to_owned(),
                nsid,
                options: None,
            }),
        );
    }

    // ---- Storage: exposures.
    let expose = |f: &dyn Fn(&mut v1::ExposureSpec)| {
        let mut spec = exposure_spec();
        f(&mut spec);
        Req::ApplyExposure(v1::ApplyExposureRequest {
            exposure_id: "e0".to_owned(),
            spec: Some(spec),
            options: None,
        })
    };
    for id in bad_ids() {
        add(
            "ApplyExposure",
            "exposure_id",
            id.clone(),
            Req::ApplyExposure(v1::ApplyExposureRequest {
                exposure_id: id,
                spec: Some(exposure_spec()),
                options: None,
            }),
        );
    }
    add(
        "ApplyExposure",
        "spec",
        "missing".into(),
        Req::ApplyExposure(v1::ApplyExposureRequest {
            exposure_id: "e0".to_owned(),
            spec: None,
            options: None,
        }),
    );
    add(
        "ApplyExposure",
        "spec.remote",
        "missing".into(),
        expose(&|s| s.remote = None),
    );
    for transport in [0, 99, -1] {
        add(
            "ApplyExposure",
            "spec.remote.transport",
            transport.to_string(),
            expose(&|s| remote_of(s).transport = transport),
        );
    }
    for &(family, addr) in BAD_TRADDRS {
        add(
            "ApplyExposure",
            "spec.remote.traddr",
            format!("{addr:?} family {family}"),
            expose(&|s| {
                let r = remote_of(s);
                r.address_family = family;
                r.traddr = addr.to_owned();
            }),
        );
    }
    for port in [65536, u32::MAX] {
        add(
            "ApplyExposure",
            "spec.remote.trsvcid",
            port.to_string(),
            expose(&|s| remote_of(s).trsvcid = port),
        );
    }
    for nqn in bad_nqns() {
        add(
            "ApplyExposure",
            "spec.remote.subnqn",
            nqn.clone(),
            expose(&|s| remote_of(s).subnqn = nqn.clone()),
        );
        add(
            "ApplyExposure",
            "spec.subsystem_nqn",
            nqn.clone(),
            expose(&|s| s.subsystem_nqn = nqn.clone()),
        );
    }
    // nsid 0 in an exposure means "let the agent choose"; 0xFFFFFFFF is the broadcast id.
    add(
        "ApplyExposure",
        "spec.nsid",
        u32::MAX.to_string(),
        expose(&|s| s.nsid = u32::MAX),
    );
    add(
        "ApplyExposure",
        "spec.remote_nsid",
        u32::MAX.to_string(),
        expose(&|s| s.remote_nsid = u32::MAX),
    );
    add(
        "ApplyExposure",
        "spec.function",
        "missing".into(),
        expose(&|s| s.function = None),
    );
    for ((loss, delay, fast), field) in BAD_RECONNECT {
        add(
            "ApplyExposure",
            &format!("spec.remote.{field}"),
            format!("({loss}, {delay}, {fast})"),
            expose(&|s| {
                let r = remote_of(s);
                r.ctrl_loss_timeout_sec = loss;
                r.reconnect_delay_sec = delay;
                r.fast_io_fail_timeout_sec = fast;
            }),
        );
    }
    for b in BAD_BDFS {
        add(
            "ApplyExposure",
            "spec.function.pci_address.bdf",
            (*b).to_owned(),
            expose(&|s| s.function = Some(bdf(b))),
        );
    }
    for value in [long(21), long(1000), "SNé".to_owned(), "SN\0".to_owned()] {
        add(
            "ApplyExposure",
            "spec.serial_number",
            value.clone(),
            expose(&|s| s.serial_number = value.clone()),
        );
    }
    add(
        "ApplyExposure",
        "spec.model_number",
        long(41),
        expose(&|s| s.model_number = long(41)),
    );
    for name in bad_flat_names("exposures", "remoteControllers") {
        add(
            "GetExposure",
            "name",
            name.clone(),
            Req::GetExposure(v1::GetExposureRequest { name: name.clone() }),
        );
        add(
            "DeleteExposure",
            "name",
            name.clone(),
            Req::DeleteExposure(v1::DeleteExposureRequest {
                name,
                allow_missing: true,
                options: None,
            }),
        );
    }

    // ---- Storage: I/O stats (a volume, namespace or controller name).
    let mut stats_names: Vec<String> = bad_volumes.iter().skip(2).cloned().collect();
    stats_names.extend(bad_namespace_names().into_iter().filter(|n| {
        // Names that no longer look like a namespace fall to the "not a stats target" row.
        !n.is_empty()
    }));
    stats_names.extend(bad_controller_names().into_iter().filter(|n| !n.is_empty()));
    stats_names.extend(
        [
            "",
            "Nvme0n1",
            "../../etc/passwd",
            "subsystems/nqn.2022-10.io.nvda.nvme:0",
            "remoteControllers/r0",
        ]
        .map(str::to_owned),
    );
    stats_names.push(long(1000));
    for name in stats_names {
        add(
            "GetIoStats",
            "name",
            name.clone(),
            Req::GetIoStats(v1::GetIoStatsRequest { name }),
        );
    }

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

    // ---- Counters: selectors that would escape sysfs, intervals out of range.
    let mut selectors: Vec<(String, Selector)> = Vec::new();
    for device in [
        "..",
        "../../etc",
        "mlx5_0/../x",
        "mlx5_0\0",
        "a b",
        &long(1000),
    ] {
        selectors.push((
            "selectors[0]".into(),
            Selector::Rdma(v1::RdmaSelector {
                device: device.to_owned(),
                port: 1,
            }),
        ));
        selectors.push((
            "selectors[0]".into(),
            Selector::Block(v1::BlockSelector {
                device: device.to_owned(),
            }),
        ));
    }
    selectors.push((
        "selectors[0]".into(),
        Selector::Rdma(v1::RdmaSelector {
            device: String::new(),
            port: 1,
        }),
    ));
    for ifname in [
        "..",
        ".",
        "../../etc",
        "a/b",
        "a b",
        "eth0\0",
        "eth0;reboot",
        "$(reboot)",
        "`id`",
        "pf0hpf|x",
        &long(16),
        &long(1000),
    ] {
        selectors.push((
            "selectors[0]".into(),
            Selector::Netdev(v1::NetdevSelector {
                ifname: ifname.to_owned(),
            }),
        ));
        selectors.push((
            "selectors[0]".into(),
            Selector::Tc(v1::TcSelector {
                ifname: ifname.to_owned(),
            }),
        ));
    }
    selectors.push((
        "selectors[0].tc.ifname".into(),
        Selector::Tc(v1::TcSelector {
            ifname: String::new(),
        }),
    ));
    for volume in [
        "..",
        "../../etc/passwd",
        "volumes/../x",
        "a/b",
        "a;reboot",
        "a\0",
    ] {
        selectors.push((
            "selectors[0].volumes.volume".into(),
            Selector::Volumes(v1::VolumeSelector {
                volume: volume.to_owned(),
            }),
        ));
    }
    selectors.push((
        "selectors[0].ovs_flows.filter".into(),
        Selector::OvsFlows(v1::OvsFlowSelector { filter: 99 }),
    ));
    for (field, selector) in selectors {
        let one = vec![v1::CounterSelector {
            selector: Some(selector.clone()),
        }];
        add(
            "Snapshot",
            &field,
            format!("{selector:?}"),
            Req::Snapshot(v1::SnapshotRequest {
                selectors: one.clone(),
            }),
        );
        add(
            "Watch",
            &field,
            format!("{selector:?}"),
            Req::Watch(v1::WatchRequest {
                selectors: one,
                interval: Some(duration(1, 0)),
                max_snapshots: 1,
            }),
        );
    }
    // The index names the bad one among good ones.
    add(
        "Snapshot",
        "selectors[1]",
        "good then ../..".into(),
        Req::Snapshot(v1::SnapshotRequest {
            selectors: vec![
                v1::CounterSelector {
                    selector: Some(Selector::Netdev(v1::NetdevSelector {
                        ifname: "pf0hpf".to_owned(),
                    })),
                },
                v1::CounterSelector {
                    selector: Some(Selector::Block(v1::BlockSelector {
                        device: "../..".to_owned(),
                    })),
                },
            ],
        }),
    );
    add(
        "Snapshot",
        "selectors[0]",
        "no selector set".into(),
        Req::Snapshot(v1::SnapshotRequest {
            selectors: vec![v1::CounterSelector { selector: None }],
        }),
    );
    let mut intervals: Vec<(String, Option<Duration>)> = vec![("missing".into(), None)];
    for (seconds, nanos) in [
        (0, 0),
        (0, 1_000),
        (-1, 0),
        (0, -1),
        (86_400 * 365, 0),
        (i64::MAX, 0),
        (i64::MIN, 0),
    ] {
        intervals.push((
            format!("{seconds}s{nanos}ns"),
            Some(duration(seconds, nanos)),
        ));
    }
    for (what, interval) in intervals {
        add(
            "Watch",
            "interval",
            what,
            Req::Watch(v1::WatchRequest {
                selectors: Vec::new(),
                interval,
                max_snapshots: 1,
            }),
        );
    }

    // ---- Inventory getters and page tokens.
    // RDMA device names may start with a digit: "1abc" is a fine ibdev.
    for name in bad_flat_names("rdmaDevices", "netdevs")
        .into_iter()
        .filter(|n| !n.ends_with("/1abc"))
        .chain([
            "rdmaDevices/mlx5_0/ports".to_owned(),
            format!("rdmaDevices/{}", long(64)),
        ])
    {
        add(
            "GetRdmaDevice",
            "name",
            name.clone(),
            Req::GetRdmaDevice(v1::GetRdmaDeviceRequest { name }),
        );
    }
    for name in [
        "",
        "netdevs",
        "netdevs/",
        "rdmaDevices/mlx5_0",
        "netdevs/a/b",
    ] {
        add(
            "GetNetdev",
            "name",
            name.to_owned(),
            Req::GetNetdev(v1::GetNetdevRequest {
                name: name.to_owned(),
            }),
        );
    }
    let page = Some(v1::PageRequest {
        page_size: 1,
        page_token: "../../etc/passwd".to_owned(),
    });
    add(
        "ListNetdevs",
        "page.page_token",
        "unissued token".into(),
        Req::ListNetdevs(v1::ListNetdevsRequest {
            page: page.clone(),
            representors_only: false,
        }),
    );
    add(
        "ListRdmaDevices",
        "page.page_token",
        "unissued token".into(),
        Req::ListRdmaDevices(v1::ListRdmaDevicesRequest { page }),
    );
    t
}

/// SNAP methods that change nothing.
fn read_only(method: &str) -> bool {
    method.contains("_get_") || method.ends_with("_list") || method == "rpc_get_methods"
}

#[tokio::test]
async fn every_malformed_value_is_invalid_argument_naming_the_field_and_changes_nothing() {
    let lab = Lab::start();
    let snap_before = lab.snap.state();
    let channel = lab.agent.channel().await;
    let mut clients = Clients {
        storage: StorageClient::new(channel.clone()),
        switch: SwitchClient::new(channel.clone()),
        counters: CountersClient::new(channel.clone()),
        inventory: InventoryClient::new(channel),
    };

    let cases = cases();
    let total = cases.len();
    let mut failures = Vec::new();
    for case in cases {
        let result = clients.send(case.req).await;
        let ok = matches!(&result, Err(status)
            if status.code() == Code::InvalidArgument
                && status.message().starts_with(&format!("{}:", case.field)));
        if !ok {
            let got = match &result {
                Ok(()) => "OK".to_owned(),
                Err(s) => format!("{:?}: {}", s.code(), s.message()),
            };
            failures.push(format!(
                "{} {} = {:?}: expected INVALID_ARGUMENT \"{}: ...\", got {got}",
                case.rpc, case.field, case.value, case.field
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {total} rows failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
    // The table is what the issue asks for; a refactor that drops rows must say so.
    assert!(total >= 600, "only {total} rows");

    // Nothing reached a backend: SNAP saw read-only calls at most and kept its state...
    let mutating: Vec<String> = lab
        .snap
        .requests()
        .into_iter()
        .map(|(m, _)| m)
        .filter(|m| !read_only(m))
        .collect();
    assert!(mutating.is_empty(), "bad input reached SNAP: {mutating:?}");
    assert!(lab.snap.state() == snap_before, "SNAP state changed");

    // ...and the agent's desired state holds no object.
    let state = lab._dir.path().join("state/storage.json");
    if let Ok(text) = std::fs::read_to_string(&state) {
        let doc: serde_json::Value = serde_json::from_str(&text).expect("state file is JSON");
        let objects: Vec<String> = doc
            .as_object()
            .into_iter()
            .flatten()
            .filter(|(_, v)| v.as_object().is_some_and(|o| !o.is_empty()))
            .map(|(k, v)| format!("{k}: {v}"))
            .collect();
        assert!(objects.is_empty(), "state file holds objects: {objects:?}");
    }
}
