//! `dpuctl demo training-storage`: the steps in the course's order, each gated on the ones
//! it needs, with the accounting of the whole run taken around them (RDMA ports on this
//! host, the DPU volume's read bytes) and one review at the end.

use std::time::SystemTime;

use serde::Serialize;

use super::args::{ExecutorChoice, TrainingStorageArgs};
use super::k8s_objects::all_objects;
use super::local_exec::{self, LocalServer, RunDir};
use super::plan::{ExecutorKind, Plan};
use super::run_id::RunId;
use super::serving::{self, ServingCheck, ServingReport};
use super::step::{Outcome as StepOutcome, Progress, StepReport};
use super::storage_step::{self, StorageAccount};
use super::yaml::to_yaml;
use crate::commands::Env;
use crate::outcome::Outcome;
use crate::output;
use crate::roce::nccl_corroborate::snapshot;

/// One line of "where every byte went".
#[derive(Debug, Clone, Serialize)]
pub(crate) struct AccountLine {
    /// Which path: storage, communication, training, serving.
    pub(crate) path: &'static str,
    /// What was counted, and where.
    pub(crate) what: String,
    /// The amount; None when it could not be read.
    pub(crate) value: Option<u64>,
    /// Its unit.
    pub(crate) unit: &'static str,
}

/// The whole run, as printed with `-o json` and rendered as the review page.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct DemoReport {
    /// The run id (labels, work directory).
    pub(crate) run_id: String,
    /// The plan file.
    pub(crate) plan: String,
    /// `local` or `kubernetes`.
    pub(crate) executor: &'static str,
    /// Every step passed.
    pub(crate) passed: bool,
    /// The steps, in order.
    pub(crate) steps: Vec<StepReport>,
    /// The accounting of the whole run.
    pub(crate) accounting: Vec<AccountLine>,
    /// The serving checks in full.
    pub(crate) serving: Option<ServingReport>,
}

pub(crate) const STEPS: usize = 7;

fn load(args: &TrainingStorageArgs) -> anyhow::Result<Plan> {
    let mut plan =
        Plan::load_with(&args.plan, !args.dry_run).map_err(|e| anyhow::anyhow!("{e}"))?;
    match args.executor {
        Some(ExecutorChoice::Local) => plan.executor.kind = ExecutorKind::Local,
        Some(ExecutorChoice::Kubernetes) => plan.executor.kind = ExecutorKind::Kubernetes,
        None => {}
    }
    Ok(plan)
}

/// The entry point.
pub(crate) async fn training_storage(
    env: &Env<'_>,
    args: &TrainingStorageArgs,
) -> anyhow::Result<Outcome> {
    let plan = match load(args) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("dpuctl: {e}");
            return Ok(Outcome::Usage);
        }
    };
    let run_id = match &args.run_id {
        Some(id) => RunId::new(id).map_err(|e| anyhow::anyhow!("--run-id: {e}"))?,
        None => RunId::from_time(SystemTime::now()),
    };
    if args.dry_run {
        let resolved = toml::to_string(&plan).unwrap_or_default();
        output::line(&format!(
            "# dpuctl demo training-storage, run {}\n# The plan as resolved:\n{}",
            run_id.as_str(),
            resolved
                .lines()
                .map(|l| format!("#   {l}"))
                .collect::<Vec<_>>()
                .join("\n")
        ))?;
        output::line(&format!(
            "# The Kubernetes objects the kubernetes executor creates:\n{}",
            to_yaml(&all_objects(&plan, &run_id))
        ))?;
        return Ok(Outcome::Success);
    }
    let report = match plan.executor.kind {
        ExecutorKind::Local => run_local(env, &plan, &run_id, args).await?,
        ExecutorKind::Kubernetes => run_kubernetes(env, &plan, &run_id, args).await?,
    };
    if let Some(path) = &args.report {
        std::fs::write(path, super::review_html::render(&report))
            .map_err(|e| anyhow::anyhow!("cannot write {}: {e}", path.display()))?;
    }
    if env.json() {
        output::json(&report)?;
    } else {
        print_summary(&report)?;
    }
    Ok(if report.passed {
        Outcome::Success
    } else {
        Outcome::Failed
    })
}

#[cfg(not(feature = "kube"))]
async fn run_kubernetes(
    _env: &Env<'_>,
    _plan: &Plan,
    _run_id: &RunId,
    _args: &TrainingStorageArgs,
) -> anyhow::Result<DemoReport> {
    anyhow::bail!(
        "this dpuctl was built without the Kubernetes executor: rebuild with \
         `cargo build --release -p dpuctl --features kube`, or use --executor local"
    )
}

#[cfg(feature = "kube")]
async fn run_kubernetes(
    env: &Env<'_>,
    plan: &Plan,
    run_id: &RunId,
    args: &TrainingStorageArgs,
) -> anyhow::Result<DemoReport> {
    super::kube_run::run(env, plan, run_id, args).await
}

/// Runs `body` as step `index` with its progress line.
pub(crate) fn step(
    steps: &mut Vec<StepReport>,
    name: &'static str,
    title: &'static str,
    body: impl FnOnce() -> StepOutcome,
) -> bool {
    let progress = Progress::start(steps.len() + 1, STEPS, title);
    let report = progress.finish(name, title, body());
    let passed = report.passed();
    steps.push(report);
    passed
}

/// Whole-run accounting shared by both executors: RDMA packets per local port and the
/// DPU volume's read bytes since the storage step.
pub(crate) async fn accounting(
    rdma_before: &[(String, crate::roce::rdma_evidence::RdmaTotals)],
    rdma_after: &[(String, crate::roce::rdma_evidence::RdmaTotals)],
    storage: Option<&StorageAccount>,
    training: Option<&serde_json::Value>,
) -> Vec<AccountLine> {
    let mut lines = Vec::new();
    if let Some(acc) = storage {
        let now = storage_step::volume_bytes_read(&acc.channel, &acc.stats_name)
            .await
            .ok();
        lines.push(AccountLine {
            path: "storage",
            what: format!(
                "bytes read from the DPU volume {} during the run",
                acc.stats_name
            ),
            value: now.map(|n| n.saturating_sub(acc.bytes_read_at_start)),
            unit: "bytes",
        });
        lines.push(AccountLine {
            path: "storage",
            what: "bytes the manifest lists (read and hashed by the storage step)".to_owned(),
            value: Some(acc.manifest_bytes),
            unit: "bytes",
        });
    }
    if let Some(t) = training {
        lines.push(AccountLine {
            path: "training",
            what: "bytes the training script says it read from the storage path".to_owned(),
            value: t.get("bytes_read").and_then(serde_json::Value::as_u64),
            unit: "bytes",
        });
    }
    for (port, after) in rdma_after {
        let before = rdma_before.iter().find(|(p, _)| p == port).map(|(_, t)| t);
        lines.push(AccountLine {
            path: "communication",
            what: format!("RDMA packets sent + received on {port} (this host)"),
            value: before.and_then(|b| Some(after.packets?.saturating_sub(b.packets?))),
            unit: "packets",
        });
    }
    lines
}

/// Steps a and b, the same for both executors: returns whether each passed and the
/// storage account for the review.
pub(crate) async fn storage_and_communication(
    env: &Env<'_>,
    plan: &Plan,
    dir: &RunDir,
    steps: &mut Vec<StepReport>,
) -> (bool, bool, Option<StorageAccount>) {
    let progress = Progress::start(steps.len() + 1, STEPS, "storage ready");
    let (outcome, storage) = storage_step::run(env, plan).await;
    steps.push(progress.finish("storage", "storage ready", outcome));
    let storage_ok = steps.last().is_some_and(StepReport::passed);
    let comm_ok = step(steps, "communication", "communication verified", || {
        local_exec::communication(plan, dir, &env.cli.sys_root)
    });
    (storage_ok, comm_ok, storage)
}

/// Step d, the same for both executors (the merge runs where the shared path is
/// mounted): skipped unless training passed.
pub(crate) fn merge_step(
    plan: &Plan,
    dir: &RunDir,
    train_ok: bool,
    steps: &mut Vec<StepReport>,
) -> bool {
    if train_ok {
        step(steps, "merge", "merge and compare", || {
            local_exec::merge(plan, dir)
        })
    } else {
        steps.push(StepReport::skipped(
            "merge",
            "merge and compare",
            "training did not pass",
        ));
        false
    }
}

/// The serving checks against `base_url`, folded into the serving step's outcome.
pub(crate) async fn serving_checks(
    plan: &Plan,
    base_url: String,
    ca: Option<std::path::PathBuf>,
    out: &mut StepOutcome,
) -> ServingReport {
    let report = serving::check(&ServingCheck {
        base_url: base_url.clone(),
        model: plan.serving.model.clone(),
        answers: plan.serving.answers.clone(),
        health_timeout: std::time::Duration::from_secs(300),
        request_timeout: std::time::Duration::from_secs(120),
        ca,
    })
    .await;
    out.note(format!("checked {base_url}"));
    if report.passed {
        out.headline = format!(
            "{} archived answers and a streamed completion check out",
            plan.serving.answers.len()
        );
    } else {
        report.problems.iter().for_each(|p| out.note(p.clone()));
        out.failure = Some(report.problems.first().cloned().unwrap_or_default());
    }
    report
}

/// Step f: the accounting of the whole run, with where the logs and the report are.
pub(crate) async fn review_step(
    steps: &mut Vec<StepReport>,
    lines: Vec<AccountLine>,
    dir: &RunDir,
    report: Option<&std::path::Path>,
) -> Vec<AccountLine> {
    let progress = Progress::start(steps.len() + 1, STEPS, "review");
    let mut out = StepOutcome {
        headline: format!("{} accounting lines", lines.len()),
        ..StepOutcome::default()
    };
    out.note(format!("logs: {}", dir.0.display()));
    if let Some(path) = report {
        out.note(format!("report: {}", path.display()));
    }
    steps.push(progress.finish("review", "review", out));
    lines
}

async fn run_local(
    env: &Env<'_>,
    plan: &Plan,
    run_id: &RunId,
    args: &TrainingStorageArgs,
) -> anyhow::Result<DemoReport> {
    let dir = RunDir::for_plan(plan, run_id.as_str())?;
    let root = dpu_probe::SysRoot::new(&env.cli.sys_root);
    let rdma_before = snapshot(&root);
    let mut steps = Vec::new();

    let (storage_ok, comm_ok, storage) =
        storage_and_communication(env, plan, &dir, &mut steps).await;

    // c. training
    let mut training_result = None;
    let train_ok = if storage_ok && comm_ok {
        step(&mut steps, "training", "training job", || {
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

    let merge_ok = merge_step(plan, &dir, train_ok, &mut steps);

    // e. serving
    let mut serving_report = None;
    let mut server = None;
    if merge_ok {
        let progress = Progress::start(steps.len() + 1, STEPS, "serving");
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
    let lines = review_step(&mut steps, lines, &dir, args.report.as_deref()).await;

    // g. cleanup
    let progress = Progress::start(steps.len() + 1, STEPS, "cleanup");
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
        plan: args.plan.display().to_string(),
        executor: "local",
        passed,
        steps,
        accounting: lines,
        serving: serving_report,
    })
}

fn print_summary(report: &DemoReport) -> anyhow::Result<()> {
    let mut table = output::table(["step", "result", "seconds", "why"]);
    for s in &report.steps {
        table.add_row(vec![
            s.title.to_owned(),
            format!("{:?}", s.status).to_uppercase(),
            format!("{:.1}", s.seconds),
            s.reason.clone(),
        ]);
    }
    output::print_table(&table)?;
    let mut acc = output::table(["path", "counted", "amount"]);
    for l in &report.accounting {
        acc.add_row(vec![
            l.path.to_owned(),
            l.what.clone(),
            l.value
                .map_or_else(|| "-".to_owned(), |v| format!("{v} {}", l.unit)),
        ]);
    }
    output::print_table(&acc)?;
    output::line(&format!(
        "run {}: {}",
        report.run_id,
        if report.passed { "PASSED" } else { "FAILED" }
    ))
}
