//! Drives a backend to the desired document: removes what is marked `deleting` (children
//! first), then makes sure every live object exists (parents first).
//!
//! Every step is idempotent, so converging twice, or after a crash half-way, or after
//! SNAP restarted and lost everything, ends in the same place. What the backend decides
//! (a SNAP controller id) is written back into the document.

use std::collections::BTreeSet;

use super::backend::{BackendError, FailureKind, ObservedController};
use super::desired::{BackendController, Desired, Key};
use super::dispatch::Backend;

/// Which objects to look at.
#[derive(Debug, Clone)]
pub(crate) enum Scope {
    All,
    Only(BTreeSet<Key>),
}

impl Scope {
    fn covers(&self, key: &Key) -> bool {
        match self {
            Self::All => true,
            Self::Only(keys) => keys.contains(key),
        }
    }
}

/// Whether to stop at the first failure (a client's change, which is then rolled back)
/// or to carry on with the independent objects (start-up and background repair).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mode {
    Strict,
    BestEffort,
}

/// What a converge run achieved.
#[derive(Debug, Default)]
pub(crate) struct Converged {
    /// Objects confirmed removed; [`Desired::prune`] forgets them.
    pub(crate) gone: BTreeSet<Key>,
    pub(crate) errors: Vec<(Key, BackendError)>,
}

impl Converged {
    fn fail(&mut self, key: &Key, err: BackendError, mode: Mode) -> Result<(), ()> {
        tracing::warn!(object = %key, error = %err.describe(), "storage backend step failed");
        self.errors.push((key.clone(), err));
        match mode {
            Mode::Strict => Err(()),
            Mode::BestEffort => Ok(()),
        }
    }
}

/// Runs one converge pass over `scope`.
pub(crate) async fn converge(
    doc: &mut Desired,
    backend: &Backend,
    scope: &Scope,
    mode: Mode,
) -> Converged {
    let mut outcome = Converged::default();
    let _ = run(doc, backend, scope, mode, &mut outcome).await;
    outcome
}

async fn run(
    doc: &mut Desired,
    backend: &Backend,
    scope: &Scope,
    mode: Mode,
    out: &mut Converged,
) -> Result<(), ()> {
    let keys: Vec<Key> = doc.keys().into_iter().filter(|k| scope.covers(k)).collect();
    let mut observed: Option<Vec<ObservedController>> = None;

    // Removals, children first.
    for key in keys.iter().rev().filter(|k| doc.is_deleting(k)) {
        let result = match key {
            Key::Controller(nqn, id) => {
                let backend_ctrl = doc
                    .controllers
                    .get(nqn)
                    .and_then(|m| m.get(id))
                    .and_then(|e| e.spec.backend.clone());
                match backend_ctrl {
                    Some(ctrl) => backend.remove_controller(nqn, &ctrl).await,
                    // No id recorded: never created, or created with its reply lost. Where
                    // the agent names controllers itself (SNAP 4), it removes by that name
                    // (absent counts as done); elsewhere there is nothing to find.
                    None => match backend.controller_name(nqn, id).await {
                        Ok(Some(name)) => {
                            let ctrl = BackendController {
                                id: name,
                                cntlid: None,
                                host_bdf: None,
                            };
                            backend.remove_controller(nqn, &ctrl).await
                        }
                        Ok(None) => Ok(()),
                        Err(e) => Err(e),
                    },
                }
            }
            Key::Namespace(nqn, nsid) => backend.remove_namespace(nqn, *nsid).await,
            Key::Subsystem(nqn) => backend.remove_subsystem(nqn).await,
            Key::Remote(id) => backend.remove_remote(id, &doc.remotes).await,
            Key::Qos(volume) => backend.remove_qos(volume).await,
            Key::VirtioBlk(id) => super::virtio_blk::remove(doc, backend, id).await,
        };
        match result {
            Ok(()) => {
                out.gone.insert(key.clone());
            }
            Err(e) => out.fail(key, e, mode)?,
        }
    }

    // Creations, parents first.
    for key in &keys {
        if !doc.is_live(key) {
            continue;
        }
        let result = match key {
            Key::Remote(id) => match doc.remote(id) {
                Some(spec) => backend.ensure_remote(id, spec).await,
                None => Ok(()),
            },
            // After the remote controller: a SNAP that restarted has its bdevs again, without
            // limits, and a limit lifted behind the agent's back is set again.
            Key::Qos(volume) => match doc.qos_of(volume) {
                Some(limits) => backend.ensure_qos(volume, limits).await,
                None => Ok(()),
            },
            Key::Subsystem(nqn) => match doc.subsystem(nqn) {
                Some(sub) => backend.ensure_subsystem(nqn, sub).await,
                None => Ok(()),
            },
            Key::Namespace(nqn, nsid) => match doc.namespace(nqn, *nsid) {
                Some(ns) => backend.ensure_namespace(nqn, *nsid, ns, &doc.remotes).await,
                None => Ok(()),
            },
            Key::Controller(nqn, id) => {
                if observed.is_none() {
                    match backend.controllers().await {
                        Ok(list) => observed = Some(list),
                        Err(e) => {
                            out.fail(key, e, mode)?;
                            continue;
                        }
                    }
                }
                let list = observed.as_deref().unwrap_or_default();
                ensure_controller(doc, backend, nqn, id, list).await
            }
            Key::VirtioBlk(id) => super::virtio_blk::ensure(doc, backend, id).await,
        };
        if let Err(e) = result {
            out.fail(key, e, mode)?;
        }
    }
    Ok(())
}

/// Makes controller `nqn`/`id` exist with its namespaces attached and in its run state.
async fn ensure_controller(
    doc: &mut Desired,
    backend: &Backend,
    nqn: &str,
    id: &str,
    observed: &[ObservedController],
) -> Result<(), BackendError> {
    let Some(want) = doc.controller(nqn, id).cloned() else {
        return Ok(());
    };
    let can_suspend = backend.can_suspend().await?;
    let found = want
        .backend
        .as_ref()
        .and_then(|b| observed.iter().find(|o| o.id == b.id));
    // Whether it runs: `None` when the backend does not say, and then the desired state is
    // applied rather than assumed.
    let (ctrl, mut confirmed, mut running) = match (found, &want.backend) {
        (Some(seen), Some(ctrl)) => (
            ctrl.clone(),
            want.confirmed.clone(),
            seen.suspended.map(|s| !s),
        ),
        _ => {
            let ctrl = match adopt(doc, backend, nqn, id, observed).await? {
                Some(orphan) => {
                    tracing::info!(nqn, controller = id, backend_id = %orphan.id, "adopting a controller this agent created before it could record it");
                    orphan
                }
                None => backend.create_controller(nqn, id, &want).await?,
            };
            if let Some(doc_ctrl) = doc.controller_mut(nqn, id) {
                doc_ctrl.backend = Some(ctrl.clone());
                doc_ctrl.confirmed.clear();
            }
            // SNAP 4 creates suspended; SNAP 3 controllers run from the start. An adopted
            // one may be either: asked, not assumed.
            let running = observed
                .iter()
                .find(|o| o.id == ctrl.id)
                .map_or(Some(!can_suspend), |o| o.suspended.map(|s| !s));
            (ctrl, BTreeSet::new(), running)
        }
    };

    let to_attach: Vec<u32> = want.attached.difference(&confirmed).copied().collect();
    let to_detach: Vec<u32> = want.detaching.iter().copied().collect();
    if (!to_attach.is_empty() || !to_detach.is_empty()) && can_suspend && running != Some(false) {
        backend.set_running(&ctrl, false).await?;
        running = Some(false);
    }
    for nsid in to_detach {
        backend.detach(nqn, &ctrl, nsid).await?;
        confirmed.remove(&nsid);
        if let Some(doc_ctrl) = doc.controller_mut(nqn, id) {
            doc_ctrl.detaching.remove(&nsid);
            doc_ctrl.confirmed.remove(&nsid);
        }
    }
    for nsid in to_attach {
        let ns = doc.namespace(nqn, nsid).cloned().ok_or_else(|| {
            BackendError::plain(
                FailureKind::NotFound,
                format!("namespace {nsid} of {nqn} is not in the desired state"),
            )
        })?;
        backend.attach(nqn, &ctrl, nsid, &ns).await?;
        if let Some(doc_ctrl) = doc.controller_mut(nqn, id) {
            doc_ctrl.confirmed.insert(nsid);
        }
    }
    if can_suspend && running != Some(want.running) {
        backend.set_running(&ctrl, want.running).await?;
    } else if !can_suspend && !want.running {
        return Err(BackendError::plain(
            FailureKind::Unsupported,
            "this backend's controllers cannot be suspended",
        ));
    }
    Ok(())
}

/// The backend controller that controller `id` of `nqn` already is, though the document
/// does not record it (an agent killed between the create and the save): found by the name
/// the agent gives it where the backend takes one (SNAP 4), else by [`adoptable`].
async fn adopt(
    doc: &Desired,
    backend: &Backend,
    nqn: &str,
    id: &str,
    observed: &[ObservedController],
) -> Result<Option<BackendController>, BackendError> {
    if let Some(name) = backend.controller_name(nqn, id).await? {
        return Ok(observed
            .iter()
            .find(|o| o.id == name)
            .map(|o| BackendController {
                id: o.id.clone(),
                cntlid: o.cntlid,
                host_bdf: None,
            }));
    }
    Ok(adoptable(doc, nqn, observed))
}

/// A controller of `nqn` that the backend has but no document entry claims. SNAP gives a
/// controller its id only when creating it; an agent killed between the create and the
/// save of the document left it behind, and the desired controller without a live
/// backend id is the one it was meant for.
fn adoptable(
    doc: &Desired,
    nqn: &str,
    observed: &[ObservedController],
) -> Option<BackendController> {
    let claimed: BTreeSet<&str> = doc
        .controllers
        .values()
        .flat_map(|m| m.values())
        .filter_map(|e| e.spec.backend.as_ref().map(|b| b.id.as_str()))
        .collect();
    let waiting = doc
        .controllers_of(nqn)
        .filter(|(_, c)| {
            c.backend
                .as_ref()
                .is_none_or(|b| !observed.iter().any(|o| o.id == b.id))
        })
        .count();
    let mut orphans = observed
        .iter()
        .filter(|o| o.nqn.as_deref() == Some(nqn) && !claimed.contains(o.id.as_str()));
    match (orphans.next(), orphans.next(), waiting) {
        (Some(orphan), None, 1) => Some(BackendController {
            id: orphan.id.clone(),
            cntlid: orphan.cntlid,
            host_bdf: None,
        }),
        _ => None,
    }
}
