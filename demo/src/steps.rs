//! The steps both executors share (storage, the NCCL gate, merge, serving checks, review)
//! and the whole run's accounting, with the context every step gets.

use std::time::Duration;

use super::local_exec::{self, RunDir};
use super::params::TrainingStorage;
use super::plan::Plan;
use super::report::AccountLine;
use super::serving::{self, ServingCheck, ServingReport};
use super::step_report::{Progress, SharedObserver, StepOutcome, StepReport};
use super::storage_step::{self, volume_reading, StorageAccount};
use dpu_host::accounting::deltas::{sum, Movement};
use dpu_host::agent::session::Session;
use dpu_host::roce::rdma_evidence::{movement, PortReading};

/// The number of steps a run has, for "step i of N".
pub const STEPS: usize = 7;

/// What every step of one run shares.
#[derive(Clone, Copy)]
pub struct Cx<'a> {
    /// The session (the agent connection and the sys root).
    pub session: &'a Session,
    /// Told as steps start and end.
    pub observer: &'a SharedObserver<'a>,
    /// The run's parameters.
    pub args: &'a TrainingStorage,
}

impl std::fmt::Debug for Cx<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Cx")
            .field("args", &self.args)
            .finish_non_exhaustive()
    }
}

impl<'a> Cx<'a> {
    /// Starts step number `steps.len() + 1`.
    pub fn progress(&self, steps: &[StepReport], title: &str) -> Progress<'a> {
        Progress::start(self.observer, steps.len() + 1, STEPS, title)
    }
}

/// Runs `body` as the next step.
pub fn step(
    cx: &Cx<'_>,
    steps: &mut Vec<StepReport>,
    name: &'static str,
    title: &'static str,
    body: impl FnOnce() -> StepOutcome,
) -> bool {
    let progress = cx.progress(steps, title);
    let report = progress.finish(name, title, body());
    let passed = report.passed();
    steps.push(report);
    passed
}

/// Whole-run accounting shared by both executors: RDMA packets per local port and the
/// DPU volume's read bytes since the storage step.
pub async fn accounting(
    rdma_before: &[(String, PortReading)],
    rdma_after: &[(String, PortReading)],
    storage: Option<&StorageAccount>,
    training: Option<&serde_json::Value>,
) -> Vec<AccountLine> {
    let volume = match storage {
        Some(acc) => Some((
            acc,
            storage_step::volume_bytes_read(&acc.channel, &acc.stats_name).await,
        )),
        None => None,
    };
    account_lines(rdma_before, rdma_after, volume, training)
}

/// [`accounting`] from readings already taken: the pure part, unit-tested.
pub fn account_lines(
    rdma_before: &[(String, PortReading)],
    rdma_after: &[(String, PortReading)],
    volume: Option<(&StorageAccount, Result<u64, String>)>,
    training: Option<&serde_json::Value>,
) -> Vec<AccountLine> {
    let mut lines = Vec::new();
    if let Some((acc, now)) = volume {
        let moved = match now {
            Ok(now) => sum(
                &dpu_probe::snapshot::diff(
                    &volume_reading(&acc.stats_name, acc.bytes_read_at_start, Duration::ZERO),
                    &volume_reading(&acc.stats_name, now, Duration::ZERO),
                ),
                |_| true,
            ),
            Err(why) => Movement::Inconclusive(format!("cannot read the volume's io stats: {why}")),
        };
        lines.push(AccountLine {
            path: "storage",
            what: format!(
                "bytes read from the DPU volume {} during the run",
                acc.stats_name
            ),
            value: moved.amount(),
            unit: "bytes",
            inconclusive: moved.inconclusive().map(str::to_owned),
        });
        lines.push(AccountLine {
            path: "storage",
            what: "bytes the manifest lists (read and hashed by the storage step)".to_owned(),
            value: Some(acc.manifest_bytes),
            unit: "bytes",
            inconclusive: None,
        });
    }
    if let Some(t) = training {
        lines.push(AccountLine {
            path: "training",
            what: "bytes the training script says it read from the storage path".to_owned(),
            value: t.get("bytes_read").and_then(serde_json::Value::as_u64),
            unit: "bytes",
            inconclusive: None,
        });
    }
    for (port, after) in rdma_after {
        let moved = match rdma_before.iter().find(|(p, _)| p == port) {
            Some((_, before)) => movement(before, after).packets,
            None => Movement::Inconclusive(format!("{port} appeared during the run")),
        };
        lines.push(AccountLine {
            path: "communication",
            what: format!("RDMA packets sent + received on {port} (this host)"),
            value: moved.amount(),
            unit: "packets",
            inconclusive: moved.inconclusive().map(str::to_owned),
        });
    }
    for (port, _) in rdma_before {
        if !rdma_after.iter().any(|(p, _)| p == port) {
            lines.push(AccountLine {
                path: "communication",
                what: format!("RDMA packets sent + received on {port} (this host)"),
                value: None,
                unit: "packets",
                inconclusive: Some(format!("{port} vanished during the run")),
            });
        }
    }
    lines
}

/// Steps a and b, the same for both executors: returns whether each passed and the
/// storage account for the review.
pub async fn storage_and_communication(
    cx: &Cx<'_>,
    plan: &Plan,
    dir: &RunDir,
    steps: &mut Vec<StepReport>,
) -> (bool, bool, Option<StorageAccount>) {
    let progress = cx.progress(steps, "storage ready");
    let (outcome, storage) = storage_step::run(cx.session, plan).await;
    steps.push(progress.finish("storage", "storage ready", outcome));
    let storage_ok = steps.last().is_some_and(StepReport::passed);
    let comm_ok = step(cx, steps, "communication", "communication verified", || {
        local_exec::communication(plan, dir, cx.session.sys_root_path())
    });
    (storage_ok, comm_ok, storage)
}

/// Step d, the same for both executors (the merge runs where the shared path is
/// mounted): skipped unless training passed.
pub fn merge_step(
    cx: &Cx<'_>,
    plan: &Plan,
    dir: &RunDir,
    train_ok: bool,
    steps: &mut Vec<StepReport>,
) -> bool {
    if train_ok {
        step(cx, steps, "merge", "merge and compare", || {
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
pub async fn serving_checks(
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
pub async fn review_step(
    cx: &Cx<'_>,
    steps: &mut Vec<StepReport>,
    lines: Vec<AccountLine>,
    dir: &RunDir,
) -> Vec<AccountLine> {
    let report = cx.args.report.as_deref();
    let progress = cx.progress(steps, "review");
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

#[cfg(test)]
mod tests {
    use std::time::SystemTime;

    use dpu_probe::snapshot::{Sample, Snapshot, Source, Unit};

    use super::*;
    use crate::report::{DemoReport, DemoVerdict};
    use dpu_host::roce::rdma_evidence::CounterSource;

    fn port(sent: u64) -> Vec<(String, PortReading)> {
        let sample = |name: &'static str, v| {
            Sample::cumulative(
                Source::RdmaHw,
                "rdmaDevices/rxe0/ports/1",
                name,
                v,
                Unit::Packets,
            )
        };
        vec![(
            "rxe0/1".to_owned(),
            PortReading {
                snapshot: Snapshot {
                    taken_at: SystemTime::UNIX_EPOCH,
                    monotonic_start: Duration::ZERO,
                    monotonic_end: Duration::ZERO,
                    boot_id: Some("b".to_owned()),
                    samples: vec![sample("sent_pkts", sent), sample("rcvd_pkts", 0)],
                    errors: Vec::new(),
                    read: dpu_probe::snapshot::ReadReport::default(),
                },
                source: CounterSource::Sysfs,
            },
        )]
    }

    fn report(lines: Vec<AccountLine>) -> DemoReport {
        DemoReport {
            run_id: "r".to_owned(),
            plan: "p".to_owned(),
            executor: "local",
            passed: true,
            steps: Vec::new(),
            accounting: lines,
            serving: None,
        }
    }

    #[test]
    fn a_counter_reset_mid_run_makes_the_demo_inconclusive_not_zero() {
        let fine = account_lines(&port(100), &port(5_100), None, None);
        assert_eq!(fine[0].value, Some(5_000));
        assert_eq!(report(fine).verdict(), DemoVerdict::Passed);

        let reset = account_lines(&port(100_000), &port(40), None, None);
        assert_eq!(reset[0].value, None, "a reset is not 0 packets");
        assert!(reset[0]
            .inconclusive
            .as_deref()
            .is_some_and(|w| w.contains("reset")));
        let mut failed = report(reset.clone());
        assert_eq!(report(reset).verdict(), DemoVerdict::Inconclusive);
        // A failed step still says failed.
        failed.passed = false;
        assert_eq!(failed.verdict(), DemoVerdict::Failed);

        let vanished = account_lines(&port(100), &[], None, None);
        assert!(vanished[0]
            .inconclusive
            .as_deref()
            .is_some_and(|w| w.contains("vanished")));
    }
}
