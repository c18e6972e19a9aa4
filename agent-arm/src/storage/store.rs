//! Keeps the desired storage state on disk, crash-safely.
//!
//! A save writes a temporary file beside the real one, flushes it to the device, renames
//! it over the real one and flushes the directory: after a crash or power loss the file is
//! either the old document or the new one, never a mix. A file that cannot be parsed is
//! an error at start, never an empty state: silently forgetting what the host was given
//! would be worse than not starting.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Write as _};
use std::os::unix::fs::OpenOptionsExt as _;
use std::path::{Path, PathBuf};

use super::desired::{Desired, DOC_VERSION};

/// File name of the document inside the state directory.
const FILE_NAME: &str = "storage.json";

/// Why the state could not be read or written.
#[derive(Debug, thiserror::Error)]
pub(crate) enum StoreError {
    #[error("cannot {action} {}", path.display())]
    Io {
        action: &'static str,
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("{} is not a valid storage state document", path.display())]
    Parse {
        path: PathBuf,
        #[source]
        source: serde_json::Error,
    },
    #[error(
        "{} has layout version {found}; this agent understands up to {DOC_VERSION} (downgrade?)",
        path.display()
    )]
    TooNew { path: PathBuf, found: u32 },
}

/// The document's place on disk.
#[derive(Debug, Clone)]
pub(crate) struct StateStore {
    dir: PathBuf,
}

impl StateStore {
    pub(crate) fn new(dir: &Path) -> Self {
        Self {
            dir: dir.to_path_buf(),
        }
    }

    pub(crate) fn path(&self) -> PathBuf {
        self.dir.join(FILE_NAME)
    }

    /// The saved document, or an empty one when none was ever saved.
    pub(crate) fn load(&self) -> Result<Desired, StoreError> {
        let path = self.path();
        let text = match fs::read_to_string(&path) {
            Ok(text) => text,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Desired::default()),
            Err(source) => {
                return Err(StoreError::Io {
                    action: "read",
                    path,
                    source,
                })
            }
        };
        let doc: Desired = serde_json::from_str(&text).map_err(|source| StoreError::Parse {
            path: path.clone(),
            source,
        })?;
        if doc.version > DOC_VERSION {
            return Err(StoreError::TooNew {
                path,
                found: doc.version,
            });
        }
        Ok(doc)
    }

    /// Replaces the saved document atomically and durably.
    pub(crate) fn save(&self, doc: &Desired) -> Result<(), StoreError> {
        let io_err = |action: &'static str, path: &Path| {
            let path = path.to_path_buf();
            move |source| StoreError::Io {
                action,
                path,
                source,
            }
        };
        fs::create_dir_all(&self.dir).map_err(io_err("create", &self.dir))?;
        let path = self.path();
        let tmp = self.dir.join(format!(".{FILE_NAME}.tmp"));
        let mut text = serde_json::to_vec_pretty(doc).map_err(|source| StoreError::Parse {
            path: path.clone(),
            source,
        })?;
        text.push(b'\n');
        let mut file = OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(0o600)
            .open(&tmp)
            .map_err(io_err("create", &tmp))?;
        file.write_all(&text).map_err(io_err("write", &tmp))?;
        file.sync_all().map_err(io_err("flush", &tmp))?;
        drop(file);
        fs::rename(&tmp, &path).map_err(io_err("replace", &path))?;
        File::open(&self.dir)
            .and_then(|dir| dir.sync_all())
            .map_err(io_err("flush", &self.dir))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_file_is_an_empty_state_and_a_save_reads_back() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = StateStore::new(&dir.path().join("state"));
        assert_eq!(store.load().expect("load"), Desired::default());
        let mut doc = Desired::default();
        doc.subsystems.insert(
            "nqn.2026-01.io.example:a".into(),
            super::super::desired::Entry::new(Default::default()),
        );
        store.save(&doc).expect("save");
        assert_eq!(store.load().expect("load"), doc);
        assert!(!dir.path().join("state/.storage.json.tmp").exists());
    }

    #[test]
    fn a_corrupt_or_newer_file_is_an_error_naming_it() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = StateStore::new(dir.path());
        fs::write(store.path(), "{\"version\":1,").expect("write");
        let err = store.load().expect_err("corrupt");
        assert!(err.to_string().contains("storage.json"), "{err}");
        fs::write(store.path(), "{\"version\":99}").expect("write");
        let err = store.load().expect_err("too new");
        assert!(err.to_string().contains("version 99"), "{err}");
    }
}
