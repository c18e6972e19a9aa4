//! Running the plan: each host's port read once over ssh, then round by round every run of
//! the round at once, each as `dpuctl roce perf` on its client host over ssh
//! ([`super::remote_perf`]), judged ([`super::judge`]) and concluded
//! ([`super::report`]). Progress goes to the caller's [`Observer`] as [`PairsEvent`]s;
//! [`Cancel`] stops the remote commands and every run not started, and the report keeps
//! what finished.

use std::collections::BTreeMap;
use std::sync::mpsc;
use std::time::Duration;

use super::host_port::{host_port, listing_command, HostPort};
use super::judge::{judge, LineRate, Measurement};
use super::params::{check_targets, planned, PairsError, PairsParams, PORT_ROTATION};
use super::plan::{PairPlan, PlannedRun};
use super::remote_perf::{self, PerfCommand, RemoteRun};
use super::report::{HostReport, PairRun, PairsReport, PairsSettings};
use crate::fleet::target::Target;
use crate::observe::Observer;
use crate::remote::watched::{Cancel, Ended, RemoteOutput};
use crate::roce::perf::{PathVerdict, PerfTest};

/// What [`run`] tells its caller as it goes.
#[derive(Debug)]
pub enum PairsEvent<'a> {
    /// A host's port was read (or could not be).
    Probed {
        /// The host.
        host: &'a str,
        /// Its port, or why it cannot be used.
        port: Result<&'a HostPort, &'a str>,
    },
    /// A round starts.
    RoundStarted {
        /// 1-based.
        round: usize,
        /// Rounds in the plan.
        rounds: usize,
        /// Its runs.
        runs: &'a [PlannedRun],
    },
    /// A run has ended.
    RunDone(&'a PairRun),
}

/// The last lines of a command's stderr, for a message.
fn tail(text: &str) -> String {
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    lines[lines.len().saturating_sub(4)..].join(" | ")
}

/// Reads `target`'s RDMA port and rate over ssh; the error does not repeat its name.
fn probe(target: &Target, params: &PairsParams, cancel: &Cancel) -> Result<HostPort, String> {
    let ssh = target.ssh.as_deref().unwrap_or_default();
    let out = params
        .hop
        .run_watched(ssh, &listing_command(), params.probe_timeout, cancel)
        .map_err(|e| e.to_string())?;
    match out.ended {
        Ended::Exited(Some(0)) => {
            // The port's errors name the host first; every caller does that already.
            host_port(&out.stdout, target.interface.as_deref(), &target.name).map_err(|e| {
                e.strip_prefix(&format!("{}: ", target.name))
                    .map_or(e.clone(), str::to_owned)
            })
        }
        Ended::Exited(code) => Err(format!(
            "reading its RDMA ports over ssh {ssh} failed (exit {}): {}",
            code.map_or_else(|| "by a signal".to_owned(), |c| c.to_string()),
            tail(&out.stderr)
        )),
        Ended::TimedOut => Err(format!(
            "no answer over ssh {ssh} within {} s",
            params.probe_timeout.as_secs()
        )),
        Ended::Cancelled => Err("cancelled".to_owned()),
    }
}

/// Every planned host's port, `parallel` at a time, each told as it arrives.
fn probe_all(
    hosts: &[&Target],
    params: &PairsParams,
    cancel: &Cancel,
    observer: &mut dyn for<'a> Observer<PairsEvent<'a>>,
) -> BTreeMap<String, Result<HostPort, String>> {
    let mut ports = BTreeMap::new();
    for chunk in hosts.chunks(params.parallel) {
        let (tx, rx) = mpsc::channel();
        std::thread::scope(|s| {
            for target in chunk {
                let tx = tx.clone();
                s.spawn(move || {
                    let _ = tx.send((target.name.clone(), probe(target, params, cancel)));
                });
            }
            drop(tx);
            for (name, port) in rx {
                observer.event(&PairsEvent::Probed {
                    host: &name,
                    port: port.as_ref().map_err(String::as_str),
                });
                ports.insert(name, port);
            }
        });
    }
    ports
}

/// The rate a run between the two ports is held to.
fn line_rate(
    params: &PairsParams,
    (client, client_port): (&str, &HostPort),
    (server, server_port): (&str, &HostPort),
) -> Option<LineRate> {
    if let Some(gbps) = params.line_rate_gbps {
        return Some(LineRate {
            gbps,
            source: "--line-rate-gbps".to_owned(),
        });
    }
    let (c, s) = (client_port.rate.as_ref()?, server_port.rate.as_ref()?);
    let port =
        |host: &str, p: &HostPort| format!("{host} {}/{}", p.endpoint.ibdev, p.endpoint.port);
    let (gbps, source) = if c.gbps == s.gbps {
        (
            c.gbps,
            format!(
                "both ports' sysfs rate: {} and {} \"{}\"",
                port(client, client_port),
                port(server, server_port),
                c.text
            ),
        )
    } else {
        let (host, p, rate) = if s.gbps < c.gbps {
            (server, server_port, s)
        } else {
            (client, client_port, c)
        };
        (
            rate.gbps,
            format!(
                "the lower of the two ports' sysfs rate: {} \"{}\"",
                port(host, p),
                rate.text
            ),
        )
    };
    Some(LineRate { gbps, source })
}

/// A row for every test and size of a run that produced no measurement.
fn failed_rows(run: &PlannedRun, params: &PairsParams, error: &str) -> Vec<PairRun> {
    let mut rows = Vec::new();
    for test in &params.tests {
        for &size in &params.sizes {
            rows.push(row(
                run,
                *test,
                size,
                None,
                None,
                Some(error.to_owned()),
                params,
            ));
        }
    }
    rows
}

/// One row, judged.
fn row(
    run: &PlannedRun,
    test: PerfTest,
    size: u64,
    remote: Option<&RemoteRun>,
    line_rate: Option<LineRate>,
    error: Option<String>,
    params: &PairsParams,
) -> PairRun {
    let error = error.or_else(|| remote.and_then(|r| r.error.clone()));
    let path = remote.map_or(PathVerdict::Unknown, |r| r.rdma.path());
    let m = Measurement {
        bw_gbps: remote.and_then(|r| r.bw_gbps),
        path,
        counters_inconclusive: remote.and_then(|r| r.rdma.inconclusive.as_deref()),
        packets_delta: remote.and_then(|r| r.rdma.packets_delta),
        payload_packets: remote.map_or(0, |r| r.rdma.payload_packets),
        error: error.as_deref(),
    };
    let j = judge(&m, line_rate.as_ref(), params.line_rate_percent);
    PairRun {
        round: run.round,
        from: run.client.clone(),
        to: run.server.clone(),
        direction: run.direction,
        test: test.name().to_owned(),
        size,
        bw_gbps: m.bw_gbps,
        line_rate,
        percent_of_line_rate: j.percent_of_line_rate,
        path,
        counter_source: remote.map(|r| r.rdma.source.clone()),
        packets_delta: m.packets_delta,
        payload_packets: remote.map(|r| r.rdma.payload_packets),
        counters_inconclusive: m.counters_inconclusive.map(str::to_owned),
        error,
        verdict: j.verdict,
        problems: j.problems,
        reasons: j.reasons,
    }
}

/// The rows of a finished remote `roce perf`.
fn rows_from(
    run: &PlannedRun,
    out: &RemoteOutput,
    code: Option<i32>,
    rate: Option<LineRate>,
    params: &PairsParams,
) -> Vec<PairRun> {
    let sweep = match remote_perf::parse(&out.stdout) {
        Ok(sweep) => sweep,
        Err(e) => {
            let why = match code {
                Some(255) => format!("ssh to {} failed: {}", run.client, tail(&out.stderr)),
                Some(127) => format!(
                    "{} is not installed on {} (--dpuctl PATH names it): {}",
                    params.dpuctl,
                    run.client,
                    tail(&out.stderr)
                ),
                _ => format!(
                    "`dpuctl roce perf` on {} exited {}: {} ({e})",
                    run.client,
                    code.map_or_else(|| "by a signal".to_owned(), |c| c.to_string()),
                    tail(&out.stderr)
                ),
            };
            return failed_rows(run, params, &why);
        }
    };
    let mut rows = Vec::new();
    for test in &params.tests {
        for &size in &params.sizes {
            let remote = sweep
                .runs
                .iter()
                .find(|r| PerfTest::parse(&r.test) == Some(*test) && r.size == size);
            let missing = remote.is_none().then(|| {
                format!(
                    "the report from {} has no {} {size} B run",
                    run.client,
                    test.name()
                )
            });
            rows.push(row(run, *test, size, remote, rate.clone(), missing, params));
        }
    }
    rows
}

/// One planned run; None when it was cancelled before it finished.
fn run_one(
    run: &PlannedRun,
    targets: &BTreeMap<&str, &Target>,
    ports: &BTreeMap<String, Result<HostPort, String>>,
    params: &PairsParams,
    cancel: &Cancel,
) -> Option<Vec<PairRun>> {
    let port = |host: &str| -> Result<&HostPort, String> {
        match ports.get(host) {
            Some(Ok(p)) => Ok(p),
            Some(Err(e)) => Err(format!("{host} cannot be used: {e}")),
            None => Err(format!("{host} was not probed")),
        }
    };
    let (client, server) = match (port(&run.client), port(&run.server)) {
        (Ok(c), Ok(s)) => (c, s),
        (Err(e), _) | (_, Err(e)) => return Some(failed_rows(run, params, &e)),
    };
    let (client_t, server_t) = (targets[run.client.as_str()], targets[run.server.as_str()]);
    let server_ssh = server_t.ssh.as_deref().unwrap_or_default();
    let rotation = u16::try_from((run.round - 1) % usize::from(PORT_ROTATION)).unwrap_or(0);
    let stride = u16::try_from(params.stride()).unwrap_or(u16::MAX);
    let command = PerfCommand {
        dpuctl: &params.dpuctl,
        tests: &params.tests,
        sizes: &params.sizes,
        iterations: params.iterations,
        run_timeout_s: params.run_timeout_s,
        base_port: params
            .base_port
            .saturating_add(rotation.saturating_mul(stride)),
    };
    let words = command.words(client, server_ssh, server);
    // Every perftest run may take its limit twice (roce perf retries a broken clock once),
    // plus the endpoints' resolution.
    let limit = Duration::from_secs(
        params
            .run_timeout_s
            .saturating_mul(2 * u64::from(params.stride()))
            .saturating_add(120),
    );
    let rate = line_rate(params, (&run.client, client), (&run.server, server));
    let ssh = client_t.ssh.as_deref().unwrap_or_default();
    let out = match params.hop.run_watched(ssh, &words, limit, cancel) {
        Ok(out) => out,
        Err(e) => return Some(failed_rows(run, params, &e.to_string())),
    };
    match out.ended {
        Ended::Cancelled => None,
        Ended::TimedOut => Some(failed_rows(
            run,
            params,
            &format!(
                "`dpuctl roce perf` on {} did not finish within {} s",
                run.client,
                limit.as_secs()
            ),
        )),
        Ended::Exited(code) => Some(rows_from(run, &out, code, rate, params)),
    }
}

/// Runs `plan` over `targets` (the same list the plan was made from), telling `observer`
/// each port read, each round started and each run ended.
pub fn run(
    targets: &[Target],
    plan: &PairPlan,
    params: &PairsParams,
    cancel: &Cancel,
    observer: &mut dyn for<'a> Observer<PairsEvent<'a>>,
) -> Result<PairsReport, PairsError> {
    params.validate()?;
    check_targets(targets, plan)?;
    let hosts = planned(targets, plan);
    let by_name: BTreeMap<&str, &Target> = hosts.iter().map(|t| (t.name.as_str(), *t)).collect();
    let ports = probe_all(&hosts, params, cancel, observer);
    let mut runs = Vec::new();
    let mut not_run = Vec::new();
    for (i, round) in plan.rounds.iter().enumerate() {
        if cancel.is_cancelled() {
            not_run.extend(round.iter().cloned());
            continue;
        }
        observer.event(&PairsEvent::RoundStarted {
            round: i + 1,
            rounds: plan.rounds.len(),
            runs: round,
        });
        let (tx, rx) = mpsc::channel();
        let mut done: Vec<(usize, Vec<PairRun>)> = Vec::new();
        std::thread::scope(|s| {
            for (index, run) in round.iter().enumerate() {
                let tx = tx.clone();
                let (by_name, ports) = (&by_name, &ports);
                s.spawn(move || {
                    let _ = tx.send((index, run_one(run, by_name, ports, params, cancel)));
                });
            }
            drop(tx);
            for (index, rows) in rx {
                match rows {
                    Some(rows) => {
                        for row in &rows {
                            observer.event(&PairsEvent::RunDone(row));
                        }
                        done.push((index, rows));
                    }
                    None => not_run.push(round[index].clone()),
                }
            }
        });
        done.sort_by_key(|(index, _)| *index);
        runs.extend(done.into_iter().flat_map(|(_, rows)| rows));
    }
    let host_reports = hosts
        .iter()
        .map(|t| {
            let port = ports.get(&t.name);
            HostReport {
                name: t.name.clone(),
                ssh: t.ssh.clone().unwrap_or_default(),
                interface: t.interface.clone(),
                port: port.and_then(|p| p.as_ref().ok()).cloned(),
                error: port.and_then(|p| p.as_ref().err()).cloned(),
            }
        })
        .collect();
    let settings = PairsSettings {
        pattern: plan.pattern.to_string(),
        line_rate_percent: params.line_rate_percent,
        line_rate_gbps: params.line_rate_gbps,
        tests: params.tests.iter().map(|t| t.name().to_owned()).collect(),
        sizes: params.sizes.clone(),
        iterations: params.iterations,
    };
    Ok(PairsReport::conclude(
        settings,
        plan,
        host_reports,
        runs,
        not_run,
        cancel.is_cancelled(),
    ))
}

#[cfg(test)]
mod tests {
    use super::super::params::tests::params;
    use super::*;

    #[test]
    fn the_line_rate_is_the_lower_port_or_the_flag_and_unknown_without_both() {
        use super::super::host_port::PortRate;
        use crate::roce::endpoint::Endpoint;
        let port = |gbps: Option<f64>| HostPort {
            endpoint: Endpoint {
                ibdev: "mlx5_0".into(),
                port: 1,
                gid_index: 3,
                ipv4: None,
                netdev: None,
            },
            rate: gbps.map(|g| PortRate {
                gbps: g,
                text: format!("{g} Gb/sec (4X)"),
            }),
        };
        let (fast, slow) = (port(Some(400.0)), port(Some(100.0)));
        let rate = line_rate(&params(), ("a", &fast), ("b", &slow)).expect("rate");
        assert_eq!(rate.gbps, 100.0);
        assert!(
            rate.source.contains("b mlx5_0/1 \"100 Gb/sec (4X)\""),
            "{}",
            rate.source
        );
        let tie = line_rate(&params(), ("a", &slow), ("b", &slow)).expect("rate");
        assert_eq!(tie.gbps, 100.0);
        assert!(
            tie.source
                .starts_with("both ports' sysfs rate: a mlx5_0/1 and b"),
            "{}",
            tie.source
        );
        assert_eq!(line_rate(&params(), ("a", &fast), ("b", &port(None))), None);
        let mut p = params();
        p.line_rate_gbps = Some(25.0);
        let given = line_rate(&p, ("a", &fast), ("b", &port(None))).expect("flag");
        assert_eq!(
            (given.gbps, given.source.as_str()),
            (25.0, "--line-rate-gbps")
        );
    }
}
