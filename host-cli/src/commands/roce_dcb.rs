//! `dpuctl roce dcb`: snapshot the interface's driver statistics (SIOCETHTOOL) and the RDMA
//! port's congestion counters, run the workload or wait, snapshot again, and explain the
//! deltas with the rules in `roce::dcb`.

use std::time::{Duration, Instant};

use anyhow::Context as _;
use dpu_probe::ethtool_stats::read_ethtool_stats;
use dpu_probe::rdma_counters::{read_device_hw_counters, read_port_counters};
use dpu_probe::SysRoot;
use serde::Serialize;

use super::Env;
use crate::cli::DcbArgs;
use crate::outcome::Outcome;
use crate::output;
use crate::roce::dcb::{deltas, evaluate, has_dcb_counters, Counters, Finding, Severity};
use crate::roce::endpoint::{self, Endpoint, Pin};

/// What `-o json` prints.
#[derive(Debug, Serialize)]
struct DcbReport {
    interface: String,
    rdma: Option<Endpoint>,
    priority: u8,
    seconds: f64,
    workload_exit: Option<i32>,
    /// Counters that moved.
    deltas: Counters,
    findings: Vec<Finding>,
    /// `ok`, `misconfigured` or `no-counters`.
    verdict: &'static str,
}

fn valid_ifname(name: &str) -> bool {
    !name.is_empty()
        && name.len() < 16
        && !name.contains(['/', '\0', ' ', ':'])
        && name != "."
        && name != ".."
}

fn snapshot(interface: &str, root: &SysRoot, rdma: Option<&Endpoint>) -> anyhow::Result<Counters> {
    let mut c: Counters = read_ethtool_stats(interface)
        .with_context(|| format!("reading the driver statistics of {interface}"))?
        .into_iter()
        .map(|s| (s.name, s.value))
        .collect();
    if let Some(ep) = rdma {
        let mut samples = read_port_counters(root, &ep.ibdev, ep.port).unwrap_or_default();
        samples.extend(read_device_hw_counters(root, &ep.ibdev).unwrap_or_default());
        for s in samples {
            c.entry(s.key.counter.into_owned()).or_insert(s.value);
        }
    }
    Ok(c)
}

pub(crate) fn dcb(env: &Env<'_>, args: &DcbArgs) -> anyhow::Result<Outcome> {
    if let Some(i) = &args.interface {
        anyhow::ensure!(
            valid_ifname(i),
            "--interface {i:?} is not an interface name"
        );
    }
    if args.workload.is_empty() {
        anyhow::ensure!(
            (1..=86_400).contains(&args.duration),
            "--duration must be 1 .. 86400 seconds"
        );
    }
    let root = SysRoot::new(&env.cli.sys_root);
    let rdma = endpoint::local(
        &root,
        &Pin {
            ibdev: args.device.clone(),
            ..Pin::default()
        },
    );
    let (interface, rdma) = match (&args.interface, rdma) {
        (Some(i), rdma) => (i.clone(), rdma.ok()),
        (None, Ok(ep)) => (
            ep.netdev
                .clone()
                .context("the RDMA device's GID names no netdev: pass --interface")?,
            Some(ep),
        ),
        (None, Err(e)) => anyhow::bail!("{e}; pass --interface"),
    };
    let before = snapshot(&interface, &root, rdma.as_ref())?;
    let started = Instant::now();
    let workload_exit = if let Some((program, rest)) = args.workload.split_first() {
        let status = std::process::Command::new(program)
            .args(rest)
            .stdin(std::process::Stdio::null())
            // Its output must not mix with the report (JSON on stdout).
            .stdout(std::process::Stdio::from(std::io::stderr()))
            .status()
            .with_context(|| format!("cannot run the workload {program}"))?;
        status.code()
    } else {
        std::thread::sleep(Duration::from_secs(args.duration));
        None
    };
    let seconds = started.elapsed().as_secs_f64();
    // hw_counters are cached for `lifespan` (10 ms by default).
    std::thread::sleep(Duration::from_millis(30));
    let after = snapshot(&interface, &root, rdma.as_ref())?;
    let d = deltas(&before, &after);
    let findings = evaluate(&d, args.priority);
    let verdict = if !has_dcb_counters(&after) {
        "no-counters"
    } else if findings
        .iter()
        .any(|f| f.severity == Severity::Misconfigured)
    {
        "misconfigured"
    } else {
        "ok"
    };
    let report = DcbReport {
        interface,
        rdma,
        priority: args.priority,
        seconds,
        workload_exit,
        deltas: d.into_iter().filter(|(_, v)| *v > 0).collect(),
        findings,
        verdict,
    };
    if env.json() {
        output::json(&report)?;
    } else {
        print_text(&report)?;
    }
    Ok(match verdict {
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
    output::line(&format!("verdict: {}", r.verdict))
}
