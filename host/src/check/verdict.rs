//! A check's verdict and the facts it judged, as plain data: [`Status`], [`CheckVerdict`],
//! [`Facts`]. Apart from `rules.rs` (which re-exports them) so that the modules of
//! checks that `rules::judge` calls (`ib.rs`, ...) can build verdicts without importing
//! `rules.rs` back: the check modules stay a one-way graph.

use std::collections::BTreeMap;

use serde::Serialize;

/// A check's verdict.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    /// As it should be.
    Pass,
    /// Works, but something is likely to bite (a tool would pick the wrong GID index).
    Warn,
    /// Wrong: the lab will not work like this.
    Fail,
    /// Could not be checked here; says why. Never counted as a pass.
    Skip,
}

/// The facts a check judged, by name (`interface`, `gid_index`, ...): what `detail` says
/// in words, as values a script can read. Keys are listed per check in `docs/check.md`;
/// a fact that was not found is absent, never a placeholder.
pub type Facts = BTreeMap<&'static str, FactValue>;

/// One fact's value; serialized as the plain JSON value (number, string, ...).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum FactValue {
    /// A yes/no fact (`carrier`, `serving`).
    Bool(bool),
    /// A count, index, number or size (`gid_index`, `rdma_port`, `mtu`, `width`).
    Int(u64),
    /// A measured quantity with a fraction (`speed_gts`).
    Float(f64),
    /// A name or text (`interface`, `rdma_device`, `gid`, `link_layer`).
    Text(String),
    /// Several values (`host_models`, one record per PCI function).
    List(Vec<FactValue>),
    /// A group of facts about one thing (a PCI function, a DPU netdev).
    Record(Facts),
}

impl FactValue {
    /// The text, if this is [`FactValue::Text`].
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Self::Text(s) => Some(s),
            _ => None,
        }
    }

    /// The number, if this is [`FactValue::Int`].
    pub fn as_u64(&self) -> Option<u64> {
        match self {
            Self::Int(n) => Some(*n),
            _ => None,
        }
    }
}

impl From<bool> for FactValue {
    fn from(value: bool) -> Self {
        Self::Bool(value)
    }
}
impl From<u32> for FactValue {
    fn from(value: u32) -> Self {
        Self::Int(value.into())
    }
}
impl From<u64> for FactValue {
    fn from(value: u64) -> Self {
        Self::Int(value)
    }
}
impl From<f64> for FactValue {
    fn from(value: f64) -> Self {
        Self::Float(value)
    }
}
impl From<&str> for FactValue {
    fn from(value: &str) -> Self {
        Self::Text(value.to_owned())
    }
}
impl From<String> for FactValue {
    fn from(value: String) -> Self {
        Self::Text(value)
    }
}
impl From<&String> for FactValue {
    fn from(value: &String) -> Self {
        Self::Text(value.clone())
    }
}
impl From<Facts> for FactValue {
    fn from(value: Facts) -> Self {
        Self::Record(value)
    }
}
impl<T: Into<FactValue>> From<Vec<T>> for FactValue {
    fn from(value: Vec<T>) -> Self {
        Self::List(value.into_iter().map(Into::into).collect())
    }
}

/// Records a fact when it is known (`None` leaves the key out).
pub(super) fn put(facts: &mut Facts, key: &'static str, value: Option<impl Into<FactValue>>) {
    if let Some(value) = value {
        facts.insert(key, value.into());
    }
}

/// A verdict and what it is based on.
#[derive(Debug, Clone, PartialEq)]
pub struct CheckVerdict {
    /// Pass, warn, fail or skip.
    pub status: Status,
    /// What was found.
    pub detail: String,
    /// What was found, as typed values (may be empty; partial when the check stopped early).
    pub facts: Facts,
    /// The rail a per-port check judged (its data interface), so that eight rails'
    /// results of one check can be told apart; `None` for host-wide checks.
    pub subject: Option<String>,
    /// A fix that fits what was found better than the catalog's (a virtual machine is
    /// not told to reseat a card); `None` keeps the catalog's.
    pub fix: Option<&'static str>,
}

pub(super) fn verdict(status: Status, detail: impl Into<String>) -> CheckVerdict {
    CheckVerdict {
        status,
        detail: detail.into(),
        facts: Facts::new(),
        subject: None,
        fix: None,
    }
}
pub(super) fn pass(detail: impl Into<String>) -> CheckVerdict {
    verdict(Status::Pass, detail)
}
pub(super) fn warn(detail: impl Into<String>) -> CheckVerdict {
    verdict(Status::Warn, detail)
}
pub(super) fn fail(detail: impl Into<String>) -> CheckVerdict {
    verdict(Status::Fail, detail)
}
pub(super) fn skip(detail: impl Into<String>) -> CheckVerdict {
    verdict(Status::Skip, detail)
}
