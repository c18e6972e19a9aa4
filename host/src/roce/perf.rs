//! `dpuctl roce perf`: the course lab's TCP-versus-RDMA comparison as one command. For each
//! test and message size: read the local RDMA counters, start the server on the peer over
//! ssh, run the client here, parse its table, read the counters again, and decide from the
//! counters alone whether the traffic went over RDMA. A run whose counters disagree with
//! what the tool claims is flagged: an RDMA test that left the RDMA port still, or a TCP
//! run that moved it.

pub mod html;
pub mod plot;
pub mod textfile;

use std::net::IpAddr;
use std::time::Duration;

use serde::Serialize;

use super::endpoint::Endpoint;
use super::local_run::{run_measured, LocalRun};
use super::peer::{PeerServer, ServerRun, SshPeer};
use super::perftest::{self, PerftestTable};
use super::qperf;
use super::rdma_evidence::{movement, read_port, CounterSource, PortReading};
use dpu_probe::SysRoot;

/// One benchmark the command can run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum PerfTest {
    /// qperf `tcp_bw`.
    TcpBw,
    /// qperf `tcp_lat`.
    TcpLat,
    /// `ib_send_lat`.
    SendLat,
    /// `ib_send_bw`.
    SendBw,
    /// `ib_write_lat`.
    WriteLat,
    /// `ib_write_bw`.
    WriteBw,
    /// `ib_read_lat`.
    ReadLat,
    /// `ib_read_bw`.
    ReadBw,
}

impl PerfTest {
    /// Every test, in the order runs are made.
    pub const ALL: [Self; 8] = [
        Self::TcpBw,
        Self::TcpLat,
        Self::SendLat,
        Self::SendBw,
        Self::WriteLat,
        Self::WriteBw,
        Self::ReadLat,
        Self::ReadBw,
    ];

    /// What the course labs run by default: the TCP baseline, then send and write.
    pub const DEFAULT: [Self; 6] = [
        Self::TcpBw,
        Self::TcpLat,
        Self::SendLat,
        Self::SendBw,
        Self::WriteLat,
        Self::WriteBw,
    ];

    /// The name users type and reports print.
    pub fn name(self) -> &'static str {
        match self {
            Self::TcpBw => "tcp_bw",
            Self::TcpLat => "tcp_lat",
            Self::SendLat => "ib_send_lat",
            Self::SendBw => "ib_send_bw",
            Self::WriteLat => "ib_write_lat",
            Self::WriteBw => "ib_write_bw",
            Self::ReadLat => "ib_read_lat",
            Self::ReadBw => "ib_read_bw",
        }
    }

    /// Parses `tcp_bw`, `ib_write_bw` or the short `write_bw`.
    pub fn parse(text: &str) -> Option<Self> {
        let t = text.trim();
        Self::ALL
            .into_iter()
            .find(|x| x.name() == t || x.name().strip_prefix("ib_") == Some(t))
    }

    /// Whether the test is meant to use RDMA (perftest) or TCP (qperf).
    pub fn is_rdma(self) -> bool {
        !matches!(self, Self::TcpBw | Self::TcpLat)
    }

    /// Whether it measures bandwidth.
    pub fn is_bandwidth(self) -> bool {
        matches!(
            self,
            Self::TcpBw | Self::SendBw | Self::WriteBw | Self::ReadBw
        )
    }
}

/// Everything a run needs besides the peer.
#[derive(Debug, Clone)]
pub struct PerfPlan {
    /// Tests, in order.
    pub tests: Vec<PerfTest>,
    /// perftest `-n`.
    pub iterations: u64,
    /// qperf `-t`.
    pub tcp_seconds: u32,
    /// First TCP port for the servers; run i uses base + i.
    pub base_port: u16,
    /// Per-run limit.
    pub run_timeout: Duration,
    /// The local endpoint.
    pub local: Endpoint,
    /// The peer endpoint.
    pub peer: Endpoint,
    /// The address the clients connect to.
    pub peer_address: IpAddr,
    /// The local port's own traffic while nothing ran, measured before the sweep.
    pub background: Background,
}

/// The local RDMA port's own traffic while no test ran (NVMe-oF, another tenant's
/// collective), measured over an idle window before the sweep. Each run's counters are net
/// of it, scaled to the run's time, and a run whose background is more than a tenth of its
/// payload cannot be told from it: its path is unknown. Without this, traffic that was not
/// the test could make a run that went elsewhere read as RDMA, or a TCP run look like it
/// moved the RDMA port.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Background {
    /// The idle window, seconds.
    pub seconds: f64,
    /// Packets sent + received per second.
    pub packets_per_s: f64,
    /// Bytes per second, where the port counts bytes.
    pub bytes_per_s: Option<f64>,
    /// Why it could not be measured (a counter reset, vanished or appeared in the window):
    /// then every run's path is unknown.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub inconclusive: Option<String>,
}

impl Background {
    /// The port's movement between the idle window's two readings, `window` apart.
    pub fn measure(quiet_start: &PortReading, quiet_end: &PortReading, window: Duration) -> Self {
        let moved = movement(quiet_start, quiet_end);
        let seconds = window.as_secs_f64();
        let rate = |n: u64| {
            if seconds > 0.0 {
                n as f64 / seconds
            } else {
                0.0
            }
        };
        Self {
            seconds,
            packets_per_s: moved.packets.amount().map_or(0.0, rate),
            bytes_per_s: moved.bytes.amount().map(rate),
            inconclusive: moved.inconclusive().map(str::to_owned),
        }
    }

    /// The background over `seconds`, rounded up (an allowance against the run, never in
    /// its favour): (packets, bytes).
    // Precision: rates and times far below 2^52.
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
    fn over(&self, seconds: f64) -> (u64, Option<u64>) {
        let scale = |rate: f64| (rate * seconds.max(0.0)).ceil() as u64;
        (scale(self.packets_per_s), self.bytes_per_s.map(scale))
    }
}

/// How long the idle window before a sweep is.
pub const IDLE_WINDOW: Duration = Duration::from_secs(1);

/// The whole result of a sweep, as printed with `-o json`.
#[derive(Debug, Serialize)]
pub struct PerfReport {
    /// The peer as named.
    pub peer: String,
    /// The address the clients connected to.
    pub peer_address: String,
    /// The local endpoint.
    pub local: Endpoint,
    /// The peer endpoint.
    pub remote: Endpoint,
    /// `ok`, `flagged` or `inconclusive` ([`sweep_verdict`]).
    pub verdict: &'static str,
    /// The local port's own traffic before the sweep, which every run is net of.
    pub background: Background,
    /// Every run, in order.
    pub runs: Vec<PerfRun>,
}

/// Whether the counters say a run went over RDMA.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum PathVerdict {
    /// The RDMA port carried at least 90% of the payload.
    Rdma,
    /// The RDMA port carried under 10% of it.
    NotRdma,
    /// In between, or the counters could not be read.
    Unknown,
}

/// The counter evidence of one run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RdmaEvidence {
    /// Where the counters were read.
    pub source: CounterSource,
    /// Packets sent + received on the local RDMA port during the run.
    pub packets_delta: Option<u64>,
    /// Bytes sent + received (mlx5 PMA counters; None on soft-RoCE).
    pub bytes_delta: Option<u64>,
    /// Why the counters cannot say how much moved: one reset, vanished or appeared during
    /// the run (the path is then `unknown` and the sweep inconclusive, never "moved 0").
    #[serde(skip_serializing_if = "Option::is_none")]
    pub inconclusive: Option<String>,
    /// The port's background over the run's time (the idle window's rate, rounded up),
    /// subtracted before the path is judged: packets.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub background_packets: Option<u64>,
    /// The same in bytes, where the port counts bytes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub background_bytes: Option<u64>,
    /// The packets the payload needs at the RoCE path MTU.
    pub payload_packets: u64,
    /// The payload in bytes.
    pub payload_bytes: u64,
    /// The verdict.
    pub path: PathVerdict,
}

/// One measured run.
#[derive(Debug, Clone, Serialize)]
pub struct PerfRun {
    /// The test.
    pub test: PerfTest,
    /// Message size in bytes.
    pub size: u64,
    /// None when the run completed; else what went wrong.
    pub error: Option<String>,
    /// Average bandwidth, Gbit/s (10^9).
    pub bw_gbps: Option<f64>,
    /// Peak bandwidth, Gbit/s (perftest BW tests only).
    pub bw_peak_gbps: Option<f64>,
    /// Message rate, millions per second.
    pub msg_rate_mpps: Option<f64>,
    /// Average latency, µs.
    pub lat_avg_us: Option<f64>,
    /// Median (`t_typical`), µs.
    pub lat_typical_us: Option<f64>,
    /// 99th percentile, µs.
    pub lat_p99_us: Option<f64>,
    /// 99.9th percentile, µs.
    pub lat_p99_9_us: Option<f64>,
    /// Maximum, µs.
    pub lat_max_us: Option<f64>,
    /// Messages the client exchanged (perftest `#iterations`).
    pub iterations: Option<u64>,
    /// RoCE path MTU perftest reported.
    pub path_mtu: Option<u32>,
    /// Client wall time, s.
    pub seconds: f64,
    /// Client CPU time (user + system), s.
    pub cpu_local_s: Option<f64>,
    /// Server CPU time on the peer, s.
    pub cpu_peer_s: Option<f64>,
    /// Client CPU as % of one core over the run.
    pub cpu_local_pct: Option<f64>,
    /// Server CPU as % of one core over the run.
    pub cpu_peer_pct: Option<f64>,
    /// The counter evidence.
    pub rdma: RdmaEvidence,
    /// Set when the counters contradict the tool (see the module doc).
    pub flagged: bool,
}

impl PerfRun {
    /// A run of `test` at `size` with nothing measured yet.
    pub(crate) fn empty(test: PerfTest, size: u64, source: CounterSource) -> Self {
        PerfRun {
            test,
            size,
            error: None,
            bw_gbps: None,
            bw_peak_gbps: None,
            msg_rate_mpps: None,
            lat_avg_us: None,
            lat_typical_us: None,
            lat_p99_us: None,
            lat_p99_9_us: None,
            lat_max_us: None,
            iterations: None,
            path_mtu: None,
            seconds: 0.0,
            cpu_local_s: None,
            cpu_peer_s: None,
            cpu_local_pct: None,
            cpu_peer_pct: None,
            rdma: RdmaEvidence {
                source,
                packets_delta: None,
                bytes_delta: None,
                inconclusive: None,
                background_packets: None,
                background_bytes: None,
                payload_packets: 0,
                payload_bytes: 0,
                path: PathVerdict::Unknown,
            },
            flagged: false,
        }
    }
}

const GBIT: f64 = 1e9 / 8.0;

/// The verdict from a counter delta against the payload (packets when bytes are not
/// counted, as on soft-RoCE).
pub fn classify(delta: (Option<u64>, Option<u64>), payload: (u64, u64)) -> PathVerdict {
    let (packets, bytes) = delta;
    let (payload_packets, payload_bytes) = payload;
    let (moved, needed) = match (bytes, packets) {
        (Some(b), _) if payload_bytes > 0 => (b as f64, payload_bytes as f64),
        (_, Some(p)) if payload_packets > 0 => (p as f64, payload_packets as f64),
        _ => return PathVerdict::Unknown,
    };
    if moved >= 0.9 * needed {
        PathVerdict::Rdma
    } else if moved < 0.1 * needed {
        PathVerdict::NotRdma
    } else {
        PathVerdict::Unknown
    }
}

/// Fills the counter evidence of a run from the port's readings around it, `seconds`
/// apart, net of the port's `background` over that time. A background above a tenth of
/// the payload (in the unit the path is judged by) leaves the path unknown: the run's
/// traffic cannot be told from it.
pub fn account(
    rdma: &mut RdmaEvidence,
    before: &PortReading,
    after: &PortReading,
    background: &Background,
    seconds: f64,
) {
    let moved = movement(before, after);
    rdma.packets_delta = moved.packets.amount();
    rdma.bytes_delta = moved.bytes.amount();
    rdma.inconclusive = moved.inconclusive().map(str::to_owned).or_else(|| {
        background
            .inconclusive
            .as_ref()
            .map(|why| format!("the port's background could not be measured: {why}"))
    });
    let (bg_packets, bg_bytes) = background.over(seconds);
    rdma.background_packets = Some(bg_packets);
    rdma.background_bytes = bg_bytes;
    if rdma.inconclusive.is_some() {
        rdma.path = PathVerdict::Unknown;
        return;
    }
    let by_bytes = rdma.bytes_delta.is_some() && rdma.payload_bytes > 0;
    let (background_here, payload, unit) = if by_bytes {
        (bg_bytes.unwrap_or(0), rdma.payload_bytes, "bytes")
    } else {
        (bg_packets, rdma.payload_packets, "packets")
    };
    if payload > 0 && background_here.saturating_mul(10) > payload {
        rdma.inconclusive = Some(format!(
            "the port carried about {background_here} {unit} of other traffic over the run's \
             {seconds:.1} s (measured while idle before the sweep), more than a tenth of the \
             payload's {payload}: the run cannot be told from it"
        ));
        rdma.path = PathVerdict::Unknown;
        return;
    }
    rdma.path = classify(
        (
            rdma.packets_delta.map(|p| p.saturating_sub(bg_packets)),
            rdma.bytes_delta
                .map(|b| b.saturating_sub(bg_bytes.unwrap_or(0))),
        ),
        (rdma.payload_packets, rdma.payload_bytes),
    );
}

/// The verdict of a sweep: `flagged` when a run's counters contradict its tool, else
/// `inconclusive` when a run's counters could not decide (unreadable, reset, in between),
/// else `ok`.
pub fn sweep_verdict(runs: &[PerfRun]) -> &'static str {
    if runs.iter().any(|r| r.flagged) {
        "flagged"
    } else if runs.iter().any(|r| r.rdma.path == PathVerdict::Unknown) {
        "inconclusive"
    } else {
        "ok"
    }
}

/// The server and client argument vectors of one perftest run.
pub fn perftest_args(
    plan: &PerfPlan,
    test: PerfTest,
    size: u64,
    port: u16,
) -> (Vec<String>, Vec<String>) {
    let side = |ep: &Endpoint| {
        let mut a = vec![
            test.name().to_owned(),
            "-d".into(),
            ep.ibdev.clone(),
            "-i".into(),
            ep.port.to_string(),
            "-x".into(),
            ep.gid_index.to_string(),
            "-s".into(),
            size.to_string(),
            "-n".into(),
            plan.iterations.to_string(),
            "-p".into(),
            port.to_string(),
            "-F".into(),
        ];
        if test.is_bandwidth() {
            a.push("--report_gbits".into());
        }
        a
    };
    let server = side(&plan.peer);
    let mut client = side(&plan.local);
    client.push(plan.peer_address.to_string());
    (server, client)
}

/// The server and client argument vectors of one qperf run.
pub fn qperf_args(
    plan: &PerfPlan,
    test: PerfTest,
    size: u64,
    port: u16,
) -> (Vec<String>, Vec<String>) {
    let server = vec!["qperf".to_owned(), "-lp".into(), port.to_string()];
    let client = vec![
        "qperf".to_owned(),
        "-lp".into(),
        port.to_string(),
        "-t".into(),
        plan.tcp_seconds.to_string(),
        "-m".into(),
        size.to_string(),
        plan.peer_address.to_string(),
        test.name().to_owned(),
    ];
    (server, client)
}

/// Whether a failed client only lost the race with a server still opening its socket.
fn connect_race(run: &LocalRun) -> bool {
    let text = format!("{}{}", run.stdout, run.stderr).to_ascii_lowercase();
    !run.status_success
        && run.wall < Duration::from_secs(5)
        && (text.contains("couldn't connect")
            || text.contains("unable to open file descriptor for socket")
            || text.contains("failed to connect")
            || text.contains("connection refused"))
}

/// Starts the server, runs the client (retrying only the connect race), finishes the
/// server. Errors are strings for the report: one bad run must not stop the others.
fn run_pair(
    peer: &SshPeer,
    server: &[String],
    client: &[String],
    grace: Duration,
    timeout: Duration,
) -> Result<(LocalRun, ServerRun), String> {
    let words: Vec<&str> = server.iter().map(String::as_str).collect();
    let srv: PeerServer = peer
        .spawn_server(&words, grace, Duration::from_secs(60))
        .map_err(|e| e.to_string())?;
    let mut attempt = 0;
    let run = loop {
        let run = run_measured(&client[0], &client[1..], timeout)
            .map_err(|e| format!("cannot run {}: {e}", client[0]))?;
        attempt += 1;
        if connect_race(&run) && attempt < 20 {
            std::thread::sleep(Duration::from_millis(300));
            continue;
        }
        break run;
    };
    let server_run = srv
        .finish(grace + Duration::from_secs(20))
        .map_err(|e| e.to_string())?;
    if run.timed_out {
        return Err(format!(
            "{} did not finish within {} s",
            client[0],
            timeout.as_secs()
        ));
    }
    if !run.status_success {
        let out = format!("{}\n{}\n{}", run.stdout, run.stderr, server_run.stderr);
        let last: Vec<&str> = out.lines().filter(|l| !l.trim().is_empty()).collect();
        let tail = last[last.len().saturating_sub(4)..].join(" | ");
        return Err(format!(
            "{} failed (exit {:?}): {tail}",
            client[0], run.exit_code
        ));
    }
    Ok((run, server_run))
}

fn pct(cpu: Option<f64>, wall: f64) -> Option<f64> {
    cpu.filter(|_| wall > 0.0).map(|c| c / wall * 100.0)
}

/// How `fill_perftest` starts its error when perftest's cycle-counter calibration failed.
const BROKEN_CLOCK: &str = "perftest's clock failed";

/// Runs one test at one size. A run whose perftest printed inf/nan times or a bandwidth
/// of zero (its clock calibration failed: a property of that process, seen under
/// emulation) is made once more, with its own counter accounting; a second failure is
/// reported.
pub fn run_one(
    root: &SysRoot,
    peer: &SshPeer,
    plan: &PerfPlan,
    test: PerfTest,
    size: u64,
    port: u16,
) -> PerfRun {
    let first = run_once(root, peer, plan, test, size, port);
    if first
        .error
        .as_deref()
        .is_some_and(|e| e.starts_with(BROKEN_CLOCK))
    {
        // A fresh port: the first server's socket may still linger.
        let retry_port = port.checked_add(500).unwrap_or(port);
        return run_once(root, peer, plan, test, size, retry_port);
    }
    first
}

/// One attempt of [`run_one`].
fn run_once(
    root: &SysRoot,
    peer: &SshPeer,
    plan: &PerfPlan,
    test: PerfTest,
    size: u64,
    port: u16,
) -> PerfRun {
    let (server, client) = if test.is_rdma() {
        perftest_args(plan, test, size, port)
    } else {
        qperf_args(plan, test, size, port)
    };
    let grace = if test.is_rdma() {
        Duration::from_secs(3)
    } else {
        Duration::ZERO
    };
    let before = read_port(root, &plan.local);
    let bracket = std::time::Instant::now();
    let source = before.source;
    let pair = run_pair(peer, &server, &client, grace, plan.run_timeout);
    // hw_counters are cached for `lifespan` (10 ms by default): read after it passed.
    std::thread::sleep(Duration::from_millis(30));
    let after = read_port(root, &plan.local);
    let bracket = bracket.elapsed().as_secs_f64();
    let mut out = PerfRun::empty(test, size, source);
    let (client_run, server_run) = match pair {
        Ok(p) => p,
        Err(e) => {
            out.error = Some(e);
            out.flagged = true;
            return out;
        }
    };
    out.seconds = client_run.wall.as_secs_f64();
    out.cpu_local_s = client_run.cpu_seconds;
    out.cpu_peer_s = server_run.cpu_seconds;
    out.cpu_local_pct = pct(out.cpu_local_s, out.seconds);
    out.cpu_peer_pct = pct(out.cpu_peer_s, out.seconds);
    let mtu = if test.is_rdma() {
        fill_perftest(&mut out, &client_run.stdout)
    } else {
        fill_qperf(&mut out, plan, &client_run.stdout)
    };
    let Some((messages, mtu)) = mtu else {
        out.flagged = true;
        return out;
    };
    let per_message = size.div_ceil(u64::from(mtu.max(1))).max(1);
    out.rdma.payload_packets = messages.saturating_mul(per_message);
    out.rdma.payload_bytes = messages.saturating_mul(size);
    account(&mut out.rdma, &before, &after, &plan.background, bracket);
    out.flagged = match (test.is_rdma(), out.rdma.path) {
        (true, PathVerdict::Rdma) | (false, PathVerdict::NotRdma) => false,
        // Unreadable or ambiguous counters leave the run unproven, not wrong: the
        // overall verdict becomes inconclusive instead.
        (_, PathVerdict::Unknown) => false,
        _ => true,
    };
    out
}

/// Fills the numbers from perftest output; returns (messages, path MTU).
fn fill_perftest(out: &mut PerfRun, stdout: &str) -> Option<(u64, u32)> {
    let report = match perftest::parse(stdout) {
        Ok(r) => r,
        Err(e) => {
            let broken_clock = stdout.contains(" inf ") || stdout.contains("nan");
            out.error = Some(if broken_clock {
                format!(
                    "{BROKEN_CLOCK}: it printed inf/nan instead of times (its cycle-counter \
                     calibration failed; seen under emulation and with very slow runs): {e}"
                )
            } else {
                format!("cannot read the perftest output: {e}")
            });
            return None;
        }
    };
    let mtu = report.header.mtu.unwrap_or(1024);
    out.path_mtu = report.header.mtu;
    match report.table {
        PerftestTable::Bandwidth { unit, rows } => {
            let row = rows.iter().find(|r| r.bytes == out.size).or(rows.last())?;
            if row.average <= 0.0 && row.iterations > 0 {
                // Messages were sent but no time passed by perftest's clock: the same
                // failed calibration as inf/nan times (seen under TCG), not a measurement.
                out.error = Some(format!(
                    "{BROKEN_CLOCK}: it printed a bandwidth of 0 for {} messages",
                    row.iterations
                ));
                return None;
            }
            let gbps = |v: f64| v * unit.bytes_per_sec() / GBIT;
            out.bw_gbps = Some(gbps(row.average));
            out.bw_peak_gbps = row.peak.map(gbps);
            out.msg_rate_mpps = row.msg_rate_mpps;
            out.iterations = Some(row.iterations);
            Some((row.iterations, mtu))
        }
        PerftestTable::Latency { rows } => {
            let row = rows.iter().find(|r| r.bytes == out.size).or(rows.last())?;
            out.lat_avg_us = row.t_avg;
            out.lat_typical_us = row.t_typical;
            out.lat_p99_us = row.p99;
            out.lat_p99_9_us = row.p99_9;
            out.lat_max_us = row.t_max;
            out.iterations = Some(row.iterations);
            // A ping-pong: each side sends every message.
            Some((row.iterations.saturating_mul(2), mtu))
        }
    }
}

/// Fills the numbers from qperf output; returns (message equivalents, MTU assumed).
fn fill_qperf(out: &mut PerfRun, plan: &PerfPlan, stdout: &str) -> Option<(u64, u32)> {
    let tests = match qperf::parse(stdout) {
        Ok(t) => t,
        Err(e) => {
            out.error = Some(format!("cannot read the qperf output: {e}"));
            return None;
        }
    };
    let t = tests.iter().find(|t| t.name == out.test.name())?;
    let seconds = f64::from(plan.tcp_seconds);
    let messages = if let Some(bw) = t.bw_bytes_per_sec() {
        out.bw_gbps = Some(bw / GBIT);
        (bw * seconds / out.size.max(1) as f64) as u64
    } else if let Some(lat) = t.latency_secs() {
        out.lat_avg_us = Some(lat * 1e6);
        // qperf's latency is one way: half a round trip of one message each way.
        (seconds / (lat * 2.0)).max(0.0) as u64 * 2
    } else {
        out.error = Some(format!("qperf printed no result for {}", out.test.name()));
        return None;
    };
    // TCP carries this payload; the question is only whether the RDMA port did.
    Some((messages, 1024))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reading(sent: u64, rcvd: u64) -> PortReading {
        use dpu_probe::snapshot::{Sample, Snapshot, Source, Unit};
        let sample = |name: &'static str, v| {
            Sample::cumulative(
                Source::RdmaHw,
                "rdmaDevices/rxe0/ports/1",
                name,
                v,
                Unit::Packets,
            )
        };
        PortReading {
            snapshot: Snapshot {
                taken_at: std::time::SystemTime::UNIX_EPOCH,
                monotonic_start: Duration::ZERO,
                monotonic_end: Duration::ZERO,
                boot_id: Some("b".to_owned()),
                samples: vec![sample("sent_pkts", sent), sample("rcvd_pkts", rcvd)],
                errors: Vec::new(),
                read: dpu_probe::snapshot::ReadReport::default(),
            },
            source: CounterSource::Sysfs,
        }
    }

    fn tcp_run() -> PerfRun {
        let mut run = PerfRun::empty(PerfTest::TcpBw, 65536, CounterSource::Sysfs);
        run.rdma.payload_packets = 32_000;
        run.rdma.payload_bytes = 32_768_000;
        run
    }

    #[test]
    fn a_counter_reset_during_a_run_makes_the_sweep_inconclusive_not_a_tcp_pass() {
        // The TCP negative control on still counters: not RDMA, and the sweep is ok.
        let mut still = tcp_run();
        account(
            &mut still.rdma,
            &reading(1_000, 1_000),
            &reading(1_003, 1_002),
            &Background::default(),
            2.0,
        );
        assert_eq!(still.rdma.path, PathVerdict::NotRdma);
        assert_eq!(still.rdma.packets_delta, Some(5));
        assert_eq!(sweep_verdict(&[still.clone()]), "ok");

        // The same run with the port's counters reset mid-run (driver reload): saturating
        // subtraction read 0 packets, "not RDMA", and passed the control. Now it is unknown.
        let mut reset = tcp_run();
        account(
            &mut reset.rdma,
            &reading(1_000, 1_000),
            &reading(3, 2),
            &Background::default(),
            2.0,
        );
        assert_eq!(reset.rdma.path, PathVerdict::Unknown);
        assert_eq!(reset.rdma.packets_delta, None);
        assert!(reset
            .rdma
            .inconclusive
            .as_deref()
            .is_some_and(|w| w.contains("reset")));
        assert_eq!(sweep_verdict(&[still, reset]), "inconclusive");
    }

    fn rdma_run() -> PerfRun {
        let mut run = PerfRun::empty(PerfTest::WriteBw, 65_536, CounterSource::Sysfs);
        run.rdma.payload_packets = 32_000;
        run.rdma.payload_bytes = 32_768_000;
        run
    }

    /// A background of `per_s` packets a second, measured over 1 s.
    fn background(per_s: u64) -> Background {
        Background::measure(&reading(0, 0), &reading(per_s, 0), Duration::from_secs(1))
    }

    #[test]
    fn a_busy_port_cannot_make_a_run_that_went_elsewhere_read_as_rdma() {
        // The run moved nothing itself; the port's other traffic (16,000 packets a second
        // for the run's 2 s) is the payload's worth. Before: "RDMA". Now: unknown.
        let mut elsewhere = rdma_run();
        account(
            &mut elsewhere.rdma,
            &reading(1_000, 1_000),
            &reading(17_000, 17_000),
            &background(16_000),
            2.0,
        );
        assert_eq!(
            elsewhere.rdma.path,
            PathVerdict::Unknown,
            "{:?}",
            elsewhere.rdma
        );
        assert!(elsewhere
            .rdma
            .inconclusive
            .as_deref()
            .is_some_and(|w| w.contains("other traffic")));
        assert_eq!(elsewhere.rdma.background_packets, Some(32_000));

        // A TCP run on the same busy port is not flagged as "TCP moved the RDMA port".
        let mut tcp = tcp_run();
        account(
            &mut tcp.rdma,
            &reading(0, 0),
            &reading(16_000, 16_000),
            &background(16_000),
            2.0,
        );
        assert_eq!(tcp.rdma.path, PathVerdict::Unknown);

        // A little background (NVMe-oF keep-alives) is subtracted and the run judged.
        let mut real = rdma_run();
        account(
            &mut real.rdma,
            &reading(0, 0),
            &reading(16_500, 16_500),
            &background(50),
            2.0,
        );
        assert_eq!(real.rdma.background_packets, Some(100));
        assert_eq!(real.rdma.path, PathVerdict::Rdma);
        let mut nothing = rdma_run();
        account(
            &mut nothing.rdma,
            &reading(0, 0),
            &reading(100, 0),
            &background(50),
            2.0,
        );
        assert_eq!(nothing.rdma.path, PathVerdict::NotRdma);
    }

    #[test]
    fn a_background_that_cannot_be_measured_leaves_every_path_unknown() {
        let broken = Background::measure(
            &reading(5_000, 5_000),
            &reading(3, 3),
            Duration::from_secs(1),
        );
        assert!(broken.inconclusive.is_some());
        let mut run = rdma_run();
        account(
            &mut run.rdma,
            &reading(0, 0),
            &reading(16_500, 16_500),
            &broken,
            2.0,
        );
        assert_eq!(run.rdma.path, PathVerdict::Unknown);
        assert!(run
            .rdma
            .inconclusive
            .as_deref()
            .is_some_and(|w| w.starts_with("the port's background")));
    }

    #[test]
    fn a_bandwidth_of_zero_for_sent_messages_is_a_failed_clock_and_retried() {
        let zero = "\
 #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]
 4096       100              0.00               0.00               0.000000
---------------------------------------------------------------------------------------
";
        let mut run = PerfRun::empty(PerfTest::SendBw, 4096, CounterSource::RdmaNetlink);
        assert_eq!(fill_perftest(&mut run, zero), None);
        let error = run.error.expect("an error, not a measurement of 0");
        assert!(error.starts_with(BROKEN_CLOCK), "{error}");
        assert_eq!(run.bw_gbps, None);
        // A real measurement still reads.
        let real = zero.replace("0.00               0.00", "0.03               0.03");
        let mut run = PerfRun::empty(PerfTest::SendBw, 4096, CounterSource::RdmaNetlink);
        assert!(fill_perftest(&mut run, &real).is_some(), "{:?}", run.error);
        assert!(run.bw_gbps.is_some_and(|v| v > 0.0));
    }

    #[test]
    fn test_names_parse_long_and_short() {
        assert_eq!(PerfTest::parse("write_bw"), Some(PerfTest::WriteBw));
        assert_eq!(PerfTest::parse("ib_read_lat"), Some(PerfTest::ReadLat));
        assert_eq!(PerfTest::parse("tcp_lat"), Some(PerfTest::TcpLat));
        assert_eq!(PerfTest::parse("rc_bw"), None);
    }

    #[test]
    fn counters_decide_the_path_not_the_tool() {
        // 500 x 64 KiB at MTU 1024: 32,000 packets of payload.
        assert_eq!(
            classify((Some(33_532), None), (32_000, 32_768_000)),
            PathVerdict::Rdma
        );
        assert_eq!(
            classify((Some(12), None), (32_000, 32_768_000)),
            PathVerdict::NotRdma
        );
        assert_eq!(
            classify((Some(16_000), None), (32_000, 32_768_000)),
            PathVerdict::Unknown
        );
        // Bytes win over packets when the port counts them (mlx5 PMA x 4).
        assert_eq!(
            classify((Some(40_000), Some(1_000)), (32_000, 32_768_000)),
            PathVerdict::NotRdma
        );
        assert_eq!(
            classify((None, None), (32_000, 32_768_000)),
            PathVerdict::Unknown
        );
        assert_eq!(classify((Some(5), None), (0, 0)), PathVerdict::Unknown);
    }

    #[test]
    fn both_sides_get_the_gid_index_explicitly() {
        let ep = |dev: &str, gid| Endpoint {
            ibdev: dev.into(),
            port: 1,
            gid_index: gid,
            ipv4: None,
            netdev: None,
        };
        let plan = PerfPlan {
            tests: vec![PerfTest::WriteBw],
            iterations: 500,
            tcp_seconds: 2,
            base_port: 18515,
            run_timeout: Duration::from_secs(60),
            local: ep("mlx5_0", 3),
            peer: ep("rxe0", 1),
            peer_address: "192.0.2.7".parse().expect("ip"),
            background: Background::default(),
        };
        let (server, client) = perftest_args(&plan, PerfTest::WriteBw, 65536, 18520);
        let after =
            |v: &[String], flag: &str| v.iter().position(|a| a == flag).map(|i| v[i + 1].clone());
        assert_eq!(after(&server, "-x").as_deref(), Some("1"));
        assert_eq!(after(&client, "-x").as_deref(), Some("3"));
        assert_eq!(after(&server, "-d").as_deref(), Some("rxe0"));
        assert_eq!(client.last().map(String::as_str), Some("192.0.2.7"));
        assert!(!server.contains(&"192.0.2.7".to_owned()));
        assert!(client.contains(&"--report_gbits".to_owned()));
        let (_, lat) = perftest_args(&plan, PerfTest::WriteLat, 2, 18521);
        assert!(!lat.contains(&"--report_gbits".to_owned()));
    }
}
