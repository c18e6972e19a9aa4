//! What `dpuctl prove qos` returns, and its two machine-readable forms: fio-shaped JSON
//! (each window a job with fio's read keys, so a dashboard that reads fio reads this) and
//! Prometheus textfile metrics.

use std::time::SystemTime;

use serde::Serialize;

use super::qos_judge::{ReadLimit, WindowJudged};
use super::report::ProofReport;
use crate::textfile::Textfile;

/// How long the proof lifted the limit, and that it set it back.
#[derive(Debug, Clone, Serialize)]
pub struct LiftRecord {
    /// How long the limit was lifted, seconds.
    pub seconds: f64,
    /// Whether it was set back and the agent's applied limit is the original again (a
    /// report is only made when it was: a failed restore is an error).
    pub restored: bool,
}

/// A QoS proof's result: the proof's lines and verdict, the limit, each window.
#[derive(Debug, Serialize)]
pub struct QosReport {
    /// The verdict, every line, the notes.
    pub proof: ProofReport,
    /// The limit judged.
    pub limit: ReadLimit,
    /// The tolerance used.
    pub tolerance: f64,
    /// Each window in the order it ran, with its read and bounds.
    pub windows: Vec<WindowJudged>,
    /// The lift, when the limit was lifted.
    pub lifted: Option<LiftRecord>,
}

/// fio's top level with the proof beside the jobs.
#[derive(Debug, Serialize)]
pub struct FioShaped<'a> {
    /// One job per window, named by it (`limited`, `lifted`, `restored`).
    jobs: Vec<FioJob>,
    /// The proof: verdict, lines, notes (as `prove storage -o json` prints it).
    proof: &'a ProofReport,
    /// The limit, tolerance, each window's bounds and verdict, and the lift.
    qos: QosSection<'a>,
}

#[derive(Debug, Serialize)]
struct QosSection<'a> {
    limit: &'a ReadLimit,
    tolerance: f64,
    windows: &'a [WindowJudged],
    lifted: &'a Option<LiftRecord>,
}

#[derive(Debug, Serialize)]
struct FioJob {
    jobname: &'static str,
    read: FioRead,
}

/// fio's read keys: `bw` in KiB/s, `runtime` in ms.
#[derive(Debug, Serialize)]
struct FioRead {
    io_bytes: u64,
    bw_bytes: u64,
    bw: u64,
    iops: f64,
    runtime: u64,
    total_ios: u64,
}

#[allow(
    clippy::cast_possible_truncation,
    clippy::cast_sign_loss,
    clippy::cast_precision_loss
)]
fn per_second(count: u64, seconds: f64) -> f64 {
    if seconds > 0.0 {
        count as f64 / seconds
    } else {
        0.0
    }
}

impl QosReport {
    /// The report as fio-shaped JSON: `jobs[0]` is the first limited window.
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
    pub fn fio_shaped(&self) -> FioShaped<'_> {
        let jobs = self
            .windows
            .iter()
            .map(|w| {
                let bw_bytes = per_second(w.read.bytes, w.read.seconds) as u64;
                FioJob {
                    jobname: w.window.as_str(),
                    read: FioRead {
                        io_bytes: w.read.bytes,
                        bw_bytes,
                        bw: bw_bytes / 1024,
                        iops: per_second(w.read.ios, w.read.seconds),
                        runtime: (w.read.seconds * 1000.0) as u64,
                        total_ios: w.read.ios,
                    },
                }
            })
            .collect();
        FioShaped {
            jobs,
            proof: &self.proof,
            qos: QosSection {
                limit: &self.limit,
                tolerance: self.tolerance,
                windows: &self.windows,
                lifted: &self.lifted,
            },
        }
    }

    /// The proof's metrics (`dpu_proof_*{proof="qos"}`) and the rate of each window beside
    /// the limit.
    #[allow(clippy::cast_precision_loss)]
    pub fn textfile(&self, at: SystemTime) -> Textfile {
        let mut t = self.proof.textfile(at);
        t.gauge(
            "dpu_proof_qos_limit_bytes_per_second",
            "The volume's read limit the QoS proof judged",
            &[],
            self.limit.bytes_per_sec as f64,
        );
        for w in &self.windows {
            t.gauge(
                "dpu_proof_qos_read_bytes_per_second",
                "The rate the QoS proof's read achieved, by window",
                &[("window", w.window.as_str())],
                per_second(w.read.bytes, w.read.seconds),
            );
        }
        t
    }
}
