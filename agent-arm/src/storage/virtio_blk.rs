//! virtio-blk controllers in the declarative model: the rules a change must keep, the
//! converge steps that make SNAP match the document, and the API view.
//!
//! A virtio-blk controller is one object: a host-visible function, one volume, queue
//! settings and a serial. It is saved before it is applied and converged like the NVMe
//! objects (created after a SNAP restart; "already exists"/"not found" count as done), and
//! a failed create is rolled back: on SNAP 4 the agent names the controller itself (`ctrl`),
//! so one whose create reply was lost is found by that name and removed. mlnx_snap 3 names
//! its own controllers and its `controller_list` does not show their bdev, so there a
//! controller whose reply was lost cannot be told apart and is left to the operator.
//!
//! Rules, checked on the document before anything is sent: the volume exists and backs
//! nothing else (no namespace, no other virtio-blk controller); one controller per function.
//! SNAP lists NVMe and virtio-blk functions apart, each kind with its own PF/VF indexes
//! (`emulation_function_list`'s `emulation_type`), so a PF/VF index clashes only within its
//! kind, while a PCI address or a VUID names one host function whatever the kind.

use std::collections::BTreeSet;

use dpu_nvmeof::snap::{EmulatedFunction, VirtioBlkSeen};
use dpu_proto::v1;

use super::backend::BackendError;
use super::desired::{split_volume_id, Desired, Entry, Key};
use super::dispatch::Backend;
use super::error::StorageError;
use super::virtio_blk_doc::{VirtioBlkBackend, VirtioBlkDoc};

/// The SNAP 4 name (`ctrl`) of virtio-blk controller `id`: the same every time, so a
/// controller created just before a crash or a lost reply is found again. `_vblk` is not
/// hex, so it never equals an NVMe controller's `{id}_{hash}`.
pub(crate) fn snap_name(id: &str) -> String {
    format!("{id}_vblk")
}

/// Whether `a` and `b` are one host function, given whether both controllers are of the
/// same kind: a PCI address or VUID names one function of any kind; a PF/VF index only
/// within its kind.
fn same_host_function(
    a: &v1::EmulationFunction,
    b: &v1::EmulationFunction,
    same_kind: bool,
) -> bool {
    match (super::function::decode(a), super::function::decode(b)) {
        (Ok(x @ (EmulatedFunction::PciBdf(_) | EmulatedFunction::Vuid(_))), Ok(y)) => x == y,
        (Ok(x), Ok(y)) => same_kind && x == y,
        _ => same_kind && a == b,
    }
}

/// The live virtio-blk controller, other than `except`, on `function`.
fn virtio_blk_on(doc: &Desired, function: &v1::EmulationFunction, except: &str) -> Option<Key> {
    doc.virtio_blk
        .iter()
        .filter(|(id, _)| id.as_str() != except)
        .find(|(_, e)| {
            e.live()
                .is_some_and(|v| same_host_function(&v.function, function, true))
        })
        .map(|(id, _)| Key::VirtioBlk(id.clone()))
}

/// The live NVMe controller on the host function `function` of a virtio-blk controller.
fn nvme_on(doc: &Desired, function: &v1::EmulationFunction) -> Option<Key> {
    doc.controllers.iter().find_map(|(nqn, m)| {
        m.iter().find_map(|(id, e)| {
            e.live()
                .filter(|c| same_host_function(&c.function, function, false))
                .map(|_| Key::Controller(nqn.clone(), id.clone()))
        })
    })
}

/// For an NVMe controller about to be created on `function` (`key`): the refusal when a
/// virtio-blk controller already emulates that host function.
pub(crate) fn refuse_nvme_on_taken_function(
    doc: &Desired,
    key: &Key,
    function: &v1::EmulationFunction,
) -> Result<(), StorageError> {
    let clash = doc.virtio_blk.iter().find(|(_, e)| {
        e.live()
            .is_some_and(|v| same_host_function(&v.function, function, false))
    });
    match clash {
        Some((id, _)) => Err(StorageError::already_exists(format!(
            "{key}: {} already emulates that function; one controller per function",
            Key::VirtioBlk(id.clone())
        ))),
        None => Ok(()),
    }
}

/// The live virtio-blk controllers backed by a volume of remote controller `remote_id`.
pub(crate) fn users_of_remote(doc: &Desired, remote_id: &str) -> Vec<Key> {
    doc.virtio_blk
        .iter()
        .filter(|(_, e)| {
            e.live()
                .and_then(|v| split_volume_id(&v.volume))
                .is_some_and(|(remote, _)| remote == remote_id)
        })
        .map(|(id, _)| Key::VirtioBlk(id.clone()))
        .collect()
}

/// Adds virtio-blk controller `id`; the same request again changes nothing, another one
/// under that id is `ALREADY_EXISTS` naming the fields. `volume_known`: whether the
/// backend has the volume when no remote controller in the document provides it.
pub(crate) fn create(
    doc: &mut Desired,
    id: &str,
    wanted: VirtioBlkDoc,
    volume_known: bool,
) -> Result<BTreeSet<Key>, StorageError> {
    let key = Key::VirtioBlk(id.to_owned());
    if let Some(existing) = doc.virtio_blk_of(id) {
        let differ = existing.differences(&wanted);
        if differ.is_empty() {
            return Ok(BTreeSet::from([key]));
        }
        return Err(StorageError::already_exists(format!(
            "{key} already exists with another {}; delete it first to change it",
            differ.join(", ")
        )));
    }
    if doc.is_deleting(&key) {
        return Err(StorageError::precondition(format!(
            "{key} is still being deleted; create it again once it is gone"
        )));
    }
    let from_remote =
        split_volume_id(&wanted.volume).is_some_and(|(remote, _)| doc.remote(remote).is_some());
    if !from_remote && !volume_known {
        return Err(StorageError::precondition(format!(
            "volumes/{} does not exist: attach its remote controller first",
            wanted.volume
        )));
    }
    if let Some(user) = doc.users_of_volume(&wanted.volume).first() {
        return Err(StorageError::precondition(format!(
            "volumes/{} already backs {user}; a volume backs one namespace or virtio-blk \
             controller",
            wanted.volume
        )));
    }
    if let Some(other) =
        nvme_on(doc, &wanted.function).or_else(|| virtio_blk_on(doc, &wanted.function, id))
    {
        return Err(StorageError::already_exists(format!(
            "{key}: {other} already emulates that function; one controller per function"
        )));
    }
    doc.virtio_blk.insert(id.to_owned(), Entry::new(wanted));
    Ok(BTreeSet::from([key]))
}

/// Marks virtio-blk controller `id` for removal; nothing when it is not there.
pub(crate) fn delete(doc: &mut Desired, id: &str) -> BTreeSet<Key> {
    let key = Key::VirtioBlk(id.to_owned());
    if doc.virtio_blk_of(id).is_none() {
        return BTreeSet::new();
    }
    doc.mark_deleting(&key);
    BTreeSet::from([key])
}

/// Makes virtio-blk controller `id` exist: the one the document recorded, else (SNAP 4)
/// the one of the agent's name, else a new one, recorded in the document.
pub(crate) async fn ensure(
    doc: &mut Desired,
    backend: &Backend,
    id: &str,
) -> Result<(), BackendError> {
    let Some(want) = doc.virtio_blk_of(id).cloned() else {
        return Ok(());
    };
    let seen = backend.virtio_blk_list().await?;
    if let Some(recorded) = &want.backend {
        if seen.iter().any(|s| s.name == recorded.id) {
            return Ok(());
        }
    }
    let adopted = match backend.virtio_blk_name(id).await? {
        Some(name) if seen.iter().any(|s| s.name == name) => {
            tracing::info!(controller = id, backend_id = %name, "adopting a virtio-blk controller this agent created before it could record it");
            Some(VirtioBlkBackend {
                id: name,
                host_bdf: None,
            })
        }
        _ => None,
    };
    let made = match adopted {
        Some(found) => found,
        None => backend.create_virtio_blk(id, &want).await?,
    };
    if let Some(entry) = doc.virtio_blk.get_mut(id) {
        entry.spec.backend = Some(made);
    }
    Ok(())
}

/// Removes virtio-blk controller `id` by the name the document recorded or, when the create
/// reply was lost, by the name the agent gave it (SNAP 4); gone counts as done.
pub(crate) async fn remove(doc: &Desired, backend: &Backend, id: &str) -> Result<(), BackendError> {
    let recorded = doc
        .virtio_blk
        .get(id)
        .and_then(|e| e.spec.backend.as_ref())
        .map(|b| b.id.clone());
    let name = match recorded {
        Some(name) => Some(name),
        None => backend.virtio_blk_name(id).await?,
    };
    match name {
        Some(name) => backend.remove_virtio_blk(&name).await,
        None => Ok(()),
    }
}

/// The API object: what was asked, with SNAP's view (`seen`; `None` when SNAP did not
/// answer, and the state is then unknown, never the desired one passed off as observed).
pub(crate) fn view(
    id: &str,
    doc: &VirtioBlkDoc,
    seen: Option<&[VirtioBlkSeen]>,
) -> v1::VirtioBlkController {
    let state = match seen {
        None => v1::ControllerState::Unspecified,
        Some(list) => {
            let found = doc
                .backend
                .as_ref()
                .and_then(|b| list.iter().find(|s| s.name == b.id));
            match found.map(|s| s.suspended) {
                None => v1::ControllerState::Failed,
                Some(Some(true)) => v1::ControllerState::Suspended,
                Some(Some(false)) => v1::ControllerState::Running,
                Some(None) => v1::ControllerState::Unspecified,
            }
        }
    };
    let host_pci_address = match &doc.function.function {
        Some(v1::emulation_function::Function::PciAddress(pci)) => Some(pci.clone()),
        _ => doc
            .backend
            .as_ref()
            .and_then(|b| b.host_bdf.as_ref())
            .map(|bdf| v1::PciAddress {
                bdf: format!("0000:{bdf}"),
            }),
    };
    v1::VirtioBlkController {
        name: Key::VirtioBlk(id.to_owned()).to_string(),
        function: Some(doc.function.clone()),
        volume: format!("volumes/{}", doc.volume),
        num_queues: doc.num_queues,
        queue_size: doc.queue_size,
        serial: doc.serial.clone(),
        state: state as i32,
        backend_id: doc
            .backend
            .as_ref()
            .map(|b| b.id.clone())
            .unwrap_or_default(),
        host_pci_address,
    }
}

#[cfg(test)]
mod tests;
