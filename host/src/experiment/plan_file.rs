//! The plan file as TOML holds it, before any check: every table denies unknown keys, and
//! the per-kind keys are optional here so that [`super::plan_check`] can say which key a
//! kind lacks or does not take, in words, rather than serde's "did not match any variant".

use serde::Deserialize;

/// The whole file.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct PlanFile {
    /// Trials per phase; signed so that a negative number gets our message, not serde's.
    pub(crate) trials: Option<i64>,
    /// `ABA` or `ABABA`.
    pub(crate) order: Option<String>,
    /// `[measurement]`.
    pub(crate) measurement: MeasurementFile,
    /// `[knob]`.
    pub(crate) knob: KnobFile,
    /// `[metric]`.
    #[serde(default)]
    pub(crate) metric: MetricFile,
}

/// `[measurement]`: `kind` and the keys of every kind.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct MeasurementFile {
    pub(crate) kind: String,
    pub(crate) peer: Option<String>,
    pub(crate) test: Option<String>,
    /// A size with a suffix (`64k`) or a number of bytes.
    pub(crate) size: Option<toml::Value>,
    pub(crate) device: Option<String>,
    pub(crate) bs: Option<toml::Value>,
    pub(crate) command: Option<Vec<String>>,
    pub(crate) argv: Option<Vec<String>>,
    pub(crate) parser: Option<String>,
    /// perftest `-n` of a `roce-perf` trial; signed so a negative gets our message.
    pub(crate) iterations: Option<i64>,
    /// The address a `roce-perf` client connects to.
    pub(crate) peer_address: Option<String>,
}

/// `[knob]`: `kind`, the keys of every kind, and the two values (numbers or strings).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct KnobFile {
    pub(crate) kind: String,
    pub(crate) interface: Option<String>,
    pub(crate) name: Option<String>,
    pub(crate) device: Option<String>,
    pub(crate) ring: Option<String>,
    pub(crate) a: toml::Value,
    pub(crate) b: toml::Value,
}

/// `[metric]`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct MetricFile {
    /// `higher` or `lower`.
    pub(crate) better: Option<String>,
}
