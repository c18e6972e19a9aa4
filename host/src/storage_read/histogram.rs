//! A compact log-linear latency histogram with bounded relative error.

/// Linear sub-buckets per power of two: values are kept with a relative error below 1/64.
const SUB_BITS: u32 = 6;
const SUB: usize = 1 << SUB_BITS;
/// Enough buckets for every u64 value.
const BUCKETS: usize = (64 - SUB_BITS as usize) * SUB + 2 * SUB;

/// A log-linear histogram of nanosecond latencies: exact below 128 ns, then 64 linear
/// buckets per power of two, plus exact min, max, mean and standard deviation.
#[derive(Debug, Clone)]
pub struct Histogram {
    counts: Vec<u64>,
    count: u64,
    min: u64,
    max: u64,
    mean: f64,
    /// Sum of squared differences from the mean (Welford).
    m2: f64,
}

impl Default for Histogram {
    fn default() -> Self {
        Self {
            counts: vec![0; BUCKETS],
            count: 0,
            min: u64::MAX,
            max: 0,
            mean: 0.0,
            m2: 0.0,
        }
    }
}

fn shift_of(value: u64) -> u32 {
    let msb = 63 - value.max(1).leading_zeros();
    msb.saturating_sub(SUB_BITS)
}

fn bucket_of(value: u64) -> usize {
    let shift = shift_of(value);
    // value >> shift < 128 and shift < 58, so this fits easily.
    (shift as usize) * SUB + (value >> shift) as usize
}

/// The smallest and largest value that land in bucket `index`.
fn bucket_range(index: usize) -> (u64, u64) {
    if index < 2 * SUB {
        return (index as u64, index as u64);
    }
    let shift = index / SUB - 1;
    let low = ((index - shift * SUB) as u64) << shift;
    (low, low + ((1u64 << shift) - 1))
}

impl Histogram {
    /// Records one latency.
    pub fn record(&mut self, nanos: u64) {
        self.counts[bucket_of(nanos)] += 1;
        self.count += 1;
        self.min = self.min.min(nanos);
        self.max = self.max.max(nanos);
        let value = nanos as f64;
        let delta = value - self.mean;
        self.mean += delta / self.count as f64;
        self.m2 += delta * (value - self.mean);
    }

    /// How many values were recorded.
    pub fn count(&self) -> u64 {
        self.count
    }

    /// The smallest value, 0 when empty.
    pub fn min(&self) -> u64 {
        if self.count == 0 {
            0
        } else {
            self.min
        }
    }

    /// The largest value.
    pub fn max(&self) -> u64 {
        self.max
    }

    /// The exact mean.
    pub fn mean(&self) -> f64 {
        self.mean
    }

    /// The sample standard deviation (as fio reports it).
    pub fn stddev(&self) -> f64 {
        if self.count < 2 {
            0.0
        } else {
            (self.m2 / (self.count - 1) as f64).sqrt()
        }
    }

    /// The value at percentile `p` (0..=100): the midpoint of the bucket holding the
    /// ceil(p% * n)-th smallest value, clamped to the exact min and max.
    pub fn percentile(&self, p: f64) -> u64 {
        if self.count == 0 {
            return 0;
        }
        let rank = ((p / 100.0) * self.count as f64).ceil().max(1.0) as u64;
        let mut seen = 0;
        for (index, &n) in self.counts.iter().enumerate() {
            seen += n;
            if seen >= rank {
                let (low, high) = bucket_range(index);
                return (low + (high - low) / 2).clamp(self.min, self.max);
            }
        }
        self.max
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage_read::report::PERCENTILES;

    #[test]
    fn buckets_cover_every_value_with_bounded_error() {
        let mut values: Vec<u64> = (0..5000).collect();
        values.extend((0..64).map(|s| 1u64 << s));
        values.extend((1..64).map(|s| (1u64 << s) - 1));
        values.extend([u64::MAX, 123_456_789, 987_654_321_000]);
        for v in values {
            let index = bucket_of(v);
            assert!(index < BUCKETS, "{v} -> {index}");
            let (low, high) = bucket_range(index);
            assert!(low <= v && v <= high, "{v} not in [{low}, {high}]");
            assert!(
                (high - low) as f64 <= low as f64 / 64.0,
                "{v}: [{low}, {high}]"
            );
        }
    }

    #[test]
    fn percentiles_are_ordered_and_close() {
        let mut h = Histogram::default();
        for v in 1..=100_000u64 {
            h.record(v * 10);
        }
        assert_eq!(h.count(), 100_000);
        assert_eq!(h.min(), 10);
        assert_eq!(h.max(), 1_000_000);
        assert!((h.mean() - 500_005.0).abs() < 1e-3);
        let mut previous = 0;
        for p in PERCENTILES {
            let got = h.percentile(p);
            let want = p / 100.0 * 1_000_000.0;
            assert!(
                (got as f64 - want).abs() <= want / 64.0 + 10.0,
                "p{p}: {got} vs {want}"
            );
            assert!(got >= previous, "p{p} went down");
            previous = got;
        }
    }

    #[test]
    fn stddev_matches_the_sample_formula_and_empty_is_zero() {
        let mut h = Histogram::default();
        assert_eq!((h.min(), h.max(), h.percentile(50.0)), (0, 0, 0));
        for v in [2, 4, 4, 4, 5, 5, 7, 9] {
            h.record(v);
        }
        assert!((h.mean() - 5.0).abs() < 1e-9);
        assert!((h.stddev() - (32.0f64 / 7.0).sqrt()).abs() < 1e-9);
        assert_eq!(h.percentile(50.0), 4);
        assert_eq!(h.percentile(100.0), 9);
    }
}
