//! The arguments of `dpuctl capture`, apart from `cli.rs` so the command list there only
//! names them; the command is `commands/capture.rs`, the capture itself
//! [`dpu_host::capture`].

use std::path::PathBuf;
use std::time::Duration;

use clap::Args;

/// The longest `--interval` accepted: a capture is a few seconds of two readings.
const MAX_INTERVAL: Duration = Duration::from_secs(600);

/// `capture` arguments.
#[derive(Debug, Args)]
pub(crate) struct CaptureArgs {
    /// The bundle directory to write: must not exist, or be empty (nothing is overwritten).
    #[arg(long, value_name = "DIR")]
    pub(crate) out: PathBuf,
    /// Keep MACs, GUIDs, GIDs, IP addresses, hostnames and serials as they are (by default
    /// each is replaced by a consistent placeholder listed in the manifest).
    #[arg(long)]
    pub(crate) no_redact: bool,
    /// SNAP's JSON-RPC socket (on the DPU's Arm; or a plain SPDK's): its read-only
    /// listings and counters are recorded in both readings as jsonrpc/NAME.jsonl. Without
    /// it no JSON-RPC is asked. Only read-only methods can be sent.
    #[arg(long, value_name = "PATH")]
    pub(crate) snap_socket: Option<PathBuf>,
    /// OVS's run directory (as the agent's `--ovs-rundir`; Debian's is
    /// /var/run/openvswitch): the agent's read-only OVS reads (the OVSDB bridge, port and
    /// interface listing, flow dumps, dpif/show) of ovsdb-server (db.sock) and ovs-vswitchd
    /// (its control socket, found through ovs-vswitchd.pid) are recorded in both readings
    /// as jsonrpc/ovsdb-server.jsonl and jsonrpc/ovs-vswitchd.jsonl. Only reads can be
    /// sent: an OVSDB transaction with anything but `select` is refused unsent.
    #[arg(long, value_name = "DIR")]
    pub(crate) ovs_rundir: Option<PathBuf>,
    /// Time between the two counter readings, e.g. 2s, 500ms.
    #[arg(long, value_name = "DURATION", default_value = "2s", value_parser = parse_interval)]
    pub(crate) interval: Duration,
}

/// `--interval`: a humantime duration above zero and at most [`MAX_INTERVAL`].
fn parse_interval(text: &str) -> Result<Duration, String> {
    let interval = humantime::parse_duration(text.trim())
        .map_err(|e| format!("{text:?} is not a duration ({e}); give e.g. 2s or 500ms"))?;
    if interval.is_zero() || interval > MAX_INTERVAL {
        return Err(format!(
            "{text:?}: the interval must be more than zero and at most {}",
            humantime::format_duration(MAX_INTERVAL)
        ));
    }
    Ok(interval)
}
