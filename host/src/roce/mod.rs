//! Parsers for the RoCE benchmark tools' text output (perftest, qperf, nccl-tests and
//! NCCL_DEBUG=INFO logs), so `dpuctl roce perf` can report numbers and the transport
//! actually used instead of asking people to read the logs. Formats and their sources:
//! docs/reference/rdma-bluefield.md §3.1–3.4. Every parser takes any text and returns
//! an error naming the offending line; none of them panics (fuzzed in host/fuzz).

pub mod dcb;
pub mod endpoint;
pub mod local_run;
pub mod nccl;
pub mod peer;
pub mod perf;
pub mod perftest;
pub mod qperf;
pub mod rdma_evidence;
pub mod size_plot;
pub mod sweep;

use std::fmt;

/// Why a tool's output could not be read: the 1-based line (0 for the input as a whole),
/// that line's text and what was wrong with it, so a user can find it in the log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseError {
    /// 1-based line number; 0 when the problem is the input as a whole (e.g. no table).
    pub line: usize,
    /// The offending line, shortened to keep messages readable.
    pub text: String,
    /// What was expected there.
    pub reason: String,
}

impl ParseError {
    /// An error about line `index` (0-based, as from `enumerate`) with text `text`.
    pub fn at(index: usize, text: &str, reason: impl Into<String>) -> Self {
        Self {
            line: index.saturating_add(1),
            text: text.chars().take(160).collect(),
            reason: reason.into(),
        }
    }

    /// An error about the input as a whole.
    pub fn whole(reason: impl Into<String>) -> Self {
        Self {
            line: 0,
            text: String::new(),
            reason: reason.into(),
        }
    }
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.line == 0 {
            write!(f, "{}", self.reason)
        } else {
            write!(f, "line {}: {}: {:?}", self.line, self.reason, self.text)
        }
    }
}

impl std::error::Error for ParseError {}

/// Parses a finite decimal number, the only kind the tools print for a measurement
/// (`inf`/`nan` would be a broken run, not a value to average).
pub fn finite(token: &str) -> Option<f64> {
    token.parse::<f64>().ok().filter(|v| v.is_finite())
}

#[cfg(test)]
mod tests;
