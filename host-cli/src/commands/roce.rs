//! `dpuctl roce ...`: the NCCL check here (dpu-host's `roce::nccl_check`); `perf` in
//! roce_perf.rs, `dcb` in roce_dcb.rs.

use dpu_host::roce::nccl_check::{judge, read_logs, run_nccl, NcclReport, NcclVerdict};

use super::env::Env;
use crate::cli::RoceCommand;
use crate::outcome::Outcome;
use crate::output;

pub(crate) fn run(env: &Env<'_>, cmd: &RoceCommand) -> anyhow::Result<Outcome> {
    match cmd {
        RoceCommand::NcclCheck { files, run } => nccl_check(env, files, run),
        RoceCommand::Perf(args) => super::roce_perf::perf(env, args),
        RoceCommand::Dcb(args) => super::roce_dcb::dcb(env, args),
    }
}

fn nccl_check(
    env: &Env<'_>,
    files: &[std::path::PathBuf],
    run: &[String],
) -> anyhow::Result<Outcome> {
    let text = read_logs(files)?;
    let run = if run.is_empty() {
        None
    } else {
        let r = run_nccl(&env.session.sys_root(), run)?;
        // The command's output, echoed where a person watching expects it.
        output::diag_part(&r.output);
        Some(r)
    };
    let (report, verdict) = judge(text, run);
    if env.json() {
        output::json(&report)?;
    } else {
        print_report(&report)?;
    }
    Ok(match verdict {
        NcclVerdict::Rdma => Outcome::Success,
        NcclVerdict::CommandFailed(code) => {
            output::diag(&format!("dpuctl: the NCCL command exited {code}"));
            Outcome::Failed
        }
        NcclVerdict::Contradicted => {
            output::diag("dpuctl: the RDMA counters contradict NCCL's transport (see above)");
            Outcome::Failed
        }
        NcclVerdict::Socket => {
            output::diag(
                "dpuctl: NCCL fell back to NET/Socket: the collective did not use RDMA \
                 (check NCCL_IB_HCA, NCCL_IB_GID_INDEX and that the RDMA devices are in the pod)",
            );
            Outcome::Failed
        }
        NcclVerdict::Inconclusive => {
            match report
                .counters
                .as_ref()
                .filter(|c| c.verdict == "inconclusive" || c.verdict == "unknown")
            {
                Some(c) => output::diag(&format!("dpuctl: {}", c.reason)),
                None if report.transport == "unknown" => output::diag(
                    "dpuctl: no network channel line (`via NET/...`) says which transport \
                     NCCL used: run with NCCL_DEBUG=INFO across nodes",
                ),
                None => {}
            }
            Outcome::Inconclusive
        }
    })
}

fn print_report(report: &NcclReport) -> anyhow::Result<()> {
    output::line(&format!("transport: {}", report.transport))?;
    if !report.ib_devices.is_empty() {
        output::line(&format!("IB devices: {}", report.ib_devices.join(" ")))?;
    }
    if let Some(avg) = report.avg_busbw_gbps {
        output::line(&format!("average bus bandwidth: {avg} GB/s"))?;
    }
    if !report.busbw_by_size.is_empty() {
        let mut table = output::table(["bytes", "busbw out-of-place GB/s", "busbw in-place GB/s"]);
        for (size, out, inplace) in &report.busbw_by_size {
            table.add_row([size.to_string(), out.to_string(), inplace.to_string()]);
        }
        output::print_table(&table)?;
    }
    for line in &report.evidence {
        output::line(&format!("  {line}"))?;
    }
    if !report.net_channels.is_empty() {
        let gdr = report.net_channels.iter().filter(|c| c.gdrdma).count();
        output::line(&format!(
            "GPUDirect RDMA (GDRDMA): {gdr} of {} network channels",
            report.net_channels.len()
        ))?;
        for c in report.net_channels.iter().filter(|c| !c.gdrdma) {
            output::line(&format!(
                "  no GDRDMA: channel {} {} via {}",
                c.channel, c.route, c.via
            ))?;
        }
    }
    for line in &report.gdr_disabled {
        output::line(&format!("GPU Direct RDMA Disabled: {line}"))?;
    }
    if let Some(c) = &report.counters {
        output::line(&format!("RDMA counters: {} ({})", c.verdict, c.reason))?;
    }
    Ok(())
}
