//! The vocabulary of `dpuctl roce dcb`'s conclusions: counter deltas by name, and findings
//! (a severity, a meaning, the counters behind it), shared by the counter rules
//! (`roce::dcb`) and the configuration tie (`roce::dcb::tie`) so neither imports the other.

use std::collections::BTreeMap;

use serde::Serialize;

/// Counter name → value, from one moment.
pub type Counters = BTreeMap<String, u64>;

/// How bad a finding is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Severity {
    /// The mechanism doing its job (PFC pausing on the lossless priority, CNPs flowing).
    Info,
    /// Worth a look (drops on a lossy queue, retransmissions).
    Warning,
    /// A classic misconfiguration, or loss on the lossless class.
    Misconfigured,
}

/// One conclusion with the counters behind it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Finding {
    /// How bad.
    pub severity: Severity,
    /// What it means, in a network engineer's words.
    pub meaning: String,
    /// The counters and their deltas that show it.
    pub evidence: Vec<(String, u64)>,
}

/// The named counters that moved, with their deltas.
pub(super) fn moved(d: &Counters, names: impl IntoIterator<Item = String>) -> Vec<(String, u64)> {
    names
        .into_iter()
        .filter_map(|n| {
            let v = *d.get(&n)?;
            (v > 0).then_some((n, v))
        })
        .collect()
}

/// A finding from its parts.
pub(super) fn finding(
    severity: Severity,
    meaning: impl Into<String>,
    evidence: Vec<(String, u64)>,
) -> Finding {
    Finding {
        severity,
        meaning: meaning.into(),
        evidence,
    }
}
