use std::path::PathBuf;

/// Why something could not be read. Every variant names the file, because a missing or
/// malformed sysfs attribute is a fact the user has to act on.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ProbeError {
    /// A file or directory could not be read.
    #[error("cannot read {path}")]
    Read {
        /// The path that failed.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
    /// A file was read but its content did not have the documented format.
    #[error("unexpected content in {path}: {detail}")]
    Format {
        /// The offending file.
        path: PathBuf,
        /// What was wrong.
        detail: String,
    },
    /// The object asked for does not exist.
    #[error("{what} {name:?} not found under {root}")]
    NotFound {
        /// Kind of object ("netdev", "RDMA device").
        what: &'static str,
        /// The requested name.
        name: String,
        /// Where it was looked for.
        root: PathBuf,
    },
    /// An interface ioctl (`SIOCETHTOOL`) failed: the driver may not support it, or the
    /// interface is gone or in another network namespace.
    #[error("{request} on interface {interface:?} failed")]
    Ioctl {
        /// The interface.
        interface: String,
        /// Which request (`ETHTOOL_GSTATS`, ...).
        request: &'static str,
        /// The errno.
        #[source]
        source: std::io::Error,
    },
    /// A name given by the caller cannot name such an object at all.
    #[error("{what} {name:?} is not valid: {why}")]
    InvalidName {
        /// Kind of object.
        what: &'static str,
        /// The name.
        name: String,
        /// What is wrong with it.
        why: &'static str,
    },
    /// A driver reported something impossible (e.g. an absurd statistics count).
    #[error("interface {interface:?}: {detail}")]
    Driver {
        /// The interface.
        interface: String,
        /// What it reported.
        detail: String,
    },
}

impl ProbeError {
    pub(crate) fn read(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Self::Read {
            path: path.into(),
            source,
        }
    }
}

/// Formats an error with its sources on one line, "cannot read /sys/x: Permission denied",
/// so a remote reader (a snapshot's source error, a gRPC status, a log line) sees the
/// errno and not only the outer context. A source whose text the line already says is
/// left out (hyper and tonic repeat their inner error in their own message). The
/// workspace's one such helper: the agent, the host library and dpuctl use it.
pub fn error_chain(err: &dyn std::error::Error) -> String {
    let mut text = err.to_string();
    let mut source = err.source();
    while let Some(cause) = source {
        let said = cause.to_string();
        if !text.contains(&said) {
            text.push_str(": ");
            text.push_str(&said);
        }
        source = cause.source();
    }
    text
}

#[cfg(test)]
mod tests {
    use super::error_chain;

    /// An error with one source, each with its own text.
    #[derive(Debug, thiserror::Error)]
    #[error("{text}")]
    struct Wrapped {
        text: String,
        #[source]
        source: std::io::Error,
    }

    #[test]
    fn sources_are_joined_and_a_repeated_one_is_said_once() {
        let io = || std::io::Error::from(std::io::ErrorKind::PermissionDenied);
        let plain = Wrapped {
            text: "cannot read /sys/x".to_owned(),
            source: io(),
        };
        assert_eq!(error_chain(&plain), "cannot read /sys/x: permission denied");
        // hyper and tonic put their inner error's text in their own message.
        let repeated = Wrapped {
            text: "transport error: permission denied".to_owned(),
            source: io(),
        };
        assert_eq!(error_chain(&repeated), "transport error: permission denied");
    }
}
