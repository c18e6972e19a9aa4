//! Waiting for the training job: success and failure are both terminal (the operator's
//! own `IsSucceeded`/`IsFailed`: any condition of that type with status True), every wait
//! is bounded, and the outcome carries a diagnosis from the pods and the master's NCCL
//! log (docs/reference/demo-ecosystem.md §1.3, §1.5-1.7).

use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, ListParams, LogParams};
use serde_json::Value;

use super::kube_exec::{api_code, until, KubeExecutor, REQUEST_TIMEOUT};
use super::kube_exec_diagnose::{master_pod, pod_name, pod_selector, training_container, Findings};
use super::plan::TrainingApi;
use dpu_host::roce::nccl::transport::{scan_transport, NcclTransport};

/// How a training wait ended. Each variant carries the diagnosis lines, because a job can
/// succeed and still be wrong for this demo (NCCL over TCP sockets instead of RoCE).
#[derive(Debug, Clone, PartialEq)]
pub enum TrainingOutcome {
    /// The job reported success.
    Succeeded {
        /// Seconds from the start of the wait to the success being seen.
        seconds: f64,
        /// Findings that do not fail the job but matter, e.g. the socket fallback.
        diagnosis: Vec<String>,
    },
    /// The job reported failure, or disappeared.
    Failed {
        /// The Failed condition's message (or reason), as the operator wrote it.
        reason: String,
        /// What the pods and logs suggest as the cause.
        diagnosis: Vec<String>,
    },
    /// Neither happened within the timeout.
    TimedOut {
        /// How long we waited.
        waited: Duration,
        /// Why the job was not progressing, as far as the pods tell.
        diagnosis: Vec<String>,
    },
}

/// The condition types that end a job, per API: (success, failure).
fn terminal_types(kind: TrainingApi) -> (&'static str, &'static str) {
    match kind {
        TrainingApi::PyTorchJob => ("Succeeded", "Failed"),
        TrainingApi::TrainJob => ("Complete", "Failed"),
    }
}

/// The job's terminal state from its `status.conditions`: `Some(Ok(()))` succeeded,
/// `Some(Err(reason))` failed, `None` still going. Failure is checked first, because the
/// operator never clears it (a failure is final even if a success condition follows).
pub fn terminal_state(kind: TrainingApi, job: &Value) -> Option<Result<(), String>> {
    let (success, failure) = terminal_types(kind);
    let conditions = job.pointer("/status/conditions")?.as_array()?;
    let is_true = |wanted: &str| {
        conditions.iter().find(|c| {
            c.get("type").and_then(Value::as_str) == Some(wanted)
                && c.get("status").and_then(Value::as_str) == Some("True")
        })
    };
    if let Some(failed) = is_true(failure) {
        let text = |key: &str| {
            failed
                .get(key)
                .and_then(Value::as_str)
                .filter(|s| !s.is_empty())
                .map(str::to_owned)
        };
        let reason = text("message")
            .or_else(|| text("reason"))
            .unwrap_or_else(|| "Failed condition without a message".to_owned());
        return Some(Err(reason));
    }
    is_true(success).map(|_| Ok(()))
}

impl KubeExecutor {
    /// Polls the job named `name` until it succeeds, fails or `timeout` passes, reading
    /// its pods on every poll to explain a stall. The master's log is fetched once at the
    /// end (not streamed), passed line by line to `on_log`, and scanned for the NCCL
    /// transport: streaming would tie the wait to a follow connection that breaks on every
    /// master restart, and the verdict needs the whole log anyway. The final pod list and
    /// the log fetch are bounded by `REQUEST_TIMEOUT` each, on top of `timeout`.
    pub async fn wait_training(
        &self,
        kind: TrainingApi,
        name: &str,
        timeout: Duration,
        mut on_log: impl FnMut(&str),
    ) -> TrainingOutcome {
        let (api_version, kind_name) = match kind {
            TrainingApi::PyTorchJob => ("kubeflow.org/v1", "PyTorchJob"),
            TrainingApi::TrainJob => ("trainer.kubeflow.org/v1alpha1", "TrainJob"),
        };
        let started = Instant::now();
        let jobs = match self.dynamic_api(api_version, kind_name) {
            Ok(api) => api,
            Err(error) => {
                return TrainingOutcome::Failed {
                    reason: error.to_string(),
                    diagnosis: Vec::new(),
                }
            }
        };
        let pods: Api<Pod> = Api::namespaced(self.client.clone(), &self.namespace);
        let pod_params = ListParams::default().labels(&pod_selector(kind, name));
        let deadline = started + timeout;
        let mut findings = Findings::default();
        let mut last_pods: Vec<Pod> = Vec::new();
        let mut seen = false;
        let mut api_error: Option<String> = None;
        let ended = loop {
            match until(deadline, jobs.get_opt(name)).await {
                Some(Ok(Some(job))) => {
                    seen = true;
                    api_error = None;
                    if let Some(state) = terminal_state(kind, &job.data) {
                        break Some(state);
                    }
                }
                Some(Ok(None)) if seen => {
                    break Some(Err(format!("{kind_name} {name} was deleted while waiting")))
                }
                Some(Ok(None)) => api_error = Some(format!("{kind_name} {name} not found")),
                Some(Err(error)) => api_error = Some(format!("API error: {error}")),
                None => {}
            }
            if let Some(Ok(list)) = until(deadline, pods.list(&pod_params)).await {
                last_pods = list.items;
                findings.observe(kind, &last_pods);
            }
            let now = Instant::now();
            if now >= deadline {
                break None;
            }
            tokio::time::sleep(self.poll.min(deadline - now)).await;
        };
        // Measured before the log fetch, which is not part of the training.
        let waited = started.elapsed();
        if ended.is_some() {
            // The final pod states decide "launcher before workers"; the poll before the
            // terminal condition may have missed the crash.
            if let Ok(Ok(list)) =
                tokio::time::timeout(REQUEST_TIMEOUT, pods.list(&pod_params)).await
            {
                last_pods = list.items;
                findings.observe(kind, &last_pods);
            }
        }
        let mut diagnosis = findings.lines();
        if let Some(master) = master_pod(kind, &last_pods) {
            diagnosis.extend(self.master_log(kind, master, &mut on_log).await);
        }
        match ended {
            Some(Ok(())) => TrainingOutcome::Succeeded {
                seconds: waited.as_secs_f64(),
                diagnosis,
            },
            Some(Err(reason)) => TrainingOutcome::Failed { reason, diagnosis },
            None => {
                diagnosis.extend(api_error);
                TrainingOutcome::TimedOut { waited, diagnosis }
            }
        }
    }

    /// Fetches the master's log, hands it to `on_log` line by line and returns the
    /// diagnosis it supports: the NCCL socket fallback, or why there was no log.
    async fn master_log(
        &self,
        kind: TrainingApi,
        master: &Pod,
        on_log: &mut impl FnMut(&str),
    ) -> Vec<String> {
        let pods: Api<Pod> = Api::namespaced(self.client.clone(), &self.namespace);
        let name = pod_name(master);
        let containers: Vec<&str> = master
            .spec
            .iter()
            .flat_map(|spec| spec.containers.iter().map(|c| c.name.as_str()))
            .collect();
        let wanted = training_container(kind);
        // A single-container pod needs no name; a runtime that renamed the container
        // still gets its first one rather than a 400.
        let container = match containers.as_slice() {
            [] | [_] => None,
            many if many.contains(&wanted) => Some(wanted.to_owned()),
            [first, ..] => Some((*first).to_owned()),
        };
        let params = LogParams {
            container,
            ..LogParams::default()
        };
        let log = match tokio::time::timeout(REQUEST_TIMEOUT, pods.logs(name, &params)).await {
            Ok(Ok(log)) => log,
            // A pod that never started has no log; the Pending findings say why.
            Ok(Err(error)) if api_code(&error) == Some(400) => return Vec::new(),
            Ok(Err(error)) => return vec![format!("could not read the log of {name}: {error}")],
            Err(_) => {
                let secs = REQUEST_TIMEOUT.as_secs();
                return vec![format!("no log from {name} within {secs}s")];
            }
        };
        log.lines().for_each(&mut *on_log);
        let verdict = scan_transport(&log);
        if verdict.transport != NcclTransport::Socket {
            return Vec::new();
        }
        let evidence: Vec<&str> = verdict
            .evidence
            .iter()
            .map(String::as_str)
            .take(3)
            .collect();
        vec![format!(
            "NCCL fell back to NET/Socket in {name} (traffic bypassed RDMA; check \
             /dev/infiniband, IPC_LOCK and the RDMA resource): {}",
            evidence.join(" | ")
        )]
    }
}
