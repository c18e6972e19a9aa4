//! The arguments of `dpuctl prove qos`, apart from `cli.rs` so the prove subcommand list
//! there only names them.

use std::path::PathBuf;
use std::time::Duration;

use clap::Args;

/// `dpuctl prove qos [VOLUME]`: measure a volume's read rate against its QoS limit.
#[derive(Debug, Args)]
pub(crate) struct ProveQosArgs {
    /// The DPU volume (`r0n1` or `volumes/r0n1`); default: the agent's only
    /// remote-controller volume.
    pub(crate) volume: Option<String>,
    /// The host's block device for the volume; it must carry the volume's NVMe namespace
    /// identity. Default: the one disk on this host that carries it.
    #[arg(long, value_name = "PATH")]
    pub(crate) device: Option<PathBuf>,
    /// How long each limited window reads (`3s`, `500ms`, `2`); the lifted window reads
    /// half as long (at least 0.5 s).
    #[arg(long, default_value = "3s", value_parser = parse_duration)]
    pub(crate) duration: Duration,
    /// Block size of each read.
    #[arg(long, default_value = "128k", value_parser = dpu_host::storage_read::size::parse_block_size)]
    pub(crate) bs: u64,
    /// Reads in flight.
    #[arg(long, default_value_t = 16, value_parser = clap::value_parser!(u32).range(1..=1024))]
    pub(crate) iodepth: u32,
    /// How far the measured rate may stray from the limit: a fraction between 0 and 1.
    #[arg(long, default_value_t = 0.15, value_parser = parse_tolerance)]
    pub(crate) tolerance: f64,
    /// Do not lift the limit for a window (a production volume keeps its limit
    /// throughout); a rate within the limit is then INCONCLUSIVE, above it NOT PROVEN.
    #[arg(long)]
    pub(crate) no_lift: bool,
    /// Also write the verdict and the rates as Prometheus metrics to FILE.prom (for
    /// node_exporter's textfile collector; replaced atomically).
    #[arg(long, value_name = "FILE.prom")]
    pub(crate) metrics_file: Option<PathBuf>,
}

/// `3s`, `500ms`, `1.5` (seconds): a positive, finite time of at most a day.
pub(crate) fn parse_duration(text: &str) -> Result<Duration, String> {
    let t = text.trim();
    let (number, scale) = if let Some(ms) = t.strip_suffix("ms") {
        (ms, 0.001)
    } else if let Some(s) = t.strip_suffix('s') {
        (s, 1.0)
    } else {
        (t, 1.0)
    };
    match number.trim().parse::<f64>() {
        Ok(n) if n.is_finite() && n > 0.0 && n * scale <= 86_400.0 => {
            Ok(Duration::from_secs_f64(n * scale))
        }
        _ => Err(format!(
            "{text:?} is not a positive time (e.g. 3s, 500ms) of at most a day"
        )),
    }
}

/// A fraction strictly between 0 and 1.
pub(crate) fn parse_tolerance(text: &str) -> Result<f64, String> {
    match text.trim().parse::<f64>() {
        Ok(f) if f > 0.0 && f < 1.0 => Ok(f),
        _ => Err(format!(
            "{text:?} is not a fraction between 0 and 1 (0.15 = 15%)"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_and_tolerances_parse_and_bad_ones_are_named() {
        assert_eq!(parse_duration("3s"), Ok(Duration::from_secs(3)));
        assert_eq!(parse_duration("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(parse_duration("1.5"), Ok(Duration::from_millis(1500)));
        for bad in ["0", "0s", "-1s", "soon", "inf", "2d"] {
            let err = parse_duration(bad).expect_err(bad);
            assert!(err.contains("positive time"), "{err}");
        }
        assert_eq!(parse_tolerance("0.15"), Ok(0.15));
        for bad in ["0", "1", "1.5", "-0.1", "NaN", "x"] {
            let err = parse_tolerance(bad).expect_err(bad);
            assert!(err.contains("between 0 and 1"), "{err}");
        }
    }
}
