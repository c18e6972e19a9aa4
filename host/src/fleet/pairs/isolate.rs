//! Isolation: from the verdicts of every pair, which node or which link is to blame.
//!
//! Why: a slow NIC, cable or switch port makes every pair through it slow, while a bad
//! link (one cable, one switch path) makes one pair slow and leaves both its hosts fine
//! with everyone else. So: a host all of whose judged pairs (two or more) failed is a
//! **slow node**; a failed pair whose hosts each passed with someone else is a **slow
//! link**; a failed pair with a host that has no other judged pair cannot be told apart,
//! and is said to be so. Pairs through a slow node are explained by it and not blamed on
//! their links. Inconclusive pairs count for nothing either way.

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;

use super::judge::{PairVerdict, Problem};

/// One run, as isolation sees it: the two hosts (either order) and its verdict.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RunOutcome<'a> {
    /// One host of the pair.
    pub a: &'a str,
    /// The other.
    pub b: &'a str,
    /// The run's verdict.
    pub verdict: PairVerdict,
    /// What failed, when it did.
    pub problems: &'a [Problem],
}

/// What a finding blames.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum FindingKind {
    /// Every judged pair of the host failed.
    SlowNode,
    /// One pair failed; both hosts passed elsewhere.
    SlowLink,
    /// A pair failed, but a host of it has no other judged pair to compare with.
    Undecided,
}

/// One conclusion, in words and as data.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Finding {
    /// Node, link or undecided.
    pub kind: FindingKind,
    /// The node, or the link's two hosts.
    pub hosts: Vec<String>,
    /// What failed there.
    pub problems: Vec<Problem>,
    /// The sentence for the reader.
    pub text: String,
}

/// How one host's pairs came out.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct HostTally {
    /// The host.
    pub name: String,
    /// Pairs it is in.
    pub pairs: usize,
    /// Pairs with every run PASS.
    pub passed: usize,
    /// Pairs with a failed run.
    pub failed: usize,
    /// The others (inconclusive, or not run).
    pub inconclusive: usize,
}

/// Every host's tally and the findings.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Isolation {
    /// Hosts by name.
    pub hosts: Vec<HostTally>,
    /// Slow nodes first, then links, then what cannot be decided.
    pub findings: Vec<Finding>,
}

#[derive(Debug, Default)]
struct PairState {
    verdict: Option<PairVerdict>,
    problems: BTreeSet<Problem>,
}

fn words(problems: &BTreeSet<Problem>, required_percent: f64) -> String {
    let list: Vec<String> = problems
        .iter()
        .map(|p| p.describe(required_percent))
        .collect();
    list.join(" and ")
}

/// Concludes from `runs` (both directions of each pair, any order).
pub fn isolate(runs: &[RunOutcome<'_>], required_percent: f64) -> Isolation {
    let mut pairs: BTreeMap<(&str, &str), PairState> = BTreeMap::new();
    for run in runs {
        let key = if run.a <= run.b {
            (run.a, run.b)
        } else {
            (run.b, run.a)
        };
        let state = pairs.entry(key).or_default();
        // FAIL beats INCONCLUSIVE beats PASS (the order of PairVerdict).
        state.verdict = Some(state.verdict.map_or(run.verdict, |v| v.max(run.verdict)));
        state.problems.extend(run.problems.iter().copied());
    }
    let status = |key: &(&str, &str)| pairs[key].verdict.unwrap_or(PairVerdict::Inconclusive);
    let mut tally: BTreeMap<&str, HostTally> = BTreeMap::new();
    for (key, state) in &pairs {
        for host in [key.0, key.1] {
            let t = tally.entry(host).or_insert_with(|| HostTally {
                name: host.to_owned(),
                ..HostTally::default()
            });
            t.pairs += 1;
            match state.verdict.unwrap_or(PairVerdict::Inconclusive) {
                PairVerdict::Pass => t.passed += 1,
                PairVerdict::Fail => t.failed += 1,
                PairVerdict::Inconclusive => t.inconclusive += 1,
            }
        }
    }
    let slow_node = |host: &str| {
        let t = &tally[host];
        let judged = t.passed + t.failed;
        judged >= 2 && t.failed == judged
    };
    let mut findings = Vec::new();
    for t in tally.values().filter(|t| slow_node(&t.name)) {
        let problems: BTreeSet<Problem> = pairs
            .iter()
            .filter(|(k, _)| k.0 == t.name || k.1 == t.name)
            .flat_map(|(_, s)| s.problems.iter().copied())
            .collect();
        let more = if t.inconclusive > 0 {
            format!(" ({} more inconclusive)", t.inconclusive)
        } else {
            String::new()
        };
        findings.push(Finding {
            kind: FindingKind::SlowNode,
            hosts: vec![t.name.clone()],
            problems: problems.iter().copied().collect(),
            text: format!(
                "node {}: {} of {} pairs {}{more}",
                t.name,
                t.failed,
                t.failed,
                words(&problems, required_percent)
            ),
        });
    }
    let passed_elsewhere = |host: &str, key: &(&str, &str)| {
        pairs.keys().any(|other| {
            other != key
                && (other.0 == host || other.1 == host)
                && status(other) == PairVerdict::Pass
        })
    };
    let mut links = Vec::new();
    let mut undecided = Vec::new();
    for (key, state) in &pairs {
        if status(key) != PairVerdict::Fail || slow_node(key.0) || slow_node(key.1) {
            continue;
        }
        let (a, b) = *key;
        let what = words(&state.problems, required_percent);
        let hosts = vec![a.to_owned(), b.to_owned()];
        let problems: Vec<Problem> = state.problems.iter().copied().collect();
        let alone: Vec<&str> = [a, b]
            .into_iter()
            .filter(|h| !passed_elsewhere(h, key))
            .collect();
        if alone.is_empty() {
            links.push(Finding {
                kind: FindingKind::SlowLink,
                hosts,
                problems,
                text: format!("link {a} ↔ {b}: {what}; both hosts fine elsewhere"),
            });
            continue;
        }
        let why: Vec<String> = alone
            .iter()
            .map(|h| {
                if tally[h].pairs == 1 {
                    format!("{h} is in no other pair")
                } else {
                    format!("{h}'s other pairs are inconclusive")
                }
            })
            .collect();
        undecided.push(Finding {
            kind: FindingKind::Undecided,
            hosts,
            problems,
            text: format!(
                "link {a} ↔ {b}: {what}; a slow link cannot be told from a slow node: {}",
                why.join(", ")
            ),
        });
    }
    findings.extend(links);
    findings.extend(undecided);
    Isolation {
        hosts: tally.into_values().collect(),
        findings,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SLOW: &[Problem] = &[Problem::BelowLineRate];

    /// Both directions of every pair of `hosts`, failed where `bad(a, b)` says so.
    fn all_pairs(
        hosts: &[&'static str],
        bad: impl Fn(&str, &str) -> bool,
    ) -> Vec<RunOutcome<'static>> {
        let mut runs = Vec::new();
        for (i, a) in hosts.iter().enumerate() {
            for b in &hosts[i + 1..] {
                for (x, y) in [(*a, *b), (*b, *a)] {
                    let failed = bad(a, b);
                    runs.push(RunOutcome {
                        a: x,
                        b: y,
                        verdict: if failed {
                            PairVerdict::Fail
                        } else {
                            PairVerdict::Pass
                        },
                        problems: if failed { SLOW } else { &[] },
                    });
                }
            }
        }
        runs
    }

    const HOSTS: [&str; 5] = ["gpu-03", "gpu-04", "gpu-05", "gpu-06", "gpu-07"];

    #[test]
    fn a_node_slow_in_every_pair_is_blamed_and_its_peers_are_not() {
        let runs = all_pairs(&HOSTS, |a, b| a == "gpu-07" || b == "gpu-07");
        let iso = isolate(&runs, 90.0);
        assert_eq!(iso.findings.len(), 1, "{:#?}", iso.findings);
        let f = &iso.findings[0];
        assert_eq!(f.kind, FindingKind::SlowNode);
        assert_eq!(f.hosts, ["gpu-07"]);
        assert_eq!(f.text, "node gpu-07: 4 of 4 pairs below 90 % of line rate");
        let peer = iso
            .hosts
            .iter()
            .find(|t| t.name == "gpu-03")
            .expect("tally");
        assert_eq!((peer.pairs, peer.passed, peer.failed), (4, 3, 1));
    }

    #[test]
    fn one_slow_pair_between_healthy_hosts_is_the_link() {
        let runs = all_pairs(&HOSTS, |a, b| (a, b) == ("gpu-03", "gpu-04"));
        let iso = isolate(&runs, 90.0);
        assert_eq!(iso.findings.len(), 1, "{:#?}", iso.findings);
        let f = &iso.findings[0];
        assert_eq!(f.kind, FindingKind::SlowLink);
        assert_eq!(f.hosts, ["gpu-03", "gpu-04"]);
        assert_eq!(
            f.text,
            "link gpu-03 ↔ gpu-04: below 90 % of line rate; both hosts fine elsewhere"
        );
    }

    #[test]
    fn a_healthy_fleet_blames_nothing() {
        let iso = isolate(&all_pairs(&HOSTS, |_, _| false), 90.0);
        assert!(iso.findings.is_empty(), "{:#?}", iso.findings);
        assert!(iso.hosts.iter().all(|t| t.failed == 0 && t.passed == 4));
    }

    #[test]
    fn a_host_in_only_one_pair_cannot_be_told_apart() {
        let iso = isolate(&all_pairs(&["a", "b"], |_, _| true), 90.0);
        assert_eq!(iso.findings.len(), 1, "{:#?}", iso.findings);
        let f = &iso.findings[0];
        assert_eq!(f.kind, FindingKind::Undecided);
        assert!(
            f.text.ends_with(
                "a slow link cannot be told from a slow node: a is in no other pair, \
                 b is in no other pair"
            ),
            "{}",
            f.text
        );
        // A ring of three with one bad pair: each of its hosts passed with the third.
        let ring = all_pairs(&["a", "b", "c"], |a, b| (a, b) == ("a", "b"));
        let iso = isolate(&ring, 90.0);
        assert_eq!(iso.findings[0].kind, FindingKind::SlowLink);
    }

    #[test]
    fn inconclusive_pairs_neither_blame_nor_clear() {
        // b's only other pair is inconclusive: the bad pair a-b stays undecided.
        let runs = vec![
            RunOutcome {
                a: "a",
                b: "b",
                verdict: PairVerdict::Fail,
                problems: SLOW,
            },
            RunOutcome {
                a: "a",
                b: "c",
                verdict: PairVerdict::Pass,
                problems: &[],
            },
            RunOutcome {
                a: "b",
                b: "d",
                verdict: PairVerdict::Inconclusive,
                problems: &[],
            },
        ];
        let iso = isolate(&runs, 90.0);
        assert_eq!(iso.findings.len(), 1, "{:#?}", iso.findings);
        assert_eq!(iso.findings[0].kind, FindingKind::Undecided);
        assert!(iso.findings[0]
            .text
            .ends_with("b's other pairs are inconclusive"));
        let b = iso.hosts.iter().find(|t| t.name == "b").expect("b");
        assert_eq!((b.pairs, b.failed, b.inconclusive), (2, 1, 1));
    }
}
