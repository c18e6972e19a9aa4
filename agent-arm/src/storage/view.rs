//! Builds API objects from the desired document and what the backend reports now.
//!
//! The document says what was asked for; the observation says what is there. An object
//! the backend lost shows its real state (no volumes, controller FAILED) rather than what
//! was asked, so `dpuctl storage list` never claims a disk the host cannot see.

use dpu_nvmeof::snap::EmulatedFunction;
use dpu_probe::disk_identity::NamespaceIdentity;
use dpu_proto::v1;

use super::backend::{ObservedController, VolumeInfo};
use super::desired::belongs_to;
use super::desired::{ControllerDoc, Desired, Key, NamespaceDoc, QosDoc, SubsystemDoc};

/// What the backend reported, or why it could not.
#[derive(Debug, Default)]
pub(crate) struct Observed {
    pub(crate) volumes: Option<Vec<VolumeInfo>>,
    pub(crate) controllers: Option<Vec<ObservedController>>,
    /// Why an observation is missing, for `detail` fields.
    pub(crate) problem: Option<String>,
}

fn disk_identity(
    id: &NamespaceIdentity,
    source: String,
    host_pci_functions: Vec<String>,
) -> v1::DiskIdentity {
    v1::DiskIdentity {
        uuid: id.uuid.clone().unwrap_or_default(),
        nguid: id.nguid.clone().unwrap_or_default(),
        eui64: id.eui64.clone().unwrap_or_default(),
        source,
        host_pci_functions,
    }
}

/// The host PCI functions (`0000:bb:dd.f`) of the live controllers of `nqn` that attach
/// namespace `nsid`: the address a controller was placed by, or for one placed by PF/VF
/// index or VUID the address SNAP listed for its function when it was created. A
/// controller whose address the agent never learnt adds none.
fn host_pci_functions(doc: &Desired, nqn: &str, nsid: u32) -> Vec<String> {
    let mut functions: Vec<String> = doc
        .controllers_of(nqn)
        .filter(|(_, ctrl)| ctrl.attached.contains(&nsid))
        .filter_map(|(_, ctrl)| match super::function::decode(&ctrl.function) {
            Ok(EmulatedFunction::PciBdf(bdf)) => Some(bdf),
            _ => ctrl.backend.as_ref().and_then(|b| b.host_bdf.clone()),
        })
        // SNAP's form has no domain: it can only name domain 0000 (function.rs).
        .map(|bdf| format!("0000:{bdf}"))
        .collect();
    functions.sort();
    functions.dedup();
    functions
}

/// Every identity under which a host can see a disk carrying `v`: its own disk's, as this
/// machine's kernel reads it, and each live namespace it backs, as the agent configured it
/// (an identifier the agent could not parse is left out, never passed on half-read).
fn host_identities(doc: &Desired, v: &VolumeInfo) -> Vec<v1::DiskIdentity> {
    let mut out = Vec::new();
    if let (Some(id), Some(device)) = (&v.identity, &v.device) {
        out.push(disk_identity(
            id,
            format!("disk {device} on the agent's machine"),
            Vec::new(),
        ));
    }
    for key in doc.users_of_volume(&v.id) {
        let Key::Namespace(nqn, nsid) = &key else {
            continue;
        };
        let Some(ns) = doc.namespace(nqn, *nsid) else {
            continue;
        };
        let nonempty = |s: &str| (!s.is_empty()).then_some(s.to_owned());
        if let Ok(id) = NamespaceIdentity::from_parts(
            nonempty(&ns.uuid).as_deref(),
            nonempty(&ns.nguid).as_deref(),
            nonempty(&ns.eui64).as_deref(),
        ) {
            if !id.is_empty() {
                let functions = host_pci_functions(doc, nqn, *nsid);
                out.push(disk_identity(&id, format!("namespace {key}"), functions));
            }
        }
    }
    out
}

/// A volume's QoS limits in the API's terms.
pub(crate) fn qos_limits(limits: &QosDoc) -> v1::QosLimits {
    v1::QosLimits {
        rw_ios_per_sec: limits.rw_ios_per_sec,
        rw_mbytes_per_sec: limits.rw_mbytes_per_sec,
        r_mbytes_per_sec: limits.r_mbytes_per_sec,
        w_mbytes_per_sec: limits.w_mbytes_per_sec,
    }
}

/// One volume as the API shows it: what the backend reports, with the QoS limits the
/// document asks for beside the ones the backend reports in force.
pub(crate) fn volume(doc: &Desired, v: &VolumeInfo) -> v1::Volume {
    v1::Volume {
        name: format!("volumes/{}", v.id),
        remote_nsid: super::desired::split_volume_id(&v.id).map_or(0, |(_, nsid)| nsid),
        block_size: u32::try_from(v.block_size).unwrap_or(u32::MAX),
        num_blocks: v.num_blocks,
        uuid: v.uuid.clone(),
        device: v.device.clone().unwrap_or_default(),
        host_identities: host_identities(doc, v),
        qos: doc.qos_of(&v.id).map(qos_limits),
        applied_qos: v.qos.as_ref().map(qos_limits),
    }
}

pub(crate) fn remote_controller(
    doc: &Desired,
    id: &str,
    spec: &v1::RemoteControllerSpec,
    seen: &Observed,
) -> v1::RemoteController {
    let (state, volumes, detail) = match &seen.volumes {
        Some(all) => {
            let mine: Vec<v1::Volume> = all
                .iter()
                .filter(|v| belongs_to(&v.id, id))
                .map(|v| volume(doc, v))
                .collect();
            if mine.is_empty() {
                (
                    v1::RemoteControllerState::Connecting,
                    mine,
                    "the backend reports no volumes for it yet".to_owned(),
                )
            } else {
                (v1::RemoteControllerState::Enabled, mine, String::new())
            }
        }
        None => (
            v1::RemoteControllerState::Unspecified,
            Vec::new(),
            seen.problem.clone().unwrap_or_default(),
        ),
    };
    v1::RemoteController {
        name: Key::Remote(id.to_owned()).to_string(),
        spec: Some(spec.clone()),
        status: Some(v1::RemoteControllerStatus {
            state: state as i32,
            volumes,
            detail,
            ..Default::default()
        }),
    }
}

pub(crate) fn subsystem(doc: &Desired, nqn: &str, sub: &SubsystemDoc) -> v1::Subsystem {
    v1::Subsystem {
        name: Key::Subsystem(nqn.to_owned()).to_string(),
        nqn: nqn.to_owned(),
        serial_number: sub.serial_number.clone(),
        model_number: sub.model_number.clone(),
        max_namespaces: sub.max_namespaces,
        controllers: doc
            .controllers_of(nqn)
            .map(|(id, _)| Key::Controller(nqn.to_owned(), id.clone()).to_string())
            .collect(),
        namespaces: doc
            .namespaces_of(nqn)
            .map(|(nsid, _)| Key::Namespace(nqn.to_owned(), nsid).to_string())
            .collect(),
    }
}

pub(crate) fn namespace(
    doc: &Desired,
    nqn: &str,
    nsid: u32,
    ns: &NamespaceDoc,
    seen: &Observed,
) -> v1::Namespace {
    let volume_missing = seen
        .volumes
        .as_ref()
        .is_some_and(|all| !all.iter().any(|v| v.id == ns.volume));
    let attached = doc
        .controllers_of(nqn)
        .any(|(_, c)| c.attached.contains(&nsid));
    let state = if volume_missing {
        v1::NamespaceState::VolumeMissing
    } else if attached {
        v1::NamespaceState::Attached
    } else {
        v1::NamespaceState::Detached
    };
    v1::Namespace {
        name: Key::Namespace(nqn.to_owned(), nsid).to_string(),
        nsid,
        volume: format!("volumes/{}", ns.volume),
        uuid: ns.uuid.clone(),
        nguid: ns.nguid.clone(),
        eui64: ns.eui64.clone(),
        state: state as i32,
    }
}

pub(crate) fn controller_state(ctrl: &ControllerDoc, seen: &Observed) -> v1::ControllerState {
    let Some(list) = &seen.controllers else {
        return v1::ControllerState::Unspecified;
    };
    let found = ctrl
        .backend
        .as_ref()
        .and_then(|b| list.iter().find(|o| o.id == b.id));
    match found.map(|o| o.suspended) {
        None => v1::ControllerState::Failed,
        Some(Some(true)) => v1::ControllerState::Suspended,
        Some(Some(false)) => v1::ControllerState::Running,
        // The backend does not say (a SNAP release without a controller state): unknown,
        // never the desired state passed off as observed.
        Some(None) => v1::ControllerState::Unspecified,
    }
}

pub(crate) fn controller(
    nqn: &str,
    id: &str,
    ctrl: &ControllerDoc,
    seen: &Observed,
) -> v1::Controller {
    let host_pci_address = match &ctrl.function.function {
        Some(v1::emulation_function::Function::PciAddress(pci)) => Some(pci.clone()),
        _ => None,
    };
    v1::Controller {
        name: Key::Controller(nqn.to_owned(), id.to_owned()).to_string(),
        function: Some(ctrl.function.clone()),
        num_queues: ctrl.num_queues,
        mdts: ctrl.mdts,
        state: controller_state(ctrl, seen) as i32,
        attached_nsids: ctrl.attached.iter().copied().collect(),
        backend_id: ctrl
            .backend
            .as_ref()
            .map(|b| b.id.clone())
            .unwrap_or_default(),
        host_pci_address,
    }
}

pub(crate) fn exposure(
    doc: &Desired,
    id: &str,
    spec: &v1::ExposureSpec,
    seen: &Observed,
) -> v1::Exposure {
    let plan = doc.plan(id, spec);
    let volume = seen
        .volumes
        .as_ref()
        .and_then(|all| all.iter().find(|v| v.id == plan.namespace.volume));
    let (controller, state) = match &plan.controller {
        Some((ctrl_id, _)) => (
            Key::Controller(plan.nqn.clone(), ctrl_id.clone()).to_string(),
            doc.controller(&plan.nqn, ctrl_id)
                .map_or(v1::ControllerState::Unspecified, |c| {
                    controller_state(c, seen)
                }),
        ),
        None => (String::new(), v1::ControllerState::Unspecified),
    };
    v1::Exposure {
        name: format!("exposures/{id}"),
        spec: Some(spec.clone()),
        remote_controller: Key::Remote(plan.remote_id.clone()).to_string(),
        subsystem: Key::Subsystem(plan.nqn.clone()).to_string(),
        namespace: Key::Namespace(plan.nqn.clone(), plan.nsid).to_string(),
        controller,
        controller_state: state as i32,
        host_device: volume.and_then(|v| v.device.clone()).unwrap_or_default(),
    }
}

/// Applies `page` to a sorted list: `page_token` is the last name of the previous page.
pub(crate) fn page<T>(
    items: Vec<T>,
    name: impl Fn(&T) -> &str,
    page: Option<&v1::PageRequest>,
) -> (Vec<T>, String) {
    let (size, after) = match page {
        Some(p) => (p.page_size as usize, p.page_token.as_str()),
        None => (0, ""),
    };
    let mut rest: Vec<T> = items
        .into_iter()
        .filter(|item| after.is_empty() || name(item) > after)
        .collect();
    if size == 0 || rest.len() <= size {
        return (rest, String::new());
    }
    rest.truncate(size);
    let token = rest
        .last()
        .map(|item| name(item).to_owned())
        .unwrap_or_default();
    (rest, token)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn exposure(id: &str, function: v1::emulation_function::Function) -> v1::ExposureSpec {
        v1::ExposureSpec {
            remote: Some(v1::RemoteControllerSpec {
                transport: v1::NvmeTransport::Rdma as i32,
                address_family: v1::AddressFamily::Ipv4 as i32,
                traddr: "10.0.0.2".into(),
                trsvcid: 4420,
                subnqn: format!("nqn.2026-01.io.example:{id}"),
                ..Default::default()
            }),
            remote_nsid: 1,
            subsystem_nqn: format!("nqn.2026-01.io.example:{id}-host"),
            function: Some(v1::EmulationFunction {
                function: Some(function),
            }),
            serial_number: "SN1".into(),
            ..Default::default()
        }
    }

    fn volume(id: &str) -> VolumeInfo {
        VolumeInfo {
            id: id.to_owned(),
            block_size: 512,
            num_blocks: 8,
            uuid: String::new(),
            device: None,
            identity: None,
            qos: None,
        }
    }

    /// A namespace on a controller placed by PCI address names that function (in `lspci
    /// -D` form) beside its identity, so the host can refuse a disk with the same identity
    /// reached any other way; one placed by PF index names the address SNAP listed for the
    /// function when the controller was created, and none before that is known.
    #[test]
    fn a_namespace_names_the_host_pci_function_of_its_controller_when_placed_by_address() {
        use v1::emulation_function::Function;
        let mut doc = Desired::default();
        let by_address = Function::PciAddress(v1::PciAddress {
            bdf: "3b:00.2".to_owned(),
        });
        doc.insert_exposure("e1", &exposure("e1", by_address));
        let by_index = Function::PfVf(v1::PfVf {
            pf_index: 0,
            vf_index: None,
        });
        doc.insert_exposure("e2", &exposure("e2", by_index));
        let placed = host_identities(&doc, &volume("e1n1"));
        assert_eq!(placed.len(), 1, "{placed:?}");
        assert_eq!(placed[0].host_pci_functions, ["0000:3b:00.2"]);
        assert!(placed[0].source.starts_with("namespace "), "{placed:?}");
        assert!(!placed[0].uuid.is_empty(), "{placed:?}");
        let unplaced = host_identities(&doc, &volume("e2n1"));
        assert_eq!(unplaced.len(), 1, "{unplaced:?}");
        assert!(unplaced[0].host_pci_functions.is_empty(), "{unplaced:?}");
        let (nqn, id) = doc
            .controllers_of("nqn.2026-01.io.example:e2-host")
            .map(|(id, _)| ("nqn.2026-01.io.example:e2-host".to_owned(), id.to_owned()))
            .next()
            .expect("e2's controller");
        doc.controller_mut(&nqn, &id).expect("controller").backend =
            Some(super::super::desired::BackendController {
                id: "NVMeCtrl2".to_owned(),
                cntlid: None,
                host_bdf: Some("3b:00.3".to_owned()),
            });
        let created = host_identities(&doc, &volume("e2n1"));
        assert_eq!(
            created[0].host_pci_functions,
            ["0000:3b:00.3"],
            "{created:?}"
        );
    }

    #[test]
    fn pages_continue_after_the_token_and_end_with_an_empty_one() {
        let items = vec!["a", "b", "c"];
        let req = v1::PageRequest {
            page_size: 2,
            page_token: String::new(),
        };
        let (first, token) = page(items.clone(), |s| s, Some(&req));
        assert_eq!((first, token.as_str()), (vec!["a", "b"], "b"));
        let req = v1::PageRequest {
            page_size: 2,
            page_token: token,
        };
        let (second, token) = page(items, |s| s, Some(&req));
        assert_eq!((second, token.as_str()), (vec!["c"], ""));
    }
}
