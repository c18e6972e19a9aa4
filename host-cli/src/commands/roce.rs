//! `dpuctl roce ...`: the NCCL check here; `perf` in roce_perf.rs.

use anyhow::Context as _;
use serde::Serialize;

use super::Env;
use crate::cli::RoceCommand;
use crate::outcome::Outcome;
use crate::output;
use crate::roce::nccl::{parse_results, NcclResults};
use crate::roce::nccl_transport::{scan_transport, NcclTransport};

pub(crate) fn run(env: &Env<'_>, cmd: &RoceCommand) -> anyhow::Result<Outcome> {
    match cmd {
        RoceCommand::NcclCheck { files } => nccl_check(env, files),
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
}

fn nccl_check(env: &Env<'_>, files: &[std::path::PathBuf]) -> anyhow::Result<Outcome> {
    let mut text = String::new();
    for file in files {
        text.push_str(
            &std::fs::read_to_string(file)
                .with_context(|| format!("cannot read {}", file.display()))?,
        );
        text.push('\n');
    }
    let verdict = scan_transport(&text);
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
