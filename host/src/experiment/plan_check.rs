//! The rules of a plan: every field checked at the edge, every problem collected (one run
//! names everything wrong), and a [`Plan`] made only when there is none.
//!
//! The `[knob]` table is `plan_check_knob.rs`'s. Names follow the rules the rest of the
//! project enforces, so a plan is refused here for exactly what the command would refuse later: interface names by
//! [`dpu_proto::names::check_ifname`] (the one rule, shared with the agent), RDMA devices
//! by `Collection::RdmaDevices`, ssh peers by `roce perf`'s own rule, sizes by
//! `storage read`'s parsers.

use std::path::{Component, Path, PathBuf};

use super::design::{Direction, Order};
use super::plan::{Measurement, OutputParser, Plan, DEFAULT_TRIALS, TRIALS};
use super::plan_check_knob::knob;
use super::plan_error::PlanError;
use super::plan_file::{MeasurementFile, PlanFile};
use super::plan_problems::{extra_keys, required, Problems};
use crate::remote::ssh::valid_destination;
use crate::roce::perf::PerfTest;
use crate::storage_read::size::{parse_block_size, parse_positive_size};

/// The most argv elements a measurement command may have.
const MAX_ARGV: usize = 256;

/// Checks a parsed file and makes the plan, or returns every problem.
pub(crate) fn check(file: &PlanFile) -> Result<Plan, Vec<PlanError>> {
    let mut p = Problems::default();
    let trials = p.take("trials", trials(file.trials));
    let order = p.take("order", order(file.order.as_deref()));
    let measurement = measurement(&file.measurement, &mut p);
    let knob = knob(&file.knob, &mut p);
    let better = better(file.metric.better.as_deref(), measurement.as_ref(), &mut p);
    match (measurement, knob, trials, order, better) {
        (Some(measurement), Some(knob), Some(trials), Some(order), Some(better))
            if p.0.is_empty() =>
        {
            Ok(Plan {
                measurement,
                knob,
                trials,
                order,
                better,
            })
        }
        _ => Err(p.0),
    }
}

/// `trials`: 3..=50, 5 when absent.
fn trials(value: Option<i64>) -> Result<u32, String> {
    let Some(value) = value else {
        return Ok(DEFAULT_TRIALS);
    };
    u32::try_from(value)
        .ok()
        .filter(|n| TRIALS.contains(n))
        .ok_or_else(|| {
            format!(
                "is {value}; expected {} to {} trials per phase (fewer give no spread to \
                 judge by)",
                TRIALS.start(),
                TRIALS.end()
            )
        })
}

/// `order`: `ABA` (the default) or `ABABA`.
fn order(value: Option<&str>) -> Result<Order, String> {
    match value {
        None => Ok(Order::default()),
        Some(text) => {
            Order::parse(text).ok_or_else(|| format!("is {text:?}; expected \"ABA\" or \"ABABA\""))
        }
    }
}

/// `metric.better`: required unless the measurement says it, and never contradicting it.
fn better(
    value: Option<&str>,
    measurement: Option<&Measurement>,
    p: &mut Problems,
) -> Option<Direction> {
    const FIELD: &str = "metric.better";
    let given = match value {
        None => None,
        Some(text) => Some(
            p.take(
                FIELD,
                Direction::parse(text)
                    .ok_or_else(|| format!("is {text:?}; expected \"higher\" or \"lower\"")),
            )?,
        ),
    };
    let implied = match measurement? {
        Measurement::RocePerf { test, .. } => Some((
            if test.is_bandwidth() {
                Direction::Higher
            } else {
                Direction::Lower
            },
            format!(
                "{} measures {}",
                test.name(),
                if test.is_bandwidth() {
                    "bandwidth"
                } else {
                    "latency"
                }
            ),
        )),
        Measurement::StorageRead { .. } => Some((
            Direction::Higher,
            "storage-read measures read bandwidth".to_owned(),
        )),
        Measurement::NcclTests { .. } | Measurement::Command { .. } => None,
    };
    match (given, implied) {
        (Some(given), Some((implied, why))) if given != implied => {
            p.push(
                FIELD,
                format!(
                    "is {:?}, but {why}, which is better {}",
                    given.name(),
                    implied.name()
                ),
            );
            None
        }
        (Some(given), _) => Some(given),
        (None, Some((implied, _))) => Some(implied),
        (None, None) => {
            p.push(
                FIELD,
                "missing; this measurement's metric could be better higher (bandwidth) or \
                 lower (time): say which with better = \"higher\" or \"lower\"",
            );
            None
        }
    }
}

/// `[measurement]`.
fn measurement(m: &MeasurementFile, p: &mut Problems) -> Option<Measurement> {
    let given = [
        ("peer", m.peer.is_some()),
        ("test", m.test.is_some()),
        ("size", m.size.is_some()),
        ("device", m.device.is_some()),
        ("bs", m.bs.is_some()),
        ("command", m.command.is_some()),
        ("argv", m.argv.is_some()),
        ("parser", m.parser.is_some()),
        ("iterations", m.iterations.is_some()),
        ("peer_address", m.peer_address.is_some()),
    ];
    let kind = m.kind.as_str();
    let takes: &[&str] = match kind {
        "roce-perf" => &["peer", "test", "size", "iterations", "peer_address"],
        "storage-read" => &["device", "size", "bs"],
        "nccl-tests" => &["command"],
        "command" => &["argv", "parser"],
        other => {
            p.push(
                "measurement.kind",
                format!(
                    "is {other:?}; expected one of roce-perf, storage-read, nccl-tests, command"
                ),
            );
            return None;
        }
    };
    extra_keys("measurement", kind, &given, takes, p);
    let what = format!("{kind} measurement");
    match kind {
        "roce-perf" => {
            let peer = required("measurement.peer", &what, m.peer.as_deref(), p)
                .and_then(|peer| p.take("measurement.peer", ssh_peer(peer)));
            let test = required("measurement.test", &what, m.test.as_deref(), p)
                .and_then(|test| p.take("measurement.test", perf_test(test)));
            let size = required("measurement.size", &what, m.size.as_ref(), p)
                .and_then(|size| p.take("measurement.size", size_value(size, parse_positive_size)));
            // Each checked (every problem reported) before any is given up on.
            let iterations = m
                .iterations
                .map(|n| p.take("measurement.iterations", perf_iterations(n)));
            let peer_address = m.peer_address.as_deref().map(|text| {
                p.take(
                    "measurement.peer_address",
                    text.parse::<std::net::IpAddr>()
                        .map_err(|_| format!("is {text:?}; expected an IPv4 or IPv6 address")),
                )
            });
            if matches!(iterations, Some(None)) || matches!(peer_address, Some(None)) {
                return None;
            }
            Some(Measurement::RocePerf {
                peer: peer?,
                test: test?,
                size: size?,
                iterations: iterations.flatten(),
                peer_address: peer_address.flatten(),
            })
        }
        "storage-read" => {
            let device = required("measurement.device", &what, m.device.as_deref(), p)
                .and_then(|device| p.take("measurement.device", device_path(device)));
            let size = required("measurement.size", &what, m.size.as_ref(), p)
                .and_then(|size| p.take("measurement.size", size_value(size, parse_positive_size)));
            let bs = required("measurement.bs", &what, m.bs.as_ref(), p)
                .and_then(|bs| p.take("measurement.bs", size_value(bs, parse_block_size)));
            let (size, bs) = (size?, bs?);
            if size < bs {
                p.push(
                    "measurement.size",
                    format!("is {size} bytes, less than one block (bs = {bs})"),
                );
                return None;
            }
            Some(Measurement::StorageRead {
                device: device?,
                size,
                bs,
            })
        }
        "nccl-tests" => {
            let command = required("measurement.command", &what, m.command.as_ref(), p)
                .and_then(|argv| p.take("measurement.command", argv_vector(argv)))?;
            Some(Measurement::NcclTests { command })
        }
        _ => {
            let argv = required("measurement.argv", &what, m.argv.as_ref(), p)
                .and_then(|argv| p.take("measurement.argv", argv_vector(argv)));
            let parser = required("measurement.parser", &what, m.parser.as_deref(), p)
                .and_then(|name| p.take("measurement.parser", parser(name)));
            Some(Measurement::Command {
                argv: argv?,
                parser: parser?,
            })
        }
    }
}

/// A size given as a TOML integer (bytes) or a string with a suffix.
fn size_value(value: &toml::Value, parse: fn(&str) -> Result<u64, String>) -> Result<u64, String> {
    match value {
        toml::Value::Integer(n) if *n >= 0 => parse(&n.to_string()),
        toml::Value::Integer(n) => Err(format!("is {n}; expected a positive size")),
        toml::Value::String(s) => parse(s),
        other => Err(format!(
            "is a {}; expected a size such as 65536 or \"64k\"",
            other.type_str()
        )),
    }
}

/// An ssh destination by `roce perf`'s rule.
fn ssh_peer(peer: &str) -> Result<String, String> {
    if valid_destination(peer) {
        Ok(peer.to_owned())
    } else {
        Err(format!(
            "{peer:?} is not an ssh destination: expected [user@]host with letters, digits \
             and . - _ : [ ], not starting with '-'"
        ))
    }
}

/// perftest `-n` by `roce perf`'s rule (`--iterations`).
fn perf_iterations(n: i64) -> Result<u64, String> {
    u64::try_from(n)
        .ok()
        .filter(|n| (1..=100_000_000).contains(n))
        .ok_or_else(|| format!("is {n}; expected 1 to 100000000 messages"))
}

/// A `roce perf` test name.
fn perf_test(name: &str) -> Result<PerfTest, String> {
    PerfTest::parse(name).ok_or_else(|| {
        let names: Vec<&str> = PerfTest::ALL.iter().map(|t| t.name()).collect();
        format!("is {name:?}; expected one of {}", names.join(", "))
    })
}

/// A device path: absolute, plain (no `.` or `..`).
fn device_path(text: &str) -> Result<PathBuf, String> {
    let path = Path::new(text);
    if !path.is_absolute() {
        return Err(format!(
            "{text:?} is relative; expected an absolute path such as /dev/nvme0n1"
        ));
    }
    if path
        .components()
        .any(|c| matches!(c, Component::CurDir | Component::ParentDir))
    {
        return Err(format!(
            "{text:?} contains '.' or '..'; expected a plain absolute path"
        ));
    }
    Ok(path.to_path_buf())
}

/// A command's argv: not empty, a program first, no NUL (it cannot cross `execve`).
fn argv_vector(argv: &[String]) -> Result<Vec<String>, String> {
    match argv.first() {
        None => {
            return Err(
                "is empty; expected an argv vector such as [\"all_reduce_perf\", \"-b\", \"8\"]"
                    .to_owned(),
            )
        }
        Some(program) if program.trim().is_empty() => {
            return Err("has an empty program name as its first element".to_owned())
        }
        Some(_) => {}
    }
    if argv.len() > MAX_ARGV {
        return Err(format!("has {} elements; at most {MAX_ARGV}", argv.len()));
    }
    if let Some(index) = argv.iter().position(|arg| arg.contains('\0')) {
        return Err(format!("element {index} contains a NUL byte"));
    }
    Ok(argv.to_vec())
}

/// A parser name.
fn parser(name: &str) -> Result<OutputParser, String> {
    OutputParser::ALL
        .into_iter()
        .find(|parser| parser.name() == name)
        .ok_or_else(|| {
            let names: Vec<&str> = OutputParser::ALL.iter().map(|p| p.name()).collect();
            format!("is {name:?}; expected one of {}", names.join(", "))
        })
}
