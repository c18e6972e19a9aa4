//! Why a training job is not making progress, read from its pods: the failure modes users
//! report most (docs/reference/demo-ecosystem.md §1.6) are pods Pending for RDMA/GPU
//! resources the device plugins do not offer, and a master (launcher) that starts and
//! dies before its workers are Ready. Pure functions over `Pod` objects, so they are
//! tested from fabricated pods.

use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::api::core::v1::Pod;

use super::plan::TrainingApi;

/// PyTorchJob pod label with the job name (training-operator v1).
pub(crate) const PYTORCH_JOB_LABEL: &str = "training.kubeflow.org/job-name";
/// PyTorchJob pod label with the lower-case replica type (`master`/`worker`).
const PYTORCH_REPLICA_LABEL: &str = "training.kubeflow.org/replica-type";
/// JobSet pod label with the TrainJob name (Trainer v2 runs a JobSet of that name).
pub(crate) const JOBSET_NAME_LABEL: &str = "jobset.sigs.k8s.io/jobset-name";
/// Trainer v2 label naming the step; initializer pods are not training nodes.
const TRAINJOB_STEP_LABEL: &str = "trainer.kubeflow.org/trainjob-ancestor-step";
/// Index of the pod inside its indexed Job; node 0 is the rendezvous master.
const COMPLETION_INDEX_LABEL: &str = "batch.kubernetes.io/job-completion-index";

/// The label selector of a training job's pods.
pub(crate) fn pod_selector(kind: TrainingApi, name: &str) -> String {
    match kind {
        TrainingApi::PyTorchJob => format!("{PYTORCH_JOB_LABEL}={name}"),
        TrainingApi::TrainJob => format!("{JOBSET_NAME_LABEL}={name}"),
    }
}

/// The training container, whose log carries the NCCL lines.
pub(crate) fn training_container(kind: TrainingApi) -> &'static str {
    match kind {
        TrainingApi::PyTorchJob => super::k8s_objects::PYTORCH_CONTAINER,
        TrainingApi::TrainJob => "node",
    }
}

/// A label value of a pod.
fn label<'a>(pod: &'a Pod, key: &str) -> Option<&'a str> {
    pod.metadata.labels.as_ref()?.get(key).map(String::as_str)
}

/// The pod's name, for messages.
pub(crate) fn pod_name(pod: &Pod) -> &str {
    pod.metadata.name.as_deref().unwrap_or("?")
}

/// Whether the pod runs training (not a Trainer v2 dataset/model initializer).
fn is_training_pod(kind: TrainingApi, pod: &Pod) -> bool {
    match kind {
        TrainingApi::PyTorchJob => label(pod, PYTORCH_REPLICA_LABEL).is_some(),
        TrainingApi::TrainJob => {
            matches!(label(pod, TRAINJOB_STEP_LABEL), None | Some("trainer"))
        }
    }
}

/// Whether the pod is the master: the PyTorchJob `master` replica, or TrainJob node 0
/// (rank 0 hosts the rendezvous, so it is the one that fails when workers are late).
pub(crate) fn is_master(kind: TrainingApi, pod: &Pod) -> bool {
    match kind {
        TrainingApi::PyTorchJob => label(pod, PYTORCH_REPLICA_LABEL) == Some("master"),
        TrainingApi::TrainJob => {
            is_training_pod(kind, pod)
                && matches!(label(pod, COMPLETION_INDEX_LABEL), None | Some("0"))
        }
    }
}

/// The master among a job's pods; the lowest name wins if a restart left two.
pub(crate) fn master_pod(kind: TrainingApi, pods: &[Pod]) -> Option<&Pod> {
    pods.iter()
        .filter(|pod| is_master(kind, pod))
        .min_by(|a, b| pod_name(a).cmp(pod_name(b)))
}

/// Whether the pod has not started yet (unscheduled, pulling images, or in its init
/// containers, such as the `init-pytorch` wait for the master's Service). A worker that
/// ran and finished does not count, so a job that fails at the end is not misread.
fn is_pending(pod: &Pod) -> bool {
    pod.status
        .as_ref()
        .is_none_or(|s| matches!(s.phase.as_deref(), None | Some("Pending")))
}

/// How the pod's containers failed, if they did: phase Failed, or a container that
/// exited non-zero now or before its last restart (restartPolicy OnFailure hides a
/// crash behind a Running phase).
fn failure(pod: &Pod) -> Option<String> {
    let status = pod.status.as_ref()?;
    for container in status.container_statuses.iter().flatten() {
        let terminated = [&container.state, &container.last_state]
            .into_iter()
            .flatten()
            .filter_map(|state| state.terminated.as_ref())
            .find(|t| t.exit_code != 0);
        if let Some(t) = terminated {
            let reason = t.reason.as_deref().unwrap_or("Error");
            return Some(format!("exit code {} ({reason})", t.exit_code));
        }
    }
    (status.phase.as_deref() == Some("Failed")).then(|| {
        let reason = status.reason.as_deref().unwrap_or("phase Failed");
        reason.to_owned()
    })
}

/// The `Insufficient <resource>` names in a scheduler message such as
/// `0/3 nodes are available: 1 Insufficient nvidia.com/gpu, 3 Insufficient rdma/hca.`
pub(crate) fn insufficient_resources(message: &str) -> Vec<String> {
    let mut found = Vec::new();
    for part in message.split("Insufficient ").skip(1) {
        let resource: String = part
            .chars()
            .take_while(|c| !c.is_whitespace() && *c != ',' && *c != ';')
            .collect();
        let resource = resource.trim_end_matches('.').to_owned();
        if !resource.is_empty() && !found.contains(&resource) {
            found.push(resource);
        }
    }
    found
}

/// The scheduler's `PodScheduled=False` message of a Pending pod.
fn unschedulable_message(pod: &Pod) -> Option<&str> {
    let status = pod.status.as_ref()?;
    if status.phase.as_deref() != Some("Pending") {
        return None;
    }
    status
        .conditions
        .iter()
        .flatten()
        .find(|c| c.type_ == "PodScheduled" && c.status == "False")
        .map(|c| c.message.as_deref().unwrap_or("unschedulable"))
}

/// What the pods showed while waiting. Pending findings describe the latest poll only
/// (a pod that was Pending and then scheduled is not a problem); the launcher finding
/// is kept once seen, because the restart that follows erases the evidence.
#[derive(Debug, Default)]
pub(crate) struct Findings {
    /// Resource → (Pending pods, the scheduler's last message).
    insufficient: BTreeMap<String, (BTreeSet<String>, String)>,
    /// Pending pods that are unschedulable for other reasons, with the message.
    unschedulable: BTreeMap<String, String>,
    /// The master failed while workers were not Ready.
    launcher: Option<String>,
}

impl Findings {
    /// Replaces the Pending findings with those of `pods` and records a master that
    /// failed while workers were not Ready yet.
    pub(crate) fn observe(&mut self, kind: TrainingApi, pods: &[Pod]) {
        self.insufficient.clear();
        self.unschedulable.clear();
        for pod in pods {
            let Some(message) = unschedulable_message(pod) else {
                continue;
            };
            let resources = insufficient_resources(message);
            if resources.is_empty() {
                self.unschedulable
                    .insert(pod_name(pod).to_owned(), message.to_owned());
            }
            for resource in resources {
                let entry = self.insufficient.entry(resource).or_default();
                entry.0.insert(pod_name(pod).to_owned());
                message.clone_into(&mut entry.1);
            }
        }
        if self.launcher.is_none() {
            self.launcher = launcher_before_workers(kind, pods);
        }
    }

    /// The findings as report lines, most actionable first.
    pub(crate) fn lines(&self) -> Vec<String> {
        let mut lines = Vec::new();
        for (resource, (pods, message)) in &self.insufficient {
            let pods: Vec<&str> = pods.iter().map(String::as_str).collect();
            lines.push(format!(
                "pods Pending: Insufficient {resource} ({}; scheduler: {}){}",
                pods.join(", "),
                message.trim(),
                resource_hint(resource)
            ));
        }
        for (pod, message) in &self.unschedulable {
            lines.push(format!("pod {pod} Pending: {}", message.trim()));
        }
        lines.extend(self.launcher.clone());
        lines
    }
}

/// What to check for a resource no node has free.
fn resource_hint(resource: &str) -> &'static str {
    if resource.starts_with("rdma/") || resource.contains("hostdev") {
        " - no node offers it: check the RDMA device plugin's selectors and \
         `kubectl describe node` allocatable"
    } else if resource == super::k8s_objects::GPU_RESOURCE {
        " - all GPUs are taken or the GPU device plugin is not running"
    } else {
        ""
    }
}

/// "Launcher before workers": the master failed while at least one worker had not
/// started (Pending), the signature of a rendezvous that timed out because workers were still
/// pulling images or waiting to be scheduled.
pub(crate) fn launcher_before_workers(kind: TrainingApi, pods: &[Pod]) -> Option<String> {
    let master = master_pod(kind, pods)?;
    let how = failure(master)?;
    let waiting: Vec<&str> = pods
        .iter()
        .filter(|pod| is_training_pod(kind, pod) && !is_master(kind, pod) && is_pending(pod))
        .map(pod_name)
        .collect();
    if waiting.is_empty() {
        return None;
    }
    Some(format!(
        "master pod {} failed ({how}) while workers {} were not Ready yet (Pending): the master \
         started before its workers (pull images in advance or use gang scheduling)",
        pod_name(master),
        waiting.join(", ")
    ))
}
