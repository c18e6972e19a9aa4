//! The backends the agent drives, and live checks of each one's state.
//!
//! The agent starts whatever is missing: each check connects (or reconnects) on demand,
//! so a SNAP or ovsdb-server that appears or restarts later is picked up without an agent
//! restart. Every check asks the backend's owner for its client, so it sees the
//! connection the service uses and opens no second one: the OVS checks use the Switch
//! service's clients ([`OvsBackend`]), the SNAP check the storage engine's
//! ([`StorageEngine::snap_client`]; `spdk_get_version` is the cheapest call SNAP answers).

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use dpu_nvmeof::snap::SnapClient;
use dpu_proto::pbjson_types::Timestamp;
use dpu_proto::v1::{BackendState, BackendStatus};

use crate::config::{Config, StorageBackendKind};
use crate::errors::error_chain;
use crate::ovs::{OvsBackend, OvsClients};
use crate::storage::StorageEngine;
use crate::telemetry::AgentMetrics;

/// How long a status check may take; `GetSystem` waits for all checks concurrently.
const CHECK_TIMEOUT: Duration = Duration::from_secs(1);

/// Handles to every backend, created once at start.
#[derive(Debug)]
pub(crate) struct Backends {
    snap: Option<SnapHealth>,
    /// The kernel storage backend's root, when it is the configured storage backend.
    kernel_root: Option<PathBuf>,
    ovsdb: OvsdbState,
    sys_root: PathBuf,
    /// Every check's result is recorded here (`dpu_agent_backend_up`), whoever asked.
    metrics: Arc<AgentMetrics>,
}

/// The OVS checks' view of the Switch service's clients.
#[derive(Debug)]
enum OvsdbState {
    Disabled,
    /// Why the configured OVS address cannot be used.
    Unusable(String),
    Ready(OvsdbBackend),
}

/// What the readiness checks ask SNAP through: its socket and a client on it (the storage
/// engine's own backend is `storage::snap::SnapBackend`).
#[derive(Debug)]
struct SnapHealth {
    socket: PathBuf,
    client: SnapClient,
}

#[derive(Debug)]
struct OvsdbBackend {
    /// The Switch service's OVSDB handle and ovs-vswitchd control socket (found through
    /// its pid file in the run directory: OVSDB can be up while the switch daemon that
    /// applies its configuration is not).
    clients: OvsClients,
    rundir: PathBuf,
}

impl Backends {
    /// `ovs` is the Switch service's backend and `storage` the storage engine: the checks
    /// share their clients; `metrics` records every check.
    pub(crate) fn new(
        config: &Config,
        ovs: &OvsBackend,
        storage: &StorageEngine,
        metrics: Arc<AgentMetrics>,
    ) -> Self {
        let kernel = config.storage.backend == StorageBackendKind::Kernel;
        let snap = storage.snap_client().map(|client| SnapHealth {
            socket: config.snap.socket.clone(),
            client,
        });
        let ovsdb = match ovs.clients() {
            Ok(clients) => OvsdbState::Ready(OvsdbBackend {
                clients: clients.clone(),
                rundir: config.ovs.rundir.clone(),
            }),
            Err(_) if !config.ovs.enabled => OvsdbState::Disabled,
            Err(unavailable) => OvsdbState::Unusable(unavailable.to_string()),
        };
        Self {
            snap,
            kernel_root: kernel.then(|| config.kernel.root.clone()),
            ovsdb,
            sys_root: config.sys_root.clone(),
            metrics,
        }
    }

    /// Records `status` as the backend's latest probe and returns it. A backend disabled
    /// by configuration is neither up nor down: it gets no series, so it raises no alert.
    fn observed(&self, status: BackendStatus) -> BackendStatus {
        let state = BackendState::try_from(status.state).unwrap_or(BackendState::Unspecified);
        if state != BackendState::Disabled {
            self.metrics
                .set_backend_up(&status.backend, state == BackendState::Ready);
        }
        status
    }

    /// Checks every backend concurrently, each bounded by [`CHECK_TIMEOUT`].
    pub(crate) async fn check_all(&self) -> Vec<BackendStatus> {
        let (snap, (ovsdb, vswitchd)) = tokio::join!(self.check_snap(), self.check_ovs());
        let mut all = vec![self.check_sysfs(), self.observed(snap)];
        all.extend(self.check_kernel());
        all.extend([ovsdb, vswitchd]);
        all
    }

    /// The kernel storage backend needs `/dev/nvme-fabrics` (nvme-fabrics loaded) to attach
    /// remote controllers; nvmet configfs only to export subsystems, so its absence
    /// degrades rather than disables.
    pub(crate) fn check_kernel(&self) -> Option<BackendStatus> {
        let root = self.kernel_root.as_ref()?;
        let fabrics = root.join("dev/nvme-fabrics");
        let nvmet = root.join("sys/kernel/config/nvmet");
        let (state, detail) = match (fabrics.exists(), nvmet.is_dir()) {
            (true, true) => (BackendState::Ready, String::new()),
            (true, false) => (
                BackendState::Degraded,
                format!(
                    "{} is missing (modprobe nvmet; mount configfs): subsystems cannot be exported",
                    nvmet.display()
                ),
            ),
            (false, _) => (
                BackendState::Unavailable,
                format!(
                    "{} is missing (modprobe nvme-tcp or nvme-rdma): remote controllers cannot be attached",
                    fabrics.display()
                ),
            ),
        };
        Some(self.observed(status(
            "kernel-nvmeof",
            state,
            root.display().to_string(),
            "",
            detail,
        )))
    }

    /// Inventory and Counters read `{sys_root}/sys/class`: it must be a directory this
    /// process can list.
    pub(crate) fn check_sysfs(&self) -> BackendStatus {
        let class = self.sys_root.join("sys/class");
        let (state, detail) = match std::fs::read_dir(&class) {
            Ok(_) => (BackendState::Ready, String::new()),
            Err(e) => (
                BackendState::Unavailable,
                format!("cannot read {}: {e}", class.display()),
            ),
        };
        self.observed(status(
            "sysfs",
            state,
            self.sys_root.display().to_string(),
            "",
            detail,
        ))
    }

    async fn check_snap(&self) -> BackendStatus {
        let Some(snap) = &self.snap else {
            if self.kernel_root.is_some() {
                return status(
                    "snap",
                    BackendState::Disabled,
                    String::new(),
                    "",
                    "the kernel storage backend is configured ([storage] backend = \"kernel\")"
                        .to_owned(),
                );
            }
            return status(
                "snap",
                BackendState::Disabled,
                String::new(),
                "",
                "[snap] enabled = false: the agent runs without storage".to_owned(),
            );
        };
        let endpoint = format!("unix:{}", snap.socket.display());
        match tokio::time::timeout(CHECK_TIMEOUT, snap.client.spdk_get_version()).await {
            Ok(Ok(version)) => status(
                "snap",
                BackendState::Ready,
                endpoint,
                &version.version,
                String::new(),
            ),
            Ok(Err(e)) => status(
                "snap",
                state_for(e.is_transient()),
                endpoint,
                "",
                error_chain(&e),
            ),
            Err(_) => status(
                "snap",
                BackendState::Unavailable,
                endpoint,
                "",
                timeout_detail(),
            ),
        }
    }

    /// OVSDB and ovs-vswitchd, which the Switch service needs both of, checked concurrently.
    pub(crate) async fn check_ovs(&self) -> (BackendStatus, BackendStatus) {
        let (ovsdb, vswitchd) = tokio::join!(self.check_ovsdb(), self.check_vswitchd());
        (self.observed(ovsdb), self.observed(vswitchd))
    }

    async fn check_ovsdb(&self) -> BackendStatus {
        let ovsdb = match &self.ovsdb {
            OvsdbState::Ready(ovsdb) => ovsdb,
            OvsdbState::Disabled => return disabled("ovsdb"),
            OvsdbState::Unusable(reason) => return unusable("ovsdb", reason),
        };
        let endpoint = format!("unix:{}", ovsdb.clients.ovsdb.socket().display());
        let call = ovsdb.clients.ovsdb.list_dbs();
        match tokio::time::timeout(CHECK_TIMEOUT, call).await {
            Ok(Ok(dbs)) if dbs.iter().any(|db| db == "Open_vSwitch") => {
                status("ovsdb", BackendState::Ready, endpoint, "", String::new())
            }
            Ok(Ok(dbs)) => status(
                "ovsdb",
                BackendState::Degraded,
                endpoint,
                "",
                format!("server has no Open_vSwitch database (has {dbs:?})"),
            ),
            Ok(Err(e)) => status(
                "ovsdb",
                state_for(e.is_transient()),
                endpoint,
                "",
                error_chain(&e),
            ),
            Err(_) => status(
                "ovsdb",
                BackendState::Unavailable,
                endpoint,
                "",
                timeout_detail(),
            ),
        }
    }
}

impl Backends {
    async fn check_vswitchd(&self) -> BackendStatus {
        const NAME: &str = "ovs-vswitchd";
        let ovs = match &self.ovsdb {
            OvsdbState::Ready(ovs) => ovs,
            OvsdbState::Disabled => return disabled(NAME),
            OvsdbState::Unusable(reason) => return unusable(NAME, reason),
        };
        let endpoint = format!("rundir:{}", ovs.rundir.display());
        match tokio::time::timeout(CHECK_TIMEOUT, ovs.clients.vswitchd.version()).await {
            Ok(Ok(version)) => {
                let version = version.lines().next().unwrap_or_default().trim().to_owned();
                status(NAME, BackendState::Ready, endpoint, &version, String::new())
            }
            Ok(Err(e)) => status(
                NAME,
                state_for(e.is_transient()),
                endpoint,
                "",
                error_chain(&e),
            ),
            Err(_) => status(
                NAME,
                BackendState::Unavailable,
                endpoint,
                "",
                timeout_detail(),
            ),
        }
    }
}

/// A transient error (cannot connect, connection dropped) means the backend is away; any
/// other error means it answered but wrongly.
fn state_for(transient: bool) -> BackendState {
    if transient {
        BackendState::Unavailable
    } else {
        BackendState::Degraded
    }
}

fn timeout_detail() -> String {
    format!("no answer within {CHECK_TIMEOUT:?}")
}

fn disabled(backend: &str) -> BackendStatus {
    status(
        backend,
        BackendState::Disabled,
        String::new(),
        "",
        "disabled by configuration".to_owned(),
    )
}

fn unusable(backend: &str, reason: &str) -> BackendStatus {
    status(
        backend,
        BackendState::Unavailable,
        String::new(),
        "",
        reason.to_owned(),
    )
}

fn status(
    backend: &str,
    state: BackendState,
    endpoint: String,
    version: &str,
    detail: String,
) -> BackendStatus {
    BackendStatus {
        backend: backend.to_owned(),
        state: state as i32,
        endpoint,
        version: version.to_owned(),
        detail,
        checked_at: Some(now()),
    }
}

fn now() -> Timestamp {
    let since_epoch = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .unwrap_or_default();
    Timestamp {
        seconds: i64::try_from(since_epoch.as_secs()).unwrap_or(i64::MAX),
        nanos: i32::try_from(since_epoch.subsec_nanos()).unwrap_or(0),
    }
}
