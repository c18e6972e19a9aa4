//! The far side of a benchmark, started on the peer over ssh, the way a lab engineer would
//! by hand, but with the arguments passed as words (`crate::remote::ssh`: the destination
//! rule, the options, the quoting and the shared connection) and with the server's own CPU
//! time measured where it ran.
//!
//! The server runs under a fixed wrapper script: it starts the tool in the background,
//! says `DPUCTL-SERVER-STARTED` on stderr, waits until dpuctl closes the ssh session's
//! stdin (the client is done), gives the tool a grace period to finish on its own, stops it,
//! and reports the exit status and the tool's CPU time (the wrapper shell's `cutime` and
//! `cstime` after waiting for it, from `/proc/$$/stat`) on a `DPUCTL-SERVER-END` line.

use std::ffi::OsString;
use std::io::{BufRead as _, BufReader, Read as _};
use std::net::{IpAddr, ToSocketAddrs as _};
use std::path::PathBuf;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::remote::ssh::{check_destination, ControlMaster, Ssh, SshError};

/// Printed by the wrapper once the tool was started.
const STARTED: &str = "DPUCTL-SERVER-STARTED";
/// Prefix of the wrapper's last line: `rc=N cutime=T cstime=T clk_tck=HZ`.
const END: &str = "DPUCTL-SERVER-END";

/// The wrapper (see the module doc). `$1` is the grace period in tenths of a second,
/// the rest is the tool and its arguments. No user text is ever part of it.
const WRAPPER: &str = r#"grace=$1; shift
"$@" & c=$!
echo DPUCTL-SERVER-STARTED >&2
while read -r _; do :; done
i=0
while kill -0 "$c" 2>/dev/null && [ "$i" -lt "$grace" ]; do sleep 0.1; i=$((i+1)); done
kill "$c" 2>/dev/null
wait "$c"; rc=$?
read -r stat < "/proc/$$/stat"
set -- ${stat#*") "}
echo "DPUCTL-SERVER-END rc=$rc cutime=${14} cstime=${15} clk_tck=$(getconf CLK_TCK)" >&2
"#;

/// Why the peer could not be used; each names the peer and what ssh said.
#[derive(Debug, thiserror::Error)]
pub enum PeerError {
    /// The destination or a word cannot be given to ssh.
    #[error(transparent)]
    Ssh(#[from] SshError),
    /// ssh ran but the remote side never started the server.
    #[error("the server on {peer} did not start within {secs} s: {stderr}")]
    NotStarted {
        /// The peer.
        peer: String,
        /// How long dpuctl waited.
        secs: u64,
        /// What ssh and the remote side printed (last lines).
        stderr: String,
    },
    /// A one-shot remote command failed.
    #[error("`{command}` on {peer} failed (exit {code:?}): {stderr}")]
    Remote {
        /// The peer.
        peer: String,
        /// The remote command.
        command: String,
        /// Its exit code (255: ssh itself failed).
        code: Option<i32>,
        /// Its stderr (last lines).
        stderr: String,
    },
    /// Reading from ssh failed.
    #[error("reading from ssh to {peer}")]
    Io {
        /// The peer.
        peer: String,
        /// Why.
        #[source]
        source: std::io::Error,
    },
}

/// The peer of a benchmark: its destination and how to reach it.
#[derive(Debug, Clone)]
pub struct SshPeer {
    destination: String,
    ssh: Ssh,
}

/// What the server side did, measured on the peer.
#[derive(Debug, Clone, Default)]
pub struct ServerRun {
    /// The tool's stdout.
    pub stdout: String,
    /// The tool's stderr, without the wrapper's lines.
    pub stderr: String,
    /// The tool's exit status as the remote shell saw it (143 = stopped by the wrapper).
    pub exit: Option<i32>,
    /// The tool's user + system CPU seconds on the peer.
    pub cpu_seconds: Option<f64>,
}

/// A running server: keep it until the client is done, then [`PeerServer::finish`].
#[derive(Debug)]
pub struct PeerServer {
    peer: String,
    child: Child,
    stdin: Option<ChildStdin>,
    stderr_lines: mpsc::Receiver<String>,
    stdout: Option<JoinHandle<String>>,
    early_stderr: Vec<String>,
}

fn tail(lines: &[String]) -> String {
    let start = lines.len().saturating_sub(6);
    lines[start..].join(" | ")
}

impl SshPeer {
    /// A peer reached as `destination` with `program` (normally `ssh`).
    pub fn new(
        destination: &str,
        program: PathBuf,
        port: Option<u16>,
        identity: Option<PathBuf>,
    ) -> Result<Self, PeerError> {
        check_destination(destination)?;
        Ok(Self {
            destination: destination.to_owned(),
            ssh: Ssh::new(program, port, identity),
        })
    }

    /// Opens the shared connection and makes every later session use it. None when it
    /// could not be opened within `timeout` (the sessions then connect one by one; the
    /// first of them reports what is wrong).
    pub fn start_master(&mut self, timeout: Duration) -> Option<ControlMaster> {
        self.ssh.start_master(&self.destination, timeout)
    }

    /// ssh's arguments for one session on the peer.
    fn argv(&self, words: &[&str]) -> Result<Vec<OsString>, PeerError> {
        Ok(self.ssh.argv(&self.destination, words)?)
    }

    /// Runs a short command on the peer and returns its stdout.
    pub fn run(&self, words: &[&str], timeout: Duration) -> Result<String, PeerError> {
        let argv = self.argv(words)?;
        let run = crate::roce::local_run::run_measured(self.ssh.program(), &argv, timeout)
            .map_err(|source| self.ssh.spawn_error(source))?;
        if run.timed_out || !run.status_success {
            return Err(PeerError::Remote {
                peer: self.destination.clone(),
                command: words.join(" "),
                code: run.exit_code,
                stderr: tail(&run.stderr.lines().map(str::to_owned).collect::<Vec<_>>()),
            });
        }
        Ok(run.stdout)
    }

    /// The address the client should connect to: what ssh would connect to (`ssh -G`
    /// applies the user's config, so host aliases work), resolved like ssh does.
    pub fn resolve_address(&self) -> Option<IpAddr> {
        let host = Command::new(self.ssh.program())
            .args(["-G", "--", &self.destination])
            .stdin(Stdio::null())
            .stderr(Stdio::null())
            .output()
            .ok()
            .filter(|out| out.status.success())
            .and_then(|out| {
                String::from_utf8_lossy(&out.stdout)
                    .lines()
                    .find_map(|l| l.strip_prefix("hostname ").map(str::to_owned))
            })
            .unwrap_or_else(|| {
                self.destination
                    .rsplit_once('@')
                    .map_or(self.destination.clone(), |(_, h)| h.to_owned())
            });
        let host = host.trim_start_matches('[').trim_end_matches(']');
        if let Ok(ip) = host.parse() {
            return Some(ip);
        }
        (host, 0).to_socket_addrs().ok()?.map(|a| a.ip()).next()
    }

    /// Starts `words` on the peer under the wrapper and waits until it runs.
    /// `grace` is how long the tool may keep running after the client finished.
    pub fn spawn_server(
        &self,
        words: &[&str],
        grace: Duration,
        start_timeout: Duration,
    ) -> Result<PeerServer, PeerError> {
        let tenths = (grace.as_millis() / 100).to_string();
        let mut all = vec!["sh", "-c", WRAPPER, "dpuctl-peer", &tenths];
        all.extend_from_slice(words);
        let argv = self.argv(&all)?;
        let mut child = Command::new(self.ssh.program())
            .args(&argv)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|source| self.ssh.spawn_error(source))?;
        let stdin = child.stdin.take();
        let mut out = child.stdout.take();
        let stdout = std::thread::spawn(move || {
            let mut text = String::new();
            if let Some(out) = out.as_mut() {
                let _ = out.read_to_string(&mut text);
            }
            text
        });
        let (tx, rx) = mpsc::channel();
        if let Some(err) = child.stderr.take() {
            std::thread::spawn(move || {
                for line in BufReader::new(err).lines().map_while(Result::ok) {
                    if tx.send(line).is_err() {
                        break;
                    }
                }
            });
        }
        let mut server = PeerServer {
            peer: self.destination.clone(),
            child,
            stdin,
            stderr_lines: rx,
            stdout: Some(stdout),
            early_stderr: Vec::new(),
        };
        server.wait_started(start_timeout)?;
        Ok(server)
    }
}

impl PeerServer {
    fn wait_started(&mut self, timeout: Duration) -> Result<(), PeerError> {
        let deadline = Instant::now() + timeout;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.stderr_lines.recv_timeout(left) {
                Ok(line) if line.trim() == STARTED => return Ok(()),
                Ok(line) => self.early_stderr.push(line),
                Err(_) => {
                    let _ = self.child.kill();
                    let _ = self.child.wait();
                    return Err(PeerError::NotStarted {
                        peer: self.peer.clone(),
                        secs: timeout.as_secs(),
                        stderr: tail(&self.early_stderr),
                    });
                }
            }
        }
    }

    /// Tells the wrapper the client is done, and collects what the server did. A server
    /// that does not report within `timeout` is cut off (its CPU time is then unknown).
    pub fn finish(mut self, timeout: Duration) -> Result<ServerRun, PeerError> {
        drop(self.stdin.take());
        let deadline = Instant::now() + timeout;
        let mut run = ServerRun::default();
        let mut stderr = std::mem::take(&mut self.early_stderr);
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.stderr_lines.recv_timeout(left) {
                Ok(line) => match line.strip_prefix(END) {
                    Some(rest) => parse_end(rest, &mut run),
                    None => stderr.push(line),
                },
                Err(mpsc::RecvTimeoutError::Disconnected) => break,
                Err(mpsc::RecvTimeoutError::Timeout) => {
                    let _ = self.child.kill();
                    break;
                }
            }
        }
        let _ = self.child.wait().map_err(|source| PeerError::Io {
            peer: self.peer.clone(),
            source,
        })?;
        run.stdout = self
            .stdout
            .take()
            .and_then(|h| h.join().ok())
            .unwrap_or_default();
        run.stderr = stderr.join("\n");
        Ok(run)
    }
}

impl Drop for PeerServer {
    fn drop(&mut self) {
        // A server abandoned on an error path must not outlive dpuctl: closing stdin makes
        // the wrapper stop the tool; killing ssh covers a wedged session.
        drop(self.stdin.take());
        if matches!(self.child.try_wait(), Ok(None)) {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// Reads `rc=N cutime=T cstime=T clk_tck=HZ`.
fn parse_end(rest: &str, run: &mut ServerRun) {
    let mut ticks = 0_u64;
    let mut hz = None;
    let mut complete = 0;
    for field in rest.split_whitespace() {
        let Some((key, value)) = field.split_once('=') else {
            continue;
        };
        match (key, value.parse::<u64>()) {
            ("rc", Ok(v)) => run.exit = i32::try_from(v).ok(),
            ("cutime" | "cstime", Ok(v)) => {
                ticks = ticks.saturating_add(v);
                complete += 1;
            }
            ("clk_tck", Ok(v)) if v > 0 => hz = Some(v),
            _ => {}
        }
    }
    if let (2, Some(hz)) = (complete, hz) {
        run.cpu_seconds = Some(ticks as f64 / hz as f64);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_end_line_gives_exit_and_cpu_seconds() {
        let mut run = ServerRun::default();
        parse_end(" rc=0 cutime=150 cstime=50 clk_tck=100", &mut run);
        assert_eq!(run.exit, Some(0));
        assert_eq!(run.cpu_seconds, Some(2.0));
        let mut partial = ServerRun::default();
        parse_end(" rc=143 cutime=1", &mut partial);
        assert_eq!(partial.cpu_seconds, None);
    }
}
