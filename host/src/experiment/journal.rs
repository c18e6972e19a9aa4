//! The revert journal: written before an experiment changes anything, removed once the
//! knob is back at its original value. A journal still on disk means an experiment was
//! killed (SIGKILL, a reboot, a power cut) with its knob possibly changed; the next
//! `dpuctl experiment run` or `dpuctl experiment recover` reads it and puts the original
//! value back before doing anything else.
//!
//! The file is written atomically (a temporary file in the same directory, fsync, rename,
//! fsync of the directory), so a crash leaves either no journal or a whole one. The
//! writer's pid and the start time of that process (`/proc/PID/stat` field 22) tell a
//! live experiment (refused: "another experiment is running") from a dead one whose pid
//! the kernel may since have given to another process.

use std::io::Write;
use std::path::{Path, PathBuf};

use dpu_proto::names::{check_ifname, Collection};
use serde::{Deserialize, Serialize};

use super::knob::{MachineKnob, MtuKnob, PfcKnob, RdmaCmTosKnob, RingKnob, SysctlKnob};
use super::plan::{Knob, RingDirection, Sysctl};

/// Where the journal lives unless `--journal` says otherwise.
pub const DEFAULT_JOURNAL: &str = "/var/lib/dpuctl/experiment.json";

/// Which knob a journal restores: just enough to rebuild its [`MachineKnob`], every name
/// checked again when read (the file is outside this process's control).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum JournalKnob {
    /// An interface's MTU.
    Mtu {
        /// The interface.
        interface: String,
    },
    /// An allow-listed sysctl, by its dotted name.
    Sysctl {
        /// `net.core.rmem_max`, ...
        name: String,
    },
    /// One ring size of an interface.
    Ring {
        /// The interface.
        interface: String,
        /// `rx` or `tx`.
        ring: String,
    },
    /// The PFC priorities of an interface.
    Pfc {
        /// The interface.
        interface: String,
    },
    /// The rdma_cm default ToS of a device's port.
    RdmaCmTos {
        /// The RDMA device.
        device: String,
        /// The port.
        port: u32,
    },
}

impl JournalKnob {
    /// The journal form of a plan's knob; `None` for a knob with nothing on the machine
    /// (`env`).
    pub fn of(knob: &Knob) -> Option<Self> {
        match knob {
            Knob::Mtu { interface, .. } => Some(Self::Mtu {
                interface: interface.clone(),
            }),
            Knob::Sysctl { name, .. } => Some(Self::Sysctl {
                name: name.name().to_owned(),
            }),
            Knob::RdmaCmTos { device, .. } => Some(Self::RdmaCmTos {
                device: device.clone(),
                port: 1,
            }),
            Knob::Ring {
                interface, ring, ..
            } => Some(Self::Ring {
                interface: interface.clone(),
                ring: match ring {
                    RingDirection::Rx => "rx",
                    RingDirection::Tx => "tx",
                }
                .to_owned(),
            }),
            Knob::Pfc { interface, .. } => Some(Self::Pfc {
                interface: interface.clone(),
            }),
            Knob::Env { .. } => None,
        }
    }

    /// The knob's control with its files under `root`, after checking every name again.
    pub fn control(&self, root: &Path) -> Result<Box<dyn MachineKnob>, JournalError> {
        let invalid = |reason: String| JournalError::InvalidKnob { reason };
        Ok(match self {
            Self::Mtu { interface } => {
                check_ifname("interface", interface).map_err(|e| invalid(e.to_string()))?;
                Box::new(MtuKnob::new(interface, root))
            }
            Self::Ring { interface, ring } => {
                check_ifname("interface", interface).map_err(|e| invalid(e.to_string()))?;
                let ring = match ring.as_str() {
                    "rx" => RingDirection::Rx,
                    "tx" => RingDirection::Tx,
                    other => return Err(invalid(format!("ring {other:?} is not rx or tx"))),
                };
                Box::new(RingKnob::new(interface, ring))
            }
            Self::Pfc { interface } => {
                check_ifname("interface", interface).map_err(|e| invalid(e.to_string()))?;
                Box::new(PfcKnob::new(interface))
            }
            Self::Sysctl { name } => {
                let sysctl = Sysctl::ALL
                    .into_iter()
                    .find(|s| s.name() == name)
                    .ok_or_else(|| invalid(format!("sysctl {name:?} is not on the allow-list")))?;
                Box::new(SysctlKnob::new(sysctl, root))
            }
            Self::RdmaCmTos { device, port } => {
                Collection::RdmaDevices
                    .check_id(device)
                    .map_err(|e| invalid(e.to_string()))?;
                Box::new(RdmaCmTosKnob::new(device, *port, root))
            }
        })
    }
}

/// What the journal file holds.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct JournalEntry {
    /// The knob changed.
    pub knob: JournalKnob,
    /// Its value before the experiment: what a revert puts back.
    pub original: String,
    /// The plan file the experiment ran.
    pub plan: PathBuf,
    /// The experiment's process.
    pub pid: u32,
    /// That process's start time in clock ticks since boot (`/proc/PID/stat` field 22),
    /// so a recycled pid is not taken for the experiment; `None` where unreadable.
    pub process_start: Option<u64>,
    /// When the experiment started, seconds since the Unix epoch.
    pub started_unix: u64,
}

impl JournalEntry {
    /// An entry for this process, now.
    pub fn for_this_process(knob: JournalKnob, original: String, plan: &Path) -> Self {
        let pid = std::process::id();
        Self {
            knob,
            original,
            plan: plan.to_owned(),
            pid,
            process_start: process_start(pid),
            started_unix: std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_secs()),
        }
    }

    /// Whether the process that wrote this entry is still running (same pid, same start
    /// time).
    pub fn writer_alive(&self) -> bool {
        match process_start(self.pid) {
            None => false,
            Some(start) => self.process_start.is_none_or(|wrote| wrote == start),
        }
    }
}

/// Why the journal could not be used.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum JournalError {
    /// Reading, writing or removing the file failed.
    #[error("cannot {op} the experiment journal {path}")]
    Io {
        /// "read", "write", "remove", ...
        op: &'static str,
        /// The file.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
    /// The file is not a journal this version wrote.
    #[error("the experiment journal {path} cannot be read; inspect it and remove it by hand")]
    Corrupt {
        /// The file.
        path: PathBuf,
        /// What the parser said.
        #[source]
        source: serde_json::Error,
    },
    /// The journal names a knob no experiment could have changed.
    #[error("the experiment journal names an invalid knob: {reason}")]
    InvalidKnob {
        /// What is wrong.
        reason: String,
    },
    /// A live experiment owns the journal.
    #[error("another experiment is running: pid {pid}, plan {}", plan.display())]
    AnotherRunning {
        /// Its pid.
        pid: u32,
        /// Its plan file.
        plan: PathBuf,
    },
    /// A journal is already there (a new one is only written after recovery).
    #[error("an experiment journal is already at {path}; run `dpuctl experiment recover` first")]
    Exists {
        /// The file.
        path: PathBuf,
    },
    /// Putting the original value back failed; the journal is kept for another try.
    #[error("cannot restore {knob} to {original}; the journal {path} is kept")]
    Restore {
        /// The knob.
        knob: String,
        /// The value it should get back.
        original: String,
        /// The journal.
        path: PathBuf,
        /// Why the knob refused (boxed: large, and rare).
        #[source]
        source: Box<super::knob::KnobError>,
    },
}

fn io<'a>(op: &'static str, path: &'a Path) -> impl FnOnce(std::io::Error) -> JournalError + 'a {
    move |source| JournalError::Io {
        op,
        path: path.to_owned(),
        source,
    }
}

/// The entry at `path`, `None` when there is no journal.
pub fn read(path: &Path) -> Result<Option<JournalEntry>, JournalError> {
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(io("read", path)(e)),
    };
    serde_json::from_str(&text)
        .map(Some)
        .map_err(|source| JournalError::Corrupt {
            path: path.to_owned(),
            source,
        })
}

/// Writes `entry` to `path` atomically, refusing when a journal is already there.
pub fn write_new(path: &Path, entry: &JournalEntry) -> Result<(), JournalError> {
    if path.exists() {
        return Err(JournalError::Exists {
            path: path.to_owned(),
        });
    }
    let dir = path.parent().filter(|p| !p.as_os_str().is_empty());
    let dir = dir.unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir).map_err(io("create the directory of", path))?;
    let file_name = path.file_name().map_or_else(
        || "experiment.json".into(),
        |n| n.to_string_lossy().into_owned(),
    );
    let temp = dir.join(format!(".{file_name}.{}.tmp", std::process::id()));
    let bytes = serde_json::to_vec_pretty(entry).map_err(|source| JournalError::Corrupt {
        path: path.to_owned(),
        source,
    })?;
    let result = (|| {
        let mut file = std::fs::File::create(&temp)?;
        file.write_all(&bytes)?;
        file.sync_all()?;
        std::fs::rename(&temp, path)?;
        std::fs::File::open(dir)?.sync_all()
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&temp);
    }
    result.map_err(io("write", path))
}

/// Removes the journal (a missing one is fine: nothing to undo).
pub fn remove(path: &Path) -> Result<(), JournalError> {
    match std::fs::remove_file(path) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(io("remove", path)(e)),
        _ => Ok(()),
    }
}

/// What [`recover`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Recovery {
    /// There was no journal: nothing to undo.
    Nothing,
    /// A dead experiment's knob was put back and its journal removed.
    Restored {
        /// The knob, as [`MachineKnob::describe`] says it.
        knob: String,
        /// The value it had before the dead experiment, and has again now.
        original: String,
        /// The value found before restoring.
        found: String,
        /// The dead experiment's pid and plan.
        pid: u32,
        /// Its plan file.
        plan: PathBuf,
    },
}

/// Undoes a journal left by an experiment that died: refuses while its writer still
/// runs, otherwise applies the original value (files under `root`), then removes the
/// journal. A restore that fails keeps the journal.
pub fn recover(path: &Path, root: &Path) -> Result<Recovery, JournalError> {
    let Some(entry) = read(path)? else {
        return Ok(Recovery::Nothing);
    };
    if entry.writer_alive() {
        return Err(JournalError::AnotherRunning {
            pid: entry.pid,
            plan: entry.plan,
        });
    }
    let control = entry.knob.control(root)?;
    let found = control
        .read_current()
        .unwrap_or_else(|e| format!("unreadable ({e})"));
    control
        .apply(&entry.original)
        .map_err(|source| JournalError::Restore {
            knob: control.describe(),
            original: entry.original.clone(),
            path: path.to_owned(),
            source: Box::new(source),
        })?;
    remove(path)?;
    tracing::info!(knob = %control.describe(), original = %entry.original, "journal recovered");
    Ok(Recovery::Restored {
        knob: control.describe(),
        original: entry.original,
        found,
        pid: entry.pid,
        plan: entry.plan,
    })
}

/// A process's start time in clock ticks since boot, `None` when it does not exist.
fn process_start(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name (field 2) may hold spaces and parentheses: count after the last ')'.
    let after = &stat[stat.rfind(')')? + 1..];
    // Fields from 3 on; the start time is field 22, so the 20th here.
    after.split_whitespace().nth(19)?.parse().ok()
}

#[cfg(test)]
mod tests;
