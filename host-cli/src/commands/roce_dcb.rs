//! `dpuctl roce dcb`: flags to the check's parameters, the readings and rules (dpu-host's
//! `roce::dcb`), and the report: the rail's DCB configuration, the per-priority counters
//! that prove it, and the findings. Exit 0: ok; 1: misconfigured (in the counters or in
//! the configuration); 3: no such counters, or a counter the rules read reset, vanished
//! or appeared during the window.

use dpu_host::facts::dcb_chain::{ranges, RailDcb, Trust};
use dpu_host::roce::dcb::tie::bytes_text;
use dpu_host::roce::dcb::{run, DcbParams, DcbReport};

use super::env::Env;
use crate::cli::DcbArgs;
use crate::exit::Exit;
use crate::output;

pub(crate) fn dcb(env: &Env<'_>, args: &DcbArgs) -> anyhow::Result<Exit> {
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
        "ok" => Exit::Success,
        "misconfigured" => Exit::Failed,
        _ => Exit::Inconclusive,
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
    print_config(r)?;
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

/// The configuration, the chain and where the counters say the traffic went.
fn print_config(r: &DcbReport) -> anyhow::Result<()> {
    match (&r.dcb, &r.dcb_unread) {
        (Some(dcb), _) => output::line(&format!("configuration: {}", config_line(dcb)))?,
        (None, Some(why)) => output::line(&format!(
            "configuration: not read ({why}); the counters below are shown without it"
        ))?,
        (None, None) => {}
    }
    // The first line is the chain (or why there is none), already said above.
    for line in r.proof.summary.iter().skip(1) {
        output::line(line)?;
    }
    if r.proof.per_priority.is_empty() {
        return Ok(());
    }
    let configured = r.proof.configured_priority;
    let pfc: Vec<u8> = r
        .dcb
        .as_ref()
        .and_then(|d| d.pfc_enabled.clone())
        .unwrap_or_default();
    let mut table = output::table([
        "priority", "role", "rx bytes", "tx bytes", "rx pause", "tx pause",
    ]);
    let amount = |v: Option<u64>| v.map_or("-".to_owned(), |v| format!("+{}", bytes_text(v)));
    let count = |v: Option<u64>| v.map_or("-".to_owned(), |v| format!("+{v}"));
    for c in &r.proof.per_priority {
        let mut role = Vec::new();
        if configured == Some(c.priority) {
            role.push("RoCE");
        }
        if pfc.contains(&c.priority) {
            role.push("PFC");
        }
        table.add_row(vec![
            c.priority.to_string(),
            role.join(", "),
            amount(c.rx_bytes),
            amount(c.tx_bytes),
            count(c.rx_pause),
            count(c.tx_pause),
        ]);
    }
    output::print_table(&table)
}

/// `RoCE ToS 106 → DSCP 26 → priority 3 (by the APP table); PFC enabled on 3; trust dscp
/// (64 APP entries); ETS TC0 ets 50%, TC3 ets 50%`.
fn config_line(dcb: &RailDcb) -> String {
    let trust = match dcb.trust {
        Trust::Dscp => format!("trust dscp ({} APP entries)", dcb.dscp_map.len()),
        Trust::Pcp => "trust pcp".to_owned(),
    };
    let mut parts = vec![dcb.chain_text(), trust];
    if let Some(ets) = &dcb.ets {
        let shares: Vec<String> = ets
            .tc_tx_bw
            .iter()
            .zip(&ets.tc_tsa)
            .enumerate()
            .filter(|(_, (bw, tsa))| **bw > 0 || **tsa != "ets")
            .map(|(tc, (bw, tsa))| match *tsa {
                "ets" => format!("TC{tc} ets {bw}%"),
                other => format!("TC{tc} {other}"),
            })
            .collect();
        parts.push(format!("ETS {}", shares.join(", ")));
    }
    if !dcb.lossless_dscps.is_empty() {
        let dscps: Vec<u8> = dcb.lossless_dscps.iter().map(|l| l.dscp).collect();
        parts.push(format!("lossless DSCPs {}", ranges(&dscps)));
    }
    parts.join("; ")
}
