//! The `roce-perf` measurement: one trial is one `roce perf` run (the same engine, the
//! same test, size and peer rules, [`crate::roce::sweep`]), its number the run's
//! bandwidth (or latency for `*_lat`), and its RDMA port counters, through the accounting
//! engine, the condition for that number to count. A trial whose counters do not
//! corroborate its traffic (INCONCLUSIVE: a counter reset, vanished or unreadable, or a
//! movement between a tenth and 90 % of the payload; NOT PROVEN: an RDMA test that left
//! the port still, a TCP test that moved it) is refused: named in the report, never a data
//! point. Without this an experiment could compare B's TCP fallback with A's RDMA.

use std::net::IpAddr;
use std::path::PathBuf;

use dpu_probe::SysRoot;

use super::cancel::Cancel;
use super::measure::{Measure, MeasureError, Refusal};
use super::metric::Metric;
use crate::observe::Ignore;
use crate::roce::perf::{run_one, PathVerdict, PerfRun, PerfTest};
use crate::roce::sweep::{check, prepare, PerfParams, Prepared, SweepError};

/// The first TCP port a trial's servers listen on; trial n uses this + n mod
/// 200 (so a server socket still closing never blocks the next trial).
pub const BASE_PORT: u16 = 18_515;
/// How many ports the trials cycle through.
const PORT_SPREAD: u16 = 200;
/// perftest `-n` when the plan does not say (`roce perf`'s default).
pub const DEFAULT_ITERATIONS: u64 = 1000;
/// The limit of one run, seconds (`roce perf`'s default).
const RUN_TIMEOUT_S: u64 = 300;

/// What the `roce-perf` measurement needs besides its plan: where the counters are read
/// and how the peer is reached.
#[derive(Debug, Clone)]
pub struct RoceContext {
    /// Where the local RDMA port's counters are read (`--sys-root`).
    pub root: SysRoot,
    /// The ssh program (`ssh`; tests point it at a stand-in).
    pub ssh: PathBuf,
}

/// A `roce-perf` plan's fields.
#[derive(Debug, Clone)]
pub struct RoceTrial {
    /// The ssh destination.
    pub peer: String,
    /// The test.
    pub test: PerfTest,
    /// Its message size, bytes.
    pub size: u64,
    /// perftest `-n`.
    pub iterations: u64,
    /// The address the client connects to; None: where ssh connects.
    pub peer_address: Option<IpAddr>,
}

/// Trials against a peer whose endpoints were resolved once, before the knob changed.
pub struct RocePerfMeasure {
    root: SysRoot,
    prepared: Prepared,
    test: PerfTest,
    size: u64,
    trials: u16,
}

impl std::fmt::Debug for RocePerfMeasure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RocePerfMeasure")
            .field("test", &self.test)
            .field("size", &self.size)
            .finish_non_exhaustive()
    }
}

impl RocePerfMeasure {
    /// Checks the parameters by `roce perf`'s rules, resolves both endpoints over ssh and
    /// measures the local port's background (1 s), so every trial is net of it.
    pub fn connect(context: &RoceContext, trial: &RoceTrial) -> Result<Self, MeasureError> {
        let params = PerfParams {
            peer: trial.peer.clone(),
            tests: vec![trial.test.name().to_owned()],
            sizes: vec![trial.size],
            lat_sizes: vec![trial.size],
            iterations: trial.iterations,
            tcp_seconds: 2,
            device: None,
            ib_port: None,
            gid_index: None,
            peer_device: None,
            peer_ib_port: None,
            peer_gid_index: None,
            peer_address: trial.peer_address,
            ssh: context.ssh.clone(),
            ssh_port: None,
            ssh_identity: None,
            base_port: BASE_PORT,
            run_timeout: RUN_TIMEOUT_S,
        };
        let setup = |e: SweepError| {
            MeasureError::Setup(format!("roce-perf: {}", dpu_probe::error_chain(&e)))
        };
        let tests = check(&params).map_err(|e| setup(e.into()))?;
        let prepared = prepare(&context.root, &params, tests, &mut Ignore).map_err(setup)?;
        Ok(Self {
            root: context.root.clone(),
            prepared,
            test: trial.test,
            size: trial.size,
            trials: 0,
        })
    }
}

impl Measure for RocePerfMeasure {
    fn measure(
        &mut self,
        env: &[(String, String)],
        _cancel: &Cancel,
    ) -> Result<Metric, MeasureError> {
        if !env.is_empty() {
            return Err(MeasureError::Unsupported(
                "an env knob with a roce-perf measurement: perftest and qperf read no NCCL_ or \
                 UCX_ variables; use a command measurement that does"
                    .to_owned(),
            ));
        }
        let port = BASE_PORT + self.trials % PORT_SPREAD;
        self.trials = self.trials.wrapping_add(1);
        let run = run_one(
            &self.root,
            &self.prepared.peer,
            &self.prepared.plan,
            self.test,
            self.size,
            port,
        );
        judge(&run)
    }
}

/// A run's number when its counters corroborate its traffic; else why not.
pub fn judge(run: &PerfRun) -> Result<Metric, MeasureError> {
    let test = run.test;
    if let Some(reason) = &run.error {
        return Err(MeasureError::Run {
            test: test.name(),
            reason: reason.clone(),
        });
    }
    let (value, name) = if test.is_bandwidth() {
        (
            run.bw_gbps,
            format!("{} BW average Gb/s at {} B", test.name(), run.size),
        )
    } else if let Some(typical) = run.lat_typical_us {
        (
            Some(typical),
            format!("{} t_typical µs at {} B", test.name(), run.size),
        )
    } else {
        (
            run.lat_avg_us,
            format!("{} latency µs at {} B", test.name(), run.size),
        )
    };
    let Some(value) = value.filter(|v| v.is_finite()) else {
        return Err(MeasureError::Run {
            test: test.name(),
            reason: format!("the run gave no {name}"),
        });
    };
    let expected = if test.is_rdma() {
        PathVerdict::Rdma
    } else {
        PathVerdict::NotRdma
    };
    let rdma = &run.rdma;
    if rdma.path == expected {
        return Ok(Metric {
            value,
            name,
            rdma: Some(rdma.clone()),
        });
    }
    // What moved against what the payload needs, in the unit the path was judged by
    // (bytes where the port counts them, else packets).
    let (moved, payload) = match rdma.bytes_delta {
        Some(bytes) if rdma.payload_bytes > 0 => (
            format!("{bytes} bytes"),
            format!("{} bytes", rdma.payload_bytes),
        ),
        _ => (
            rdma.packets_delta.map_or_else(
                || "an unknown number of packets".to_owned(),
                |p| format!("{p} packets"),
            ),
            format!("{} packets", rdma.payload_packets),
        ),
    };
    let reason = match rdma.path {
        PathVerdict::Unknown => format!(
            "INCONCLUSIVE: {}",
            rdma.inconclusive.clone().unwrap_or_else(|| format!(
                "the RDMA port moved {moved} for a payload of {payload}: neither 90 % of it \
                 nor under a tenth"
            ))
        ),
        _ if test.is_rdma() => format!(
            "NOT PROVEN: the RDMA port moved {moved} for a payload of {payload}: the traffic \
             did not go over RDMA"
        ),
        _ => format!("NOT PROVEN: a TCP run moved the RDMA port by {moved} (payload {payload})"),
    };
    Err(MeasureError::Refused(Box::new(Refusal {
        value,
        name,
        reason,
        rdma: rdma.clone(),
    })))
}

#[cfg(test)]
mod tests;
