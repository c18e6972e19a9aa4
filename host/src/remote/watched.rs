//! One long command on another machine over ssh that can be stopped: the command runs
//! under a fixed watcher that ends it as soon as the ssh session's stdin closes, so
//! cancelling here (Ctrl-C) or losing the connection stops the remote run instead of
//! leaving it to finish unseen. The watcher signals (SIGTERM) the command's whole process
//! tree, found in `/proc` before anything is signalled: the remote `dpuctl`, its perftest
//! client, and its ssh to the server, whose wrapper (`roce::peer`) then stops the server.
//! The command also runs in a session and process group of its own (`setsid`, where the
//! host has it), which is signalled too: a process whose parent died before the tree was
//! read (the remote `dpuctl` ending on a closed pipe while the host was slow) is no longer
//! anyone's descendant, but still in the group. The group alone is not enough: sshd puts
//! the session's shell in a group of its own, but a child that starts its own group (an
//! ssh wrapper) leaves it.
//!
//! Why not a plain session ([`Ssh::argv`] run to its end): its stdin is closed from the
//! start and it cannot be interrupted; a fleet pair run takes minutes. The destination
//! rule, the options and the quoting are [`Ssh`]'s.

use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

use super::ssh::{Ssh, SshError};

/// The watcher (see the module doc). The tool gets `/dev/null` as stdin and none of the
/// session's descriptors beyond stdout and stderr; its exit status is the session's. It
/// runs under `setsid` where the host has one (started in the background of a shell
/// without job control it is no group leader, so `setsid` makes it one without forking:
/// `$c` is the tool, and the group's id). On stdin's end the watcher collects the tool's
/// descendants level by level (`/proc/PID/stat`: the parent is the second field after the
/// command name), then signals the group and them. No user text is ever part of it: the
/// tool and its arguments are `$@`.
const WATCHER: &str = r#"exec 3<&0
s=; command -v setsid >/dev/null 2>&1 && s=setsid
$s "$@" </dev/null 3<&- & c=$!
{
  while read -r _ <&3; do :; done
  all=$c; new=$c
  while [ -n "$new" ]; do
    next=
    for f in /proc/[0-9]*/stat; do
      read -r l < "$f" || continue
      set -- ${l#*") "}
      case " $new " in *" $2 "*) next="$next ${l%% *}";; esac
    done
    all="$all$next"; new=$next
  done
  [ -n "$s" ] && kill -TERM -"$c"
  kill -TERM $all
} 2>/dev/null &
w=$!
wait "$c"; rc=$?
kill "$w" 2>/dev/null
exit "$rc"
"#;

/// How long a remote command may take to stop after its stdin closed before ssh is killed.
const STOP_GRACE: Duration = Duration::from_secs(10);

/// Shared by everything a run started on other machines (`fleet roce pairs`, `fleet
/// experiment`): set once (Ctrl-C), every remote command stops and nothing new starts.
#[derive(Debug, Clone, Default)]
pub struct Cancel(Arc<AtomicBool>);

impl Cancel {
    /// A flag not yet set.
    pub fn new() -> Self {
        Self::default()
    }

    /// Stops every remote command and every run not yet started.
    pub fn cancel(&self) {
        self.0.store(true, Ordering::SeqCst);
    }

    /// Whether [`Cancel::cancel`] was called.
    pub fn is_cancelled(&self) -> bool {
        self.0.load(Ordering::SeqCst)
    }
}

/// How a remote command ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ended {
    /// It exited by itself (its code, or 255 when ssh failed).
    Exited(Option<i32>),
    /// It ran past its limit and was stopped.
    TimedOut,
    /// [`Cancel`] stopped it.
    Cancelled,
}

/// What a remote command printed, and how it ended.
#[derive(Debug, Clone)]
pub struct RemoteOutput {
    /// Its stdout.
    pub stdout: String,
    /// Its stderr (and ssh's).
    pub stderr: String,
    /// How it ended.
    pub ended: Ended,
}

impl Ssh {
    /// ssh's arguments to run `words` on `destination` under the watcher.
    fn watched_argv(
        &self,
        destination: &str,
        words: &[String],
    ) -> Result<Vec<std::ffi::OsString>, SshError> {
        let mut all: Vec<&str> = vec!["sh", "-c", WATCHER, "dpuctl-fleet"];
        all.extend(words.iter().map(String::as_str));
        self.argv(destination, &all)
    }

    /// Runs `words` on `destination`, stopping it at `limit` or when `cancel` is set.
    pub fn run_watched(
        &self,
        destination: &str,
        words: &[String],
        limit: Duration,
        cancel: &Cancel,
    ) -> Result<RemoteOutput, SshError> {
        let argv = self.watched_argv(destination, words)?;
        let mut child = Command::new(self.program())
            .args(&argv)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|source| self.spawn_error(source))?;
        let stdin = child.stdin.take();
        let stdout = drain(child.stdout.take());
        let stderr = drain(child.stderr.take());
        let deadline = Instant::now() + limit;
        let ended = loop {
            if let Ok(Some(status)) = child.try_wait() {
                break Ended::Exited(status.code());
            }
            let stop = if cancel.is_cancelled() {
                Some(Ended::Cancelled)
            } else if Instant::now() >= deadline {
                Some(Ended::TimedOut)
            } else {
                None
            };
            if let Some(why) = stop {
                stop_child(&mut child, stdin);
                break why;
            }
            std::thread::sleep(Duration::from_millis(50));
        };
        Ok(RemoteOutput {
            stdout: joined(stdout),
            stderr: joined(stderr),
            ended,
        })
    }
}

/// Closes the session's stdin (the watcher stops the command), waits for ssh to end, and
/// kills it when it does not within [`STOP_GRACE`].
fn stop_child(child: &mut Child, stdin: Option<std::process::ChildStdin>) {
    drop(stdin);
    let deadline = Instant::now() + STOP_GRACE;
    while Instant::now() < deadline {
        if !matches!(child.try_wait(), Ok(None)) {
            return;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    tracing::warn!("ssh did not end {STOP_GRACE:?} after its stdin closed; killing it");
    let _ = child.kill();
    let _ = child.wait();
}

/// Reads a pipe to its end on a thread of its own; the text arrives on the channel.
fn drain(pipe: Option<impl std::io::Read + Send + 'static>) -> Option<mpsc::Receiver<String>> {
    let mut pipe = pipe?;
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let mut bytes = Vec::new();
        let _ = pipe.read_to_end(&mut bytes);
        let _ = tx.send(String::from_utf8_lossy(&bytes).into_owned());
    });
    Some(rx)
}

/// What a pipe carried. A process the command left behind may hold the pipe open: after
/// ssh ended, its output is waited for [`STOP_GRACE`] at most.
fn joined(text: Option<mpsc::Receiver<String>>) -> String {
    text.and_then(|rx| rx.recv_timeout(STOP_GRACE).ok())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests;
