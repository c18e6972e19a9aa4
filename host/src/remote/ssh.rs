//! How this machine reaches other machines over ssh: which destinations are accepted, the
//! options every session gets, the remote command quoted word by word (once, by `shlex`,
//! for the remote shell ssh always goes through), and an optional shared connection.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Why a session could not be put together or started; nothing ran remotely.
#[derive(Debug, thiserror::Error)]
pub enum SshError {
    /// The destination is not a host name or address ssh would take as one.
    #[error("{0:?} is not a host: use HOST, USER@HOST or an IP address")]
    BadDestination(String),
    /// A word could not be quoted for the remote shell (a NUL byte).
    #[error("cannot pass {0:?} to the remote shell")]
    Unquotable(String),
    /// The ssh program could not be started at all.
    #[error("cannot run {program}")]
    Spawn {
        /// The ssh program.
        program: String,
        /// Why.
        #[source]
        source: std::io::Error,
    },
}

/// Only what a host name, an IPv4/IPv6 address or `user@` can contain, and never a
/// leading `-` that ssh would read as an option: the one rule for a destination.
pub fn valid_destination(text: &str) -> bool {
    let host = text.rsplit_once('@').map_or(text, |(user, host)| {
        if user.is_empty()
            || !user
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "._-".contains(c))
        {
            ""
        } else {
            host
        }
    });
    !host.is_empty()
        && host.len() <= 253
        && !host.starts_with('-')
        && host
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || ".-_:[]".contains(c))
}

/// [`valid_destination`] as an error naming the destination.
pub fn check_destination(text: &str) -> Result<(), SshError> {
    if valid_destination(text) {
        Ok(())
    } else {
        Err(SshError::BadDestination(text.to_owned()))
    }
}

/// How to reach hosts from here: the ssh program, port and identity, and the socket of a
/// running [`ControlMaster`] when sessions share one connection.
#[derive(Debug, Clone)]
pub struct Ssh {
    program: PathBuf,
    port: Option<u16>,
    identity: Option<PathBuf>,
    /// Every later session rides on the master's one connection instead of a new
    /// handshake per run.
    control_path: Option<PathBuf>,
}

/// One ssh connection shared by every later session to its destination (`ssh -M`): a
/// RoCE sweep opens a session per run plus the GID listing, and the handshake dominates
/// short runs. Stopped and its socket removed when dropped. Without it sessions simply
/// connect one by one.
#[derive(Debug)]
pub struct ControlMaster {
    child: Child,
    socket: PathBuf,
}

impl ControlMaster {
    /// The master's socket (`ControlPath`).
    pub fn socket(&self) -> &Path {
        &self.socket
    }
}

impl Drop for ControlMaster {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_file(&self.socket);
    }
}

impl Ssh {
    /// Sessions through `program` (normally `ssh`; tests point it at a stand-in), on
    /// `port` and with `identity` when given.
    pub fn new(program: PathBuf, port: Option<u16>, identity: Option<PathBuf>) -> Self {
        Self {
            program,
            port,
            identity,
            control_path: None,
        }
    }

    /// The ssh program.
    pub fn program(&self) -> &Path {
        &self.program
    }

    /// The error for the ssh program failing to start with `source`.
    pub fn spawn_error(&self, source: std::io::Error) -> SshError {
        SshError::Spawn {
            program: self.program.display().to_string(),
            source,
        }
    }

    /// Opens a shared connection to `destination` and makes every later session of this
    /// `Ssh` use it. None when it could not be opened within `timeout` (the sessions then
    /// connect one by one; the first of them reports what is wrong).
    pub fn start_master(&mut self, destination: &str, timeout: Duration) -> Option<ControlMaster> {
        if !valid_destination(destination) {
            return None;
        }
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
        let socket =
            std::env::temp_dir().join(format!("dpuctl-ssh-{}-{nanos}.sock", std::process::id()));
        let mut argv = self.options();
        argv.splice(
            0..0,
            ["-M", "-N", "-o", "ControlPersist=no", "-o"]
                .into_iter()
                .map(OsString::from)
                .chain([format!("ControlPath={}", socket.display()).into()]),
        );
        argv.extend(["--".into(), destination.into()]);
        let child = Command::new(&self.program)
            .args(&argv)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .ok()?;
        let mut master = ControlMaster { child, socket };
        let deadline = Instant::now() + timeout;
        while Instant::now() < deadline {
            if master.socket.exists() {
                self.control_path = Some(master.socket.clone());
                return Some(master);
            }
            if !matches!(master.child.try_wait(), Ok(None)) {
                return None;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        drop(master.child.kill());
        None
    }

    /// The options every session gets: never prompt (a benchmark must not hang on a
    /// password), give up connecting after 10 s, the port, identity and shared socket.
    fn options(&self) -> Vec<OsString> {
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
        if let Some(socket) = &self.control_path {
            argv.push("-o".into());
            argv.push(format!("ControlPath={}", socket.display()).into());
        }
        argv
    }

    /// ssh's arguments for one session running `words` on `destination`: the options, the
    /// checked destination after `--`, and the words quoted once into the remote command.
    pub fn argv(&self, destination: &str, words: &[&str]) -> Result<Vec<OsString>, SshError> {
        check_destination(destination)?;
        let remote = shlex::try_join(words.iter().copied())
            .map_err(|_| SshError::Unquotable(words.join(" ")))?;
        let mut argv = self.options();
        argv.extend(["--".into(), destination.into(), remote.into()]);
        Ok(argv)
    }
}

#[cfg(test)]
mod tests;
