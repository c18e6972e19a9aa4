//! `dpuctl roce ...`: the NCCL check here (dpu-host's `roce::nccl::check`); `perf` in
//! roce_perf.rs, `dcb` in roce_dcb.rs.

use anyhow::Context as _;
use dpu_host::roce::nccl::check::{judge, read_logs, run_nccl, NcclReport, NcclVerdict};
use dpu_host::roce::nccl::plot::{page, NamedRun};
use dpu_host::roce::nccl::{parse_results, NcclResults};

use super::env::Env;
use crate::cli::RoceCommand;
use crate::exit::Exit;
use crate::output;

pub(crate) fn run(env: &Env<'_>, cmd: &RoceCommand) -> anyhow::Result<Exit> {
    match cmd {
        RoceCommand::NcclCheck { files, run, report } => {
            nccl_check(env, files, run, report.as_deref())
        }
        RoceCommand::Perf(args) => super::roce_perf::perf(env, args),
        RoceCommand::Dcb(args) => super::roce_dcb::dcb(env, args),
    }
}

fn nccl_check(
    env: &Env<'_>,
    files: &[std::path::PathBuf],
    run: &[String],
    report_path: Option<&std::path::Path>,
) -> anyhow::Result<Exit> {
    let text = read_logs(files)?;
    let run = if run.is_empty() {
        None
    } else {
        let r = run_nccl(&env.session.sys_root(), run)?;
        // The command's output, echoed where a person watching expects it.
        output::diag_part(&r.output);
        Some(r)
    };
    if let Some(path) = report_path {
        let command = run.as_ref().map(|r| r.output.as_str());
        write_busbw_page(path, files, command)?;
    }
    let (report, verdict) = judge(text, run);
    if env.json() {
        output::json(&report)?;
    } else {
        print_report(&report)?;
    }
    Ok(match verdict {
        NcclVerdict::Rdma => Exit::Success,
        NcclVerdict::CommandFailed(code) => {
            output::diag(&format!("dpuctl: the NCCL command exited {code}"));
            Exit::Failed
        }
        NcclVerdict::Contradicted => {
            output::diag("dpuctl: the RDMA counters contradict NCCL's transport (see above)");
            Exit::Failed
        }
        NcclVerdict::Socket => {
            output::diag(
                "dpuctl: NCCL fell back to NET/Socket: the collective did not use RDMA \
                 (check NCCL_IB_HCA, NCCL_IB_GID_INDEX and that the RDMA devices are in the pod)",
            );
            Exit::Failed
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
            Exit::Inconclusive
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

/// `--report`: each input that holds an nccl-tests table (each file, and the command's
/// output) as a line of bus bandwidth against size; refused when none does.
fn write_busbw_page(
    path: &std::path::Path,
    files: &[std::path::PathBuf],
    command: Option<&str>,
) -> anyhow::Result<()> {
    let mut parsed: Vec<(String, NcclResults)> = Vec::new();
    for file in files {
        let text = std::fs::read_to_string(file)
            .with_context(|| format!("cannot read {}", file.display()))?;
        if let Ok(results) = parse_results(&text) {
            if !results.rows.is_empty() {
                parsed.push((file.display().to_string(), results));
            }
        }
    }
    if let Some(Ok(results)) = command.map(parse_results) {
        if !results.rows.is_empty() {
            parsed.push(("the command".to_owned(), results));
        }
    }
    if parsed.is_empty() {
        anyhow::bail!("--report: no input holds an nccl-tests results table to draw");
    }
    let runs: Vec<NamedRun<'_>> = parsed
        .iter()
        .map(|(name, results)| NamedRun { name, results })
        .collect();
    std::fs::write(path, page(&runs)?)
        .with_context(|| format!("cannot write the page {}", path.display()))
}
