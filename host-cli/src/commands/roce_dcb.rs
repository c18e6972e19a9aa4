//! `dpuctl roce dcb`: flags to the check's parameters, the readings and rules (dpu-host's
//! `roce::dcb`), and the report. Exit 0: ok; 1: misconfigured; 3: no such counters, or a
//! counter the rules read reset, vanished or appeared during the window.

use dpu_host::roce::dcb::{run, DcbParams, DcbReport};

use super::env::Env;
use crate::cli::DcbArgs;
use crate::outcome::Outcome;
use crate::output;

pub(crate) fn dcb(env: &Env<'_>, args: &DcbArgs) -> anyhow::Result<Outcome> {
    let params = DcbParams {
        interface: args.interface.clone(),
        device: args.device.clone(),
        priority: args.priority,
        duration: args.duration,
        workload: args.workload.clone(),
    };
    let report = run(&env.session.sys_root(), &params)?;
    if env.json() {
        output::json(&report)?;
    } else {
        print_text(&report)?;
    }
    Ok(match report.verdict {
        "ok" => Outcome::Success,
        "misconfigured" => Outcome::Failed,
        _ => Outcome::Inconclusive,
    })
}

fn print_text(r: &DcbReport) -> anyhow::Result<()> {
    output::line(&format!(
        "{} over {:.1} s, lossless priority {}{}",
        r.interface,
        r.seconds,
        r.priority,
        r.rdma
            .as_ref()
            .map(|e| format!(", RDMA {e}"))
            .unwrap_or_default()
    ))?;
    if r.verdict == "no-counters" {
        output::line(&format!(
            "{}'s driver exposes no PFC, pause or congestion counters: nothing to judge \
             (a ConnectX/BlueField port has rx_prio<N>_pause and np_*/rp_* counters)",
            r.interface
        ))?;
    }
    let mut table = output::table(["severity", "meaning", "evidence"]);
    for f in &r.findings {
        table.add_row(vec![
            format!("{:?}", f.severity),
            f.meaning.clone(),
            f.evidence
                .iter()
                .map(|(n, v)| format!("{n} +{v}"))
                .collect::<Vec<_>>()
                .join(", "),
        ]);
    }
    if !r.findings.is_empty() {
        output::print_table(&table)?;
    } else if r.verdict != "no-counters" {
        output::line("no pauses, CNPs, drops or retransmissions: the fabric was quiet")?;
    }
    for (name, why) in &r.broken {
        output::line(&format!("inconclusive: {why} ({name})"))?;
    }
    output::line(&format!("verdict: {}", r.verdict))
}
