//! Every check's status and when they ran, as textfile metrics (`--metrics-file`): the
//! checklist knows its own series; [`crate::textfile`] only writes them.

use std::time::SystemTime;

use super::rules::Status;
use super::CheckResult;
use crate::textfile::{self, Textfile};

/// Every check's status, and when they ran.
pub fn of(results: &[CheckResult], at: SystemTime) -> Textfile {
    let mut t = Textfile::default();
    for r in results {
        let status = match r.status {
            Status::Pass => "pass",
            Status::Warn => "warn",
            Status::Fail => "fail",
            Status::Skip => "skip",
        };
        let labels: Vec<(&str, &str)> = match r.subject.as_deref() {
            Some(rail) => vec![("check", r.id), ("rail", rail)],
            None => vec![("check", r.id)],
        };
        t.state_set(
            "dpu_check_status",
            "The check's result: 1 for the state it reached",
            &labels,
            "status",
            &["pass", "warn", "fail", "skip"],
            status,
        );
    }
    t.gauge(
        "dpu_check_last_run_timestamp_seconds",
        "When the checks ran (Unix time)",
        &[],
        textfile::unix_seconds(at),
    );
    t
}
