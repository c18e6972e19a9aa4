//! The backends the agent drives, and live checks of each one's state.
//!
//! The agent starts whatever is missing: each check connects (or reconnects) on demand,
//! so a SNAP or ovsdb-server that appears or restarts later is picked up without an agent
//! restart.

use std::path::PathBuf;
use std::time::{Duration, SystemTime};

use dpu_nvmeof::snap::SnapClient;
use dpu_proto::pbjson_types::Timestamp;
use dpu_proto::v1::{BackendState, BackendStatus};

use crate::config::{Config, StorageBackendKind};

/// How long a status check may take; `GetSystem` waits for all checks concurrently.
const CHECK_TIMEOUT: Duration = Duration::from_secs(1);

/// Handles to every backend, created once at start.
#[derive(Debug)]
pub(crate) struct Backends {
    snap: Option<SnapBackend>,
    /// The kernel storage backend's root, when it is the configured storage backend.
    kernel_root: Option<PathBuf>,
    ovsdb: Option<OvsdbBackend>,
    sys_root: PathBuf,
}

#[derive(Debug)]
struct SnapBackend {
    socket: PathBuf,
    client: SnapClient,
}

#[derive(Debug)]
struct OvsdbBackend {
    socket: PathBuf,
    client: dpu_jsonrpc::Client,
    /// ovs-vswitchd's control socket, found through its pid file in the run directory:
    /// OVSDB can be up while the switch daemon that applies its configuration is not.
    vswitchd: dpu_ovs::unixctl::Unixctl,
    rundir: PathBuf,
}

impl Backends {
    pub(crate) fn new(config: &Config) -> Self {
        let kernel = config.storage.backend == StorageBackendKind::Kernel;
        let snap = (config.snap.enabled && !kernel).then(|| SnapBackend {
            socket: config.snap.socket.clone(),
            client: SnapClient::with_client(dpu_jsonrpc::Client::new(
                &config.snap.socket,
                dpu_jsonrpc::ClientOptions {
                    call_timeout: config.snap.call_timeout,
                    ..dpu_jsonrpc::ClientOptions::v2()
                },
            )),
        });
        let ovsdb = config.ovs.enabled.then(|| {
            let socket = config.ovsdb_socket();
            let options = dpu_jsonrpc::ClientOptions {
                call_timeout: config.ovs.call_timeout,
                ..dpu_jsonrpc::ClientOptions::v1()
            };
            OvsdbBackend {
                client: dpu_jsonrpc::Client::new(&socket, options),
                socket,
                vswitchd: dpu_ovs::unixctl::Unixctl::vswitchd(&config.ovs.rundir),
                rundir: config.ovs.rundir.clone(),
            }
        });
        Self {
            snap,
            kernel_root: kernel.then(|| config.kernel.root.clone()),
            ovsdb,
            sys_root: config.sys_root.clone(),
        }
    }

    /// Checks every backend concurrently, each bounded by [`CHECK_TIMEOUT`].
    pub(crate) async fn check_all(&self) -> Vec<BackendStatus> {
        let (snap, ovsdb, vswitchd) =
            tokio::join!(self.check_snap(), self.check_ovsdb(), self.check_vswitchd());
        let mut all = vec![self.check_sysfs(), snap];
        all.extend(self.check_kernel());
        all.extend([ovsdb, vswitchd]);
        all
    }

    /// The kernel storage backend needs `/dev/nvme-fabrics` (nvme-fabrics loaded) to attach
    /// remote controllers; nvmet configfs only to export subsystems, so its absence
    /// degrades rather than disables.
    fn check_kernel(&self) -> Option<BackendStatus> {
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
        Some(status(
            "kernel-nvmeof",
            state,
            root.display().to_string(),
            "",
            detail,
        ))
    }

    fn check_sysfs(&self) -> BackendStatus {
        let class = self.sys_root.join("sys/class");
        let (state, detail) = if class.is_dir() {
            (BackendState::Ready, String::new())
        } else {
            (
                BackendState::Unavailable,
                format!("{} is not a directory", class.display()),
            )
        };
        status(
            "sysfs",
            state,
            self.sys_root.display().to_string(),
            "",
            detail,
        )
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
            return disabled("snap");
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
            Ok(Err(e)) => status("snap", state_for(e.is_transient()), endpoint, "", chain(&e)),
            Err(_) => status(
                "snap",
                BackendState::Unavailable,
                endpoint,
                "",
                timeout_detail(),
            ),
        }
    }

    async fn check_ovsdb(&self) -> BackendStatus {
        let Some(ovsdb) = &self.ovsdb else {
            return disabled("ovsdb");
        };
        let endpoint = format!("unix:{}", ovsdb.socket.display());
        let call = ovsdb
            .client
            .request("list_dbs")
            .params(serde_json::json!([]))
            .execute::<Vec<String>>();
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
                chain(&e),
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
        let Some(ovs) = &self.ovsdb else {
            return disabled(NAME);
        };
        let endpoint = format!("rundir:{}", ovs.rundir.display());
        match tokio::time::timeout(CHECK_TIMEOUT, ovs.vswitchd.version()).await {
            Ok(Ok(version)) => {
                let version = version.lines().next().unwrap_or_default().trim().to_owned();
                status(NAME, BackendState::Ready, endpoint, &version, String::new())
            }
            Ok(Err(e)) => status(NAME, state_for(e.is_transient()), endpoint, "", chain(&e)),
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

fn chain(err: &(dyn std::error::Error + 'static)) -> String {
    crate::services::error_chain(err)
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
