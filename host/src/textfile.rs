//! A command's verdict and key numbers as a file for node_exporter's textfile collector
//! (`--metrics-file FILE.prom`), so a proof or check run from cron or a systemd timer on
//! every node becomes something Prometheus can alert on
//! (`dpu_proof_verdict{proof="storage",verdict="proven"} == 0`).
//!
//! The text is prometheus-client's (label values escaped as the exposition format
//! requires); the file is replaced atomically (a temporary file in the same directory,
//! synced, then renamed), so the collector never reads half a file. Verdicts are state sets:
//! one series per possible verdict, 1 for the one that happened, so an alert names the
//! state it wants without knowing an encoding.

use std::collections::BTreeMap;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicU64;
use std::time::{SystemTime, UNIX_EPOCH};

use prometheus_client::encoding::text::encode;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::{Metric, Registry};

use crate::accounting::{Outcome, Verdict};
use crate::check::rules::Status;
use crate::check::CheckResult;
use crate::fleet::report::{FleetReport, NodeStatus};
use crate::prove::ProofReport;
use crate::roce::perf::{PathVerdict, PerfReport};

type Labels = Vec<(String, String)>;
type GaugeFamily = Family<Labels, Gauge<f64, AtomicU64>>;
/// Whole numbers (states, counts) print as integers.
type CountFamily = Family<Labels, Gauge>;

/// Why the metrics file could not be written.
#[derive(Debug, thiserror::Error)]
pub enum TextfileError {
    /// The metrics could not be encoded (a name the encoder refuses).
    #[error("cannot encode the metrics")]
    Encode(#[source] std::fmt::Error),
    /// The file or its temporary sibling could not be written or renamed.
    #[error("cannot write the metrics file {}", path.display())]
    Write {
        /// The path that failed.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
}

/// Gauges by name and labels, rendered together.
#[derive(Default)]
pub struct Textfile {
    registry: Registry,
    families: BTreeMap<&'static str, GaugeFamily>,
    counts: BTreeMap<&'static str, CountFamily>,
}

impl std::fmt::Debug for Textfile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Textfile")
            .field(
                "metrics",
                &self
                    .families
                    .keys()
                    .chain(self.counts.keys())
                    .collect::<Vec<_>>(),
            )
            .finish()
    }
}

impl Textfile {
    /// Sets gauge `name{labels}` to `value`; the first use of a name registers it with `help`.
    pub fn gauge(
        &mut self,
        name: &'static str,
        help: &'static str,
        labels: &[(&str, &str)],
        value: f64,
    ) {
        registered(&mut self.registry, &mut self.families, name, help)
            .get_or_create(&owned(labels))
            .set(value);
    }

    /// Sets whole-number gauge `name{labels}` (a state, a count) to `value`; the first use
    /// of a name registers it with `help`.
    pub fn count(
        &mut self,
        name: &'static str,
        help: &'static str,
        labels: &[(&str, &str)],
        value: i64,
    ) {
        registered(&mut self.registry, &mut self.counts, name, help)
            .get_or_create(&owned(labels))
            .set(value);
    }

    /// One series per state of a state set, 1 for `current`, 0 for the others.
    fn state_set(
        &mut self,
        name: &'static str,
        help: &'static str,
        labels: &[(&str, &str)],
        state_label: &str,
        states: &[&str],
        current: &str,
    ) {
        for state in states {
            let mut all = labels.to_vec();
            all.push((state_label, state));
            self.count(name, help, &all, i64::from(*state == current));
        }
    }

    /// The exposition text.
    pub fn render(&self) -> Result<String, TextfileError> {
        let mut text = String::new();
        encode(&mut text, &self.registry).map_err(TextfileError::Encode)?;
        Ok(text)
    }

    /// Replaces `path` atomically with the exposition text.
    pub fn write_atomic(&self, path: &Path) -> Result<(), TextfileError> {
        let text = self.render()?;
        let write_err = |path: &Path| {
            let path = path.to_path_buf();
            move |source| TextfileError::Write { path, source }
        };
        let file_name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| "metrics".to_owned());
        // Not ending in `.prom`: the collector never reads the temporary file.
        let tmp = path.with_file_name(format!(".{file_name}.{}.tmp", std::process::id()));
        let result = (|| {
            let mut file = std::fs::File::create(&tmp)?;
            file.write_all(text.as_bytes())?;
            file.sync_all()
        })();
        if let Err(e) = result {
            let _ = std::fs::remove_file(&tmp);
            return Err(write_err(&tmp)(e));
        }
        std::fs::rename(&tmp, path).map_err(|e| {
            let _ = std::fs::remove_file(&tmp);
            write_err(path)(e)
        })
    }
}

/// The family `name` of `families`, registered with `help` on first use.
fn registered<'a, M>(
    registry: &mut Registry,
    families: &'a mut BTreeMap<&'static str, Family<Labels, M>>,
    name: &'static str,
    help: &'static str,
) -> &'a Family<Labels, M>
where
    M: Default,
    Family<Labels, M>: Metric + Clone,
{
    families.entry(name).or_insert_with(|| {
        let family = Family::default();
        registry.register(name, help, family.clone());
        family
    })
}

fn owned(labels: &[(&str, &str)]) -> Labels {
    labels
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect()
}

fn seconds_since_epoch(at: SystemTime) -> f64 {
    at.duration_since(UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}

/// A proof's verdict, its lines by outcome, and when it ran.
pub fn proof(report: &ProofReport, at: SystemTime) -> Textfile {
    let mut t = Textfile::default();
    let proof = [("proof", report.proof)];
    let verdict = match report.verdict {
        Verdict::Proven => "proven",
        Verdict::NotProven => "not_proven",
        Verdict::Inconclusive => "inconclusive",
    };
    t.state_set(
        "dpu_proof_verdict",
        "The proof's verdict: 1 for the state it reached",
        &proof,
        "verdict",
        &["proven", "not_proven", "inconclusive"],
        verdict,
    );
    for (result, wanted) in [
        ("met", 0u8),
        ("not_met", 1),
        ("inconclusive", 2),
        ("waived", 3),
    ] {
        let count = report
            .lines
            .iter()
            .filter(|l| {
                matches!(
                    (&l.outcome, wanted),
                    (Outcome::Met, 0)
                        | (Outcome::NotMet(_), 1)
                        | (Outcome::Inconclusive(_), 2)
                        | (Outcome::Waived(_), 3)
                )
            })
            .count();
        t.count(
            "dpu_proof_lines",
            "Expectations of the proof by result",
            &[("proof", report.proof), ("result", result)],
            i64::try_from(count).unwrap_or(i64::MAX),
        );
    }
    t.count(
        "dpu_proof_witnesses",
        "Independent witnesses whose counters the verdict was judged on",
        &proof,
        i64::try_from(report.witnesses.len()).unwrap_or(i64::MAX),
    );
    t.gauge(
        "dpu_proof_last_run_timestamp_seconds",
        "When the proof ran (Unix time)",
        &proof,
        seconds_since_epoch(at),
    );
    t
}

/// Every check's status, and when they ran.
pub fn checks(results: &[CheckResult], at: SystemTime) -> Textfile {
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
        seconds_since_epoch(at),
    );
    t
}

/// A fleet run: each node's status as a state set, one series per node and failing check,
/// how many nodes ended in each status, and when and how long it ran. The `node` label is
/// the target's name, so an alert can name the node (`dpu_fleet_node_status{status="fail"}
/// == 1`).
pub fn fleet(report: &FleetReport, at: SystemTime) -> Textfile {
    const STATES: [NodeStatus; 7] = [
        NodeStatus::Pass,
        NodeStatus::Skip,
        NodeStatus::Warn,
        NodeStatus::Inconclusive,
        NodeStatus::Fail,
        NodeStatus::Unreachable,
        NodeStatus::Cancelled,
    ];
    let states: Vec<String> = STATES
        .iter()
        .map(|s| s.label().to_ascii_lowercase())
        .collect();
    let states: Vec<&str> = states.iter().map(String::as_str).collect();
    let command = report.command.as_str();
    let mut t = Textfile::default();
    for node in &report.nodes {
        let status = node.status.label().to_ascii_lowercase();
        t.state_set(
            "dpu_fleet_node_status",
            "The node's result in the last fleet run: 1 for the state it reached",
            &[("command", command), ("node", &node.name)],
            "status",
            &states,
            &status,
        );
        for problem in &node.problems {
            t.count(
                "dpu_fleet_node_problem",
                "A problem the last fleet run found on the node, by the check that found it",
                &[
                    ("command", command),
                    ("node", &node.name),
                    ("check", &problem.check),
                ],
                1,
            );
        }
    }
    for state in STATES {
        let count = report.summary.get(state.label()).copied().unwrap_or(0);
        t.count(
            "dpu_fleet_nodes",
            "How many nodes ended the last fleet run in each state",
            &[
                ("command", command),
                ("status", &state.label().to_ascii_lowercase()),
            ],
            i64::try_from(count).unwrap_or(i64::MAX),
        );
    }
    t.gauge(
        "dpu_fleet_run_seconds",
        "Wall time of the last fleet run",
        &[("command", command)],
        report.elapsed_ms / 1e3,
    );
    t.gauge(
        "dpu_fleet_last_run_timestamp_seconds",
        "When the last fleet run ended (Unix time)",
        &[("command", command)],
        seconds_since_epoch(at),
    );
    t
}

/// A RoCE sweep's verdict, each run's path and numbers, and when it ran.
pub fn perf(report: &PerfReport, at: SystemTime) -> Textfile {
    let mut t = Textfile::default();
    t.state_set(
        "dpu_roce_perf_verdict",
        "The sweep's verdict: 1 for the state it reached",
        &[("peer", &report.peer)],
        "verdict",
        &["ok", "flagged", "inconclusive"],
        report.verdict,
    );
    for run in &report.runs {
        let size = run.size.to_string();
        let labels = [
            ("peer", report.peer.as_str()),
            ("test", run.test.name()),
            ("size", &size),
        ];
        let path = match run.rdma.path {
            PathVerdict::Rdma => "rdma",
            PathVerdict::NotRdma => "not_rdma",
            PathVerdict::Unknown => "unknown",
        };
        t.state_set(
            "dpu_roce_perf_path",
            "The path the RDMA counters put the run on: 1 for the state",
            &labels,
            "path",
            &["rdma", "not_rdma", "unknown"],
            path,
        );
        if let Some(gbps) = run.bw_gbps {
            t.gauge(
                "dpu_roce_perf_bandwidth_bytes_per_second",
                "Average bandwidth of the run",
                &labels,
                gbps * 1e9 / 8.0,
            );
        }
        if let Some(us) = run.lat_avg_us {
            t.gauge(
                "dpu_roce_perf_latency_average_seconds",
                "Average latency of the run",
                &labels,
                us / 1e6,
            );
        }
    }
    t.gauge(
        "dpu_roce_perf_last_run_timestamp_seconds",
        "When the sweep ran (Unix time)",
        &[("peer", &report.peer)],
        seconds_since_epoch(at),
    );
    t
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[test]
    fn a_state_set_marks_one_state_and_label_values_are_escaped() {
        let mut t = Textfile::default();
        t.state_set(
            "dpu_check_status",
            "help",
            &[("check", "a\"b\\c\nd")],
            "status",
            &["pass", "fail"],
            "fail",
        );
        let text = t.render().expect("renders");
        assert!(text.contains("# TYPE dpu_check_status gauge"), "{text}");
        assert!(
            text.lines()
                .any(|l| l == r#"dpu_check_status{check="a\"b\\c\nd",status="fail"} 1"#),
            "{text}"
        );
        assert!(
            text.lines()
                .any(|l| l == r#"dpu_check_status{check="a\"b\\c\nd",status="pass"} 0"#),
            "{text}"
        );
    }

    #[test]
    fn a_proof_report_becomes_its_verdict_lines_and_time() {
        let report = ProofReport {
            proof: "storage",
            verdict: Verdict::Inconclusive,
            workload: String::new(),
            lines: Vec::new(),
            notes: Vec::new(),
            trials: Vec::new(),
            witnesses: Vec::new(),
        };
        let text = proof(&report, UNIX_EPOCH + Duration::from_secs(1_700_000_000))
            .render()
            .expect("renders");
        assert!(
            text.lines()
                .any(|l| l == r#"dpu_proof_verdict{proof="storage",verdict="inconclusive"} 1"#),
            "{text}"
        );
        assert!(
            text.lines()
                .any(|l| l == r#"dpu_proof_verdict{proof="storage",verdict="proven"} 0"#),
            "{text}"
        );
        assert!(
            text.lines()
                .any(|l| l == r#"dpu_proof_lines{proof="storage",result="met"} 0"#),
            "{text}"
        );
        assert!(
            text.contains("dpu_proof_last_run_timestamp_seconds{proof=\"storage\"} 1700000000"),
            "{text}"
        );
    }

    #[test]
    fn the_file_is_replaced_whole_and_no_temporary_file_is_left() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("dpu.prom");
        std::fs::write(&path, "old").expect("seed");
        let mut t = Textfile::default();
        t.gauge("dpu_x", "help", &[], 2.5);
        t.count("dpu_y", "help", &[], 3);
        t.write_atomic(&path).expect("writes");
        let text = std::fs::read_to_string(&path).expect("reads");
        assert!(text.lines().any(|l| l == "dpu_x 2.5"), "{text}");
        assert!(text.lines().any(|l| l == "dpu_y 3"), "{text}");
        let names: Vec<_> = std::fs::read_dir(dir.path())
            .expect("lists")
            .map(|e| e.expect("entry").file_name())
            .collect();
        assert_eq!(names.len(), 1, "{names:?}");
        // A directory that does not exist is an error naming the path, not a panic.
        let err = t
            .write_atomic(&dir.path().join("missing/dpu.prom"))
            .expect_err("no such directory");
        assert!(err.to_string().contains("missing"), "{err}");
    }
}
