//! Writing a recording as a directory tree that is a `--sys-root`: files with their
//! recorded (and possibly redacted) bytes, directories, symlinks as symlinks.

use std::collections::BTreeMap;
use std::fs;
use std::io;
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};

use dpu_probe::capture::RecordedNode;

use super::error::CaptureError;

/// Writes `nodes` under `dir` (which exists and is empty). `contents` gives each file's
/// bytes as they are to be written (after redaction).
pub(super) fn write_tree(
    dir: &Path,
    nodes: &BTreeMap<PathBuf, RecordedNode>,
    contents: &BTreeMap<PathBuf, Vec<u8>>,
) -> Result<(), CaptureError> {
    let io_err = |path: &Path| {
        let path = path.to_owned();
        move |source: io::Error| CaptureError::Write { path, source }
    };
    // Files and directories first: their paths are physical, so no link is on the way.
    for (rel, node) in nodes {
        let at = dir.join(rel);
        match node {
            RecordedNode::Dir => fs::create_dir_all(&at).map_err(io_err(&at))?,
            RecordedNode::File(_) | RecordedNode::ListedFile => {
                if let Some(parent) = at.parent() {
                    fs::create_dir_all(parent).map_err(io_err(parent))?;
                }
                let bytes = contents.get(rel).map_or(&[][..], |b| &b[..]);
                fs::write(&at, bytes).map_err(io_err(&at))?;
            }
            RecordedNode::Link { .. } | RecordedNode::Unreadable { .. } => {}
        }
    }
    // Then links, shallow first, each with what it points to made present.
    let mut links: Vec<_> = nodes
        .iter()
        .filter_map(|(rel, node)| match node {
            RecordedNode::Link {
                target,
                resolved,
                to_dir,
            } => Some((rel, target, resolved, *to_dir)),
            _ => None,
        })
        .collect();
    links.sort_by_key(|(rel, ..)| rel.components().count());
    for (rel, target, resolved, to_dir) in links {
        let at = dir.join(rel);
        let end = dir.join(resolved);
        if to_dir {
            fs::create_dir_all(&end).map_err(io_err(&end))?;
        } else if !resolved.as_os_str().is_empty() && fs::symlink_metadata(&end).is_err() {
            if let Some(parent) = end.parent() {
                fs::create_dir_all(parent).map_err(io_err(parent))?;
            }
            // A link to a file nothing read: present (empty) so the link resolves.
            fs::write(&end, b"").map_err(io_err(&end))?;
        }
        if let Some(parent) = at.parent() {
            fs::create_dir_all(parent).map_err(io_err(parent))?;
        }
        if fs::symlink_metadata(&at).is_ok() {
            // A directory made for a path under this link before it was known as one:
            // cannot happen for physical paths, but never write through it.
            return Err(CaptureError::Write {
                path: at,
                source: io::Error::new(io::ErrorKind::AlreadyExists, "link over an entry"),
            });
        }
        symlink(target, &at).map_err(io_err(&at))?;
    }
    Ok(())
}
