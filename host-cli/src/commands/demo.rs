//! `dpuctl demo ...`: flags to the demo's parameters, the run (dpu-host) with a spinner and
//! a verdict line per step on stderr, the HTML review, and the report as a table or JSON.
//! Exit 0: every step passed; 1: a step failed; 2: the plan is invalid; 3: every step
//! passed but a counter of the run's accounting reset, vanished or appeared (unknown, not
//! zero).

use std::time::Duration;

use dpu_demo::run::{
    training_storage, DemoError, DemoReport, DemoVerdict, TrainingStorage, TrainingStorageResult,
};
use dpu_demo::serving::{check_serving_command, CheckServing, ServingReport};
use dpu_demo::step_report::{StepEvent, StepReport, StepStatus};
use dpu_host::observe::Observer;
use indicatif::{ProgressBar, ProgressStyle};

use super::env::Env;
use crate::cli::DemoCommand;
use crate::demo_args::{CheckServingArgs, TrainingStorageArgs};
use crate::exit::Exit;
use crate::output;

pub(crate) async fn run(env: &Env<'_>, cmd: &DemoCommand) -> anyhow::Result<Exit> {
    match cmd {
        DemoCommand::TrainingStorage(args) => training(env, args).await,
        DemoCommand::CheckServing(args) => check_serving(env, args).await,
    }
}

async fn training(env: &Env<'_>, args: &TrainingStorageArgs) -> anyhow::Result<Exit> {
    let params = TrainingStorage {
        plan: args.plan.clone(),
        dry_run: args.dry_run,
        executor: args.executor.map(Into::into),
        report: args.report.clone(),
        run_id: args.run_id.clone(),
        ingress_ca: env.cli.ca.clone(),
    };
    let mut spinner = Spinner::default();
    let report = match training_storage(&env.session, &params, &mut spinner).await {
        Ok(TrainingStorageResult::DryRun(text)) => {
            output::line(&text)?;
            return Ok(Exit::Success);
        }
        Ok(TrainingStorageResult::Ran(report)) => report,
        Err(DemoError::InvalidPlan(e)) => {
            output::diag(&format!("dpuctl: {e}"));
            return Ok(Exit::Usage);
        }
        Err(e) => return Err(e.into()),
    };
    if let Some(path) = &args.report {
        std::fs::write(path, dpu_demo::review_html::render(&report))
            .map_err(|e| anyhow::anyhow!("cannot write {}: {e}", path.display()))?;
    }
    if env.json() {
        output::json(&report)?;
    } else {
        print_summary(&report)?;
    }
    Ok(match report.verdict() {
        DemoVerdict::Passed => Exit::Success,
        DemoVerdict::Failed => Exit::Failed,
        DemoVerdict::Inconclusive => {
            output::diag(
                "dpuctl: no step failed, but the counters could not judge the run (see the \
                 step or accounting lines marked inconclusive)",
            );
            Exit::Inconclusive
        }
    })
}

async fn check_serving(env: &Env<'_>, args: &CheckServingArgs) -> anyhow::Result<Exit> {
    let params = CheckServing {
        plan: args.plan.clone(),
        url: args.url.clone(),
        health_timeout: Duration::from_secs(args.health_timeout),
        ca: args.ca.clone(),
        request_timeout: env.session.agent().timeout(),
    };
    let report = check_serving_command(&params).await?;
    if env.json() {
        output::json(&report)?;
    } else {
        print_report(&report)?;
    }
    Ok(if report.passed {
        Exit::Success
    } else {
        Exit::Failed
    })
}

/// A spinner while a step runs (stderr, hidden when not a terminal), then one line with
/// its verdict and time.
#[derive(Debug, Default)]
struct Spinner {
    bar: Option<ProgressBar>,
}

impl Observer<StepEvent<'_>> for Spinner {
    fn event(&mut self, event: &StepEvent<'_>) {
        match *event {
            StepEvent::Started {
                index,
                total,
                title,
            } => self.started(index, total, title),
            StepEvent::Finished {
                index,
                total,
                report,
            } => self.finished(index, total, report),
        }
    }
}

impl Spinner {
    fn started(&mut self, index: usize, total: usize, title: &str) {
        let bar = ProgressBar::new_spinner();
        if let Ok(style) = ProgressStyle::with_template("{spinner} [{prefix}] {msg} {elapsed}") {
            bar.set_style(style);
        }
        bar.set_prefix(format!("{index}/{total}"));
        bar.set_message(title.to_owned());
        bar.enable_steady_tick(Duration::from_millis(200));
        self.bar = Some(bar);
    }

    fn finished(&mut self, index: usize, total: usize, report: &StepReport) {
        if let Some(bar) = self.bar.take() {
            bar.finish_and_clear();
        }
        output::diag(&format!(
            "[{index}/{total}] {}: {} in {:.1} s{}",
            report.title,
            match report.status {
                StepStatus::Passed => "PASSED",
                StepStatus::Inconclusive => "INCONCLUSIVE",
                StepStatus::Failed | StepStatus::Skipped => "FAILED",
            },
            report.seconds,
            if report.reason.is_empty() {
                String::new()
            } else {
                format!(" — {}", report.reason)
            }
        ));
    }
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
            match (&l.value, &l.inconclusive) {
                (Some(v), _) => format!("{v} {}", l.unit),
                (None, Some(why)) => format!("inconclusive: {why}"),
                (None, None) => "-".to_owned(),
            },
        ]);
    }
    output::print_table(&acc)?;
    output::line(&format!(
        "run {}: {}",
        report.run_id,
        match report.verdict() {
            DemoVerdict::Passed => "PASSED",
            DemoVerdict::Failed => "FAILED",
            DemoVerdict::Inconclusive => "INCONCLUSIVE",
        }
    ))
}

/// The report as a table for people, then the problems, then the verdict.
fn print_report(report: &ServingReport) -> anyhow::Result<()> {
    let ok = |passed: bool| if passed { "ok" } else { "FAIL" };
    let mut table = output::table(["check", "result", "detail"]);
    table.add_row([
        "health".to_owned(),
        ok(report.ready_after_s.is_some()).to_owned(),
        match report.ready_after_s {
            Some(s) => format!("ready after {s:.1} s"),
            None => "not ready".to_owned(),
        },
    ]);
    if let Some(ids) = &report.listed_models {
        table.add_row([
            "model".to_owned(),
            ok(ids.contains(&report.model)).to_owned(),
            format!("{} (listed: {})", report.model, ids.join(", ")),
        ]);
    }
    for answer in &report.answers {
        table.add_row([
            format!("answer {:?}", answer.prompt),
            ok(answer.passed).to_owned(),
            match answer.similarity {
                Some(s) => format!("similarity {s:.2} (min {:.2})", answer.min_similarity),
                None => "no answer".to_owned(),
            },
        ]);
    }
    if let Some(stream) = &report.stream {
        table.add_row([
            "stream".to_owned(),
            ok(stream.problems().is_empty()).to_owned(),
            format!(
                "{} chunks, first after {:.0} ms, last after {:.0} ms{}{}",
                stream.content_chunks,
                stream.first_chunk_ms.unwrap_or(0.0),
                stream.last_chunk_ms.unwrap_or(0.0),
                if stream.done { "" } else { ", no [DONE]" },
                if stream.buffered { ", BUFFERED" } else { "" },
            ),
        ]);
    }
    output::print_table(&table)?;
    for problem in &report.problems {
        output::line(&format!("problem: {problem}"))?;
    }
    output::line(if report.passed {
        "serving: PASSED"
    } else {
        "serving: FAILED"
    })
}
