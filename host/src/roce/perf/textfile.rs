//! A RoCE sweep as textfile metrics (`--metrics-file`): the sweep's report knows its own
//! series; [`crate::textfile`] only writes them.

use std::time::SystemTime;

use super::{PathVerdict, PerfReport};
use crate::textfile::{self, Textfile};

impl PerfReport {
    /// A RoCE sweep's verdict, each run's path and numbers, and when it ran.
    pub fn textfile(&self, at: SystemTime) -> Textfile {
        let mut t = Textfile::default();
        t.state_set(
            "dpu_roce_perf_verdict",
            "The sweep's verdict: 1 for the state it reached",
            &[("peer", &self.peer)],
            "verdict",
            &["ok", "flagged", "inconclusive"],
            self.verdict,
        );
        for run in &self.runs {
            let size = run.size.to_string();
            let labels = [
                ("peer", self.peer.as_str()),
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
            &[("peer", &self.peer)],
            textfile::unix_seconds(at),
        );
        t
    }
}
