//! `grpc.health.v1` per service, following the backends each service needs, so that a
//! readiness probe (Kubernetes, a load balancer, `dpuctl check`) is told the truth.
//!
//! | service | SERVING while |
//! |---|---|
//! | `""` (the whole server) | the process serves; NOT_SERVING once shutdown begins |
//! | `dpu.v1.Storage` | SNAP backend: the storage engine's own SNAP client lists the volumes (`bdev_get_bdevs`) within `[snap] call_timeout`; kernel backend: `/dev/nvme-fabrics` exists (a missing nvmet configfs only degrades it) |
//! | `dpu.v1.Switch` | OVSDB answers `list_dbs` with `Open_vSwitch` and ovs-vswitchd answers `version`, each within 1 s, over the Switch service's own clients; NOT_SERVING when OVS is disabled by configuration |
//! | `dpu.v1.Inventory`, `dpu.v1.Counters` | `{sys_root}/sys/class` can be listed |
//! | `readiness` | every service of the effective `[health] ready_requires` ([`ready_requires`]) is SERVING; NOT_SERVING once shutdown begins |
//!
//! `readiness` exists because a probe names one service (kubelet's native `grpc:` probe
//! has a single `service` field), while "ready" means several: by default every service
//! whose backend is enabled (Storage always, Switch when `ovs.enabled`, Inventory and
//! Counters), or the list `[health] ready_requires` gives (a DPU that serves storage only
//! may leave Switch out). Its changes are logged with the required services that are down
//! and their reasons.
//!
//! The first round runs before the listeners serve (each probe then bounded by at most
//! [`FIRST_ROUND_BOUND`]), so the first answer a client gets is already true; after that a
//! background task probes every [`INTERVAL`]. The reporter is updated only when a status
//! changes, and every change is logged with its reason.
//!
//! The overall service does not follow the backends: it answers "is this agent up", which
//! is what liveness checks and `dpuctl check` ask; a DPU without OVS still serves storage.

use std::sync::Arc;
use std::time::Duration;

use dpu_proto::v1::{BackendState, BackendStatus};
use tonic_health::server::HealthReporter;
use tonic_health::ServingStatus;

use crate::config::{Config, StorageBackendKind};
use crate::context::AgentContext;

/// How often the backends are probed after the first round.
pub(crate) const INTERVAL: Duration = Duration::from_secs(3);

/// The most the first round may delay the start, per probe.
pub(crate) const FIRST_ROUND_BOUND: Duration = Duration::from_secs(2);

/// The health service that is SERVING only while every service [`ready_requires`] names
/// is: what a readiness probe asks with its one service name.
pub(crate) const READINESS: &str = dpu_proto::READINESS_SERVICE;

/// The services `readiness` requires: `[health] ready_requires` when it is set (validated
/// by `Config::validate`), otherwise every service whose backend is enabled: Inventory and
/// Counters always, Storage unless storage is disabled (`[snap] enabled = false` under the
/// SNAP backend), Switch only with `ovs.enabled` (without OVS it is never SERVING, and a
/// DPU without OVS is still ready to serve storage).
pub(crate) fn ready_requires(config: &Config) -> Vec<String> {
    if !config.health.ready_requires.is_empty() {
        return config.health.ready_requires.clone();
    }
    dpu_proto::SERVICE_NAMES
        .iter()
        .filter(|service| **service != "dpu.v1.Switch" || config.ovs.enabled)
        .filter(|service| **service != "dpu.v1.Storage" || !config.storage_disabled())
        .map(|service| (*service).to_owned())
        .collect()
}

/// One service's state: serving, or why not.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ServingState {
    pub(crate) serving: bool,
    pub(crate) reason: String,
}

impl ServingState {
    fn serving() -> Self {
        Self {
            serving: true,
            reason: String::new(),
        }
    }

    fn not_serving(reason: impl Into<String>) -> Self {
        Self {
            serving: false,
            reason: reason.into(),
        }
    }

    fn status(&self) -> ServingStatus {
        if self.serving {
            ServingStatus::Serving
        } else {
            ServingStatus::NotServing
        }
    }
}

/// The background prober; stop it before reporting NOT_SERVING at shutdown.
#[derive(Debug)]
pub(crate) struct HealthMonitor {
    task: tokio::task::JoinHandle<()>,
}

struct Prober {
    ctx: Arc<AgentContext>,
    storage: StorageBackendKind,
    /// The storage engine's own bound on one SNAP call.
    snap_timeout: Duration,
    reporter: HealthReporter,
    /// Indices into `dpu_proto::SERVICE_NAMES` of the services `readiness` requires.
    requires: Vec<usize>,
    /// The last verdict reported for each of `SERVICE_NAMES`, then for `readiness`.
    last: Vec<Option<ServingState>>,
}

impl HealthMonitor {
    /// Sets `""` SERVING, probes every service once, then keeps probing in the background.
    pub(crate) async fn start(
        ctx: Arc<AgentContext>,
        config: &Config,
        reporter: HealthReporter,
    ) -> Self {
        reporter
            .set_service_status("", ServingStatus::Serving)
            .await;
        let required = ready_requires(config);
        tracing::info!(requires = ?required, "health: {READINESS} follows these services");
        let mut prober = Prober {
            ctx,
            storage: config.storage.backend,
            snap_timeout: config.snap.call_timeout,
            reporter,
            // Validation admits only names of SERVICE_NAMES.
            requires: required
                .iter()
                .filter_map(|name| dpu_proto::SERVICE_NAMES.iter().position(|s| s == name))
                .collect(),
            last: vec![None; dpu_proto::SERVICE_NAMES.len() + 1],
        };
        prober.round(FIRST_ROUND_BOUND).await;
        let task = tokio::spawn(async move {
            loop {
                tokio::time::sleep(INTERVAL).await;
                prober.round(Duration::MAX).await;
            }
        });
        Self { task }
    }

    /// Stops probing, so nothing turns a service back to SERVING during shutdown.
    pub(crate) fn stop(self) {
        self.task.abort();
    }
}

impl Prober {
    /// Probes every service (each probe bounded by its own timeout and by `bound`), derives
    /// `readiness` from the required ones, and reports the ones that changed.
    async fn round(&mut self, bound: Duration) {
        let (storage, switch) = tokio::join!(self.storage(bound), self.switch());
        let sysfs = sysfs_verdict(&self.ctx.backends.check_sysfs());
        let verdicts: Vec<ServingState> = dpu_proto::SERVICE_NAMES
            .iter()
            .map(|service| match *service {
                "dpu.v1.Storage" => storage.clone(),
                "dpu.v1.Switch" => switch.clone(),
                // Inventory and Counters read sysfs.
                _ => sysfs.clone(),
            })
            .collect();
        let ready = readiness_verdict(
            self.requires
                .iter()
                .map(|&i| (dpu_proto::SERVICE_NAMES[i], &verdicts[i])),
        );
        for (i, verdict) in verdicts.into_iter().enumerate() {
            self.report(i, dpu_proto::SERVICE_NAMES[i], verdict).await;
        }
        self.report(dpu_proto::SERVICE_NAMES.len(), READINESS, ready)
            .await;
    }

    /// Reports `verdict` for `service` (slot `i` of `last`) if its status changed, logging
    /// the change with its reason.
    async fn report(&mut self, i: usize, service: &str, verdict: ServingState) {
        let changed = self.last[i]
            .as_ref()
            .is_none_or(|last| last.serving != verdict.serving);
        if !changed {
            return;
        }
        match (&self.last[i], verdict.serving) {
            (_, true) => tracing::info!(service, "health: SERVING"),
            (None, false) => {
                tracing::warn!(service, reason = %verdict.reason, "health: NOT_SERVING");
            }
            (Some(_), false) => tracing::warn!(
                service,
                reason = %verdict.reason,
                "health: SERVING -> NOT_SERVING"
            ),
        }
        self.reporter
            .set_service_status(service, verdict.status())
            .await;
        self.last[i] = Some(verdict);
    }

    async fn storage(&self, bound: Duration) -> ServingState {
        match self.storage {
            StorageBackendKind::Kernel => match self.ctx.backends.check_kernel() {
                Some(status) => kernel_verdict(&status),
                None => ServingState::serving(),
            },
            StorageBackendKind::Snap if self.ctx.storage.is_disabled() => {
                ServingState::not_serving("storage is disabled ([snap] enabled = false)")
            }
            StorageBackendKind::Snap => {
                // Asked through the engine's own client: health sees the connection the
                // Storage service uses.
                let bound = self.snap_timeout.min(bound);
                let verdict = match tokio::time::timeout(bound, self.ctx.storage.volumes()).await {
                    Ok(Ok(_)) => ServingState::serving(),
                    Ok(Err(e)) => ServingState::not_serving(format!("SNAP: {}", e.describe())),
                    Err(_) => {
                        ServingState::not_serving(format!("SNAP: no answer within {bound:?}"))
                    }
                };
                // This probe is the SNAP check (the others record in `Backends`).
                self.ctx.metrics.set_backend_up("snap", verdict.serving);
                verdict
            }
        }
    }

    async fn switch(&self) -> ServingState {
        let (ovsdb, vswitchd) = self.ctx.backends.check_ovs().await;
        switch_verdict(&ovsdb, &vswitchd)
    }
}

fn state(status: &BackendStatus) -> BackendState {
    BackendState::try_from(status.state).unwrap_or(BackendState::Unspecified)
}

fn why(status: &BackendStatus) -> String {
    let state = state(status)
        .as_str_name()
        .trim_start_matches("BACKEND_STATE_");
    if status.detail.is_empty() {
        format!("{} {state}", status.backend)
    } else {
        format!("{} {state}: {}", status.backend, status.detail)
    }
}

/// The Switch service needs both daemons ready: OVSDB holds the configuration and
/// ovs-vswitchd applies it (every change is confirmed through `cur_cfg`) and dumps flows.
fn switch_verdict(ovsdb: &BackendStatus, vswitchd: &BackendStatus) -> ServingState {
    let down: Vec<String> = [ovsdb, vswitchd]
        .into_iter()
        .filter(|s| state(s) != BackendState::Ready)
        .map(why)
        .collect();
    if down.is_empty() {
        ServingState::serving()
    } else {
        ServingState::not_serving(down.join("; "))
    }
}

/// `readiness`: SERVING while every required service is; otherwise the reason names each
/// one that is not, with its own reason.
fn readiness_verdict<'a>(
    required: impl IntoIterator<Item = (&'a str, &'a ServingState)>,
) -> ServingState {
    let down: Vec<String> = required
        .into_iter()
        .filter(|(_, verdict)| !verdict.serving)
        .map(|(service, verdict)| format!("{service} NOT_SERVING: {}", verdict.reason))
        .collect();
    if down.is_empty() {
        ServingState::serving()
    } else {
        ServingState::not_serving(down.join("; "))
    }
}

/// Degraded (no nvmet configfs) still attaches remote controllers.
fn kernel_verdict(status: &BackendStatus) -> ServingState {
    match state(status) {
        BackendState::Ready | BackendState::Degraded => ServingState::serving(),
        _ => ServingState::not_serving(why(status)),
    }
}

fn sysfs_verdict(status: &BackendStatus) -> ServingState {
    match state(status) {
        BackendState::Ready => ServingState::serving(),
        _ => ServingState::not_serving(why(status)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn status(backend: &str, state: BackendState, detail: &str) -> BackendStatus {
        BackendStatus {
            backend: backend.to_owned(),
            state: state as i32,
            detail: detail.to_owned(),
            ..Default::default()
        }
    }

    #[test]
    fn switch_needs_both_ovs_daemons_and_names_the_missing_one() {
        let ready = status("ovsdb", BackendState::Ready, "");
        let vswitchd = status("ovs-vswitchd", BackendState::Ready, "");
        assert!(switch_verdict(&ready, &vswitchd).serving);
        let down = status("ovsdb", BackendState::Unavailable, "connection refused");
        let verdict = switch_verdict(&down, &vswitchd);
        assert!(!verdict.serving);
        assert_eq!(verdict.reason, "ovsdb UNAVAILABLE: connection refused");
        let disabled = status("ovs-vswitchd", BackendState::Disabled, "disabled");
        assert!(!switch_verdict(&ready, &disabled).serving);
    }

    #[test]
    fn readiness_needs_every_required_service_and_names_the_ones_down() {
        let up = ServingState::serving();
        let snap = ServingState::not_serving("SNAP: connection refused");
        let ovs = ServingState::not_serving("ovsdb UNAVAILABLE");
        assert!(readiness_verdict([("dpu.v1.Storage", &up), ("dpu.v1.Inventory", &up)]).serving);
        let verdict = readiness_verdict([
            ("dpu.v1.Storage", &snap),
            ("dpu.v1.Inventory", &up),
            ("dpu.v1.Switch", &ovs),
        ]);
        assert!(!verdict.serving);
        assert_eq!(
            verdict.reason,
            "dpu.v1.Storage NOT_SERVING: SNAP: connection refused; \
             dpu.v1.Switch NOT_SERVING: ovsdb UNAVAILABLE"
        );
    }

    #[test]
    fn readiness_requires_the_enabled_backends_unless_a_list_is_given() {
        let mut config = Config::default();
        assert_eq!(ready_requires(&config), dpu_proto::SERVICE_NAMES.to_vec());
        config.ovs.enabled = false;
        assert_eq!(
            ready_requires(&config),
            ["dpu.v1.Inventory", "dpu.v1.Storage", "dpu.v1.Counters"]
        );
        // Storage disabled: an agent for counters and OVS only is ready without it.
        config.snap.enabled = false;
        assert_eq!(
            ready_requires(&config),
            ["dpu.v1.Inventory", "dpu.v1.Counters"]
        );
        // The kernel backend does not use SNAP: Storage is required again.
        config.storage.backend = StorageBackendKind::Kernel;
        assert!(ready_requires(&config).contains(&"dpu.v1.Storage".to_owned()));
        config.health.ready_requires = vec!["dpu.v1.Inventory".to_owned()];
        assert_eq!(ready_requires(&config), ["dpu.v1.Inventory"]);
    }

    #[test]
    fn validation_refuses_a_readiness_that_cannot_serve_and_a_shared_health_port() {
        let refused = |text: &str| {
            Config::from_toml(text)
                .expect("parse")
                .validate()
                .expect_err(text)
                .to_string()
        };
        let err = refused("[health]\nready_requires = [\"dpu.v1.Nope\"]\n");
        assert!(err.contains("\"dpu.v1.Nope\" is not a service"), "{err}");
        let err =
            refused("[ovs]\nenabled = false\n[health]\nready_requires = [\"dpu.v1.Switch\"]\n");
        assert!(
            err.contains("dpu.v1.Switch but ovs.enabled = false"),
            "{err}"
        );
        let err =
            refused("[snap]\nenabled = false\n[health]\nready_requires = [\"dpu.v1.Storage\"]\n");
        assert!(
            err.contains("dpu.v1.Storage but storage is disabled"),
            "{err}"
        );
        let err = refused("[health]\nready_requires = [\"dpu.v1.Storage\", \"dpu.v1.Storage\"]\n");
        assert!(err.contains("twice"), "{err}");
        let err = refused("[health]\nlisten = \"unix:/run/h.sock\"\n");
        assert!(err.contains("must be tcp:HOST:PORT"), "{err}");
        let err = refused(
            "listen = [\"tcp:127.0.0.1:50051\"]\n[security]\ninsecure_listen = true\n\
             [health]\nlisten = \"tcp:127.0.0.1:50051\"\n",
        );
        assert!(err.contains("is also a gRPC listener"), "{err}");
        let err = refused(
            "[security]\ninsecure_listen = true\n[metrics]\nlisten = \"tcp:127.0.0.1:9464\"\n\
             [health]\nlisten = \"tcp:127.0.0.1:9464\"\n",
        );
        assert!(err.contains("is also metrics.listen"), "{err}");
        // Plaintext health needs no insecure_listen: it serves nothing but health.
        Config::from_toml(
            "[ovs]\nenabled = false\n[health]\nlisten = \"tcp:0.0.0.0:9465\"\n\
             ready_requires = [\"dpu.v1.Storage\"]\n",
        )
        .expect("parse")
        .validate()
        .expect("valid");
    }

    #[test]
    fn kernel_storage_serves_while_degraded_but_not_without_fabrics() {
        let degraded = status("kernel-nvmeof", BackendState::Degraded, "no nvmet");
        assert!(kernel_verdict(&degraded).serving);
        let gone = status("kernel-nvmeof", BackendState::Unavailable, "no fabrics");
        assert!(!kernel_verdict(&gone).serving);
        assert!(!sysfs_verdict(&status("sysfs", BackendState::Unavailable, "")).serving);
    }
}
