//! Everything a control-socket call can fail with.

use std::io;
use std::path::PathBuf;

/// Why a unixctl command failed. [`Error::Command`] carries OVS's own message (an unknown
/// command, bad arguments), everything else is about reaching the daemon.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The daemon's pid file cannot be read: the daemon is not running, or runs with
    /// another run directory.
    #[error("cannot read {}: is the daemon running with this run directory?", path.display())]
    PidFile {
        /// The pid file path.
        path: PathBuf,
        /// The read error.
        #[source]
        source: io::Error,
    },
    /// The pid file does not hold a pid.
    #[error("{} does not hold a process id: {content:?}", path.display())]
    BadPidFile {
        /// The pid file path.
        path: PathBuf,
        /// What it holds.
        content: String,
    },
    /// The JSON-RPC call failed: the socket is missing (a stale pid file), the daemon hung
    /// up or did not answer in time.
    #[error("{command} on {} failed", socket.display())]
    Rpc {
        /// The command.
        command: String,
        /// The control socket.
        socket: PathBuf,
        /// The transport error (boxed: it is large and this path is rare).
        #[source]
        source: Box<dpu_jsonrpc::Error>,
    },
    /// The daemon refused the command; `message` is OVS's text, e.g. `"frob" is not a valid
    /// command (use "list-commands" to see a list of valid commands)`.
    #[error("{command} failed: {message}")]
    Command {
        /// The command.
        command: String,
        /// OVS's error message, trailing newline removed.
        message: String,
    },
    /// The reply's `result` was not text.
    #[error("{command} returned a non-text result: {detail}")]
    Malformed {
        /// The command.
        command: String,
        /// What came back.
        detail: String,
    },
}

impl Error {
    /// True when retrying later may succeed (the daemon is restarting or slow).
    pub fn is_transient(&self) -> bool {
        match self {
            Self::PidFile { .. } | Self::BadPidFile { .. } => true,
            Self::Rpc { source, .. } => source.is_transient(),
            Self::Command { .. } | Self::Malformed { .. } => false,
        }
    }
}
