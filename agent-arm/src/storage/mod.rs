//! Declarative storage: the desired document, its crash-safe store, the backends (SNAP,
//! kernel) and the reconciler that drives a backend to the document.
//!
//! A change runs as: edit a copy of the document → save it → converge the touched
//! objects → on success prune and save again; on failure (or deadline) undo: objects the
//! change created are removed, objects it changed or removed are put back, and the caller
//! is told whether anything is left over. Saving *before* touching the backend means an
//! agent killed half-way completes the change after restart: the start-up reconcile
//! converges the whole document. A background loop repeats that at an interval, which
//! also repairs what a SNAP restart lost.

pub(crate) mod backend;
pub(crate) mod converge;
pub(crate) mod desired;
pub(crate) mod dispatch;
pub(crate) mod edit;
pub(crate) mod error;
pub(crate) mod field_error;
pub(crate) mod function;
pub(crate) mod kernel;
pub(crate) mod multipath;
pub(crate) mod remote;
pub(crate) mod snap;
mod snap_paths;
mod snap_virtio_blk;
pub(crate) mod store;
mod undo_text;
pub(crate) mod uplink;
pub(crate) mod view;
pub(crate) mod virtio_blk;
pub(crate) mod virtio_blk_doc;

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use dpu_nvmeof::snap::SnapDialect;
use tokio::sync::Mutex;

use self::backend::{BackendError, ObservedController, VolumeInfo, VolumeIo};
use self::converge::{converge, Mode, Scope};
use self::desired::{Desired, Key};
use self::dispatch::Backend;
use self::edit::Touched;
use self::error::StorageError;
use self::store::{StateStore, StoreError};
use crate::config::{Config, StorageBackendKind};
use crate::errors::error_chain;
use crate::telemetry::AgentMetrics;

/// The storage side of the agent: one per process, shared by the Storage service and the
/// background reconciler.
#[derive(Debug)]
pub(crate) struct StorageEngine {
    backend: Backend,
    store: StateStore,
    /// The current document. Held only to copy or replace it, never across backend I/O,
    /// so readers never wait for SNAP.
    doc: std::sync::Mutex<Desired>,
    /// Serializes writers (changes and reconcile passes), which do talk to the backend.
    writer: Mutex<()>,
    /// The last document could not be saved after the backend applied it: the reconciler
    /// saves it again, so memory and disk agree again as soon as the disk allows.
    unsaved: std::sync::atomic::AtomicBool,
    apply_timeout: Duration,
    /// Where background reconcile passes are counted, and (through the store) saves.
    metrics: Arc<AgentMetrics>,
    /// This process's hold on the state directory, for as long as the engine lives.
    _lock: store::DirLock,
}

/// What a change did, for the reply.
#[derive(Debug)]
pub(crate) struct Applied {
    /// The document after the change.
    pub(crate) doc: Desired,
    /// Whether the document differs from before (false for a repeated request).
    pub(crate) changed: bool,
}

impl StorageEngine {
    /// Opens the saved document (an unreadable one fails the start) and builds the
    /// configured backend; nothing is contacted yet. `metrics` records reconcile passes
    /// and state-file writes.
    pub(crate) fn open(config: &Config, metrics: Arc<AgentMetrics>) -> Result<Self, StoreError> {
        let store = StateStore::new(&config.state_dir, Arc::clone(&metrics));
        let lock = store.lock()?;
        let mut doc = store.load()?;
        doc.emulates_pci = config.storage.backend == StorageBackendKind::Snap;
        let backend = match config.storage.backend {
            StorageBackendKind::Snap if !config.snap.enabled => Backend::Disabled,
            StorageBackendKind::Snap => {
                let dialect = match config.snap.dialect {
                    crate::config::SnapDialectChoice::Auto => None,
                    crate::config::SnapDialectChoice::Snap4 => Some(SnapDialect::Snap4),
                    crate::config::SnapDialectChoice::Snap3 => Some(SnapDialect::Snap3),
                };
                Backend::Snap(snap::SnapBackend::new(
                    &config.snap.socket,
                    dialect,
                    config.snap.call_timeout,
                    (!config.snap.emulation_manager.is_empty())
                        .then(|| config.snap.emulation_manager.clone()),
                ))
            }
            StorageBackendKind::Kernel => Backend::Kernel(kernel::KernelBackend::new(config)),
        };
        Ok(Self {
            backend,
            store,
            doc: std::sync::Mutex::new(doc),
            writer: Mutex::new(()),
            unsaved: std::sync::atomic::AtomicBool::new(false),
            apply_timeout: config.storage.apply_timeout,
            metrics,
            _lock: lock,
        })
    }

    /// A copy of the current document: readers see no half-made change and never wait for
    /// the backend.
    pub(crate) async fn snapshot(&self) -> Desired {
        self.current()
    }

    fn current(&self) -> Desired {
        self.doc
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }

    fn publish(&self, doc: Desired) {
        *self
            .doc
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = doc;
    }

    fn remotes(&self) -> desired::Remotes {
        self.doc
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .remotes
            .clone()
    }

    /// The SNAP backend's own client (a clone sharing its connection), for the health
    /// checks; None with the kernel backend.
    pub(crate) fn snap_client(&self) -> Option<dpu_nvmeof::snap::SnapClient> {
        match &self.backend {
            Backend::Snap(snap) => Some(snap.client().clone()),
            Backend::Kernel(_) | Backend::Disabled => None,
        }
    }

    /// Whether the agent runs without a storage backend (`[snap] enabled = false`).
    pub(crate) fn is_disabled(&self) -> bool {
        matches!(self.backend, Backend::Disabled)
    }

    /// The volumes the backend has now (attached remote namespaces and any others).
    pub(crate) async fn volumes(&self) -> Result<Vec<VolumeInfo>, BackendError> {
        let remotes = self.remotes();
        self.backend.volumes(&remotes).await
    }

    /// The volumes the backend has now, each with its disk's identity where it has a disk on
    /// this machine: what a host's view of the volumes needs (`Volume.host_identities`).
    pub(crate) async fn volumes_with_identities(&self) -> Result<Vec<VolumeInfo>, BackendError> {
        let mut volumes = self.volumes().await?;
        self.backend.read_disk_identities(&mut volumes).await;
        Ok(volumes)
    }

    /// Each path of remote `id` (spec `spec`) with the state the backend reports.
    pub(crate) async fn remote_paths(
        &self,
        id: &str,
        spec: &dpu_proto::v1::RemoteControllerSpec,
    ) -> Result<Vec<dpu_proto::v1::NvmePath>, BackendError> {
        self.backend.remote_paths(id, spec).await
    }

    /// The emulated controllers the backend reports now.
    pub(crate) async fn controllers(&self) -> Result<Vec<ObservedController>, BackendError> {
        self.backend.controllers().await
    }

    /// The virtio-blk controllers the backend reports now.
    pub(crate) async fn virtio_blk_controllers(
        &self,
    ) -> Result<Vec<dpu_nvmeof::snap::VirtioBlkSeen>, BackendError> {
        self.backend.virtio_blk_list().await
    }

    /// The host-visible functions controllers can be created on.
    pub(crate) async fn emulation_functions(
        &self,
    ) -> Result<Vec<backend::EmulationFunction>, BackendError> {
        self.backend.emulation_functions().await
    }

    /// The cumulative I/O counters of volume `id`.
    pub(crate) async fn volume_io(&self, id: &str) -> Result<VolumeIo, BackendError> {
        let remotes = self.remotes();
        self.backend.volume_io(id, &remotes).await
    }

    /// Applies one change. `edit` checks and edits a copy of the document and names the
    /// objects it touched; `dry_run` stops there.
    pub(crate) async fn change(
        &self,
        dry_run: bool,
        timeout: Option<Duration>,
        edit: impl FnOnce(&mut Desired) -> Result<Touched, StorageError>,
    ) -> Result<Applied, StorageError> {
        if self.is_disabled() {
            // Refused before the document is touched: a change the agent cannot carry
            // out is not stored for a backend that will never come.
            return Err(StorageError::precondition(dispatch::DISABLED));
        }
        let _writer = self.writer.lock().await;
        let before = self.current();
        let mut after = before.clone();
        let touched = edit(&mut after)?;
        let changed = after != before;
        self.check_supported(&before, &after, &touched).await?;
        if dry_run || touched.is_empty() {
            return Ok(Applied {
                doc: after,
                changed,
            });
        }
        self.save(&after)?;
        let scope = Scope::Only(touched.clone());
        let deadline = timeout.unwrap_or(self.apply_timeout);
        let outcome = tokio::time::timeout(
            deadline,
            converge(&mut after, &self.backend, &scope, Mode::Strict),
        )
        .await;
        let failure = match outcome {
            Ok(outcome) => match outcome.errors.into_iter().next() {
                None => {
                    after.prune(&outcome.gone);
                    // The backend has the change and the document saved before converging
                    // already asks for it, so it is live and stays listed whatever the
                    // disk says now; a failed save here only loses what the backend told
                    // us (ids, pruning), which the reconciler saves again.
                    self.publish(after.clone());
                    self.save_or_retry_later(&after);
                    return Ok(Applied {
                        doc: after,
                        changed,
                    });
                }
                Some((key, err)) => Err((key, err)),
            },
            Err(_) => Ok(deadline),
        };
        // The failure's own text: a rollback step that failed for the same cause (SNAP
        // away fails every step alike) says so instead of repeating it.
        let said = match &failure {
            Err((_, err)) => err.describe(),
            Ok(_) => String::new(),
        };
        let (rolled_back, outcome) = self.roll_back(&before, &after, &touched, &said).await;
        self.publish(rolled_back);
        Err(match failure {
            Err((object, source)) => StorageError::Backend {
                object,
                source,
                outcome,
            },
            Ok(deadline) => StorageError::Deadline { deadline, outcome },
        })
    }

    /// Refuses, before anything is saved or sent, what the backend has no way to carry
    /// (e.g. a namespace NGUID on SNAP 4): a value accepted and then dropped would leave the
    /// caller believing it was applied.
    async fn check_supported(
        &self,
        before: &Desired,
        after: &Desired,
        touched: &Touched,
    ) -> Result<(), StorageError> {
        for key in touched {
            if let Key::Qos(volume) = key {
                if after.qos_of(volume).is_some() && before.qos_of(volume) != after.qos_of(volume) {
                    self.backend
                        .check_qos()
                        .map_err(|source| StorageError::Backend {
                            object: key.clone(),
                            source,
                            outcome: String::new(),
                        })?;
                }
                continue;
            }
            if let Key::VirtioBlk(id) = key {
                if after.virtio_blk_of(id).is_some() && before.virtio_blk_of(id).is_none() {
                    self.backend
                        .check_virtio_blk()
                        .map_err(|source| StorageError::Backend {
                            object: key.clone(),
                            source,
                            outcome: String::new(),
                        })?;
                }
                continue;
            }
            let Key::Namespace(nqn, nsid) = key else {
                continue;
            };
            let Some(ns) = after.namespace(nqn, *nsid) else {
                continue;
            };
            if before.namespace(nqn, *nsid) == Some(ns) {
                continue;
            }
            self.backend
                .check_namespace(ns)
                .await
                .map_err(|source| StorageError::Backend {
                    object: key.clone(),
                    source,
                    outcome: String::new(),
                })?;
        }
        Ok(())
    }

    /// Undoes a failed change: back to `before`, removing what the change created (with
    /// the backend ids `after` learnt). Returns the resulting document and a sentence for
    /// the caller saying whether anything was left; a step that failed for a cause `said`
    /// already states is not told that cause again.
    async fn roll_back(
        &self,
        before: &Desired,
        after: &Desired,
        touched: &Touched,
        said: &str,
    ) -> (Desired, String) {
        let mut target = before.clone();
        for key in after.created_since(before) {
            copy_entry(after, &mut target, &key);
            target.mark_deleting(&key);
        }
        // Keep what the backend told us about controllers that existed before.
        for key in touched {
            if let Key::Controller(nqn, id) = key {
                let learnt = after
                    .controllers
                    .get(nqn)
                    .and_then(|m| m.get(id))
                    .map(|e| e.spec.clone());
                if let (Some(learnt), Some(entry)) = (
                    learnt,
                    target.controllers.get_mut(nqn).and_then(|m| m.get_mut(id)),
                ) {
                    entry.spec.backend = learnt.backend;
                    entry.spec.confirmed = learnt.confirmed;
                }
            }
        }
        if let Err(e) = self.save(&target) {
            return (
                after.clone(),
                format!("rollback not started: {}", error_chain(&e)),
            );
        }
        let outcome = converge(
            &mut target,
            &self.backend,
            &Scope::Only(touched.clone()),
            Mode::BestEffort,
        )
        .await;
        target.prune(&outcome.gone);
        let saved = self.save(&target);
        let sentence = match (outcome.errors.is_empty(), saved) {
            (true, Ok(())) => "rolled back: the change left nothing behind".to_owned(),
            (_, Err(e)) => format!(
                "rolled back, but the state file could not be saved: {}",
                error_chain(&e)
            ),
            (false, Ok(())) => format!(
                "rollback incomplete, still to undo (retried in the background): {}",
                undo_text::still_to_undo(&outcome.errors, said)
            ),
        };
        (target, sentence)
    }

    fn save(&self, doc: &Desired) -> Result<(), StorageError> {
        self.store.save(doc).map_err(StorageError::Save)?;
        self.unsaved
            .store(false, std::sync::atomic::Ordering::Relaxed);
        Ok(())
    }

    /// Saves `doc`; when that fails, logs it and leaves the save to the reconciler.
    fn save_or_retry_later(&self, doc: &Desired) {
        if let Err(e) = self.save(doc) {
            self.unsaved
                .store(true, std::sync::atomic::Ordering::Relaxed);
            tracing::error!(error = %error_chain(&e), "a storage change is applied but the state file could not be updated; retrying with the next reconcile");
        }
    }

    /// Converges the whole document, carrying on past failures, within the apply timeout
    /// as a whole (a hung backend cannot hold the writers forever); returns what failed.
    /// Each pass is counted: a failure is an object left unlike its desired state, or a
    /// pass that ran past its deadline.
    pub(crate) async fn reconcile_all(&self) -> Vec<(Key, backend::BackendError)> {
        if self.is_disabled() {
            // A document saved while storage was enabled is kept as it is, for when it is
            // enabled again: nothing here can converge it, and pruning would lose it.
            return Vec::new();
        }
        let _writer = self.writer.lock().await;
        let before = self.current();
        let mut working = before.clone();
        let converged = tokio::time::timeout(
            self.apply_timeout,
            converge(&mut working, &self.backend, &Scope::All, Mode::BestEffort),
        )
        .await;
        self.metrics
            .reconcile_finished(matches!(&converged, Ok(outcome) if outcome.errors.is_empty()));
        let errors = match converged {
            Ok(outcome) => {
                working.prune(&outcome.gone);
                outcome.errors
            }
            Err(_) => {
                tracing::warn!(deadline = ?self.apply_timeout, "a reconcile pass ran past its deadline; what it learnt is kept, the rest is retried");
                Vec::new()
            }
        };
        let unsaved = self.unsaved.load(std::sync::atomic::Ordering::Relaxed);
        if working != before || unsaved {
            self.publish(working.clone());
            self.save_or_retry_later(&working);
        }
        errors
    }

    /// Reconciles now and then every `interval`, logging what still fails, until the
    /// engine is dropped.
    pub(crate) fn spawn_reconciler(self: &Arc<Self>, interval: Duration) {
        let engine = Arc::downgrade(self);
        tokio::spawn(async move {
            let mut failing: BTreeSet<Key> = BTreeSet::new();
            loop {
                let Some(engine) = engine.upgrade() else {
                    return;
                };
                let errors = engine.reconcile_all().await;
                let now: BTreeSet<Key> = errors.iter().map(|(k, _)| k.clone()).collect();
                for (key, err) in &errors {
                    if !failing.contains(key) {
                        tracing::warn!(object = %key, backend = engine.backend.name(), error = %err.describe(), "storage object not in its desired state; retrying");
                    }
                }
                for key in failing.difference(&now) {
                    tracing::info!(object = %key, "storage object reconciled");
                }
                failing = now;
                drop(engine);
                tokio::time::sleep(interval).await;
            }
        });
    }
}

fn copy_entry(from: &Desired, to: &mut Desired, key: &Key) {
    match key {
        Key::Qos(volume) => {
            if let Some(e) = from.qos.get(volume) {
                to.qos.insert(volume.clone(), e.clone());
            }
        }
        Key::Remote(id) => {
            if let Some(e) = from.remotes.get(id) {
                to.remotes.insert(id.clone(), e.clone());
            }
        }
        Key::Subsystem(nqn) => {
            if let Some(e) = from.subsystems.get(nqn) {
                to.subsystems.insert(nqn.clone(), e.clone());
            }
        }
        Key::Namespace(nqn, nsid) => {
            if let Some(e) = from.namespaces.get(nqn).and_then(|m| m.get(nsid)) {
                to.namespaces
                    .entry(nqn.clone())
                    .or_default()
                    .insert(*nsid, e.clone());
            }
        }
        Key::Controller(nqn, id) => {
            if let Some(e) = from.controllers.get(nqn).and_then(|m| m.get(id)) {
                to.controllers
                    .entry(nqn.clone())
                    .or_default()
                    .insert(id.clone(), e.clone());
            }
        }
        Key::VirtioBlk(id) => {
            if let Some(e) = from.virtio_blk.get(id) {
                to.virtio_blk.insert(id.clone(), e.clone());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;

    /// An engine on the kernel backend under `dir`, whose root has no nvmet configfs: a
    /// subsystem there cannot be created.
    fn engine(dir: &Path, metrics: &Arc<AgentMetrics>) -> StorageEngine {
        let config = Config {
            state_dir: dir.join("state"),
            storage: crate::config::StorageConfig {
                backend: StorageBackendKind::Kernel,
                ..Default::default()
            },
            kernel: crate::config::KernelConfig {
                root: dir.join("root"),
                ..Default::default()
            },
            ..Config::default()
        };
        StorageEngine::open(&config, Arc::clone(metrics)).expect("open")
    }

    fn text(metrics: &AgentMetrics) -> String {
        let mut out = String::new();
        prometheus_client::encoding::text::encode(&mut out, metrics.registry()).expect("encode");
        out
    }

    #[tokio::test]
    async fn every_reconcile_pass_is_counted_and_a_failing_one_as_a_failure() {
        let dir = tempfile::tempdir().expect("tempdir");
        let metrics = Arc::new(AgentMetrics::new());
        let empty = engine(dir.path(), &metrics);
        assert!(empty.reconcile_all().await.is_empty());
        drop(empty);
        let mut doc = Desired::default();
        doc.subsystems.insert(
            "nqn.2026-01.io.example:a".into(),
            desired::Entry::new(Default::default()),
        );
        StateStore::new(&dir.path().join("state"), Arc::clone(&metrics))
            .save(&doc)
            .expect("save");
        let failing = engine(dir.path(), &metrics);
        assert!(!failing.reconcile_all().await.is_empty());
        let out = text(&metrics);
        for line in [
            "dpu_agent_storage_reconcile_runs_total 2",
            "dpu_agent_storage_reconcile_failures_total 1",
            "dpu_agent_state_file_writes_total{result=\"ok\"} 1",
        ] {
            assert!(out.contains(line), "{line} missing in\n{out}");
        }
    }
    /// The kernel backend has no QoS: a limit is refused before the document changes,
    /// naming the backend, and clearing what is not
    /// set is no change at all.
    #[tokio::test]
    async fn qos_on_the_kernel_backend_is_refused_naming_it() {
        let dir = tempfile::tempdir().expect("tempdir");
        let metrics = Arc::new(AgentMetrics::new());
        let mut doc = Desired::default();
        doc.remotes.insert(
            "r0".into(),
            desired::Entry::new(dpu_proto::v1::RemoteControllerSpec::default()),
        );
        StateStore::new(&dir.path().join("state"), Arc::clone(&metrics))
            .save(&doc)
            .expect("save");
        let engine = engine(dir.path(), &metrics);
        let limits = desired::QosDoc {
            rw_ios_per_sec: 1000,
            ..Default::default()
        };
        let err = engine
            .change(false, None, |doc| edit::set_volume_qos(doc, "r0n1", limits))
            .await
            .expect_err("refused");
        let StorageError::Backend { object, source, .. } = &err else {
            panic!("{err}");
        };
        assert_eq!(*object, Key::Qos("r0n1".into()));
        assert_eq!(source.kind, backend::FailureKind::Unsupported);
        assert!(err.to_string().contains("the kernel backend"), "{err}");
        // Unsupported is FAILED_PRECONDITION at the edge (`services::status`).
        assert!(engine.snapshot().await.qos.is_empty());
        let cleared = engine
            .change(false, None, |doc| {
                edit::set_volume_qos(doc, "r0n1", desired::QosDoc::default())
            })
            .await
            .expect("nothing to clear");
        assert!(!cleared.changed);
    }

    /// The kernel backend emulates no PCI functions: a virtio-blk controller is refused
    /// before the document changes, naming the backend (FAILED_PRECONDITION at the edge).
    #[tokio::test]
    async fn virtio_blk_on_the_kernel_backend_is_refused_naming_it() {
        let dir = tempfile::tempdir().expect("tempdir");
        let metrics = Arc::new(AgentMetrics::new());
        let mut doc = Desired::default();
        doc.remotes.insert(
            "r0".into(),
            desired::Entry::new(dpu_proto::v1::RemoteControllerSpec::default()),
        );
        StateStore::new(&dir.path().join("state"), Arc::clone(&metrics))
            .save(&doc)
            .expect("save");
        let engine = engine(dir.path(), &metrics);
        let wanted = virtio_blk_doc::VirtioBlkDoc {
            volume: "r0n1".into(),
            ..Default::default()
        };
        let err = engine
            .change(false, None, |doc| {
                virtio_blk::create(doc, "vm1", wanted, false)
            })
            .await
            .expect_err("refused");
        let StorageError::Backend { object, source, .. } = &err else {
            panic!("{err}");
        };
        assert_eq!(*object, Key::VirtioBlk("vm1".into()));
        assert_eq!(source.kind, backend::FailureKind::Unsupported);
        assert!(err.to_string().contains("the kernel backend"), "{err}");
        assert!(engine.snapshot().await.virtio_blk.is_empty());
        // Control: the same edit on its own is accepted (the refusal is the backend's).
        let mut alone = engine.snapshot().await;
        virtio_blk::create(
            &mut alone,
            "vm1",
            virtio_blk_doc::VirtioBlkDoc {
                volume: "r0n1".into(),
                ..Default::default()
            },
            false,
        )
        .expect("a valid edit");
    }

    /// `[snap] enabled = false`: reads find nothing, a change is refused before the
    /// document is touched (naming the keys to change), and a document saved while storage
    /// was enabled is kept, not pruned, for when it is enabled again.
    #[tokio::test]
    async fn disabled_storage_refuses_changes_and_keeps_the_saved_document() {
        let dir = tempfile::tempdir().expect("tempdir");
        let metrics = Arc::new(AgentMetrics::new());
        let mut doc = Desired::default();
        doc.subsystems.insert(
            "nqn.2026-01.io.example:a".into(),
            desired::Entry::new(Default::default()),
        );
        let store = StateStore::new(&dir.path().join("state"), Arc::clone(&metrics));
        store.save(&doc).expect("save");
        let mut config = Config {
            state_dir: dir.path().join("state"),
            ..Config::default()
        };
        config.snap.enabled = false;
        // A socket that would fail every call: nothing may try it.
        config.snap.socket = dir.path().join("no-snap.sock");
        let engine = StorageEngine::open(&config, Arc::clone(&metrics)).expect("open");
        assert!(engine.is_disabled());
        assert!(engine.snap_client().is_none());
        assert!(engine.volumes().await.expect("volumes").is_empty());
        assert!(engine.controllers().await.expect("controllers").is_empty());
        assert!(engine.reconcile_all().await.is_empty());
        let mut edited = false;
        let err = engine
            .change(false, None, |doc| {
                edited = true;
                doc.subsystems.clear();
                Ok(Touched::default())
            })
            .await
            .expect_err("refused");
        assert!(!edited, "the edit must not run");
        assert!(
            matches!(&err, StorageError::FailedPrecondition(text) if text.contains("[snap] enabled = false")),
            "{err}"
        );
        assert_eq!(engine.snapshot().await.subsystems.len(), 1);
        drop(engine);
        assert_eq!(store.load().expect("load").subsystems.len(), 1);
    }
}
