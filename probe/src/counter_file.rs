//! Fast reads of small counter files: a directory opened once, its regular files listed
//! from `readdir` types (no `stat` per entry), and each file opened relative to the
//! directory and read into a stack buffer (no path walk from `/`, no size probe, no heap
//! string). A snapshot reads thousands of these, and every microsecond per file is skew.

use std::fs::{self, File};
use std::io::{self, Read as _};
use std::os::fd::AsFd as _;
use std::path::PathBuf;

use nix::fcntl::{openat, OFlag};
use nix::sys::stat::Mode;

use crate::ProbeError;

/// Longest counter file content accepted; sysfs counters are one decimal line.
const MAX_COUNTER_TEXT: usize = 64;

/// An open directory of counter files.
#[derive(Debug)]
pub(crate) struct CounterDir {
    path: PathBuf,
    dir: File,
}

impl CounterDir {
    /// Opens `path`; `None` when it does not exist (a device without `hw_counters/`).
    pub(crate) fn open(path: PathBuf) -> Result<Option<Self>, ProbeError> {
        match File::open(&path) {
            Ok(dir) => Ok(Some(Self { path, dir })),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(ProbeError::read(path, e)),
        }
    }

    /// Regular files, sorted so output is stable. sysfs reports `DT_REG` in `readdir`;
    /// symlinks (fixture trees) and filesystems that report `DT_UNKNOWN` fall back to a
    /// `stat` that follows the link.
    pub(crate) fn files(&self) -> Result<Vec<String>, ProbeError> {
        let entries = fs::read_dir(&self.path).map_err(|e| ProbeError::read(&self.path, e))?;
        let mut names = Vec::new();
        for entry in entries {
            let entry = entry.map_err(|e| ProbeError::read(&self.path, e))?;
            let is_file = match entry.file_type() {
                Ok(t) if t.is_file() => true,
                Ok(t) if t.is_dir() => false,
                _ => entry.path().is_file(),
            };
            if is_file {
                if let Some(name) = entry.file_name().to_str() {
                    names.push(name.to_owned());
                }
            }
        }
        names.sort_unstable();
        Ok(names)
    }

    /// Reads one file's content (trimmed of the trailing newline and NULs) into `buf`,
    /// returning the text. Errors are the raw I/O error so callers can tell "not
    /// available here" (EINVAL, EOPNOTSUPP) from a fault; see [`CounterDir::file_path`].
    pub(crate) fn read<'b>(
        &self,
        name: &str,
        buf: &'b mut [u8; MAX_COUNTER_TEXT],
    ) -> io::Result<&'b str> {
        let fd = openat(
            self.dir.as_fd(),
            name,
            OFlag::O_RDONLY | OFlag::O_CLOEXEC,
            Mode::empty(),
        )
        .map_err(io::Error::from)?;
        let mut file = File::from(fd);
        let mut len = 0;
        // sysfs answers a whole attribute in one read; loop for other filesystems.
        while len < buf.len() {
            match file.read(&mut buf[len..])? {
                0 => break,
                n => len += n,
            }
        }
        if len == buf.len() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!("longer than {MAX_COUNTER_TEXT} bytes"),
            ));
        }
        let text = std::str::from_utf8(&buf[..len])
            .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))?;
        Ok(text.trim_end_matches(['\n', '\0']).trim())
    }

    /// Opens one file of this directory for reading, relative to the directory.
    pub(crate) fn open_file(&self, name: &str) -> io::Result<File> {
        let fd = openat(
            self.dir.as_fd(),
            name,
            OFlag::O_RDONLY | OFlag::O_CLOEXEC,
            Mode::empty(),
        )
        .map_err(io::Error::from)?;
        Ok(File::from(fd))
    }

    /// The full path of a file in this directory, for error messages.
    pub(crate) fn file_path(&self, name: &str) -> PathBuf {
        self.path.join(name)
    }
}

/// Counter files kept open between snapshots of one sampler, read again with `pread` at
/// offset 0 (sysfs regenerates an attribute on every read from offset 0): one system
/// call per counter instead of three. Bounded, so a huge tree cannot exhaust the file
/// descriptor limit; files not read in the last snapshot are closed. A fixture file
/// replaced by a new inode (rename over it) is seen only once its old descriptor fails,
/// so fixtures must be rewritten in place, as sysfs itself never replaces a counter.
#[derive(Debug, Default)]
pub(crate) struct FileCache {
    files: std::collections::HashMap<PathBuf, (File, u64)>,
    generation: u64,
    budget: usize,
}

impl FileCache {
    /// A cache holding at most `budget` open files (0: never caches).
    pub(crate) fn with_budget(budget: usize) -> Self {
        Self {
            budget,
            ..Self::default()
        }
    }

    /// Changes the bound; files beyond it are closed at the next [`FileCache::start_round`].
    pub(crate) fn set_budget(&mut self, budget: usize) {
        self.budget = budget;
    }

    /// Starts a snapshot: files not read since the previous start are closed, and so are
    /// files beyond the budget.
    pub(crate) fn start_round(&mut self) {
        let current = self.generation;
        self.files.retain(|_, (_, seen)| *seen == current);
        if self.files.len() > self.budget {
            self.files.clear();
        }
        self.generation += 1;
    }

    /// Reads `name` in `dir` through a cached descriptor when there is one.
    pub(crate) fn read<'b>(
        &mut self,
        dir: &CounterDir,
        name: &str,
        buf: &'b mut [u8; MAX_COUNTER_TEXT],
    ) -> io::Result<&'b str> {
        use std::os::unix::fs::FileExt as _;
        if self.budget == 0 {
            return dir.read(name, buf);
        }
        let path = dir.file_path(name);
        if let Some((file, seen)) = self.files.get_mut(&path) {
            *seen = self.generation;
            match file.read_at(&mut buf[..], 0) {
                Ok(len) => return finish_text(buf, len),
                // The device went away (ENODEV) or the file was replaced: reopen below.
                Err(_) => {
                    self.files.remove(&path);
                }
            }
        }
        let file = dir.open_file(name)?;
        let len = file.read_at(&mut buf[..], 0)?;
        if self.files.len() < self.budget {
            self.files.insert(path, (file, self.generation));
        }
        finish_text(buf, len)
    }
}

fn finish_text(buf: &[u8; MAX_COUNTER_TEXT], len: usize) -> io::Result<&str> {
    if len == buf.len() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("longer than {MAX_COUNTER_TEXT} bytes"),
        ));
    }
    let text = std::str::from_utf8(&buf[..len])
        .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))?;
    Ok(text.trim_end_matches(['\n', '\0']).trim())
}

/// A fresh buffer for [`CounterDir::read`].
pub(crate) fn buffer() -> [u8; MAX_COUNTER_TEXT] {
    [0; MAX_COUNTER_TEXT]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_only_files_and_reads_trimmed_text() {
        let dir = tempfile::tempdir().expect("tempdir");
        fs::write(dir.path().join("b"), "42\n").expect("write");
        fs::write(dir.path().join("a"), "7\0\n").expect("write");
        fs::create_dir(dir.path().join("sub")).expect("mkdir");
        let d = CounterDir::open(dir.path().to_owned())
            .expect("open")
            .expect("exists");
        assert_eq!(d.files().expect("files"), ["a", "b"]);
        let mut buf = buffer();
        assert_eq!(d.read("b", &mut buf).expect("read"), "42");
        let mut buf = buffer();
        assert_eq!(d.read("a", &mut buf).expect("read"), "7");
        let err = d.read("missing", &mut buffer()).expect_err("missing");
        assert_eq!(err.kind(), io::ErrorKind::NotFound);
    }

    #[test]
    fn absent_directory_is_none_and_oversized_content_is_an_error() {
        let dir = tempfile::tempdir().expect("tempdir");
        assert!(CounterDir::open(dir.path().join("nope"))
            .expect("ok")
            .is_none());
        fs::write(dir.path().join("big"), "9".repeat(100)).expect("write");
        let d = CounterDir::open(dir.path().to_owned())
            .expect("open")
            .expect("exists");
        let err = d.read("big", &mut buffer()).expect_err("too long");
        assert_eq!(err.kind(), io::ErrorKind::InvalidData);
    }

    #[test]
    fn the_cache_rereads_in_place_updates_and_respects_its_budget() {
        let dir = tempfile::tempdir().expect("tempdir");
        for name in ["a", "b", "c"] {
            fs::write(dir.path().join(name), "1\n").expect("write");
        }
        let d = CounterDir::open(dir.path().to_owned())
            .expect("open")
            .expect("exists");
        let mut cache = FileCache::with_budget(2);
        cache.start_round();
        for name in ["a", "b", "c"] {
            assert_eq!(cache.read(&d, name, &mut buffer()).expect("read"), "1");
        }
        assert_eq!(cache.files.len(), 2, "at most the budget stays open");

        // sysfs and fixtures rewrite in place: the cached descriptor sees the new value.
        fs::write(dir.path().join("a"), "42\n").expect("rewrite");
        cache.start_round();
        assert_eq!(cache.read(&d, "a", &mut buffer()).expect("read"), "42");

        // A file not read in a round is closed at the next one.
        cache.start_round();
        assert_eq!(cache.files.len(), 1, "only `a` was read last round");
        assert!(cache.files.keys().all(|p| p.ends_with("a")));

        // A vanished file is an error, not a stale value.
        fs::remove_file(dir.path().join("b")).expect("remove");
        let mut fresh = FileCache::with_budget(8);
        fresh.start_round();
        let err = fresh.read(&d, "b", &mut buffer()).expect_err("gone");
        assert_eq!(err.kind(), io::ErrorKind::NotFound);
    }
}
