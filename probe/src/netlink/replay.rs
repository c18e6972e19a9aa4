//! Netlink answers from a capture's recording instead of the kernel, and the choice
//! between the two for a sys root ([`NetlinkAccess`]).
//!
//! A root is the live system (`/`: ask the kernel), or a tree. A tree that is a reading
//! of a capture bundle has its netlink exchanges beside it, in the file
//! [`recording_path`] names (`BUNDLE/root.netlink` for `BUNDLE/root`,
//! `BUNDLE/readings/1/root.netlink` for the second reading; the manifest lists each):
//! requests are then answered from it, matched by their content (sequence number and port
//! id aside), and a request it does not hold is [`NetlinkError::NotRecorded`], never a
//! live answer, because the live kernel is another machine. Any other tree has no netlink
//! at all ([`NetlinkAccess::Unavailable`]): its readers fall back to sysfs as before.

use std::collections::HashMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

use super::error::NetlinkError;
use crate::capture::{normalise, parse_netlink_file, NetlinkExchange};
use crate::SysRoot;

/// The recorded answers by request: protocol and normalised request bytes.
type Key = (i32, Vec<u8>);

/// A capture's netlink recording, answering the requests it holds. The same request
/// asked again gets the next recorded answer to it, then the last one again: the
/// recording is the machine at one instant.
pub struct NetlinkReplay {
    path: PathBuf,
    answers: HashMap<Key, Vec<Vec<Vec<u8>>>>,
    served: Mutex<HashMap<Key, usize>>,
}

impl fmt::Debug for NetlinkReplay {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("NetlinkReplay")
            .field("path", &self.path)
            .field("requests", &self.answers.len())
            .finish_non_exhaustive()
    }
}

impl NetlinkReplay {
    /// Reads and parses the recording at `path`.
    pub fn load(path: &Path) -> Result<Self, NetlinkError> {
        let broken = |reason: String| NetlinkError::Recording {
            path: path.to_owned(),
            reason,
        };
        let text = std::fs::read_to_string(path).map_err(|e| broken(e.to_string()))?;
        let exchanges = parse_netlink_file(&text).map_err(broken)?;
        Ok(Self::from_exchanges(path.to_owned(), exchanges))
    }

    /// A replay of `exchanges`, named `path` in errors.
    pub fn from_exchanges(path: PathBuf, exchanges: Vec<NetlinkExchange>) -> Self {
        let mut answers: HashMap<Key, Vec<Vec<Vec<u8>>>> = HashMap::new();
        for exchange in exchanges {
            let mut request = exchange.request;
            normalise(&mut request);
            answers
                .entry((exchange.protocol, request))
                .or_default()
                .push(exchange.answers);
        }
        Self {
            path,
            answers,
            served: Mutex::new(HashMap::new()),
        }
    }

    /// The recording file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The recorded answer messages to `request` on a socket of `protocol` (normalised:
    /// the caller stamps its sequence number). `name` names the request in the error.
    pub(crate) fn answer(
        &self,
        protocol: i32,
        request: &[u8],
        name: &str,
    ) -> Result<Vec<Vec<u8>>, NetlinkError> {
        let mut key = (protocol, request.to_vec());
        normalise(&mut key.1);
        let Some(recorded) = self.answers.get(&key) else {
            return Err(NetlinkError::NotRecorded {
                request: name.to_owned(),
                path: self.path.clone(),
            });
        };
        let mut served = self.served.lock().unwrap_or_else(PoisonError::into_inner);
        let count = served.entry(key).or_insert(0);
        let index = (*count).min(recorded.len() - 1);
        *count += 1;
        Ok(recorded[index].clone())
    }
}

/// Where the netlink answers about a sys root come from.
#[derive(Debug, Clone)]
pub enum NetlinkAccess {
    /// The live kernel: the root is `/`.
    Live,
    /// A capture's recording.
    Replay(Arc<NetlinkReplay>),
    /// A capture's recording that cannot be read: every request fails with this.
    Broken {
        /// The recording file.
        path: PathBuf,
        /// What is wrong with it.
        reason: String,
    },
    /// Neither: a fixture tree or a mounted image without a recording.
    Unavailable {
        /// The root.
        root: PathBuf,
    },
}

impl NetlinkAccess {
    /// The access for `root`: live for `/`, the recording beside a capture's reading
    /// ([`recording_path`]) when there is one, none otherwise.
    pub fn for_root(root: &SysRoot) -> Self {
        if root.path() == Path::new("/") {
            return Self::Live;
        }
        let Some(path) = recording_path(root.path()) else {
            return Self::Unavailable {
                root: root.path().to_owned(),
            };
        };
        if !path.exists() {
            return Self::Unavailable {
                root: root.path().to_owned(),
            };
        }
        match NetlinkReplay::load(&path) {
            Ok(replay) => Self::Replay(Arc::new(replay)),
            Err(NetlinkError::Recording { path, reason }) => Self::Broken { path, reason },
            Err(other) => Self::Broken {
                path,
                reason: other.to_string(),
            },
        }
    }

    /// Whether requests are answered at all (live or from a recording; a broken
    /// recording counts, so its error is what the reader reports).
    pub fn answers_requests(&self) -> bool {
        !matches!(self, Self::Unavailable { .. })
    }

    /// The error a socket opened on this access fails with, when it cannot be opened.
    pub(crate) fn refusal(&self) -> Option<NetlinkError> {
        match self {
            Self::Live | Self::Replay(_) => None,
            Self::Broken { path, reason } => Some(NetlinkError::Recording {
                path: path.clone(),
                reason: reason.clone(),
            }),
            Self::Unavailable { root } => Some(NetlinkError::NoNetlink {
                root: root.clone(),
                recording: recording_path(root).unwrap_or_else(|| root.clone()),
            }),
        }
    }
}

/// Whether netlink requests about `root` are answered (live, or a recording beside it),
/// without reading the recording.
pub fn answers_netlink(root: &SysRoot) -> bool {
    root.path() == Path::new("/") || recording_path(root.path()).is_some_and(|p| p.exists())
}

/// The netlink recording of the capture reading whose tree is `root`: the file beside it
/// named after it plus `.netlink` (`BUNDLE/root` → `BUNDLE/root.netlink`). `None` for a
/// root without a last component (`/`).
pub fn recording_path(root: &Path) -> Option<PathBuf> {
    let name = root.file_name()?;
    let mut file = name.to_os_string();
    file.push(".netlink");
    Some(root.with_file_name(file))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn exchange(request: &[u8], answer: u8) -> NetlinkExchange {
        NetlinkExchange {
            protocol: 0,
            name: "test".to_owned(),
            request: request.to_vec(),
            answers: vec![vec![answer; 16]],
        }
    }

    #[test]
    fn requests_match_by_content_then_repeat_the_last_answer() {
        let request = [20u8; 16];
        let replay = NetlinkReplay::from_exchanges(
            PathBuf::from("r.netlink"),
            vec![exchange(&request, 1), exchange(&request, 2)],
        );
        // Another sequence number and port id: the same request.
        let mut asked = request;
        asked[8..16].copy_from_slice(&[9; 8]);
        assert_eq!(replay.answer(0, &asked, "q").expect("answered")[0][0], 1);
        assert_eq!(replay.answer(0, &asked, "q").expect("answered")[0][0], 2);
        assert_eq!(replay.answer(0, &asked, "q").expect("answered")[0][0], 2);
        // Another protocol, another content: not recorded, named.
        let err = replay
            .answer(20, &asked, "RDMA thing")
            .expect_err("refused");
        assert!(
            err.to_string().contains("RDMA thing") && err.to_string().contains("r.netlink"),
            "{err}"
        );
        let mut other = request;
        other[0] = 21;
        assert!(matches!(
            replay.answer(0, &other, "q"),
            Err(NetlinkError::NotRecorded { .. })
        ));
    }

    #[test]
    fn a_root_finds_its_recording_beside_it() {
        assert_eq!(
            recording_path(Path::new("/b/readings/1/root")),
            Some(PathBuf::from("/b/readings/1/root.netlink"))
        );
        assert_eq!(recording_path(Path::new("/")), None);
        assert!(matches!(
            NetlinkAccess::for_root(&SysRoot::new("/")),
            NetlinkAccess::Live
        ));

        let dir = tempfile::tempdir().expect("tempdir");
        let root = SysRoot::new(dir.path().join("root"));
        let access = NetlinkAccess::for_root(&root);
        assert!(!access.answers_requests());
        assert!(access
            .refusal()
            .expect("answered")
            .to_string()
            .contains("root.netlink"));

        std::fs::write(dir.path().join("root.netlink"), "not a recording\n").expect("write");
        let access = NetlinkAccess::for_root(&root);
        assert!(access.answers_requests());
        let refusal = access.refusal().expect("broken");
        assert!(refusal.to_string().contains("line 1"), "{refusal}");

        std::fs::write(dir.path().join("root.netlink"), "dpu-netlink/1\n").expect("write");
        assert!(matches!(
            NetlinkAccess::for_root(&root),
            NetlinkAccess::Replay(_)
        ));
    }
}
