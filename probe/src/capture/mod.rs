//! Recording what the probe reads, so a machine can be replayed as a `--sys-root`.
//!
//! The probe reads sysfs, procfs and `etc/` through the helpers of `root.rs` and a few
//! kept-descriptor readers; while a [`RecordingSession`] is open every one of those reads
//! also lands here: a file's bytes, a directory's listing, a symlink's target, or the
//! error the read gave. Paths are kept *physically* (every symlink on the way resolved and
//! kept as a link of its own), so a tree written from a [`Recording`] has the same links
//! the probe followed and `canonicalize` answers the same in it.
//!
//! Inactive, a reader pays one relaxed atomic load ([`is_active`]). One session records
//! at a time in a process (the readers have no handle to pass a recorder through); a
//! second [`start`] while one is open is refused.

mod walk;

use std::collections::BTreeMap;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, PoisonError};

use crate::SysRoot;

static ACTIVE: AtomicBool = AtomicBool::new(false);
static STATE: Mutex<Option<walk::Recorder>> = Mutex::new(None);

/// Why a recording could not start.
#[derive(Debug, thiserror::Error)]
pub enum RecordError {
    /// Another session of this process is recording.
    #[error("a capture is already recording in this process")]
    Busy,
    /// The root cannot be resolved (it does not exist, or is not readable).
    #[error("cannot resolve the sys root {path}")]
    Root {
        /// The root as given.
        path: PathBuf,
        /// Why.
        #[source]
        source: io::Error,
    },
}

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
}

/// An open recording; [`RecordingSession::finish`] ends it and hands back what it saw.
/// Dropping it without finishing ends it too (and throws the recording away).
#[derive(Debug)]
pub struct RecordingSession {
    finished: bool,
}

/// Starts recording every read under `root` in this process.
pub fn start(root: &SysRoot) -> Result<RecordingSession, RecordError> {
    let canonical = std::fs::canonicalize(root.path()).map_err(|source| RecordError::Root {
        path: root.path().to_owned(),
        source,
    })?;
    let mut state = STATE.lock().unwrap_or_else(PoisonError::into_inner);
    if state.is_some() {
        return Err(RecordError::Busy);
    }
    *state = Some(walk::Recorder::new(root.path().to_owned(), canonical));
    ACTIVE.store(true, Ordering::Release);
    Ok(RecordingSession { finished: false })
}

impl RecordingSession {
    /// Stops recording and returns what was read.
    pub fn finish(mut self) -> Recording {
        self.finished = true;
        stop().unwrap_or_default()
    }
}

impl Drop for RecordingSession {
    fn drop(&mut self) {
        if !self.finished {
            stop();
        }
    }
}

fn stop() -> Option<Recording> {
    ACTIVE.store(false, Ordering::Release);
    let mut state = STATE.lock().unwrap_or_else(PoisonError::into_inner);
    state.take().map(walk::Recorder::into_recording)
}

/// Whether a recording is open: the one check a reader makes when none is.
#[inline]
pub(crate) fn is_active() -> bool {
    ACTIVE.load(Ordering::Relaxed)
}

fn with_recorder(f: impl FnOnce(&mut walk::Recorder)) {
    let mut state = STATE.lock().unwrap_or_else(PoisonError::into_inner);
    if let Some(recorder) = state.as_mut() {
        f(recorder);
    }
}

/// Records a file read at `path` and its outcome.
pub(crate) fn note_read(path: &Path, outcome: Result<&[u8], &io::Error>) {
    with_recorder(|r| r.file(path, outcome));
}

/// Records a directory listing at `path` (the names the reader got, before filtering).
pub(crate) fn note_listing(path: &Path, outcome: Result<&[String], &io::Error>) {
    with_recorder(|r| r.listing(path, outcome));
}

/// Records that the reader looked at `path` (a link it resolved, a directory it checked
/// for): the links on the way and what is there.
pub(crate) fn note_presence(path: &Path) {
    with_recorder(|r| r.presence(path));
}

#[cfg(test)]
mod tests;
