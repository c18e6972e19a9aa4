//! The desired storage state: what the operator asked for, as one document.
//!
//! The document is the agent's only memory of storage. It is written (atomically, see
//! [`super::store`]) *before* a change is carried out, so an agent killed half-way
//! finishes the change after a restart instead of forgetting it. Objects being removed
//! stay in the document, marked `deleting`, until the backend confirms they are gone.
//!
//! Proto messages are stored as proto3 JSON, so the file reads like the API and a field
//! added to the API later reads back as its default.

use std::collections::{BTreeMap, BTreeSet};

use dpu_proto::v1;
use serde::{Deserialize, Serialize};

use super::virtio_blk_doc::VirtioBlkDoc;

/// The remote controllers of the document by id (deleting ones included: removing one
/// needs its spec to find it in the kernel backend).
pub(crate) type Remotes = BTreeMap<String, Entry<v1::RemoteControllerSpec>>;

/// Version of the document's layout; a newer file than the agent understands is refused.
pub(crate) const DOC_VERSION: u32 = 1;

/// One object of the document and whether it is on its way out.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct Entry<T> {
    pub(crate) spec: T,
    /// Removal was asked for and is not confirmed yet.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub(crate) deleting: bool,
}

impl<T> Entry<T> {
    pub(crate) fn new(spec: T) -> Self {
        Self {
            spec,
            deleting: false,
        }
    }

    pub(crate) fn live(&self) -> Option<&T> {
        (!self.deleting).then_some(&self.spec)
    }
}

/// An emulated subsystem as asked for (the output-only fields of [`v1::Subsystem`] are
/// never stored).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub(crate) struct SubsystemDoc {
    #[serde(default)]
    pub(crate) serial_number: String,
    #[serde(default)]
    pub(crate) model_number: String,
    #[serde(default)]
    pub(crate) max_namespaces: u32,
}

/// A namespace of an emulated subsystem, backed by a volume.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub(crate) struct NamespaceDoc {
    /// The backing volume's id (the bdev or kernel volume name, without `volumes/`).
    pub(crate) volume: String,
    #[serde(default)]
    pub(crate) uuid: String,
    #[serde(default)]
    pub(crate) nguid: String,
    #[serde(default)]
    pub(crate) eui64: String,
}

/// The backend's own handle on an emulated controller, learnt when it was created.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct BackendController {
    /// SNAP 4 `ctrl_id` or SNAP 3 controller name.
    pub(crate) id: String,
    /// SNAP 3 `cntlid`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) cntlid: Option<u16>,
    /// The host PCI address (`bb:dd.f`) of the function SNAP 4 created it on, as
    /// `emulation_function_list` gave it at creation: for a controller placed by PF/VF
    /// index or VUID the only place its path is known, so `prove storage` can bind a disk
    /// to it (issue 31). None where SNAP did not say (SNAP 3, an adopted controller, DPF's
    /// not-enumerated `00:00.0`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) host_bdf: Option<String>,
}

/// An emulated controller as asked for.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub(crate) struct ControllerDoc {
    pub(crate) function: v1::EmulationFunction,
    #[serde(default)]
    pub(crate) num_queues: u32,
    #[serde(default)]
    pub(crate) mdts: u32,
    /// Namespaces the host should see through it.
    #[serde(default)]
    pub(crate) attached: BTreeSet<u32>,
    /// Namespaces to detach, until the backend confirms.
    #[serde(default, skip_serializing_if = "BTreeSet::is_empty")]
    pub(crate) detaching: BTreeSet<u32>,
    /// Resumed (the host may use it) rather than suspended.
    #[serde(default)]
    pub(crate) running: bool,
    /// Namespaces the backend confirmed attached to `backend` (cleared when the controller
    /// is re-created), so a running controller is not suspended for nothing.
    #[serde(default, skip_serializing_if = "BTreeSet::is_empty")]
    pub(crate) confirmed: BTreeSet<u32>,
    /// Filled in once the backend created it; not part of what the operator asked for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) backend: Option<BackendController>,
}

impl ControllerDoc {
    /// The same controller as asked for, ignoring what only the backend decided.
    pub(crate) fn same_request(&self, other: &Self) -> bool {
        self.function == other.function
            && self.num_queues == other.num_queues
            && self.mdts == other.mdts
    }
}

/// The QoS rate limits of one volume as asked for (SPDK's `bdev_set_qos_limit` keys and
/// units, docs/reference/storage.md §7); 0 is unlimited, and an entry with every limit 0
/// is never stored (clearing removes the entry).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub(crate) struct QosDoc {
    #[serde(default)]
    pub(crate) rw_ios_per_sec: u64,
    #[serde(default)]
    pub(crate) rw_mbytes_per_sec: u64,
    #[serde(default)]
    pub(crate) r_mbytes_per_sec: u64,
    #[serde(default)]
    pub(crate) w_mbytes_per_sec: u64,
}

impl QosDoc {
    /// Whether nothing is limited.
    pub(crate) fn is_unlimited(&self) -> bool {
        *self == Self::default()
    }
}

/// Identifies one object of the document, in the order the objects depend on each other
/// (a volume's QoS needs its remote controller's bdev).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) enum Key {
    Remote(String),
    /// The QoS limits of a volume, by volume id (`{remote}n{nsid}`).
    Qos(String),
    Subsystem(String),
    Namespace(String, u32),
    Controller(String, String),
    /// A virtio-blk controller by id (after the remote controllers whose volumes back them).
    VirtioBlk(String),
}

impl std::fmt::Display for Key {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Remote(id) => write!(f, "remoteControllers/{id}"),
            Self::Qos(volume) => write!(f, "volumes/{volume} QoS"),
            Self::Subsystem(nqn) => write!(f, "subsystems/{nqn}"),
            Self::Namespace(nqn, nsid) => write!(f, "subsystems/{nqn}/namespaces/{nsid}"),
            Self::Controller(nqn, id) => write!(f, "subsystems/{nqn}/controllers/{id}"),
            Self::VirtioBlk(id) => write!(f, "virtioBlkControllers/{id}"),
        }
    }
}

/// The whole desired state.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct Desired {
    pub(crate) version: u32,
    #[serde(default)]
    pub(crate) remotes: Remotes,
    /// QoS limits by volume id; each volume belongs to a remote controller of `remotes`.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub(crate) qos: BTreeMap<String, Entry<QosDoc>>,
    #[serde(default)]
    pub(crate) subsystems: BTreeMap<String, Entry<SubsystemDoc>>,
    /// By subsystem NQN, then nsid.
    #[serde(default)]
    pub(crate) namespaces: BTreeMap<String, BTreeMap<u32, Entry<NamespaceDoc>>>,
    /// By subsystem NQN, then controller id.
    #[serde(default)]
    pub(crate) controllers: BTreeMap<String, BTreeMap<String, Entry<ControllerDoc>>>,
    /// Exposures and the objects they own (all named after the exposure, see
    /// [`ExposurePlan`]).
    #[serde(default)]
    pub(crate) exposures: BTreeMap<String, v1::ExposureSpec>,
    /// virtio-blk controllers by id.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub(crate) virtio_blk: BTreeMap<String, Entry<VirtioBlkDoc>>,
    /// Whether the backend emulates PCI controllers (SNAP) or not (kernel: the host
    /// reaches the namespace over the fabric, so an exposure has no controller). Set
    /// from the configuration when the document is loaded, never stored.
    #[serde(skip, default = "emulates_pci_by_default")]
    pub(crate) emulates_pci: bool,
}

fn emulates_pci_by_default() -> bool {
    true
}

impl Default for Desired {
    fn default() -> Self {
        Self {
            version: DOC_VERSION,
            remotes: BTreeMap::new(),
            qos: BTreeMap::new(),
            subsystems: BTreeMap::new(),
            namespaces: BTreeMap::new(),
            controllers: BTreeMap::new(),
            exposures: BTreeMap::new(),
            virtio_blk: BTreeMap::new(),
            emulates_pci: true,
        }
    }
}

/// The volume a remote controller's namespace `nsid` becomes: SPDK names the bdevs of
/// `bdev_nvme_attach_controller name=X` as `Xn{nsid}`, and the kernel backend follows the
/// same scheme so volume names do not depend on the backend.
pub(crate) fn volume_id(remote_id: &str, nsid: u32) -> String {
    format!("{remote_id}n{nsid}")
}

/// The UUID a namespace reports when the operator gives none: derived from the subsystem,
/// nsid and backing volume (SHA-256, as an RFC 9562 version 8 UUID), so it is the same every
/// time the namespace is (re)created, including after SNAP restarts and forgets it, and the
/// host keeps seeing the same disk; stored in the document like an operator's UUID.
pub(crate) fn namespace_uuid(nqn: &str, nsid: u32, volume: &str) -> String {
    use sha2::{Digest, Sha256};
    let digest = Sha256::new()
        .chain_update(b"dpu-agent namespace uuid\0")
        .chain_update(nqn.as_bytes())
        .chain_update(b"\0")
        .chain_update(nsid.to_be_bytes())
        .chain_update(volume.as_bytes())
        .finalize();
    let mut bytes = [0_u8; 16];
    bytes.copy_from_slice(&digest[..16]);
    bytes[6] = (bytes[6] & 0x0f) | 0x80; // version 8
    bytes[8] = (bytes[8] & 0x3f) | 0x80; // RFC 9562 variant
    let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    format!(
        "{}-{}-{}-{}-{}",
        &hex[..8],
        &hex[8..12],
        &hex[12..16],
        &hex[16..20],
        &hex[20..]
    )
}

/// Splits a volume id back into its remote controller and nsid, when it follows
/// [`volume_id`]'s scheme.
pub(crate) fn split_volume_id(volume: &str) -> Option<(&str, u32)> {
    let at = volume.rfind('n')?;
    let (remote, nsid) = (&volume[..at], &volume[at + 1..]);
    let nsid: u32 = nsid.parse().ok()?;
    (!remote.is_empty() && nsid != 0).then_some((remote, nsid))
}

/// Whether volume `volume` is one of remote controller `remote_id`'s.
pub(crate) fn belongs_to(volume: &str, remote_id: &str) -> bool {
    split_volume_id(volume).is_some_and(|(remote, _)| remote == remote_id)
}

/// What an exposure consists of; every object is derived from the exposure id and spec,
/// so the document needs to store only the spec.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ExposurePlan {
    pub(crate) remote_id: String,
    pub(crate) remote: v1::RemoteControllerSpec,
    pub(crate) nqn: String,
    pub(crate) subsystem: SubsystemDoc,
    pub(crate) nsid: u32,
    pub(crate) namespace: NamespaceDoc,
    /// The emulated controller (id, spec); none when the backend cannot emulate PCI.
    pub(crate) controller: Option<(String, ControllerDoc)>,
}

impl ExposurePlan {
    pub(crate) fn new(id: &str, spec: &v1::ExposureSpec, emulates_pci: bool) -> Self {
        let remote_nsid = if spec.remote_nsid == 0 {
            1
        } else {
            spec.remote_nsid
        };
        let nsid = if spec.nsid == 0 { 1 } else { spec.nsid };
        Self {
            remote_id: id.to_owned(),
            remote: spec.remote.clone().unwrap_or_default(),
            nqn: spec.subsystem_nqn.clone(),
            subsystem: SubsystemDoc {
                serial_number: spec.serial_number.clone(),
                model_number: spec.model_number.clone(),
                max_namespaces: 0,
            },
            nsid,
            namespace: NamespaceDoc {
                uuid: namespace_uuid(&spec.subsystem_nqn, nsid, &volume_id(id, remote_nsid)),
                volume: volume_id(id, remote_nsid),
                ..NamespaceDoc::default()
            },
            controller: emulates_pci.then(|| {
                (
                    id.to_owned(),
                    ControllerDoc {
                        function: spec.function.clone().unwrap_or_default(),
                        attached: BTreeSet::from([nsid]),
                        running: true,
                        ..ControllerDoc::default()
                    },
                )
            }),
        }
    }

    /// The objects, in creation order.
    pub(crate) fn keys(&self) -> Vec<Key> {
        let mut keys = vec![
            Key::Remote(self.remote_id.clone()),
            Key::Subsystem(self.nqn.clone()),
            Key::Namespace(self.nqn.clone(), self.nsid),
        ];
        if let Some((id, _)) = &self.controller {
            keys.push(Key::Controller(self.nqn.clone(), id.clone()));
        }
        keys
    }
}

impl Desired {
    /// The objects exposure `id` consists of with this document's backend.
    pub(crate) fn plan(&self, id: &str, spec: &v1::ExposureSpec) -> ExposurePlan {
        ExposurePlan::new(id, spec, self.emulates_pci)
    }

    pub(crate) fn remote(&self, id: &str) -> Option<&v1::RemoteControllerSpec> {
        self.remotes.get(id).and_then(Entry::live)
    }

    /// The live QoS limits of volume `volume`.
    pub(crate) fn qos_of(&self, volume: &str) -> Option<&QosDoc> {
        self.qos.get(volume).and_then(Entry::live)
    }

    /// The QoS entries (live or not) of remote controller `remote_id`'s volumes.
    pub(crate) fn qos_keys_of_remote(&self, remote_id: &str) -> Vec<Key> {
        self.qos
            .keys()
            .filter(|volume| belongs_to(volume, remote_id))
            .cloned()
            .map(Key::Qos)
            .collect()
    }

    pub(crate) fn subsystem(&self, nqn: &str) -> Option<&SubsystemDoc> {
        self.subsystems.get(nqn).and_then(Entry::live)
    }

    pub(crate) fn namespace(&self, nqn: &str, nsid: u32) -> Option<&NamespaceDoc> {
        self.namespaces.get(nqn)?.get(&nsid).and_then(Entry::live)
    }

    pub(crate) fn controller(&self, nqn: &str, id: &str) -> Option<&ControllerDoc> {
        self.controllers.get(nqn)?.get(id).and_then(Entry::live)
    }

    pub(crate) fn controller_mut(&mut self, nqn: &str, id: &str) -> Option<&mut ControllerDoc> {
        let entry = self.controllers.get_mut(nqn)?.get_mut(id)?;
        (!entry.deleting).then_some(&mut entry.spec)
    }

    /// Live namespaces of `nqn`.
    pub(crate) fn namespaces_of(&self, nqn: &str) -> impl Iterator<Item = (u32, &NamespaceDoc)> {
        self.namespaces
            .get(nqn)
            .into_iter()
            .flatten()
            .filter_map(|(nsid, e)| e.live().map(|ns| (*nsid, ns)))
    }

    /// Live controllers of `nqn`.
    pub(crate) fn controllers_of(
        &self,
        nqn: &str,
    ) -> impl Iterator<Item = (&String, &ControllerDoc)> {
        self.controllers
            .get(nqn)
            .into_iter()
            .flatten()
            .filter_map(|(id, e)| e.live().map(|c| (id, c)))
    }

    /// The live virtio-blk controller `id`.
    pub(crate) fn virtio_blk_of(&self, id: &str) -> Option<&VirtioBlkDoc> {
        self.virtio_blk.get(id).and_then(Entry::live)
    }

    /// The live namespaces and virtio-blk controllers backed by `volume`.
    pub(crate) fn users_of_volume(&self, volume: &str) -> Vec<Key> {
        let mut users: Vec<Key> = self
            .virtio_blk
            .iter()
            .filter(|(_, e)| e.live().is_some_and(|v| v.volume == volume))
            .map(|(id, _)| Key::VirtioBlk(id.clone()))
            .collect();
        for (nqn, by_nsid) in &self.namespaces {
            for (nsid, entry) in by_nsid {
                if entry.live().is_some_and(|ns| ns.volume == volume) {
                    users.push(Key::Namespace(nqn.clone(), *nsid));
                }
            }
        }
        users
    }

    /// The exposure that owns `key`, if any.
    pub(crate) fn owner_of(&self, key: &Key) -> Option<&str> {
        self.exposures
            .iter()
            .find(|(id, spec)| self.plan(id, spec).keys().contains(key))
            .map(|(id, _)| id.as_str())
    }

    /// Every object in the document (live or deleting), in dependency order.
    pub(crate) fn keys(&self) -> Vec<Key> {
        let mut keys: Vec<Key> = self.remotes.keys().cloned().map(Key::Remote).collect();
        keys.extend(self.qos.keys().cloned().map(Key::Qos));
        keys.extend(self.subsystems.keys().cloned().map(Key::Subsystem));
        for (nqn, by_nsid) in &self.namespaces {
            keys.extend(
                by_nsid
                    .keys()
                    .map(|nsid| Key::Namespace(nqn.clone(), *nsid)),
            );
        }
        for (nqn, by_id) in &self.controllers {
            keys.extend(
                by_id
                    .keys()
                    .map(|id| Key::Controller(nqn.clone(), id.clone())),
            );
        }
        keys.extend(self.virtio_blk.keys().cloned().map(Key::VirtioBlk));
        keys
    }

    /// Whether `key` is in the document and marked for removal.
    pub(crate) fn is_deleting(&self, key: &Key) -> bool {
        match key {
            Key::Remote(id) => self.remotes.get(id).is_some_and(|e| e.deleting),
            Key::Qos(volume) => self.qos.get(volume).is_some_and(|e| e.deleting),
            Key::Subsystem(nqn) => self.subsystems.get(nqn).is_some_and(|e| e.deleting),
            Key::Namespace(nqn, nsid) => self
                .namespaces
                .get(nqn)
                .and_then(|m| m.get(nsid))
                .is_some_and(|e| e.deleting),
            Key::Controller(nqn, id) => self
                .controllers
                .get(nqn)
                .and_then(|m| m.get(id))
                .is_some_and(|e| e.deleting),
            Key::VirtioBlk(id) => self.virtio_blk.get(id).is_some_and(|e| e.deleting),
        }
    }

    /// Marks `key` for removal; false when it is not in the document.
    pub(crate) fn mark_deleting(&mut self, key: &Key) -> bool {
        fn mark<T>(entry: Option<&mut Entry<T>>) -> bool {
            entry.map(|e| e.deleting = true).is_some()
        }
        match key {
            Key::Remote(id) => mark(self.remotes.get_mut(id)),
            Key::Qos(volume) => mark(self.qos.get_mut(volume)),
            Key::Subsystem(nqn) => mark(self.subsystems.get_mut(nqn)),
            Key::Namespace(nqn, nsid) => {
                mark(self.namespaces.get_mut(nqn).and_then(|m| m.get_mut(nsid)))
            }
            Key::Controller(nqn, id) => {
                mark(self.controllers.get_mut(nqn).and_then(|m| m.get_mut(id)))
            }
            Key::VirtioBlk(id) => mark(self.virtio_blk.get_mut(id)),
        }
    }

    /// Forgets `key` entirely (after the backend confirmed it is gone).
    pub(crate) fn forget(&mut self, key: &Key) {
        match key {
            Key::Remote(id) => {
                self.remotes.remove(id);
            }
            Key::Qos(volume) => {
                self.qos.remove(volume);
            }
            Key::Subsystem(nqn) => {
                self.subsystems.remove(nqn);
            }
            Key::Namespace(nqn, nsid) => {
                if let Some(m) = self.namespaces.get_mut(nqn) {
                    m.remove(nsid);
                    if m.is_empty() {
                        self.namespaces.remove(nqn);
                    }
                }
            }
            Key::Controller(nqn, id) => {
                if let Some(m) = self.controllers.get_mut(nqn) {
                    m.remove(id);
                    if m.is_empty() {
                        self.controllers.remove(nqn);
                    }
                }
            }
            Key::VirtioBlk(id) => {
                self.virtio_blk.remove(id);
            }
        }
    }

    /// Adds the objects of exposure `id` (which must not conflict, see
    /// [`super::edit`]).
    pub(crate) fn insert_exposure(&mut self, id: &str, spec: &v1::ExposureSpec) {
        let plan = self.plan(id, spec);
        self.remotes
            .insert(plan.remote_id.clone(), Entry::new(plan.remote));
        self.subsystems
            .insert(plan.nqn.clone(), Entry::new(plan.subsystem));
        self.namespaces
            .entry(plan.nqn.clone())
            .or_default()
            .insert(plan.nsid, Entry::new(plan.namespace));
        if let Some((ctrl_id, ctrl)) = plan.controller {
            // Keep what the backend already told us about an existing controller.
            let backend = self
                .controllers
                .get(&plan.nqn)
                .and_then(|m| m.get(&ctrl_id))
                .and_then(|e| e.spec.backend.clone());
            self.controllers
                .entry(plan.nqn.clone())
                .or_default()
                .insert(ctrl_id, Entry::new(ControllerDoc { backend, ..ctrl }));
        }
        self.exposures.insert(id.to_owned(), spec.clone());
    }

    /// Objects present (live) in `self` that are not live in `before`: what a change
    /// created, and what undoing it must remove.
    pub(crate) fn created_since(&self, before: &Self) -> Vec<Key> {
        self.keys()
            .into_iter()
            .filter(|k| self.is_live(k) && !before.is_live(k))
            .collect()
    }

    pub(crate) fn is_live(&self, key: &Key) -> bool {
        match key {
            Key::Remote(id) => self.remote(id).is_some(),
            Key::Qos(volume) => self.qos_of(volume).is_some(),
            Key::Subsystem(nqn) => self.subsystem(nqn).is_some(),
            Key::Namespace(nqn, nsid) => self.namespace(nqn, *nsid).is_some(),
            Key::Controller(nqn, id) => self.controller(nqn, id).is_some(),
            Key::VirtioBlk(id) => self.virtio_blk_of(id).is_some(),
        }
    }

    /// Drops every confirmed-deleted entry and finished detach.
    pub(crate) fn prune(&mut self, gone: &BTreeSet<Key>) {
        for key in gone {
            if self.is_deleting(key) {
                self.forget(key);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn exposure() -> v1::ExposureSpec {
        v1::ExposureSpec {
            remote: Some(v1::RemoteControllerSpec {
                transport: v1::NvmeTransport::Rdma as i32,
                address_family: v1::AddressFamily::Ipv4 as i32,
                traddr: "10.0.0.2".into(),
                trsvcid: 4420,
                subnqn: "nqn.2026-01.io.example:remote".into(),
                ..Default::default()
            }),
            remote_nsid: 2,
            subsystem_nqn: "nqn.2026-01.io.example:host".into(),
            nsid: 0,
            function: Some(v1::EmulationFunction {
                function: Some(v1::emulation_function::Function::PfVf(v1::PfVf {
                    pf_index: 0,
                    vf_index: None,
                })),
            }),
            serial_number: "SN1".into(),
            model_number: String::new(),
        }
    }

    #[test]
    fn an_exposure_expands_to_four_objects_named_after_it() {
        let mut doc = Desired::default();
        doc.insert_exposure("e1", &exposure());
        assert_eq!(
            doc.remote("e1").map(|r| r.traddr.as_str()),
            Some("10.0.0.2")
        );
        let nqn = "nqn.2026-01.io.example:host";
        assert_eq!(
            doc.subsystem(nqn).map(|s| s.serial_number.as_str()),
            Some("SN1")
        );
        assert_eq!(
            doc.namespace(nqn, 1).map(|n| n.volume.as_str()),
            Some("e1n2")
        );
        let ctrl = doc.controller(nqn, "e1").expect("controller");
        assert!(ctrl.running);
        assert_eq!(ctrl.attached, BTreeSet::from([1]));
        assert_eq!(doc.owner_of(&Key::Namespace(nqn.into(), 1)), Some("e1"));
        assert_eq!(doc.created_since(&Desired::default()).len(), 4);
    }

    #[test]
    fn deleting_entries_are_not_live_and_survive_a_round_trip() {
        let mut doc = Desired::default();
        doc.insert_exposure("e1", &exposure());
        let key = Key::Remote("e1".into());
        assert!(doc.mark_deleting(&key));
        assert!(!doc.is_live(&key));
        let text = serde_json::to_string(&doc).expect("serialize");
        assert!(text.contains("\"deleting\":true"), "{text}");
        let back: Desired = serde_json::from_str(&text).expect("parse");
        assert_eq!(back, doc);
        let mut pruned = back;
        pruned.prune(&BTreeSet::from([key.clone()]));
        assert!(!pruned.remotes.contains_key("e1"));
    }

    #[test]
    fn generated_namespace_uuids_are_stable_distinct_and_well_formed() {
        let a = namespace_uuid("nqn.2026-01.io.example:host", 1, "e1n1");
        assert_eq!(a, namespace_uuid("nqn.2026-01.io.example:host", 1, "e1n1"));
        assert_ne!(a, namespace_uuid("nqn.2026-01.io.example:host", 2, "e1n1"));
        assert_ne!(a, namespace_uuid("nqn.2026-01.io.example:host", 1, "e2n1"));
        assert_ne!(a, namespace_uuid("nqn.2026-01.io.example:other", 1, "e1n1"));
        let groups: Vec<usize> = a.split('-').map(str::len).collect();
        assert_eq!(groups, [8, 4, 4, 4, 12], "{a}");
        assert_eq!(&a[14..15], "8", "version 8: {a}");
        assert!(matches!(&a[19..20], "8" | "9" | "a" | "b"), "variant: {a}");
        let mut doc = Desired::default();
        doc.insert_exposure("e1", &exposure());
        let ns = doc.namespace("nqn.2026-01.io.example:host", 1).expect("ns");
        assert_eq!(
            ns.uuid,
            namespace_uuid("nqn.2026-01.io.example:host", 1, "e1n2")
        );
    }

    #[test]
    fn volumes_belong_to_their_remote_controller_only() {
        assert!(belongs_to("r0n1", "r0"));
        assert!(!belongs_to("r0n1", "r"));
        assert!(!belongs_to("r10n1", "r1"));
    }

    #[test]
    fn volume_ids_split_back_into_remote_and_nsid() {
        assert_eq!(split_volume_id(&volume_id("r0", 7)), Some(("r0", 7)));
        assert_eq!(split_volume_id(&volume_id("nvme", 1)), Some(("nvme", 1)));
        assert_eq!(split_volume_id("Malloc0"), None);
        assert_eq!(split_volume_id("n1"), None);
    }
}
