//! Counter movements between two readings, by the proof rules, for every report that is not
//! a proof (`roce perf`, `roce dcb`, `roce nccl-check`, the demo's accounting).
//!
//! One rule everywhere: the delta comes from [`dpu_probe::snapshot::diff`], and a counter
//! that reset, vanished, appeared, turned out to be a gauge, or whose machine rebooted in
//! between makes the movement [`Movement::Inconclusive`], never zero. (Saturating
//! subtraction, what these reports used before, reads a reset as "nothing moved", so a TCP
//! negative control could pass on a counter that was in fact unreadable.)

use std::collections::BTreeMap;

use dpu_probe::snapshot::{Change, CounterDelta, SnapshotDiff};

/// How one counter, or a sum of counters, moved between two readings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Movement {
    /// Every counter in it was read both times and grew by this much (wraps counted).
    Moved(u64),
    /// The readings have no such counter at all: nothing to say either way.
    Absent,
    /// The amount is unknown: the reason names the counter and what happened to it.
    Inconclusive(String),
}

impl Movement {
    /// The amount, when it is known.
    pub fn amount(&self) -> Option<u64> {
        match self {
            Self::Moved(n) => Some(*n),
            Self::Absent | Self::Inconclusive(_) => None,
        }
    }

    /// Why the amount is unknown, when a counter broke (not when it is simply absent).
    pub fn inconclusive(&self) -> Option<&str> {
        match self {
            Self::Inconclusive(why) => Some(why),
            Self::Moved(_) | Self::Absent => None,
        }
    }

    /// The sum of two movements that must both be known (sent + received): a broken part
    /// makes the sum inconclusive, a missing part makes it absent.
    pub fn plus(self, other: Self) -> Self {
        match (self, other) {
            (Self::Inconclusive(a), _) => Self::Inconclusive(a),
            (_, Self::Inconclusive(b)) => Self::Inconclusive(b),
            (Self::Moved(a), Self::Moved(b)) => Self::Moved(a.saturating_add(b)),
            _ => Self::Absent,
        }
    }
}

/// Why one counter's change is not a delta, in words for a report; None when it is one.
pub fn discontinuity(d: &CounterDelta, rebooted: bool) -> Option<String> {
    let what = format!("{} of {}", d.key.counter, d.key.object);
    match d.change {
        Change::Delta(_) | Change::Wrapped(_) => None,
        Change::Reset if rebooted => {
            Some(format!("{what}: the machine rebooted between the readings"))
        }
        Change::Reset => Some(format!(
            "{what} went down from {} to {} (a reset: driver reload, link recreated)",
            d.before.unwrap_or_default(),
            d.after.unwrap_or_default()
        )),
        Change::Vanished => Some(format!("{what} could not be read after the run")),
        Change::Appeared => Some(format!("{what} could not be read before the run")),
        Change::Level => Some(format!("{what} is a level, not a counter")),
        Change::Saturated => Some(format!(
            "{what} reads {}, the 32-bit maximum: a saturating counter stops there, so its \
             growth is unknown (clear it, or read a 64-bit one)",
            d.after.unwrap_or_default()
        )),
    }
}

/// The movement of the first counter name in `names` that the readings have (the same
/// quantity is named differently by different drivers), summed over every object that has
/// it.
pub fn first_counter(diff: &SnapshotDiff, names: &[&str]) -> Movement {
    let Some(name) = names
        .iter()
        .find(|n| diff.deltas.iter().any(|d| d.key.counter == **n))
    else {
        return Movement::Absent;
    };
    sum(diff, |d| d.key.counter == *name)
}

/// The movement of every counter `keep` selects, summed; absent when it selects none.
pub fn sum(diff: &SnapshotDiff, keep: impl Fn(&CounterDelta) -> bool) -> Movement {
    let mut total: Option<u64> = None;
    for d in diff.deltas.iter().filter(|d| keep(d)) {
        if let Some(why) = discontinuity(d, diff.rebooted) {
            return Movement::Inconclusive(why);
        }
        let delta = d.change.delta().unwrap_or_default();
        total = Some(total.unwrap_or_default().saturating_add(delta));
    }
    total.map_or(Movement::Absent, Movement::Moved)
}

/// Per-name deltas of a reading whose counters are told apart by name alone (one
/// interface's driver statistics): the counters with a trustworthy delta, and the ones that
/// broke, each with its reason.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NamedDeltas {
    /// Counter name → growth, for every counter read both times.
    pub moved: BTreeMap<String, u64>,
    /// Counter name → why its growth is unknown.
    pub broken: BTreeMap<String, String>,
}

/// Splits a diff into [`NamedDeltas`].
pub fn named(diff: &SnapshotDiff) -> NamedDeltas {
    let mut out = NamedDeltas::default();
    for d in &diff.deltas {
        let name = d.key.counter.to_string();
        match discontinuity(d, diff.rebooted) {
            None => {
                out.moved.insert(name, d.change.delta().unwrap_or_default());
            }
            Some(why) => {
                out.broken.insert(name, why);
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, SystemTime};

    use dpu_probe::snapshot::{diff, Sample, Snapshot, Source, Unit};

    use super::*;

    fn reading(values: &[(&'static str, u64)]) -> Snapshot {
        Snapshot {
            taken_at: SystemTime::UNIX_EPOCH,
            monotonic_start: Duration::ZERO,
            monotonic_end: Duration::ZERO,
            boot_id: Some("boot-1".to_owned()),
            samples: values
                .iter()
                .map(|(name, v)| {
                    Sample::cumulative(
                        Source::RdmaHw,
                        "rdmaDevices/rxe0/ports/1",
                        *name,
                        *v,
                        Unit::Packets,
                    )
                })
                .collect(),
            errors: Vec::new(),
            read: dpu_probe::snapshot::ReadReport::default(),
        }
    }

    #[test]
    fn growth_is_counted_and_a_reset_is_never_zero() {
        let before = reading(&[("sent_pkts", 100), ("rcvd_pkts", 50)]);
        let grew = reading(&[("sent_pkts", 1100), ("rcvd_pkts", 60)]);
        let d = diff(&before, &grew);
        let total = first_counter(&d, &["port_xmit_packets", "sent_pkts"])
            .plus(first_counter(&d, &["port_rcv_packets", "rcvd_pkts"]));
        assert_eq!(total, Movement::Moved(1010));

        // What saturating subtraction read as 0: the counter went back to a small value.
        let reset = reading(&[("sent_pkts", 7), ("rcvd_pkts", 60)]);
        let moved = first_counter(&diff(&before, &reset), &["sent_pkts"]);
        let why = moved.inconclusive().expect("a reset is inconclusive");
        assert!(why.contains("sent_pkts") && why.contains("reset"), "{why}");
        assert_eq!(moved.amount(), None);
        // And it spoils any sum it is part of.
        assert!(moved.plus(Movement::Moved(5)).inconclusive().is_some());
    }

    #[test]
    fn a_counter_that_vanishes_appears_or_sees_a_reboot_is_inconclusive() {
        let before = reading(&[("sent_pkts", 100)]);
        let gone = reading(&[]);
        assert!(first_counter(&diff(&before, &gone), &["sent_pkts"])
            .inconclusive()
            .is_some_and(|w| w.contains("after")));
        assert!(first_counter(&diff(&gone, &before), &["sent_pkts"])
            .inconclusive()
            .is_some_and(|w| w.contains("before")));
        let mut rebooted = reading(&[("sent_pkts", 200)]);
        rebooted.boot_id = Some("boot-2".to_owned());
        assert!(first_counter(&diff(&before, &rebooted), &["sent_pkts"])
            .inconclusive()
            .is_some_and(|w| w.contains("rebooted")));
        // Not there at all is not a failure of the counter.
        assert_eq!(
            first_counter(&diff(&gone, &gone), &["sent_pkts"]),
            Movement::Absent
        );
        assert_eq!(Movement::Absent.plus(Movement::Moved(3)), Movement::Absent);
    }

    #[test]
    fn named_deltas_keep_the_broken_counters_apart() {
        let before = reading(&[("rx_prio3_pause", 10), ("np_cnp_sent", 90)]);
        let after = reading(&[("rx_prio3_pause", 25), ("np_cnp_sent", 4)]);
        let n = named(&diff(&before, &after));
        assert_eq!(n.moved.get("rx_prio3_pause"), Some(&15));
        assert!(!n.moved.contains_key("np_cnp_sent"));
        assert!(n
            .broken
            .get("np_cnp_sent")
            .is_some_and(|w| w.contains("reset")));
    }
}
