//! The pair plan: which hosts are paired (by the [`PairPattern`]), both directions of each
//! pair, and the rounds they run in. Pure: it reads the targets and nothing else.
//!
//! Why rounds: a host's port is the thing measured, so two tests through one host at once
//! would each see half of it and blame a healthy link. Inside a round every host is in at
//! most one test (as client or server), and a round holds at most `parallel` tests, so
//! the fabric's load stays bounded too. Hosts that cannot take part (no ssh destination,
//! no value of the grouping label, nobody to pair with) are listed with the reason.

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;

use super::pattern::PairPattern;
use crate::fleet::target::Target;

/// Which way a run goes, relative to its pair: a pair `(a, b)` is named with `a` first
/// (inventory order); `a` is the client of the forward run and the server of the reverse.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Direction {
    /// The pair's first host is the client.
    Forward,
    /// The pair's second host is the client.
    Reverse,
}

/// One test of the plan: `client` runs the perftest client (and reads its RDMA counters),
/// `server` runs the server.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PlannedRun {
    /// 1-based round.
    pub round: usize,
    /// The host that runs the client: where the run's counter evidence is read.
    pub client: String,
    /// The host that runs the server.
    pub server: String,
    /// Forward or reverse within its pair.
    pub direction: Direction,
}

/// A host left out of the plan, and why (never dropped silently).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SkippedHost {
    /// The target's name.
    pub name: String,
    /// Why it is not tested.
    pub reason: String,
}

/// What runs, in which rounds, and who was left out.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PairPlan {
    /// The pattern the pairs come from.
    pub pattern: PairPattern,
    /// Unordered pairs, each first host before the second in inventory order.
    pub pairs: Vec<(String, String)>,
    /// The runs, round by round.
    pub rounds: Vec<Vec<PlannedRun>>,
    /// Hosts not tested, with the reason.
    pub skipped: Vec<SkippedHost>,
}

impl PairPlan {
    /// Every run, in order.
    pub fn runs(&self) -> impl Iterator<Item = &PlannedRun> {
        self.rounds.iter().flatten()
    }
}

/// Why no plan could be made.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PlanError {
    /// No run at a time (parallel 0).
    #[error("parallel must be at least 1")]
    NoParallelism,
    /// Two targets with one name: results would be ambiguous.
    #[error("target {0:?} is listed twice")]
    Duplicate(String),
    /// Nothing left to test.
    #[error("no pair to test with pattern {pattern}: {}", describe(.skipped))]
    NothingToTest {
        /// The pattern.
        pattern: String,
        /// Every host and why it was left out.
        skipped: Vec<SkippedHost>,
    },
}

fn describe(skipped: &[SkippedHost]) -> String {
    if skipped.is_empty() {
        return "no targets".to_owned();
    }
    let list: Vec<String> = skipped
        .iter()
        .map(|s| format!("{} ({})", s.name, s.reason))
        .collect();
    list.join("; ")
}

/// The hosts that can take part: those with an ssh destination, the rest skipped.
fn with_ssh<'a>(targets: &'a [Target], skipped: &mut Vec<SkippedHost>) -> Vec<&'a Target> {
    targets
        .iter()
        .filter(|t| {
            if t.ssh.is_none() {
                skipped.push(SkippedHost {
                    name: t.name.clone(),
                    reason: "no ssh destination in the inventory (`ssh = \"user@host\"`)"
                        .to_owned(),
                });
            }
            t.ssh.is_some()
        })
        .collect()
}

/// Hosts by the value of `label`, in inventory order; hosts without it skipped.
fn groups<'a>(
    hosts: &[&'a Target],
    label: &str,
    skipped: &mut Vec<SkippedHost>,
) -> BTreeMap<String, Vec<&'a Target>> {
    let mut groups: BTreeMap<String, Vec<&Target>> = BTreeMap::new();
    for host in hosts {
        match host.label(label) {
            Some(value) => groups.entry(value.to_owned()).or_default().push(host),
            None => skipped.push(SkippedHost {
                name: host.name.clone(),
                reason: format!("no label {label:?}"),
            }),
        }
    }
    groups
}

/// Every two of `hosts`, in order.
fn all_pairs(hosts: &[&Target]) -> Vec<(String, String)> {
    let mut pairs = Vec::new();
    for (i, a) in hosts.iter().enumerate() {
        for b in &hosts[i + 1..] {
            pairs.push((a.name.clone(), b.name.clone()));
        }
    }
    pairs
}

/// The unordered pairs of the pattern, and the hosts it left out.
fn pairs_of(
    hosts: &[&Target],
    pattern: &PairPattern,
    skipped: &mut Vec<SkippedHost>,
) -> Vec<(String, String)> {
    let position: BTreeMap<&str, usize> = hosts
        .iter()
        .enumerate()
        .map(|(i, t)| (t.name.as_str(), i))
        .collect();
    let mut pairs = match pattern {
        PairPattern::Ring => match hosts.len() {
            0 | 1 => Vec::new(),
            2 => vec![(hosts[0].name.clone(), hosts[1].name.clone())],
            n => (0..n)
                .map(|i| (hosts[i].name.clone(), hosts[(i + 1) % n].name.clone()))
                .collect(),
        },
        PairPattern::AllPairs => all_pairs(hosts),
        PairPattern::Within(label) => {
            let mut pairs = Vec::new();
            for (value, members) in groups(hosts, label, skipped) {
                if members.len() < 2 {
                    skipped.push(SkippedHost {
                        name: members[0].name.clone(),
                        reason: format!(
                            "the only host with {label}={value}: nothing to pair it with"
                        ),
                    });
                }
                pairs.extend(all_pairs(&members));
            }
            pairs
        }
        PairPattern::Across(label) => {
            let groups = groups(hosts, label, skipped);
            let members: Vec<(&str, &Target)> = groups
                .iter()
                .flat_map(|(v, m)| m.iter().map(move |t| (v.as_str(), *t)))
                .collect();
            if groups.len() == 1 {
                for (value, host) in &members {
                    skipped.push(SkippedHost {
                        name: host.name.clone(),
                        reason: format!("every host has {label}={value}: no other group"),
                    });
                }
            }
            let mut pairs = Vec::new();
            for (i, (va, a)) in members.iter().enumerate() {
                for (vb, b) in &members[i + 1..] {
                    if va != vb {
                        pairs.push((a.name.clone(), b.name.clone()));
                    }
                }
            }
            pairs
        }
    };
    // The first host of a pair is the one earlier in the inventory; pairs in that order.
    for pair in &mut pairs {
        if position[pair.0.as_str()] > position[pair.1.as_str()] {
            std::mem::swap(&mut pair.0, &mut pair.1);
        }
    }
    pairs.sort_by_key(|(a, b)| (position[a.as_str()], position[b.as_str()]));
    if matches!(pattern, PairPattern::Ring | PairPattern::AllPairs) && hosts.len() == 1 {
        skipped.push(SkippedHost {
            name: hosts[0].name.clone(),
            reason: "no other host with ssh to pair it with".to_owned(),
        });
    }
    pairs
}

/// Both directions of every pair in rounds: first fit, in pair order, so that no host is
/// in two runs of one round and no round has more than `parallel` runs.
fn schedule(pairs: &[(String, String)], parallel: usize) -> Vec<Vec<PlannedRun>> {
    let mut left: Vec<(String, String, Direction)> = pairs
        .iter()
        .flat_map(|(a, b)| {
            [
                (a.clone(), b.clone(), Direction::Forward),
                (b.clone(), a.clone(), Direction::Reverse),
            ]
        })
        .collect();
    let mut rounds = Vec::new();
    while !left.is_empty() {
        let number = rounds.len() + 1;
        let mut busy: BTreeSet<String> = BTreeSet::new();
        let mut round = Vec::new();
        left.retain(|(client, server, direction)| {
            let fits = round.len() < parallel && !busy.contains(client) && !busy.contains(server);
            if fits {
                busy.insert(client.clone());
                busy.insert(server.clone());
                round.push(PlannedRun {
                    round: number,
                    client: client.clone(),
                    server: server.clone(),
                    direction: *direction,
                });
            }
            !fits
        });
        rounds.push(round);
    }
    rounds
}

/// The plan for `targets` (already selected) with `pattern`, at most `parallel` runs at
/// once.
pub fn plan(
    targets: &[Target],
    pattern: &PairPattern,
    parallel: usize,
) -> Result<PairPlan, PlanError> {
    if parallel == 0 {
        return Err(PlanError::NoParallelism);
    }
    let mut seen = BTreeSet::new();
    if let Some(twice) = targets.iter().find(|t| !seen.insert(t.name.as_str())) {
        return Err(PlanError::Duplicate(twice.name.clone()));
    }
    let mut skipped = Vec::new();
    let hosts = with_ssh(targets, &mut skipped);
    let pairs = pairs_of(&hosts, pattern, &mut skipped);
    // Skipped in inventory order, as the report lists hosts.
    let order: BTreeMap<&str, usize> = targets
        .iter()
        .enumerate()
        .map(|(i, t)| (t.name.as_str(), i))
        .collect();
    skipped.sort_by_key(|s| order.get(s.name.as_str()).copied());
    if pairs.is_empty() {
        return Err(PlanError::NothingToTest {
            pattern: pattern.to_string(),
            skipped,
        });
    }
    let rounds = schedule(&pairs, parallel);
    Ok(PairPlan {
        pattern: pattern.clone(),
        pairs,
        rounds,
        skipped,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn host(name: &str, labels: &[(&str, &str)]) -> Target {
        let mut t = Target::new(name, "unix:/run/x.sock".parse().expect("endpoint"));
        t.ssh = Some(format!("root@{name}"));
        t.labels = labels
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        t
    }

    fn hosts(n: usize) -> Vec<Target> {
        (1..=n).map(|i| host(&format!("gpu-{i:02}"), &[])).collect()
    }

    fn pair(a: &str, b: &str) -> (String, String) {
        (a.to_owned(), b.to_owned())
    }

    /// Every round has each host at most once and at most `parallel` runs; every pair is
    /// run both ways exactly once.
    fn assert_well_scheduled(plan: &PairPlan, parallel: usize) {
        for round in &plan.rounds {
            assert!(!round.is_empty() && round.len() <= parallel, "{round:?}");
            let mut busy = BTreeSet::new();
            for run in round {
                assert!(
                    busy.insert(&run.client),
                    "{} twice in {round:?}",
                    run.client
                );
                assert!(
                    busy.insert(&run.server),
                    "{} twice in {round:?}",
                    run.server
                );
            }
        }
        let mut directed: Vec<(String, String)> = plan
            .runs()
            .map(|r| (r.client.clone(), r.server.clone()))
            .collect();
        directed.sort();
        let mut want: Vec<(String, String)> = plan
            .pairs
            .iter()
            .flat_map(|(a, b)| [pair(a, b), pair(b, a)])
            .collect();
        want.sort();
        assert_eq!(directed, want, "both directions of every pair, once");
        for run in plan.runs() {
            let forward = plan.pairs.contains(&pair(&run.client, &run.server));
            assert_eq!(run.direction == Direction::Forward, forward, "{run:?}");
        }
    }

    #[test]
    fn a_ring_pairs_each_host_with_the_next_and_closes() {
        let plan = plan(&hosts(4), &PairPattern::Ring, 128).expect("plan");
        assert_eq!(
            plan.pairs,
            [
                pair("gpu-01", "gpu-02"),
                pair("gpu-01", "gpu-04"),
                pair("gpu-02", "gpu-03"),
                pair("gpu-03", "gpu-04"),
            ]
        );
        assert_well_scheduled(&plan, 128);
        // Each host is in 4 runs (2 pairs x 2 directions): 4 rounds is the least possible.
        assert_eq!(plan.rounds.len(), 4);
        assert!(plan.skipped.is_empty());
    }

    #[test]
    fn a_ring_of_two_is_one_pair_not_two() {
        let plan = plan(&hosts(2), &PairPattern::Ring, 128).expect("plan");
        assert_eq!(plan.pairs, [pair("gpu-01", "gpu-02")]);
        assert_eq!(plan.rounds.len(), 2);
        assert_well_scheduled(&plan, 128);
    }

    #[test]
    fn all_pairs_covers_every_two_hosts_within_the_parallel_bound() {
        let targets = hosts(6);
        for parallel in [1, 2, 128] {
            let plan = plan(&targets, &PairPattern::AllPairs, parallel).expect("plan");
            assert_eq!(plan.pairs.len(), 15);
            assert_well_scheduled(&plan, parallel);
        }
        let serial = plan(&targets, &PairPattern::AllPairs, 1).expect("plan");
        assert_eq!(serial.rounds.len(), 30, "one run per round");
    }

    #[test]
    fn within_a_label_pairs_only_same_group_hosts_and_names_the_lonely_ones() {
        let targets = vec![
            host("a1", &[("rail", "0")]),
            host("b1", &[("rail", "1")]),
            host("a2", &[("rail", "0")]),
            host("b2", &[("rail", "1")]),
            host("c1", &[("rail", "2")]),
            host("x", &[]),
        ];
        let plan = plan(&targets, &PairPattern::Within("rail".into()), 128).expect("plan");
        assert_eq!(plan.pairs, [pair("a1", "a2"), pair("b1", "b2")]);
        assert_well_scheduled(&plan, 128);
        // Disjoint pairs run together: two rounds (forward, then reverse).
        assert_eq!(plan.rounds.len(), 2);
        let skipped: Vec<(&str, &str)> = plan
            .skipped
            .iter()
            .map(|s| (s.name.as_str(), s.reason.as_str()))
            .collect();
        assert_eq!(
            skipped,
            [
                ("c1", "the only host with rail=2: nothing to pair it with"),
                ("x", "no label \"rail\""),
            ]
        );
    }

    #[test]
    fn across_a_label_pairs_only_hosts_of_different_groups() {
        let targets = vec![
            host("a1", &[("rack", "r1")]),
            host("a2", &[("rack", "r1")]),
            host("b1", &[("rack", "r2")]),
        ];
        let plan = plan(&targets, &PairPattern::Across("rack".into()), 128).expect("plan");
        assert_eq!(plan.pairs, [pair("a1", "b1"), pair("a2", "b1")]);
        assert_well_scheduled(&plan, 128);
        let same = vec![host("a1", &[("rack", "r1")]), host("a2", &[("rack", "r1")])];
        let err = super::plan(&same, &PairPattern::Across("rack".into()), 128)
            .expect_err("one group only");
        assert!(
            err.to_string()
                .contains("a1 (every host has rack=r1: no other group)"),
            "{err}"
        );
    }

    #[test]
    fn hosts_without_ssh_are_skipped_with_the_reason_not_dropped() {
        let mut targets = hosts(3);
        targets[1].ssh = None;
        let plan = plan(&targets, &PairPattern::Ring, 128).expect("plan");
        assert_eq!(plan.pairs, [pair("gpu-01", "gpu-03")]);
        assert_eq!(plan.skipped.len(), 1);
        assert_eq!(plan.skipped[0].name, "gpu-02");
        assert!(plan.skipped[0].reason.contains("no ssh destination"));
        // With one host left there is nothing to test, and the error says why per host.
        targets[2].ssh = None;
        let err = super::plan(&targets, &PairPattern::AllPairs, 128).expect_err("one host");
        let text = err.to_string();
        assert!(text.contains("gpu-01 (no other host with ssh"), "{text}");
        assert!(text.contains("gpu-02 (no ssh destination"), "{text}");
    }

    #[test]
    fn duplicate_names_and_no_parallelism_are_refused() {
        let mut targets = hosts(2);
        targets[1].name = "gpu-01".into();
        assert_eq!(
            plan(&targets, &PairPattern::Ring, 4),
            Err(PlanError::Duplicate("gpu-01".into()))
        );
        assert_eq!(
            plan(&hosts(2), &PairPattern::Ring, 0),
            Err(PlanError::NoParallelism)
        );
    }
}
