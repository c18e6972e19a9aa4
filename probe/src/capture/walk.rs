//! The recorder proper: places each read at its physical root-relative path, recording
//! every symlink on the way as a link of its own.

use std::collections::btree_map::Entry;
use std::fs;
use std::io;
use std::path::{Component, Path, PathBuf};

use super::netlink_file::NetlinkExchange;
use super::recording::{RecordedNode, Recording};

/// The state of one open recording.
#[derive(Debug)]
pub(super) struct Recorder {
    /// The root as the readers join paths onto it.
    given: PathBuf,
    /// The same root with its own links resolved: where links are resolved against.
    canonical: PathBuf,
    recording: Recording,
}

impl Recorder {
    pub(super) fn new(given: PathBuf, canonical: PathBuf) -> Self {
        Self {
            given,
            canonical,
            recording: Recording::default(),
        }
    }

    pub(super) fn into_recording(self) -> Recording {
        self.recording
    }

    pub(super) fn file(&mut self, path: &Path, outcome: Result<&[u8], &io::Error>) {
        let Some(at) = self.place(path) else { return };
        match outcome {
            Ok(bytes) => match self.recording.nodes.entry(at) {
                // The first reading is the one the first reader saw; a later read in the
                // same session does not replace it.
                Entry::Occupied(mut e) => {
                    if matches!(e.get(), RecordedNode::ListedFile) {
                        e.insert(RecordedNode::File(bytes.to_vec()));
                    }
                }
                Entry::Vacant(e) => {
                    e.insert(RecordedNode::File(bytes.to_vec()));
                }
            },
            Err(e) => self.error(at, e),
        }
    }

    pub(super) fn listing(&mut self, path: &Path, outcome: Result<&[String], &io::Error>) {
        let Some(at) = self.place(path) else { return };
        match outcome {
            Ok(names) => {
                self.recording.nodes.insert(at.clone(), RecordedNode::Dir);
                for name in names {
                    self.note_entry(&at.join(name));
                }
            }
            Err(e) => self.error(at, e),
        }
    }

    pub(super) fn netlink(&mut self, exchange: NetlinkExchange) {
        self.recording.netlink.push(exchange);
    }

    pub(super) fn presence(&mut self, path: &Path) {
        if let Some(at) = self.place(path) {
            self.note_entry(&at);
        }
    }

    /// What is at the physical path `at`: a directory or a file the tree must show (a
    /// link there was recorded by [`Recorder::resolve`]).
    fn note_entry(&mut self, at: &Path) {
        let Ok(meta) = fs::symlink_metadata(self.canonical.join(at)) else {
            return;
        };
        let node = if meta.file_type().is_symlink() {
            self.resolve(at);
            return;
        } else if meta.is_dir() {
            RecordedNode::Dir
        } else {
            RecordedNode::ListedFile
        };
        self.recording.nodes.entry(at.to_owned()).or_insert(node);
    }

    fn error(&mut self, at: PathBuf, e: &io::Error) {
        // Absence replays by itself: a tree without the file answers ENOENT too.
        if e.kind() == io::ErrorKind::NotFound {
            return;
        }
        self.recording.nodes.insert(
            at,
            RecordedNode::Unreadable {
                errno: e.raw_os_error(),
                message: e.to_string(),
            },
        );
    }

    /// The physical root-relative path of `path`, or `None` (noted) when it is not under
    /// the root.
    fn place(&mut self, path: &Path) -> Option<PathBuf> {
        let Ok(rel) = path.strip_prefix(&self.given) else {
            self.recording
                .outside
                .push((path.to_owned(), "not under the sys root".to_owned()));
            return None;
        };
        self.resolve(rel)
    }

    /// Walks `rel` component by component, recording each symlink met (and following it),
    /// and returns the physical path; the part after a missing component is kept as given.
    fn resolve(&mut self, rel: &Path) -> Option<PathBuf> {
        let mut phys = PathBuf::new();
        let mut components = rel.components();
        while let Some(component) = components.next() {
            match component {
                Component::Normal(name) => {
                    let candidate = phys.join(name);
                    match fs::symlink_metadata(self.canonical.join(&candidate)) {
                        Ok(meta) if meta.file_type().is_symlink() => {
                            phys = self.follow(&candidate)?;
                        }
                        Ok(_) => phys = candidate,
                        Err(_) => {
                            phys = candidate;
                            phys.extend(components);
                            return Some(phys);
                        }
                    }
                }
                Component::ParentDir => {
                    phys.pop();
                }
                Component::CurDir | Component::RootDir | Component::Prefix(_) => {}
            }
        }
        Some(phys)
    }

    /// Records the link at the physical path `at` and returns where it resolves.
    fn follow(&mut self, at: &Path) -> Option<PathBuf> {
        if let Some(RecordedNode::Link { resolved, .. }) = self.recording.nodes.get(at) {
            return Some(resolved.clone());
        }
        let full = self.canonical.join(at);
        let target = fs::read_link(&full).ok()?;
        let parent = at.parent().unwrap_or(Path::new(""));
        let (resolved, to_dir) = match fs::canonicalize(&full) {
            Ok(real) => match real.strip_prefix(&self.canonical) {
                Ok(inside) => (inside.to_owned(), real.is_dir()),
                Err(_) => {
                    self.recording.outside.push((
                        at.to_owned(),
                        format!("a link to {} outside the sys root", real.display()),
                    ));
                    return None;
                }
            },
            // A dangling link: kept as it is, resolved by its text alone.
            Err(_) => (lexical_join(parent, &target), false),
        };
        let written = if target.is_absolute() {
            relative_from(parent, &resolved)
        } else {
            target
        };
        self.recording.nodes.insert(
            at.to_owned(),
            RecordedNode::Link {
                target: written,
                resolved: resolved.clone(),
                to_dir,
            },
        );
        Some(resolved)
    }
}

/// `base/target` with `..` applied by text, an absolute target taken from the root.
fn lexical_join(base: &Path, target: &Path) -> PathBuf {
    let mut out = if target.is_absolute() {
        PathBuf::new()
    } else {
        base.to_owned()
    };
    for component in target.components() {
        match component {
            Component::Normal(name) => out.push(name),
            Component::ParentDir => {
                out.pop();
            }
            _ => {}
        }
    }
    out
}

/// The relative path from the directory `from` to `to` (both root-relative, no links).
pub(super) fn relative_from(from: &Path, to: &Path) -> PathBuf {
    let from: Vec<_> = from.components().collect();
    let to: Vec<_> = to.components().collect();
    let common = from.iter().zip(&to).take_while(|(a, b)| a == b).count();
    let mut out = PathBuf::new();
    for _ in common..from.len() {
        out.push("..");
    }
    for component in &to[common..] {
        out.push(component.as_os_str());
    }
    out
}
