//! `dpuctl capture`: runs [`dpu_host::capture`] and says where the bundle is.

use anyhow::Context as _;
use dpu_host::capture::{capture, CaptureOptions};

use crate::capture_cli::CaptureArgs;
use crate::cli::{Cli, OutputFormat};
use crate::exit::Exit;
use crate::output;

/// Runs the capture and says where the bundle is.
pub(crate) fn run(cli: &Cli, args: &CaptureArgs) -> anyhow::Result<Exit> {
    let options = CaptureOptions {
        sys_root: cli.sys_root.clone(),
        out: args.out.clone(),
        redact: !args.no_redact,
        interval: args.interval,
        snap_socket: args.snap_socket.clone(),
        ovs_rundir: args.ovs_rundir.clone(),
    };
    let summary = capture(&options).context("capture failed")?;
    let manifest = &summary.manifest;
    if cli.output == OutputFormat::Json {
        return output::json(manifest).map(|()| Exit::Success);
    }
    let files = manifest.readings.first().map_or(0, |r| r.paths.len());
    let unreadable = manifest.readings.first().map_or(0, |r| r.unreadable.len());
    output::line(&format!(
        "captured {files} paths into {} ({unreadable} unreadable, {} identifiers redacted{})",
        summary.out.display(),
        manifest.redactions.len(),
        if manifest.redacted {
            ""
        } else {
            ": --no-redact"
        },
    ))?;
    for transcript in &manifest.jsonrpc {
        output::line(&format!(
            "recorded {} JSON-RPC exchanges of {} into {} ({} answered with an error)",
            transcript.exchanges,
            transcript.socket,
            summary.out.join(&transcript.transcript).display(),
            transcript.errors.len(),
        ))?;
    }
    output::line(&format!(
        "replay: dpuctl --sys-root {} check --no-agent",
        summary.out.join("root").display()
    ))?;
    Ok(Exit::Success)
}
