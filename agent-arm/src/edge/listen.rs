//! Binding listeners: Unix sockets with stale-file handling and tight permissions, and TCP.

use std::io;
use std::os::unix::fs::{DirBuilderExt, FileTypeExt, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

use dpu_proto::Endpoint;
use tokio::net::{TcpListener, UnixListener};

/// A bound listener, ready to be served.
#[derive(Debug)]
pub(crate) enum Bound {
    /// A Unix socket; the guard removes the file when the agent stops.
    Unix(UnixListener, SocketFileGuard),
    /// A TCP socket.
    Tcp(TcpListener),
}

impl Bound {
    /// What to print for this listener (the real port when 0 was asked for).
    pub(crate) fn describe(&self) -> String {
        match self {
            Self::Unix(_, guard) => format!("unix:{}", guard.path.display()),
            Self::Tcp(listener) => match listener.local_addr() {
                Ok(addr) if addr.is_ipv6() => format!("tcp:[{}]:{}", addr.ip(), addr.port()),
                Ok(addr) => format!("tcp:{addr}"),
                Err(_) => "tcp:?".to_owned(),
            },
        }
    }
}

/// Why a listener could not be bound.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ListenError {
    #[error("another process is already serving on {0}")]
    InUse(PathBuf),
    #[error("refusing to replace {0}: it exists and is not a socket")]
    NotASocket(PathBuf),
    #[error("cannot prepare socket directory {path}")]
    Directory {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("cannot bind {endpoint}")]
    Bind {
        endpoint: String,
        #[source]
        source: io::Error,
    },
}

/// Binds one endpoint. Must run inside a tokio runtime.
pub(crate) async fn bind(endpoint: &Endpoint) -> Result<Bound, ListenError> {
    match endpoint {
        Endpoint::Unix(path) => bind_unix(path),
        Endpoint::Tcp { host, port } => {
            let listener = TcpListener::bind((host.as_str(), *port))
                .await
                .map_err(|source| ListenError::Bind {
                    endpoint: endpoint.to_string(),
                    source,
                })?;
            Ok(Bound::Tcp(listener))
        }
    }
}

fn bind_unix(path: &Path) -> Result<Bound, ListenError> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        if !dir.exists() {
            std::fs::DirBuilder::new()
                .recursive(true)
                .mode(0o750)
                .create(dir)
                .map_err(|source| ListenError::Directory {
                    path: dir.to_owned(),
                    source,
                })?;
        }
    }
    remove_if_stale(path)?;
    let bind_err = |source| ListenError::Bind {
        endpoint: format!("unix:{}", path.display()),
        source,
    };
    let listener = UnixListener::bind(path).map_err(bind_err)?;
    // Owner and group only: whoever can connect can reconfigure the host's storage.
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o660)).map_err(bind_err)?;
    let meta = std::fs::symlink_metadata(path).map_err(bind_err)?;
    Ok(Bound::Unix(
        listener,
        SocketFileGuard {
            path: path.to_owned(),
            identity: FileIdentity::of(&meta),
        },
    ))
}

/// A socket file left by a crashed agent refuses connections: remove it. A socket someone
/// still serves on, or a path that is not a socket at all, is never removed.
fn remove_if_stale(path: &Path) -> Result<(), ListenError> {
    let meta = match std::fs::symlink_metadata(path) {
        Ok(meta) => meta,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
        Err(source) => {
            return Err(ListenError::Bind {
                endpoint: format!("unix:{}", path.display()),
                source,
            })
        }
    };
    if !meta.file_type().is_socket() {
        return Err(ListenError::NotASocket(path.to_owned()));
    }
    match std::os::unix::net::UnixStream::connect(path) {
        Ok(_) => Err(ListenError::InUse(path.to_owned())),
        Err(e) if e.kind() == io::ErrorKind::ConnectionRefused => {
            tracing::warn!(path = %path.display(), "removing stale socket file from an earlier run");
            std::fs::remove_file(path).map_err(|source| ListenError::Bind {
                endpoint: format!("unix:{}", path.display()),
                source,
            })
        }
        Err(source) => Err(ListenError::Bind {
            endpoint: format!("unix:{}", path.display()),
            source,
        }),
    }
}

/// Removes the socket file on drop, but only if it is still the file this agent created:
/// a newer agent that replaced it keeps its socket.
#[derive(Debug)]
pub(crate) struct SocketFileGuard {
    path: PathBuf,
    identity: FileIdentity,
}

/// Device, inode and change time: inode numbers are reused as soon as a file is deleted,
/// so the change time tells a recreated socket from ours.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct FileIdentity {
    dev: u64,
    ino: u64,
    ctime: i64,
    ctime_nsec: i64,
}

impl FileIdentity {
    fn of(meta: &std::fs::Metadata) -> Self {
        Self {
            dev: meta.dev(),
            ino: meta.ino(),
            ctime: meta.ctime(),
            ctime_nsec: meta.ctime_nsec(),
        }
    }
}

impl Drop for SocketFileGuard {
    fn drop(&mut self) {
        match std::fs::symlink_metadata(&self.path) {
            Ok(meta) if FileIdentity::of(&meta) == self.identity => {
                if let Err(e) = std::fs::remove_file(&self.path) {
                    tracing::warn!(path = %self.path.display(), error = %e, "cannot remove socket file");
                }
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn stale_socket_is_replaced_and_live_socket_is_refused() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("sub/agent.sock");
        let endpoint = Endpoint::Unix(path.clone());

        // A live listener: a second bind must refuse, not steal the path.
        let first = bind(&endpoint).await.expect("first bind");
        let err = bind(&endpoint).await.expect_err("in use");
        assert!(matches!(err, ListenError::InUse(_)), "{err}");
        let mode = std::fs::metadata(&path).expect("meta").permissions().mode();
        assert_eq!(mode & 0o777, 0o660);

        // Simulate a crash: the listener goes away but the file stays.
        let Bound::Unix(listener, guard) = first else {
            panic!("expected unix")
        };
        drop(listener);
        std::mem::forget(guard);
        assert!(path.exists());
        let second = bind(&endpoint).await.expect("stale socket replaced");
        drop(second);
        assert!(!path.exists(), "guard removes the socket file");
    }

    #[tokio::test]
    async fn regular_file_is_never_removed() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("agent.sock");
        std::fs::write(&path, "precious").expect("write");
        let err = bind(&Endpoint::Unix(path.clone()))
            .await
            .expect_err("not a socket");
        assert!(matches!(err, ListenError::NotASocket(_)), "{err}");
        assert_eq!(std::fs::read_to_string(&path).expect("read"), "precious");
    }

    #[tokio::test]
    async fn guard_leaves_a_replaced_socket_alone() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("agent.sock");
        let Bound::Unix(listener, guard) = bind(&Endpoint::Unix(path.clone())).await.expect("bind")
        else {
            panic!("expected unix")
        };
        drop(listener);
        std::fs::remove_file(&path).expect("remove");
        let _newer = std::os::unix::net::UnixListener::bind(&path).expect("newer agent");
        drop(guard);
        assert!(path.exists(), "the newer agent's socket must survive");
    }
}
