//! `dpuctl roce perf`: flags to the sweep's parameters, the sweep (dpu-host) with a line
//! per run on stderr, and the report (table, JSON, HTML). Exit 0: ok; 1: flagged (the
//! counters contradict a tool); 3: inconclusive (a run's counters could not decide: absent,
//! in between, or reset, vanished or appeared during the run).

use anyhow::Context as _;
use dpu_host::roce::perf::{PathVerdict, PerfReport};
use dpu_host::roce::sweep::{self, PerfParams, SweepEvent};

use super::env::Env;
use crate::cli::PerfArgs;
use crate::exit::Exit;
use crate::output;

pub(crate) fn perf(env: &Env<'_>, args: &PerfArgs) -> anyhow::Result<Exit> {
    let params = PerfParams {
        peer: args.peer.clone(),
        tests: args.tests.clone(),
        sizes: args.sizes.clone(),
        lat_sizes: args.lat_sizes.clone(),
        iterations: args.iterations,
        tcp_seconds: args.tcp_seconds,
        device: args.device.clone(),
        ib_port: args.ib_port,
        gid_index: args.gid_index,
        peer_device: args.peer_device.clone(),
        peer_ib_port: args.peer_ib_port,
        peer_gid_index: args.peer_gid_index,
        peer_address: args.peer_address,
        ssh: args.ssh.clone(),
        ssh_port: args.ssh_port,
        ssh_identity: args.ssh_identity.clone(),
        base_port: args.base_port,
        run_timeout: args.run_timeout,
    };
    let report = sweep::run(
        &env.session.sys_root(),
        &params,
        &mut |event: &SweepEvent<'_>| match event {
            SweepEvent::Resolved {
                local,
                peer_address,
                remote,
            } => output::diag(&format!(
                "local {local}; peer {} at {peer_address}: {remote}",
                args.peer
            )),
            SweepEvent::RunStarted {
                index,
                total,
                test,
                size,
            } => output::diag_part(&format!("[{index}/{total}] {} {size} B ... ", test.name())),
            SweepEvent::RunDone(run) => output::diag(&match &run.error {
                Some(e) => format!("FAILED: {e}"),
                None => format!(
                    "{:.1} s, counters: {}",
                    run.seconds,
                    path_word(run.rdma.path)
                ),
            }),
        },
    )?;
    if let Some(path) = &args.report {
        std::fs::write(path, dpu_host::roce::perf::html::render(&report))
            .with_context(|| format!("cannot write {}", path.display()))?;
    }
    if env.json() {
        output::json(&report)?;
    } else {
        print_table(&report)?;
    }
    // After the report is out: a file that cannot be written is then exit 2 with the
    // results still shown.
    if let Some(path) = &args.metrics_file {
        report
            .textfile(std::time::SystemTime::now())
            .write_atomic(path)?;
    }
    Ok(match report.verdict {
        "ok" => Exit::Success,
        "flagged" => Exit::Failed,
        _ => Exit::Inconclusive,
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
            match (&r.error, r.flagged, &r.rdma.inconclusive) {
                (Some(e), _, _) => format!("FAILED: {e}"),
                (None, true, _) => "FLAGGED: counters contradict the tool".to_owned(),
                (None, false, Some(why)) => format!("INCONCLUSIVE: {why}"),
                (None, false, None) => String::new(),
            },
        ]);
    }
    output::print_table(&table)?;
    output::line(&format!(
        "local {}; peer {} ({}): {}; verdict: {}",
        report.local, report.peer, report.peer_address, report.remote, report.verdict
    ))
}
