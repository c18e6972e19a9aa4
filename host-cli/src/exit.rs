//! Exit codes, documented in `--help` and the README; scripts depend on them.

use std::process::ExitCode;

/// How a command ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Exit {
    /// It did what was asked; for `prove`: PROVEN.
    Success,
    /// A check or proof failed, or something reported unhealthy.
    Failed,
    /// Usage or environment error: bad flag, agent unreachable, call rejected.
    Usage,
    /// Evidence was missing (a counter missing, reset or wrapped).
    Inconclusive,
    /// The exit code of a command dpuctl ran for the user (`lab run`), passed through.
    PassThrough(u8),
    /// Stdout's reader went away (`| head`): 141, what a tool killed by SIGPIPE reports
    /// (128 + 13), with nothing printed. Quiet as `ls | head` is, and the same status
    /// `ls` gives a `set -o pipefail` script, which can still tell a cut-off run from a
    /// complete one.
    ReaderGone,
}

impl From<Exit> for ExitCode {
    fn from(outcome: Exit) -> Self {
        ExitCode::from(match outcome {
            Exit::Success => 0,
            Exit::Failed => 1,
            Exit::Usage => 2,
            Exit::Inconclusive => 3,
            Exit::PassThrough(code) => code,
            Exit::ReaderGone => 141,
        })
    }
}
