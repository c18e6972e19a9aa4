//! What every machine knob is ([`MachineKnob`]), how it fails ([`KnobError`]), and the
//! small file and number helpers the knobs share.

use std::path::{Path, PathBuf};

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
    /// The driver or the kernel's ethtool/DCB interface would not read or change the
    /// knob (`EOPNOTSUPP` from a device without ring operations or without DCB): the
    /// source names the interface and the kernel's answer.
    #[error("{knob}: cannot {action}")]
    Driver {
        /// The knob.
        knob: String,
        /// "read it", "set it to 128".
        action: String,
        /// The probe's error (boxed: either of two types, and rare).
        #[source]
        source: Box<dyn std::error::Error + Send + Sync + 'static>,
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

impl KnobError {
    /// A [`KnobError::Driver`] for `knob`: what the ring and PFC knobs say when the probe's
    /// ethtool or DCB netlink client fails, whichever error type it returned.
    pub(super) fn driver(
        knob: String,
        action: String,
        source: impl std::error::Error + Send + Sync + 'static,
    ) -> Self {
        Self::Driver {
            knob,
            action,
            source: Box::new(source),
        }
    }
}

/// Reads a small kernel file, trimmed, with whitespace runs made single spaces (so
/// `4096\t131072\t6291456` compares equal to `4096 131072 6291456`).
pub(super) fn read_trimmed(knob: &str, path: &Path) -> Result<String, KnobError> {
    let text = std::fs::read_to_string(path).map_err(|source| KnobError::Io {
        knob: knob.to_owned(),
        op: "read",
        path: path.to_owned(),
        source,
    })?;
    Ok(text.split_whitespace().collect::<Vec<_>>().join(" "))
}

/// Writes `value` and a newline to a kernel file, then reads it back and compares.
pub(super) fn write_and_check(knob: &str, path: &Path, value: &str) -> Result<(), KnobError> {
    std::fs::write(path, format!("{value}\n")).map_err(|source| KnobError::Io {
        knob: knob.to_owned(),
        op: "write",
        path: path.to_owned(),
        source,
    })?;
    check_read_back(knob, value, read_trimmed(knob, path)?)
}

/// The [`KnobError::ReadBack`] check.
pub(super) fn check_read_back(knob: &str, wanted: &str, found: String) -> Result<(), KnobError> {
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
pub(super) fn parse_in<T>(
    knob: &str,
    value: &str,
    range: std::ops::RangeInclusive<T>,
) -> Result<T, KnobError>
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
