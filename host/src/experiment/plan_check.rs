//! The rules of a plan: every field checked at the edge, every problem collected (one run
//! names everything wrong), and a [`Plan`] made only when there is none.
//!
//! Names follow the rules the rest of the project enforces, so a plan is refused here for
//! exactly what the command would refuse later: interface names by
//! [`dpu_proto::names::check_ifname`] (the one rule, shared with the agent), RDMA devices
//! by `Collection::RdmaDevices`, ssh peers by `roce perf`'s own rule, sizes by
//! `storage read`'s parsers.

use std::path::{Component, Path, PathBuf};

use dpu_proto::names::{check_ifname, Collection, NameError};

use super::design::{Direction, Order};
use super::plan::{
    Knob, Measurement, OutputParser, Plan, RingDirection, Sysctl, SysctlValue, Values,
    DEFAULT_TRIALS, TRIALS,
};
use super::plan_error::PlanError;
use super::plan_file::{KnobFile, MeasurementFile, PlanFile};
use crate::roce::peer::valid_destination;
use crate::roce::perf::PerfTest;
use crate::storage_read::size::{parse_block_size, parse_positive_size};

/// The longest environment value accepted: NCCL and UCX values are short words, lists
/// and numbers; a page of text is a mistake.
const MAX_ENV_VALUE: usize = 1024;

/// The most argv elements a measurement command may have.
const MAX_ARGV: usize = 256;

/// Collects problems, each under its field.
#[derive(Default)]
struct Problems(Vec<PlanError>);

impl Problems {
    fn push(&mut self, field: &str, reason: impl Into<String>) {
        self.0.push(PlanError::new(field, reason));
    }

    /// The value of `result`, or None after recording its error under `field`.
    fn take<T>(&mut self, field: &str, result: Result<T, String>) -> Option<T> {
        result.map_err(|reason| self.push(field, reason)).ok()
    }
}

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

/// Records a problem for every key given that `kind` does not take.
fn extra_keys(table: &str, kind: &str, given: &[(&str, bool)], takes: &[&str], p: &mut Problems) {
    for (key, present) in given {
        if *present && !takes.contains(key) {
            p.push(
                &format!("{table}.{key}"),
                format!(
                    "is not a key of a {kind} {table} (its keys: {})",
                    takes.join(", ")
                ),
            );
        }
    }
}

/// A required key of `kind`, or None after recording that it is missing.
fn required<'v, T: ?Sized>(
    field: &str,
    kind: &str,
    value: Option<&'v T>,
    p: &mut Problems,
) -> Option<&'v T> {
    if value.is_none() {
        p.push(field, format!("missing; a {kind} needs it"));
    }
    value
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

/// `[knob]`.
fn knob(k: &KnobFile, p: &mut Problems) -> Option<Knob> {
    let given = [
        ("interface", k.interface.is_some()),
        ("name", k.name.is_some()),
        ("device", k.device.is_some()),
        ("ring", k.ring.is_some()),
    ];
    let kind = k.kind.as_str();
    let takes: &[&str] = match kind {
        "mtu" => &["interface", "a", "b"],
        "env" => &["name", "a", "b"],
        "rdma-cm-tos" => &["device", "a", "b"],
        "ring" => &["interface", "ring", "a", "b"],
        "sysctl" => &["name", "a", "b"],
        other => {
            p.push(
                "knob.kind",
                format!("is {other:?}; expected one of mtu, env, rdma-cm-tos, ring, sysctl"),
            );
            return None;
        }
    };
    extra_keys("knob", kind, &given, takes, p);
    let what = format!("{kind} knob");
    let a = p.take("knob.a", scalar(&k.a));
    let b = p.take("knob.b", scalar(&k.b));
    match kind {
        "mtu" => {
            let interface = interface(k, &what, p);
            let values = values(a, b, mtu, p)?;
            Some(Knob::Mtu {
                interface: interface?,
                values,
            })
        }
        "env" => {
            let name = required("knob.name", &what, k.name.as_deref(), p)
                .and_then(|name| p.take("knob.name", env_name(name)));
            let values = values(a, b, env_value, p)?;
            Some(Knob::Env {
                name: name?,
                values,
            })
        }
        "rdma-cm-tos" => {
            let device = required("knob.device", &what, k.device.as_deref(), p)
                .and_then(|device| p.take("knob.device", rdma_device(device)));
            let values = values(a, b, tos, p)?;
            Some(Knob::RdmaCmTos {
                device: device?,
                values,
            })
        }
        "ring" => {
            let interface = interface(k, &what, p);
            let ring = required("knob.ring", &what, k.ring.as_deref(), p)
                .and_then(|ring| p.take("knob.ring", ring_direction(ring)));
            let values = values(a, b, ring_size, p)?;
            Some(Knob::Ring {
                interface: interface?,
                ring: ring?,
                values,
            })
        }
        _ => {
            let name = required("knob.name", &what, k.name.as_deref(), p)
                .and_then(|name| p.take("knob.name", sysctl(name)));
            let name = name?;
            let values = values(a, b, |text| sysctl_value(name, text), p)?;
            Some(Knob::Sysctl { name, values })
        }
    }
}

/// `knob.interface`, required and checked.
fn interface(k: &KnobFile, what: &str, p: &mut Problems) -> Option<String> {
    required("knob.interface", what, k.interface.as_deref(), p)
        .and_then(|name| p.take("knob.interface", ifname(name)))
}

/// Both values parsed for the knob, and different.
fn values<T: PartialEq + std::fmt::Debug>(
    a: Option<String>,
    b: Option<String>,
    parse: impl Fn(&str) -> Result<T, String>,
    p: &mut Problems,
) -> Option<Values<T>> {
    let a = a.and_then(|text| p.take("knob.a", parse(&text)));
    let b = b.and_then(|text| p.take("knob.b", parse(&text)));
    let (a, b) = (a?, b?);
    if a == b {
        p.push(
            "knob.b",
            format!("is the same as knob.a ({a:?}); an experiment needs two different values"),
        );
        return None;
    }
    Some(Values { a, b })
}

/// A knob value as text: TOML integers and strings are accepted, nothing else.
fn scalar(value: &toml::Value) -> Result<String, String> {
    match value {
        toml::Value::Integer(n) => Ok(n.to_string()),
        toml::Value::String(s) => Ok(s.clone()),
        other => Err(format!(
            "is a {}; expected a number or a string",
            other.type_str()
        )),
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

/// The reason of a [`NameError`], without repeating the value the field already names.
fn name_reason(error: NameError) -> String {
    match error {
        NameError::Id { value, reason, .. } => format!("{value} {reason}"),
        other => other.to_string(),
    }
}

/// An interface name by the project's one rule.
fn ifname(name: &str) -> Result<String, String> {
    check_ifname("interface", name).map_err(name_reason)?;
    Ok(name.to_owned())
}

/// An RDMA device name by the API's rule.
fn rdma_device(name: &str) -> Result<String, String> {
    Collection::RdmaDevices
        .check_id(name)
        .map_err(name_reason)?;
    Ok(name.to_owned())
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

/// An MTU: 68 (the IPv4 minimum, RFC 791) to 65535 (the largest the kernel's u16 path
/// MTU can say).
fn mtu(text: &str) -> Result<u32, String> {
    integer(text, 68, 65_535, "an MTU")
}

/// A ToS byte, 0..=255.
fn tos(text: &str) -> Result<u8, String> {
    integer(text, 0, 255, "a ToS byte").map(|n| n as u8)
}

/// A ring size: positive; the driver's maximum is read when the knob is applied.
fn ring_size(text: &str) -> Result<u32, String> {
    integer(text, 1, u64::from(u32::MAX), "a ring size")
}

/// An integer in `min..=max`, for `what`.
fn integer(text: &str, min: u64, max: u64, what: &str) -> Result<u32, String> {
    let trimmed = text.trim();
    match trimmed.parse::<u64>() {
        Ok(n) if (min..=max).contains(&n) => Ok(n as u32),
        Ok(n) => Err(format!("is {n}; expected {what} from {min} to {max}")),
        Err(_) => Err(format!("is {text:?}; expected {what} from {min} to {max}")),
    }
}

/// `rx` or `tx`.
fn ring_direction(text: &str) -> Result<RingDirection, String> {
    match text {
        "rx" => Ok(RingDirection::Rx),
        "tx" => Ok(RingDirection::Tx),
        other => Err(format!("is {other:?}; expected \"rx\" or \"tx\"")),
    }
}

/// An environment name on the allow-list: `NCCL_` or `UCX_` and upper-case letters,
/// digits and `_` (the libraries read nothing else, so anything else is a typo or an
/// attempt to set `LD_PRELOAD`).
fn env_name(name: &str) -> Result<String, String> {
    let rest = name
        .strip_prefix("NCCL_")
        .or_else(|| name.strip_prefix("UCX_"))
        .ok_or_else(|| format!("{name:?} is not an NCCL_* or UCX_* variable"))?;
    if rest.is_empty()
        || name.len() > 64
        || !rest
            .chars()
            .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_')
    {
        return Err(format!(
            "{name:?} is not a variable name: expected NCCL_ or UCX_ then upper-case letters, \
             digits and '_', at most 64 bytes"
        ));
    }
    Ok(name.to_owned())
}

/// An environment value: not empty, no NUL, at most [`MAX_ENV_VALUE`] bytes.
fn env_value(text: &str) -> Result<String, String> {
    if text.is_empty() {
        return Err("is empty; expected the value to set".to_owned());
    }
    if text.contains('\0') {
        return Err("contains a NUL byte".to_owned());
    }
    if text.len() > MAX_ENV_VALUE {
        return Err(format!("is {} bytes; at most {MAX_ENV_VALUE}", text.len()));
    }
    Ok(text.to_owned())
}

/// A sysctl on the allow-list.
fn sysctl(name: &str) -> Result<Sysctl, String> {
    Sysctl::ALL
        .into_iter()
        .find(|s| s.name() == name)
        .ok_or_else(|| {
            let names: Vec<&str> = Sysctl::ALL.iter().map(|s| s.name()).collect();
            format!("{name:?} is not on the allow-list ({})", names.join(", "))
        })
}

/// A sysctl value: one positive integer, or for `tcp_rmem`/`tcp_wmem` three separated by
/// whitespace with min ≤ default ≤ max; each at most i32::MAX (the kernel stores an int).
fn sysctl_value(name: Sysctl, text: &str) -> Result<SysctlValue, String> {
    let what = "a positive integer";
    let numbers: Vec<u32> = text
        .split_whitespace()
        .map(|word| integer(word, 1, i32::MAX as u64, what))
        .collect::<Result<_, _>>()?;
    match (name.is_triple(), numbers.as_slice()) {
        (false, [n]) => Ok(SysctlValue::One(*n)),
        (true, [min, default, max]) if min <= default && default <= max => {
            Ok(SysctlValue::Three([*min, *default, *max]))
        }
        (true, [_, _, _]) => Err(format!(
            "is {text:?}; {} needs min <= default <= max",
            name.name()
        )),
        (true, _) => Err(format!(
            "is {text:?}; {} takes three integers \"min default max\"",
            name.name()
        )),
        (false, _) => Err(format!("is {text:?}; {} takes one integer", name.name())),
    }
}
