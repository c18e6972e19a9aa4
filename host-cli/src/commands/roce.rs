//! `dpuctl roce ...`: the NCCL check here; `perf` in roce_perf.rs.

use anyhow::Context as _;
use serde::Serialize;

use super::Env;
use crate::cli::RoceCommand;
use crate::outcome::Outcome;
use crate::output;
use dpu_probe::SysRoot;

use crate::roce::nccl::{parse_results, NcclResults};
use crate::roce::nccl_corroborate::{corroborate, snapshot, Corroboration};
use crate::roce::nccl_transport::{scan_transport, NcclTransport};

pub(crate) fn run(env: &Env<'_>, cmd: &RoceCommand) -> anyhow::Result<Outcome> {
    match cmd {
        RoceCommand::NcclCheck { files, run } => nccl_check(env, files, run),
        RoceCommand::Perf(args) => super::roce_perf::perf(env, args),
        RoceCommand::Dcb(args) => super::roce_dcb::dcb(env, args),
    }
}

/// What `nccl-check` found, as printed with `-o json`.
#[derive(Debug, Serialize)]
struct NcclReport {
    transport: &'static str,
    ib_devices: Vec<String>,
    evidence: Vec<String>,
    /// `# Avg bus bandwidth`, GB/s.
    avg_busbw_gbps: Option<f64>,
    /// (bytes, out-of-place busbw GB/s, in-place busbw GB/s) per size.
    busbw_by_size: Vec<(u64, f64, f64)>,
    /// With `-- CMD`: the command's exit code and what the RDMA counters said.
    command_exit: Option<i32>,
    counters: Option<Corroboration>,
}

/// Runs the NCCL command with `NCCL_DEBUG=INFO` (unless the caller chose a level),
/// echoing its output to stderr, between two RDMA counter snapshots.
fn run_nccl(env: &Env<'_>, argv: &[String]) -> anyhow::Result<NcclRun> {
    let root = SysRoot::new(&env.cli.sys_root);
    let (program, rest) = argv.split_first().context("no command after --")?;
    let before = snapshot(&root);
    let mut cmd = std::process::Command::new(program);
    cmd.args(rest).stdin(std::process::Stdio::null());
    if std::env::var_os("NCCL_DEBUG").is_none() {
        cmd.env("NCCL_DEBUG", "INFO");
    }
    let out = cmd
        .output()
        .with_context(|| format!("cannot run {program}"))?;
    // hw_counters are cached for `lifespan` (10 ms by default).
    std::thread::sleep(std::time::Duration::from_millis(30));
    let after = snapshot(&root);
    let mut text = String::from_utf8_lossy(&out.stdout).into_owned();
    text.push('\n');
    text.push_str(&String::from_utf8_lossy(&out.stderr));
    eprint!("{text}");
    Ok(NcclRun {
        output: text,
        exit: out.status.code(),
        before,
        after,
    })
}

type Snap = (String, crate::roce::rdma_evidence::RdmaTotals);

/// One `nccl-check -- CMD` run: its output and the RDMA counters around it.
struct NcclRun {
    output: String,
    exit: Option<i32>,
    before: Vec<Snap>,
    after: Vec<Snap>,
}

fn nccl_check(
    env: &Env<'_>,
    files: &[std::path::PathBuf],
    run: &[String],
) -> anyhow::Result<Outcome> {
    let mut text = String::new();
    for file in files {
        text.push_str(
            &std::fs::read_to_string(file)
                .with_context(|| format!("cannot read {}", file.display()))?,
        );
        text.push('\n');
    }
    let mut command_exit = None;
    let mut snaps = None;
    if !run.is_empty() {
        let r = run_nccl(env, run)?;
        text.push_str(&r.output);
        command_exit = r.exit;
        snaps = Some((r.before, r.after));
    }
    let verdict = scan_transport(&text);
    let counters = snaps.map(|(b, a)| corroborate(&b, &a, verdict.transport));
    // A log without the results table is fine: the transport alone answers the question.
    let results = parse_results(&text).ok();
    let report = NcclReport {
        transport: match verdict.transport {
            NcclTransport::Ib => "NET/IB",
            NcclTransport::Socket => "NET/Socket",
            NcclTransport::Unknown => "unknown",
        },
        ib_devices: verdict.ib_devices,
        evidence: verdict.evidence,
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
    if env.json() {
        output::json(&report)?;
    } else {
        output::line(&format!("transport: {}", report.transport))?;
        if !report.ib_devices.is_empty() {
            output::line(&format!("IB devices: {}", report.ib_devices.join(" ")))?;
        }
        if let Some(avg) = report.avg_busbw_gbps {
            output::line(&format!("average bus bandwidth: {avg} GB/s"))?;
        }
        if !report.busbw_by_size.is_empty() {
            let mut table =
                output::table(["bytes", "busbw out-of-place GB/s", "busbw in-place GB/s"]);
            for (size, out, inplace) in &report.busbw_by_size {
                table.add_row([size.to_string(), out.to_string(), inplace.to_string()]);
            }
            output::print_table(&table)?;
        }
        for line in &report.evidence {
            output::line(&format!("  {line}"))?;
        }
        if let Some(c) = &report.counters {
            output::line(&format!("RDMA counters: {} ({})", c.verdict, c.reason))?;
        }
    }
    if let Some(code) = report.command_exit.filter(|&c| c != 0) {
        eprintln!("dpuctl: the NCCL command exited {code}");
        return Ok(Outcome::Failed);
    }
    if report
        .counters
        .as_ref()
        .is_some_and(|c| c.verdict == "contradicts")
    {
        eprintln!("dpuctl: the RDMA counters contradict NCCL's transport (see above)");
        return Ok(Outcome::Failed);
    }
    Ok(match verdict.transport {
        NcclTransport::Ib => Outcome::Success,
        NcclTransport::Socket => {
            eprintln!(
                "dpuctl: NCCL fell back to NET/Socket: the collective did not use RDMA \
                 (check NCCL_IB_HCA, NCCL_IB_GID_INDEX and that the RDMA devices are in the pod)"
            );
            Outcome::Failed
        }
        NcclTransport::Unknown => Outcome::Inconclusive,
    })
}
