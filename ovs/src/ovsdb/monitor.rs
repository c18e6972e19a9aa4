//! A cache of the Open_vSwitch, Bridge, Port and Interface tables kept current by an OVSDB
//! `monitor` (RFC 7047 §4.1.5–4.1.6): the reply carries every row, `update` notifications
//! carry each later change (`new` holds all monitored columns, no `new` means deleted).
//!
//! A monitor lives exactly as long as the connection it was sent on, and the JSON-RPC
//! client reconnects silently, so the task watches
//! [`Client::connection_status`](dpu_jsonrpc::Client::connection_status) and re-sends the
//! monitor (with a fresh id, so stale notifications are ignored) whenever the connection
//! it was sent on ends; it retries with backoff while ovsdb-server is down. Each update
//! publishes a new immutable [`CachedView`] (a copy of the rows: fine for the few dozen
//! rows of a DPU's bridges, not meant for thousands).

use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Value};
use tokio::sync::{broadcast, watch};
use tokio::task::JoinHandle;

use super::error::Error;
use super::handle::Ovsdb;
use super::model::{Bridge, OpenVswitch, Tables, COLUMNS};

/// Backoff bounds between attempts to (re-)establish the monitor.
const RETRY_MIN: Duration = Duration::from_millis(50);
const RETRY_MAX: Duration = Duration::from_secs(2);

/// The cached tables at one instant.
#[derive(Debug, Clone, Default)]
pub struct CachedView {
    /// True while the monitor is established on a live connection; false before the first
    /// reply and from a connection loss until the re-monitor reply (the rows are then the
    /// last known ones).
    pub synced: bool,
    /// How many times a monitor has been established (1 after the first sync; each
    /// reconnect adds one).
    pub syncs: u64,
    /// The rows.
    pub tables: Tables,
}

impl CachedView {
    /// Every bridge with its ports and interfaces.
    pub fn bridges(&self) -> Vec<Bridge> {
        self.tables.bridges()
    }

    /// The bridge called `name`.
    pub fn bridge(&self, name: &str) -> Option<Bridge> {
        self.tables.bridge(name)
    }

    /// The root row.
    pub fn open_vswitch(&self) -> Option<OpenVswitch> {
        self.tables.open_vswitch()
    }
}

impl Ovsdb {
    /// Starts a cache that follows the database (see [`OvsdbCache`]); must be called inside
    /// a Tokio runtime. It keeps retrying while ovsdb-server is away.
    pub fn monitor(&self) -> OvsdbCache {
        OvsdbCache::spawn(self.clone())
    }
}

/// A handle to the cache; clones share one monitor, which stops when the last clone drops.
#[derive(Debug, Clone)]
pub struct OvsdbCache {
    views: watch::Receiver<Arc<CachedView>>,
    _task: Arc<AbortOnDrop>,
}

#[derive(Debug)]
struct AbortOnDrop(JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

impl OvsdbCache {
    pub(crate) fn spawn(ovsdb: Ovsdb) -> Self {
        let (tx, views) = watch::channel(Arc::new(CachedView::default()));
        let task = tokio::spawn(run(ovsdb, tx));
        Self {
            views,
            _task: Arc::new(AbortOnDrop(task)),
        }
    }

    /// The latest view.
    pub fn view(&self) -> Arc<CachedView> {
        Arc::clone(&self.views.borrow())
    }

    /// A receiver that wakes on every new view, for callers that stream changes.
    pub fn subscribe(&self) -> watch::Receiver<Arc<CachedView>> {
        self.views.clone()
    }

    /// Waits until a *synced* view satisfies `condition`, or fails with
    /// [`Error::CacheTimeout`] after `timeout` (`what` describes the condition there).
    pub async fn wait_for(
        &self,
        what: &str,
        timeout: Duration,
        condition: impl Fn(&CachedView) -> bool,
    ) -> Result<Arc<CachedView>, Error> {
        let mut views = self.views.clone();
        let waited = tokio::time::timeout(
            timeout,
            views.wait_for(|view| view.synced && condition(view)),
        )
        .await;
        match waited {
            Ok(Ok(view)) => Ok(Arc::clone(&view)),
            // The task only ends when every handle is gone; we hold one.
            Ok(Err(_)) | Err(_) => Err(Error::CacheTimeout {
                what: what.to_owned(),
                after: timeout,
            }),
        }
    }

    /// Waits for the first (or next, after a reconnect) synced view.
    pub async fn wait_synced(&self, timeout: Duration) -> Result<Arc<CachedView>, Error> {
        self.wait_for("sync with ovsdb-server", timeout, |_| true)
            .await
    }
}

/// The monitor requests: every cached table with its columns, all change kinds.
fn monitor_requests() -> Value {
    let tables: serde_json::Map<String, Value> = COLUMNS
        .iter()
        .map(|(table, columns)| ((*table).to_owned(), json!({"columns": columns})))
        .collect();
    Value::Object(tables)
}

async fn run(ovsdb: Ovsdb, views: watch::Sender<Arc<CachedView>>) {
    let client = ovsdb.client().clone();
    // Subscribed before the first monitor, so no update after its reply can be missed.
    let mut notifications = client.notifications();
    let mut status = client.connection_status();
    let mut syncs = 0_u64;
    let mut retry = RETRY_MIN;
    let mut attempt = 0_u64;
    loop {
        attempt += 1;
        let id = json!(["dpu-ovs-cache", attempt]);
        let reply = client
            .request("monitor")
            .params(json!([ovsdb.database(), id, monitor_requests()]))
            .execute_on_connection()
            .await;
        let (initial, generation) = match reply {
            Ok(ok) => ok,
            Err(e) => {
                tracing::debug!(error = %e, "OVSDB monitor failed; retrying in {retry:?}");
                mark_unsynced(&views);
                tokio::time::sleep(retry).await;
                retry = (retry * 2).min(RETRY_MAX);
                continue;
            }
        };
        let mut tables = Tables::default();
        if let Err(detail) = tables.apply_updates(&initial) {
            tracing::warn!(%detail, "malformed OVSDB monitor reply; retrying");
            tokio::time::sleep(retry).await;
            continue;
        }
        retry = RETRY_MIN;
        syncs += 1;
        tracing::info!(syncs, generation, "OVSDB monitor established");
        let publish = |tables: &Tables, synced: bool| {
            views.send_replace(Arc::new(CachedView {
                synced,
                syncs,
                tables: tables.clone(),
            }));
        };
        publish(&tables, true);
        let end = follow(
            &mut notifications,
            &mut status,
            &id,
            generation,
            &mut tables,
            |t| publish(t, true),
        )
        .await;
        publish(&tables, false);
        match end {
            FollowEnd::ConnectionLost => {
                tracing::info!(generation, "OVSDB connection lost; re-monitoring");
            }
            FollowEnd::Resync => {
                // The old monitor may still be live on this connection: cancel it so its
                // updates stop (they would be ignored anyway: different id).
                let _ = client
                    .request("monitor_cancel")
                    .params(json!([id]))
                    .execute_value()
                    .await;
            }
        }
    }
}

fn mark_unsynced(views: &watch::Sender<Arc<CachedView>>) {
    views.send_if_modified(|view| {
        if !view.synced {
            return false;
        }
        let mut stale = (**view).clone();
        stale.synced = false;
        *view = Arc::new(stale);
        true
    });
}

/// Why following a monitor stopped.
enum FollowEnd {
    /// The connection the monitor lived on ended.
    ConnectionLost,
    /// Notifications were lost (a slow consumer): start over from a fresh monitor.
    Resync,
}

async fn follow(
    notifications: &mut broadcast::Receiver<dpu_jsonrpc::Notification>,
    status: &mut watch::Receiver<dpu_jsonrpc::ConnectionStatus>,
    id: &Value,
    generation: u64,
    tables: &mut Tables,
    publish: impl Fn(&Tables),
) -> FollowEnd {
    let lost = |s: &dpu_jsonrpc::ConnectionStatus| s.generation != generation || !s.connected;
    loop {
        if lost(&status.borrow_and_update()) {
            return FollowEnd::ConnectionLost;
        }
        tokio::select! {
            changed = status.changed() => {
                if changed.is_err() {
                    return FollowEnd::ConnectionLost;
                }
            }
            note = notifications.recv() => match note {
                Ok(note) if note.method == "update" && note.params.get(0) == Some(id) => {
                    let updates = note.params.get(1).unwrap_or(&Value::Null);
                    if let Err(detail) = tables.apply_updates(updates) {
                        tracing::warn!(%detail, "malformed OVSDB update; resyncing");
                        return FollowEnd::Resync;
                    }
                    publish(tables);
                }
                Ok(_) => {}
                Err(broadcast::error::RecvError::Lagged(n)) => {
                    tracing::warn!(missed = n, "OVSDB cache fell behind; resyncing");
                    return FollowEnd::Resync;
                }
                Err(broadcast::error::RecvError::Closed) => return FollowEnd::ConnectionLost,
            },
        }
    }
}
