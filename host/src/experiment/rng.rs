//! A small deterministic pseudo-random generator (SplitMix64) for the bootstrap.
//!
//! Written here rather than taken from a crate because `dpu-host` has no random-number
//! crate in its tree (`cargo tree -p dpu-host` shows only `getrandom`, which is an entropy
//! source, not a seeded generator) and the bootstrap needs exactly one property: the same
//! seed gives the same stream on every machine and every build, so an experiment's interval
//! can be recomputed by anyone from its report. SplitMix64 (Steele, Lea and Flood, "Fast
//! splittable pseudorandom number generators", OOPSLA 2014; the constants are the ones of
//! Java's `SplittableRandom` and of Vigna's reference `splitmix64.c`) passes BigCrush and is
//! ten lines long. It is not for anything secret.

/// SplitMix64: a 64-bit state advanced by the golden-ratio increment and mixed on output.
#[derive(Debug, Clone)]
pub struct SplitMix64 {
    state: u64,
}

/// The golden-ratio increment of SplitMix64 (2^64 / φ, odd).
const GOLDEN_GAMMA: u64 = 0x9E37_79B9_7F4A_7C15;

impl SplitMix64 {
    /// A generator whose stream is fully determined by `seed`.
    pub fn new(seed: u64) -> Self {
        Self { state: seed }
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(GOLDEN_GAMMA);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A uniform index in `0..n` (`n > 0`), by multiply-and-shift (Lemire): the bias is
    /// at most n / 2^64, nothing next to the resampling noise it feeds.
    pub fn below(&mut self, n: usize) -> usize {
        debug_assert!(n > 0, "below(0) has no value to return");
        ((u128::from(self.next_u64()) * n as u128) >> 64) as usize
    }

    /// A uniform number in `[0, 1)` with 53 random bits.
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }
}

/// A seed derived from `seed` for the `stream`-th independent use, so each bootstrap of
/// one analysis has its own stream and adding a drift check never moves the effect's
/// interval.
pub fn derive_seed(seed: u64, stream: u64) -> u64 {
    SplitMix64::new(seed ^ stream.wrapping_mul(GOLDEN_GAMMA)).next_u64()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_the_reference_splitmix64_stream() {
        // Vigna's splitmix64.c seeded with 1234567: the first outputs.
        let mut rng = SplitMix64::new(1_234_567);
        assert_eq!(rng.next_u64(), 6_457_827_717_110_365_317);
        assert_eq!(rng.next_u64(), 3_203_168_211_198_807_973);
        assert_eq!(rng.next_u64(), 9_817_491_932_198_370_423);
    }

    #[test]
    fn same_seed_same_stream_other_seed_other_stream() {
        let take = |seed| {
            let mut rng = SplitMix64::new(seed);
            (0..8).map(|_| rng.next_u64()).collect::<Vec<_>>()
        };
        assert_eq!(take(42), take(42));
        assert_ne!(take(42), take(43));
    }

    #[test]
    fn below_stays_in_range_and_reaches_every_index() {
        let mut rng = SplitMix64::new(7);
        let mut seen = [0u32; 5];
        for _ in 0..1000 {
            seen[rng.below(5)] += 1;
        }
        assert!(seen.iter().all(|&count| count > 150), "{seen:?}");
    }

    #[test]
    fn unit_is_in_zero_one() {
        let mut rng = SplitMix64::new(9);
        for _ in 0..1000 {
            let u = rng.unit();
            assert!((0.0..1.0).contains(&u), "{u}");
        }
    }

    #[test]
    fn derived_seeds_differ_per_stream() {
        assert_ne!(derive_seed(1, 0), derive_seed(1, 1));
        assert_eq!(derive_seed(1, 2), derive_seed(1, 2));
    }
}
