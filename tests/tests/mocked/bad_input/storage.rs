//! Bad input rows of the Storage service's remote controllers, subsystems and namespaces.

use dpu_proto::v1;

use super::specs::*;
use super::values::*;
use super::{Req, SUB};

pub(super) fn rows(add: &mut impl FnMut(&'static str, &str, String, Req)) {
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
    let bad_volumes = bad_volumes();
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
}
