//! The `[knob]` table of a plan: its kind, the keys that kind takes, the name it changes
//! and its two values, each checked at the edge with a problem under its field.

use dpu_proto::names::{check_ifname, Collection, NameError};

use super::plan::{Knob, PfcPriorities, RingDirection, Sysctl, SysctlValue, Values};
use super::plan_file::KnobFile;
use super::plan_problems::{extra_keys, required, Problems};

/// The longest environment value accepted: NCCL and UCX values are short words, lists
/// and numbers; a page of text is a mistake.
const MAX_ENV_VALUE: usize = 1024;

/// `[knob]`.
pub(super) fn knob(k: &KnobFile, p: &mut Problems) -> Option<Knob> {
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
        "pfc" => &["interface", "a", "b"],
        "sysctl" => &["name", "a", "b"],
        other => {
            p.push(
                "knob.kind",
                format!("is {other:?}; expected one of mtu, env, rdma-cm-tos, ring, pfc, sysctl"),
            );
            return None;
        }
    };
    extra_keys("knob", kind, &given, takes, p);
    let what = format!("{kind} knob");
    if kind == "pfc" {
        // Lists of priorities, not scalars.
        let interface = interface(k, &what, p);
        let a = p.take("knob.a", pfc_priorities(&k.a));
        let b = p.take("knob.b", pfc_priorities(&k.b));
        let values = different(a?, b?, p)?;
        return Some(Knob::Pfc {
            interface: interface?,
            values,
        });
    }
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
    different(a?, b?, p)
}

/// The two values when they differ; otherwise the problem under `knob.b`.
fn different<T: PartialEq + std::fmt::Debug>(a: T, b: T, p: &mut Problems) -> Option<Values<T>> {
    if a == b {
        p.push(
            "knob.b",
            format!("is the same as knob.a ({a:?}); an experiment needs two different values"),
        );
        return None;
    }
    Some(Values { a, b })
}

/// A `pfc` value: a TOML list of distinct priorities 0 to 7 (`[3]`, `[3, 4]`; `[]` turns
/// PFC off on every priority).
fn pfc_priorities(value: &toml::Value) -> Result<PfcPriorities, String> {
    let toml::Value::Array(items) = value else {
        return Err(format!(
            "is a {}; expected a list of priorities 0 to 7 such as [3] or [] (none)",
            value.type_str()
        ));
    };
    let mut mask = 0u8;
    for item in items {
        let priority = item.as_integer().ok_or_else(|| {
            format!(
                "holds a {}; priorities are integers 0 to 7",
                item.type_str()
            )
        })?;
        let bit = u8::try_from(priority)
            .ok()
            .filter(|p| *p < 8)
            .ok_or_else(|| format!("holds priority {priority}; expected 0 to 7"))?;
        if mask & (1 << bit) != 0 {
            return Err(format!("lists priority {bit} twice"));
        }
        mask |= 1 << bit;
    }
    Ok(PfcPriorities(mask))
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
