//! Tests of the training wait against the scripted API server (`kube_exec.rs`): success,
//! failure, timeout, and the diagnoses (RDMA resources Pending, launcher before workers,
//! NCCL socket fallback).

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::super::kube_exec::KubeExecutor;
use super::super::kube_exec_diagnose::{insufficient_resources, launcher_before_workers};
use super::super::kube_exec_training::{terminal_state, TrainingOutcome};
use super::super::plan::TrainingApi;
use super::kube_exec::{fake, job, list, ok, pod, status, text, JOB, PODS, PYTORCHJOBS};

/// A Running, Ready pod status.
fn running() -> Value {
    json!({"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]})
}

/// The pod status of an unschedulable pod.
fn unschedulable(message: &str) -> Value {
    json!({"phase": "Pending", "conditions": [
        {"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "message": message}]})
}

/// Runs a training wait, collecting the log lines it streamed.
async fn wait(
    executor: &KubeExecutor,
    kind: TrainingApi,
    timeout: Duration,
) -> (TrainingOutcome, Vec<String>) {
    let mut lines = Vec::new();
    let outcome = executor
        .wait_training(kind, JOB, timeout, |line| lines.push(line.to_owned()))
        .await;
    (outcome, lines)
}

#[tokio::test]
async fn a_job_that_succeeds_streams_the_master_log() {
    let polls = Arc::new(Mutex::new(0));
    let count = Arc::clone(&polls);
    let (executor, seen) = fake(move |_, path| {
        if path == format!("{PYTORCHJOBS}/{JOB}") {
            let mut n = count.lock().expect("lock poisoned by a failed test");
            *n += 1;
            if *n < 3 {
                return ok(job(&[("Created", "True", ""), ("Running", "True", "")]));
            }
            return ok(job(&[
                ("Running", "False", ""),
                ("Succeeded", "True", "done"),
            ]));
        }
        if path == PODS {
            return list(
                "Pod",
                vec![pod(&format!("{JOB}-master-0"), "master", running())],
                None,
            );
        }
        text("step 1\nx:1:1 [0] NCCL INFO Using network IB\nstep 2\n")
    });
    let (outcome, lines) = wait(&executor, TrainingApi::PyTorchJob, Duration::from_secs(5)).await;
    match outcome {
        TrainingOutcome::Succeeded { diagnosis, .. } => {
            assert!(diagnosis.is_empty(), "{diagnosis:?}")
        }
        other => panic!("expected success, got {other:?}"),
    }
    assert_eq!(lines.len(), 3);
    assert_eq!(*polls.lock().expect("lock poisoned by a failed test"), 3);
    let seen = seen.lock().expect("lock poisoned by a failed test");
    let pods = seen
        .iter()
        .find(|s| s.path == PODS)
        .expect("pods were listed");
    assert_eq!(
        pods.param("labelSelector"),
        Some(format!("training.kubeflow.org/job-name={JOB}").as_str())
    );
    let log = seen.last().expect("requests were made");
    assert_eq!(log.path, format!("{PODS}/{JOB}-master-0/log"));
}

#[tokio::test]
async fn a_failed_job_ends_the_wait_with_its_reason_and_the_launcher_diagnosis() {
    let crashed = json!({"phase": "Running", "containerStatuses": [{
        "name": "pytorch", "image": "trainer", "imageID": "", "ready": false, "restartCount": 1,
        "state": {"waiting": {"reason": "CrashLoopBackOff"}},
        "lastState": {"terminated": {"exitCode": 1, "reason": "Error"}}}]});
    let (executor, _) = fake(move |_, path| {
        if path == format!("{PYTORCHJOBS}/{JOB}") {
            let message =
                "PyTorchJob dpuctl-train-r1 is failed because 1 Master replica(s) failed.";
            return ok(job(&[
                ("Running", "False", ""),
                ("Failed", "True", message),
            ]));
        }
        if path == PODS {
            return list(
                "Pod",
                vec![
                    pod(&format!("{JOB}-master-0"), "master", crashed.clone()),
                    pod(
                        &format!("{JOB}-worker-0"),
                        "worker",
                        json!({"phase": "Pending"}),
                    ),
                ],
                None,
            );
        }
        text("RendezvousTimeoutError\n")
    });
    let started = Instant::now();
    let (outcome, _) = wait(&executor, TrainingApi::PyTorchJob, Duration::from_secs(60)).await;
    assert!(started.elapsed() < Duration::from_secs(1));
    match outcome {
        TrainingOutcome::Failed { reason, diagnosis } => {
            assert!(reason.contains("1 Master replica(s) failed"), "{reason}");
            assert_eq!(diagnosis.len(), 1, "{diagnosis:?}");
            assert!(
                diagnosis[0].contains("master pod dpuctl-train-r1-master-0 failed (exit code 1")
            );
            assert!(diagnosis[0].contains("workers dpuctl-train-r1-worker-0 were not Ready"));
        }
        other => panic!("expected failure, got {other:?}"),
    }
}

#[tokio::test]
async fn a_job_that_never_ends_times_out() {
    let (executor, _) = fake(|_, path| match path {
        PODS => list("Pod", vec![], None),
        _ => ok(job(&[("Created", "True", ""), ("Running", "True", "")])),
    });
    let (outcome, lines) = wait(
        &executor,
        TrainingApi::PyTorchJob,
        Duration::from_millis(150),
    )
    .await;
    match outcome {
        TrainingOutcome::TimedOut { waited, diagnosis } => {
            assert!(waited >= Duration::from_millis(150) && waited < Duration::from_secs(1));
            assert!(diagnosis.is_empty(), "{diagnosis:?}");
        }
        other => panic!("expected a timeout, got {other:?}"),
    }
    assert!(lines.is_empty());
}

#[tokio::test]
async fn pods_pending_for_rdma_name_the_resource() {
    let message = "0/3 nodes are available: 3 Insufficient rdma/rdma_shared_device_a. preemption: \
                   0/3 nodes are available: 3 No preemption victims found for incoming pod.";
    let (executor, _) = fake(move |_, path| {
        if path == PODS {
            return list(
                "Pod",
                vec![
                    pod(&format!("{JOB}-master-0"), "master", unschedulable(message)),
                    pod(&format!("{JOB}-worker-0"), "worker", unschedulable(message)),
                ],
                None,
            );
        }
        if path.ends_with("/log") {
            return status(
                400,
                "BadRequest",
                "container \"pytorch\" is waiting to start",
            );
        }
        ok(job(&[("Created", "True", "")]))
    });
    let (outcome, _) = wait(
        &executor,
        TrainingApi::PyTorchJob,
        Duration::from_millis(100),
    )
    .await;
    let TrainingOutcome::TimedOut { diagnosis, .. } = outcome else {
        panic!("expected a timeout, got {outcome:?}");
    };
    assert_eq!(diagnosis.len(), 1, "{diagnosis:?}");
    let line = &diagnosis[0];
    assert!(
        line.starts_with("pods Pending: Insufficient rdma/rdma_shared_device_a ("),
        "{line}"
    );
    assert!(
        line.contains("dpuctl-train-r1-master-0, dpuctl-train-r1-worker-0"),
        "{line}"
    );
    assert!(line.contains("RDMA device plugin"), "{line}");
}

#[tokio::test]
async fn nccl_socket_fallback_in_the_master_log_is_diagnosed() {
    let log = "x:1:1 [0] NCCL INFO NET/IB : No device found.\n\
               x:1:1 [0] NCCL INFO NET/Socket : Using [0]eth0:10.0.0.5<0>\n\
               x:1:1 [0] NCCL INFO Using network Socket\n";
    let (executor, _) = fake(move |_, path| match path {
        PODS => list(
            "Pod",
            vec![pod(&format!("{JOB}-master-0"), "master", running())],
            None,
        ),
        p if p.ends_with("/log") => text(log),
        _ => ok(job(&[("Succeeded", "True", "")])),
    });
    let (outcome, lines) = wait(&executor, TrainingApi::PyTorchJob, Duration::from_secs(5)).await;
    let TrainingOutcome::Succeeded { diagnosis, .. } = outcome else {
        panic!("expected success, got {outcome:?}");
    };
    assert_eq!(lines.len(), 3);
    assert_eq!(diagnosis.len(), 1, "{diagnosis:?}");
    assert!(diagnosis[0].starts_with("NCCL fell back to NET/Socket in dpuctl-train-r1-master-0"));
    assert!(
        diagnosis[0].contains("Using network Socket"),
        "{}",
        diagnosis[0]
    );
}

#[tokio::test]
async fn a_trainjob_completes_on_its_complete_condition() {
    let path_job = format!("/apis/trainer.kubeflow.org/v1alpha1/namespaces/demo/trainjobs/{JOB}");
    let (executor, seen) = fake(move |_, path| {
        if path == path_job {
            return ok(
                json!({"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob",
                "metadata": {"name": JOB}, "status": {"conditions": [
                    {"type": "Complete", "status": "True", "reason": "JobsCompleted", "message": ""}]}}),
            );
        }
        list("Pod", vec![], None)
    });
    let (outcome, _) = wait(&executor, TrainingApi::TrainJob, Duration::from_secs(5)).await;
    assert!(
        matches!(outcome, TrainingOutcome::Succeeded { .. }),
        "{outcome:?}"
    );
    let seen = seen.lock().expect("lock poisoned by a failed test");
    let pods = seen
        .iter()
        .find(|s| s.path == PODS)
        .expect("pods were listed");
    assert_eq!(
        pods.param("labelSelector"),
        Some(format!("jobset.sigs.k8s.io/jobset-name={JOB}").as_str())
    );
}

#[test]
fn resources_are_read_from_scheduler_messages() {
    let message =
        "0/3 nodes are available: 1 Insufficient nvidia.com/gpu, 3 Insufficient rdma/hca. \
                   preemption: 3 Insufficient rdma/hca.";
    assert_eq!(
        insufficient_resources(message),
        vec!["nvidia.com/gpu", "rdma/hca"]
    );
    assert!(
        insufficient_resources("0/3 nodes are available: 3 node(s) had untolerated taint")
            .is_empty()
    );
}

#[test]
fn failure_wins_over_success_and_messages_fall_back_to_reasons() {
    let both = job(&[("Succeeded", "True", ""), ("Failed", "True", "")]);
    assert_eq!(
        terminal_state(TrainingApi::PyTorchJob, &both),
        Some(Err("PyTorchJobFailed".to_owned()))
    );
    let unknown = job(&[("Succeeded", "Unknown", "")]);
    assert_eq!(terminal_state(TrainingApi::PyTorchJob, &unknown), None);
    // TrainJob has no Succeeded condition: only Complete ends it.
    let succeeded = job(&[("Succeeded", "True", "")]);
    assert_eq!(terminal_state(TrainingApi::TrainJob, &succeeded), None);
}

#[test]
fn a_master_failing_after_its_workers_ran_is_not_launcher_before_workers() {
    let failed = json!({"phase": "Failed", "reason": "Error"});
    let pods: Vec<k8s_openapi::api::core::v1::Pod> = [
        pod(&format!("{JOB}-master-0"), "master", failed.clone()),
        pod(&format!("{JOB}-worker-0"), "worker", failed),
    ]
    .into_iter()
    .map(|p| serde_json::from_value(p).unwrap_or_else(|e| panic!("{e}")))
    .collect();
    assert_eq!(
        launcher_before_workers(TrainingApi::PyTorchJob, &pods),
        None
    );
}
