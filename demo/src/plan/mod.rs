//! The `--plan FILE` of `dpuctl demo training-storage`: one TOML file that says where the
//! storage is, which nodes must talk RDMA, what to train, merge and serve, and what to
//! compare the result with. It is read in three steps so that a user fixing a plan sees
//! every problem at once rather than one per run:
//!
//! 1. [`Plan::parse`]: TOML syntax, unknown keys (every table denies them, so a typo is an
//!    error instead of a silently ignored setting) and types, reported with line/column;
//! 2. [`Plan::validate`]: every semantic rule, all problems collected, each with its key path;
//! 3. [`Plan::load`]: both of the above plus reading `storage.manifest_file`, with the
//!    validation errors located back in the file.
//!
//! Relative local paths are resolved against the plan file's directory, so a plan works
//! from whatever directory `dpuctl` is started in. Paths that live on the cluster nodes
//! (`storage.mount_point`, `storage.shared_path`, `serving.model_path`) must be absolute.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use serde::{Deserialize, Serialize};

pub mod error;
mod load;
mod spans;
pub(super) mod validate;

pub use self::error::{PlanError, PlanErrors};

/// A whole plan, after parsing and path resolution.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Plan {
    /// Which cluster and namespace (kubernetes executor only).
    #[serde(default)]
    pub cluster: ClusterSection,
    /// Where the steps run.
    pub executor: ExecutorSection,
    /// The DPU-exposed disk and the files that must be on it (course 12.1).
    pub storage: StorageSection,
    /// The NCCL check between the nodes (course 12.1).
    pub communication: CommunicationSection,
    /// The distributed fine-tune (course 12.2).
    pub training: TrainingSection,
    /// Merging the adapter and fingerprinting the result (course 12.2).
    pub merge: MergeSection,
    /// vLLM behind HTTPS and the archived answers to compare with (course 12.3).
    pub serving: ServingSection,
    /// What to remove at the end (course 12.4).
    #[serde(default)]
    pub cleanup: CleanupSection,
    /// Per-step command overrides for the local executor.
    #[serde(default)]
    pub local: LocalSection,
}

/// `[cluster]`: kube client settings; every field falls back to what `kubectl` would use.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ClusterSection {
    /// Kubeconfig file; absent: `$KUBECONFIG` or `~/.kube/config`, as kubectl does.
    pub kubeconfig: Option<PathBuf>,
    /// Kubeconfig context; absent: the current context.
    pub context: Option<String>,
    /// Namespace for every object the demo creates.
    #[serde(default = "default_namespace")]
    pub namespace: String,
}

impl Default for ClusterSection {
    fn default() -> Self {
        Self {
            kubeconfig: None,
            context: None,
            namespace: default_namespace(),
        }
    }
}

/// `[executor]`: a flat struct with a `kind` rather than a tagged enum, because serde's
/// internally tagged enums lose the positions that make TOML errors findable.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ExecutorSection {
    /// Where the steps run.
    pub kind: ExecutorKind,
    /// Working directory for logs and local steps; required for `local`.
    pub work_dir: Option<PathBuf>,
}

/// Where the training, merge and serving steps run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ExecutorKind {
    /// Processes on this machine: rehearsals and CI without a cluster.
    Local,
    /// Kubeflow and Deployments on a Kubernetes cluster: the real demo.
    Kubernetes,
}

/// `[storage]`: the disk the DPU exposes to the host and what must be on it.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct StorageSection {
    /// The dpu-agent endpoint (`unix:PATH` or `tcp:HOST:PORT`), as `dpuctl --agent` takes.
    pub agent: String,
    /// The exposure id (`exposures/{id}`) made by `dpuctl storage expose --id`.
    pub exposure: String,
    /// What the exposure must be, as the agent's `ExposureSpec` in proto3 JSON names
    /// (`remote = { transport = "NVME_TRANSPORT_RDMA", traddr = ..., subnqn = ... }`,
    /// `subsystemNqn`, `function = { pfVf = { pfIndex = 0 } }`): the storage step applies
    /// it (idempotent: the same spec again changes nothing). Absent: the exposure must
    /// already exist.
    pub exposure_spec: Option<serde_json::Value>,
    /// The DPU-side volume (`volumes/{bdev}`) whose counters account the reads; absent:
    /// the one behind the exposure.
    pub volume: Option<String>,
    /// Where the exposed disk is mounted on the nodes; manifest paths are relative to it.
    pub mount_point: PathBuf,
    /// The directory the jobs and vLLM see (mounted into pods at the same path).
    pub shared_path: PathBuf,
    /// Files that must be on the disk, inline.
    #[serde(default)]
    pub manifest: Vec<ManifestEntry>,
    /// Or a manifest.json (`{"files": [...]}`, as examples/demo/make_samples.py writes).
    pub manifest_file: Option<PathBuf>,
}

/// One file the demo checks before training: present, of this size and content.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ManifestEntry {
    /// Relative to `storage.mount_point`, without `..`.
    pub path: PathBuf,
    /// Exact size in bytes.
    pub bytes: u64,
    /// SHA-256 of the content, 64 lowercase hex digits.
    pub sha256: String,
}

/// The shape of a manifest.json file.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ManifestFile {
    /// The files, same fields as `[[storage.manifest]]`.
    pub files: Vec<ManifestEntry>,
}

/// `[communication]`: the NCCL gate that must see RDMA before any GPU hour is spent.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct CommunicationSection {
    /// Node names (Kubernetes node names for the kubernetes executor).
    pub nodes: Vec<String>,
    /// The nccl-tests command, as an argv vector (never through a shell).
    pub nccl_tests: Vec<String>,
    /// Lowest acceptable nccl-tests "Avg bus bandwidth", in GB/s.
    pub min_busbw_gbps: Option<f64>,
    /// The RDMA device NCCL must use (becomes `NCCL_IB_HCA`).
    pub rdma_device: Option<String>,
}

/// `[training]`: the distributed fine-tune.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct TrainingSection {
    /// Which Kubeflow API to create.
    pub api: TrainingApi,
    /// Container image.
    pub image: String,
    /// The training command, as an argv vector.
    pub command: Vec<String>,
    /// Number of nodes (PyTorchJob: 1 Master + workers-1 Workers; TrainJob: numNodes).
    pub workers: u32,
    /// GPUs per worker (also the processes per node).
    #[serde(default = "one")]
    pub gpus_per_worker: u32,
    /// The RDMA device-plugin resource (e.g. `rdma/rdma_shared_device_a`); required for
    /// the kubernetes executor, where a pod without it has no `/dev/infiniband`.
    pub rdma_resource: Option<String>,
    /// How many of `rdma_resource` each worker requests.
    #[serde(default = "one")]
    pub rdma_per_worker: u32,
    /// Longest the job may run (humantime, e.g. "30m").
    pub timeout: HumanDuration,
    /// Extra environment for the training containers.
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// TrainJob only: the (Cluster)TrainingRuntime to use.
    pub runtime_ref: Option<String>,
}

/// The Kubeflow training API.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum TrainingApi {
    /// Training Operator v1, `kubeflow.org/v1` PyTorchJob.
    PyTorchJob,
    /// Trainer v2, `trainer.kubeflow.org/v1alpha1` TrainJob.
    TrainJob,
}

/// `[merge]`: merging the adapter and comparing its fingerprint with the archived one.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct MergeSection {
    /// The merge command, as an argv vector.
    pub command: Vec<String>,
    /// The fingerprint.json the merge writes.
    pub fingerprint: PathBuf,
    /// The archived fingerprint.json of a known-good run.
    pub archive: PathBuf,
    /// Relative tolerance of the numeric comparison, 0 < x < 1 (merged QLoRA weights are
    /// not bit-identical between runs).
    pub rel_tolerance: f64,
}

/// `[serving]`: vLLM replicas and the answers they must give.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ServingSection {
    /// vLLM container image.
    pub image: String,
    /// Replicas behind the Service (the course uses 2).
    #[serde(default = "two")]
    pub replicas: u32,
    /// GPUs per replica; 0 requests none (CPU builds of vLLM).
    #[serde(default = "one")]
    pub gpus_per_replica: u32,
    /// The served model name clients ask for (`--served-model-name`).
    pub model: String,
    /// Where the merged model is on the nodes (the positional `vllm serve` argument).
    pub model_path: PathBuf,
    /// Name of the Deployment, Service and Ingress.
    pub service_name: String,
    /// Service port.
    #[serde(default = "default_service_port")]
    pub port: u16,
    /// Public HTTPS URL; absent: `https://{ingress_host}/`.
    pub url: Option<String>,
    /// Host name for the Ingress; absent: no Ingress is created.
    pub ingress_host: Option<String>,
    /// IngressClass; absent: the cluster default.
    pub ingress_class: Option<String>,
    /// TLS Secret for the Ingress; absent: `{service_name}-tls`.
    pub tls_secret: Option<String>,
    /// Extra `vllm serve` arguments (e.g. `--max-model-len 4096`).
    #[serde(default)]
    pub extra_args: Vec<String>,
    /// Archived question/answer pairs the served model must reproduce.
    #[serde(default)]
    pub answers: Vec<Answer>,
}

/// One archived answer, compared fuzzily because vLLM output is not reproducible byte for
/// byte (docs/reference/demo-ecosystem.md §3.4).
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Answer {
    /// The prompt sent.
    pub prompt: String,
    /// The archived answer text.
    pub expect: String,
    /// Lowest acceptable similarity, 0 < x <= 1.
    pub min_similarity: f64,
}

/// `[cleanup]`: what the review step removes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct CleanupSection {
    /// Delete the training job at the end.
    #[serde(default = "yes")]
    pub delete_jobs: bool,
    /// Leave vLLM serving (the course ends with a serving endpoint).
    #[serde(default = "yes")]
    pub keep_serving: bool,
}

impl Default for CleanupSection {
    fn default() -> Self {
        Self {
            delete_jobs: true,
            keep_serving: true,
        }
    }
}

/// `[local]`: argv overrides for the local executor, e.g. a small CPU stand-in for the
/// fine-tune, or a stub that speaks the OpenAI API instead of vLLM.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct LocalSection {
    /// Replaces `training.command`.
    pub train: Option<Vec<String>>,
    /// Replaces `merge.command`.
    pub merge: Option<Vec<String>>,
    /// Starts the OpenAI-compatible server instead of `vllm serve`.
    pub serve: Option<Vec<String>>,
    /// Where that server answers; absent: `http://127.0.0.1:{serving.port}`.
    pub serve_url: Option<String>,
}

/// A duration written the humantime way ("30m", "1h 30m"), checked while parsing so the
/// error carries the value's position.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HumanDuration(pub Duration);

/// Written back the way it is read, so a resolved plan can be printed as TOML.
impl Serialize for HumanDuration {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&humantime::format_duration(self.0).to_string())
    }
}

impl<'de> Deserialize<'de> for HumanDuration {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        humantime::parse_duration(&text).map(Self).map_err(|e| {
            serde::de::Error::custom(format!(
                "invalid duration {text:?}: {e} (expected e.g. \"30m\" or \"1h 30m\")"
            ))
        })
    }
}

impl Plan {
    /// The URL the serving checks talk to, for the chosen executor.
    pub fn serving_url(&self) -> Option<String> {
        match self.executor.kind {
            ExecutorKind::Local => Some(
                self.local
                    .serve_url
                    .clone()
                    .unwrap_or_else(|| format!("http://127.0.0.1:{}", self.serving.port)),
            ),
            ExecutorKind::Kubernetes => self.serving.url.clone().or_else(|| {
                self.serving
                    .ingress_host
                    .as_ref()
                    .map(|host| format!("https://{host}/"))
            }),
        }
    }

    /// The Ingress TLS Secret name.
    pub fn tls_secret(&self) -> String {
        self.serving
            .tls_secret
            .clone()
            .unwrap_or_else(|| format!("{}-tls", self.serving.service_name))
    }
}

/// Kubernetes' own default namespace, so a plan without `[cluster]` does what kubectl does.
fn default_namespace() -> String {
    "default".to_owned()
}

/// Serde default helper for counts that default to one.
const fn one() -> u32 {
    1
}

/// Serde default helper: the course serves two replicas.
const fn two() -> u32 {
    2
}

/// Serde default helper for booleans that default to true.
const fn yes() -> bool {
    true
}

/// vLLM's own port, so the Service, probe and container agree unless told otherwise.
const fn default_service_port() -> u16 {
    8000
}

#[cfg(test)]
pub mod tests;
