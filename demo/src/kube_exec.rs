//! The kubernetes executor of `dpuctl demo training-storage`: creates the objects built by
//! [`super::k8s_objects`], waits for the training job and the vLLM Deployment, and cleans
//! up by label selector. Everything goes through `DynamicObject` with a fixed table of
//! kinds, so PyTorchJob v1 and TrainJob v2 share one code path and no Kubeflow CRD types
//! are compiled in (the TrainJob schema still churns inside v1alpha1;
//! docs/reference/demo-ecosystem.md §1.5, §2.2).
//!
//! Waiting is by polling `get`, not by watching: the Kubeflow SDKs poll as well, polling
//! needs only `get`/`list` RBAC, and every request is bounded by the wait's own deadline,
//! so a failed job or a silent API server can never make the demo hang (the
//! `kubectl wait --for=condition=Succeeded` pitfall, §1.4). The training wait lives in
//! [`super::kube_exec_training`], the pod diagnosis in `kube_exec_diagnose`.

use std::future::Future;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use k8s_openapi::api::apps::v1::Deployment;
use kube::api::{
    Api, ApiResource, DeleteParams, DynamicObject, GroupVersionKind, ListParams, PostParams,
};
use kube::config::{InferConfigError, KubeConfigOptions, Kubeconfig, KubeconfigError};
use kube::{Client, Config};
use serde_json::Value;

use super::k8s_objects::RUN_ID_LABEL;
use super::plan::ClusterSection;

/// How often the waits poll. Short enough that a finished job is noticed within a few
/// seconds, long enough that a 2-hour fine-tune costs the API server a few thousand gets.
const DEFAULT_POLL: Duration = Duration::from_secs(5);

/// Upper bound of one request outside a wait (create, list, delete, log fetch): the API
/// server answers these in milliseconds, so this only catches a dead connection.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);

/// The kinds this executor creates, with their REST plural. A fixed table instead of a
/// discovery round trip: we only ever create objects we built ourselves, and a wrong
/// guessed plural would turn into a confusing 404.
const KINDS: [(&str, &str); 5] = [
    ("PyTorchJob", "pytorchjobs"),
    ("TrainJob", "trainjobs"),
    ("Deployment", "deployments"),
    ("Service", "services"),
    ("Ingress", "ingresses"),
];

/// What cleanup looks for: the training kinds (deleted when `cleanup.delete_jobs`).
const JOB_KINDS: [(&str, &str); 2] = [
    ("kubeflow.org/v1", "PyTorchJob"),
    ("trainer.kubeflow.org/v1alpha1", "TrainJob"),
];

/// The serving kinds, front to back, so traffic stops before the pods go.
const SERVING_KINDS: [(&str, &str); 3] = [
    ("networking.k8s.io/v1", "Ingress"),
    ("v1", "Service"),
    ("apps/v1", "Deployment"),
];

/// Why [`KubeExecutor::connect`] found no cluster to talk to: the kubeconfig file, the
/// context in it, no configuration at all, or the client built from it.
#[derive(Debug, thiserror::Error)]
pub enum ConnectError {
    /// The plan's kubeconfig file could not be read.
    #[error("reading kubeconfig {}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// kube's reason.
        #[source]
        source: KubeconfigError,
    },
    /// The context could not be loaded from the kubeconfig.
    #[error("{what}")]
    Context {
        /// Which context from which file.
        what: String,
        /// kube's reason.
        #[source]
        source: KubeconfigError,
    },
    /// No kubeconfig and no in-cluster service account.
    #[error("no kubeconfig ($KUBECONFIG, ~/.kube/config) and not in a cluster")]
    Infer(#[source] InferConfigError),
    /// The client could not be built from the configuration.
    #[error("building the Kubernetes client")]
    Client(#[source] kube::Error),
}

/// Why a call to the cluster failed, kept typed so the demo can tell "someone else's
/// object is in the way" (refuse, never overwrite) from "the cluster said no".
#[derive(Debug, thiserror::Error)]
pub enum KubeError {
    /// The object is not one of the kinds in the table; a programming error in
    /// `k8s_objects`, reported instead of guessing a plural.
    #[error("cannot create {api_version} {kind}: not a kind the demo knows how to address")]
    UnsupportedKind {
        /// `apiVersion` of the object.
        api_version: String,
        /// `kind` of the object.
        kind: String,
    },
    /// The object lacks a field every object needs.
    #[error("object has no {field}")]
    MissingField {
        /// The JSON path of the missing field.
        field: &'static str,
    },
    /// The object's metadata does not have the Kubernetes shape (e.g. labels that are
    /// not strings); a programming error in `k8s_objects`.
    #[error("{kind} {name}: not a valid Kubernetes object")]
    InvalidObject {
        /// `kind` of the object.
        kind: String,
        /// `metadata.name` of the object.
        name: String,
        /// Why serde refused it.
        #[source]
        source: serde_json::Error,
    },
    /// An object with this name exists; it is never overwritten, because it may belong
    /// to another run or to someone else.
    #[error("{kind} {namespace}/{name} already exists ({}); delete it or choose another run id", owner_text(.owner))]
    AlreadyExists {
        /// Kind of the object.
        kind: String,
        /// Namespace of the object.
        namespace: String,
        /// Name of the object.
        name: String,
        /// Run id label of the existing object, when it has one.
        owner: Option<String>,
    },
    /// The API server refused or the connection failed.
    #[error("{action}")]
    Api {
        /// What was attempted, e.g. `create PyTorchJob ns/name`.
        action: String,
        /// kube-rs's error, with the API server's status when there was one.
        #[source]
        source: kube::Error,
    },
    /// The API server did not answer in time.
    #[error("{action}: no answer within {}s", .after.as_secs())]
    Timeout {
        /// What was attempted.
        action: String,
        /// How long we waited.
        after: Duration,
    },
}

/// Says who owns a conflicting object, for [`KubeError::AlreadyExists`].
fn owner_text(owner: &Option<String>) -> String {
    match owner {
        Some(run) => format!("created by dpuctl run {run}"),
        None => "not created by a dpuctl run".to_owned(),
    }
}

/// The HTTP status of an API error, to tell 404/409 apart from real failures.
pub fn api_code(error: &kube::Error) -> Option<u16> {
    match error {
        kube::Error::Api(status) => Some(status.code),
        _ => None,
    }
}

/// Runs `fut` but gives up at `deadline`: `None` when time ran out. Every request goes
/// through this or `bounded`, so no wait depends on the API server answering.
pub async fn until<T>(deadline: Instant, fut: impl Future<Output = T>) -> Option<T> {
    tokio::time::timeout_at(deadline.into(), fut).await.ok()
}

/// One request outside a wait, bounded by [`REQUEST_TIMEOUT`], with its error typed.
async fn bounded<T>(
    action: impl Fn() -> String,
    fut: impl Future<Output = Result<T, kube::Error>>,
) -> Result<T, KubeError> {
    match tokio::time::timeout(REQUEST_TIMEOUT, fut).await {
        Ok(Ok(value)) => Ok(value),
        Ok(Err(source)) => Err(KubeError::Api {
            action: action(),
            source,
        }),
        Err(_) => Err(KubeError::Timeout {
            action: action(),
            after: REQUEST_TIMEOUT,
        }),
    }
}

/// The [`ApiResource`] of an `apiVersion`/`kind` pair from the `KINDS` table.
pub fn api_resource(api_version: &str, kind: &str) -> Result<ApiResource, KubeError> {
    let unsupported = || KubeError::UnsupportedKind {
        api_version: api_version.to_owned(),
        kind: kind.to_owned(),
    };
    let plural = KINDS
        .iter()
        .find(|(k, _)| *k == kind)
        .map(|(_, plural)| *plural)
        .ok_or_else(unsupported)?;
    let (group, version) = match api_version.split_once('/') {
        Some((group, version)) => (group, version),
        None => ("", api_version),
    };
    if version.is_empty() {
        return Err(unsupported());
    }
    let gvk = GroupVersionKind::gvk(group, version, kind);
    Ok(ApiResource::from_gvk_with_plural(&gvk, plural))
}

/// A client bound to the plan's namespace. Cheap to clone (the kube client is).
#[derive(Clone)]
pub struct KubeExecutor {
    /// The kube-rs client (a real connection, or a mock service in tests).
    pub client: Client,
    /// Namespace of every object the demo creates and watches.
    pub namespace: String,
    /// Pause between polls; tests shorten it so they finish in milliseconds.
    pub poll: Duration,
}

impl std::fmt::Debug for KubeExecutor {
    /// The client has no useful Debug; the namespace is what identifies an executor.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KubeExecutor")
            .field("namespace", &self.namespace)
            .field("poll", &self.poll)
            .finish_non_exhaustive()
    }
}

impl KubeExecutor {
    /// Connects the way kubectl would: the plan's kubeconfig file and context when given,
    /// otherwise `$KUBECONFIG`/`~/.kube/config` with its current context, or the
    /// in-cluster service account.
    pub async fn connect(cluster: &ClusterSection) -> Result<Self, ConnectError> {
        let options = KubeConfigOptions {
            context: cluster.context.clone(),
            ..KubeConfigOptions::default()
        };
        let loading = |source| ConnectError::Context {
            what: kubeconfig_context(cluster.kubeconfig.as_ref(), &cluster.context),
            source,
        };
        let config = match (&cluster.kubeconfig, &cluster.context) {
            (Some(path), _) => {
                let kubeconfig =
                    Kubeconfig::read_from(path).map_err(|source| ConnectError::Read {
                        path: path.clone(),
                        source,
                    })?;
                Config::from_custom_kubeconfig(kubeconfig, &options)
                    .await
                    .map_err(loading)?
            }
            (None, Some(_)) => Config::from_kubeconfig(&options).await.map_err(loading)?,
            (None, None) => Config::infer().await.map_err(ConnectError::Infer)?,
        };
        let client = Client::try_from(config).map_err(ConnectError::Client)?;
        Ok(Self::with_client(client, &cluster.namespace))
    }

    /// An executor over any client: tests pass one backed by a tower-test mock service.
    pub fn with_client(client: Client, namespace: &str) -> Self {
        Self {
            client,
            namespace: namespace.to_owned(),
            poll: DEFAULT_POLL,
        }
    }

    /// Changes the poll interval (tests use milliseconds).
    pub fn with_poll_interval(mut self, poll: Duration) -> Self {
        self.poll = poll;
        self
    }

    /// A dynamic API for one of the table's kinds in our namespace.
    pub fn dynamic_api(
        &self,
        api_version: &str,
        kind: &str,
    ) -> Result<Api<DynamicObject>, KubeError> {
        let resource = api_resource(api_version, kind)?;
        Ok(Api::namespaced_with(
            self.client.clone(),
            &self.namespace,
            &resource,
        ))
    }

    /// Creates `object` (a value from `k8s_objects`) in the executor's namespace (the
    /// plan's, which `k8s_objects` also writes into the metadata) and returns `Kind/name`
    /// for the progress line. Create, not apply: an existing object with the same name is
    /// reported as [`KubeError::AlreadyExists`] with its run label, never replaced,
    /// because silently adopting another run's job would mix two runs' results.
    pub async fn apply(&self, object: &Value) -> Result<String, KubeError> {
        let field = |path: &'static str, value: Option<&Value>| {
            value
                .and_then(Value::as_str)
                .map(str::to_owned)
                .ok_or(KubeError::MissingField { field: path })
        };
        let api_version = field("apiVersion", object.get("apiVersion"))?;
        let kind = field("kind", object.get("kind"))?;
        let name = field("metadata.name", object.pointer("/metadata/name"))?;
        let api = self.dynamic_api(&api_version, &kind)?;
        let dynamic: DynamicObject =
            serde_json::from_value(object.clone()).map_err(|source| KubeError::InvalidObject {
                kind: kind.clone(),
                name: name.clone(),
                source,
            })?;
        let action = || format!("create {kind} {}/{name}", self.namespace);
        match tokio::time::timeout(
            REQUEST_TIMEOUT,
            api.create(&PostParams::default(), &dynamic),
        )
        .await
        {
            Ok(Ok(_)) => Ok(format!("{kind}/{name}")),
            Ok(Err(source)) if api_code(&source) == Some(409) => {
                // Best effort: the run label makes the message actionable; a failed get
                // still leaves the conflict itself to report.
                let owner = tokio::time::timeout(REQUEST_TIMEOUT, api.get(&name))
                    .await
                    .ok()
                    .and_then(Result::ok)
                    .and_then(|existing| existing.metadata.labels?.remove(RUN_ID_LABEL));
                Err(KubeError::AlreadyExists {
                    kind,
                    namespace: self.namespace.clone(),
                    name,
                    owner,
                })
            }
            Ok(Err(source)) => Err(KubeError::Api {
                action: action(),
                source,
            }),
            Err(_) => Err(KubeError::Timeout {
                action: action(),
                after: REQUEST_TIMEOUT,
            }),
        }
    }

    /// Waits until the Deployment has `replicas` available replicas and returns the
    /// seconds it took. Gives up early when the Deployment reports
    /// `ProgressDeadlineExceeded` (it will not become ready by itself). The error is a
    /// sentence for the demo's report.
    pub async fn wait_deployment_ready(
        &self,
        name: &str,
        replicas: u32,
        timeout: Duration,
    ) -> Result<f64, String> {
        let api: Api<Deployment> = Api::namespaced(self.client.clone(), &self.namespace);
        let started = Instant::now();
        let deadline = started + timeout;
        let mut last = String::from("not found yet");
        loop {
            match until(deadline, api.get_opt(name)).await {
                Some(Ok(Some(deployment))) => {
                    let status = deployment.status.unwrap_or_default();
                    let available = status.available_replicas.unwrap_or(0);
                    if i64::from(available) >= i64::from(replicas) {
                        return Ok(started.elapsed().as_secs_f64());
                    }
                    let stuck = status.conditions.unwrap_or_default().into_iter().find(|c| {
                        c.type_.as_deref() == Some("Progressing")
                            && c.status.as_deref() == Some("False")
                            && c.reason.as_deref() == Some("ProgressDeadlineExceeded")
                    });
                    if let Some(condition) = stuck {
                        return Err(format!(
                            "deployment {name}: {available}/{replicas} replicas available and \
                             progress deadline exceeded: {}",
                            condition.message.unwrap_or_default()
                        ));
                    }
                    last = format!("{available}/{replicas} replicas available");
                }
                Some(Ok(None)) => last = String::from("not found"),
                Some(Err(error)) => last = format!("API error: {error}"),
                None => {}
            }
            let now = Instant::now();
            if now >= deadline {
                return Err(format!(
                    "deployment {name} not ready after {}s: {last}",
                    timeout.as_secs()
                ));
            }
            tokio::time::sleep(self.poll.min(deadline - now)).await;
        }
    }

    /// Deletes a run's objects by label selector: the training jobs when `delete_jobs`
    /// (the operators then delete their pods), the serving objects unless
    /// `keep_serving`. Returns `Kind/name` of each deleted object. A kind whose CRD is
    /// not installed (404 on list) is skipped, so one cleanup serves v1 and v2 clusters.
    pub async fn cleanup(
        &self,
        run_selector: &str,
        delete_jobs: bool,
        keep_serving: bool,
    ) -> Result<Vec<String>, KubeError> {
        let mut kinds = Vec::new();
        if delete_jobs {
            kinds.extend(JOB_KINDS);
        }
        if !keep_serving {
            kinds.extend(SERVING_KINDS);
        }
        let mut deleted = Vec::new();
        for (api_version, kind) in kinds {
            let api = self.dynamic_api(api_version, kind)?;
            let params = ListParams::default().labels(run_selector);
            let listed = match tokio::time::timeout(REQUEST_TIMEOUT, api.list(&params)).await {
                Ok(Ok(list)) => list,
                Ok(Err(source)) if api_code(&source) == Some(404) => continue,
                Ok(Err(source)) => {
                    return Err(KubeError::Api {
                        action: format!("list {kind} -l {run_selector}"),
                        source,
                    })
                }
                Err(_) => {
                    return Err(KubeError::Timeout {
                        action: format!("list {kind} -l {run_selector}"),
                        after: REQUEST_TIMEOUT,
                    })
                }
            };
            for object in listed.items {
                let Some(name) = object.metadata.name else {
                    continue;
                };
                let action = || format!("delete {kind} {}/{name}", self.namespace);
                let result = bounded(action, api.delete(&name, &DeleteParams::background())).await;
                match result {
                    Ok(_) => deleted.push(format!("{kind}/{name}")),
                    Err(KubeError::Api { source, .. }) if api_code(&source) == Some(404) => {}
                    Err(error) => return Err(error),
                }
            }
        }
        Ok(deleted)
    }
}

/// Names the kubeconfig and context in a connect error.
fn kubeconfig_context(path: Option<&PathBuf>, context: &Option<String>) -> String {
    let file = path.map_or_else(
        || "the default kubeconfig".to_owned(),
        |p| p.display().to_string(),
    );
    match context {
        Some(context) => format!("loading context {context} from {file}"),
        None => format!("loading the current context from {file}"),
    }
}
