//! `manifest.json` of a capture bundle: what ran, what was recorded, what was redacted
//! (kind and placeholder, never the original value), and what could not be read.

use std::path::Path;
use std::time::{Duration, SystemTime};

use dpu_probe::capture::{RecordedNode, Recording};
use serde::Serialize;

use super::jsonrpc::TranscriptEntry;
use super::redact::Redaction;

/// The bundle format this build writes. `/2`: each reading has its netlink recording
/// (`netlink`, the file `ROOT.netlink` beside its tree).
pub const FORMAT: &str = "dpu-capture/2";

/// What the project still reads that a bundle of this format does not hold: a replay of
/// these answers live (or not at all). Listed in every manifest so a reader of a bundle
/// knows what it cannot settle.
pub const NOT_CAPTURED: [&str; 5] = [
    "netlink answers in other network namespaces (samplers opened with a netns): only the capturing process's own namespace is recorded",
    "JSON-RPC answers: SNAP/SPDK ones only with --snap-socket, OVS's one-shot reads only with --ovs-rundir (`jsonrpc`); OVSDB monitor updates (a stream, not request/answer) are never recorded",
    "firmware tool (mlxconfig/mstconfig) output: run during the capture, not recorded",
    "the DPU side (dpu-agent's own reads on the Arm): not recorded by a host capture",
    "error numbers of unreadable files: listed under `unreadable`; the replayed tree lacks the file (ENOENT)",
];

/// The manifest.
#[derive(Debug, Clone, Serialize)]
pub struct Manifest {
    /// [`FORMAT`].
    pub format: &'static str,
    /// The tool and its version.
    pub tool: String,
    /// When the first reading started (RFC 3339, UTC).
    pub taken_at: String,
    /// The captured kernel's release (`/proc/sys/kernel/osrelease` of the root).
    pub kernel: Option<String>,
    /// The root that was read.
    pub sys_root: String,
    /// Whether identifiers were replaced.
    pub redacted: bool,
    /// Milliseconds between the two counter readings.
    pub interval_ms: u128,
    /// What ran with the recorder on, in order.
    pub commands: Vec<String>,
    /// The readings, each a sys root in the bundle.
    pub readings: Vec<Reading>,
    /// Identifiers replaced: kind, placeholder and the files.
    pub redactions: Vec<Redaction>,
    /// [`NOT_CAPTURED`].
    pub not_captured: Vec<&'static str>,
    /// The JSON-RPC transcripts: SNAP/SPDK (`--snap-socket`), ovsdb-server and
    /// ovs-vswitchd (`--ovs-rundir`); absent when none was asked.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub jsonrpc: Vec<TranscriptEntry>,
}

/// One reading.
#[derive(Debug, Clone, Serialize)]
pub struct Reading {
    /// Its tree, relative to the bundle.
    pub root: String,
    /// Every recorded path with what is there.
    pub paths: Vec<RecordedPath>,
    /// Reads that failed other than with ENOENT: not in the tree.
    pub unreadable: Vec<Unreadable>,
    /// Reads that could not be placed under the root, with why.
    pub outside: Vec<String>,
    /// Its netlink recording: the file and each exchange in it; `null` when the root
    /// read answers no netlink (a tree without a recording).
    pub netlink: Option<NetlinkFile>,
    /// What the root's own sampler answered live at this reading (`KEY<TAB>VALUE`
    /// lines, relative to the bundle): what a replay of the reading must answer.
    pub live_samples: String,
}

/// What the manifest says of one reading's netlink recording.
#[derive(Debug, Clone, Serialize)]
pub struct NetlinkFile {
    /// The file, relative to the bundle.
    pub path: String,
    /// Each recorded exchange: `family: request` (`route: RTM_GETLINK dump`).
    pub exchanges: Vec<String>,
}

/// One recorded path.
#[derive(Debug, Clone, Serialize)]
pub struct RecordedPath {
    /// Root-relative.
    pub path: String,
    /// `file`, `listed-file` (listed, never read: empty in the tree), `dir`, `link`.
    pub kind: &'static str,
    /// A link's target as written.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub target: Option<String>,
}

/// A read that failed.
#[derive(Debug, Clone, Serialize)]
pub struct Unreadable {
    /// Root-relative.
    pub path: String,
    /// The OS error number (22 is EINVAL).
    pub errno: Option<i32>,
    /// The error as text.
    pub error: String,
}

/// What [`Manifest::new`] is made from.
#[derive(Debug)]
pub(super) struct ManifestInput<'a> {
    pub(super) taken_at: SystemTime,
    pub(super) kernel: Option<String>,
    pub(super) sys_root: &'a Path,
    pub(super) interval: Duration,
    pub(super) commands: Vec<String>,
    pub(super) readings: [(&'static str, &'a Recording); 2],
    /// Each reading's netlink recording, as written.
    pub(super) netlink: [Option<NetlinkFile>; 2],
    /// `None` with `--no-redact`.
    pub(super) redactions: Option<Vec<Redaction>>,
    /// One entry per JSON-RPC transcript written.
    pub(super) jsonrpc: Vec<TranscriptEntry>,
}

impl Manifest {
    pub(super) fn new(input: ManifestInput<'_>) -> Self {
        Self {
            format: FORMAT,
            tool: format!("dpuctl {}", env!("CARGO_PKG_VERSION")),
            taken_at: humantime::format_rfc3339_seconds(input.taken_at).to_string(),
            kernel: input.kernel,
            sys_root: input.sys_root.display().to_string(),
            redacted: input.redactions.is_some(),
            interval_ms: input.interval.as_millis(),
            commands: input.commands,
            readings: input
                .readings
                .iter()
                .zip(input.netlink)
                .map(|((root, recording), netlink)| reading(root, recording, netlink))
                .collect(),
            redactions: input.redactions.unwrap_or_default(),
            not_captured: NOT_CAPTURED.to_vec(),
            jsonrpc: input.jsonrpc,
        }
    }
}

fn reading(root: &str, recording: &Recording, netlink: Option<NetlinkFile>) -> Reading {
    let mut paths = Vec::new();
    let mut unreadable = Vec::new();
    for (path, node) in &recording.nodes {
        let shown = path.display().to_string();
        let (kind, target) = match node {
            RecordedNode::File(_) => ("file", None),
            RecordedNode::ListedFile => ("listed-file", None),
            RecordedNode::Dir => ("dir", None),
            RecordedNode::Link { target, .. } => ("link", Some(target.display().to_string())),
            RecordedNode::Unreadable { errno, message } => {
                unreadable.push(Unreadable {
                    path: shown,
                    errno: *errno,
                    error: message.clone(),
                });
                continue;
            }
        };
        paths.push(RecordedPath {
            path: shown,
            kind,
            target,
        });
    }
    Reading {
        root: root.to_owned(),
        paths,
        unreadable,
        outside: recording
            .outside
            .iter()
            .map(|(path, why)| format!("{}: {why}", path.display()))
            .collect(),
        netlink,
        live_samples: format!("{root}.live-samples"),
    }
}
