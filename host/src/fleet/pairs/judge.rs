//! The verdict of one pair run: PASS only when the bandwidth reached the required share of
//! the line rate AND the client's RDMA counters say the traffic went over RDMA.
//!
//! Why both: a fast run over the wrong path (TCP fallback through another NIC) and a slow
//! run over RDMA are both broken links, and each alone looks fine to a tool that reads only
//! the other. Counters that cannot decide (reset, vanished, unreadable, in between) never
//! make a PASS and are never read as zero: the run is INCONCLUSIVE unless it already failed
//! on a fact (too slow, not RDMA, did not run).

use std::fmt;

use serde::Serialize;

use crate::roce::perf::PathVerdict;

/// A run's, a pair's or the whole test's outcome.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum PairVerdict {
    /// Fast enough, and over RDMA by the counters.
    Pass,
    /// The evidence could not decide, and nothing failed.
    Inconclusive,
    /// Too slow, not over RDMA, or it did not run.
    Fail,
}

impl fmt::Display for PairVerdict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Pass => "PASS",
            Self::Inconclusive => "INCONCLUSIVE",
            Self::Fail => "FAIL",
        })
    }
}

/// What was wrong with a failed run, the word the isolation findings use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Problem {
    /// Bandwidth below the required share of the line rate.
    BelowLineRate,
    /// The RDMA port did not carry the payload.
    NotOverRdma,
    /// The run did not produce a measurement (ssh, perftest or the remote dpuctl failed).
    RunFailed,
}

impl Problem {
    /// The problem in a sentence fragment ("below 90 % of line rate").
    pub fn describe(self, required_percent: f64) -> String {
        match self {
            Self::BelowLineRate => format!("below {required_percent} % of line rate"),
            Self::NotOverRdma => "not over RDMA by the counters".to_owned(),
            Self::RunFailed => "failed to run".to_owned(),
        }
    }
}

/// The rate a run is held to, and where it came from.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LineRate {
    /// Gbit/s (10^9 bit/s, the unit perftest's `--report_gbits` and sysfs `rate` use).
    pub gbps: f64,
    /// Where the number came from, for the reader: which port's sysfs `rate`, or the flag.
    pub source: String,
}

/// The facts of one run that the verdict depends on.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Measurement<'a> {
    /// Average bandwidth, Gbit/s.
    pub bw_gbps: Option<f64>,
    /// What the client's RDMA counters say about the path.
    pub path: PathVerdict,
    /// Why the counters cannot say how much moved (reset, vanished, appeared).
    pub counters_inconclusive: Option<&'a str>,
    /// Packets the client's RDMA port moved (None: unknown, never zero for unknown).
    pub packets_delta: Option<u64>,
    /// Packets the payload needs.
    pub payload_packets: u64,
    /// Why the run produced no measurement.
    pub error: Option<&'a str>,
}

/// The verdict of one run, with every reason.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Judgement {
    /// PASS, FAIL or INCONCLUSIVE.
    pub verdict: PairVerdict,
    /// Measured bandwidth as a percentage of the line rate, when both are known.
    pub percent_of_line_rate: Option<f64>,
    /// What failed (empty unless FAIL).
    pub problems: Vec<Problem>,
    /// Why, in words: each failure, then what left it undecided.
    pub reasons: Vec<String>,
}

fn moved(m: &Measurement<'_>) -> String {
    match m.packets_delta {
        Some(p) => format!(
            "the RDMA port moved {p} packets for a payload of {} packets",
            m.payload_packets
        ),
        None => "the RDMA port's packet count is unknown".to_owned(),
    }
}

/// Judges one run against `required_percent` % of `line_rate`.
pub fn judge(
    m: &Measurement<'_>,
    line_rate: Option<&LineRate>,
    required_percent: f64,
) -> Judgement {
    if let Some(error) = m.error {
        return Judgement {
            verdict: PairVerdict::Fail,
            percent_of_line_rate: None,
            problems: vec![Problem::RunFailed],
            reasons: vec![format!("the run failed: {error}")],
        };
    }
    let mut problems = Vec::new();
    let mut reasons = Vec::new();
    let mut undecided = Vec::new();
    let mut percent = None;
    match (m.bw_gbps, line_rate) {
        (None, _) => {
            problems.push(Problem::RunFailed);
            reasons.push("the run reported no bandwidth".to_owned());
        }
        (Some(bw), Some(rate)) if rate.gbps > 0.0 => {
            let p = bw / rate.gbps * 100.0;
            percent = Some(p);
            if p < required_percent {
                problems.push(Problem::BelowLineRate);
                reasons.push(format!(
                    "{bw:.2} Gbit/s is {p:.1} % of the {} Gbit/s line rate, below {required_percent} %",
                    rate.gbps
                ));
            }
        }
        (Some(_), _) => undecided.push(
            "the line rate is not known (a port has no sysfs rate): pass --line-rate-gbps"
                .to_owned(),
        ),
    }
    match m.path {
        PathVerdict::Rdma => {}
        PathVerdict::NotRdma => {
            problems.push(Problem::NotOverRdma);
            reasons.push(format!("{}: the traffic did not go over RDMA", moved(m)));
        }
        PathVerdict::Unknown => undecided.push(match m.counters_inconclusive {
            Some(why) => format!("the RDMA counters cannot tell the path: {why}"),
            None => format!(
                "the RDMA counters cannot tell the path: {} (or none was readable)",
                moved(m)
            ),
        }),
    }
    let verdict = if !problems.is_empty() {
        PairVerdict::Fail
    } else if !undecided.is_empty() {
        PairVerdict::Inconclusive
    } else {
        PairVerdict::Pass
    };
    reasons.extend(undecided);
    Judgement {
        verdict,
        percent_of_line_rate: percent,
        problems,
        reasons,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rate(gbps: f64) -> LineRate {
        LineRate {
            gbps,
            source: "test".into(),
        }
    }

    fn over_rdma(bw: f64) -> Measurement<'static> {
        Measurement {
            bw_gbps: Some(bw),
            path: PathVerdict::Rdma,
            counters_inconclusive: None,
            packets_delta: Some(1_050_000),
            payload_packets: 1_000_000,
            error: None,
        }
    }

    #[test]
    fn fast_over_rdma_passes_and_slow_over_rdma_fails_naming_the_share() {
        let pass = judge(&over_rdma(95.0), Some(&rate(100.0)), 90.0);
        assert_eq!(pass.verdict, PairVerdict::Pass, "{pass:?}");
        assert_eq!(pass.percent_of_line_rate, Some(95.0));
        assert!(pass.reasons.is_empty());
        // Exactly at the threshold passes; just under fails.
        assert_eq!(
            judge(&over_rdma(90.0), Some(&rate(100.0)), 90.0).verdict,
            PairVerdict::Pass
        );
        let slow = judge(&over_rdma(89.9), Some(&rate(100.0)), 90.0);
        assert_eq!(slow.verdict, PairVerdict::Fail);
        assert_eq!(slow.problems, [Problem::BelowLineRate]);
        assert!(
            slow.reasons[0].contains("89.9 % of the 100 Gbit/s line rate, below 90 %"),
            "{slow:?}"
        );
    }

    #[test]
    fn fast_but_not_over_rdma_fails_on_the_path() {
        let m = Measurement {
            path: PathVerdict::NotRdma,
            packets_delta: Some(12),
            ..over_rdma(98.0)
        };
        let j = judge(&m, Some(&rate(100.0)), 90.0);
        assert_eq!(j.verdict, PairVerdict::Fail);
        assert_eq!(j.problems, [Problem::NotOverRdma]);
        assert!(j.reasons[0].contains("moved 12 packets"), "{j:?}");
    }

    #[test]
    fn reset_counters_are_inconclusive_never_pass_never_zero() {
        let m = Measurement {
            path: PathVerdict::Unknown,
            packets_delta: None,
            counters_inconclusive: Some("port_xmit_packets reset during the run"),
            ..over_rdma(99.0)
        };
        let j = judge(&m, Some(&rate(100.0)), 90.0);
        assert_eq!(j.verdict, PairVerdict::Inconclusive);
        assert!(j.problems.is_empty());
        assert!(j.reasons[0].contains("reset during the run"), "{j:?}");
        // Unknown evidence does not hide a fact: slow is still a failure.
        let slow = judge(
            &Measurement {
                bw_gbps: Some(10.0),
                ..m
            },
            Some(&rate(100.0)),
            90.0,
        );
        assert_eq!(slow.verdict, PairVerdict::Fail);
        assert_eq!(slow.problems, [Problem::BelowLineRate]);
        assert_eq!(slow.reasons.len(), 2, "the undecided path is still said");
    }

    #[test]
    fn no_line_rate_is_inconclusive_and_a_failed_run_fails() {
        let j = judge(&over_rdma(99.0), None, 90.0);
        assert_eq!(j.verdict, PairVerdict::Inconclusive);
        assert!(j.reasons[0].contains("--line-rate-gbps"), "{j:?}");
        let failed = Measurement {
            error: Some("ssh: connect to host gpu-03 port 22: No route to host"),
            bw_gbps: None,
            ..over_rdma(0.0)
        };
        let j = judge(&failed, Some(&rate(100.0)), 90.0);
        assert_eq!(j.verdict, PairVerdict::Fail);
        assert_eq!(j.problems, [Problem::RunFailed]);
        assert!(j.reasons[0].contains("No route to host"));
    }
}
