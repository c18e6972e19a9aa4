//! [`KernelError`] and its classification into what the agent maps to API errors.

use std::fmt;
use std::io;
use std::path::PathBuf;

/// Why a kernel nvmet / nvme-fabrics operation failed. Every variant that touched the
/// filesystem names the path, so an operator can look at exactly that file.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum KernelError {
    /// A system call on a configfs, sysfs or device path failed.
    #[error("{op} {} failed", path.display())]
    Io {
        /// What was attempted (`mkdir`, `write`, `read`, `symlink`, ...).
        op: &'static str,
        /// The path it was attempted on.
        path: PathBuf,
        /// The kernel's answer.
        #[source]
        source: io::Error,
    },
    /// An input was refused before anything was touched.
    #[error("invalid {field} {value:?}: {reason}")]
    Invalid {
        /// The spec field that is wrong (`nqn`, `nsid`, `device_path`, ...).
        field: &'static str,
        /// The rejected value.
        value: String,
        /// What is wrong with it.
        reason: String,
    },
    /// The kernel interface is absent: the module is not loaded or configfs not mounted.
    #[error("{} is missing: {hint}", path.display())]
    Unsupported {
        /// The directory or device that should exist.
        path: PathBuf,
        /// What to load or mount.
        hint: &'static str,
    },
    /// Something the operation depends on does not exist.
    #[error("{what} {} does not exist", path.display())]
    NotFound {
        /// What was looked for ("subsystem", "backing device", ...).
        what: &'static str,
        /// Where.
        path: PathBuf,
    },
    /// Refused because other objects still use the target.
    #[error("{} is in use: {reason}", path.display())]
    Busy {
        /// The object that was to be changed or removed.
        path: PathBuf,
        /// Who still uses it.
        reason: String,
    },
    /// A kernel file did not have the documented format.
    #[error("unexpected content in {}: {detail}", path.display())]
    Format {
        /// The file.
        path: PathBuf,
        /// What was wrong.
        detail: String,
    },
    /// `/dev/nvme-fabrics` answered with its "no controller" reply
    /// (`instance=-1,cntlid=-1,<option tokens>`), so no controller was created.
    #[error("{} created no controller, it replied {reply:?}", path.display())]
    NoController {
        /// The fabrics device.
        path: PathBuf,
        /// The full reply.
        reply: String,
    },
    /// An `ensure_*` failed and could not fully undo what it had created.
    #[error("{source}; rollback left behind: {}", Joined(left))]
    Incomplete {
        /// The failure that triggered the rollback.
        #[source]
        source: Box<KernelError>,
        /// What is still there, each with its state.
        left: Vec<String>,
    },
}

struct Joined<'a>(&'a [String]);

impl fmt::Display for Joined<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0.join(", "))
    }
}

/// What kind of refusal or failure a [`KernelError`] is, so callers can map it (e.g. to
/// gRPC `AlreadyExists`, `NotFound`, `FailedPrecondition`, `Unimplemented`,
/// `InvalidArgument`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum KernelErrorKind {
    /// The object already exists (EEXIST, or EALREADY from a duplicate connect).
    Exists,
    /// The object or something it needs does not exist (ENOENT, ENODEV).
    NotFound,
    /// The object is in use or in the wrong state (EBUSY, EACCES on an enabled port).
    Busy,
    /// nvmet / nvme-fabrics is not available on this kernel (EOPNOTSUPP, missing module).
    Unsupported,
    /// The input was refused, by us or by the kernel (EINVAL).
    Invalid,
    /// Anything else.
    Other,
}

impl KernelError {
    pub(crate) fn io(op: &'static str, path: impl Into<PathBuf>, source: io::Error) -> Self {
        Self::Io {
            op,
            path: path.into(),
            source,
        }
    }

    pub(crate) fn invalid(field: &'static str, value: &str, reason: impl Into<String>) -> Self {
        Self::Invalid {
            field,
            value: value.to_owned(),
            reason: reason.into(),
        }
    }

    /// Classifies the failure; for system calls by errno.
    pub fn kind(&self) -> KernelErrorKind {
        match self {
            Self::Io { source, .. } => errno_kind(source),
            Self::Invalid { .. } => KernelErrorKind::Invalid,
            Self::Unsupported { .. } => KernelErrorKind::Unsupported,
            Self::NotFound { .. } => KernelErrorKind::NotFound,
            Self::Busy { .. } => KernelErrorKind::Busy,
            Self::Format { .. } | Self::NoController { .. } => KernelErrorKind::Other,
            Self::Incomplete { source, .. } => source.kind(),
        }
    }
}

fn errno_kind(e: &io::Error) -> KernelErrorKind {
    match e.raw_os_error() {
        Some(libc_errno::EEXIST | libc_errno::EALREADY) => KernelErrorKind::Exists,
        Some(libc_errno::ENOENT | libc_errno::ENODEV) => KernelErrorKind::NotFound,
        Some(libc_errno::EBUSY | libc_errno::EACCES) => KernelErrorKind::Busy,
        Some(libc_errno::EINVAL) => KernelErrorKind::Invalid,
        Some(libc_errno::EOPNOTSUPP) => KernelErrorKind::Unsupported,
        _ => match e.kind() {
            io::ErrorKind::AlreadyExists => KernelErrorKind::Exists,
            io::ErrorKind::NotFound => KernelErrorKind::NotFound,
            io::ErrorKind::InvalidInput => KernelErrorKind::Invalid,
            _ => KernelErrorKind::Other,
        },
    }
}

/// The Linux errno values classified above (generic across architectures), spelled out
/// so the crate does not need `libc` for six constants.
mod libc_errno {
    pub(super) const ENOENT: i32 = 2;
    pub(super) const EACCES: i32 = 13;
    pub(super) const EBUSY: i32 = 16;
    pub(super) const EEXIST: i32 = 17;
    pub(super) const ENODEV: i32 = 19;
    pub(super) const EINVAL: i32 = 22;
    pub(super) const EOPNOTSUPP: i32 = 95;
    pub(super) const EALREADY: i32 = 114;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classifies_errno_and_own_refusals() {
        let os = |n| KernelError::io("write", "/p", io::Error::from_raw_os_error(n)).kind();
        assert_eq!(os(17), KernelErrorKind::Exists);
        assert_eq!(os(114), KernelErrorKind::Exists);
        assert_eq!(os(2), KernelErrorKind::NotFound);
        assert_eq!(os(16), KernelErrorKind::Busy);
        assert_eq!(os(22), KernelErrorKind::Invalid);
        assert_eq!(os(5), KernelErrorKind::Other);
        let busy = KernelError::Busy {
            path: PathBuf::from("/x"),
            reason: "r".to_owned(),
        };
        let wrapped = KernelError::Incomplete {
            source: Box::new(busy),
            left: vec!["/a (disabled)".to_owned(), "/b".to_owned()],
        };
        assert_eq!(wrapped.kind(), KernelErrorKind::Busy);
        assert!(wrapped
            .to_string()
            .ends_with("left behind: /a (disabled), /b"));
        let io = KernelError::io("mkdir", "/cfg/x", io::Error::from_raw_os_error(17));
        assert!(io.to_string().contains("/cfg/x"), "{io}");
    }
}
