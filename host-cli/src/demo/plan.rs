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
use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::plan_spans;

/// A whole plan, after parsing and path resolution.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Plan {
    /// Which cluster and namespace (kubernetes executor only).
    #[serde(default)]
    pub(crate) cluster: ClusterSection,
    /// Where the steps run.
    pub(crate) executor: ExecutorSection,
    /// The DPU-exposed disk and the files that must be on it (course 12.1).
    pub(crate) storage: StorageSection,
    /// The NCCL check between the nodes (course 12.1).
    pub(crate) communication: CommunicationSection,
    /// The distributed fine-tune (course 12.2).
    pub(crate) training: TrainingSection,
    /// Merging the adapter and fingerprinting the result (course 12.2).
    pub(crate) merge: MergeSection,
    /// vLLM behind HTTPS and the archived answers to compare with (course 12.3).
    pub(crate) serving: ServingSection,
    /// What to remove at the end (course 12.4).
    #[serde(default)]
    pub(crate) cleanup: CleanupSection,
    /// Per-step command overrides for the local executor.
    #[serde(default)]
    pub(crate) local: LocalSection,
}

/// `[cluster]`: kube client settings; every field falls back to what `kubectl` would use.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ClusterSection {
    /// Kubeconfig file; absent: `$KUBECONFIG` or `~/.kube/config`, as kubectl does.
    pub(crate) kubeconfig: Option<PathBuf>,
    /// Kubeconfig context; absent: the current context.
    pub(crate) context: Option<String>,
    /// Namespace for every object the demo creates.
    #[serde(default = "default_namespace")]
    pub(crate) namespace: String,
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
pub(crate) struct ExecutorSection {
    /// Where the steps run.
    pub(crate) kind: ExecutorKind,
    /// Working directory for logs and local steps; required for `local`.
    pub(crate) work_dir: Option<PathBuf>,
}

/// Where the training, merge and serving steps run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum ExecutorKind {
    /// Processes on this machine: rehearsals and CI without a cluster.
    Local,
    /// Kubeflow and Deployments on a Kubernetes cluster: the real demo.
    Kubernetes,
}

/// `[storage]`: the disk the DPU exposes to the host and what must be on it.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct StorageSection {
    /// The dpu-agent endpoint (`unix:PATH` or `tcp:HOST:PORT`), as `dpuctl --agent` takes.
    pub(crate) agent: String,
    /// The exposure id (`exposures/{id}`) made by `dpuctl storage expose --id`.
    pub(crate) exposure: String,
    /// What the exposure must be, as the agent's `ExposureSpec` in proto3 JSON names
    /// (`remote = { transport = "NVME_TRANSPORT_RDMA", traddr = ..., subnqn = ... }`,
    /// `subsystemNqn`, `function = { pfVf = { pfIndex = 0 } }`): the storage step applies
    /// it (idempotent: the same spec again changes nothing). Absent: the exposure must
    /// already exist.
    pub(crate) exposure_spec: Option<serde_json::Value>,
    /// The DPU-side volume (`volumes/{bdev}`) whose counters account the reads; absent:
    /// the one behind the exposure.
    pub(crate) volume: Option<String>,
    /// Where the exposed disk is mounted on the nodes; manifest paths are relative to it.
    pub(crate) mount_point: PathBuf,
    /// The directory the jobs and vLLM see (mounted into pods at the same path).
    pub(crate) shared_path: PathBuf,
    /// Files that must be on the disk, inline.
    #[serde(default)]
    pub(crate) manifest: Vec<ManifestEntry>,
    /// Or a manifest.json (`{"files": [...]}`, as examples/demo/make_samples.py writes).
    pub(crate) manifest_file: Option<PathBuf>,
}

/// One file the demo checks before training: present, of this size and content.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ManifestEntry {
    /// Relative to `storage.mount_point`, without `..`.
    pub(crate) path: PathBuf,
    /// Exact size in bytes.
    pub(crate) bytes: u64,
    /// SHA-256 of the content, 64 lowercase hex digits.
    pub(crate) sha256: String,
}

/// The shape of a manifest.json file.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ManifestFile {
    /// The files, same fields as `[[storage.manifest]]`.
    pub(crate) files: Vec<ManifestEntry>,
}

/// A manifest.json as tools write it: the three fields the check needs, and whatever
/// else the writer records (`records`, `total_bytes`, ...) ignored. Inline plan entries
/// stay strict; a file made by another program may carry more.
#[derive(Debug, Deserialize)]
struct LenientManifestFile {
    files: Vec<LenientManifestEntry>,
}

/// One entry of a [`LenientManifestFile`].
#[derive(Debug, Deserialize)]
struct LenientManifestEntry {
    path: PathBuf,
    bytes: u64,
    sha256: String,
}

/// `[communication]`: the NCCL gate that must see RDMA before any GPU hour is spent.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct CommunicationSection {
    /// Node names (Kubernetes node names for the kubernetes executor).
    pub(crate) nodes: Vec<String>,
    /// The nccl-tests command, as an argv vector (never through a shell).
    pub(crate) nccl_tests: Vec<String>,
    /// Lowest acceptable nccl-tests "Avg bus bandwidth", in GB/s.
    pub(crate) min_busbw_gbps: Option<f64>,
    /// The RDMA device NCCL must use (becomes `NCCL_IB_HCA`).
    pub(crate) rdma_device: Option<String>,
}

/// `[training]`: the distributed fine-tune.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct TrainingSection {
    /// Which Kubeflow API to create.
    pub(crate) api: TrainingApi,
    /// Container image.
    pub(crate) image: String,
    /// The training command, as an argv vector.
    pub(crate) command: Vec<String>,
    /// Number of nodes (PyTorchJob: 1 Master + workers-1 Workers; TrainJob: numNodes).
    pub(crate) workers: u32,
    /// GPUs per worker (also the processes per node).
    #[serde(default = "one")]
    pub(crate) gpus_per_worker: u32,
    /// The RDMA device-plugin resource (e.g. `rdma/rdma_shared_device_a`); required for
    /// the kubernetes executor, where a pod without it has no `/dev/infiniband`.
    pub(crate) rdma_resource: Option<String>,
    /// How many of `rdma_resource` each worker requests.
    #[serde(default = "one")]
    pub(crate) rdma_per_worker: u32,
    /// Longest the job may run (humantime, e.g. "30m").
    pub(crate) timeout: HumanDuration,
    /// Extra environment for the training containers.
    #[serde(default)]
    pub(crate) env: BTreeMap<String, String>,
    /// TrainJob only: the (Cluster)TrainingRuntime to use.
    pub(crate) runtime_ref: Option<String>,
}

/// The Kubeflow training API.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum TrainingApi {
    /// Training Operator v1, `kubeflow.org/v1` PyTorchJob.
    PyTorchJob,
    /// Trainer v2, `trainer.kubeflow.org/v1alpha1` TrainJob.
    TrainJob,
}

/// `[merge]`: merging the adapter and comparing its fingerprint with the archived one.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct MergeSection {
    /// The merge command, as an argv vector.
    pub(crate) command: Vec<String>,
    /// The fingerprint.json the merge writes.
    pub(crate) fingerprint: PathBuf,
    /// The archived fingerprint.json of a known-good run.
    pub(crate) archive: PathBuf,
    /// Relative tolerance of the numeric comparison, 0 < x < 1 (merged QLoRA weights are
    /// not bit-identical between runs).
    pub(crate) rel_tolerance: f64,
}

/// `[serving]`: vLLM replicas and the answers they must give.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ServingSection {
    /// vLLM container image.
    pub(crate) image: String,
    /// Replicas behind the Service (the course uses 2).
    #[serde(default = "two")]
    pub(crate) replicas: u32,
    /// GPUs per replica; 0 requests none (CPU builds of vLLM).
    #[serde(default = "one")]
    pub(crate) gpus_per_replica: u32,
    /// The served model name clients ask for (`--served-model-name`).
    pub(crate) model: String,
    /// Where the merged model is on the nodes (the positional `vllm serve` argument).
    pub(crate) model_path: PathBuf,
    /// Name of the Deployment, Service and Ingress.
    pub(crate) service_name: String,
    /// Service port.
    #[serde(default = "default_service_port")]
    pub(crate) port: u16,
    /// Public HTTPS URL; absent: `https://{ingress_host}/`.
    pub(crate) url: Option<String>,
    /// Host name for the Ingress; absent: no Ingress is created.
    pub(crate) ingress_host: Option<String>,
    /// IngressClass; absent: the cluster default.
    pub(crate) ingress_class: Option<String>,
    /// TLS Secret for the Ingress; absent: `{service_name}-tls`.
    pub(crate) tls_secret: Option<String>,
    /// Extra `vllm serve` arguments (e.g. `--max-model-len 4096`).
    #[serde(default)]
    pub(crate) extra_args: Vec<String>,
    /// Archived question/answer pairs the served model must reproduce.
    #[serde(default)]
    pub(crate) answers: Vec<Answer>,
}

/// One archived answer, compared fuzzily because vLLM output is not reproducible byte for
/// byte (shared/reference/demo-ecosystem.md §3.4).
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Answer {
    /// The prompt sent.
    pub(crate) prompt: String,
    /// The archived answer text.
    pub(crate) expect: String,
    /// Lowest acceptable similarity, 0 < x <= 1.
    pub(crate) min_similarity: f64,
}

/// `[cleanup]`: what the review step removes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct CleanupSection {
    /// Delete the training job at the end.
    #[serde(default = "yes")]
    pub(crate) delete_jobs: bool,
    /// Leave vLLM serving (the course ends with a serving endpoint).
    #[serde(default = "yes")]
    pub(crate) keep_serving: bool,
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
pub(crate) struct LocalSection {
    /// Replaces `training.command`.
    pub(crate) train: Option<Vec<String>>,
    /// Replaces `merge.command`.
    pub(crate) merge: Option<Vec<String>>,
    /// Starts the OpenAI-compatible server instead of `vllm serve`.
    pub(crate) serve: Option<Vec<String>>,
    /// Where that server answers; absent: `http://127.0.0.1:{serving.port}`.
    pub(crate) serve_url: Option<String>,
}

/// A duration written the humantime way ("30m", "1h 30m"), checked while parsing so the
/// error carries the value's position.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct HumanDuration(pub(crate) Duration);

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

/// One problem with a plan: where (key path and, when known, line/column) and what is
/// wrong and expected. A list of these is the whole answer to "why was my plan refused".
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(crate) struct PlanError {
    /// TOML key path, e.g. `storage.manifest[2].sha256`; empty for the file as a whole.
    pub(crate) key: String,
    /// What is wrong and what is expected.
    pub(crate) message: String,
    /// 1-based line in the plan file, when known.
    pub(crate) line: Option<usize>,
    /// 1-based column (in characters), when known.
    pub(crate) column: Option<usize>,
}

impl PlanError {
    /// An error about `key` without a position yet ([`Plan::load`] adds it).
    pub(crate) fn new(key: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            key: key.into(),
            message: message.into(),
            line: None,
            column: None,
        }
    }
}

impl fmt::Display for PlanError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let (Some(line), Some(column)) = (self.line, self.column) {
            write!(f, "{line}:{column}: ")?;
        }
        if !self.key.is_empty() {
            write!(f, "{}: ", self.key)?;
        }
        f.write_str(&self.message)
    }
}

/// All problems of one plan file, printable as one error (one line per problem, prefixed
/// with the file name the way compilers do, so editors can jump to them).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct PlanErrors {
    /// The plan file.
    pub(crate) file: PathBuf,
    /// Every problem found, in file order where known.
    pub(crate) errors: Vec<PlanError>,
}

impl fmt::Display for PlanErrors {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let count = self.errors.len();
        write!(
            f,
            "{}: {count} problem{} in the plan",
            self.file.display(),
            if count == 1 { "" } else { "s" }
        )?;
        for error in &self.errors {
            // `file:line:col: ...` when located (what editors jump to), else `file: ...`.
            let sep = if error.line.is_some() { ":" } else { ": " };
            write!(f, "\n  {}{sep}{error}", self.file.display())?;
        }
        Ok(())
    }
}

impl std::error::Error for PlanErrors {}

impl Plan {
    /// Reads, parses and validates a plan file and loads its manifest file: the one call
    /// the command makes. Every problem found is returned, located in the file.
    pub(crate) fn load(path: &Path) -> Result<Self, PlanErrors> {
        Self::load_with(path, true)
    }

    /// [`Plan::load`], optionally without reading `storage.manifest_file`: a dry run
    /// prints the plan on a machine that does not have the disk mounted.
    pub(crate) fn load_with(path: &Path, read_manifest_file: bool) -> Result<Self, PlanErrors> {
        let fail = |errors| PlanErrors {
            file: path.to_path_buf(),
            errors,
        };
        let text = std::fs::read_to_string(path).map_err(|e| {
            fail(vec![PlanError::new(
                "",
                format!("cannot read the plan: {e}"),
            )])
        })?;
        // `plan.toml` has the parent "": resolve against the current directory, made
        // absolute so the resolved paths stay right if the executor changes directory.
        let parent = path
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .unwrap_or_else(|| Path::new("."));
        let base_dir = std::path::absolute(parent).unwrap_or_else(|_| parent.to_path_buf());
        let mut plan = Self::parse(&text, &base_dir).map_err(fail)?;
        let mut errors = plan.validate();
        if errors.is_empty() && read_manifest_file {
            errors = plan.load_manifest_file();
        }
        if errors.is_empty() {
            return Ok(plan);
        }
        plan_spans::locate_all(&text, &mut errors);
        errors.sort_by_key(|e| (e.line.unwrap_or(usize::MAX), e.column.unwrap_or(0)));
        Err(fail(errors))
    }

    /// Parses plan text: syntax, unknown keys and types (the first such problem, which
    /// is all the TOML deserializer can report), with line/column and key path. Relative
    /// local paths are resolved against `base_dir`.
    pub(crate) fn parse(text: &str, base_dir: &Path) -> Result<Self, Vec<PlanError>> {
        let mut plan: Self =
            toml::from_str(text).map_err(|e| vec![plan_spans::from_toml(text, &e)])?;
        plan.resolve_paths(base_dir);
        Ok(plan)
    }

    /// Makes every relative local path absolute against the plan's directory. Node paths
    /// are left alone: validation insists they are absolute.
    fn resolve_paths(&mut self, base_dir: &Path) {
        let resolve = |path: &mut PathBuf| {
            if path.is_relative() {
                *path = base_dir.join(&*path);
            }
        };
        if let Some(path) = self.cluster.kubeconfig.as_mut() {
            resolve(path);
        }
        if let Some(path) = self.executor.work_dir.as_mut() {
            resolve(path);
        }
        if let Some(path) = self.storage.manifest_file.as_mut() {
            resolve(path);
        }
        resolve(&mut self.merge.fingerprint);
        resolve(&mut self.merge.archive);
    }

    /// Reads `storage.manifest_file` into `storage.manifest` (keeping the file name for
    /// reports), checking its entries with the same rules as inline ones.
    pub(crate) fn load_manifest_file(&mut self) -> Vec<PlanError> {
        let Some(path) = self.storage.manifest_file.clone() else {
            return Vec::new();
        };
        let key = "storage.manifest_file";
        let text = match std::fs::read_to_string(&path) {
            Ok(text) => text,
            Err(e) => {
                return vec![PlanError::new(
                    key,
                    format!("cannot read {}: {e}", path.display()),
                )]
            }
        };
        let manifest: ManifestFile = match serde_json::from_str::<LenientManifestFile>(&text) {
            Ok(manifest) => ManifestFile {
                files: manifest
                    .files
                    .into_iter()
                    .map(|e| ManifestEntry {
                        path: e.path,
                        bytes: e.bytes,
                        sha256: e.sha256,
                    })
                    .collect(),
            },
            Err(e) => {
                return vec![PlanError::new(
                    key,
                    format!(
                        "{} is not a manifest ({{\"files\": [{{\"path\", \"bytes\", \
                         \"sha256\"}}]}}): {e}",
                        path.display()
                    ),
                )]
            }
        };
        let errors =
            super::plan_validate::manifest_entries(&format!("{key}.files"), &manifest.files);
        if errors.is_empty() {
            self.storage.manifest = manifest.files;
        }
        errors
    }

    /// Every semantic problem of the plan, each with its key path; empty when valid. Pure:
    /// reads no files (see [`Plan::load_manifest_file`]).
    pub(crate) fn validate(&self) -> Vec<PlanError> {
        super::plan_validate::validate(self)
    }

    /// The URL the serving checks talk to, for the chosen executor.
    pub(crate) fn serving_url(&self) -> Option<String> {
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
    pub(crate) fn tls_secret(&self) -> String {
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
#[path = "plan_tests.rs"]
pub(crate) mod tests;
