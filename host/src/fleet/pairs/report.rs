//! The result of `fleet roce pairs`: every run with its verdict and evidence, the hosts and
//! their ports, who was skipped or not reached, and the isolation findings. dpuctl renders
//! it as a table or JSON; nothing here prints.

use serde::Serialize;

use super::host_port::HostPort;
use super::isolate::{isolate, Finding, HostTally, RunOutcome};
use super::judge::{LineRate, PairVerdict, Problem};
use super::plan::{Direction, PairPlan, PlannedRun, SkippedHost};
use crate::roce::perf::PathVerdict;

/// One measured (or failed) run: one test at one size from a client to a server.
#[derive(Debug, Clone, Serialize)]
pub struct PairRun {
    /// 1-based round it ran in.
    pub round: usize,
    /// The client host: where `roce perf` ran and its counters were read.
    pub from: String,
    /// The server host.
    pub to: String,
    /// Forward or reverse within the pair.
    pub direction: Direction,
    /// The perftest test (`ib_write_bw`).
    pub test: String,
    /// Message size, bytes.
    pub size: u64,
    /// Average bandwidth, Gbit/s.
    pub bw_gbps: Option<f64>,
    /// The rate it is held to: the lower of the two ports' rates, or the flag.
    pub line_rate: Option<LineRate>,
    /// `bw_gbps` as a percentage of the line rate.
    pub percent_of_line_rate: Option<f64>,
    /// What the client's RDMA counters say about the path.
    pub path: PathVerdict,
    /// Where those counters were read (`sysfs`, `rdma-netlink`, `none`).
    pub counter_source: Option<String>,
    /// Packets the client's RDMA port moved during the run; None when unknown.
    pub packets_delta: Option<u64>,
    /// Packets the payload needs.
    pub payload_packets: Option<u64>,
    /// Why the counters cannot say (reset, vanished, appeared).
    pub counters_inconclusive: Option<String>,
    /// Why the run produced no measurement.
    pub error: Option<String>,
    /// PASS, FAIL or INCONCLUSIVE.
    pub verdict: PairVerdict,
    /// What failed.
    pub problems: Vec<Problem>,
    /// Why, in words.
    pub reasons: Vec<String>,
}

/// One host as the pairs saw it.
#[derive(Debug, Clone, Serialize)]
pub struct HostReport {
    /// The target's name.
    pub name: String,
    /// Its ssh destination.
    pub ssh: String,
    /// The inventory's data interface, when given.
    pub interface: Option<String>,
    /// Its RDMA port and rate; None when it could not be read.
    pub port: Option<HostPort>,
    /// Why it could not be used.
    pub error: Option<String>,
}

/// What was asked, as the report states it.
#[derive(Debug, Clone, Serialize)]
pub struct PairsSettings {
    /// The pair pattern (`ring`, `within:rail`, ...).
    pub pattern: String,
    /// The share of the line rate a run must reach, %.
    pub line_rate_percent: f64,
    /// The line rate given on the command line instead of the ports' rates.
    pub line_rate_gbps: Option<f64>,
    /// The perftest tests.
    pub tests: Vec<String>,
    /// Message sizes.
    pub sizes: Vec<u64>,
    /// perftest `-n`.
    pub iterations: u64,
}

/// The whole result.
#[derive(Debug, Clone, Serialize)]
pub struct PairsReport {
    /// What was asked.
    pub settings: PairsSettings,
    /// The hosts of the plan, their ports and rates.
    pub hosts: Vec<HostReport>,
    /// The pairs of the plan, each first host before the second in inventory order.
    pub pairs: Vec<(String, String)>,
    /// Hosts left out of the plan, with the reason.
    pub skipped: Vec<SkippedHost>,
    /// Rounds in the plan.
    pub rounds: usize,
    /// Every run that finished (or failed), in order.
    pub runs: Vec<PairRun>,
    /// Planned runs that did not run because the test was cancelled.
    pub not_run: Vec<PlannedRun>,
    /// Whether Ctrl-C stopped the test.
    pub cancelled: bool,
    /// Per host: pairs passed, failed, inconclusive.
    pub tallies: Vec<HostTally>,
    /// Slow nodes, slow links, and what cannot be told apart.
    pub findings: Vec<Finding>,
    /// FAIL when a run failed; else INCONCLUSIVE when a run was inconclusive or runs were
    /// left out by cancelling; else PASS.
    pub verdict: PairVerdict,
}

impl PairsReport {
    /// Concludes the report from its runs: isolation and the overall verdict.
    pub fn conclude(
        settings: PairsSettings,
        plan: &PairPlan,
        hosts: Vec<HostReport>,
        runs: Vec<PairRun>,
        not_run: Vec<PlannedRun>,
        cancelled: bool,
    ) -> Self {
        let outcomes: Vec<RunOutcome<'_>> = runs
            .iter()
            .map(|r| RunOutcome {
                a: &r.from,
                b: &r.to,
                verdict: r.verdict,
                problems: &r.problems,
            })
            .collect();
        let isolation = isolate(&outcomes, settings.line_rate_percent);
        let worst = runs.iter().map(|r| r.verdict).max();
        let verdict = match worst {
            Some(PairVerdict::Fail) => PairVerdict::Fail,
            _ if cancelled || !not_run.is_empty() || runs.is_empty() => PairVerdict::Inconclusive,
            Some(v) => v,
            None => PairVerdict::Inconclusive,
        };
        Self {
            settings,
            hosts,
            pairs: plan.pairs.clone(),
            skipped: plan.skipped.clone(),
            rounds: plan.rounds.len(),
            runs,
            not_run,
            cancelled,
            tallies: isolation.hosts,
            findings: isolation.findings,
            verdict,
        }
    }

    /// How many runs passed, failed and were inconclusive.
    pub fn counts(&self) -> (usize, usize, usize) {
        let n = |v| self.runs.iter().filter(|r| r.verdict == v).count();
        (
            n(PairVerdict::Pass),
            n(PairVerdict::Fail),
            n(PairVerdict::Inconclusive),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings() -> PairsSettings {
        PairsSettings {
            pattern: "ring".into(),
            line_rate_percent: 90.0,
            line_rate_gbps: None,
            tests: vec!["ib_write_bw".into()],
            sizes: vec![65536],
            iterations: 100,
        }
    }

    fn run(from: &str, to: &str, verdict: PairVerdict) -> PairRun {
        PairRun {
            round: 1,
            from: from.into(),
            to: to.into(),
            direction: Direction::Forward,
            test: "ib_write_bw".into(),
            size: 65536,
            bw_gbps: Some(1.0),
            line_rate: None,
            percent_of_line_rate: None,
            path: PathVerdict::Rdma,
            counter_source: None,
            packets_delta: None,
            payload_packets: None,
            counters_inconclusive: None,
            error: None,
            verdict,
            problems: if verdict == PairVerdict::Fail {
                vec![Problem::BelowLineRate]
            } else {
                Vec::new()
            },
            reasons: Vec::new(),
        }
    }

    fn conclude(runs: Vec<PairRun>, not_run: Vec<PlannedRun>, cancelled: bool) -> PairsReport {
        let plan = PairPlan {
            pattern: super::super::pattern::PairPattern::Ring,
            pairs: vec![("a".into(), "b".into())],
            rounds: Vec::new(),
            skipped: Vec::new(),
        };
        PairsReport::conclude(settings(), &plan, Vec::new(), runs, not_run, cancelled)
    }

    #[test]
    fn the_overall_verdict_is_the_worst_run_and_cancelling_is_never_a_pass() {
        let pass = || {
            vec![
                run("a", "b", PairVerdict::Pass),
                run("b", "a", PairVerdict::Pass),
            ]
        };
        assert_eq!(
            conclude(pass(), Vec::new(), false).verdict,
            PairVerdict::Pass
        );
        let mut mixed = pass();
        mixed.push(run("a", "c", PairVerdict::Inconclusive));
        assert_eq!(
            conclude(mixed.clone(), Vec::new(), false).verdict,
            PairVerdict::Inconclusive
        );
        mixed.push(run("c", "a", PairVerdict::Fail));
        let failed = conclude(mixed, Vec::new(), false);
        assert_eq!(failed.verdict, PairVerdict::Fail);
        assert_eq!(failed.counts(), (2, 1, 1));
        let left = PlannedRun {
            round: 2,
            client: "b".into(),
            server: "a".into(),
            direction: Direction::Reverse,
        };
        let cancelled = conclude(vec![run("a", "b", PairVerdict::Pass)], vec![left], true);
        assert_eq!(cancelled.verdict, PairVerdict::Inconclusive);
        assert_eq!(
            conclude(Vec::new(), Vec::new(), true).verdict,
            PairVerdict::Inconclusive
        );
    }
}
