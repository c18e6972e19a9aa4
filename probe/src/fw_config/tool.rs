//! Finding and running the firmware configuration tool, read-only: `mlxconfig` (NVIDIA
//! MFT) or `mstconfig` (Debian's `mstflint`), whichever is first on PATH, with an
//! argument vector, stdin closed, a deadline and captured output. `query` is the only verb
//! [`query_args`] ever builds. The runner is a trait so tests (of `dpuctl check` and of the
//! agent) answer with canned output instead of a real tool.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// How long one query may take; mlxconfig reads a few hundred TLVs over PCI config
/// space, which takes seconds, not minutes.
pub const QUERY_TIMEOUT: Duration = Duration::from_secs(60);

/// The tools, in the order they are looked for: NVIDIA's own first (its parameter
/// database knows the newest cards), then the open-source build.
pub const TOOL_NAMES: [&str; 2] = ["mlxconfig", "mstconfig"];

/// A firmware configuration tool found on PATH.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FwTool {
    /// `mlxconfig` or `mstconfig`.
    pub name: &'static str,
    /// Where it was found.
    pub path: PathBuf,
}

/// What one run of the tool produced.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolOutput {
    /// Its stdout (mlxconfig prints its `-E-` errors there too).
    pub stdout: String,
    /// Its stderr.
    pub stderr: String,
    /// Its exit code; `None` when a signal ended it.
    pub exit_code: Option<i32>,
    /// Whether it was stopped at the deadline.
    pub timed_out: bool,
}

/// Finds and runs the tool; the real one searches PATH and spawns processes, tests
/// answer with canned output. `Sync` because the cards are queried from one thread each.
pub trait FwToolRunner: Sync {
    /// The tool to use, if any is installed.
    fn locate(&self) -> Option<FwTool>;
    /// Runs `tool args`, stdin closed, stopped at `timeout`.
    fn run(&self, tool: &FwTool, args: &[String], timeout: Duration)
        -> std::io::Result<ToolOutput>;
}

/// The real runner: PATH lookup and a child process per query.
#[derive(Debug, Clone, Default)]
pub struct SystemFwTool;

impl FwToolRunner for SystemFwTool {
    fn locate(&self) -> Option<FwTool> {
        let path = std::env::var_os("PATH")?;
        TOOL_NAMES.iter().find_map(|name| {
            std::env::split_paths(&path)
                .map(|dir| dir.join(name))
                .find(|candidate| is_executable(candidate))
                .map(|path| FwTool { name, path })
        })
    }

    fn run(
        &self,
        tool: &FwTool,
        args: &[String],
        timeout: Duration,
    ) -> std::io::Result<ToolOutput> {
        run_with_deadline(&tool.path, args, timeout)
    }
}

fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// The argument vector of one read-only query: `-e` adds the Default and Current columns.
pub fn query_args(address: &str) -> Vec<String> {
    ["-e", "-d", address, "query"]
        .iter()
        .map(|s| (*s).to_owned())
        .collect()
}

/// How often a running tool is looked at; a query takes seconds, so this costs nothing.
const POLL: Duration = Duration::from_millis(10);

/// Runs `program args` with stdin closed and both outputs read by their own threads (a
/// full pipe cannot stall the child), killing it at `timeout`.
pub fn run_with_deadline(
    program: &Path,
    args: &[String],
    timeout: Duration,
) -> std::io::Result<ToolOutput> {
    let started = Instant::now();
    let mut child = Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()?;
    let stdout = child.stdout.take().map(read_all);
    let stderr = child.stderr.take().map(read_all);
    let mut timed_out = false;
    let status = loop {
        if let Some(status) = child.try_wait()? {
            break status;
        }
        if started.elapsed() >= timeout {
            timed_out = true;
            // Already gone between the two calls is fine: wait() below reaps it.
            let _ = child.kill();
            break child.wait()?;
        }
        std::thread::sleep(POLL);
    };
    let joined = |h: Option<std::thread::JoinHandle<String>>| {
        h.and_then(|h| h.join().ok()).unwrap_or_default()
    };
    Ok(ToolOutput {
        stdout: joined(stdout),
        stderr: joined(stderr),
        exit_code: status.code(),
        timed_out,
    })
}

fn read_all(mut pipe: impl Read + Send + 'static) -> std::thread::JoinHandle<String> {
    std::thread::spawn(move || {
        let mut bytes = Vec::new();
        // A read error leaves what was read so far: the caller judges the exit status.
        let _ = pipe.read_to_end(&mut bytes);
        String::from_utf8_lossy(&bytes).into_owned()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tool_is_run_with_its_argument_vector_and_its_output_captured() {
        let out = run_with_deadline(
            Path::new("/bin/sh"),
            &["-c".to_owned(), "echo out; echo err >&2; exit 3".to_owned()],
            Duration::from_secs(20),
        )
        .expect("sh runs");
        assert_eq!(out.stdout, "out\n");
        assert_eq!(out.stderr, "err\n");
        assert_eq!(out.exit_code, Some(3));
        assert!(!out.timed_out);
    }

    #[test]
    fn a_tool_past_its_deadline_is_killed_and_says_so() {
        let out = run_with_deadline(
            Path::new("/bin/sh"),
            &["-c".to_owned(), "exec sleep 30".to_owned()],
            Duration::from_millis(50),
        )
        .expect("sh runs");
        assert!(out.timed_out);
        assert_eq!(out.exit_code, None, "ended by the kill signal");
    }

    #[test]
    fn the_query_is_read_only() {
        assert_eq!(
            query_args("0000:03:00.0"),
            ["-e", "-d", "0000:03:00.0", "query"]
        );
    }
}
