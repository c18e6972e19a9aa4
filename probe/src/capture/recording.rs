//! What a recording holds: each root-relative physical path and what the probe found
//! there.

use std::collections::BTreeMap;
use std::path::PathBuf;

use super::netlink_file::NetlinkExchange;

/// One recorded path: what the probe found there. Paths are relative to the root and
/// contain no symlink except possibly as their last component.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RecordedNode {
    /// A file and the bytes read from it.
    File(Vec<u8>),
    /// A regular file that appeared in a listing but was never read.
    ListedFile,
    /// A directory (listed, or checked for, or on the way to a file).
    Dir,
    /// A symlink: its target as the link says it (made relative when it was absolute, so
    /// a written tree never points out of itself), and what it resolves to.
    Link {
        /// The target to write, relative to the link's directory.
        target: PathBuf,
        /// The root-relative path it resolves to.
        resolved: PathBuf,
        /// Whether that is a directory.
        to_dir: bool,
    },
    /// A read that failed with this error: the file is left out of a written tree (no
    /// tree can make a plain file answer EINVAL), and the manifest says why.
    Unreadable {
        /// The OS error number, when there was one.
        errno: Option<i32>,
        /// The error as text.
        message: String,
    },
}

/// Everything one session recorded, by root-relative physical path.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Recording {
    /// The recorded paths.
    pub nodes: BTreeMap<PathBuf, RecordedNode>,
    /// Reads that could not be placed in the root (a link that leaves it, a path that is
    /// not under it), with why: recorded so the manifest can say what the replay lacks.
    pub outside: Vec<(PathBuf, String)>,
    /// The netlink exchanges made meanwhile, in order (every socket of the process: a
    /// recording is process-wide).
    pub netlink: Vec<NetlinkExchange>,
}
