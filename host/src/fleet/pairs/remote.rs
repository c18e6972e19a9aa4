//! One command on a fleet host over ssh that can be stopped: the command runs under a fixed
//! watcher that ends it as soon as the ssh session's stdin closes, so cancelling here
//! (Ctrl-C) or losing the connection stops the remote run instead of leaving it to finish
//! unseen. The watcher signals (SIGTERM) the command's whole process tree, found in `/proc`
//! before anything is signalled: the remote `dpuctl`, its perftest client, and its ssh to the
//! server, whose wrapper (`roce::peer`) then stops the server. The command also runs in a
//! session and process group of its own (`setsid`, where the host has it), which is
//! signalled too: a process whose parent died before the tree was read (the remote `dpuctl`
//! ending on a closed pipe while the host was slow) is no longer anyone's descendant, but
//! still in the group. The group alone is not enough: sshd puts the session's shell in a
//! group of its own, but a child that starts its own group (an ssh wrapper) leaves it.
//!
//! Why not `roce::peer::SshPeer::run`: that session's stdin is closed from the start and
//! it cannot be interrupted; a pair run takes minutes. The destination is still checked by
//! `SshPeer::new` (one rule for what a host may look like), and the words are quoted once
//! by `shlex` for the remote shell, as `roce::peer` does. The ssh options are the same:
//! never prompt, give up connecting after 10 s.

use std::ffi::OsString;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

use crate::roce::peer::{PeerError, SshPeer};

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

/// Shared by everything a `fleet roce pairs` run started: set once (Ctrl-C), every remote
/// command stops and nothing new starts.
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

/// How to reach the fleet's hosts from here.
#[derive(Debug, Clone)]
pub struct SshHop {
    /// The ssh program (`ssh`; tests point it at a stand-in).
    pub program: PathBuf,
    /// The ssh port, when not the hosts' default.
    pub port: Option<u16>,
    /// The identity file.
    pub identity: Option<PathBuf>,
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

/// Why a remote command could not be started.
#[derive(Debug, thiserror::Error)]
pub enum RemoteError {
    /// The destination or a word cannot be given to ssh.
    #[error(transparent)]
    Peer(#[from] PeerError),
    /// ssh itself could not be run.
    #[error("cannot run {program}")]
    Spawn {
        /// The ssh program.
        program: String,
        /// Why.
        #[source]
        source: std::io::Error,
    },
}

impl SshHop {
    /// ssh's arguments to run `words` on `destination` under the watcher.
    fn argv(&self, destination: &str, words: &[String]) -> Result<Vec<OsString>, RemoteError> {
        // The rule for destinations lives in roce::peer; its error names the problem.
        SshPeer::new(destination, self.program.clone(), self.port, None)?;
        let mut all: Vec<&str> = vec!["sh", "-c", WATCHER, "dpuctl-fleet"];
        all.extend(words.iter().map(String::as_str));
        let remote = shlex::try_join(all.iter().copied())
            .map_err(|_| PeerError::Unquotable(words.join(" ")))?;
        let mut argv: Vec<OsString> = ["-o", "BatchMode=yes", "-o", "ConnectTimeout=10"]
            .into_iter()
            .map(OsString::from)
            .collect();
        if let Some(port) = self.port {
            argv.push("-p".into());
            argv.push(port.to_string().into());
        }
        if let Some(identity) = &self.identity {
            argv.push("-i".into());
            argv.push(identity.into());
        }
        argv.extend(["--".into(), destination.into(), remote.into()]);
        Ok(argv)
    }

    /// Runs `words` on `destination`, stopping it at `limit` or when `cancel` is set.
    pub fn run(
        &self,
        destination: &str,
        words: &[String],
        limit: Duration,
        cancel: &Cancel,
    ) -> Result<RemoteOutput, RemoteError> {
        let argv = self.argv(destination, words)?;
        let mut child = Command::new(&self.program)
            .args(&argv)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|source| RemoteError::Spawn {
                program: self.program.display().to_string(),
                source,
            })?;
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
mod tests {
    use super::*;

    fn hop(program: &str) -> SshHop {
        SshHop {
            program: program.into(),
            port: Some(2222),
            identity: None,
        }
    }

    #[test]
    fn the_remote_words_arrive_as_words_under_the_watcher() {
        let words = vec!["dpuctl".to_owned(), "--peer".into(), "a b;$(x)".into()];
        let argv = hop("ssh").argv("root@gpu-01", &words).expect("argv");
        let remote = argv.last().expect("remote").to_string_lossy().into_owned();
        let split = shlex::split(&remote).expect("split");
        assert_eq!(split[..2], ["sh", "-c"]);
        assert_eq!(split[2], WATCHER);
        assert_eq!(split[3..], ["dpuctl-fleet", "dpuctl", "--peer", "a b;$(x)"]);
        assert!(argv.iter().any(|a| a == "BatchMode=yes"));
        assert_eq!(argv[argv.len() - 2], "root@gpu-01");
        assert_eq!(argv[argv.len() - 3], "--");
    }

    #[test]
    fn a_destination_that_could_be_an_option_is_refused() {
        let err = hop("ssh")
            .argv("-oProxyCommand=x", &["true".to_owned()])
            .expect_err("option");
        assert!(err.to_string().contains("is not a host"), "{err}");
    }

    /// A stand-in for ssh that runs the remote command here, with the watcher.
    fn local_ssh(dir: &std::path::Path) -> PathBuf {
        use std::os::unix::fs::PermissionsExt as _;
        let path = dir.join("ssh");
        std::fs::write(
            &path,
            "#!/bin/sh\nwhile [ \"$1\" != -- ]; do shift; done\nexec sh -c \"$3\"\n",
        )
        .expect("write");
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
        path
    }

    fn words(w: &[&str]) -> Vec<String> {
        w.iter().map(|s| (*s).to_owned()).collect()
    }

    /// Runs `script` on the stand-in and cancels it after half a second.
    fn cancelled(program: PathBuf, script: &str) -> RemoteOutput {
        let hop = SshHop {
            program,
            port: None,
            identity: None,
        };
        let cancel = Cancel::new();
        let flag = cancel.clone();
        let stopper = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(500));
            flag.cancel();
        });
        let started = Instant::now();
        let out = hop
            .run(
                "h",
                &words(&["sh", "-c", script]),
                Duration::from_secs(60),
                &cancel,
            )
            .expect("run");
        stopper.join().expect("stopper");
        // Well under the 30 s the grandchild would hold the output open if it were
        // waited for, with room for a loaded 2-core CI machine.
        assert!(
            started.elapsed() < Duration::from_secs(25),
            "stopped, not waited for"
        );
        out
    }

    #[test]
    fn a_command_runs_to_its_exit_code_and_a_cancelled_one_stops() {
        let dir = tempfile::tempdir().expect("dir");
        let hop = SshHop {
            program: local_ssh(dir.path()),
            port: None,
            identity: None,
        };
        let out = hop
            .run(
                "h",
                &words(&["sh", "-c", "echo out; echo err >&2; exit 3"]),
                Duration::from_secs(30),
                &Cancel::new(),
            )
            .expect("run");
        assert_eq!(out.ended, Ended::Exited(Some(3)));
        assert_eq!(
            (out.stdout.as_str(), out.stderr.as_str()),
            ("out\n", "err\n")
        );

        // A long command, cancelled: the watcher ends it (its marker file never appears).
        let marker = dir.path().join("finished");
        let script = format!(
            "trap 'exit 0' TERM; i=0; while [ $i -lt 200 ]; do sleep 0.1; i=$((i+1)); done; : > {}",
            marker.display()
        );
        let out = cancelled(local_ssh(dir.path()), &script);
        assert_eq!(out.ended, Ended::Cancelled);
        std::thread::sleep(Duration::from_millis(300));
        assert!(!marker.exists(), "the remote command was not stopped");
    }

    /// Whether `pid` still runs (a zombie waiting for its reaper does not).
    fn alive(pid: &str) -> bool {
        std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
            !stat
                .rsplit_once(") ")
                .is_some_and(|(_, r)| r.starts_with('Z'))
        })
    }

    #[test]
    fn a_cancelled_command_is_stopped_with_the_processes_it_started() {
        let dir = tempfile::tempdir().expect("dir");
        let pidfile = dir.path().join("pid");
        // A grandchild the command waits for, as roce perf waits for its perftest client.
        let script = format!("sleep 30 & echo $! > {}; wait", pidfile.display());
        let out = cancelled(local_ssh(dir.path()), &script);
        assert_eq!(out.ended, Ended::Cancelled);
        let pid = std::fs::read_to_string(&pidfile).expect("pid");
        let deadline = Instant::now() + Duration::from_secs(5);
        while alive(pid.trim()) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(50));
        }
        assert!(
            !alive(pid.trim()),
            "the grandchild {pid} outlived the cancel"
        );
    }

    /// A process whose parent ended before the cancel (as a perftest client is orphaned when
    /// the remote `dpuctl` dies on a closed pipe first) is no descendant of the command any
    /// more: the tree walk cannot find it, the process group does (seen in the mocked fleet
    /// tier under load: "the remote client outlived Ctrl-C", its parent pid 1).
    #[test]
    fn an_orphaned_process_of_the_command_is_stopped_with_its_group() {
        let have_setsid = std::process::Command::new("sh")
            .args(["-c", "command -v setsid"])
            .stdout(std::process::Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        if !have_setsid {
            // The watcher runs without a group of its own there; nothing to test.
            return;
        }
        let dir = tempfile::tempdir().expect("dir");
        let pidfile = dir.path().join("pid");
        // The subshell starts the sleeper and exits at once: the sleeper's parent is pid 1
        // (or a subreaper) long before the cancel.
        let script = format!(
            "(sleep 30 </dev/null >/dev/null 2>&1 & echo $! > {}); sleep 30",
            pidfile.display()
        );
        let out = cancelled(local_ssh(dir.path()), &script);
        assert_eq!(out.ended, Ended::Cancelled);
        let pid = std::fs::read_to_string(&pidfile).expect("pid");
        let deadline = Instant::now() + Duration::from_secs(5);
        while alive(pid.trim()) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(50));
        }
        assert!(
            !alive(pid.trim()),
            "the orphaned process {pid} outlived the cancel"
        );
    }
}
