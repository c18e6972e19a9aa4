//! Why a dial to the agent failed, in terms an operator can act on: the socket is missing,
//! this user may not use it, or nothing listens there. `dpuctl` turns the answer into one
//! hint line under the error, so "cannot reach the agent" comes with a way forward.

use std::os::unix::fs::MetadataExt as _;
use std::path::{Path, PathBuf};

use crate::agent::connect::ConnectError;
use crate::agent::session::AgentError;

/// The cause of a failed dial that has one obvious next step.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DialCause {
    /// The Unix socket does not exist: the agent is not running here, or `--agent` points
    /// somewhere else.
    SocketMissing {
        /// The socket that was dialled.
        socket: PathBuf,
    },
    /// The socket exists but its permissions refuse this user (EACCES): the agent grants
    /// access through the socket's group.
    PermissionDenied {
        /// The socket that was dialled.
        socket: PathBuf,
        /// The group that owns the socket, when it can be read (stat and the group
        /// database); `None` when it cannot.
        group: Option<String>,
    },
    /// The address exists but nothing accepts connections on it: no agent listens there
    /// (for a Unix socket: a file left by an agent that stopped).
    Refused {
        /// The address as given.
        agent: String,
    },
}

impl ConnectError {
    /// The cause of an unreachable agent, when it is one of [`DialCause`]'s; `None` for
    /// every other failure (TLS, timeouts, an address that does not parse), which have
    /// no single next step.
    pub fn cause(&self) -> Option<DialCause> {
        let Self::Unreachable {
            agent,
            socket,
            source,
        } = self
        else {
            return None;
        };
        let io = io_error(source)?;
        classify(io.kind(), agent, socket.as_deref())
    }
}

impl AgentError {
    /// [`ConnectError::cause`] of a failed dial; `None` for a call the agent answered.
    pub fn dial_cause(&self) -> Option<DialCause> {
        match self {
            Self::Connect(e) => e.cause(),
            Self::Rpc { .. } => None,
        }
    }
}

/// The first operating-system error in `err`'s chain (tonic and hyper wrap it a few times).
fn io_error<'a>(err: &'a (dyn std::error::Error + 'static)) -> Option<&'a std::io::Error> {
    let mut link = Some(err);
    while let Some(e) = link {
        if let Some(io) = e.downcast_ref::<std::io::Error>() {
            return Some(io);
        }
        link = e.source();
    }
    None
}

/// The cause for an error kind; the group is read only for a refused Unix socket.
fn classify(kind: std::io::ErrorKind, agent: &str, socket: Option<&Path>) -> Option<DialCause> {
    use std::io::ErrorKind;
    match (kind, socket) {
        (ErrorKind::NotFound, Some(socket)) => Some(DialCause::SocketMissing {
            socket: socket.to_owned(),
        }),
        (ErrorKind::PermissionDenied, Some(socket)) => Some(DialCause::PermissionDenied {
            socket: socket.to_owned(),
            group: socket_group(socket),
        }),
        (ErrorKind::ConnectionRefused, _) => Some(DialCause::Refused {
            agent: agent.to_owned(),
        }),
        _ => None,
    }
}

/// The name of the group that owns `socket` (its number when the group database has no
/// name for it); `None` when the socket cannot be stat'ed.
fn socket_group(socket: &Path) -> Option<String> {
    let gid = std::fs::metadata(socket).ok()?.gid();
    match nix::unistd::Group::from_gid(nix::unistd::Gid::from_raw(gid)) {
        Ok(Some(group)) => Some(group.name),
        _ => Some(gid.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use std::io::ErrorKind;
    use std::time::Duration;

    use dpu_proto::Endpoint;

    use super::*;

    async fn dial(socket: &Path) -> ConnectError {
        crate::agent::connect::connect(
            &Endpoint::Unix(socket.to_owned()),
            None,
            Duration::from_secs(2),
        )
        .await
        .expect_err("nothing serves there")
    }

    #[tokio::test]
    async fn a_missing_socket_and_a_stale_one_are_told_apart() {
        let dir = tempfile::tempdir().expect("tempdir");
        let missing = dir.path().join("nobody.sock");
        assert_eq!(
            dial(&missing).await.cause(),
            Some(DialCause::SocketMissing {
                socket: missing.clone()
            })
        );
        // A socket file whose listener is gone: connect() answers ECONNREFUSED.
        let stale = dir.path().join("stale.sock");
        drop(std::os::unix::net::UnixListener::bind(&stale).expect("bind"));
        assert_eq!(
            dial(&stale).await.cause(),
            Some(DialCause::Refused {
                agent: format!("unix:{}", stale.display())
            })
        );
    }

    #[test]
    fn a_refused_permission_names_the_sockets_group() {
        // root passes every permission check, so EACCES cannot be provoked in a test run
        // as root: the classification is checked on the kind, the group on a real file.
        let dir = tempfile::tempdir().expect("tempdir");
        let socket = dir.path().join("agent.sock");
        std::fs::write(&socket, "").expect("file");
        let gid = std::fs::metadata(&socket).expect("stat").gid();
        let expected = nix::unistd::Group::from_gid(nix::unistd::Gid::from_raw(gid))
            .ok()
            .flatten()
            .map_or_else(|| gid.to_string(), |g| g.name);
        assert_eq!(
            classify(ErrorKind::PermissionDenied, "unix:x", Some(&socket)),
            Some(DialCause::PermissionDenied {
                socket: socket.clone(),
                group: Some(expected)
            })
        );
        // Gone by the time it is stat'ed: the hint still comes, without a group.
        assert_eq!(
            classify(
                ErrorKind::PermissionDenied,
                "unix:x",
                Some(&dir.path().join("gone"))
            ),
            Some(DialCause::PermissionDenied {
                socket: dir.path().join("gone"),
                group: None
            })
        );
        // A timeout has no single next step.
        assert_eq!(classify(ErrorKind::TimedOut, "tcp:h:1", None), None);
    }
}
