//! The accounting engine. A proof is data: expectations over counter deltas on either
//! side (the host, read by dpuctl itself; the DPU, read by the agent), each with a rule,
//! the reason it matters and what a failure means. The engine only evaluates them.
//!
//! Honesty rules, in order: a line the proof needs but could not form from the counters
//! that exist is INCONCLUSIVE unless the user waived it by name; a counter that is
//! missing, reset, saturated, appeared or vanished, or too narrow to hold the window's
//! traffic, makes its line INCONCLUSIVE, never zero; background traffic, measured over an
//! idle window before the workload, is scaled to the workload's duration and subtracted,
//! and a workload that does not rise clearly above it is INCONCLUSIVE, as is a negative
//! control whose background alone is above its own bound (an upper bound stays an upper
//! bound); any failed line makes the proof NOT PROVEN; only a proof whose every line is
//! met (or waived) is PROVEN.

pub mod deltas;
pub mod measure;
pub mod trials;

use std::time::Duration;

use dpu_probe::snapshot::{SnapshotDiff, Source};
use serde::Serialize;

use self::deltas::discontinuity;

/// Which machine a counter is read on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Side {
    /// This host, read by dpuctl itself.
    Host,
    /// The DPU, read by the agent.
    Dpu,
    /// The far end of the path (the storage target), read by an agent of its own: a second
    /// witness, which no counter on the host or the DPU can stand in for.
    FarEnd,
}

impl Side {
    /// The side as reports name it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Host => "host",
            Self::Dpu => "DPU",
            Self::FarEnd => "far end",
        }
    }
}

/// Which counters an expectation sums: one source and counter name over the objects
/// listed (exact names).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Select {
    /// Which machine.
    pub side: Side,
    /// The counter family.
    #[serde(serialize_with = "source_name")]
    pub source: Source,
    /// The objects summed (`netdevs/eth0`, `volumes/r0n1` ...).
    pub objects: Vec<String>,
    /// The counter name.
    pub counter: String,
}

fn source_name<S: serde::Serializer>(source: &Source, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(source.as_str())
}

/// What the summed delta (net of background) must satisfy, in the counters' unit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Rule {
    /// At least this much moved.
    AtLeast(u64),
    /// At most this much moved (a negative control).
    AtMost(u64),
    /// Within these bounds, inclusive.
    Between(u64, u64),
}

impl Rule {
    fn holds(self, value: u64) -> bool {
        match self {
            Self::AtLeast(min) => value >= min,
            Self::AtMost(max) => value <= max,
            Self::Between(min, max) => (min..=max).contains(&value),
        }
    }

    /// The smallest value the workload must add, if the rule asks for growth.
    fn minimum(self) -> Option<u64> {
        match self {
            Self::AtLeast(min) | Self::Between(min, _) => Some(min),
            Self::AtMost(_) => None,
        }
    }

    /// The largest value the rule allows, if it bounds from above.
    fn maximum(self) -> Option<u64> {
        match self {
            Self::AtMost(max) | Self::Between(_, max) => Some(max),
            Self::AtLeast(_) => None,
        }
    }

    /// The rule for a report (`>= 1024`).
    pub fn describe(self) -> String {
        match self {
            Self::AtLeast(min) => format!(">= {min}"),
            Self::AtMost(max) => format!("<= {max}"),
            Self::Between(min, max) => format!("{min}..{max}"),
        }
    }
}

/// One named expectation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Expectation {
    /// What is expected, in words.
    pub name: String,
    /// The counters it sums.
    pub select: Select,
    /// What their net delta must satisfy.
    pub rule: Rule,
    /// Why this counter proves something.
    pub why: String,
    /// What it most likely means when the rule fails.
    pub if_failed: String,
    /// The whole workload's traffic in the counters' unit, had all of it gone this way. A
    /// narrow counter must hold it between the two readings: one that could wrap past it
    /// unseen makes the line INCONCLUSIVE. For a growth line it is about the bound; a
    /// negative control's bound is a small share of it.
    pub traffic: u64,
    /// For a negative control the user may do without: the name it is waived by, and
    /// whether this run waived it. A waiver only ever covers a line that cannot be formed.
    pub waiver: Option<Waiver>,
    /// Why the line could not be formed from the counters that exist here (no readable
    /// counter for what it must watch). Such a line is INCONCLUSIVE unless waived, so a
    /// missing negative control is a visible line, never a silent absence.
    pub unformed: Option<String>,
}

impl Expectation {
    /// Whether this is a negative control: an upper bound on traffic that must not have
    /// gone this way (only [`Rule::AtMost`] bounds from above alone).
    pub fn is_negative_control(&self) -> bool {
        matches!(self.rule, Rule::AtMost(_))
    }
}

/// How a negative control can be waived: by its name (`host-rdma`), only where it cannot
/// be formed, and the report shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Waiver {
    /// The name the user waives it by.
    pub name: &'static str,
    /// Whether this run waived it.
    pub granted: bool,
}

/// The counter changes a proof is judged on.
#[derive(Debug, Clone)]
pub struct Evidence {
    /// The host's counters over the workload.
    pub host: SnapshotDiff,
    /// The DPU's counters over the workload.
    pub dpu: SnapshotDiff,
    /// The host's counters over an idle window, when one was measured.
    pub host_background: Option<SnapshotDiff>,
    /// The DPU's counters over the idle window.
    pub dpu_background: Option<SnapshotDiff>,
    /// The far end's counters over the workload, when a far end was read.
    pub far_end: Option<SnapshotDiff>,
    /// The far end's counters over the idle window.
    pub far_end_background: Option<SnapshotDiff>,
}

/// The result of one line.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "result", content = "reason", rename_all = "snake_case")]
pub enum Outcome {
    /// The rule held.
    Met,
    /// The rule failed; what that most likely means.
    NotMet(String),
    /// The counters cannot say (missing, reset, background too high); why.
    Inconclusive(String),
    /// The line could not be formed and the user waived it by name; why it could not be.
    Waived(String),
}

/// One evaluated expectation, with every number.
#[derive(Debug, Clone, Serialize)]
pub struct Line {
    /// The expectation judged.
    pub expectation: Expectation,
    /// The summed counters before the workload.
    pub before: Option<u64>,
    /// After it.
    pub after: Option<u64>,
    /// Their growth; None when a counter broke.
    pub delta: Option<u64>,
    /// Background over the idle window, scaled to the workload's duration.
    pub background: Option<u64>,
    /// `delta` minus `background`.
    pub net: Option<u64>,
    /// The line's result.
    pub outcome: Outcome,
}

/// The verdict.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum Verdict {
    /// Every line met.
    Proven,
    /// A line failed.
    NotProven,
    /// No line failed, but one could not be judged.
    Inconclusive,
}

impl Verdict {
    /// The verdict as reports print it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Proven => "PROVEN",
            Self::NotProven => "NOT PROVEN",
            Self::Inconclusive => "INCONCLUSIVE",
        }
    }
}

/// Evaluates every expectation and decides the verdict.
pub fn evaluate(expectations: &[Expectation], evidence: &Evidence) -> (Verdict, Vec<Line>) {
    let lines: Vec<Line> = expectations.iter().map(|e| line(e, evidence)).collect();
    (verdict_of(&lines), lines)
}

/// The verdict of judged lines: NOT PROVEN if one failed, else INCONCLUSIVE if one could
/// not be judged, else PROVEN (met and waived lines only).
pub fn verdict_of(lines: &[Line]) -> Verdict {
    if lines
        .iter()
        .any(|l| matches!(l.outcome, Outcome::NotMet(_)))
    {
        Verdict::NotProven
    } else if lines
        .iter()
        .any(|l| matches!(l.outcome, Outcome::Inconclusive(_)))
    {
        Verdict::Inconclusive
    } else {
        Verdict::Proven
    }
}

/// Sum of the selected counters' before, after and delta in `diff`; `Err` says why the
/// delta cannot be trusted (the one rule, [`deltas::discontinuity`], for every change that
/// is not a delta; a counter too narrow for the window's traffic).
fn sum(expectation: &Expectation, diff: &SnapshotDiff) -> Result<(u64, u64, u64), String> {
    let select = &expectation.select;
    let mut found = 0;
    let (mut before, mut after, mut delta) = (0u64, 0u64, 0u64);
    for d in &diff.deltas {
        if d.key.source != select.source
            || d.key.counter != select.counter
            || !select.objects.contains(&d.key.object)
        {
            continue;
        }
        found += 1;
        if let Some(why) = discontinuity(d, diff.rebooted) {
            return Err(why);
        }
        if let Some(capacity) = d.capacity().filter(|c| expectation.traffic > *c) {
            return Err(format!(
                "{} is a {}-bit counter: between two readings it tells at most {capacity} \
                 from a wrap, less than this window's {} (it could wrap unseen)",
                d.key, d.width_bits, expectation.traffic
            ));
        }
        let change = d.change.delta().unwrap_or_default();
        before = before.saturating_add(d.before.unwrap_or(0));
        after = after.saturating_add(d.after.unwrap_or(0));
        delta = delta.saturating_add(change);
    }
    if found < select.objects.len() || found == 0 {
        return Err(format!(
            "counter {} of {} is missing on the {} side",
            select.counter,
            select.objects.join(", "),
            select.side.as_str()
        ));
    }
    if diff.rebooted {
        return Err("the machine rebooted during the proof".to_owned());
    }
    Ok((before, after, delta))
}

fn scaled(background: u64, idle: Duration, workload: Duration) -> u64 {
    if idle.is_zero() {
        return background;
    }
    let ratio = workload.as_secs_f64() / idle.as_secs_f64();
    // Rounded up: background is an allowance against the proof, never in its favour.
    (background as f64 * ratio).ceil() as u64
}

fn line(expectation: &Expectation, evidence: &Evidence) -> Line {
    let (diff, background_diff) = match expectation.select.side {
        Side::Host => (Some(&evidence.host), evidence.host_background.as_ref()),
        Side::Dpu => (Some(&evidence.dpu), evidence.dpu_background.as_ref()),
        Side::FarEnd => (
            evidence.far_end.as_ref(),
            evidence.far_end_background.as_ref(),
        ),
    };
    let mut out = Line {
        expectation: expectation.clone(),
        before: None,
        after: None,
        delta: None,
        background: None,
        net: None,
        outcome: Outcome::Met,
    };
    if let Some(why) = &expectation.unformed {
        out.outcome = match &expectation.waiver {
            Some(waiver) if waiver.granted => {
                Outcome::Waived(format!("waived as `{}`: {why}", waiver.name))
            }
            Some(waiver) => Outcome::Inconclusive(format!(
                "this negative control cannot be formed: {why}; without it the proof \
                 cannot be PROVEN (it can be waived as `{}`)",
                waiver.name
            )),
            None => Outcome::Inconclusive(format!("this line cannot be formed: {why}")),
        };
        return out;
    }
    let Some(diff) = diff else {
        out.outcome = Outcome::Inconclusive("the far end was not read".to_owned());
        return out;
    };
    let (before, after, delta) = match sum(expectation, diff) {
        Ok(values) => values,
        Err(why) => {
            out.outcome = Outcome::Inconclusive(why);
            return out;
        }
    };
    (out.before, out.after, out.delta) = (Some(before), Some(after), Some(delta));
    let background = match background_diff.map(|b| (sum(expectation, b), b.interval)) {
        Some((Ok((_, _, noise)), idle)) => scaled(noise, idle, diff.interval),
        Some((Err(why), _)) => {
            out.outcome = Outcome::Inconclusive(format!("background: {why}"));
            return out;
        }
        None => 0,
    };
    let net = delta.saturating_sub(background);
    (out.background, out.net) = (Some(background), Some(net));
    let rule = expectation.rule;
    out.outcome = if let Some(min) = rule.minimum().filter(|min| background > min / 2) {
        Outcome::Inconclusive(format!(
            "background traffic ({background}) is too large next to the workload ({min}): \
             use a larger workload or a quieter machine"
        ))
    } else if let Some(max) = rule.maximum().filter(|max| background > *max) {
        Outcome::Inconclusive(format!(
            "background traffic ({background}, the idle window's scaled to the workload's \
             duration) is above this negative control's own bound ({max}): the workload's \
             traffic cannot be told from it; run on a quieter machine"
        ))
    } else if rule.holds(net) {
        Outcome::Met
    } else {
        Outcome::NotMet(format!(
            "{net} is not {}: {}",
            rule.describe(),
            expectation.if_failed
        ))
    };
    out
}

#[cfg(test)]
mod tests {
    use std::time::SystemTime;

    use dpu_probe::snapshot::{diff, Sample, Snapshot, Unit};

    use super::*;

    fn snapshot(at_secs: u64, values: &[(&str, &str, u64)], width: u32) -> Snapshot {
        Snapshot {
            taken_at: SystemTime::UNIX_EPOCH,
            monotonic_start: Duration::from_secs(at_secs),
            monotonic_end: Duration::from_secs(at_secs),
            boot_id: Some("boot".to_owned()),
            samples: values
                .iter()
                .map(|(object, counter, value)| {
                    Sample::cumulative(
                        Source::Netdev,
                        object.to_string(),
                        counter.to_string(),
                        *value,
                        Unit::Bytes,
                    )
                    .with_width(width)
                })
                .collect(),
            errors: Vec::new(),
            read: dpu_probe::snapshot::ReadReport::default(),
        }
    }

    fn host_rx(max: u64) -> Expectation {
        Expectation {
            name: "host NIC did not carry the data".to_owned(),
            select: Select {
                side: Side::Host,
                source: Source::Netdev,
                objects: vec!["netdevs/eth0".to_owned()],
                counter: "rx_bytes".to_owned(),
            },
            rule: Rule::AtMost(max),
            why: "the host's own network".to_owned(),
            if_failed: "bytes crossed the host's own NIC".to_owned(),
            traffic: N,
            waiver: None,
            unformed: None,
        }
    }

    fn dpu_read(min: u64) -> Expectation {
        Expectation {
            name: "DPU volume served the read".to_owned(),
            select: Select {
                side: Side::Dpu,
                source: Source::Netdev,
                objects: vec!["netdevs/p0".to_owned()],
                counter: "rx_bytes".to_owned(),
            },
            rule: Rule::AtLeast(min),
            why: "the DPU".to_owned(),
            if_failed: "the read did not go through the DPU".to_owned(),
            traffic: min,
            waiver: None,
            unformed: None,
        }
    }

    fn evidence(host: (u64, u64), dpu: (u64, u64), width: u32) -> Evidence {
        Evidence {
            host: diff(
                &snapshot(10, &[("netdevs/eth0", "rx_bytes", host.0)], width),
                &snapshot(20, &[("netdevs/eth0", "rx_bytes", host.1)], width),
            ),
            dpu: diff(
                &snapshot(10, &[("netdevs/p0", "rx_bytes", dpu.0)], width),
                &snapshot(20, &[("netdevs/p0", "rx_bytes", dpu.1)], width),
            ),
            host_background: None,
            dpu_background: None,
            far_end: None,
            far_end_background: None,
        }
    }

    const N: u64 = 64 << 20;

    #[test]
    fn data_on_the_dpu_and_not_on_the_host_is_proven() {
        let (verdict, lines) = evaluate(
            &[dpu_read(N), host_rx(N / 20)],
            &evidence((1000, 2000), (5, 5 + N + 4096), 64),
        );
        assert_eq!(verdict, Verdict::Proven, "{lines:?}");
        assert_eq!(lines[0].delta, Some(N + 4096));
    }

    #[test]
    fn data_over_the_host_nic_is_not_proven_and_says_why() {
        let (verdict, lines) = evaluate(
            &[dpu_read(N), host_rx(N / 20)],
            &evidence((0, N + 100), (5, 5), 64),
        );
        assert_eq!(verdict, Verdict::NotProven);
        let Outcome::NotMet(why) = &lines[1].outcome else {
            panic!("{lines:?}")
        };
        assert!(why.contains("host's own NIC"), "{why}");
        assert!(matches!(lines[0].outcome, Outcome::NotMet(_)));
    }

    #[test]
    fn a_reset_or_missing_counter_is_inconclusive_never_zero() {
        let (verdict, lines) = evaluate(&[dpu_read(N)], &evidence((0, 0), (5 + N, 5), 64));
        assert_eq!(verdict, Verdict::Inconclusive);
        assert!(matches!(&lines[0].outcome, Outcome::Inconclusive(w) if w.contains("reset")));
        let mut missing = dpu_read(N);
        missing.select.objects = vec!["netdevs/p9".to_owned()];
        let (verdict, lines) = evaluate(&[missing], &evidence((0, 0), (0, N), 64));
        assert_eq!(verdict, Verdict::Inconclusive);
        assert!(matches!(&lines[0].outcome, Outcome::Inconclusive(w) if w.contains("missing")));
    }

    #[test]
    fn a_32_bit_wrap_still_counts_the_bytes() {
        let before = u64::from(u32::MAX) - 1000;
        let after = N - 1001; // wrapped once
        let (verdict, lines) =
            evaluate(&[dpu_read(N - 100)], &evidence((0, 0), (before, after), 32));
        assert_eq!(verdict, Verdict::Proven, "{lines:?}");
        assert_eq!(lines[0].delta, Some(N));
    }

    #[test]
    fn background_is_scaled_subtracted_and_can_make_it_inconclusive() {
        let mut ev = evidence((0, N / 40), (0, N), 64);
        // 1 s idle window with N/40 host bytes; the workload took 10 s: 10x that.
        ev.host_background = Some(diff(
            &snapshot(0, &[("netdevs/eth0", "rx_bytes", 0)], 64),
            &snapshot(1, &[("netdevs/eth0", "rx_bytes", N / 40)], 64),
        ));
        let (_, lines) = evaluate(&[host_rx(N / 20)], &ev);
        assert_eq!(lines[0].background, Some(N / 40 * 10));
        assert_eq!(lines[0].net, Some(0));
        // A busy DPU link: background larger than half the workload.
        ev.dpu_background = Some(diff(
            &snapshot(0, &[("netdevs/p0", "rx_bytes", 0)], 64),
            &snapshot(1, &[("netdevs/p0", "rx_bytes", N / 10)], 64),
        ));
        let (verdict, lines) = evaluate(&[dpu_read(N)], &ev);
        assert_eq!(verdict, Verdict::Inconclusive);
        assert!(matches!(&lines[0].outcome, Outcome::Inconclusive(w) if w.contains("background")));
    }

    fn idle(host: u64, dpu: u64) -> (SnapshotDiff, SnapshotDiff) {
        (
            diff(
                &snapshot(0, &[("netdevs/eth0", "rx_bytes", 0)], 64),
                &snapshot(1, &[("netdevs/eth0", "rx_bytes", host)], 64),
            ),
            diff(
                &snapshot(0, &[("netdevs/p0", "rx_bytes", 0)], 64),
                &snapshot(1, &[("netdevs/p0", "rx_bytes", dpu)], 64),
            ),
        )
    }

    #[test]
    fn a_burst_in_the_idle_window_cannot_mask_a_negative_control() {
        // Issue 31 §2: a burst while the background is measured, then 69 MB on the host
        // NIC during the read. Subtracting a background larger than the bound made the
        // line "met" and the proof PROVEN.
        let mut ev = evidence((0, 69_000_000), (0, N), 64);
        let (host_idle, dpu_idle) = idle(10_000_000, 0);
        (ev.host_background, ev.dpu_background) = (Some(host_idle), Some(dpu_idle));
        let (verdict, lines) = evaluate(&[dpu_read(N), host_rx(N / 20)], &ev);
        assert_eq!(verdict, Verdict::Inconclusive, "{lines:#?}");
        assert_eq!(lines[0].outcome, Outcome::Met);
        let Outcome::Inconclusive(why) = &lines[1].outcome else {
            panic!("{lines:#?}")
        };
        assert!(
            why.contains("above this negative control's own bound"),
            "{why}"
        );
        // The control: background under the bound is still subtracted, and the line judged.
        let mut ev = evidence((0, 1_000_000), (0, N), 64);
        let (host_idle, dpu_idle) = idle(50_000, 0);
        (ev.host_background, ev.dpu_background) = (Some(host_idle), Some(dpu_idle));
        let (verdict, lines) = evaluate(&[dpu_read(N), host_rx(N / 20)], &ev);
        assert_eq!(verdict, Verdict::Proven, "{lines:#?}");
        assert_eq!(lines[1].background, Some(500_000));
    }

    #[test]
    fn a_saturated_32_bit_counter_is_inconclusive_not_still() {
        // Issue 31 §7: a legacy PMA counter stuck at 2^32 - 1 "moved 0", which a negative
        // control read as met.
        let stuck = u64::from(u32::MAX);
        let ev = evidence((stuck, stuck), (0, N), 0);
        let (verdict, lines) = evaluate(&[host_rx(N / 20)], &ev);
        assert_eq!(verdict, Verdict::Inconclusive);
        assert!(
            matches!(&lines[0].outcome, Outcome::Inconclusive(w) if w.contains("maximum")),
            "{lines:#?}"
        );
    }

    #[test]
    fn a_counter_too_narrow_for_the_window_is_inconclusive() {
        // A 32-bit byte counter wraps every 4 GiB: with 8 GiB of traffic guarded against,
        // a wrap could hide the whole read.
        let mut control = host_rx(N / 20);
        control.traffic = 8 << 30;
        let (verdict, lines) = evaluate(&[control], &evidence((0, 10), (0, 0), 32));
        assert_eq!(verdict, Verdict::Inconclusive);
        assert!(
            matches!(&lines[0].outcome, Outcome::Inconclusive(w) if w.contains("32-bit")),
            "{lines:#?}"
        );
        // The same counter for a 64 MiB window is trusted.
        let (verdict, _) = evaluate(&[host_rx(N / 20)], &evidence((0, 10), (0, 0), 32));
        assert_eq!(verdict, Verdict::Proven);
    }

    #[test]
    fn a_negative_control_that_cannot_be_formed_blocks_proven_unless_waived() {
        let mut control = host_rx(N / 20);
        control.select.objects.clear();
        control.unformed = Some("the host's RDMA port mlx5_0/1 has no readable counter".into());
        control.waiver = Some(Waiver {
            name: "host-rdma",
            granted: false,
        });
        let ev = evidence((0, 0), (0, N), 64);
        let (verdict, lines) = evaluate(&[dpu_read(N), control.clone()], &ev);
        assert_eq!(verdict, Verdict::Inconclusive, "{lines:#?}");
        let Outcome::Inconclusive(why) = &lines[1].outcome else {
            panic!("{lines:#?}")
        };
        assert!(
            why.contains("cannot be formed") && why.contains("host-rdma"),
            "{why}"
        );
        // Waived by name: shown as waived, and no longer in the way.
        control.waiver = Some(Waiver {
            name: "host-rdma",
            granted: true,
        });
        let (verdict, lines) = evaluate(&[dpu_read(N), control], &ev);
        assert_eq!(verdict, Verdict::Proven, "{lines:#?}");
        assert!(
            matches!(&lines[1].outcome, Outcome::Waived(w) if w.contains("host-rdma")),
            "{lines:#?}"
        );
    }
}
