//! Running the system tools the simulation drives (`ip`, `ovsdb-tool`, `ovs-vsctl`,
//! `ovs-appctl`): found where Debian puts them even when `PATH` lacks the sbin
//! directories, run with an argument vector (never a shell string), and failing with the
//! command line and its stderr, so a broken step says which one it was.
//!
//! The test crate's `dpu_tests::command` runs the same tools for its tiers through this
//! module, so both find and report them the same way.

use std::io;
use std::path::PathBuf;
use std::process::{Command, ExitStatus};

/// Why a tool could not be run, or failed.
#[derive(Debug, thiserror::Error)]
pub enum ToolError {
    /// The program is neither on `PATH` nor in `/usr/sbin` or `/sbin`.
    #[error("{program} not found")]
    NotFound {
        /// The program.
        program: String,
    },
    /// The program could not be started.
    #[error("{command}")]
    Spawn {
        /// The command line.
        command: String,
        /// Why.
        #[source]
        source: io::Error,
    },
    /// The program ran and exited unsuccessfully.
    #[error("{command} failed ({status}): {stderr}")]
    Failed {
        /// The command line.
        command: String,
        /// How it exited.
        status: ExitStatus,
        /// What it wrote to stderr, trimmed.
        stderr: String,
    },
}

/// A program on `PATH`, or in `/usr/sbin` or `/sbin` (where Debian puts daemons and `ip`)
/// when `PATH` lacks them: a non-root `PATH` often does, and the tools are still there.
pub fn program_path(program: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .chain([PathBuf::from("/usr/sbin"), PathBuf::from("/sbin")])
        .map(|dir| dir.join(program))
        .find(|p| p.is_file())
}

/// Runs a program and returns its stdout, or an error with the command line and stderr.
pub fn run(program: &str, args: &[&str]) -> Result<String, ToolError> {
    let exe = program_path(program).ok_or_else(|| ToolError::NotFound {
        program: program.to_owned(),
    })?;
    let command = || format!("{program} {}", args.join(" "));
    let output = Command::new(exe)
        .args(args)
        .output()
        .map_err(|source| ToolError::Spawn {
            command: command(),
            source,
        })?;
    if output.status.success() {
        Ok(String::from_utf8_lossy(&output.stdout).into_owned())
    } else {
        Err(ToolError::Failed {
            command: command(),
            status: output.status,
            stderr: String::from_utf8_lossy(&output.stderr).trim().to_owned(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_program_is_named() {
        let err = run("dpu-sim-no-such-tool", &["x"]).expect_err("not installed");
        assert!(matches!(err, ToolError::NotFound { .. }), "{err:?}");
        assert_eq!(err.to_string(), "dpu-sim-no-such-tool not found");
    }

    #[test]
    fn a_failure_carries_the_command_line_and_stderr() {
        // `ls` of a path that is not there: on every Linux machine, exits 2 with a message.
        let err = run("ls", &["/dpu-sim-no-such-path"]).expect_err("no such path");
        let text = err.to_string();
        assert!(
            text.starts_with("ls /dpu-sim-no-such-path failed ("),
            "{text}"
        );
        match err {
            ToolError::Failed { stderr, .. } => assert!(!stderr.is_empty(), "{text}"),
            other => panic!("not a failure: {other:?}"),
        }
        assert_eq!(run("true", &[]).expect("true succeeds"), "");
    }
}
