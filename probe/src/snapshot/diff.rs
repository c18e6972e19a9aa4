use std::collections::HashMap;
use std::time::Duration;

use super::model::{CounterKey, Kind, Sample, Snapshot, Unit};

/// What happened to one counter between two snapshots.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Change {
    /// Grew (or stayed) by this much, in the counter's unit.
    Delta(u64),
    /// Went past its maximum and started again from zero once; the delta is computed
    /// modulo `2^width * scale`.
    Wrapped(u64),
    /// Went down with no plausible wrap (driver reload, `ip link` recreate, reboot): the
    /// delta is unknown. Proofs must treat this as inconclusive, never as zero.
    Reset,
    /// A gauge: no delta is meaningful, compare `before` and `after`.
    Level,
    /// Present only in the second snapshot.
    Appeared,
    /// Present only in the first snapshot.
    Vanished,
    /// Read at the largest value a 32-bit counter holds (`2^32 - 1` raw): IB PMA
    /// `PortCounters` saturate there and stop counting (IBA §16.1.3.5), so the growth is
    /// unknown however the two readings compare. Proofs treat it as inconclusive.
    Saturated,
}

impl Change {
    /// The trustworthy delta, if there is one.
    pub fn delta(self) -> Option<u64> {
        match self {
            Self::Delta(d) | Self::Wrapped(d) => Some(d),
            Self::Reset | Self::Level | Self::Appeared | Self::Vanished | Self::Saturated => None,
        }
    }
}

/// One counter's before, after and change.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CounterDelta {
    /// Which counter.
    pub key: CounterKey,
    /// What the value counts.
    pub unit: Unit,
    /// Value in the first snapshot.
    pub before: Option<u64>,
    /// Value in the second snapshot.
    pub after: Option<u64>,
    /// The verdict.
    pub change: Change,
    /// Width of the raw counter in bits (0 unknown), from the latest reading: with `scale`,
    /// how much it can count before it wraps or saturates.
    pub width_bits: u32,
    /// Multiplier from the raw counter to the unit (4 for PMA data words).
    pub scale: u32,
}

impl CounterDelta {
    /// The most this counter can move between two readings and still be told apart from
    /// a wrap or a reset (half its range, the diff's rule), in its unit; None when the
    /// width is 64 bits or unknown.
    pub fn capacity(&self) -> Option<u64> {
        if self.width_bits == 0 || self.width_bits >= 64 {
            return None;
        }
        let range = (1u128 << self.width_bits) * u128::from(self.scale.max(1));
        u64::try_from(range / 2).ok()
    }
}

/// The difference between two snapshots.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SnapshotDiff {
    /// Monotonic time from the start of the first snapshot to the start of the second.
    pub interval: Duration,
    /// Whether the boot id differs (or either is unknown while the other is known): every
    /// cumulative counter is then reported as [`Change::Reset`].
    pub rebooted: bool,
    /// One entry per counter in either snapshot: first-snapshot order, then the new ones.
    pub deltas: Vec<CounterDelta>,
}

impl SnapshotDiff {
    /// The entry for a key.
    pub fn get(&self, key: &CounterKey) -> Option<&CounterDelta> {
        self.deltas.iter().find(|d| &d.key == key)
    }

    /// Whether any counter reset, wrapped, appeared or vanished: the cases a proof must
    /// look at before trusting the deltas.
    pub fn has_discontinuities(&self) -> bool {
        self.deltas.iter().any(|d| {
            matches!(
                d.change,
                Change::Reset | Change::Wrapped(_) | Change::Appeared | Change::Vanished
            )
        })
    }
}

/// Compares two snapshots of the same machine taken in order.
pub fn diff(before: &Snapshot, after: &Snapshot) -> SnapshotDiff {
    let rebooted = before.boot_id != after.boot_id;
    let after_by_key: HashMap<&CounterKey, &Sample> =
        after.samples.iter().map(|s| (&s.key, s)).collect();
    let mut seen = std::collections::HashSet::with_capacity(before.samples.len());
    let mut deltas = Vec::with_capacity(after.samples.len().max(before.samples.len()));
    for b in &before.samples {
        seen.insert(&b.key);
        let entry = match after_by_key.get(&b.key) {
            Some(a) => CounterDelta {
                key: b.key.clone(),
                unit: a.unit,
                before: Some(b.value),
                after: Some(a.value),
                change: if rebooted && a.kind == Kind::Cumulative {
                    Change::Reset
                } else {
                    change(b, a)
                },
                width_bits: a.width_bits,
                scale: a.scale,
            },
            None => CounterDelta {
                key: b.key.clone(),
                unit: b.unit,
                before: Some(b.value),
                after: None,
                change: Change::Vanished,
                width_bits: b.width_bits,
                scale: b.scale,
            },
        };
        deltas.push(entry);
    }
    for a in &after.samples {
        if !seen.contains(&a.key) {
            deltas.push(CounterDelta {
                key: a.key.clone(),
                unit: a.unit,
                before: None,
                after: Some(a.value),
                change: Change::Appeared,
                width_bits: a.width_bits,
                scale: a.scale,
            });
        }
    }
    SnapshotDiff {
        interval: after.monotonic_start.saturating_sub(before.monotonic_start),
        rebooted,
        deltas,
    }
}

/// Whether `sample` reads `2^32 - 1` raw, where a saturating 32-bit counter stops. Counters
/// of unknown width count too: the legacy PMA table, whose counters saturate, cannot be
/// told from the 64-bit one by its files (`rdma::counters`), and a 64-bit counter sitting
/// on exactly that value is one reading in four billion.
fn at_32_bit_maximum(sample: &Sample) -> bool {
    matches!(sample.width_bits, 0 | 32)
        && sample.value == u64::from(u32::MAX) * u64::from(sample.scale.max(1))
}

/// One counter present in both snapshots.
fn change(before: &Sample, after: &Sample) -> Change {
    if before.kind == Kind::Gauge || after.kind == Kind::Gauge {
        return Change::Level;
    }
    if at_32_bit_maximum(after) {
        return Change::Saturated;
    }
    if after.value >= before.value {
        return Change::Delta(after.value - before.value);
    }
    // It went down. Only a counter narrower than 64 bits, read with the same scale both
    // times, can have wrapped; a 64-bit counter would need 2^64 events, so it reset.
    if before.width_bits == 0
        || before.width_bits >= 64
        || before.width_bits != after.width_bits
        || before.scale != after.scale
    {
        return Change::Reset;
    }
    let modulus = (1u128 << before.width_bits) * u128::from(before.scale.max(1));
    let wrapped = modulus - u128::from(before.value) + u128::from(after.value);
    // A single wrap moves less than the whole range. Anything claiming to have moved more
    // than half of it in one interval is far likelier a reset that landed high: say so
    // rather than invent a huge delta.
    if wrapped < modulus / 2 {
        u64::try_from(wrapped).map_or(Change::Reset, Change::Wrapped)
    } else {
        Change::Reset
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::snapshot::{Source, SourceError};
    use std::time::SystemTime;

    fn snap(boot: &str, start_ms: u64, samples: Vec<Sample>) -> Snapshot {
        Snapshot {
            taken_at: SystemTime::UNIX_EPOCH,
            monotonic_start: Duration::from_millis(start_ms),
            monotonic_end: Duration::from_millis(start_ms + 1),
            boot_id: Some(boot.to_owned()),
            samples,
            errors: Vec::<SourceError>::new(),
            read: crate::snapshot::ReadReport::default(),
        }
    }

    fn words(value: u64) -> Sample {
        Sample::cumulative(
            Source::Rdma,
            "rdmaDevices/mlx5_0/ports/1",
            "port_xmit_data",
            value,
            Unit::Bytes,
        )
        .with_width(32)
        .scaled(4)
    }

    fn bytes(counter: &'static str, value: u64) -> Sample {
        Sample::cumulative(Source::Netdev, "netdevs/p0", counter, value, Unit::Bytes)
    }

    fn only(d: &SnapshotDiff) -> Change {
        assert_eq!(d.deltas.len(), 1, "{d:?}");
        d.deltas[0].change
    }

    #[test]
    fn growth_is_a_delta_in_the_scaled_unit() {
        let d = diff(
            &snap("b", 0, vec![words(100)]),
            &snap("b", 1000, vec![words(350)]),
        );
        assert_eq!(only(&d), Change::Delta(250 * 4));
        assert_eq!(d.interval, Duration::from_secs(1));
        assert!(!d.has_discontinuities());
    }

    #[test]
    fn a_narrow_counter_that_passes_its_maximum_wrapped() {
        let near_top = u64::from(u32::MAX) - 9;
        let d = diff(
            &snap("b", 0, vec![words(near_top)]),
            &snap("b", 1, vec![words(20)]),
        );
        // 10 words to the top, one to zero, 20 after: 30 words = 120 bytes.
        assert_eq!(only(&d), Change::Wrapped(30 * 4));
        assert!(d.has_discontinuities());
    }

    #[test]
    fn a_narrow_counter_that_falls_far_reset() {
        let d = diff(
            &snap("b", 0, vec![words(1000)]),
            &snap("b", 1, vec![words(10)]),
        );
        assert_eq!(only(&d), Change::Reset);
        assert_eq!(d.deltas[0].change.delta(), None);
    }

    #[test]
    fn a_64_bit_counter_that_falls_reset_never_a_huge_delta() {
        let d = diff(
            &snap("b", 0, vec![bytes("rx_bytes", 5_000)]),
            &snap("b", 1, vec![bytes("rx_bytes", 10)]),
        );
        assert_eq!(only(&d), Change::Reset);
    }

    #[test]
    fn an_unknown_width_that_falls_reset() {
        let s = |v| Sample {
            width_bits: 0,
            ..bytes("rx_bytes", v)
        };
        let d = diff(
            &snap("b", 0, vec![s(u64::MAX - 1)]),
            &snap("b", 1, vec![s(3)]),
        );
        assert_eq!(only(&d), Change::Reset);
    }

    #[test]
    fn a_new_boot_resets_every_cumulative_counter_even_if_it_grew() {
        let d = diff(
            &snap("boot-1", 0, vec![bytes("rx_bytes", 10)]),
            &snap("boot-2", 1, vec![bytes("rx_bytes", 99)]),
        );
        assert!(d.rebooted);
        assert_eq!(only(&d), Change::Reset);
    }

    #[test]
    fn gauges_compare_levels() {
        let g = |v| {
            Sample::gauge(
                Source::Block,
                "blockDevices/nvme0n1",
                "in_flight",
                v,
                Unit::Operations,
            )
        };
        let d = diff(&snap("b", 0, vec![g(5)]), &snap("b", 1, vec![g(2)]));
        assert_eq!(only(&d), Change::Level);
        assert_eq!((d.deltas[0].before, d.deltas[0].after), (Some(5), Some(2)));
    }

    #[test]
    fn counters_that_come_and_go_are_marked() {
        let d = diff(
            &snap("b", 0, vec![bytes("rx_bytes", 1), bytes("old", 1)]),
            &snap("b", 1, vec![bytes("rx_bytes", 2), bytes("new", 7)]),
        );
        let changes: Vec<_> = d
            .deltas
            .iter()
            .map(|x| (x.key.counter.as_ref(), x.change))
            .collect();
        assert_eq!(
            changes,
            [
                ("rx_bytes", Change::Delta(1)),
                ("old", Change::Vanished),
                ("new", Change::Appeared)
            ]
        );
    }

    #[test]
    fn a_counter_at_its_32_bit_maximum_is_saturated_not_still() {
        // Legacy PMA data counters (width unknown, 4-byte words) stuck at 0xffffffff:
        // "moved 0" would be a lie, the growth is unknown.
        let stuck = |v: u64| {
            Sample::cumulative(
                Source::Rdma,
                "rdmaDevices/mlx4_0/ports/1",
                "port_rcv_data",
                v,
                Unit::Bytes,
            )
            .with_width(0)
            .scaled(4)
        };
        let max = u64::from(u32::MAX);
        let d = diff(
            &snap("b", 0, vec![stuck(max)]),
            &snap("b", 1000, vec![stuck(max)]),
        );
        assert_eq!(only(&d), Change::Saturated);
        assert_eq!(only(&d).delta(), None);
        // Reaching the maximum during the window is saturated too.
        let d = diff(
            &snap("b", 0, vec![stuck(max - 10)]),
            &snap("b", 1000, vec![stuck(max)]),
        );
        assert_eq!(only(&d), Change::Saturated);
        // One below it is an ordinary delta, and a 64-bit counter there is ordinary.
        let d = diff(
            &snap("b", 0, vec![stuck(max - 10)]),
            &snap("b", 1000, vec![stuck(max - 1)]),
        );
        assert_eq!(only(&d), Change::Delta(36));
        let wide = |v| bytes("rx_bytes", v);
        let d = diff(
            &snap("b", 0, vec![wide(max - 1)]),
            &snap("b", 1, vec![wide(max)]),
        );
        assert_eq!(only(&d), Change::Delta(1));
    }

    #[test]
    fn capacity_is_half_the_range_of_a_narrow_counter() {
        let d = diff(&snap("b", 0, vec![words(1)]), &snap("b", 1, vec![words(2)]));
        assert_eq!(d.deltas[0].capacity(), Some((1u64 << 32) * 4 / 2));
        let d = diff(
            &snap("b", 0, vec![bytes("rx_bytes", 1)]),
            &snap("b", 1, vec![bytes("rx_bytes", 2)]),
        );
        assert_eq!(d.deltas[0].capacity(), None);
    }
}
