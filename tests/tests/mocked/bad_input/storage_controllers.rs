//! Bad input rows of the Storage service's controllers, exposures and I/O stats.

use dpu_proto::v1::{self, emulation_function::Function};

use super::specs::*;
use super::values::*;
use super::{Req, CTRL, SUB};

pub(super) fn rows(add: &mut impl FnMut(&'static str, &str, String, Req)) {
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
    let mut stats_names: Vec<String> = bad_volumes().iter().skip(2).cloned().collect();
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
}
