//! `dpuctl experiment run|recover|check`: a plan file to a run (dpu-host), progress on
//! stderr, the verdict as a table or JSON, the page and the metrics file, and the exit
//! code: 0 for a verdict (IMPROVEMENT, REGRESSION, NO EFFECT), 3 for INCONCLUSIVE, 1 for
//! a run that stopped (a failed trial, a cancel) with the knob restored, 2 for bad input
//! or a knob that could not be restored.

use std::path::Path;

use anyhow::Context as _;
use dpu_host::experiment::journal::{self, Recovery};
use dpu_host::experiment::knob::{machine_knob, values_text};
use dpu_host::experiment::measure_roce::RoceContext;
use dpu_host::experiment::measurement::measurement_for;
use dpu_host::experiment::page::{render, PageEntry};
use dpu_host::experiment::plan::Plan;
use dpu_host::experiment::plan_load::parse;
use dpu_host::experiment::run::{self, Cancel, ExperimentEvent, RunError, RunReport};
use dpu_host::experiment::verdict::{number, ExperimentVerdict};

use crate::cli::OutputFormat;
use crate::exit::Exit;
use crate::experiment_cli::{ExperimentCommand, ExperimentRunArgs};
use crate::output;

pub(crate) async fn run(
    format: OutputFormat,
    root: &dpu_probe::SysRoot,
    cmd: &ExperimentCommand,
) -> anyhow::Result<Exit> {
    match cmd {
        ExperimentCommand::Check(args) => {
            let plan = load(&args.plan)?;
            let (a, b) = values_text(&plan.knob);
            output::line(&format!(
                "{}: valid; {} trials per phase, order {}, {} is better, knob A = {a}, B = {b}",
                args.plan.display(),
                plan.trials,
                plan.order.name(),
                plan.better.name(),
            ))?;
            Ok(Exit::Success)
        }
        ExperimentCommand::Recover(args) => {
            match journal::recover(&args.journal, Path::new("/"))? {
                Recovery::Nothing => output::line(&format!(
                    "no experiment journal at {}: nothing to recover",
                    args.journal.display()
                ))?,
                Recovery::Restored {
                    knob,
                    original,
                    found,
                    pid,
                    plan,
                } => output::line(&format!(
                    "restored {knob} from {found} to {original} (left by pid {pid}, plan {})",
                    plan.display()
                ))?,
            }
            Ok(Exit::Success)
        }
        ExperimentCommand::Run(args) => run_plan(format, root, args).await,
    }
}

fn load(path: &Path) -> anyhow::Result<Plan> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("cannot read the plan {}", path.display()))?;
    parse(&text).with_context(|| format!("the plan {} is not valid", path.display()))
}

async fn run_plan(
    format: OutputFormat,
    root: &dpu_probe::SysRoot,
    args: &ExperimentRunArgs,
) -> anyhow::Result<Exit> {
    let plan = load(&args.plan)?;
    let knob = machine_knob(&plan.knob)?;
    let roce = RoceContext {
        root: root.clone(),
        ssh: args.ssh.clone(),
    };
    // A roce-perf peer is resolved here, before the journal and the knob.
    let mut measure = measurement_for(&plan.measurement, &roce)?;
    let settings = run::settings(&args.plan, &args.journal.journal);
    let cancel = Cancel::default();
    let signals = tokio::spawn(cancel_on_signal(cancel.clone()));
    let worker_cancel = cancel.clone();
    let plan_for_run = plan.clone();
    let result = tokio::task::spawn_blocking(move || {
        let mut progress = |event: &ExperimentEvent| output::diag(&describe(event));
        run::run(
            &plan_for_run,
            &settings,
            knob.as_deref(),
            measure.as_mut(),
            &worker_cancel,
            &mut progress,
        )
    })
    .await
    .context("the experiment's thread failed")?;
    signals.abort();
    let report = match result {
        Ok(report) => report,
        Err(e @ RunError::Revert { .. }) => return Err(e.into()),
        Err(e) => {
            for line in crate::report::error_lines(&anyhow::Error::new(e)) {
                output::diag(&line);
            }
            return Ok(Exit::Failed);
        }
    };
    match format {
        OutputFormat::Json => output::json(&report)?,
        OutputFormat::Table => print_report(&report)?,
    }
    let title = args.plan.display().to_string();
    if let Some(path) = &args.html {
        let page = render(&[PageEntry {
            title: &title,
            report: &report,
        }])?;
        std::fs::write(path, page)
            .with_context(|| format!("cannot write the page {}", path.display()))?;
    }
    if let Some(path) = &args.metrics_file {
        dpu_host::experiment::metrics::textfile(&title, &report, std::time::SystemTime::now())
            .write_atomic(path)?;
    }
    Ok(match report.analysis.verdict {
        ExperimentVerdict::Inconclusive => Exit::Inconclusive,
        _ => Exit::Success,
    })
}

/// Sets `cancel` on the first SIGINT or SIGTERM: the runner stops between trials (the
/// running command is killed) and restores the knob before the process exits.
async fn cancel_on_signal(cancel: Cancel) {
    use tokio::signal::unix::{signal, SignalKind};
    let (Ok(mut interrupt), Ok(mut terminate)) = (
        signal(SignalKind::interrupt()),
        signal(SignalKind::terminate()),
    ) else {
        tracing::warn!("cannot watch SIGINT/SIGTERM: a signal would not restore the knob");
        return;
    };
    tokio::select! {
        _ = interrupt.recv() => {}
        _ = terminate.recv() => {}
    }
    output::diag("experiment: stopping after a signal; restoring the knob");
    cancel.set();
}

/// One progress line.
fn describe(event: &ExperimentEvent) -> String {
    match event {
        ExperimentEvent::Recovered {
            knob,
            original,
            pid,
        } => format!(
            "experiment: a journal left by pid {pid} (no longer running) was undone: {knob} restored to {original}"
        ),
        ExperimentEvent::Original {
            knob,
            value,
            differs_from_a,
        } => {
            if *differs_from_a {
                format!("experiment: {knob} is {value}, not A; A is set first and {value} restored at the end")
            } else {
                format!("experiment: {knob} is {value} (A); journal written")
            }
        }
        ExperimentEvent::Phase { label, value } => format!("experiment: phase {label}: {value}"),
        ExperimentEvent::Trial {
            label,
            trial,
            value,
        } => format!("experiment: {label} trial {trial}: {}", number(*value)),
        ExperimentEvent::Refused {
            label,
            trial,
            value,
            reason,
        } => format!(
            "experiment: {label} trial {trial}: {} REFUSED, not counted: {reason}",
            number(*value)
        ),
        ExperimentEvent::Reverted { knob, value } => {
            format!("experiment: {knob} restored to {value}; journal removed")
        }
    }
}

fn print_report(report: &RunReport) -> anyhow::Result<()> {
    let a = &report.analysis;
    output::line(&format!("{}: {}", a.verdict.as_str(), a.summary))?;
    output::line(&format!(
        "knob {} A = {} B = {}; metric {} ({} is better)",
        report.knob,
        report.a,
        report.b,
        report.metric,
        a.better.name()
    ))?;
    let mut table = output::table(["PHASE", "MEDIAN", "MAD", "TRIALS"]);
    for phase in &a.phases {
        let trials: Vec<String> = phase.trials.iter().map(|t| number(*t)).collect();
        table.add_row(vec![
            phase.label.clone(),
            phase.median.map(number).unwrap_or_default(),
            phase.mad.map(number).unwrap_or_default(),
            trials.join(" "),
        ]);
    }
    output::print_table(&table)?;
    for refused in report.trials.iter().filter(|t| !t.counted) {
        output::line(&format!(
            "refused: {} trial {} ({}): {}",
            refused.phase,
            refused.trial,
            number(refused.value),
            refused.refused.as_deref().unwrap_or_default()
        ))?;
    }
    for doubt in &a.doubts {
        output::line(&format!("doubt: {doubt}"))?;
    }
    if let Some(needed) = a.trials_needed.as_ref().and_then(|t| t.per_phase) {
        output::line(&format!("trials per phase that could tell: about {needed}"))?;
    }
    Ok(())
}
