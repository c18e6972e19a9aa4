//! One number per trial from a measured command's output, read by the project's own
//! parsers: perftest's and qperf's bandwidth in Gb/s or latency in µs, nccl-tests' bus
//! bandwidth of the largest size (GB/s, out-of-place: the number nccl-tests' users
//! compare with the link).

use super::plan::OutputParser;
use crate::roce::perf::RdmaEvidence;
use crate::roce::{nccl, perftest, qperf};

/// A trial's result: the number and what it is.
#[derive(Debug, Clone, PartialEq)]
pub struct Metric {
    /// The value.
    pub value: f64,
    /// What it measures, with its unit: `BW average Gb/s at 65536 B`.
    pub name: String,
    /// The RDMA port's counters around the trial, which corroborated its traffic (a
    /// `roce-perf` trial); None for measurements without counter evidence.
    pub rdma: Option<RdmaEvidence>,
}

/// Why a command's output gave no metric.
#[derive(Debug, thiserror::Error)]
#[error("{parser} output: {reason}")]
pub struct MetricError {
    /// The parser.
    pub parser: &'static str,
    /// What was missing or wrong.
    pub reason: String,
}

/// The metric of `stdout` by `parser`.
pub fn read_metric(parser: OutputParser, stdout: &str) -> Result<Metric, MetricError> {
    let fail = |reason: String| MetricError {
        parser: parser.name(),
        reason,
    };
    match parser {
        OutputParser::Perftest => {
            let report = perftest::parse(stdout).map_err(|e| fail(e.to_string()))?;
            match report.table {
                perftest::PerftestTable::Bandwidth { unit, rows } => {
                    let row = rows
                        .iter()
                        .max_by_key(|r| r.bytes)
                        .ok_or_else(|| fail("no result row".to_owned()))?;
                    Ok(Metric {
                        value: row.average * unit.bytes_per_sec() * 8.0 / 1e9,
                        name: format!("BW average Gb/s at {} B", row.bytes),
                        rdma: None,
                    })
                }
                perftest::PerftestTable::Latency { rows } => {
                    let row = rows
                        .iter()
                        .max_by_key(|r| r.bytes)
                        .ok_or_else(|| fail("no result row".to_owned()))?;
                    let (value, which) = match (row.t_typical, row.t_avg) {
                        (Some(t), _) => (t, "t_typical"),
                        (None, Some(t)) => (t, "t_avg"),
                        (None, None) => return Err(fail("no t_typical or t_avg".to_owned())),
                    };
                    Ok(Metric {
                        value,
                        name: format!("{which} µs at {} B", row.bytes),
                        rdma: None,
                    })
                }
            }
        }
        OutputParser::Qperf => {
            let tests = qperf::parse(stdout).map_err(|e| fail(e.to_string()))?;
            let test = tests.first().ok_or_else(|| fail("no test".to_owned()))?;
            if let Some(bw) = test.bw_bytes_per_sec() {
                Ok(Metric {
                    value: bw * 8.0 / 1e9,
                    name: format!("{} bw Gb/s", test.name),
                    rdma: None,
                })
            } else if let Some(latency) = test.latency_secs() {
                Ok(Metric {
                    value: latency * 1e6,
                    name: format!("{} latency µs", test.name),
                    rdma: None,
                })
            } else {
                Err(fail(format!("{} has no bw or latency", test.name)))
            }
        }
        OutputParser::NcclTests => {
            let results = nccl::parse_results(stdout).map_err(|e| fail(e.to_string()))?;
            let row = results
                .rows
                .iter()
                .max_by_key(|r| r.size)
                .ok_or_else(|| fail("no result row".to_owned()))?;
            Ok(Metric {
                value: row.out_of_place.busbw_gbps,
                name: format!("busbw GB/s at {} B (out-of-place)", row.size),
                rdma: None,
            })
        }
    }
}
