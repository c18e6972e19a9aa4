//! The expected firmware settings (`dpuctl check --profile FILE`): a TOML file with one
//! `[fw]` table of `PARAM = "VALUE"` or `PARAM = NUMBER` (a boolean is `"True"`/`"False"`,
//! `true`/`false` or 1/0). Read and validated before anything runs: an unknown table or
//! key, a duplicate, or a value a known parameter cannot take is an error naming the line.
//! Parameters this file does not know are accepted by shape (capitals, digits, `_`) and
//! compared as written. Example: `examples/profiles/gpu-lossless-roce.toml`.

use std::collections::BTreeMap;
use std::path::Path;

use serde::Deserialize;
use thiserror::Error;
use toml::Spanned;

use dpu_probe::fw_config::FwValue;

/// Why a profile was refused: where, and what was wrong.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error(
    "{}{}{message}",
    file.as_ref().map_or(String::new(), |f| format!("profile {f}: ")),
    line.map_or(String::new(), |l| format!("line {l}: "))
)]
pub struct ProfileError {
    /// The file, when the profile came from one.
    pub file: Option<String>,
    /// 1-based line, when the problem has one.
    pub line: Option<usize>,
    /// What was wrong, naming the key.
    pub message: String,
}

/// One expected value, normalized: `LINK_TYPE_P1 = "ETH"` is name ETH, number 2.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Expected {
    /// As written in the file (`ETH`, `48`), for messages.
    pub shown: String,
    /// The enum or boolean name, when the file gave one.
    pub name: Option<String>,
    /// The number, when the file gave one or the name is a known enum value.
    pub number: Option<u64>,
}

impl Expected {
    /// Whether a value the tool printed is this setting: by number when both have one,
    /// else by name (case-insensitive).
    pub fn matches(&self, value: &FwValue) -> bool {
        if let (Some(want), Some(have)) = (self.number, value.number) {
            return want == have;
        }
        match (&self.name, &value.name) {
            (Some(want), Some(have)) => want.eq_ignore_ascii_case(have),
            _ => self.shown.eq_ignore_ascii_case(&value.raw),
        }
    }
}

/// One `[fw]` entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProfileEntry {
    /// The parameter (`CNP_DSCP_P1`).
    pub param: String,
    /// What it must be.
    pub expected: Expected,
    /// Its line in the file.
    pub line: usize,
}

/// A loaded profile: its entries in file order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FwProfile {
    /// Every `[fw]` entry.
    pub entries: Vec<ProfileEntry>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ProfileFile {
    fw: BTreeMap<String, Spanned<toml::Value>>,
}

/// What a known parameter may be set to.
enum Domain {
    /// Enum names with their numbers.
    Names(&'static [(&'static str, u64)]),
    /// A number from 0 to the maximum.
    Range(u64),
}

const BOOL: Domain = Domain::Names(&[("False", 0), ("True", 1)]);

/// The parameters the `fw.*` checks and the shipped profile use (mstflint
/// `mlxconfig_host.db`; `docs/reference/firmware-config.md`).
fn domain(param: &str) -> Option<Domain> {
    let per_port = |base: &str| {
        param
            .strip_prefix(base)
            .is_some_and(|p| matches!(p, "_P1" | "_P2"))
    };
    Some(match param {
        "INTERNAL_CPU_MODEL" => Domain::Names(&[("SEPARATED_HOST", 0), ("EMBEDDED_CPU", 1)]),
        "INTERNAL_CPU_OFFLOAD_ENGINE" => Domain::Names(&[("ENABLED", 0), ("DISABLED", 1)]),
        "INTERNAL_CPU_PAGE_SUPPLIER"
        | "INTERNAL_CPU_ESWITCH_MANAGER"
        | "INTERNAL_CPU_IB_VPORT0" => Domain::Names(&[("ECPF", 0), ("EXT_HOST_PF", 1)]),
        "SRIOV_EN" | "ATS_ENABLED" | "NVME_EMULATION_ENABLE" => BOOL,
        "NUM_OF_VFS" | "NVME_EMULATION_NUM_PF" => Domain::Range(u64::from(u16::MAX)),
        _ if per_port("LINK_TYPE") => Domain::Names(&[("IB", 1), ("ETH", 2)]),
        _ if per_port("ROCE_CC_PRIO_MASK") => Domain::Range(255),
        _ if per_port("CNP_DSCP") => Domain::Range(63),
        _ if per_port("CNP_802P_PRIO") => Domain::Range(7),
        _ => return None,
    })
}

impl FwProfile {
    /// Reads and validates a profile file; the error names the file.
    pub fn load(path: &Path) -> Result<Self, ProfileError> {
        let file = Some(path.display().to_string());
        let text = std::fs::read_to_string(path).map_err(|e| ProfileError {
            file: file.clone(),
            line: None,
            message: format!("cannot read it: {e}"),
        })?;
        Self::parse(&text).map_err(|e| ProfileError { file, ..e })
    }

    /// Parses and validates profile text.
    pub fn parse(text: &str) -> Result<Self, ProfileError> {
        let file: ProfileFile = toml::from_str(text).map_err(|e| {
            let line = e.span().map(|s| line_of(text, s.start));
            // toml says "duplicate key" without the key: quote the line.
            let quoted = line
                .and_then(|l| text.lines().nth(l - 1))
                .map(str::trim)
                .filter(|l| !l.is_empty())
                .map_or(String::new(), |l| format!(" (`{l}`)"));
            ProfileError {
                file: None,
                line,
                message: format!("{}{quoted}", e.message().trim()),
            }
        })?;
        let mut entries = Vec::new();
        for (param, value) in file.fw {
            let line = line_of(text, value.span().start);
            let fail = |message: String| ProfileError {
                file: None,
                line: Some(line),
                message: format!("[fw] {param}: {message}"),
            };
            if !is_param_name(&param) {
                return Err(fail(
                    "not a firmware parameter name (capitals, digits and '_', as mlxconfig prints it)"
                        .to_owned(),
                ));
            }
            let expected = expected(&param, value.get_ref()).map_err(fail)?;
            entries.push(ProfileEntry {
                param,
                expected,
                line,
            });
        }
        entries.sort_by_key(|e| e.line);
        Ok(Self { entries })
    }

    /// The expected value of a parameter, if the profile names it.
    pub fn get(&self, param: &str) -> Option<&Expected> {
        self.entries
            .iter()
            .find(|e| e.param == param)
            .map(|e| &e.expected)
    }
}

fn is_param_name(name: &str) -> bool {
    name.starts_with(|c: char| c.is_ascii_uppercase())
        && name
            .chars()
            .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_')
}

fn line_of(text: &str, offset: usize) -> usize {
    text.get(..offset.min(text.len()))
        .map_or(1, |before| before.matches('\n').count() + 1)
}

/// A TOML value as an [`Expected`], held against the parameter's domain when known.
fn expected(param: &str, value: &toml::Value) -> Result<Expected, String> {
    let raw = match value {
        toml::Value::String(s) => Raw::Text(s.trim().to_owned()),
        toml::Value::Integer(n) => {
            Raw::Number(u64::try_from(*n).map_err(|_| format!("{n} is negative: give 0 or more"))?)
        }
        toml::Value::Boolean(b) => Raw::Text(if *b { "True" } else { "False" }.to_owned()),
        other => {
            return Err(format!(
                "a {} is not a value: give \"NAME\" or a number",
                other.type_str()
            ))
        }
    };
    let raw = match raw {
        Raw::Text(text) => match parse_number(&text) {
            Some(n) => Raw::Number(n),
            None if text.is_empty() => return Err("an empty value".to_owned()),
            None => Raw::Text(text),
        },
        number => number,
    };
    match (domain(param), raw) {
        (Some(Domain::Names(names)), Raw::Text(text)) => names
            .iter()
            .find(|(name, _)| name.eq_ignore_ascii_case(&text))
            .map(|(name, number)| Expected {
                shown: (*name).to_owned(),
                name: Some((*name).to_owned()),
                number: Some(*number),
            })
            .ok_or_else(|| format!("{text:?} is not one of {}", list(names))),
        (Some(Domain::Names(names)), Raw::Number(n)) => names
            .iter()
            .find(|(_, number)| *number == n)
            .map(|(name, number)| Expected {
                shown: n.to_string(),
                name: Some((*name).to_owned()),
                number: Some(*number),
            })
            .ok_or_else(|| format!("{n} is not one of {}", list(names))),
        (Some(Domain::Range(max)), Raw::Number(n)) if n <= max => Ok(Expected {
            shown: n.to_string(),
            name: None,
            number: Some(n),
        }),
        (Some(Domain::Range(max)), Raw::Number(n)) => Err(format!("{n} is out of range 0..={max}")),
        (Some(Domain::Range(max)), Raw::Text(text)) => {
            Err(format!("{text:?} is not a number (0..={max})"))
        }
        (None, Raw::Number(n)) => Ok(Expected {
            shown: n.to_string(),
            name: None,
            number: Some(n),
        }),
        (None, Raw::Text(text)) => {
            if !text
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "_-.".contains(c))
            {
                return Err(format!("{text:?} is not a value mlxconfig prints"));
            }
            Ok(Expected {
                shown: text.clone(),
                name: Some(text),
                number: None,
            })
        }
    }
}

enum Raw {
    Text(String),
    Number(u64),
}

fn parse_number(text: &str) -> Option<u64> {
    match text.strip_prefix("0x").or_else(|| text.strip_prefix("0X")) {
        Some(hex) => u64::from_str_radix(hex, 16).ok(),
        None => text.parse().ok(),
    }
}

fn list(names: &[(&str, u64)]) -> String {
    names
        .iter()
        .map(|(name, number)| format!("{name} ({number})"))
        .collect::<Vec<_>>()
        .join(", ")
}
