//! Recording what the probe reads, so a machine can be replayed as a `--sys-root`.
//!
//! The probe reads sysfs, procfs and `etc/` through the helpers of `root.rs` and a few
//! kept-descriptor readers; while a [`RecordingSession`] is open every one of those reads
//! also lands here: a file's bytes, a directory's listing, a symlink's target, or the
//! error the read gave. Paths are kept *physically* (every symlink on the way resolved and
//! kept as a link of its own), so a tree written from a [`Recording`] has the same links
//! the probe followed and `canonicalize` answers the same in it.
//!
//! Netlink exchanges (route, RDMA, DCB) are recorded too, by the one exchange loop every
//! kernel netlink socket goes through (`netlink/exchange.rs`), as raw messages with the
//! request that produced them ([`NetlinkExchange`], the file format of `netlink_file.rs`).
//!
//! Inactive, a reader pays one relaxed atomic load (`is_active`). One session records
//! at a time in a process (the readers have no handle to pass a recorder through); a
//! second [`start`] while one is open is refused.

mod netlink_file;
mod recording;
mod walk;

use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, PoisonError};

pub use netlink_file::{
    family_name, normalise, parse_netlink_file, stamp_sequence, write_netlink_file,
    NetlinkExchange, NETLINK_FORMAT,
};
pub use recording::{RecordedNode, Recording};

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

/// An open recording; [`RecordingSession::finish`] ends it and hands back what it saw.
/// Dropping it without finishing ends it too (and throws the recording away).
#[derive(Debug)]
pub struct RecordingSession {
    finished: bool,
}

/// Starts recording every read under `root` (a [`SysRoot`](crate::SysRoot)'s path) in
/// this process.
pub fn start(root: &Path) -> Result<RecordingSession, RecordError> {
    let canonical = std::fs::canonicalize(root).map_err(|source| RecordError::Root {
        path: root.to_owned(),
        source,
    })?;
    let mut state = STATE.lock().unwrap_or_else(PoisonError::into_inner);
    if state.is_some() {
        return Err(RecordError::Busy);
    }
    *state = Some(walk::Recorder::new(root.to_owned(), canonical));
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

/// Records one netlink exchange: the request sent on a socket of `protocol` (named
/// `name` in errors) and the datagrams that answered it.
pub(crate) fn note_netlink(protocol: i32, name: &str, request: &[u8], datagrams: &[Vec<u8>]) {
    let exchange = NetlinkExchange::from_wire(protocol, name, request, datagrams);
    with_recorder(|r| r.netlink(exchange));
}

/// Records that the reader looked at `path` (a link it resolved, a directory it checked
/// for): the links on the way and what is there.
pub(crate) fn note_presence(path: &Path) {
    with_recorder(|r| r.presence(path));
}

#[cfg(test)]
mod tests;
