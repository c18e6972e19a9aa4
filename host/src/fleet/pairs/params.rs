//! `fleet roce pairs` as parameters: the values (`PairsParams`, checked by
//! [`PairsParams::validate`] before anything runs), the tests by name, the targets' ssh
//! destinations and interfaces, and why any of them cannot be used (`PairsError`).

use std::time::Duration;

use dpu_proto::names::{check_ifname, NameError};

use super::plan::PairPlan;
use crate::fleet::target::Target;
use crate::param::{Field, ParamError};
use crate::remote::ssh::{valid_destination, Ssh};
use crate::roce::perf::PerfTest;

/// Consecutive rounds use different server ports, this many strides apart, so that a
/// server socket of the last round still closing never meets the next round's.
pub(super) const PORT_ROTATION: u16 = 8;
/// What `roce perf` adds to a port when it retries a run (a failed perftest clock).
const RETRY_PORT_OFFSET: u32 = 500;

/// `fleet roce pairs` as parameters (the flags of the same names).
#[derive(Debug, Clone)]
pub struct PairsParams {
    /// RDMA bandwidth tests ([`parse_tests`]).
    pub tests: Vec<PerfTest>,
    /// Message sizes, bytes.
    pub sizes: Vec<u64>,
    /// perftest `-n`.
    pub iterations: u64,
    /// The first server port.
    pub base_port: u16,
    /// Per perftest run limit on the hosts, seconds.
    pub run_timeout_s: u64,
    /// The share of the line rate a run must reach, %.
    pub line_rate_percent: f64,
    /// The line rate to hold every run to instead of the ports' sysfs rates.
    pub line_rate_gbps: Option<f64>,
    /// The dpuctl program on the hosts (a name on their PATH, or a path).
    pub dpuctl: String,
    /// How this machine reaches the hosts.
    pub hop: Ssh,
    /// How long reading one host's ports over ssh may take.
    pub probe_timeout: Duration,
    /// How many hosts are probed at once (runs per round are bounded by the plan).
    pub parallel: usize,
}

/// A parameter or a target that cannot be used; nothing has run yet.
#[derive(Debug, thiserror::Error)]
pub enum PairsError {
    /// A parameter out of its range, or a test that is not an RDMA bandwidth test, named
    /// by its field.
    #[error("{0}")]
    Param(#[from] ParamError),
    /// A target's ssh destination could become an option or shell text.
    #[error("target {host}: ssh {ssh:?} is not a host: use HOST, USER@HOST or an IP address")]
    BadSsh {
        /// The target.
        host: String,
        /// Its ssh destination.
        ssh: String,
    },
    /// A target's interface is not an interface name.
    #[error("target {host}: interface")]
    BadInterface {
        /// The target.
        host: String,
        /// Why.
        #[source]
        source: NameError,
    },
}

/// The tests from their names (`write_bw` or `ib_write_bw`): RDMA bandwidth tests only;
/// none: `write_bw`.
pub fn parse_tests(names: &[String]) -> Result<Vec<PerfTest>, PairsError> {
    if names.is_empty() {
        return Ok(vec![PerfTest::WriteBw]);
    }
    let mut tests = Vec::new();
    for name in names {
        let test = PerfTest::parse(name)
            .filter(|t| t.is_rdma() && t.is_bandwidth())
            .ok_or_else(|| {
                bad(
                    Field::Tests,
                    format!(
                        "{name:?} is not an RDMA bandwidth test (send_bw, write_bw, read_bw): a \
                         pair is judged by its bandwidth over RDMA"
                    ),
                )
            })?;
        if !tests.contains(&test) {
            tests.push(test);
        }
    }
    Ok(tests)
}

/// `field: reason`, the field said as the caller names it.
fn bad(field: Field, reason: impl Into<String>) -> PairsError {
    ParamError::new(field)
        .field(field)
        .text(format!(": {}", reason.into()))
        .into()
}

impl PairsParams {
    /// Runs per pair direction: every test at every size.
    pub(super) fn stride(&self) -> u32 {
        u32::try_from(self.tests.len() * self.sizes.len()).unwrap_or(u32::MAX)
    }

    /// Checks every value before anything runs.
    pub fn validate(&self) -> Result<(), PairsError> {
        if self.tests.is_empty() {
            return Err(bad(Field::Tests, "at least one test"));
        }
        if self.sizes.is_empty() || self.sizes.iter().any(|&s| s == 0 || s > 1 << 30) {
            return Err(bad(Field::Sizes, "each size must be 1 byte .. 1 GiB"));
        }
        if self.iterations == 0 || self.iterations > 100_000_000 {
            return Err(bad(Field::Iterations, "must be 1 .. 100000000"));
        }
        if self.run_timeout_s == 0 || self.run_timeout_s > 86_400 {
            return Err(bad(Field::RunTimeout, "must be 1 .. 86400 seconds"));
        }
        if !(self.line_rate_percent > 0.0 && self.line_rate_percent <= 100.0) {
            return Err(bad(
                Field::LineRatePercent,
                "must be above 0 and at most 100",
            ));
        }
        if let Some(g) = self.line_rate_gbps {
            if !(g.is_finite() && g > 0.0) {
                return Err(bad(Field::LineRateGbps, "must be a positive number"));
            }
        }
        let last = u32::from(self.base_port)
            + u32::from(PORT_ROTATION) * self.stride()
            + RETRY_PORT_OFFSET;
        if self.base_port < 1024 || last > u32::from(u16::MAX) {
            return Err(bad(
                Field::BasePort,
                format!(
                    "the runs use ports {} .. {last}, which must lie within 1024 .. 65535",
                    self.base_port
                ),
            ));
        }
        if self.dpuctl.is_empty() || self.dpuctl.starts_with('-') || self.dpuctl.contains('\0') {
            return Err(bad(
                Field::Dpuctl,
                "a program name or path, not starting with '-'",
            ));
        }
        if self.parallel == 0 {
            return Err(bad(Field::Parallel, "must be at least 1"));
        }
        Ok(())
    }
}

/// The ssh destination and interface of every host in the plan, checked.
pub fn check_targets(targets: &[Target], plan: &PairPlan) -> Result<(), PairsError> {
    for t in planned(targets, plan) {
        let ssh = t.ssh.clone().unwrap_or_default();
        if !valid_destination(&ssh) {
            return Err(PairsError::BadSsh {
                host: t.name.clone(),
                ssh,
            });
        }
        if let Some(interface) = &t.interface {
            check_ifname("interface", interface).map_err(|source| PairsError::BadInterface {
                host: t.name.clone(),
                source,
            })?;
        }
    }
    Ok(())
}

/// The targets in the plan's pairs, in inventory order.
pub(super) fn planned<'a>(targets: &'a [Target], plan: &PairPlan) -> Vec<&'a Target> {
    targets
        .iter()
        .filter(|t| plan.pairs.iter().any(|(a, b)| *a == t.name || *b == t.name))
        .collect()
}

#[cfg(test)]
pub(super) mod tests;
