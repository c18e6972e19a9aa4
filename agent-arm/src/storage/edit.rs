//! The changes each Storage RPC makes to the desired document, with the rules that keep
//! it consistent (parents exist, nothing in use is removed, specs are immutable).
//!
//! An edit only touches the document; it returns the objects the backend must then look
//! at. Asking again for what already exists is not an error (the API is idempotent);
//! asking for something different under the same name is `ALREADY_EXISTS`.

use std::collections::BTreeSet;

use dpu_proto::v1;

use super::desired::{
    namespace_uuid, split_volume_id, ControllerDoc, Desired, Entry, Key, NamespaceDoc, QosDoc,
    SubsystemDoc,
};
use super::error::StorageError;

/// The objects a change touched; empty when it changed nothing.
pub(crate) type Touched = BTreeSet<Key>;

fn owned_elsewhere(doc: &Desired, key: &Key) -> Result<(), StorageError> {
    match doc.owner_of(key) {
        Some(exposure) => Err(StorageError::precondition(format!(
            "{key} belongs to exposures/{exposure}; change it through the exposure"
        ))),
        None => Ok(()),
    }
}

fn differs(key: &Key) -> StorageError {
    StorageError::already_exists(format!(
        "{key} already exists with a different spec; delete it first to change it"
    ))
}

/// What differs between two remote specs, field by field: "subnqn: X, asked Y".
fn remote_differences(have: &v1::RemoteControllerSpec, asked: &v1::RemoteControllerSpec) -> String {
    let fields: [(&str, String, String); 13] = [
        (
            "transport",
            have.transport.to_string(),
            asked.transport.to_string(),
        ),
        (
            "address_family",
            have.address_family.to_string(),
            asked.address_family.to_string(),
        ),
        ("traddr", have.traddr.clone(), asked.traddr.clone()),
        (
            "trsvcid",
            have.trsvcid.to_string(),
            asked.trsvcid.to_string(),
        ),
        ("subnqn", have.subnqn.clone(), asked.subnqn.clone()),
        ("hostnqn", have.hostnqn.clone(), asked.hostnqn.clone()),
        (
            "header_digest",
            have.header_digest.to_string(),
            asked.header_digest.to_string(),
        ),
        (
            "data_digest",
            have.data_digest.to_string(),
            asked.data_digest.to_string(),
        ),
        (
            "num_io_queues",
            have.num_io_queues.to_string(),
            asked.num_io_queues.to_string(),
        ),
        (
            "ctrl_loss_timeout_sec",
            have.ctrl_loss_timeout_sec.to_string(),
            asked.ctrl_loss_timeout_sec.to_string(),
        ),
        (
            "reconnect_delay_sec/fast_io_fail_timeout_sec",
            format!(
                "{}/{}",
                have.reconnect_delay_sec, have.fast_io_fail_timeout_sec
            ),
            format!(
                "{}/{}",
                asked.reconnect_delay_sec, asked.fast_io_fail_timeout_sec
            ),
        ),
        (
            "extra_paths",
            path_list(&have.extra_paths),
            path_list(&asked.extra_paths),
        ),
        (
            "multipath_policy",
            have.multipath_policy.to_string(),
            asked.multipath_policy.to_string(),
        ),
    ];
    let differing: Vec<String> = fields
        .iter()
        .filter(|(_, a, b)| a != b)
        .map(|(name, a, b)| format!("{name}: {a:?}, asked {b:?}"))
        .collect();
    if differing.is_empty() {
        "it differs in a field this agent does not name".to_owned()
    } else {
        differing.join("; ")
    }
}

/// `extra_paths` as `addr:port, ...` for a difference message.
fn path_list(paths: &[v1::NvmePathAddress]) -> String {
    let shown: Vec<String> = paths
        .iter()
        .map(|p| format!("{}:{}", p.traddr, p.trsvcid))
        .collect();
    shown.join(", ")
}

/// Whether two API functions are the same host function (`0000:03:00.2` is `03:00.2`).
fn same_function(a: &v1::EmulationFunction, b: &v1::EmulationFunction) -> bool {
    match (super::function::decode(a), super::function::decode(b)) {
        (Ok(a), Ok(b)) => a == b,
        _ => a == b,
    }
}

pub(crate) fn create_remote(
    doc: &mut Desired,
    id: &str,
    spec: &v1::RemoteControllerSpec,
) -> Result<Touched, StorageError> {
    let key = Key::Remote(id.to_owned());
    match doc.remote(id) {
        Some(existing) if existing == spec => {}
        Some(existing) => {
            return Err(StorageError::already_exists(format!(
                "{key} already exists with another spec ({}); delete it first to change it",
                remote_differences(existing, spec)
            )))
        }
        None => {
            doc.remotes.insert(id.to_owned(), Entry::new(spec.clone()));
        }
    }
    Ok(BTreeSet::from([key]))
}

pub(crate) fn delete_remote(doc: &mut Desired, id: &str) -> Result<Touched, StorageError> {
    let key = Key::Remote(id.to_owned());
    if doc.remote(id).is_none() {
        return Ok(BTreeSet::new());
    }
    owned_elsewhere(doc, &key)?;
    let users: Vec<String> = doc
        .namespaces
        .iter()
        .flat_map(|(nqn, m)| m.iter().map(move |(nsid, e)| (nqn, nsid, e)))
        .filter(|(_, _, e)| {
            e.live()
                .and_then(|ns| split_volume_id(&ns.volume))
                .is_some_and(|(remote, _)| remote == id)
        })
        .map(|(nqn, nsid, _)| Key::Namespace(nqn.clone(), *nsid).to_string())
        .collect();
    let virtio_users = super::virtio_blk::users_of_remote(doc, id);
    if !users.is_empty() || !virtio_users.is_empty() {
        let mut all = users;
        all.extend(virtio_users.iter().map(Key::to_string));
        return Err(StorageError::precondition(format!(
            "{key} backs {}; delete those first",
            all.join(", ")
        )));
    }
    let mut touched = BTreeSet::from([key.clone()]);
    touched.extend(drop_qos_of_remote(doc, id));
    doc.mark_deleting(&key);
    Ok(touched)
}

/// Marks the QoS limits of remote `id`'s volumes for removal, with the remote: its bdevs go
/// with it. Returns their keys.
fn drop_qos_of_remote(doc: &mut Desired, id: &str) -> Vec<Key> {
    let keys = doc.qos_keys_of_remote(id);
    for key in &keys {
        doc.mark_deleting(key);
    }
    keys
}

/// Sets the QoS limits of volume `volume` (already checked by SPDK's rules) to exactly
/// `limits`; all 0 clears them. The volume must belong to a live remote controller of the
/// document (the agent limits only what it attached). Asking for what is already asked
/// changes nothing in the document but has the backend checked again.
pub(crate) fn set_volume_qos(
    doc: &mut Desired,
    volume: &str,
    limits: QosDoc,
) -> Result<Touched, StorageError> {
    let remote = split_volume_id(volume).map(|(remote, _)| remote);
    if remote.is_none_or(|remote| doc.remote(remote).is_none()) {
        return Err(StorageError::not_found(format!(
            "volumes/{volume} is not a volume of a remote controller this agent attached \
             (volumes/{{remote_controller_id}}n{{nsid}})"
        )));
    }
    let key = Key::Qos(volume.to_owned());
    if limits.is_unlimited() {
        if !doc.qos.contains_key(volume) {
            return Ok(BTreeSet::new());
        }
        doc.mark_deleting(&key);
    } else if doc.qos_of(volume) != Some(&limits) {
        doc.qos.insert(volume.to_owned(), Entry::new(limits));
    }
    Ok(BTreeSet::from([key]))
}

pub(crate) fn create_subsystem(
    doc: &mut Desired,
    nqn: &str,
    sub: SubsystemDoc,
) -> Result<Touched, StorageError> {
    let key = Key::Subsystem(nqn.to_owned());
    match doc.subsystem(nqn) {
        Some(existing) if *existing == sub => {}
        Some(_) => return Err(differs(&key)),
        None => {
            doc.subsystems.insert(nqn.to_owned(), Entry::new(sub));
        }
    }
    Ok(BTreeSet::from([key]))
}

pub(crate) fn delete_subsystem(doc: &mut Desired, nqn: &str) -> Result<Touched, StorageError> {
    let key = Key::Subsystem(nqn.to_owned());
    if doc.subsystem(nqn).is_none() {
        return Ok(BTreeSet::new());
    }
    owned_elsewhere(doc, &key)?;
    let children: Vec<String> = doc
        .namespaces_of(nqn)
        .map(|(nsid, _)| Key::Namespace(nqn.to_owned(), nsid).to_string())
        .chain(
            doc.controllers_of(nqn)
                .map(|(id, _)| Key::Controller(nqn.to_owned(), id.clone()).to_string()),
        )
        .collect();
    if !children.is_empty() {
        return Err(StorageError::precondition(format!(
            "{key} still has {}; delete them first",
            children.join(", ")
        )));
    }
    doc.mark_deleting(&key);
    Ok(BTreeSet::from([key]))
}

/// `volume_known`: whether the backend has the volume when no remote controller in the
/// document provides it (a bdev made outside the agent).
pub(crate) fn create_namespace(
    doc: &mut Desired,
    nqn: &str,
    nsid: u32,
    mut ns: NamespaceDoc,
    volume_known: bool,
) -> Result<Touched, StorageError> {
    let key = Key::Namespace(nqn.to_owned(), nsid);
    if ns.uuid.is_empty() {
        ns.uuid = namespace_uuid(nqn, nsid, &ns.volume);
    }
    if doc.subsystem(nqn).is_none() {
        return Err(StorageError::not_found(format!(
            "parent subsystems/{nqn} does not exist"
        )));
    }
    match doc.namespace(nqn, nsid) {
        Some(existing) if *existing == ns => return Ok(BTreeSet::from([key])),
        Some(_) => return Err(differs(&key)),
        None => {}
    }
    let from_remote =
        split_volume_id(&ns.volume).is_some_and(|(remote, _)| doc.remote(remote).is_some());
    if !from_remote && !volume_known {
        return Err(StorageError::precondition(format!(
            "volumes/{} does not exist: attach its remote controller first",
            ns.volume
        )));
    }
    if let Some(user) = doc.users_of_volume(&ns.volume).first() {
        return Err(StorageError::precondition(format!(
            "volumes/{} already backs {user}; a volume backs one namespace or virtio-blk \
             controller",
            ns.volume
        )));
    }
    doc.namespaces
        .entry(nqn.to_owned())
        .or_default()
        .insert(nsid, Entry::new(ns));
    Ok(BTreeSet::from([key]))
}

pub(crate) fn delete_namespace(
    doc: &mut Desired,
    nqn: &str,
    nsid: u32,
) -> Result<Touched, StorageError> {
    let key = Key::Namespace(nqn.to_owned(), nsid);
    if doc.namespace(nqn, nsid).is_none() {
        return Ok(BTreeSet::new());
    }
    owned_elsewhere(doc, &key)?;
    if let Some((id, _)) = doc
        .controllers_of(nqn)
        .find(|(_, c)| c.attached.contains(&nsid))
    {
        return Err(StorageError::precondition(format!(
            "{key} is attached to {}; detach it first",
            Key::Controller(nqn.to_owned(), id.clone())
        )));
    }
    doc.mark_deleting(&key);
    Ok(BTreeSet::from([key]))
}

pub(crate) fn create_controller(
    doc: &mut Desired,
    nqn: &str,
    id: &str,
    ctrl: ControllerDoc,
) -> Result<Touched, StorageError> {
    let key = Key::Controller(nqn.to_owned(), id.to_owned());
    if doc.subsystem(nqn).is_none() {
        return Err(StorageError::not_found(format!(
            "parent subsystems/{nqn} does not exist"
        )));
    }
    match doc.controller(nqn, id) {
        Some(existing) if existing.same_request(&ctrl) => return Ok(BTreeSet::from([key])),
        Some(_) => return Err(differs(&key)),
        None => {}
    }
    let clash = doc.controllers.iter().find_map(|(other_nqn, m)| {
        m.iter().find_map(|(other_id, e)| {
            e.live()
                .filter(|c| same_function(&c.function, &ctrl.function))
                .map(|_| Key::Controller(other_nqn.clone(), other_id.clone()))
        })
    });
    if let Some(other) = clash {
        return Err(StorageError::already_exists(format!(
            "{other} already emulates that function; one controller per function"
        )));
    }
    super::virtio_blk::refuse_nvme_on_taken_function(doc, &key, &ctrl.function)?;
    doc.controllers
        .entry(nqn.to_owned())
        .or_default()
        .insert(id.to_owned(), Entry::new(ctrl));
    Ok(BTreeSet::from([key]))
}

pub(crate) fn delete_controller(
    doc: &mut Desired,
    nqn: &str,
    id: &str,
    force: bool,
) -> Result<Touched, StorageError> {
    let key = Key::Controller(nqn.to_owned(), id.to_owned());
    let Some(ctrl) = doc.controller(nqn, id) else {
        return Ok(BTreeSet::new());
    };
    owned_elsewhere(doc, &key)?;
    if ctrl.running && !force {
        return Err(StorageError::precondition(format!(
            "{key} is running, so the host may be using it: suspend it first, or pass force"
        )));
    }
    doc.mark_deleting(&key);
    Ok(BTreeSet::from([key]))
}

fn live_controller<'a>(
    doc: &'a mut Desired,
    nqn: &str,
    id: &str,
) -> Result<&'a mut ControllerDoc, StorageError> {
    let key = Key::Controller(nqn.to_owned(), id.to_owned());
    doc.controller_mut(nqn, id)
        .ok_or_else(|| StorageError::not_found(format!("{key} does not exist")))
}

pub(crate) fn attach(
    doc: &mut Desired,
    nqn: &str,
    id: &str,
    nsid: u32,
) -> Result<Touched, StorageError> {
    let key = Key::Controller(nqn.to_owned(), id.to_owned());
    let ns_key = Key::Namespace(nqn.to_owned(), nsid);
    if doc.namespace(nqn, nsid).is_none() {
        return Err(StorageError::not_found(format!("{ns_key} does not exist")));
    }
    if let Some((other, _)) = doc
        .controllers_of(nqn)
        .find(|(other, c)| *other != id && c.attached.contains(&nsid))
    {
        return Err(StorageError::precondition(format!(
            "{ns_key} is attached to {}; SNAP attaches a namespace to one controller",
            Key::Controller(nqn.to_owned(), other.clone())
        )));
    }
    owned_elsewhere(doc, &key)?;
    let ctrl = live_controller(doc, nqn, id)?;
    ctrl.detaching.remove(&nsid);
    ctrl.attached.insert(nsid);
    Ok(BTreeSet::from([key]))
}

pub(crate) fn detach(
    doc: &mut Desired,
    nqn: &str,
    id: &str,
    nsid: u32,
) -> Result<Touched, StorageError> {
    let key = Key::Controller(nqn.to_owned(), id.to_owned());
    owned_elsewhere(doc, &key)?;
    let ctrl = live_controller(doc, nqn, id)?;
    if ctrl.attached.remove(&nsid) {
        ctrl.detaching.insert(nsid);
    }
    Ok(BTreeSet::from([key]))
}

pub(crate) fn set_running(
    doc: &mut Desired,
    nqn: &str,
    id: &str,
    running: bool,
) -> Result<Touched, StorageError> {
    let key = Key::Controller(nqn.to_owned(), id.to_owned());
    live_controller(doc, nqn, id)?.running = running;
    Ok(BTreeSet::from([key]))
}

pub(crate) fn apply_exposure(
    doc: &mut Desired,
    id: &str,
    spec: &v1::ExposureSpec,
) -> Result<Touched, StorageError> {
    let plan = doc.plan(id, spec);
    let touched: Touched = plan.keys().into_iter().collect();
    if let Some(existing) = doc.exposures.get(id) {
        if existing == spec {
            // Same spec again: nothing changes in the document, but the backend is
            // checked, which repairs an exposure a SNAP restart lost.
            return Ok(touched);
        }
        return Err(StorageError::already_exists(format!(
            "exposures/{id} already exists with a different spec; delete it first to change it"
        )));
    }
    for key in &touched {
        if doc.is_live(key) || doc.is_deleting(key) {
            return Err(StorageError::already_exists(format!(
                "{key} already exists; an exposure creates its own remote controller, \
                 subsystem, namespace and controller (choose another exposure id or subsystem NQN)"
            )));
        }
    }
    let clash = plan.controller.as_ref().and_then(|(_, wanted)| {
        doc.controllers.iter().find_map(|(nqn, m)| {
            m.iter().find_map(|(cid, e)| {
                e.live()
                    .filter(|c| same_function(&c.function, &wanted.function))
                    .map(|_| Key::Controller(nqn.clone(), cid.clone()))
            })
        })
    });
    if let Some(other) = clash {
        return Err(StorageError::already_exists(format!(
            "{other} already emulates that function; one controller per function"
        )));
    }
    if let Some((ctrl_id, wanted)) = &plan.controller {
        let key = Key::Controller(plan.nqn.clone(), ctrl_id.clone());
        super::virtio_blk::refuse_nvme_on_taken_function(doc, &key, &wanted.function)?;
    }
    doc.insert_exposure(id, spec);
    Ok(touched)
}

pub(crate) fn delete_exposure(doc: &mut Desired, id: &str) -> Result<Touched, StorageError> {
    let Some(spec) = doc.exposures.remove(id) else {
        return Ok(BTreeSet::new());
    };
    let plan = doc.plan(id, &spec);
    let mut touched: Touched = plan.keys().into_iter().collect();
    for key in &touched {
        doc.mark_deleting(key);
    }
    touched.extend(drop_qos_of_remote(doc, &plan.remote_id));
    Ok(touched)
}

#[cfg(test)]
mod tests {
    use super::*;

    const NQN: &str = "nqn.2026-01.io.example:host";

    fn doc_with_subsystem() -> Desired {
        let mut doc = Desired::default();
        create_subsystem(&mut doc, NQN, SubsystemDoc::default()).expect("subsystem");
        doc
    }

    fn pf(index: u32) -> v1::EmulationFunction {
        v1::EmulationFunction {
            function: Some(v1::emulation_function::Function::PfVf(v1::PfVf {
                pf_index: index,
                vf_index: None,
            })),
        }
    }

    #[test]
    fn the_same_create_twice_is_accepted_and_a_different_one_refused() {
        let mut doc = doc_with_subsystem();
        let again = create_subsystem(&mut doc, NQN, SubsystemDoc::default()).expect("same");
        assert_eq!(again.len(), 1);
        let other = SubsystemDoc {
            serial_number: "X".into(),
            ..SubsystemDoc::default()
        };
        let err = create_subsystem(&mut doc, NQN, other).expect_err("different");
        assert!(matches!(err, StorageError::AlreadyExists(_)), "{err}");
    }

    #[test]
    fn nothing_in_use_can_be_deleted() {
        let mut doc = doc_with_subsystem();
        let ns = NamespaceDoc {
            volume: "Malloc0".into(),
            ..NamespaceDoc::default()
        };
        create_namespace(&mut doc, NQN, 1, ns, true).expect("namespace");
        let ctrl = ControllerDoc {
            function: pf(0),
            ..ControllerDoc::default()
        };
        create_controller(&mut doc, NQN, "c0", ctrl).expect("controller");
        attach(&mut doc, NQN, "c0", 1).expect("attach");

        let err = delete_subsystem(&mut doc, NQN).expect_err("has children");
        assert!(matches!(err, StorageError::FailedPrecondition(_)), "{err}");
        assert!(
            err.to_string().contains("namespaces/1"),
            "{}",
            err.to_string()
        );
        let err = delete_namespace(&mut doc, NQN, 1).expect_err("attached");
        assert!(
            err.to_string().contains("controllers/c0"),
            "{}",
            err.to_string()
        );
        set_running(&mut doc, NQN, "c0", true).expect("resume");
        let err = delete_controller(&mut doc, NQN, "c0", false).expect_err("running");
        assert!(err.to_string().contains("suspend"), "{}", err.to_string());
        assert!(delete_controller(&mut doc, NQN, "c0", true).is_ok());
    }

    #[test]
    fn namespaces_need_a_parent_and_an_existing_unshared_volume() {
        let mut doc = Desired::default();
        let ns = || NamespaceDoc {
            volume: "r0n1".into(),
            ..NamespaceDoc::default()
        };
        let err = create_namespace(&mut doc, NQN, 1, ns(), false).expect_err("no parent");
        assert!(matches!(err, StorageError::NotFound(_)), "{err}");
        create_subsystem(&mut doc, NQN, SubsystemDoc::default()).expect("subsystem");
        let err = create_namespace(&mut doc, NQN, 1, ns(), false).expect_err("no volume");
        assert!(
            err.to_string().contains("volumes/r0n1"),
            "{}",
            err.to_string()
        );
        create_remote(&mut doc, "r0", &v1::RemoteControllerSpec::default()).expect("remote");
        create_namespace(&mut doc, NQN, 1, ns(), false).expect("volume from remote");
        let err = create_namespace(&mut doc, NQN, 2, ns(), false).expect_err("shared");
        assert!(
            err.to_string().contains("already backs"),
            "{}",
            err.to_string()
        );
        let err = delete_remote(&mut doc, "r0").expect_err("in use");
        assert!(
            err.to_string().contains("namespaces/1"),
            "{}",
            err.to_string()
        );
    }

    #[test]
    fn exposure_objects_are_changed_only_through_the_exposure() {
        let mut doc = Desired::default();
        let spec = v1::ExposureSpec {
            subsystem_nqn: NQN.into(),
            function: Some(pf(0)),
            ..v1::ExposureSpec::default()
        };
        assert_eq!(
            apply_exposure(&mut doc, "e1", &spec).expect("apply").len(),
            4
        );
        assert_eq!(
            apply_exposure(&mut doc, "e1", &spec).expect("again").len(),
            4
        );
        let err = delete_controller(&mut doc, NQN, "e1", true).expect_err("owned");
        assert!(
            err.to_string().contains("exposures/e1"),
            "{}",
            err.to_string()
        );
        let err = apply_exposure(&mut doc, "e2", &spec).expect_err("same subsystem");
        assert!(matches!(err, StorageError::AlreadyExists(_)), "{err}");
        let touched = delete_exposure(&mut doc, "e1").expect("delete");
        assert!(touched.iter().all(|k| doc.is_deleting(k)));
    }

    fn remote_spec() -> v1::RemoteControllerSpec {
        v1::RemoteControllerSpec {
            transport: v1::NvmeTransport::Tcp as i32,
            address_family: v1::AddressFamily::Ipv4 as i32,
            traddr: "127.0.0.1".into(),
            trsvcid: 4420,
            subnqn: "nqn.2026-01.io.example:remote".into(),
            ..Default::default()
        }
    }

    /// A single-path remote asked again with a second path (or the reverse) is a
    /// different remote: refused, naming the field, the stored spec unchanged.
    #[test]
    fn a_second_path_on_an_attached_remote_is_refused_naming_the_field() {
        let mut doc = Desired::default();
        create_remote(&mut doc, "r0", &remote_spec()).expect("remote");
        let mut two_paths = remote_spec();
        two_paths.extra_paths = vec![v1::NvmePathAddress {
            traddr: "127.0.0.1".into(),
            trsvcid: 4421,
        }];
        let err = create_remote(&mut doc, "r0", &two_paths).expect_err("conflict");
        let text = err.to_string();
        assert!(
            text.contains("extra_paths: \"\", asked \"127.0.0.1:4421\""),
            "{text}"
        );
        assert_eq!(doc.remote("r0"), Some(&remote_spec()));
        two_paths.multipath_policy = v1::MultipathPolicy::ActiveActive as i32;
        let mut doc = Desired::default();
        create_remote(&mut doc, "r1", &two_paths).expect("two paths");
        let mut passive = two_paths.clone();
        passive.multipath_policy = v1::MultipathPolicy::ActivePassive as i32;
        let err = create_remote(&mut doc, "r1", &passive).expect_err("other policy");
        assert!(err.to_string().contains("multipath_policy"), "{err}");
    }

    #[test]
    fn qos_is_set_on_volumes_of_known_remotes_replaced_whole_and_cleared() {
        let mut doc = Desired::default();
        create_remote(&mut doc, "r0", &remote_spec()).expect("remote");
        let limits = QosDoc {
            rw_ios_per_sec: 2000,
            ..QosDoc::default()
        };
        for unknown in ["r1n1", "Malloc0", "r0"] {
            let err = set_volume_qos(&mut doc, unknown, limits).expect_err(unknown);
            assert!(
                matches!(&err, StorageError::NotFound(t) if t.contains(&format!("volumes/{unknown} "))),
                "{err}"
            );
        }
        let touched = set_volume_qos(&mut doc, "r0n1", limits).expect("set");
        assert_eq!(touched, BTreeSet::from([Key::Qos("r0n1".into())]));
        assert_eq!(doc.qos_of("r0n1"), Some(&limits));
        // The same again: the document is unchanged, the backend checked again.
        let before = doc.clone();
        assert_eq!(
            set_volume_qos(&mut doc, "r0n1", limits)
                .expect("again")
                .len(),
            1
        );
        assert_eq!(doc, before);
        // A new set replaces the whole: the IOPS limit is not kept beside the read limit.
        let read_only = QosDoc {
            r_mbytes_per_sec: 10,
            ..QosDoc::default()
        };
        set_volume_qos(&mut doc, "r0n1", read_only).expect("replace");
        assert_eq!(doc.qos_of("r0n1"), Some(&read_only));
        // Cleared: marked until the backend confirms, and then forgotten.
        set_volume_qos(&mut doc, "r0n1", QosDoc::default()).expect("clear");
        assert!(doc.qos_of("r0n1").is_none());
        assert!(doc.is_deleting(&Key::Qos("r0n1".into())));
        doc.prune(&BTreeSet::from([Key::Qos("r0n1".into())]));
        assert!(doc.qos.is_empty());
        // Clearing what is not set touches nothing.
        assert!(set_volume_qos(&mut doc, "r0n1", QosDoc::default())
            .expect("clear none")
            .is_empty());
    }

    #[test]
    fn deleting_a_remote_lifts_its_volumes_qos_first() {
        let mut doc = Desired::default();
        create_remote(&mut doc, "r0", &remote_spec()).expect("r0");
        create_remote(&mut doc, "r00", &remote_spec()).expect("r00");
        let limits = QosDoc {
            w_mbytes_per_sec: 5,
            ..QosDoc::default()
        };
        set_volume_qos(&mut doc, "r0n1", limits).expect("r0n1");
        set_volume_qos(&mut doc, "r00n1", limits).expect("r00n1");
        let touched = delete_remote(&mut doc, "r0").expect("delete");
        assert!(touched.contains(&Key::Qos("r0n1".into())), "{touched:?}");
        assert!(doc.is_deleting(&Key::Qos("r0n1".into())));
        assert_eq!(doc.qos_of("r00n1"), Some(&limits));
        // Removals run children first: the limit is lifted before the bdev is detached.
        let keys = doc.keys();
        let at = |k: &Key| keys.iter().position(|x| x == k).expect("key");
        assert!(at(&Key::Remote("r0".into())) < at(&Key::Qos("r0n1".into())));
    }
}
