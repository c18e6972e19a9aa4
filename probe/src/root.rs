use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use crate::ProbeError;

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
    fs::read_to_string(path)
        .map(|s| s.trim_end_matches(['\n', '\0']).trim_end().to_owned())
        .map_err(|e| ProbeError::read(path, e))
}

/// Reads an attribute that may legitimately be absent or unreadable (EINVAL on empty
/// GID entries, EOPNOTSUPP on `speed` of virtual devices): `None` instead of an error.
pub(crate) fn read_optional_attr(path: &Path) -> Option<String> {
    read_attr(path).ok().filter(|s| !s.is_empty())
}

/// Lists directory entry names, sorted, so output is stable.
pub(crate) fn list_dir(path: &Path) -> Result<Vec<String>, ProbeError> {
    let entries = match fs::read_dir(path) {
        Ok(entries) => entries,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(ProbeError::read(path, e)),
    };
    let mut names = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|e| ProbeError::read(path, e))?;
        if let Some(name) = entry.file_name().to_str() {
            names.push(name.to_owned());
        }
    }
    names.sort();
    Ok(names)
}

/// Resolves a sysfs symlink and returns its last path component (a driver name, a PCI
/// address).
pub(crate) fn link_basename(path: &Path) -> Option<String> {
    fs::read_link(path)
        .ok()
        .and_then(|target| target.file_name().map(|n| n.to_string_lossy().into_owned()))
}
