//! `dpuctl prove qos`: flags to the proof's parameters, the proof (dpu-host) with Ctrl-C
//! and SIGTERM wired to set a lifted limit back, and the report: a table of the windows
//! and the proof's lines, or fio-shaped JSON; the exit code as every proof's.

use dpu_host::accounting::Verdict;
use dpu_host::prove::{self, qos_judge, QosParams, QosReport};

use super::env::Env;
use super::proof_report::finish;
use crate::exit::Exit;
use crate::output;
use crate::prove_qos_cli::ProveQosArgs;

pub(crate) async fn run(env: &Env<'_>, args: &ProveQosArgs) -> anyhow::Result<Exit> {
    let params = QosParams {
        volume: args.volume.clone(),
        device: args.device.clone(),
        duration: args.duration,
        bs: args.bs,
        iodepth: args.iodepth,
        tolerance: args.tolerance,
        lift: !args.no_lift,
    };
    let report = prove::qos::run(&env.session, &params, interrupted()).await?;
    let outcome = if env.json() {
        output::json(&report.fio_shaped())?;
        match report.proof.verdict {
            Verdict::Proven => Exit::Success,
            Verdict::NotProven => Exit::Failed,
            Verdict::Inconclusive => Exit::Inconclusive,
        }
    } else {
        print_windows(&report)?;
        finish(env, &report.proof, None)?
    };
    if let Some(path) = &args.metrics_file {
        report
            .textfile(std::time::SystemTime::now())
            .write_atomic(path)?;
    }
    Ok(outcome)
}

fn print_windows(report: &QosReport) -> anyhow::Result<()> {
    let mut table = output::table([
        "window",
        "MiB/s",
        "IOPS",
        "limit MiB/s",
        "bounds (bytes)",
        "verdict",
    ]);
    #[allow(clippy::cast_precision_loss)]
    let limit = report.limit.bytes_per_sec as f64 / f64::from(1u32 << 20);
    for w in &report.windows {
        #[allow(clippy::cast_precision_loss)]
        let iops = if w.read.seconds > 0.0 {
            w.read.ios as f64 / w.read.seconds
        } else {
            0.0
        };
        let bounds = match w.window {
            qos_judge::WindowKind::Lifted => format!(">= {}", w.bounds.0),
            _ => format!("{}..{}", w.bounds.0, w.bounds.1),
        };
        table.add_row([
            w.window.as_str().to_owned(),
            qos_judge::rate_text(w.read.bytes, w.read.seconds).replace(" MiB/s", ""),
            format!("{iops:.0}"),
            format!("{limit:.1}"),
            bounds,
            w.verdict.as_str().to_owned(),
        ]);
    }
    output::print_table(&table)
}

/// Resolves on Ctrl-C or SIGTERM, naming which; never where neither can be watched.
async fn interrupted() -> String {
    use tokio::signal::unix::{signal, SignalKind};
    let Ok(mut term) = signal(SignalKind::terminate()) else {
        return match tokio::signal::ctrl_c().await {
            Ok(()) => "Ctrl-C".to_owned(),
            Err(_) => std::future::pending().await,
        };
    };
    tokio::select! {
        result = tokio::signal::ctrl_c() => match result {
            Ok(()) => "Ctrl-C".to_owned(),
            Err(_) => { term.recv().await; "SIGTERM".to_owned() }
        },
        _ = term.recv() => "SIGTERM".to_owned(),
    }
}
