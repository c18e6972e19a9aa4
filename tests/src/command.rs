//! Running the real tools tests drive (`ip`, `tc`, `ovs-vsctl`, ...): always with an
//! argument vector, never a shell string, and with errors that carry the command line
//! and its stderr.

use std::path::PathBuf;
use std::process::{Command, Output};

/// A program on `PATH`, or in `/usr/sbin` or `/sbin` (where Debian puts daemons and `ip`)
/// when `PATH` lacks them.
pub fn program_path(program: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .chain([PathBuf::from("/usr/sbin"), PathBuf::from("/sbin")])
        .map(|dir| dir.join(program))
        .find(|p| p.is_file())
}

/// Runs a program and returns its stdout, or an error with the command line and stderr.
pub fn run(program: &str, args: &[&str]) -> Result<String, String> {
    let exe = program_path(program).ok_or_else(|| format!("{program} not found"))?;
    let output = Command::new(exe)
        .args(args)
        .output()
        .map_err(|e| format!("{program} {}: {e}", args.join(" ")))?;
    if output.status.success() {
        Ok(String::from_utf8_lossy(&output.stdout).into_owned())
    } else {
        Err(format!(
            "{program} {} failed ({}): {}",
            args.join(" "),
            output.status,
            String::from_utf8_lossy(&output.stderr).trim()
        ))
    }
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
