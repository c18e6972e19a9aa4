//! The Kubernetes objects the kubernetes executor creates, built as plain JSON values from
//! a validated [`Plan`]. Pure functions: the executor hands them to kube-rs as
//! `DynamicObject` data (one code path for PyTorchJob v1 and TrainJob v2, whose schema
//! still churns inside v1alpha1), `--dry-run` prints them as YAML, and the tests check
//! them without a cluster. Field names and defaults follow
//! docs/reference/demo-ecosystem.md §1 (Kubeflow) and §3 (vLLM).
//!
//! Storage reaches the pods as a `hostPath` of `storage.shared_path`, mounted at the same
//! path, rather than a PVC: the DPU exposes the NVMe-oF namespace to each *host* as a local
//! disk that the host mounts, so the data is already a node-local path and a PV would
//! only restate it. Type `Directory` makes a pod on a node without the mount fail to start
//! instead of kubelet creating an empty directory that training would silently use. The
//! pods are pinned to `communication.nodes` with a required node affinity for the same
//! reason.

use serde_json::{json, Map, Value};

use super::plan::{Plan, TrainingApi};
use super::run_id::RunId;

/// Label every object carries, so a person can see who made it.
pub const MANAGED_BY_LABEL: &str = "app.kubernetes.io/managed-by";
/// Value of [`MANAGED_BY_LABEL`].
pub const MANAGED_BY: &str = "dpuctl";
/// Label with the run id: cleanup deletes by `MANAGED_BY_LABEL=dpuctl,RUN_ID_LABEL=<id>`.
pub const RUN_ID_LABEL: &str = "dpuctl/run-id";
/// Container port vLLM listens on (its default), named `http` for the probe and Service.
pub const VLLM_PORT: u16 = 8000;
/// The GPU resource of NVIDIA's device plugin.
pub const GPU_RESOURCE: &str = "nvidia.com/gpu";
/// Container name the PyTorchJob operator requires (`PyTorchJobDefaultContainerName`).
pub const PYTORCH_CONTAINER: &str = "pytorch";

/// Volume names used in pod templates.
const SHM_VOLUME: &str = "dshm";
/// See [`SHM_VOLUME`].
const SHARED_VOLUME: &str = "shared";

/// Every object of a run, in the order to create them (training first; serving objects
/// are created after the merge, but listing them here lets `--dry-run` show everything).
pub fn all_objects(plan: &Plan, run: &RunId) -> Vec<Value> {
    let mut objects = vec![training_job(plan, run)];
    objects.push(vllm_deployment(plan, run));
    objects.push(vllm_service(plan, run));
    objects.extend(vllm_ingress(plan, run));
    objects
}

/// The labels every object (and pod) of a run carries.
pub fn run_labels(run: &RunId) -> Map<String, Value> {
    let mut labels = Map::new();
    labels.insert(MANAGED_BY_LABEL.to_owned(), json!(MANAGED_BY));
    labels.insert(RUN_ID_LABEL.to_owned(), json!(run.as_str()));
    labels
}

/// The label selector that finds a run's objects, for list and delete calls.
pub fn run_selector(run: &RunId) -> String {
    format!("{MANAGED_BY_LABEL}={MANAGED_BY},{RUN_ID_LABEL}={run}")
}

/// Name of the training job of a run: an RFC 1035 label, as TrainJob requires.
pub fn job_name(run: &RunId) -> String {
    format!("dpuctl-train-{run}")
}

/// The training job for `training.api`.
pub fn training_job(plan: &Plan, run: &RunId) -> Value {
    match plan.training.api {
        TrainingApi::PyTorchJob => pytorch_job(plan, run),
        TrainingApi::TrainJob => train_job(plan, run),
    }
}

/// `metadata` with name, namespace and the run labels (plus `extra` labels).
fn metadata(plan: &Plan, run: &RunId, name: &str, extra: &[(&str, &str)]) -> Value {
    let mut labels = run_labels(run);
    for (key, value) in extra {
        labels.insert((*key).to_owned(), json!(value));
    }
    json!({
        "name": name,
        "namespace": plan.cluster.namespace,
        "labels": labels,
    })
}

/// Container environment: `NCCL_DEBUG=INFO` (the transport check reads that log),
/// `NCCL_IB_HCA` when the plan names the device, then the plan's own variables. Never
/// `NCCL_IB_DISABLE`: validation refuses it.
fn training_env(plan: &Plan) -> Vec<Value> {
    let mut env = Vec::new();
    let user = &plan.training.env;
    if !user.contains_key("NCCL_DEBUG") {
        env.push(json!({"name": "NCCL_DEBUG", "value": "INFO"}));
    }
    if let Some(device) = &plan.communication.rdma_device {
        if !user.contains_key("NCCL_IB_HCA") {
            env.push(json!({"name": "NCCL_IB_HCA", "value": device}));
        }
    }
    env.extend(
        user.iter()
            .map(|(name, value)| json!({"name": name, "value": value})),
    );
    env
}

/// Resource limits of one training worker. Extended resources need only limits (requests
/// default to them); quantities are strings, the form the API server returns.
fn training_limits(plan: &Plan) -> Map<String, Value> {
    let t = &plan.training;
    let mut limits = Map::new();
    limits.insert(
        GPU_RESOURCE.to_owned(),
        json!(t.gpus_per_worker.to_string()),
    );
    if let Some(resource) = &t.rdma_resource {
        limits.insert(resource.clone(), json!(t.rdma_per_worker.to_string()));
    }
    limits
}

/// Required node affinity to the plan's nodes (where the exposed disk is mounted).
fn node_affinity(plan: &Plan) -> Value {
    json!({
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [{
                    "matchExpressions": [{
                        "key": "kubernetes.io/hostname",
                        "operator": "In",
                        "values": plan.communication.nodes,
                    }]
                }]
            }
        }
    })
}

/// `/dev/shm` as RAM (NCCL and PyTorch data loaders need more than the 64 MiB default)
/// and the shared path from the host.
fn volumes(plan: &Plan) -> Value {
    json!([
        {"name": SHM_VOLUME, "emptyDir": {"medium": "Memory"}},
        {
            "name": SHARED_VOLUME,
            "hostPath": {"path": plan.storage.shared_path.to_string_lossy(), "type": "Directory"},
        },
    ])
}

/// Mounts for [`volumes`]: the shared path at the same path, so plan commands mean the
/// same thing locally and in pods.
fn volume_mounts(plan: &Plan) -> Value {
    json!([
        {"name": SHM_VOLUME, "mountPath": "/dev/shm"},
        {"name": SHARED_VOLUME, "mountPath": plan.storage.shared_path.to_string_lossy()},
    ])
}

/// The pod template of a PyTorchJob replica. `IPC_LOCK` lets the RDMA stack pin memory;
/// without it NCCL's verbs setup fails and it falls back to sockets.
fn pytorch_pod(plan: &Plan, run: &RunId) -> Value {
    let t = &plan.training;
    json!({
        "metadata": {"labels": run_labels(run)},
        "spec": {
            "affinity": node_affinity(plan),
            "containers": [{
                "name": PYTORCH_CONTAINER,
                "image": t.image,
                "command": t.command,
                "env": training_env(plan),
                "resources": {"limits": training_limits(plan)},
                "securityContext": {"capabilities": {"add": ["IPC_LOCK"]}},
                "volumeMounts": volume_mounts(plan),
            }],
            "volumes": volumes(plan),
        }
    })
}

/// The PyTorchJob (`kubeflow.org/v1`): a Master and `workers - 1` Workers, restart
/// `OnFailure`, `nprocPerNode` = GPUs per worker, and `activeDeadlineSeconds` from
/// `training.timeout` so a stuck job ends on the cluster too, not only in our wait.
pub fn pytorch_job(plan: &Plan, run: &RunId) -> Value {
    let t = &plan.training;
    let replica = |replicas: u32| {
        json!({
            "replicas": replicas,
            "restartPolicy": "OnFailure",
            "template": pytorch_pod(plan, run),
        })
    };
    let mut specs = Map::new();
    specs.insert("Master".to_owned(), replica(1));
    if t.workers > 1 {
        specs.insert("Worker".to_owned(), replica(t.workers - 1));
    }
    json!({
        "apiVersion": "kubeflow.org/v1",
        "kind": "PyTorchJob",
        "metadata": metadata(plan, run, &job_name(run), &[]),
        "spec": {
            "nprocPerNode": t.gpus_per_worker.to_string(),
            "runPolicy": {
                "cleanPodPolicy": "None",
                "activeDeadlineSeconds": t.timeout.0.as_secs(),
            },
            "pytorchReplicaSpecs": specs,
        }
    })
}

/// The TrainJob (`trainer.kubeflow.org/v1alpha1`). Only the stable fields are set:
/// `runtimeRef`, and `trainer` image/command/env/numNodes/numProcPerNode/resourcesPerNode.
/// Volumes, `/dev/shm` and `IPC_LOCK` must come from the referenced runtime, because the
/// field for patching pods changed name in every Trainer release (podSpecOverrides →
/// podTemplateOverrides → runtimePatches; demo-ecosystem.md §1.5).
pub fn train_job(plan: &Plan, run: &RunId) -> Value {
    let t = &plan.training;
    let runtime = t.runtime_ref.as_deref().unwrap_or("torch-distributed");
    json!({
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "TrainJob",
        "metadata": metadata(plan, run, &job_name(run), &[]),
        "spec": {
            "runtimeRef": {
                "name": runtime,
                "apiGroup": "trainer.kubeflow.org",
                "kind": "ClusterTrainingRuntime",
            },
            "activeDeadlineSeconds": t.timeout.0.as_secs(),
            "trainer": {
                "image": t.image,
                "command": t.command,
                "env": training_env(plan),
                "numNodes": t.workers,
                "numProcPerNode": t.gpus_per_worker,
                "resourcesPerNode": {"limits": training_limits(plan)},
            },
        }
    })
}

/// Labels that select the vLLM pods: stable across runs (unlike the run id), because a
/// Deployment's selector is immutable and serving may be kept from an earlier run.
fn vllm_selector(plan: &Plan) -> Value {
    json!({
        "app.kubernetes.io/name": "vllm",
        "app.kubernetes.io/instance": plan.serving.service_name,
    })
}

/// The vLLM Deployment: `vllm serve MODEL_PATH --served-model-name MODEL --port 8000`,
/// readiness on `/health` (vLLM only listens once the model is loaded). No liveness
/// probe: a model load longer than its budget would restart the pod forever.
pub fn vllm_deployment(plan: &Plan, run: &RunId) -> Value {
    let s = &plan.serving;
    let mut args = vec![
        json!(s.model_path.to_string_lossy()),
        json!("--served-model-name"),
        json!(s.model),
        json!("--host"),
        json!("0.0.0.0"),
        json!("--port"),
        json!(VLLM_PORT.to_string()),
    ];
    args.extend(s.extra_args.iter().map(|a| json!(a)));
    let mut pod_labels = run_labels(run);
    if let Value::Object(selector) = vllm_selector(plan) {
        pod_labels.extend(selector);
    }
    let mut limits = Map::new();
    if s.gpus_per_replica > 0 {
        limits.insert(
            GPU_RESOURCE.to_owned(),
            json!(s.gpus_per_replica.to_string()),
        );
    }
    json!({
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": metadata(plan, run, &s.service_name, &[("app.kubernetes.io/name", "vllm")]),
        "spec": {
            "replicas": s.replicas,
            "selector": {"matchLabels": vllm_selector(plan)},
            "template": {
                "metadata": {"labels": pod_labels},
                "spec": {
                    "affinity": node_affinity(plan),
                    "containers": [{
                        "name": "vllm",
                        "image": s.image,
                        "command": ["vllm", "serve"],
                        "args": args,
                        "ports": [{"name": "http", "containerPort": VLLM_PORT}],
                        "readinessProbe": {
                            "httpGet": {"path": "/health", "port": "http"},
                            "periodSeconds": 10,
                            "failureThreshold": 3,
                        },
                        "resources": {"limits": limits},
                        "volumeMounts": volume_mounts(plan),
                    }],
                    "volumes": volumes(plan),
                }
            }
        }
    })
}

/// The ClusterIP Service in front of the replicas.
pub fn vllm_service(plan: &Plan, run: &RunId) -> Value {
    let s = &plan.serving;
    json!({
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": metadata(plan, run, &s.service_name, &[("app.kubernetes.io/name", "vllm")]),
        "spec": {
            "type": "ClusterIP",
            "selector": vllm_selector(plan),
            "ports": [{"name": "http", "port": s.port, "targetPort": "http", "protocol": "TCP"}],
        }
    })
}

/// The Ingress, when `serving.ingress_host` is set: TLS from the plan's Secret, and
/// ingress-nginx buffering off so streamed tokens arrive as they are generated (buffered
/// SSE hides the time to first token; demo-ecosystem.md §3.4). Long proxy timeouts keep
/// long generations from being cut at nginx's 60 s default.
pub fn vllm_ingress(plan: &Plan, run: &RunId) -> Option<Value> {
    let s = &plan.serving;
    let host = s.ingress_host.as_ref()?;
    let mut metadata = metadata(
        plan,
        run,
        &s.service_name,
        &[("app.kubernetes.io/name", "vllm")],
    );
    metadata["annotations"] = json!({
        "nginx.ingress.kubernetes.io/proxy-buffering": "off",
        "nginx.ingress.kubernetes.io/proxy-request-buffering": "off",
        "nginx.ingress.kubernetes.io/proxy-read-timeout": "3600",
        "nginx.ingress.kubernetes.io/proxy-send-timeout": "3600",
    });
    let mut spec = json!({
        "tls": [{"hosts": [host], "secretName": plan.tls_secret()}],
        "rules": [{
            "host": host,
            "http": {"paths": [{
                "path": "/",
                "pathType": "Prefix",
                "backend": {"service": {"name": s.service_name, "port": {"number": s.port}}},
            }]},
        }],
    });
    if let Some(class) = &s.ingress_class {
        spec["ingressClassName"] = json!(class);
    }
    Some(json!({
        "apiVersion": "networking.k8s.io/v1",
        "kind": "Ingress",
        "metadata": metadata,
        "spec": spec,
    }))
}

#[cfg(test)]
mod tests;
