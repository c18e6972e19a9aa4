use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use crate::{capture, ProbeError};

/// The root under which `sys/`, `proc/` and `etc/` are read. `/` on a live system; a
/// fixture directory in tests; a mounted image in the field (`--sys-root`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SysRoot {
    root: PathBuf,
}

impl Default for SysRoot {
    fn default() -> Self {
        Self::new("/")
    }
}

impl SysRoot {
    /// A root at `root`.
    pub fn new(root: impl Into<PathBuf>) -> Self {
        Self { root: root.into() }
    }

    /// The root directory itself.
    pub fn path(&self) -> &Path {
        &self.root
    }

    /// `{root}/sys/{rel}`.
    pub fn sys(&self, rel: impl AsRef<Path>) -> PathBuf {
        self.root.join("sys").join(rel)
    }

    /// `{root}/proc/{rel}`.
    pub fn proc(&self, rel: impl AsRef<Path>) -> PathBuf {
        self.root.join("proc").join(rel)
    }

    /// `{root}/etc/{rel}`.
    pub fn etc(&self, rel: impl AsRef<Path>) -> PathBuf {
        self.root.join("etc").join(rel)
    }
}

/// Reads a sysfs-style attribute and trims the trailing newline.
pub(crate) fn read_attr(path: &Path) -> Result<String, ProbeError> {
    read_text(path)
        .map(|s| s.trim_end_matches(['\n', '\0']).trim_end().to_owned())
        .map_err(|e| ProbeError::read(path, e))
}

/// `fs::read_to_string`, seen by an open capture recording.
pub(crate) fn read_text(path: &Path) -> io::Result<String> {
    let text = fs::read_to_string(path);
    if capture::is_active() {
        capture::note_read(path, text.as_ref().map(|t| t.as_bytes()));
    }
    text
}

/// `fs::read`, seen by an open capture recording.
pub(crate) fn read_bytes(path: &Path) -> io::Result<Vec<u8>> {
    let bytes = fs::read(path);
    if capture::is_active() {
        capture::note_read(path, bytes.as_deref());
    }
    bytes
}

/// `path.is_dir()`, seen by an open capture recording (so a replayed tree has the
/// directory even when nothing under it was read).
pub(crate) fn is_dir(path: &Path) -> bool {
    if capture::is_active() {
        capture::note_presence(path);
    }
    path.is_dir()
}

/// `path.exists()`, seen by an open capture recording.
pub(crate) fn exists(path: &Path) -> bool {
    if capture::is_active() {
        capture::note_presence(path);
    }
    path.exists()
}

/// `fs::canonicalize`, seen by an open capture recording (which keeps every link on the
/// way, so the replayed tree resolves the same).
pub(crate) fn canonicalize(path: &Path) -> io::Result<PathBuf> {
    if capture::is_active() {
        capture::note_presence(path);
    }
    fs::canonicalize(path)
}

/// Reads an attribute that may legitimately be absent or unreadable (EINVAL on empty
/// GID entries, EOPNOTSUPP on `speed` of virtual devices): `None` instead of an error.
pub(crate) fn read_optional_attr(path: &Path) -> Option<String> {
    read_attr(path).ok().filter(|s| !s.is_empty())
}

/// Lists directory entry names, sorted, so output is stable.
pub(crate) fn list_dir(path: &Path) -> Result<Vec<String>, ProbeError> {
    let names = read_names(path);
    if capture::is_active() {
        capture::note_listing(path, names.as_deref());
    }
    match names {
        Ok(names) => Ok(names),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(Vec::new()),
        Err(e) => Err(ProbeError::read(path, e)),
    }
}

/// The UTF-8 entry names of `path`, sorted.
fn read_names(path: &Path) -> io::Result<Vec<String>> {
    let mut names = Vec::new();
    for entry in fs::read_dir(path)? {
        if let Some(name) = entry?.file_name().to_str() {
            names.push(name.to_owned());
        }
    }
    names.sort();
    Ok(names)
}

/// Resolves a sysfs symlink and returns its last path component (a driver name, a PCI
/// address).
pub(crate) fn link_basename(path: &Path) -> Option<String> {
    if capture::is_active() {
        capture::note_presence(path);
    }
    fs::read_link(path)
        .ok()
        .and_then(|target| target.file_name().map(|n| n.to_string_lossy().into_owned()))
}
