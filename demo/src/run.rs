//! `dpuctl demo training-storage`: the steps in the course's order, each gated on the ones
//! it needs, with the accounting of the whole run taken around them (RDMA ports on this
//! host, the DPU volume's read bytes) and one review at the end.

use std::time::SystemTime;

use super::k8s_objects::all_objects;
use super::local_exec::{self, LocalServer, RunDir};
use super::plan::{ExecutorKind, Plan};
use super::run_id::RunId;
use super::step_report::{SharedObserver, StepEvent, StepOutcome, StepReport};
use super::steps::{
    accounting, merge_step, review_step, serving_checks, step, storage_and_communication, Cx,
};
use super::yaml::to_yaml;
use dpu_host::agent::session::Session;
use dpu_host::observe::Observer;
use dpu_host::param::{Field, ParamError};
use dpu_host::roce::nccl::corroborate::snapshot;

pub use super::error::DemoError;
pub use super::params::TrainingStorage;
pub use super::report::{AccountLine, DemoReport, DemoVerdict};

/// What `training_storage` produced.
#[derive(Debug)]
pub enum TrainingStorageResult {
    /// `dry_run`: the resolved plan and the objects, as commented TOML and YAML.
    DryRun(String),
    /// The run, whatever its verdict.
    Ran(Box<DemoReport>),
}

fn load(args: &TrainingStorage) -> Result<Plan, DemoError> {
    let mut plan = Plan::load_with(&args.plan, !args.dry_run)
        .map_err(|e| DemoError::InvalidPlan(e.to_string()))?;
    if let Some(kind) = args.executor {
        plan.executor.kind = kind;
    }
    Ok(plan)
}

/// The entry point: loads the plan, then lists it (`dry_run`) or runs every step, telling
/// `observer` as each starts and ends.
pub async fn training_storage(
    session: &Session,
    args: &TrainingStorage,
    observer: &mut (dyn for<'e> Observer<StepEvent<'e>> + Send),
) -> Result<TrainingStorageResult, DemoError> {
    let plan = load(args)?;
    let run_id = match &args.run_id {
        Some(id) => RunId::new(id).map_err(|e| {
            ParamError::new(Field::RunId)
                .field(Field::RunId)
                .text(format!(": {e}"))
        })?,
        None => RunId::from_time(SystemTime::now()),
    };
    if args.dry_run {
        let resolved = toml::to_string(&plan).unwrap_or_default();
        return Ok(TrainingStorageResult::DryRun(format!(
            "# dpuctl demo training-storage, run {}\n# The plan as resolved:\n{}\n\
             # The Kubernetes objects the kubernetes executor creates:\n{}",
            run_id.as_str(),
            resolved
                .lines()
                .map(|l| format!("#   {l}"))
                .collect::<Vec<_>>()
                .join("\n"),
            to_yaml(&all_objects(&plan, &run_id))
        )));
    }
    let observer = SharedObserver::new(observer);
    let cx = Cx {
        session,
        observer: &observer,
        args,
    };
    let report = match plan.executor.kind {
        ExecutorKind::Local => run_local(&cx, &plan, &run_id).await?,
        ExecutorKind::Kubernetes => run_kubernetes(&cx, &plan, &run_id).await?,
    };
    Ok(TrainingStorageResult::Ran(Box::new(report)))
}

#[cfg(not(feature = "kube"))]
async fn run_kubernetes(
    _cx: &Cx<'_>,
    _plan: &Plan,
    _run_id: &RunId,
) -> Result<DemoReport, DemoError> {
    Err(DemoError::NoKubeExecutor)
}

#[cfg(feature = "kube")]
async fn run_kubernetes(cx: &Cx<'_>, plan: &Plan, run_id: &RunId) -> Result<DemoReport, DemoError> {
    super::kube_run::run(cx, plan, run_id).await
}

async fn run_local(cx: &Cx<'_>, plan: &Plan, run_id: &RunId) -> Result<DemoReport, DemoError> {
    let dir = RunDir::for_plan(plan, run_id.as_str())?;
    let root = cx.session.sys_root();
    let rdma_before = snapshot(&root);
    let mut steps = Vec::new();

    let (storage_ok, comm_ok, storage) =
        storage_and_communication(cx, plan, &dir, &mut steps).await;

    // c. training
    let mut training_result = None;
    let train_ok = if storage_ok && comm_ok {
        step(cx, &mut steps, "training", "training job", || {
            let (o, r) = local_exec::training(plan, &dir);
            training_result = r;
            o
        })
    } else {
        let why = if storage_ok {
            "communication failed"
        } else {
            "storage failed"
        };
        steps.push(StepReport::skipped("training", "training job", why));
        false
    };

    let merge_ok = merge_step(cx, plan, &dir, train_ok, &mut steps);

    // e. serving
    let mut serving_report = None;
    let mut server = None;
    if merge_ok {
        let progress = cx.progress(&steps, "serving");
        let mut out = StepOutcome::default();
        match LocalServer::start(plan, &dir) {
            Err(e) => out = out.fail(e),
            Ok(s) => {
                server = Some(s);
                // The executor is local here, so this is `[local] serve_url` or the port.
                let base_url = plan.serving_url().unwrap_or_default();
                let report = serving_checks(plan, base_url, None, &mut out).await;
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

    let lines = accounting(
        &rdma_before,
        &snapshot(&root),
        storage.as_ref(),
        training_result.as_ref(),
    )
    .await;
    let lines = review_step(cx, &mut steps, lines, &dir).await;

    // g. cleanup
    let progress = cx.progress(&steps, "cleanup");
    let mut out = StepOutcome::default();
    match server {
        Some(s) if plan.cleanup.keep_serving => {
            out.headline = format!("the server is left running (pid {})", s.id());
            std::mem::forget(s);
        }
        Some(s) => {
            s.stop();
            out.headline = "the server was stopped".to_owned();
        }
        None => out.headline = "nothing to clean up".to_owned(),
    }
    steps.push(progress.finish("cleanup", "cleanup", out));

    let passed = steps.iter().all(StepReport::passed);
    Ok(DemoReport {
        run_id: run_id.as_str().to_owned(),
        plan: cx.args.plan.display().to_string(),
        executor: "local",
        passed,
        steps,
        accounting: lines,
        serving: serving_report,
    })
}
