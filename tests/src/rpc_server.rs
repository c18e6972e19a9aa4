//! SPDK's own `scripts/rpc.py` kept running in its `--server` mode, as SPDK's autotest
//! does (`rpc_cmd` in `test/common/autotest_common.sh`): one Python process reads one
//! command line per call from stdin, parses it with the same parser a one-shot `rpc.py`
//! run uses, sends the request with the same client, prints the same output, and ends each
//! answer with a line `**STATUS=0` (success) or `**STATUS=1` (refused). What it saves is
//! starting Python and importing SPDK's package for every call: about 0.3 s of wall time
//! and 0.2 CPU-seconds each on the CI machine, and the spdk tier makes hundreds of calls.
//!
//! The protocol (v24.01 `scripts/rpc.py`, `if args.is_server:`): each line is split with
//! Python's `shlex.split`, so every argument is sent single-quoted; an argument that holds
//! a line break cannot be sent and is refused here (the caller runs rpc.py once instead).
//! A JSON-RPC error reply is printed (`ex.message`, the same text a one-shot run prints
//! before exiting 1) before `**STATUS=1`; an argument error goes to stderr. An exception
//! rpc.py does not catch ends the server (a one-shot run would exit 1 with the traceback):
//! the call fails with what it printed and the next call starts a new server.

use std::ffi::OsStr;
use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::path::Path;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

/// The line rpc.py's server prints after a call that succeeded.
const SUCCEEDED: &str = "**STATUS=0";
/// The line rpc.py's server prints after a call that failed.
const FAILED: &str = "**STATUS=1";
/// How long stderr is read for after a failed call, for the lines rpc.py wrote there just
/// before it printed the status (they travel through another pipe).
const STDERR_GRACE: Duration = Duration::from_millis(50);

/// What one call through the server answered.
#[derive(Debug, PartialEq, Eq)]
pub enum Answer {
    /// `**STATUS=0`: what rpc.py printed on stdout.
    Succeeded(String),
    /// `**STATUS=1`: what it printed on stdout (SPDK's error reply), then on stderr.
    Failed(String),
}

/// Why a call did not get an answer from the server.
#[derive(Debug, PartialEq, Eq)]
pub enum CallError {
    /// The arguments cannot be one line of the protocol (a line break, or not UTF-8):
    /// nothing was sent.
    NotSendable(String),
    /// The server could not be started, ended, or did not answer in time (it is killed):
    /// what it printed. The request may have reached SPDK.
    Lost(String),
}

/// One `python3 rpc.py --server` process. Killed on Drop.
#[derive(Debug)]
pub struct RpcServer {
    child: Child,
    stdin: ChildStdin,
    stdout: Receiver<String>,
    stderr: Receiver<String>,
}

impl RpcServer {
    /// Starts `python3 RPC_PY --server` with piped stdin, stdout and stderr.
    pub fn start(rpc_py: &Path) -> Result<Self, String> {
        let mut child = Command::new("python3")
            .arg(rpc_py)
            .arg("--server")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| format!("start python3 {} --server: {e}", rpc_py.display()))?;
        let (Some(stdin), Some(stdout), Some(stderr)) =
            (child.stdin.take(), child.stdout.take(), child.stderr.take())
        else {
            let _ = child.kill();
            let _ = child.wait();
            return Err("rpc.py --server started without its pipes".to_owned());
        };
        Ok(Self {
            child,
            stdin,
            stdout: lines_of(stdout),
            stderr: lines_of(stderr),
        })
    }

    /// Sends `argv` (what would follow `rpc.py` on a command line) as one line and waits,
    /// at most `timeout`, for its status line.
    pub fn call(&mut self, argv: &[&OsStr], timeout: Duration) -> Result<Answer, CallError> {
        let line = command_line(argv).map_err(CallError::NotSendable)?;
        // Lines a previous call left on stderr (warnings) belong to none of this call.
        while self.stderr.try_recv().is_ok() {}
        if let Err(e) = self
            .stdin
            .write_all(line.as_bytes())
            .and_then(|()| self.stdin.flush())
        {
            return Err(CallError::Lost(format!(
                "rpc.py --server took no request ({e}){}",
                self.stderr_now(Duration::ZERO)
            )));
        }
        let deadline = Instant::now() + timeout;
        let mut printed = String::new();
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.stdout.recv_timeout(left) {
                Ok(l) if l == SUCCEEDED => return Ok(Answer::Succeeded(printed)),
                Ok(l) if l == FAILED => {
                    printed.push_str(&self.stderr_now(STDERR_GRACE));
                    return Ok(Answer::Failed(printed));
                }
                Ok(l) => {
                    printed.push_str(&l);
                    printed.push('\n');
                }
                Err(RecvTimeoutError::Timeout) => {
                    return Err(CallError::Lost(format!(
                        "rpc.py --server gave no status within {timeout:?} (killed); it printed:\n{printed}{}",
                        self.stderr_now(Duration::ZERO)
                    )));
                }
                Err(RecvTimeoutError::Disconnected) => {
                    let _ = self.child.wait();
                    return Err(CallError::Lost(format!(
                        "rpc.py --server ended without a status; it printed:\n{printed}{}",
                        self.stderr_now(STDERR_GRACE)
                    )));
                }
            }
        }
    }

    /// The stderr lines that arrive within `grace`, each on a line of its own.
    fn stderr_now(&self, grace: Duration) -> String {
        let mut text = String::new();
        while let Ok(line) = self.stderr.recv_timeout(grace) {
            text.push_str(&line);
            text.push('\n');
        }
        text
    }
}

impl Drop for RpcServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Reads `stream` line by line on a thread of its own; the channel closes at end of file.
fn lines_of(stream: impl std::io::Read + Send + 'static) -> Receiver<String> {
    let (send, receive) = mpsc::channel();
    std::thread::spawn(move || {
        let mut reader = BufReader::new(stream);
        let mut bytes = Vec::new();
        loop {
            bytes.clear();
            match reader.by_ref().read_until(b'\n', &mut bytes) {
                Ok(0) | Err(_) => break,
                Ok(_) => {
                    let line = String::from_utf8_lossy(&bytes);
                    let line = line.strip_suffix('\n').unwrap_or(&line);
                    if send.send(line.to_owned()).is_err() {
                        break;
                    }
                }
            }
        }
    });
    receive
}

/// `argv` as one line that Python's `shlex.split` (POSIX mode) splits back into exactly
/// `argv`: every argument in single quotes, a quote inside one written `'"'"'`.
pub fn command_line(argv: &[&OsStr]) -> Result<String, String> {
    let mut line = String::new();
    for arg in argv {
        let arg = arg
            .to_str()
            .ok_or_else(|| format!("argument {arg:?} is not UTF-8"))?;
        if arg.contains(['\n', '\r']) {
            return Err(format!("argument {arg:?} holds a line break"));
        }
        if !line.is_empty() {
            line.push(' ');
        }
        line.push('\'');
        line.push_str(&arg.replace('\'', r#"'"'"'"#));
        line.push('\'');
    }
    line.push('\n');
    Ok(line)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(argv: &[&str]) -> Result<String, String> {
        command_line(&argv.iter().map(OsStr::new).collect::<Vec<_>>())
    }

    #[test]
    fn every_argument_is_single_quoted_and_quotes_survive() {
        assert_eq!(
            line(&["-s", "/tmp/a b.sock", "it's", ""]).as_deref(),
            Ok("'-s' '/tmp/a b.sock' 'it'\"'\"'s' ''\n")
        );
    }

    /// What Python's `shlex.split` (the server's own splitter) makes of `line`.
    fn python_split(line: &str) -> Option<Vec<String>> {
        let mut python = Command::new("python3")
            .args([
                "-c",
                "import json, shlex, sys; print(json.dumps(shlex.split(sys.stdin.read())))",
            ])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .ok()?;
        python.stdin.take()?.write_all(line.as_bytes()).ok()?;
        let out = python.wait_with_output().ok()?;
        serde_json::from_slice(&out.stdout).ok()
    }

    #[test]
    fn python_shlex_splits_the_line_back_into_the_arguments() {
        let argv = [
            "-s",
            "/tmp/dir with spaces/B.sock",
            "it's",
            "",
            r#"{"name": "a b", "x": [1, 2]}"#,
            "$HOME `id` \\back\\slash \"q\"",
            "--",
        ];
        let Some(split) = python_split(&line(&argv).expect("sendable")) else {
            crate::skip!("python3 is needed to split the line as rpc.py does");
        };
        assert_eq!(split, argv);
        // The control: the same arguments joined by spaces do not come back as they were.
        let naive = format!("{}\n", argv.join(" "));
        assert_ne!(python_split(&naive), Some(argv.map(str::to_owned).to_vec()));
    }

    #[test]
    fn a_line_break_cannot_be_sent() {
        assert!(line(&["bdev_get_bdevs", "a\nb"]).is_err());
        assert!(line(&["a\rb"]).is_err());
    }
}
