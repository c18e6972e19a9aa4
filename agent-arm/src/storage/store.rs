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
use std::sync::Arc;

use super::desired::{Desired, DOC_VERSION};
use crate::telemetry::AgentMetrics;

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
    /// Another agent holds the state directory: two agents on one document would each
    /// overwrite what the other acknowledged.
    #[error(
        "{} is locked by another dpu-agent ({holder}); one agent per state directory",
        path.display()
    )]
    Locked { path: PathBuf, holder: String },
}

/// The state directory held exclusively by this process (an advisory `flock` on
/// `{state_dir}/lock`, released by the kernel when the process exits, however it exits).
#[derive(Debug)]
pub(crate) struct DirLock {
    _file: File,
}

/// The name of the lock file in the state directory.
const LOCK_NAME: &str = "lock";

/// The document's place on disk.
#[derive(Debug, Clone)]
pub(crate) struct StateStore {
    dir: PathBuf,
    /// Every save is counted here (`dpu_agent_state_file_writes_total`): a disk that stops
    /// taking the state is an alert, not only a log line.
    metrics: Arc<AgentMetrics>,
}

impl StateStore {
    pub(crate) fn new(dir: &Path, metrics: Arc<AgentMetrics>) -> Self {
        Self {
            dir: dir.to_path_buf(),
            metrics,
        }
    }

    pub(crate) fn path(&self) -> PathBuf {
        self.dir.join(FILE_NAME)
    }

    /// Takes the state directory for this process, before anything is read: creates it if
    /// needed, refuses when another agent holds it (naming its pid), and so also proves the
    /// directory writable at start instead of at the first change. A temporary file a save
    /// left behind (a crash between write and rename) is removed.
    pub(crate) fn lock(&self) -> Result<DirLock, StoreError> {
        let path = self.dir.join(LOCK_NAME);
        let io = |action: &'static str, path: &Path| {
            let path = path.to_path_buf();
            move |source| StoreError::Io {
                action,
                path,
                source,
            }
        };
        fs::create_dir_all(&self.dir).map_err(io("create", &self.dir))?;
        let mut file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .mode(0o600)
            .open(&path)
            .map_err(io(
                "open for writing (the state directory must be writable)",
                &path,
            ))?;
        match file.try_lock() {
            Ok(()) => {}
            Err(fs::TryLockError::WouldBlock) => {
                let holder = fs::read_to_string(&path)
                    .ok()
                    .and_then(|text| text.trim().parse::<u32>().ok())
                    .map_or_else(|| "pid unknown".to_owned(), |pid| format!("pid {pid}"));
                return Err(StoreError::Locked { path, holder });
            }
            Err(fs::TryLockError::Error(source)) => {
                return Err(StoreError::Io {
                    action: "lock",
                    path,
                    source,
                })
            }
        }
        file.set_len(0)
            .and_then(|()| writeln!(file, "{}", std::process::id()))
            .and_then(|()| file.sync_all())
            .map_err(io("write (the state directory must be writable)", &path))?;
        let tmp = self.tmp_path();
        match fs::remove_file(&tmp) {
            Ok(()) => {
                tracing::info!(path = %tmp.display(), "removed a temporary state file an interrupted save left")
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(source) => {
                return Err(StoreError::Io {
                    action: "remove",
                    path: tmp,
                    source,
                })
            }
        }
        // An existing lock file can be written where the directory takes no new file
        // (`chattr +i`, a read-only bind mount of the directory alone): every save creates
        // the temporary file first, so create and remove it now, not at the first change.
        OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&tmp)
            .and_then(|_| fs::remove_file(&tmp))
            .map_err(io(
                "create a file in (the state directory must take new files)",
                &tmp,
            ))?;
        Ok(DirLock { _file: file })
    }

    fn tmp_path(&self) -> PathBuf {
        self.dir.join(format!(".{FILE_NAME}.tmp"))
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

    /// Replaces the saved document atomically and durably, and counts the write by result.
    pub(crate) fn save(&self, doc: &Desired) -> Result<(), StoreError> {
        let saved = self.write(doc);
        self.metrics.state_file_written(saved.is_ok());
        saved
    }

    /// The save itself: a temporary file, flushed, renamed over the document, and the
    /// directory flushed.
    fn write(&self, doc: &Desired) -> Result<(), StoreError> {
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
        let tmp = self.tmp_path();
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
        let written = file
            .write_all(&text)
            .map_err(io_err("write", &tmp))
            .and_then(|()| file.sync_all().map_err(io_err("flush", &tmp)));
        drop(file);
        if let Err(e) =
            written.and_then(|()| fs::rename(&tmp, &path).map_err(io_err("replace", &path)))
        {
            // Never leave a half-written temporary file behind (a full disk, say).
            let _ = fs::remove_file(&tmp);
            return Err(e);
        }
        File::open(&self.dir)
            .and_then(|dir| dir.sync_all())
            .map_err(io_err("flush", &self.dir))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn metrics() -> Arc<AgentMetrics> {
        Arc::new(AgentMetrics::new())
    }

    fn text(metrics: &AgentMetrics) -> String {
        let mut out = String::new();
        prometheus_client::encoding::text::encode(&mut out, metrics.registry()).expect("encode");
        out
    }

    #[test]
    fn every_save_is_counted_by_result() {
        let dir = tempfile::tempdir().expect("tempdir");
        let metrics = metrics();
        let store = StateStore::new(&dir.path().join("state"), Arc::clone(&metrics));
        store.save(&Desired::default()).expect("save");
        store.save(&Desired::default()).expect("save again");
        // A state "directory" that is a file cannot take the document.
        fs::write(dir.path().join("file"), b"").expect("write");
        let broken = StateStore::new(&dir.path().join("file"), Arc::clone(&metrics));
        broken
            .save(&Desired::default())
            .expect_err("not a directory");
        let out = text(&metrics);
        assert!(
            out.contains("dpu_agent_state_file_writes_total{result=\"ok\"} 2"),
            "{out}"
        );
        assert!(
            out.contains("dpu_agent_state_file_writes_total{result=\"error\"} 1"),
            "{out}"
        );
    }

    #[test]
    fn a_directory_that_takes_no_new_file_is_refused_at_start() {
        // Issue 33 §7: with `state/lock` already there and the directory immutable, the
        // agent started, said Storage SERVING, and failed the first change. Only root can
        // set the flag (CI runs this as root).
        let dir = tempfile::tempdir().expect("tempdir");
        let state = dir.path().join("state");
        let store = StateStore::new(&state, metrics());
        drop(store.lock().expect("a writable directory is taken"));
        let immutable = std::process::Command::new("chattr")
            .arg("+i")
            .arg(&state)
            .status()
            .is_ok_and(|s| s.success());
        if !immutable {
            assert_ne!(
                std::env::var("DPU_TESTS_STRICT").as_deref(),
                Ok("1"),
                "chattr +i failed: this test needs root on a filesystem with the flag"
            );
            eprintln!("SKIPPED: chattr +i needs root on ext4/xfs");
            return;
        }
        let result = store.lock();
        let _ = std::process::Command::new("chattr")
            .arg("-i")
            .arg(&state)
            .status();
        let err = result.expect_err("an immutable state directory");
        let text = err.to_string();
        assert!(text.contains("must take new files"), "{text}");
        assert!(text.contains(".storage.json.tmp"), "{text}");
    }

    #[test]
    fn one_lock_per_directory_naming_the_holder() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = StateStore::new(&dir.path().join("state"), metrics());
        std::fs::create_dir_all(dir.path().join("state")).expect("mkdir");
        std::fs::write(store.tmp_path(), b"{half").expect("leftover");
        let held = store.lock().expect("first lock");
        assert!(
            !store.tmp_path().exists(),
            "the leftover temporary file is removed"
        );
        // A second open file description conflicts like a second process would.
        let err = StateStore::new(&dir.path().join("state"), metrics())
            .lock()
            .expect_err("second lock");
        let text = err.to_string();
        assert!(matches!(err, StoreError::Locked { .. }), "{text}");
        assert!(
            text.contains(&format!("pid {}", std::process::id())),
            "{text}"
        );
        drop(held);
        store.lock().expect("free again after the holder is gone");
    }

    #[test]
    fn a_missing_file_is_an_empty_state_and_a_save_reads_back() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = StateStore::new(&dir.path().join("state"), metrics());
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
        let store = StateStore::new(dir.path(), metrics());
        fs::write(store.path(), "{\"version\":1,").expect("write");
        let err = store.load().expect_err("corrupt");
        assert!(err.to_string().contains("storage.json"), "{err}");
        fs::write(store.path(), "{\"version\":99}").expect("write");
        let err = store.load().expect_err("too new");
        assert!(err.to_string().contains("version 99"), "{err}");
    }
}
