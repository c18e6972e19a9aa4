//! Applying an experiment's knob through the kernel, never through a shell string: an
//! MTU by `RTM_SETLINK` ([`mtu`]), a sysctl by writing its `/proc/sys` file ([`sysctl`]),
//! the rdma_cm default ToS through configfs ([`rdma_cm_tos`]). Every value is checked for
//! the knob's type and range before anything is written, read back after, and a
//! mismatch is an error, so the revert journal can trust that "applied" means applied.
//!
//! An `env` knob changes nothing on the machine (the measured command gets the variable:
//! [`super::run`]), so it has no [`MachineKnob`]. A `ring` knob is refused at run time:
//! this build has no ethtool netlink client ([`KnobError::Unsupported`]).

mod mtu;
mod rdma_cm_tos;
mod sysctl;
#[cfg(test)]
mod tests;

use std::path::{Path, PathBuf};

pub use mtu::MtuKnob;
pub use rdma_cm_tos::RdmaCmTosKnob;
pub use sysctl::SysctlKnob;

use super::plan::{Knob, SysctlValue};

/// A knob that lives on the machine: it can be read, set and, through the journal, put
/// back after a crash. Values travel as text (the form the kernel files use, and the one
/// the journal stores), and each implementation parses and range-checks the text before
/// writing anything.
pub trait MachineKnob: Send + Sync + std::fmt::Debug {
    /// What the knob is, for messages and the journal: `mtu of ens1f0np0`.
    fn describe(&self) -> String;
    /// The value now in force.
    fn read_current(&self) -> Result<String, KnobError>;
    /// Checks `value`, applies it, and reads it back.
    fn apply(&self, value: &str) -> Result<(), KnobError>;
}

/// Why a knob could not be read or applied.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum KnobError {
    /// The value is not one this knob takes; nothing was written.
    #[error("{knob}: {value:?} is not a valid value: {reason}")]
    InvalidValue {
        /// The knob.
        knob: String,
        /// The value as given.
        value: String,
        /// What is wrong with it.
        reason: String,
    },
    /// A kernel file could not be read or written.
    #[error("{knob}: cannot {op} {path}")]
    Io {
        /// The knob.
        knob: String,
        /// "read", "write", "create".
        op: &'static str,
        /// The file.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
    /// The kernel refused the netlink request.
    #[error("{knob}: the kernel refused {value}{hint}")]
    Netlink {
        /// The knob.
        knob: String,
        /// The value asked for.
        value: String,
        /// A sentence for the common errno (EINVAL: past the device's limits).
        hint: String,
        /// The netlink error (boxed: it is large, and rare).
        #[source]
        source: Box<dpu_probe::netlink::NetlinkError>,
    },
    /// The kernel accepted the value but reads back another.
    #[error("{knob}: set to {wanted} but reads back {found}")]
    ReadBack {
        /// The knob.
        knob: String,
        /// The value written.
        wanted: String,
        /// The value read.
        found: String,
    },
    /// This build cannot apply the knob.
    #[error("{knob}: not supported by this build ({why})")]
    Unsupported {
        /// The knob kind.
        knob: String,
        /// Why not, and what would be needed.
        why: String,
    },
}

/// The machine-side control of a plan's knob rooted at `/`: `Ok(None)` for an `env`
/// knob (nothing on the machine changes), [`KnobError::Unsupported`] for `ring`.
pub fn machine_knob(knob: &Knob) -> Result<Option<Box<dyn MachineKnob>>, KnobError> {
    machine_knob_at(knob, Path::new("/"))
}

/// [`machine_knob`] with the `/proc` and `/sys` files under `root` (tests use a
/// temporary directory; the MTU is still set through netlink in the caller's namespace).
pub fn machine_knob_at(
    knob: &Knob,
    root: &Path,
) -> Result<Option<Box<dyn MachineKnob>>, KnobError> {
    Ok(match knob {
        Knob::Mtu { interface, .. } => Some(Box::new(MtuKnob::new(interface, root))),
        Knob::Env { .. } => None,
        Knob::RdmaCmTos { device, .. } => Some(Box::new(RdmaCmTosKnob::new(device, 1, root))),
        Knob::Sysctl { name, .. } => Some(Box::new(SysctlKnob::new(*name, root))),
        Knob::Ring { .. } => {
            return Err(KnobError::Unsupported {
                knob: "ring knob".to_owned(),
                why: "setting ring sizes needs ethtool's generic netlink \
                      (ETHTOOL_MSG_RINGS_SET), which this build does not have"
                    .to_owned(),
            })
        }
    })
}

/// The plan's A and B as the text a [`MachineKnob`] takes (for `env`, the values
/// themselves).
pub fn values_text(knob: &Knob) -> (String, String) {
    fn pair<T: ToString>(a: &T, b: &T) -> (String, String) {
        (a.to_string(), b.to_string())
    }
    match knob {
        Knob::Mtu { values, .. } | Knob::Ring { values, .. } => pair(&values.a, &values.b),
        Knob::Env { values, .. } => (values.a.clone(), values.b.clone()),
        Knob::RdmaCmTos { values, .. } => pair(&values.a, &values.b),
        Knob::Sysctl { values, .. } => (sysctl_text(values.a), sysctl_text(values.b)),
    }
}

/// A sysctl value as `/proc/sys` prints it, with single spaces.
pub fn sysctl_text(value: SysctlValue) -> String {
    match value {
        SysctlValue::One(v) => v.to_string(),
        SysctlValue::Three([a, b, c]) => format!("{a} {b} {c}"),
    }
}

/// Reads a small kernel file, trimmed, with whitespace runs made single spaces (so
/// `4096\t131072\t6291456` compares equal to `4096 131072 6291456`).
fn read_trimmed(knob: &str, path: &Path) -> Result<String, KnobError> {
    let text = std::fs::read_to_string(path).map_err(|source| KnobError::Io {
        knob: knob.to_owned(),
        op: "read",
        path: path.to_owned(),
        source,
    })?;
    Ok(text.split_whitespace().collect::<Vec<_>>().join(" "))
}

/// Writes `value` and a newline to a kernel file, then reads it back and compares.
fn write_and_check(knob: &str, path: &Path, value: &str) -> Result<(), KnobError> {
    std::fs::write(path, format!("{value}\n")).map_err(|source| KnobError::Io {
        knob: knob.to_owned(),
        op: "write",
        path: path.to_owned(),
        source,
    })?;
    check_read_back(knob, value, read_trimmed(knob, path)?)
}

/// The [`KnobError::ReadBack`] check.
fn check_read_back(knob: &str, wanted: &str, found: String) -> Result<(), KnobError> {
    if found == wanted {
        Ok(())
    } else {
        Err(KnobError::ReadBack {
            knob: knob.to_owned(),
            wanted: wanted.to_owned(),
            found,
        })
    }
}

/// Parses an integer in `range`, or the [`KnobError::InvalidValue`] naming it.
fn parse_in<T>(knob: &str, value: &str, range: std::ops::RangeInclusive<T>) -> Result<T, KnobError>
where
    T: std::str::FromStr + PartialOrd + std::fmt::Display,
{
    let invalid = |reason: String| KnobError::InvalidValue {
        knob: knob.to_owned(),
        value: value.to_owned(),
        reason,
    };
    let parsed: T = value
        .parse()
        .map_err(|_| invalid("not an integer".to_owned()))?;
    if !range.contains(&parsed) {
        return Err(invalid(format!(
            "outside {} to {}",
            range.start(),
            range.end()
        )));
    }
    Ok(parsed)
}
