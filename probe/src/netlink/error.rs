use std::path::PathBuf;

/// Why a netlink read failed. Every variant names the request (`RTM_GETLINK dump`,
/// `RTM_GETTFILTER dump of ifindex 7 parent ffff:fff2`) or the namespace it was about, so
/// a snapshot error tells the user which reading is missing and why.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum NetlinkError {
    /// A network namespace name was refused before touching the file system.
    #[error("invalid network namespace name {name:?}: {reason}")]
    InvalidNetnsName {
        /// The name as given.
        name: String,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// The namespace file (`/run/netns/NAME`, `/proc/PID/ns/net`) could not be opened.
    #[error("cannot open network namespace {path}")]
    OpenNetns {
        /// The namespace file.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
    /// `setns(CLONE_NEWNET)` into the namespace failed (not a netns file, or no
    /// CAP_SYS_ADMIN).
    #[error("cannot enter network namespace {path}")]
    EnterNetns {
        /// The namespace file.
        path: PathBuf,
        /// The errno from `setns`.
        #[source]
        source: nix::Error,
    },
    /// The helper thread that opens a socket inside a namespace could not be started.
    #[error("cannot start the thread that opens a netlink socket in {path}")]
    NetnsThread {
        /// The namespace file.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
    /// The helper thread panicked instead of returning a socket.
    #[error("the thread opening a netlink socket in {path} panicked")]
    NetnsThreadPanicked {
        /// The namespace file.
        path: PathBuf,
    },
    /// Creating or configuring the `NETLINK_ROUTE` socket failed.
    #[error("cannot {op} the NETLINK_ROUTE socket")]
    Socket {
        /// What was being done ("create", "bind", "set the receive timeout on").
        op: &'static str,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
    /// Sending a request failed.
    #[error("cannot send {request}")]
    Send {
        /// The request.
        request: String,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
    /// Receiving the answer failed (including the receive timeout).
    #[error("cannot receive the answer to {request}")]
    Receive {
        /// The request.
        request: String,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
    /// The kernel answered with an error (`NLMSG_ERROR`, or a negative `NLMSG_DONE`).
    #[error("kernel refused {request}{}", extack.as_deref().map(|m| format!(": {m}")).unwrap_or_default())]
    Kernel {
        /// The request.
        request: String,
        /// The extended-ack message, when the kernel sent one.
        extack: Option<String>,
        /// The errno.
        #[source]
        source: std::io::Error,
    },
    /// A reply could not be decoded.
    #[error("cannot decode the answer to {request}")]
    Decode {
        /// The request.
        request: String,
        /// What the decoder said.
        #[source]
        source: netlink_packet_core::DecodeError,
    },
    /// The set of objects changed while the kernel was dumping it, several times in a row
    /// (`NLM_F_DUMP_INTR`): the answer would have been inconsistent.
    #[error("{request} was interrupted by concurrent changes {attempts} times in a row")]
    DumpInterrupted {
        /// The request.
        request: String,
        /// How many dumps were tried.
        attempts: u32,
    },
    /// A replayed root (a capture bundle's) has no recorded answer to this request: the
    /// capture never asked it. Never answered live: the live kernel is another machine.
    #[error("{request} is not in the netlink recording {path} (the capture never asked it)")]
    NotRecorded {
        /// The request.
        request: String,
        /// The recording file.
        path: PathBuf,
    },
    /// A capture's netlink recording cannot be read or parsed.
    #[error("cannot replay the netlink recording {path}: {reason}")]
    Recording {
        /// The recording file.
        path: PathBuf,
        /// What is wrong with it.
        reason: String,
    },
    /// The root is neither the live system nor a capture with a netlink recording: no
    /// netlink answer describes it.
    #[error("no netlink answers for the sys root {root}: not the live system and no capture recording ({recording} absent)")]
    NoNetlink {
        /// The root.
        root: PathBuf,
        /// Where its recording would be.
        recording: PathBuf,
    },
}

impl NetlinkError {
    /// The errno behind this error, when there is one: lets callers tell "not supported"
    /// (`EOPNOTSUPP`) or "no such device" (`ENODEV`) from real failures.
    pub fn raw_os_error(&self) -> Option<i32> {
        match self {
            Self::OpenNetns { source, .. }
            | Self::NetnsThread { source, .. }
            | Self::Socket { source, .. }
            | Self::Send { source, .. }
            | Self::Receive { source, .. }
            | Self::Kernel { source, .. } => source.raw_os_error(),
            Self::EnterNetns { source, .. } => Some(*source as i32),
            Self::InvalidNetnsName { .. }
            | Self::NetnsThreadPanicked { .. }
            | Self::Decode { .. }
            | Self::DumpInterrupted { .. }
            | Self::NotRecorded { .. }
            | Self::Recording { .. }
            | Self::NoNetlink { .. } => None,
        }
    }
}
