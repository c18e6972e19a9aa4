//! `dpuctl roce nccl-check` as a library call: NCCL logs (files, or the output of a
//! command run here between two snapshots of every local RDMA port) read for the transport
//! NCCL chose, corroborated by the counters, and judged. Nothing prints: the command's own
//! output comes back in [`NcclRun::output`] for the caller to echo.

mod error;
pub use error::NcclError;

use std::path::PathBuf;

use dpu_probe::SysRoot;
use serde::Serialize;

use super::super::rdma_evidence::PortReading;
use super::corroborate::{corroborate, named_ports, snapshot, CollectiveFloor, Corroboration};
use super::transport::{scan_transport, NcclTransport, NetChannel};
use super::{parse_results, NcclResults};

/// What `nccl-check` found, as printed with `-o json`.
#[derive(Debug, Serialize)]
pub struct NcclReport {
    /// `NET/IB`, `NET/Socket` or `unknown`.
    pub transport: &'static str,
    /// The IB devices NCCL named.
    pub ib_devices: Vec<String>,
    /// The log lines the transport was read from.
    pub evidence: Vec<String>,
    /// Each network channel NCCL connected and whether it used GPUDirect RDMA (`GDRDMA`).
    pub net_channels: Vec<NetChannel>,
    /// NCCL's "GPU Direct RDMA Disabled" lines, when any (why channels lack `GDRDMA`).
    pub gdr_disabled: Vec<String>,
    /// `# Avg bus bandwidth`, GB/s.
    pub avg_busbw_gbps: Option<f64>,
    /// (bytes, out-of-place busbw GB/s, in-place busbw GB/s) per size.
    pub busbw_by_size: Vec<(u64, f64, f64)>,
    /// With `-- CMD`: the command's exit code and what the RDMA counters said.
    pub command_exit: Option<i32>,
    /// With `-- CMD`: the RDMA counters' view of the run.
    pub counters: Option<Corroboration>,
}

/// The verdict of a check, for the exit code and the message that explains it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NcclVerdict {
    /// NET/IB, and the counters (when read) agree.
    Rdma,
    /// The command exited with this code.
    CommandFailed(i32),
    /// The RDMA counters contradict NCCL's transport.
    Contradicted,
    /// NCCL fell back to NET/Socket.
    Socket,
    /// The log does not say, or a counter reset, vanished or appeared during the run.
    Inconclusive,
}

/// One `nccl-check -- CMD` run: its output and the RDMA counters around it.
#[derive(Debug)]
pub struct NcclRun {
    /// stdout, a newline, stderr.
    pub output: String,
    /// The exit code (None when killed by a signal).
    pub exit: Option<i32>,
    /// Every local RDMA port before the command.
    pub before: Vec<(String, PortReading)>,
    /// And after it.
    pub after: Vec<(String, PortReading)>,
}

/// Runs the NCCL command with `NCCL_DEBUG=INFO` (unless the caller chose a level), its
/// input closed, between two RDMA counter snapshots under `root`. `argv` is run as given,
/// never through a shell.
pub fn run_nccl(root: &SysRoot, argv: &[String]) -> Result<NcclRun, NcclError> {
    let (program, rest) = argv.split_first().ok_or(NcclError::NoCommand)?;
    let before = snapshot(root);
    let mut cmd = std::process::Command::new(program);
    cmd.args(rest).stdin(std::process::Stdio::null());
    if std::env::var_os("NCCL_DEBUG").is_none() {
        cmd.env("NCCL_DEBUG", "INFO");
    }
    let out = cmd.output().map_err(|source| NcclError::Spawn {
        program: program.clone(),
        source,
    })?;
    // hw_counters are cached for `lifespan` (10 ms by default).
    std::thread::sleep(std::time::Duration::from_millis(30));
    let after = snapshot(root);
    let mut text = String::from_utf8_lossy(&out.stdout).into_owned();
    text.push('\n');
    text.push_str(&String::from_utf8_lossy(&out.stderr));
    Ok(NcclRun {
        output: text,
        exit: out.status.code(),
        before,
        after,
    })
}

/// Reads the log files.
pub fn read_logs(files: &[PathBuf]) -> Result<String, NcclError> {
    let mut text = String::new();
    for file in files {
        text.push_str(
            &std::fs::read_to_string(file).map_err(|source| NcclError::Log {
                path: file.clone(),
                source,
            })?,
        );
        text.push('\n');
    }
    Ok(text)
}

/// Judges `logs` (and the run, when a command was run) into the report and its verdict.
pub fn judge(mut text: String, run: Option<NcclRun>) -> (NcclReport, NcclVerdict) {
    let mut command_exit = None;
    let mut snaps = None;
    if let Some(r) = run {
        text.push_str(&r.output);
        command_exit = r.exit;
        snaps = Some((r.before, r.after));
    }
    let verdict = scan_transport(&text);
    let named = named_ports(&verdict.ib_devices);
    // A log without the results table is fine: the transport alone answers the question.
    let results = parse_results(&text).ok();
    let floor = results.as_ref().map(CollectiveFloor::of);
    let counters = snaps.map(|(b, a)| corroborate(&b, &a, verdict.transport, &named, floor));
    let report = NcclReport {
        transport: match verdict.transport {
            NcclTransport::Ib => "NET/IB",
            NcclTransport::Socket => "NET/Socket",
            NcclTransport::Unknown => "unknown",
        },
        ib_devices: verdict.ib_devices,
        evidence: verdict.evidence,
        net_channels: verdict.net_channels,
        gdr_disabled: verdict.gdr_disabled,
        avg_busbw_gbps: results.as_ref().and_then(|r| r.avg_busbw_gbps),
        busbw_by_size: results
            .as_ref()
            .map(|r: &NcclResults| {
                r.rows
                    .iter()
                    .map(|row| {
                        (
                            row.size,
                            row.out_of_place.busbw_gbps,
                            row.in_place.busbw_gbps,
                        )
                    })
                    .collect()
            })
            .unwrap_or_default(),
        command_exit,
        counters,
    };
    let judged = if let Some(code) = report.command_exit.filter(|&c| c != 0) {
        NcclVerdict::CommandFailed(code)
    } else {
        match report.counters.as_ref().map(|c| c.verdict) {
            Some("contradicts") => NcclVerdict::Contradicted,
            // Counters that can neither confirm nor deny (too few packets to be a
            // collective, too many to be still; no port with counters) are no evidence:
            // never a success.
            Some("inconclusive" | "unknown") => NcclVerdict::Inconclusive,
            _ => match verdict.transport {
                NcclTransport::Ib => NcclVerdict::Rdma,
                NcclTransport::Socket => NcclVerdict::Socket,
                NcclTransport::Unknown => NcclVerdict::Inconclusive,
            },
        }
    };
    (report, judged)
}
