//! Running the real tools tests drive (`ip`, `tc`, `ovs-vsctl`, ...): always with an
//! argument vector, never a shell string, and with errors that carry the command line
//! and its stderr.

use std::error::Error as _;
use std::process::Output;

/// A program on `PATH`, or in `/usr/sbin` or `/sbin` (where Debian puts daemons and `ip`)
/// when `PATH` lacks them; the simulator's own lookup, so tests and simulator agree.
pub use dpu_sim::tool::program_path;

/// Runs a program and returns its stdout, or an error with the command line and stderr
/// (the simulator's runner, its error as one line with its causes, for tests that
/// collect errors as text).
pub fn run(program: &str, args: &[&str]) -> Result<String, String> {
    dpu_sim::tool::run(program, args).map_err(|e| {
        let mut text = e.to_string();
        let mut source = e.source();
        while let Some(cause) = source {
            text.push_str(&format!(": {cause}"));
            source = cause.source();
        }
        text
    })
}

/// A finished process as one readable block (exit code, stdout, stderr), for assertion
/// messages.
pub fn describe(out: &Output) -> String {
    format!(
        "exit {:?}\nstdout: {}\nstderr: {}",
        out.status.code(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// The process's stdout as JSON; panics with [`describe`] when it is not JSON.
pub fn stdout_json(out: &Output) -> serde_json::Value {
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("JSON ({e}): {}", describe(out)))
}
