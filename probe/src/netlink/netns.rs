//! Opening a `NETLINK_ROUTE` socket inside another network namespace.
//!
//! A netlink socket stays bound to the namespace it was created in, so it is enough to
//! create it there: a dedicated, short-lived thread `setns`es into the namespace, creates
//! the socket and hands it back, then exits, taking its namespace switch with it. The
//! caller's thread (a tokio worker, the snapshot engine) never changes namespace.

use std::fs::File;
use std::path::{Path, PathBuf};

use nix::sched::{setns, CloneFlags};

use super::error::NetlinkError;

/// Where `ip netns add NAME` bind-mounts named namespaces.
pub const NETNS_RUN_DIR: &str = "/run/netns";

/// `NAME_MAX`: the longest file name, hence the longest namespace name.
const NAME_MAX: usize = 255;

/// The path of a named namespace, `/run/netns/{name}`, after checking the name the way
/// iproute2 does (no `/`, not `.` or `..`, at most 255 bytes) plus no NUL. Validated at
/// the edge because the name usually comes from a request or a command line, and a name
/// like `../../proc/1/ns/net` would otherwise reach `setns`.
pub fn netns_path(name: &str) -> Result<PathBuf, NetlinkError> {
    let reason = if name.is_empty() {
        Some("empty")
    } else if name.len() > NAME_MAX {
        Some("longer than 255 bytes")
    } else if name == "." || name == ".." {
        Some("not a name")
    } else if name.contains('/') {
        Some("contains '/'")
    } else if name.contains('\0') {
        Some("contains NUL")
    } else {
        None
    };
    match reason {
        Some(reason) => Err(NetlinkError::InvalidNetnsName {
            name: name.to_owned(),
            reason,
        }),
        None => Ok(Path::new(NETNS_RUN_DIR).join(name)),
    }
}

/// Runs `create` inside the namespace at `path` on a helper thread and hands back what it
/// made: [`RouteSocket::open_in_netns`](super::RouteSocket::open_in_netns) passes the
/// socket constructor, so this file needs no socket type of its own.
pub(crate) fn open_in<T, F>(path: PathBuf, create: F) -> Result<T, NetlinkError>
where
    T: Send + 'static,
    F: FnOnce(PathBuf) -> Result<T, NetlinkError> + Send + 'static,
{
    let inner = path.clone();
    let handle = std::thread::Builder::new()
        .name("netns-socket".to_owned())
        .spawn(move || {
            let file = File::open(&inner).map_err(|source| NetlinkError::OpenNetns {
                path: inner.clone(),
                source,
            })?;
            setns(&file, CloneFlags::CLONE_NEWNET).map_err(|source| NetlinkError::EnterNetns {
                path: inner.clone(),
                source,
            })?;
            create(inner)
        })
        .map_err(|source| NetlinkError::NetnsThread {
            path: path.clone(),
            source,
        })?;
    handle
        .join()
        .map_err(|_| NetlinkError::NetnsThreadPanicked { path })?
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::netlink::RouteSocket;

    #[test]
    fn names_become_run_netns_paths() {
        let path = netns_path("dpu-lab").expect("valid");
        assert_eq!(path, Path::new("/run/netns/dpu-lab"));
        assert!(netns_path(&"n".repeat(255)).is_ok());
    }

    #[test]
    fn hostile_or_empty_names_are_refused_before_any_io() {
        for (name, reason) in [
            ("", "empty"),
            (".", "not a name"),
            ("..", "not a name"),
            ("../../proc/1/ns/net", "contains '/'"),
            ("a/b", "contains '/'"),
            ("a\0b", "contains NUL"),
        ] {
            match netns_path(name) {
                Err(NetlinkError::InvalidNetnsName { reason: r, .. }) => {
                    assert_eq!(r, reason, "{name:?}");
                }
                other => panic!("{name:?} accepted: {other:?}"),
            }
        }
        let err = netns_path(&"n".repeat(256)).expect_err("too long");
        assert!(err.to_string().contains("longer than 255 bytes"), "{err}");
    }

    #[test]
    fn a_missing_namespace_names_its_path() {
        let err =
            RouteSocket::open_in_netns("/run/netns/dpu-probe-does-not-exist").expect_err("absent");
        assert!(matches!(err, NetlinkError::OpenNetns { .. }), "{err}");
        assert!(err
            .to_string()
            .contains("/run/netns/dpu-probe-does-not-exist"));
        assert_eq!(err.raw_os_error(), Some(2));
    }

    #[test]
    fn a_file_that_is_not_a_namespace_is_refused_by_setns() {
        let dir = tempfile::tempdir().expect("tempdir");
        let file = dir.path().join("not-a-netns");
        std::fs::write(&file, "").expect("write");
        let err = RouteSocket::open_in_netns(&file).expect_err("not a netns");
        // EINVAL as root (not a namespace fd), EPERM without CAP_SYS_ADMIN.
        assert!(matches!(err, NetlinkError::EnterNetns { .. }), "{err}");
        assert!(err.to_string().contains("not-a-netns"), "{err}");
    }
}
