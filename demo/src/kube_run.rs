//! The Kubernetes executor's run: storage and the NCCL gate from this host (the nodes see
//! the same disk and fabric), the training job and the vLLM replicas as Kubeflow and
//! Kubernetes objects, the merge where the shared path is mounted, and cleanup by the
//! run's label.

use std::time::Duration;

use super::error::DemoError;
use super::k8s_objects::{
    job_name, run_selector, training_job, vllm_deployment, vllm_ingress, vllm_service,
};
use super::kube_exec::KubeExecutor;
use super::kube_exec_training::TrainingOutcome;
use super::local_exec::{self, RunDir};
use super::plan::Plan;
use super::report::DemoReport;
use super::run_id::RunId;
use super::step_report::{StepOutcome, StepReport};
use super::steps::{
    accounting, merge_step, review_step, serving_checks, storage_and_communication, Cx,
};
use dpu_host::roce::nccl::corroborate::snapshot;

/// How long the vLLM replicas may take to load the model and pass readiness.
const SERVING_READY: Duration = Duration::from_secs(1800);

/// Runs the plan on the cluster.
pub(crate) async fn run(cx: &Cx<'_>, plan: &Plan, run_id: &RunId) -> Result<DemoReport, DemoError> {
    let dir = RunDir::for_plan(plan, run_id.as_str())?;
    let kube = KubeExecutor::connect(&plan.cluster).await?;
    let root = cx.session.sys_root();
    let rdma_before = snapshot(&root);
    let mut steps = Vec::new();

    let (storage_ok, comm_ok, storage) =
        storage_and_communication(cx, plan, &dir, &mut steps).await;

    let train_ok = if storage_ok && comm_ok {
        let progress = cx.progress(&steps, "training job");
        let mut out = StepOutcome::default();
        let job = training_job(plan, run_id);
        match kube.apply(&job).await {
            Err(e) => out = out.fail(e.to_string()),
            Ok(created) => {
                out.note(format!("created {created}"));
                let mut log = String::new();
                let outcome = kube
                    .wait_training(
                        plan.training.api,
                        &job_name(run_id),
                        plan.training.timeout.0,
                        |l| {
                            log.push_str(l);
                            log.push('\n');
                        },
                    )
                    .await;
                let _ = std::fs::write(dir.0.join("train.log"), &log);
                if let Some(result) = local_exec::demo_result(&log) {
                    if let Some(b) = result.get("bytes_read") {
                        out.note(format!("bytes_read: {b}"));
                    }
                }
                match outcome {
                    TrainingOutcome::Succeeded { seconds, diagnosis } => {
                        diagnosis.iter().for_each(|d| out.note(d.clone()));
                        if let Some(d) = diagnosis.iter().find(|d| d.contains("NET/Socket")) {
                            out = out.fail(format!("the job succeeded, but {d}"));
                        } else {
                            out.headline = format!("the job succeeded after {seconds:.0} s");
                        }
                    }
                    TrainingOutcome::Failed { reason, diagnosis } => {
                        diagnosis.iter().for_each(|d| out.note(d.clone()));
                        out = out.fail(format!("the job failed: {reason}"));
                    }
                    TrainingOutcome::TimedOut { waited, diagnosis } => {
                        diagnosis.iter().for_each(|d| out.note(d.clone()));
                        out = out.fail(format!(
                            "the job did not finish within {}{}",
                            humantime::format_duration(waited),
                            diagnosis
                                .first()
                                .map(|d| format!(": {d}"))
                                .unwrap_or_default()
                        ));
                    }
                }
            }
        }
        let report = progress.finish("training", "training job", out);
        let ok = report.passed();
        steps.push(report);
        ok
    } else {
        steps.push(StepReport::skipped(
            "training",
            "training job",
            "storage or communication failed",
        ));
        false
    };

    let merge_ok = merge_step(cx, plan, &dir, train_ok, &mut steps);

    let mut serving_report = None;
    if merge_ok {
        let progress = cx.progress(&steps, "serving");
        let mut out = StepOutcome::default();
        let mut objects = vec![vllm_deployment(plan, run_id), vllm_service(plan, run_id)];
        objects.extend(vllm_ingress(plan, run_id));
        let mut created = Ok(());
        for o in &objects {
            match kube.apply(o).await {
                Ok(name) => out.note(format!("created {name}")),
                Err(e) => {
                    created = Err(e.to_string());
                    break;
                }
            }
        }
        let ready = match created {
            Err(e) => Err(e),
            Ok(()) => {
                kube.wait_deployment_ready(
                    &plan.serving.service_name,
                    plan.serving.replicas,
                    SERVING_READY,
                )
                .await
            }
        };
        match (ready, plan.serving_url()) {
            (Err(e), _) => out = out.fail(e),
            (Ok(_), None) => out = out.fail("the plan gives no serving URL"),
            (Ok(seconds), Some(url)) => {
                out.note(format!(
                    "{} replicas ready after {seconds:.0} s",
                    plan.serving.replicas
                ));
                let report = serving_checks(plan, url, cx.args.ingress_ca.clone(), &mut out).await;
                serving_report = Some(report);
            }
        }
        steps.push(progress.finish("serving", "serving", out));
    } else {
        steps.push(StepReport::skipped(
            "serving",
            "serving",
            "the merged model is not ready",
        ));
    }

    let lines = accounting(&rdma_before, &snapshot(&root), storage.as_ref(), None).await;
    let lines = review_step(cx, &mut steps, lines, &dir).await;

    let progress = cx.progress(&steps, "cleanup");
    let mut out = StepOutcome::default();
    match kube
        .cleanup(
            &run_selector(run_id),
            plan.cleanup.delete_jobs,
            plan.cleanup.keep_serving,
        )
        .await
    {
        Ok(deleted) => {
            out.headline = format!("deleted {} objects", deleted.len());
            deleted.into_iter().for_each(|d| out.note(d));
        }
        Err(e) => out = out.fail(e.to_string()),
    }
    steps.push(progress.finish("cleanup", "cleanup", out));

    Ok(DemoReport {
        run_id: run_id.as_str().to_owned(),
        plan: cx.args.plan.display().to_string(),
        executor: "kubernetes",
        passed: steps.iter().all(StepReport::passed),
        steps,
        accounting: lines,
        serving: serving_report,
    })
}
