//! The few configfs operations whose semantics differ from a plain filesystem, behind
//! [`ConfigFs`] so tests can run the nvmet backend on a tempdir.
//!
//! configfs differs in three ways: `mkdir` makes the kernel populate the new directory
//! with attribute files and default groups; attribute files can only be opened, never
//! created; and `rmdir` succeeds on a directory that still shows attributes (they vanish
//! with it) but fails while user-made children or links remain. Reading attributes,
//! listing directories and making or removing symlinks behave as usual and use `std`.

use std::fs::{self, OpenOptions};
use std::io::{self, Write};
use std::path::Path;

use super::KernelError;

/// The configfs operations the nvmet backend performs.
pub trait ConfigFs: std::fmt::Debug {
    /// Creates a config item; on configfs the kernel fills it with its attributes.
    fn mkdir(&self, path: &Path) -> io::Result<()>;

    /// Removes a config item made by [`ConfigFs::mkdir`], with its attributes.
    fn rmdir(&self, path: &Path) -> io::Result<()>;

    /// Stores `value` in an existing attribute, in one `write(2)`.
    fn write_attr(&self, path: &Path, value: &str) -> io::Result<()>;

    /// Links `link` to the config item `target` (an ordinary `symlink(2)` on configfs).
    fn symlink(&self, target: &Path, link: &Path) -> io::Result<()> {
        std::os::unix::fs::symlink(target, link)
    }

    /// Removes a link made by [`ConfigFs::symlink`] (an ordinary `unlink(2)`).
    fn unlink(&self, link: &Path) -> io::Result<()> {
        fs::remove_file(link)
    }
}

/// The real configfs.
#[derive(Debug, Clone, Copy, Default)]
pub struct KernelConfigFs;

impl ConfigFs for KernelConfigFs {
    fn mkdir(&self, path: &Path) -> io::Result<()> {
        fs::create_dir(path)
    }

    /// Only `rmdir(2)`: configfs removes the attributes itself, and deleting them first
    /// is impossible (attribute files cannot be unlinked).
    fn rmdir(&self, path: &Path) -> io::Result<()> {
        fs::remove_dir(path)
    }

    /// Opens without `create`/`truncate` (configfs attributes exist from `mkdir` on and
    /// cannot be created) and writes the value without a newline in one call, because
    /// configfs hands each `write(2)` to the attribute's store function as a whole, and
    /// older kernels' `device_path` store kept a trailing newline as part of the path.
    fn write_attr(&self, path: &Path, value: &str) -> io::Result<()> {
        let mut file = OpenOptions::new().write(true).open(path)?;
        let n = file.write(value.as_bytes())?;
        if n == value.len() {
            Ok(())
        } else {
            Err(io::Error::new(
                io::ErrorKind::WriteZero,
                format!("short write: {n} of {} bytes", value.len()),
            ))
        }
    }
}

/// Reads an attribute, dropping the trailing newline the kernel's show functions print.
pub(crate) fn read_attr(path: &Path) -> Result<String, KernelError> {
    fs::read_to_string(path)
        .map(|s| s.trim_end_matches(['\n', '\0']).to_owned())
        .map_err(|e| KernelError::io("read", path, e))
}

/// Like [`read_attr`], but an absent file is `None` (optional attributes).
pub(crate) fn read_optional(path: &Path) -> Result<Option<String>, KernelError> {
    match fs::read_to_string(path) {
        Ok(s) => Ok(Some(s.trim_end_matches(['\n', '\0']).to_owned())),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(KernelError::io("read", path, e)),
    }
}

/// The entry names of a directory, sorted; an absent directory has none.
pub(crate) fn list_names(dir: &Path) -> Result<Vec<String>, KernelError> {
    let entries = match fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(KernelError::io("list", dir, e)),
    };
    let mut names = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|e| KernelError::io("list", dir, e))?;
        names.push(entry.file_name().to_string_lossy().into_owned());
    }
    names.sort();
    Ok(names)
}

/// Whether anything (a directory, file or link, even a dangling one) is at `path`.
pub(crate) fn present(path: &Path) -> bool {
    fs::symlink_metadata(path).is_ok()
}
