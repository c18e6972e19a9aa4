//! How `dpuctl prove qos` judges its windows: the expectations of each window (the
//! volume's and the host disk's read bytes within the limit's bounds, the host's NICs
//! quiet; in the lifted window, the volume read well past the limit), evaluated by the
//! accounting engine, then read together: a rate under the limit only proves the limit
//! when the same workload, unlimited, was shown to exceed it.

use serde::Serialize;

use dpu_probe::snapshot::Source;
use dpu_proto::v1;

use crate::accounting::{
    evaluate, verdict_of, Evidence, Expectation, Line, Outcome, Rule, Select, Side, Verdict,
};

/// How far past the limit the lifted window must read for a held limit to be told from a
/// device that is merely as slow as the limit: twice the limit.
pub const HEADROOM: f64 = 2.0;

/// SPDK's MiB (its `*_mbytes_per_sec` limits).
const MIB: u64 = 1 << 20;

/// The read limit a proof judges: the tightest of the volume's limits that apply to reads.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ReadLimit {
    /// Bytes per second.
    pub bytes_per_sec: u64,
    /// Which of SPDK's limits it is, in words (`r_mbytes_per_sec 8 (8 MiB/s)`).
    pub from: String,
}

/// The tightest read limit among `r_mbytes_per_sec`, `rw_mbytes_per_sec` and
/// `rw_ios_per_sec` (as bytes: every read of the proof is `bs` bytes, so an I/O limit is
/// a byte limit of `bs` times it); `None` when none of them is set.
pub fn read_limit(limits: &v1::QosLimits, bs: u64) -> Option<ReadLimit> {
    let candidates = [
        (
            limits.r_mbytes_per_sec.saturating_mul(MIB),
            format!("r_mbytes_per_sec {}", limits.r_mbytes_per_sec),
        ),
        (
            limits.rw_mbytes_per_sec.saturating_mul(MIB),
            format!(
                "rw_mbytes_per_sec {} (SPDK counts reads and writes together; the proof \
                 only reads)",
                limits.rw_mbytes_per_sec
            ),
        ),
        (
            limits.rw_ios_per_sec.saturating_mul(bs),
            format!(
                "rw_ios_per_sec {} (x {bs}-byte reads)",
                limits.rw_ios_per_sec
            ),
        ),
    ];
    candidates
        .into_iter()
        .filter(|(bytes, _)| *bytes != 0)
        .min_by_key(|(bytes, _)| *bytes)
        .map(|(bytes_per_sec, from)| ReadLimit {
            bytes_per_sec,
            from,
        })
}

/// Which window of the proof.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum WindowKind {
    /// The limit in force.
    Limited,
    /// The limit lifted through the agent: can the workload exceed it?
    Lifted,
    /// The limit set back, measured again.
    Restored,
}

impl WindowKind {
    /// The window's name in lines and tables.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Limited => "limited",
            Self::Lifted => "lifted",
            Self::Restored => "restored",
        }
    }
}

/// What the proof's own read did in a window.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct ReadDone {
    /// Bytes read.
    pub bytes: u64,
    /// Reads completed.
    pub ios: u64,
    /// First submission to last completion, seconds.
    pub seconds: f64,
}

/// One measured window: the counters' changes over it and the read.
#[derive(Debug, Clone)]
pub struct Window {
    /// Which window.
    pub kind: WindowKind,
    /// The counters over it, with the idle window's as background.
    pub evidence: Evidence,
    /// The proof's read in it.
    pub read: ReadDone,
}

/// The counters a proof reads: the volume on the DPU, the disk and the NICs on the host.
#[derive(Debug, Clone)]
pub struct Watched {
    /// `volumes/r0n1`.
    pub volume: String,
    /// The host disk's object (`blockDevices/nvme1n1`).
    pub disk: String,
    /// The host's network interfaces (`netdevs/eth0`, not `lo`).
    pub host_nics: Vec<String>,
}

/// The judged proof.
#[derive(Debug)]
pub struct QosJudged {
    /// The verdict over every line.
    pub verdict: Verdict,
    /// Every line, named by its window.
    pub lines: Vec<Line>,
    /// Facts about the judging.
    pub notes: Vec<String>,
    /// Each window's bounds on the volume's bytes and its own verdict.
    pub windows: Vec<WindowJudged>,
}

/// One window as judged.
#[derive(Debug, Clone, Serialize)]
pub struct WindowJudged {
    /// Which window.
    pub window: WindowKind,
    /// The proof's read in it.
    pub read: ReadDone,
    /// The bounds on the volume's bytes (a limited window), or the least it had to read
    /// (the lifted one, as `(min, u64::MAX)`).
    pub bounds: (u64, u64),
    /// The verdict of its own lines.
    pub verdict: Verdict,
}

#[allow(
    clippy::cast_possible_truncation,
    clippy::cast_sign_loss,
    clippy::cast_precision_loss
)]
fn bytes(rate: u64, seconds: f64, factor: f64) -> u64 {
    (rate as f64 * seconds * factor).max(0.0) as u64
}

fn line_of(
    name: String,
    select: Select,
    rule: Rule,
    why: &str,
    if_failed: &str,
    traffic: u64,
) -> Expectation {
    Expectation {
        name,
        select,
        rule,
        why: why.to_owned(),
        if_failed: if_failed.to_owned(),
        traffic,
        waiver: None,
        unformed: None,
    }
}

fn volume_bytes(watched: &Watched) -> Select {
    Select {
        side: Side::Dpu,
        source: Source::Volume,
        objects: vec![watched.volume.clone()],
        counter: "bytes_read".to_owned(),
    }
}

/// A limited (or restored) window's lines: the volume and the disk each read between the
/// limit over the read's own time less the tolerance, and the limit over the counters'
/// own interval (from their snapshots' timestamps, which hold the whole read) plus it;
/// the host's NICs carried none of it.
fn limited_lines(
    watched: &Watched,
    limit: &ReadLimit,
    tolerance: f64,
    window: &Window,
) -> (Vec<Expectation>, (u64, u64)) {
    let kind = window.kind.as_str();
    let rate = limit.bytes_per_sec;
    let low = bytes(rate, window.read.seconds, 1.0 - tolerance);
    let high = |interval: std::time::Duration| bytes(rate, interval.as_secs_f64(), 1.0 + tolerance);
    let (dpu_high, host_high) = (
        high(window.evidence.dpu.interval),
        high(window.evidence.host.interval),
    );
    let mut lines = vec![
        line_of(
            format!("{kind}: DPU {} read within the limit", watched.volume),
            volume_bytes(watched),
            Rule::Between(low, dpu_high),
            "the DPU's storage backend counts what it served; held to the limit, it can \
             serve no more than the limit allows over the window",
            "the volume was not read at the limit: above it, the limit was not enforced; \
             below it, something else throttles the read or the limit is tighter than \
             the agent reports",
            dpu_high,
        ),
        line_of(
            format!("{kind}: host {} read within the limit", watched.disk),
            Select {
                side: Side::Host,
                source: Source::Block,
                objects: vec![watched.disk.clone()],
                counter: "read_bytes".to_owned(),
            },
            Rule::Between(low, host_high),
            "the host's kernel counts what the disk delivered: the rate the host saw",
            "the host's disk was not read at the limit: above it, the limit was not \
             enforced on this path; below it, something else throttles the read",
            host_high,
        ),
    ];
    if !watched.host_nics.is_empty() {
        lines.push(line_of(
            format!("{kind}: host NICs did not carry the data"),
            Select {
                side: Side::Host,
                source: Source::Netdev,
                objects: watched.host_nics.clone(),
                counter: "rx_bytes".to_owned(),
            },
            Rule::AtMost(host_high / 20),
            "bytes arriving on the host's own interfaces bypassed the DPU, and its limit",
            "bytes crossed the host's own NIC: the read did not go through the emulated \
             controller",
            host_high,
        ));
    }
    (lines, (low, dpu_high))
}

/// The lifted window's line: unlimited, the volume read at least [`HEADROOM`] times the
/// limit over the read's time.
fn lifted_line(watched: &Watched, limit: &ReadLimit, read_seconds: f64) -> Expectation {
    let min = bytes(limit.bytes_per_sec, read_seconds, HEADROOM);
    line_of(
        "lifted: the device could exceed the limit".to_owned(),
        volume_bytes(watched),
        Rule::AtLeast(min),
        "with the limit lifted the same read must go well past it, or a held limit \
         cannot be told from a device that is as slow as the limit anyway",
        "the device is not fast enough to show the limit",
        min,
    )
}

/// Judges the windows: each window's lines through the engine, then read together.
/// Without a lifted window (`--no-lift`) or when it did not read past the limit, the
/// device was not shown to be faster than the limit: a rate within the bounds or under
/// them is then INCONCLUSIVE, never PROVEN; a rate above them is NOT PROVEN in every case
/// (no slow device explains it).
pub fn judge(
    watched: &Watched,
    limit: &ReadLimit,
    tolerance: f64,
    windows: &[Window],
) -> QosJudged {
    let mut lines = Vec::new();
    let mut judged = Vec::new();
    let mut notes = Vec::new();
    let mut headroom: Option<bool> = None;
    let mut limited_ranges: Vec<(usize, usize, u64)> = Vec::new();
    let mut ranges: Vec<(usize, usize)> = Vec::new();
    for window in windows {
        let (expectations, bounds) = match window.kind {
            WindowKind::Lifted => {
                let line = lifted_line(watched, limit, window.read.seconds);
                let min = line.rule_minimum();
                (vec![line], (min, u64::MAX))
            }
            WindowKind::Limited | WindowKind::Restored => {
                limited_lines(watched, limit, tolerance, window)
            }
        };
        let (_, mut window_lines) = evaluate(&expectations, &window.evidence);
        if window.kind == WindowKind::Lifted {
            let line = &mut window_lines[0];
            headroom = Some(matches!(line.outcome, Outcome::Met));
            if let Outcome::NotMet(_) = line.outcome {
                let delivered = line.net.unwrap_or(0);
                line.outcome = Outcome::Inconclusive(format!(
                    "the device delivered {delivered} bytes in {:.2} s unlimited ({}), \
                     less than {HEADROOM}x the limit: a held limit cannot be told from a \
                     slow device",
                    window.read.seconds,
                    rate_text(delivered, window.read.seconds),
                ));
            }
        } else {
            limited_ranges.push((lines.len(), lines.len() + window_lines.len(), bounds.0));
        }
        ranges.push((lines.len(), lines.len() + window_lines.len()));
        judged.push(WindowJudged {
            window: window.kind,
            read: window.read,
            bounds,
            verdict: Verdict::Inconclusive,
        });
        lines.extend(window_lines);
    }
    if let (None, Some(first)) = (headroom, windows.first()) {
        let mut line = lifted_line(watched, limit, 0.0);
        line.unformed = Some(
            "the limit was not lifted, as asked, so the device was not shown to be faster \
             than the limit, and a held limit cannot be told from a device as slow as it"
                .to_owned(),
        );
        // A line that cannot be formed is judged without reading the evidence.
        let (_, unformed) = evaluate(&[line], &first.evidence);
        lines.extend(unformed);
    }
    if headroom != Some(true) {
        // Under the bounds with no headroom shown: a slow device, not a failed limit.
        for (from, to, low) in limited_ranges {
            for line in &mut lines[from..to] {
                let under = line.net.is_some_and(|net| net < low);
                if under && matches!(line.outcome, Outcome::NotMet(_)) {
                    line.outcome = Outcome::Inconclusive(format!(
                        "{} is under the limit's lower bound {low}, and the device was not \
                         shown to be faster than the limit: a slow device, not a verdict \
                         on the limit",
                        line.net.unwrap_or(0)
                    ));
                }
            }
        }
    }
    for (window, (from, to)) in judged.iter_mut().zip(ranges) {
        window.verdict = verdict_of(&lines[from..to]);
    }
    notes.push(format!(
        "limit judged: {} bytes/s ({}), tolerance {:.0}%: each limited window's bytes \
         within limit x read time x (1 - tolerance) .. limit x counter interval x (1 + \
         tolerance)",
        limit.bytes_per_sec,
        limit.from,
        tolerance * 100.0
    ));
    QosJudged {
        verdict: verdict_of(&lines),
        lines,
        notes,
        windows: judged,
    }
}

/// A rate in words: `8.0 MiB/s`.
#[allow(clippy::cast_precision_loss)]
pub fn rate_text(bytes: u64, seconds: f64) -> String {
    if seconds <= 0.0 {
        return "no time".to_owned();
    }
    format!("{:.1} MiB/s", bytes as f64 / seconds / MIB as f64)
}

trait RuleMinimum {
    fn rule_minimum(&self) -> u64;
}

impl RuleMinimum for Expectation {
    fn rule_minimum(&self) -> u64 {
        match self.rule {
            Rule::AtLeast(min) | Rule::Between(min, _) => min,
            Rule::AtMost(_) => 0,
        }
    }
}

#[cfg(test)]
mod tests;
