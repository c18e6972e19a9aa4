//! Agent configuration: compiled-in defaults, overlaid by a TOML file, overlaid by flags.
//!
//! Every table rejects unknown keys: a typo in a config file on a DPU must fail at start,
//! not silently fall back to a default.

use std::path::{Path, PathBuf};
use std::time::Duration;

use dpu_proto::Endpoint;
use serde::{Deserialize, Serialize};

use crate::role::Role;

/// The complete, effective configuration.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub(crate) struct Config {
    /// Listeners, `unix:PATH` or `tcp:HOST:PORT`.
    #[serde(with = "text_list")]
    pub(crate) listen: Vec<Endpoint>,
    /// Root for sysfs/procfs reads.
    pub(crate) sys_root: PathBuf,
    /// Where desired state is kept.
    pub(crate) state_dir: PathBuf,
    /// How long in-flight calls may run after SIGTERM before the agent exits anyway.
    #[serde(with = "seconds")]
    pub(crate) shutdown_grace: Duration,
    pub(crate) security: SecurityConfig,
    pub(crate) limits: LimitsConfig,
    pub(crate) storage: StorageConfig,
    pub(crate) snap: SnapConfig,
    pub(crate) kernel: KernelConfig,
    pub(crate) ovs: OvsConfig,
    pub(crate) log: LogConfig,
    pub(crate) metrics: MetricsConfig,
    pub(crate) health: HealthConfig,
    pub(crate) counters: CountersConfig,
}

/// Authentication and roles (see `security`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub(crate) struct SecurityConfig {
    /// Allow plaintext TCP listeners (a warning is logged at start). Without it, TCP
    /// listeners need `tls_cert`, `tls_key` and `client_ca`.
    pub(crate) insecure_listen: bool,
    /// The role of callers on plaintext TCP listeners.
    pub(crate) insecure_role: Role,
    /// PEM certificate (chain) and key the agent presents on TCP listeners.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) tls_cert: Option<PathBuf>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) tls_key: Option<PathBuf>,
    /// PEM CA that client certificates must chain to (client certificates are required).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) client_ca: Option<PathBuf>,
    /// Client-certificate names (subject CN or DNS SAN) with the operator role; "*" is
    /// every verified client.
    pub(crate) operators: Vec<String>,
    /// Client-certificate names with the viewer role.
    pub(crate) viewers: Vec<String>,
    /// Unix uids with the operator role besides 0 (root always is).
    pub(crate) operator_uids: Vec<u32>,
    /// The role of every other Unix-socket peer (the socket is 0660: root and its group).
    pub(crate) unix_role: Role,
}

impl Default for SecurityConfig {
    fn default() -> Self {
        Self {
            insecure_listen: false,
            insecure_role: Role::Viewer,
            tls_cert: None,
            tls_key: None,
            client_ca: None,
            operators: Vec::new(),
            viewers: Vec::new(),
            operator_uids: Vec::new(),
            unix_role: Role::Viewer,
        }
    }
}

/// Bounds that keep one client from starving the others or exhausting memory.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub(crate) struct LimitsConfig {
    /// Largest request message the agent decodes (every request is small; 1 MiB is
    /// generous), and the largest response it encodes (flow dumps can be large).
    pub(crate) max_request_bytes: usize,
    pub(crate) max_response_bytes: usize,
    /// HTTP/2 streams one connection may have open at once.
    pub(crate) max_streams_per_connection: u32,
    /// Calls one connection may have running at once; more wait.
    pub(crate) max_calls_per_connection: usize,
    /// Connections one TCP listener holds at once; more wait in the kernel's backlog. Keeps
    /// remote clients from taking every file descriptor: the agent also lowers it so that
    /// all TCP listeners together use at most half of what `ulimit -n` leaves.
    pub(crate) max_tcp_connections: usize,
    /// Connections one Unix listener holds at once, a budget of its own so the local
    /// socket (root's way in) keeps answering while TCP is full; lowered to fit the fd
    /// limit, as `max_tcp_connections` is.
    pub(crate) max_unix_connections: usize,
    /// TLS handshakes one TCP listener runs at once (each may take up to 10 s); more
    /// connections wait in the backlog. Bounds the descriptors and CPU that clients who
    /// never finish a handshake can hold.
    pub(crate) max_pending_handshakes: usize,
    /// Seconds a new connection has to send the HTTP/2 preface and its first frame before
    /// it is closed: an idle socket cannot hold a connection slot for long.
    #[serde(with = "seconds")]
    pub(crate) preface_timeout: Duration,
    /// Seconds a connection may stay open with no call in progress before it is closed
    /// (gRPC's MAX_CONNECTION_IDLE); clients reconnect on their next call.
    #[serde(with = "seconds")]
    pub(crate) idle_timeout: Duration,
    /// Seconds between HTTP/2 PINGs the agent sends on every connection, and how long it
    /// waits for the answer before closing the connection: peers that vanished (or never
    /// read) release their slot.
    #[serde(with = "seconds")]
    pub(crate) keepalive_interval: Duration,
    #[serde(with = "seconds")]
    pub(crate) keepalive_timeout: Duration,
}

impl Default for LimitsConfig {
    fn default() -> Self {
        Self {
            max_request_bytes: 1 << 20,
            max_response_bytes: dpu_proto::MAX_MESSAGE_BYTES,
            max_streams_per_connection: 128,
            max_calls_per_connection: 64,
            max_tcp_connections: 512,
            max_unix_connections: 1024,
            max_pending_handshakes: 64,
            preface_timeout: Duration::from_secs(10),
            idle_timeout: Duration::from_secs(300),
            keepalive_interval: Duration::from_secs(60),
            keepalive_timeout: Duration::from_secs(20),
        }
    }
}

/// The Storage service: which backend carries it out and how often the desired state is
/// re-checked.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub(crate) struct StorageConfig {
    pub(crate) backend: StorageBackendKind,
    /// Seconds between background reconciliations of the desired state (repairs what a
    /// SNAP restart lost, finishes what an agent crash interrupted).
    #[serde(with = "seconds")]
    pub(crate) reconcile_interval: Duration,
    /// Default deadline for carrying out one change (ApplyOptions.timeout overrides it).
    #[serde(with = "seconds")]
    pub(crate) apply_timeout: Duration,
}

/// Which storage backend the agent drives.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub(crate) enum StorageBackendKind {
    /// NVIDIA SNAP through its JSON-RPC socket (BlueField).
    Snap,
    /// Linux nvmet configfs and /dev/nvme-fabrics (the lab, servers without SNAP).
    Kernel,
}

/// The SNAP method set to speak.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum SnapDialectChoice {
    /// Ask the server once (`rpc_get_methods`).
    Auto,
    /// DOCA SNAP 4 (BlueField-3): `nvme_subsystem_create`, ...
    Snap4,
    /// mlnx_snap 3 (BlueField-2): `subsystem_nvme_create`, ...
    Snap3,
}

/// The kernel backend's paths (overridable so tests can point it at a fake tree).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub(crate) struct KernelConfig {
    /// Root under which sys/kernel/config/nvmet, sys and dev/nvme-fabrics are found.
    pub(crate) root: PathBuf,
    /// nvmet ports every subsystem is exported on: "tcp:ADDR:PORT", "rdma:ADDR:PORT"
    /// (IPv6 in brackets) or "loop".
    #[serde(with = "text_list")]
    pub(crate) export_ports: Vec<dpu_nvmeof::kernel::PortEndpoint>,
    /// Host NQN to connect as when a remote controller names none; empty means the
    /// kernel's default host NQN.
    pub(crate) hostnqn: String,
}

/// The SNAP/SPDK JSON-RPC backend.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub(crate) struct SnapConfig {
    pub(crate) enabled: bool,
    pub(crate) socket: PathBuf,
    /// Method set: "auto", "snap4" or "snap3".
    pub(crate) dialect: SnapDialectChoice,
    /// Deadline for one JSON-RPC call.
    #[serde(with = "seconds")]
    pub(crate) call_timeout: Duration,
    /// mlnx_snap 3's emulation manager (the RDMA device that emulates, e.g. `mlx5_0`);
    /// empty asks SNAP (`emulation_managers_list`, the first that supports NVMe).
    pub(crate) emulation_manager: String,
}

/// The OVS backends.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub(crate) struct OvsConfig {
    pub(crate) enabled: bool,
    /// OVSDB endpoint; defaults to `unix:{rundir}/db.sock`.
    #[serde(with = "optional_endpoint", skip_serializing_if = "Option::is_none")]
    pub(crate) ovsdb: Option<Endpoint>,
    pub(crate) rundir: PathBuf,
    #[serde(with = "seconds")]
    pub(crate) call_timeout: Duration,
}

/// The OpenMetrics endpoint (`GET /metrics`, docs/metrics.md): off unless `listen` is set.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub(crate) struct MetricsConfig {
    /// `tcp:HOST:PORT` or `unix:PATH`; none: no endpoint. A TCP listener follows the gRPC
    /// listeners' rule: mutual TLS with `[security]`'s files, or plaintext only with
    /// `security.insecure_listen`.
    #[serde(with = "optional_endpoint", skip_serializing_if = "Option::is_none")]
    pub(crate) listen: Option<Endpoint>,
    /// Scrape connections held at once; more wait in the kernel's backlog.
    pub(crate) max_connections: usize,
    /// Seconds a scrape connection has to send its request, and to take the answer,
    /// before it is closed: a stuck scraper cannot hold a connection slot.
    #[serde(with = "seconds")]
    pub(crate) request_timeout: Duration,
    /// Seconds the counter reading of one scrape may take; what is not read by then is
    /// marked unreadable (`dpu_counters_source_up` 0), never reported as zero.
    #[serde(with = "seconds")]
    pub(crate) read_timeout: Duration,
    /// Read the tc filter statistics of every representor and uplink on each scrape.
    pub(crate) tc: bool,
    /// Sum the OVS datapath flows by forwarding level on each scrape (one
    /// `dpctl/dump-flows` through ovs-vswitchd).
    pub(crate) ovs_flows: bool,
}

impl Default for MetricsConfig {
    fn default() -> Self {
        Self {
            listen: None,
            max_connections: 16,
            request_timeout: Duration::from_secs(10),
            read_timeout: Duration::from_secs(5),
            tc: true,
            ovs_flows: true,
        }
    }
}

/// The plaintext health endpoint for kubelet's native gRPC probe, and what the
/// `readiness` health service requires (`health.rs`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub(crate) struct HealthConfig {
    /// `tcp:HOST:PORT` serving `grpc.health.v1` only, without TLS (kubelet's probe speaks
    /// plaintext); none: health is served on the main listeners only.
    #[serde(with = "optional_endpoint", skip_serializing_if = "Option::is_none")]
    pub(crate) listen: Option<Endpoint>,
    /// The services the `readiness` health service requires to be SERVING; empty (the
    /// default) means every service whose backend is enabled (`health::ready_requires`).
    pub(crate) ready_requires: Vec<String>,
}

/// Where the counter reads run and how long a preempted read window may be
/// (`dpu_probe::counters::ReadPlacement`): on a BlueField the SPDK reactors and OVS PMD
/// threads own known cores, and the reads should not share them (docs/counters.md).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub(crate) struct CountersConfig {
    /// CPUs for the reading threads in cpulist form (`"0"`, `"0-1"`, `"0,3"`); empty:
    /// any CPU the agent may use.
    pub(crate) cpus: String,
    /// `"normal"` (nice -10 where the agent may, else normal priority, logged once), or
    /// `"high"`: `SCHED_FIFO` (else nice -20), refused at start when the agent is not
    /// permitted either.
    pub(crate) priority: String,
    /// Seconds a read window may last when a reading thread was preempted during it
    /// before the snapshot is read once more.
    #[serde(with = "seconds")]
    pub(crate) window_bound: Duration,
}

impl Default for CountersConfig {
    fn default() -> Self {
        Self {
            cpus: String::new(),
            priority: "normal".to_owned(),
            window_bound: dpu_probe::counters::DEFAULT_WINDOW_BOUND,
        }
    }
}

impl CountersConfig {
    /// The reading threads' placement, or why `cpus` or `priority` is not one.
    pub(crate) fn placement(
        &self,
    ) -> Result<dpu_probe::counters::ReadPlacement, dpu_probe::counters::PlacementError> {
        Ok(dpu_probe::counters::ReadPlacement {
            cpus: if self.cpus.trim().is_empty() {
                None
            } else {
                Some(self.cpus.parse()?)
            },
            priority: self.priority.parse()?,
        })
    }
}

/// Logging.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub(crate) struct LogConfig {
    /// RUST_LOG-style filter.
    pub(crate) level: String,
    pub(crate) format: LogFormat,
}

/// Log line format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub(crate) enum LogFormat {
    /// Human-readable lines.
    Text,
    /// One JSON object per line, for journald/log shippers.
    Json,
}

impl Default for Config {
    fn default() -> Self {
        Self {
            listen: vec![Endpoint::Unix(PathBuf::from(
                dpu_proto::DEFAULT_AGENT_SOCKET,
            ))],
            sys_root: PathBuf::from("/"),
            state_dir: PathBuf::from("/var/lib/dpu-agent"),
            shutdown_grace: Duration::from_secs(10),
            security: SecurityConfig::default(),
            limits: LimitsConfig::default(),
            storage: StorageConfig::default(),
            snap: SnapConfig::default(),
            kernel: KernelConfig::default(),
            ovs: OvsConfig::default(),
            log: LogConfig::default(),
            metrics: MetricsConfig::default(),
            health: HealthConfig::default(),
            counters: CountersConfig::default(),
        }
    }
}

impl Default for SnapConfig {
    fn default() -> Self {
        Self {
            enabled: true,
            socket: PathBuf::from(dpu_nvmeof::snap::DEFAULT_SNAP_SOCKET),
            dialect: SnapDialectChoice::Auto,
            call_timeout: Duration::from_secs(5),
            emulation_manager: String::new(),
        }
    }
}

impl Default for StorageConfig {
    fn default() -> Self {
        Self {
            backend: StorageBackendKind::Snap,
            reconcile_interval: Duration::from_secs(30),
            apply_timeout: Duration::from_secs(60),
        }
    }
}

impl Default for KernelConfig {
    fn default() -> Self {
        Self {
            root: PathBuf::from("/"),
            export_ports: Vec::new(),
            hostnqn: String::new(),
        }
    }
}

impl Default for OvsConfig {
    fn default() -> Self {
        Self {
            enabled: true,
            ovsdb: None,
            rundir: PathBuf::from(dpu_ovs::DEFAULT_RUNDIR),
            call_timeout: Duration::from_secs(5),
        }
    }
}

impl Default for LogConfig {
    fn default() -> Self {
        Self {
            level: "info".to_owned(),
            format: LogFormat::Text,
        }
    }
}

/// Why the configuration could not be built.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ConfigError {
    #[error("cannot read config file {path}")]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("invalid config file {path}")]
    Parse {
        path: PathBuf,
        #[source]
        source: toml::de::Error,
    },
    #[error("invalid configuration: {0}")]
    Invalid(String),
}

impl Config {
    /// The configuration in the file at `path`, or the defaults when there is none; not
    /// yet validated, so that flags (`cli::Args::apply_to`) can still override it before
    /// [`Config::validate`] checks the result.
    pub(crate) fn load(path: Option<&Path>) -> Result<Self, ConfigError> {
        match path {
            Some(path) => Self::from_file(path),
            None => Ok(Self::default()),
        }
    }

    fn from_file(path: &Path) -> Result<Self, ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
            path: path.to_owned(),
            source,
        })?;
        Self::from_toml(&text).map_err(|source| ConfigError::Parse {
            path: path.to_owned(),
            source,
        })
    }

    /// Parses TOML text (used by tests and by the packaged example check).
    pub(crate) fn from_toml(text: &str) -> Result<Self, toml::de::Error> {
        toml::from_str(text)
    }

    /// Checks the effective configuration (file and flags together) as a whole, so the
    /// agent refuses to start on one it cannot serve.
    pub(crate) fn validate(&self) -> Result<(), ConfigError> {
        self.counters
            .placement()
            .map_err(|e| ConfigError::Invalid(format!("[counters]: {e}")))?;
        if self.counters.window_bound.is_zero() {
            return Err(ConfigError::Invalid(
                "[counters] window_bound must be above 0 seconds".to_owned(),
            ));
        }
        if self.listen.is_empty() {
            return Err(ConfigError::Invalid(
                "no listeners: set `listen` or pass --listen".to_owned(),
            ));
        }
        for (i, a) in self.listen.iter().enumerate() {
            if self.listen[..i].contains(a) {
                return Err(ConfigError::Invalid(format!("listener {a} is given twice")));
            }
        }
        let tls = [
            &self.security.tls_cert,
            &self.security.tls_key,
            &self.security.client_ca,
        ];
        let tls_set = tls.iter().filter(|v| v.is_some()).count();
        if tls_set != 0 && tls_set != 3 {
            return Err(ConfigError::Invalid(
                "security.tls_cert, security.tls_key and security.client_ca go together: \
                 set all three (client certificates are required) or none"
                    .to_owned(),
            ));
        }
        if let Some(tcp) = self
            .listen
            .iter()
            .find(|e| matches!(e, Endpoint::Tcp { .. }))
        {
            if tls_set == 0 && !self.security.insecure_listen {
                return Err(ConfigError::Invalid(format!(
                    "listener {tcp} needs TLS (security.tls_cert, tls_key, client_ca) or, \
                     for plaintext on a trusted link, security.insecure_listen = true \
                     (--insecure-listen)"
                )));
            }
        }
        if let Some(endpoint) = &self.metrics.listen {
            if self.listen.contains(endpoint) {
                return Err(ConfigError::Invalid(format!(
                    "metrics.listen = {endpoint} is also a gRPC listener: give /metrics its own"
                )));
            }
            if matches!(endpoint, Endpoint::Tcp { .. })
                && tls_set == 0
                && !self.security.insecure_listen
            {
                return Err(ConfigError::Invalid(format!(
                    "metrics.listen = {endpoint} needs TLS (security.tls_cert, tls_key, \
                     client_ca) or, for plaintext on a trusted link, security.insecure_listen \
                     = true (--insecure-listen), like the gRPC listeners"
                )));
            }
            if self.metrics.max_connections == 0 {
                return Err(ConfigError::Invalid(
                    "metrics.max_connections must be greater than 0".to_owned(),
                ));
            }
            for (key, value) in [
                ("metrics.request_timeout", self.metrics.request_timeout),
                ("metrics.read_timeout", self.metrics.read_timeout),
            ] {
                if value.is_zero() {
                    return Err(ConfigError::Invalid(format!(
                        "{key} must be greater than 0"
                    )));
                }
            }
        }
        if !self.kernel.hostnqn.is_empty() {
            dpu_nvmeof::Nqn::parse(&self.kernel.hostnqn)
                .map_err(|e| ConfigError::Invalid(format!("kernel.hostnqn: {e}")))?;
        }
        let manager = &self.snap.emulation_manager;
        if !manager.is_empty()
            && (manager.len() > 64
                || !manager
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-'))
        {
            return Err(ConfigError::Invalid(format!(
                "snap.emulation_manager = {manager:?}: an RDMA device name is 1-64 letters, \
                 digits, '_' or '-' (e.g. mlx5_0)"
            )));
        }
        if let Some(endpoint @ Endpoint::Tcp { .. }) = &self.ovs.ovsdb {
            return Err(ConfigError::Invalid(format!(
                "ovs.ovsdb = {endpoint}: only unix: OVSDB endpoints are supported"
            )));
        }
        for (key, value) in [
            ("snap.call_timeout", self.snap.call_timeout),
            (
                "storage.reconcile_interval",
                self.storage.reconcile_interval,
            ),
            ("storage.apply_timeout", self.storage.apply_timeout),
            ("ovs.call_timeout", self.ovs.call_timeout),
            ("limits.preface_timeout", self.limits.preface_timeout),
            ("limits.idle_timeout", self.limits.idle_timeout),
            ("limits.keepalive_interval", self.limits.keepalive_interval),
            ("limits.keepalive_timeout", self.limits.keepalive_timeout),
        ] {
            if value.is_zero() {
                return Err(ConfigError::Invalid(format!(
                    "{key} must be greater than 0"
                )));
            }
        }
        for (key, value) in [
            (
                "limits.max_tcp_connections",
                self.limits.max_tcp_connections,
            ),
            (
                "limits.max_unix_connections",
                self.limits.max_unix_connections,
            ),
            (
                "limits.max_pending_handshakes",
                self.limits.max_pending_handshakes,
            ),
        ] {
            if value == 0 {
                return Err(ConfigError::Invalid(format!(
                    "{key} must be greater than 0"
                )));
            }
        }
        self.validate_health()?;
        Ok(())
    }

    /// The OVSDB socket path, explicit or derived from the run directory.
    pub(crate) fn ovsdb_socket(&self) -> PathBuf {
        match &self.ovs.ovsdb {
            Some(Endpoint::Unix(path)) => path.clone(),
            _ => dpu_ovs::default_ovsdb_socket(&self.ovs.rundir),
        }
    }
}

/// `[health]`: the health-only listener and the services `readiness` requires.
impl Config {
    /// Part of [`Config::validate`]: a health listener that cannot serve kubelet's probe,
    /// or a `readiness` that could never be SERVING, is refused at start.
    /// Whether the agent runs without a storage backend: the SNAP backend is configured
    /// and SNAP is disabled (an agent for counters and OVS only).
    pub(crate) fn storage_disabled(&self) -> bool {
        self.storage.backend == StorageBackendKind::Snap && !self.snap.enabled
    }

    fn validate_health(&self) -> Result<(), ConfigError> {
        if let Some(endpoint) = &self.health.listen {
            if matches!(endpoint, Endpoint::Unix(_)) {
                return Err(ConfigError::Invalid(format!(
                    "health.listen = {endpoint}: must be tcp:HOST:PORT (kubelet's grpc probe \
                     dials TCP; the unix: listeners already serve grpc.health.v1)"
                )));
            }
            if self.listen.contains(endpoint) {
                return Err(ConfigError::Invalid(format!(
                    "health.listen = {endpoint} is also a gRPC listener (`listen`); the \
                     plaintext health-only listener needs a port of its own"
                )));
            }
            if self.metrics.listen.as_ref() == Some(endpoint) {
                return Err(ConfigError::Invalid(format!(
                    "health.listen = {endpoint} is also metrics.listen; give each its own port"
                )));
            }
        }
        let requires = &self.health.ready_requires;
        for (i, name) in requires.iter().enumerate() {
            if !dpu_proto::SERVICE_NAMES.contains(&name.as_str()) {
                return Err(ConfigError::Invalid(format!(
                    "health.ready_requires: {name:?} is not a service; one of {}",
                    dpu_proto::SERVICE_NAMES.join(", ")
                )));
            }
            if requires[..i].contains(name) {
                return Err(ConfigError::Invalid(format!(
                    "health.ready_requires names {name} twice"
                )));
            }
            if name == "dpu.v1.Storage" && self.storage_disabled() {
                return Err(ConfigError::Invalid(
                    "health.ready_requires names dpu.v1.Storage but storage is disabled \
                     ([storage] backend = \"snap\" with [snap] enabled = false): Storage is \
                     never SERVING without a backend; remove it from the list or enable SNAP"
                        .to_owned(),
                ));
            }
            if name == "dpu.v1.Switch" && !self.ovs.enabled {
                return Err(ConfigError::Invalid(
                    "health.ready_requires names dpu.v1.Switch but ovs.enabled = false: \
                     Switch is never SERVING without OVS, so readiness never would be; \
                     remove it from the list or enable OVS"
                        .to_owned(),
                ));
            }
        }
        Ok(())
    }
}

/// (De)serializes durations as a number of seconds (fractions allowed).
mod seconds {
    use serde::{Deserialize, Deserializer, Serializer};
    use std::time::Duration;

    pub(super) fn serialize<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_f64(d.as_secs_f64())
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
        let secs = f64::deserialize(d)?;
        Duration::try_from_secs_f64(secs).map_err(|_| {
            serde::de::Error::custom(format!("{secs} is not a valid number of seconds"))
        })
    }
}

/// (De)serializes a list of values as their text forms (`Display` / `FromStr`): listeners
/// (`unix:PATH`) and export ports (`tcp:ADDR:PORT`), refused at load when one does not parse.
mod text_list {
    use std::fmt::Display;
    use std::str::FromStr;

    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    pub(super) fn serialize<T: Display, S: Serializer>(v: &[T], s: S) -> Result<S::Ok, S::Error> {
        v.iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .serialize(s)
    }

    pub(super) fn deserialize<'de, T, D>(d: D) -> Result<Vec<T>, D::Error>
    where
        T: FromStr,
        T::Err: Display,
        D: Deserializer<'de>,
    {
        Vec::<String>::deserialize(d)?
            .iter()
            .map(|s| s.parse().map_err(serde::de::Error::custom))
            .collect()
    }
}

mod optional_endpoint {
    use dpu_proto::Endpoint;
    use serde::{Deserialize, Deserializer, Serializer};

    pub(super) fn serialize<S: Serializer>(v: &Option<Endpoint>, s: S) -> Result<S::Ok, S::Error> {
        match v {
            Some(e) => s.serialize_str(&e.to_string()),
            None => s.serialize_none(),
        }
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(
        d: D,
    ) -> Result<Option<Endpoint>, D::Error> {
        let text = String::deserialize(d)?;
        text.parse().map(Some).map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn packaged_example_config_parses_and_matches_defaults_where_unset() {
        let text = include_str!("../config/config.toml");
        let config = Config::from_toml(text).expect("packaged config must parse");
        assert_eq!(config.snap.socket, PathBuf::from("/var/tmp/spdk.sock"));
        config.validate().expect("packaged config must validate");
    }

    #[test]
    fn unknown_keys_are_rejected_and_named() {
        let err = Config::from_toml("[snap]\nsockett = \"/x\"\n").expect_err("typo");
        assert!(err.to_string().contains("sockett"), "{err}");
        let err = Config::from_toml("listen = [\"http://x\"]\n").expect_err("bad endpoint");
        assert!(err.to_string().contains("unknown scheme"), "{err}");
    }

    #[test]
    fn validation_rejects_duplicates_and_zero_timeouts() {
        let config =
            Config::from_toml("listen = [\"unix:/a.sock\", \"unix:/a.sock\"]\n").expect("parse");
        assert!(config.validate().is_err());
        let config = Config::from_toml("[snap]\ncall_timeout = 0\n").expect("parse");
        let err = config.validate().expect_err("zero timeout");
        assert!(err.to_string().contains("snap.call_timeout"), "{err}");
    }

    #[test]
    fn counter_placement_is_checked_and_bad_values_name_the_field() {
        let config =
            Config::from_toml("[counters]\ncpus = \"0\"\npriority = \"high\"\n").expect("parse");
        config.validate().expect("valid placement");
        let placement = config.counters.placement().expect("placement");
        assert_eq!(placement.cpus.expect("cpus").cpus(), [0]);
        for (text, wanted) in [
            ("cpus = \"0-x\"", "\"0-x\""),
            ("priority = \"urgent\"", "\"urgent\""),
            ("window_bound = 0", "window_bound"),
        ] {
            let config = Config::from_toml(&format!("[counters]\n{text}\n")).expect("parse");
            let err = config.validate().expect_err(text).to_string();
            assert!(
                err.contains("[counters]") && err.contains(wanted),
                "{text}: {err}"
            );
        }
    }

    #[test]
    fn effective_config_round_trips_through_toml() {
        let config = Config::default();
        let text = toml::to_string(&config).expect("serialize");
        assert_eq!(Config::from_toml(&text).expect("parse"), config);
    }
}
