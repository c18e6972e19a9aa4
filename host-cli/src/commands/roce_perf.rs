//! `dpuctl roce perf`: flags to a plan, the runs, and the report (table, JSON, HTML).

use std::time::Duration;

use anyhow::Context as _;
use dpu_probe::SysRoot;
use serde::Serialize;

use super::Env;
use crate::cli::PerfArgs;
use crate::outcome::Outcome;
use crate::output;
use crate::roce::endpoint::{self, Endpoint, Pin};
use crate::roce::peer::SshPeer;
use crate::roce::perf::{run_one, PathVerdict, PerfPlan, PerfRun, PerfTest};

/// The whole result, as printed with `-o json`.
#[derive(Debug, Serialize)]
pub(crate) struct PerfReport {
    /// The peer as named.
    pub(crate) peer: String,
    /// The address the clients connected to.
    pub(crate) peer_address: String,
    /// The local endpoint.
    pub(crate) local: Endpoint,
    /// The peer endpoint.
    pub(crate) remote: Endpoint,
    /// `ok`, `flagged` or `inconclusive`.
    pub(crate) verdict: &'static str,
    /// Every run, in order.
    pub(crate) runs: Vec<PerfRun>,
}

fn bad(message: impl std::fmt::Display) -> anyhow::Error {
    anyhow::anyhow!("{message}")
}

/// Checks the flags before anything runs, so a typo never costs a half-finished sweep.
fn tests_from(args: &PerfArgs) -> anyhow::Result<Vec<PerfTest>> {
    if args.tests.is_empty() {
        return Ok(PerfTest::DEFAULT.to_vec());
    }
    let mut tests = Vec::new();
    for name in &args.tests {
        let test = PerfTest::parse(name).ok_or_else(|| {
            let known: Vec<&str> = PerfTest::ALL.iter().map(|t| t.name()).collect();
            bad(format!(
                "--tests: unknown test {name:?} (known: {})",
                known.join(", ")
            ))
        })?;
        if !tests.contains(&test) {
            tests.push(test);
        }
    }
    Ok(tests)
}

fn validate(args: &PerfArgs) -> anyhow::Result<()> {
    for (flag, sizes) in [("--sizes", &args.sizes), ("--lat-sizes", &args.lat_sizes)] {
        if sizes.is_empty() || sizes.iter().any(|&s| s == 0 || s > 1 << 30) {
            return Err(bad(format!("{flag}: each size must be 1 byte .. 1 GiB")));
        }
    }
    if args.iterations == 0 || args.iterations > 100_000_000 {
        return Err(bad("--iterations must be 1 .. 100000000"));
    }
    if args.tcp_seconds == 0 || args.tcp_seconds > 3600 {
        return Err(bad("--tcp-seconds must be 1 .. 3600"));
    }
    if args.run_timeout == 0 {
        return Err(bad("--run-timeout must be positive"));
    }
    for (flag, dev) in [
        ("--device", &args.device),
        ("--peer-device", &args.peer_device),
    ] {
        if let Some(d) = dev {
            if d.is_empty()
                || d.len() > 64
                || !d
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || "_.-".contains(c))
            {
                return Err(bad(format!("{flag} {d:?} is not an RDMA device name")));
            }
        }
    }
    Ok(())
}

pub(crate) fn perf(env: &Env<'_>, args: &PerfArgs) -> anyhow::Result<Outcome> {
    let tests = tests_from(args)?;
    validate(args)?;
    let sizes_of = |t: &PerfTest| {
        if t.is_bandwidth() {
            &args.sizes
        } else {
            &args.lat_sizes
        }
    };
    let runs_total: usize = tests.iter().map(|t| sizes_of(t).len()).sum();
    let last_port = usize::from(args.base_port) + runs_total;
    if args.base_port < 1024 || last_port > usize::from(u16::MAX) {
        return Err(bad(format!(
            "--base-port {}: the {runs_total} runs need ports {} .. {last_port} within 1024 .. 65535",
            args.base_port, args.base_port
        )));
    }
    let mut peer = SshPeer::new(
        &args.peer,
        args.ssh.clone(),
        args.ssh_port,
        args.ssh_identity.clone(),
    )?;
    // Held to the end of the sweep: one handshake instead of one per run.
    let _master = peer.start_master(Duration::from_secs(20));
    let root = SysRoot::new(&env.cli.sys_root);
    let local = endpoint::local(
        &root,
        &Pin {
            ibdev: args.device.clone(),
            port: args.ib_port,
            gid_index: args.gid_index,
        },
    )
    .map_err(bad)?;
    let peer_address = match args.peer_address {
        Some(a) => a,
        None => peer
            .resolve_address()
            .with_context(|| format!("cannot resolve {}: pass --peer-address", args.peer))?,
    };
    let listing = peer
        .run(endpoint::PEER_GID_LISTING, Duration::from_secs(60))
        .context("reading the peer's GID table over ssh")?;
    let remote = endpoint::peer(
        &listing,
        &Pin {
            ibdev: args.peer_device.clone(),
            port: args.peer_ib_port,
            gid_index: args.peer_gid_index,
        },
        Some(peer_address),
        &format!("peer {}", args.peer),
    )
    .map_err(bad)?;
    eprintln!(
        "local {local}; peer {} at {peer_address}: {remote}",
        args.peer
    );
    let plan = PerfPlan {
        tests: tests.clone(),
        iterations: args.iterations,
        tcp_seconds: args.tcp_seconds,
        base_port: args.base_port,
        run_timeout: Duration::from_secs(args.run_timeout),
        local: local.clone(),
        peer: remote.clone(),
        peer_address,
    };
    let mut runs = Vec::new();
    for test in &plan.tests {
        for &size in sizes_of(test) {
            let n = runs.len();
            let port = plan
                .base_port
                .saturating_add(u16::try_from(n).unwrap_or(u16::MAX));
            eprint!("[{}/{runs_total}] {} {size} B ... ", n + 1, test.name());
            let run = run_one(&root, &peer, &plan, *test, size, port);
            eprintln!(
                "{}",
                match &run.error {
                    Some(e) => format!("FAILED: {e}"),
                    None => format!(
                        "{:.1} s, counters: {}",
                        run.seconds,
                        path_word(run.rdma.path)
                    ),
                }
            );
            runs.push(run);
        }
    }
    let verdict = if runs.iter().any(|r| r.flagged) {
        "flagged"
    } else if runs.iter().any(|r| r.rdma.path == PathVerdict::Unknown) {
        "inconclusive"
    } else {
        "ok"
    };
    let report = PerfReport {
        peer: args.peer.clone(),
        peer_address: peer_address.to_string(),
        local,
        remote,
        verdict,
        runs,
    };
    if let Some(path) = &args.report {
        std::fs::write(path, crate::roce::perf_html::render(&report))
            .with_context(|| format!("cannot write {}", path.display()))?;
    }
    if env.json() {
        output::json(&report)?;
    } else {
        print_table(&report)?;
    }
    Ok(match verdict {
        "ok" => Outcome::Success,
        "flagged" => Outcome::Failed,
        _ => Outcome::Inconclusive,
    })
}

fn path_word(path: PathVerdict) -> &'static str {
    match path {
        PathVerdict::Rdma => "RDMA",
        PathVerdict::NotRdma => "not RDMA",
        PathVerdict::Unknown => "unknown",
    }
}

fn num(v: Option<f64>, digits: usize) -> String {
    v.map_or_else(|| "-".to_owned(), |v| format!("{v:.digits$}"))
}

fn print_table(report: &PerfReport) -> anyhow::Result<()> {
    let mut table = output::table([
        "test",
        "size",
        "Gb/s",
        "lat avg µs",
        "lat p99 µs",
        "CPU here %",
        "CPU peer %",
        "RDMA pkts Δ",
        "payload pkts",
        "path",
        "",
    ]);
    for r in &report.runs {
        table.add_row(vec![
            r.test.name().to_owned(),
            r.size.to_string(),
            num(r.bw_gbps, 3),
            num(r.lat_avg_us, 2),
            num(r.lat_p99_us, 2),
            num(r.cpu_local_pct, 0),
            num(r.cpu_peer_pct, 0),
            r.rdma
                .packets_delta
                .map_or_else(|| "-".to_owned(), |v| v.to_string()),
            r.rdma.payload_packets.to_string(),
            path_word(r.rdma.path).to_owned(),
            match (&r.error, r.flagged) {
                (Some(e), _) => format!("FAILED: {e}"),
                (None, true) => "FLAGGED: counters contradict the tool".to_owned(),
                (None, false) => String::new(),
            },
        ]);
    }
    output::print_table(&table)?;
    output::line(&format!(
        "local {}; peer {} ({}): {}; verdict: {}",
        report.local, report.peer, report.peer_address, report.remote, report.verdict
    ))
}
