//! Which NVMe namespace a block device is: the identifiers the kernel shows under
//! `/sys/block/<disk>/` (`uuid`, `nguid`, `eui`), read the same way on the host (the disk
//! `dpuctl prove storage` reads) and on the DPU (the disk that carries a kernel-backend
//! volume). A proof that counts a volume's bytes must first know that the device it reads
//! *is* that volume: a regular file, a loop device or another tenant's disk proves nothing.
//!
//! Formats and sources (`docs/reference/nvme-identity.md`; Linux
//! `drivers/nvme/host/sysfs.c`): `uuid` and `nguid` print as 8-4-4-4-12 lower-case hex
//! (`%pU`); `eui` as eight space-separated hex bytes (`%8ph`); `nguid` and `eui` are hidden
//! when zero; `uuid` falls back to printing the NGUID when the namespace has no UUID
//! (`uuid_show`). A `uuid` equal to the `nguid` is kept as read: it is that fallback or
//! SPDK's default (both from the bdev's UUID), and either way it only binds to an identity
//! that has the same digits. Native-multipath path disks (`nvme<S>c<C>n<H>`) are hidden,
//! carry the head's identifiers and take no I/O of their own.

use std::fmt;
use std::fs;
use std::io;
use std::os::unix::fs::{FileTypeExt as _, MetadataExt as _};
use std::path::{Path, PathBuf};

use crate::block::is_multipath_path_disk;
use crate::netdev::looks_like_pci_address;
use crate::root::{link_basename, list_dir, read_optional_attr};
use crate::{ProbeError, SysRoot};

/// The identifiers one NVMe namespace reports (Identify Namespace and its descriptor list),
/// normalised: `uuid` as 8-4-4-4-12 lower-case hex, `nguid` as 32 and `eui64` as 16
/// lower-case hex digits. All-zero values mean "none" and are never kept.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NamespaceIdentity {
    /// The namespace UUID.
    pub uuid: Option<String>,
    /// The namespace globally unique identifier.
    pub nguid: Option<String>,
    /// The IEEE extended unique identifier.
    pub eui64: Option<String>,
}

/// How two identities compare, field by field over the identifiers both have.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Agreement {
    /// Every identifier both have is equal, and they have at least one in common: these
    /// fields.
    Same(Vec<&'static str>),
    /// This identifier differs: two different namespaces.
    Differ(&'static str),
    /// They have no identifier in common (one has only a UUID, the other only an NGUID):
    /// nothing says they are the same namespace.
    Unrelated,
}

/// An identifier given in a form no kernel or agent writes.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{field} {value:?} is not {expected}")]
pub struct IdentityFormatError {
    /// `uuid`, `nguid` or `eui64`.
    pub field: &'static str,
    /// The text as given.
    pub value: String,
    /// What it should have been.
    pub expected: &'static str,
}

/// Hex digits of `text` with the separators the kernel and the agent print (`-`, `:`,
/// spaces) removed, lower-cased; `None` when anything else is in it or the count is wrong.
fn hex_digits(text: &str, count: usize) -> Option<String> {
    let digits: String = text
        .chars()
        .filter(|c| !matches!(c, '-' | ':' | ' '))
        .map(|c| c.to_ascii_lowercase())
        .collect();
    (digits.len() == count && digits.bytes().all(|b| b.is_ascii_hexdigit())).then_some(digits)
}

fn parse_field(
    field: &'static str,
    text: Option<&str>,
    count: usize,
    expected: &'static str,
) -> Result<Option<String>, IdentityFormatError> {
    let Some(text) = text.map(str::trim).filter(|t| !t.is_empty()) else {
        return Ok(None);
    };
    let digits = hex_digits(text, count).ok_or_else(|| IdentityFormatError {
        field,
        value: text.to_owned(),
        expected,
    })?;
    Ok((!digits.bytes().all(|b| b == b'0')).then_some(digits))
}

fn uuid_text(digits: &str) -> String {
    format!(
        "{}-{}-{}-{}-{}",
        &digits[..8],
        &digits[8..12],
        &digits[12..16],
        &digits[16..20],
        &digits[20..]
    )
}

impl NamespaceIdentity {
    /// An identity from its three identifiers as text (empty or absent: none), in the forms
    /// the kernel's sysfs and the agent's API write them: a UUID with or without dashes,
    /// an NGUID of 32 hex digits (dashed like a UUID by the kernel), an EUI-64 of 16 (with
    /// `-`, `:` or spaces between bytes, or none).
    pub fn from_parts(
        uuid: Option<&str>,
        nguid: Option<&str>,
        eui64: Option<&str>,
    ) -> Result<Self, IdentityFormatError> {
        Ok(Self {
            uuid: parse_field("uuid", uuid, 32, "a UUID (32 hex digits)")?.map(|d| uuid_text(&d)),
            nguid: parse_field("nguid", nguid, 32, "an NGUID (32 hex digits)")?,
            eui64: parse_field("eui64", eui64, 16, "an EUI-64 (16 hex digits)")?,
        })
    }

    /// Reads a disk's identity from its sysfs directory (`/sys/block/<disk>` or what
    /// `/sys/dev/block/<major>:<minor>` points at). Absent attributes are no identifier.
    pub fn read(disk_dir: &Path) -> Result<Self, ProbeError> {
        let attr = |name: &str| read_optional_attr(&disk_dir.join(name));
        Self::from_parts(
            attr("uuid").as_deref(),
            attr("nguid").as_deref(),
            attr("eui").as_deref(),
        )
        .map_err(|e| ProbeError::Format {
            path: disk_dir.join(e.field.trim_end_matches("64")),
            detail: e.to_string(),
        })
    }

    /// Whether it has no identifier at all (a loop device, a virtio disk).
    pub fn is_empty(&self) -> bool {
        self.uuid.is_none() && self.nguid.is_none() && self.eui64.is_none()
    }

    /// Compares the identifiers both have ([`Agreement`]).
    pub fn agreement(&self, other: &Self) -> Agreement {
        let mut same = Vec::new();
        for (field, mine, theirs) in [
            ("uuid", &self.uuid, &other.uuid),
            ("nguid", &self.nguid, &other.nguid),
            ("eui64", &self.eui64, &other.eui64),
        ] {
            if let (Some(a), Some(b)) = (mine, theirs) {
                if a != b {
                    return Agreement::Differ(field);
                }
                same.push(field);
            }
        }
        if same.is_empty() {
            Agreement::Unrelated
        } else {
            Agreement::Same(same)
        }
    }
}

impl fmt::Display for NamespaceIdentity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let parts: Vec<String> = [
            ("uuid", &self.uuid),
            ("nguid", &self.nguid),
            ("eui64", &self.eui64),
        ]
        .into_iter()
        .filter_map(|(name, value)| value.as_ref().map(|v| format!("{name} {v}")))
        .collect();
        if parts.is_empty() {
            f.write_str("no namespace identifier")
        } else {
            f.write_str(&parts.join(", "))
        }
    }
}

/// A block device resolved to the disk it belongs to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BlockDisk {
    /// The whole disk's kernel name (`nvme0n1`): a partition's parent.
    pub name: String,
    /// The partition's kernel name, when the device is one.
    pub partition: Option<String>,
    /// The disk's `major:minor`.
    pub dev: (u32, u32),
    /// The disk's identity.
    pub identity: NamespaceIdentity,
}

/// Why a path cannot be resolved to a disk.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DeviceError {
    /// The path cannot be looked at.
    #[error("{path}: cannot be opened")]
    Missing {
        /// The path.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: io::Error,
    },
    /// The path is not a block device, so it is no disk and carries no identity.
    #[error("{path} is {kind}, not a block device")]
    NotBlock {
        /// The path.
        path: PathBuf,
        /// What it is instead ("a regular file", "a directory", ...).
        kind: &'static str,
    },
    /// The block device has no sysfs directory under the root being read.
    #[error("{path} is block device {major}:{minor}, but {dir} does not exist")]
    NoSysfs {
        /// The path.
        path: PathBuf,
        /// Its major number.
        major: u32,
        /// Its minor number.
        minor: u32,
        /// Where its sysfs directory was looked for.
        dir: PathBuf,
    },
    /// The disk's attributes could not be read.
    #[error(transparent)]
    Probe(#[from] ProbeError),
}

fn kind_of(file_type: fs::FileType) -> &'static str {
    if file_type.is_file() {
        "a regular file"
    } else if file_type.is_dir() {
        "a directory"
    } else if file_type.is_char_device() {
        "a character device"
    } else if file_type.is_fifo() {
        "a FIFO"
    } else if file_type.is_socket() {
        "a socket"
    } else {
        "not a file of a known kind"
    }
}

/// `major:minor` as the kernel prints it in a disk's `dev` attribute.
fn parse_dev(text: &str) -> Option<(u32, u32)> {
    let (major, minor) = text.trim().split_once(':')?;
    Some((major.parse().ok()?, minor.parse().ok()?))
}

/// The `major:minor` of the block device at `path` (symlinks followed, as `/dev/disk/by-id/`
/// names are), or why it is none.
pub fn block_dev_number(path: &Path) -> Result<(u32, u32), DeviceError> {
    let meta = fs::metadata(path).map_err(|source| DeviceError::Missing {
        path: path.to_owned(),
        source,
    })?;
    if !meta.file_type().is_block_device() {
        return Err(DeviceError::NotBlock {
            path: path.to_owned(),
            kind: kind_of(meta.file_type()),
        });
    }
    let rdev = meta.rdev();
    Ok((libc::major(rdev), libc::minor(rdev)))
}

/// Resolves the block device at `path` to its disk under `root`
/// (`sys/dev/block/<major>:<minor>`; a partition's disk is its parent directory) and reads
/// the disk's identity.
pub fn block_disk(root: &SysRoot, path: &Path) -> Result<BlockDisk, DeviceError> {
    let (major, minor) = block_dev_number(path)?;
    let link = root.sys(format!("dev/block/{major}:{minor}"));
    let dir = fs::canonicalize(&link).map_err(|_| DeviceError::NoSysfs {
        path: path.to_owned(),
        major,
        minor,
        dir: link.clone(),
    })?;
    let is_partition = dir.join("partition").exists();
    let disk_dir = if is_partition {
        dir.parent().map(Path::to_path_buf).unwrap_or(dir.clone())
    } else {
        dir.clone()
    };
    let name_of = |d: &Path| {
        d.file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default()
    };
    let dev = read_optional_attr(&disk_dir.join("dev"))
        .and_then(|d| parse_dev(&d))
        .unwrap_or((major, minor));
    Ok(BlockDisk {
        name: name_of(&disk_dir),
        partition: is_partition.then(|| name_of(&dir)),
        dev,
        identity: NamespaceIdentity::read(&disk_dir)?,
    })
}

/// The disks under `root` (`sys/block`) whose identity agrees with `wanted`, in name
/// order; multipath path disks and disks marked `hidden` are left out (I/O goes to their
/// head). A disk whose identity cannot be read is skipped: it cannot be shown to be the
/// one.
pub fn disks_with_identity(
    root: &SysRoot,
    wanted: &NamespaceIdentity,
) -> Result<Vec<BlockDisk>, ProbeError> {
    let block = root.sys("block");
    let mut found = Vec::new();
    for name in list_dir(&block)? {
        if is_multipath_path_disk(&name) {
            continue;
        }
        let dir = block.join(&name);
        if read_optional_attr(&dir.join("hidden")).as_deref() == Some("1") {
            continue;
        }
        let Ok(identity) = NamespaceIdentity::read(&dir) else {
            continue;
        };
        if !matches!(identity.agreement(wanted), Agreement::Same(_)) {
            continue;
        }
        let Some(dev) = read_optional_attr(&dir.join("dev")).and_then(|d| parse_dev(&d)) else {
            continue;
        };
        found.push(BlockDisk {
            name,
            partition: None,
            dev,
            identity,
        });
    }
    Ok(found)
}

/// The PCI functions (`0000:3b:00.2`) through which this host reaches disk `name` under
/// `root`, sorted: an NVMe disk's controller's PCI device (`block/<disk>/device` is the
/// controller, whose `device` link names the function), or, for a native-multipath head
/// (`block/<disk>/device` is the NVMe subsystem), every controller's of the subsystem.
/// Empty for a disk with no PCI controller: NVMe over a fabric (the controller's `device`
/// is the fabrics `ctl`), a loop or RAM disk. Formats: Linux `drivers/nvme/host/core.c`
/// (`nvme_init_subsystem`, the `nvme-subsystem` class links each controller into its
/// subsystem) and `docs/reference/nvme-identity.md`.
pub fn disk_pci_functions(root: &SysRoot, name: &str) -> Vec<String> {
    let device = root.sys("block").join(name).join("device");
    let function_of = |controller: &Path| {
        link_basename(&controller.join("device")).filter(|f| looks_like_pci_address(f))
    };
    let mut functions: Vec<String> = match function_of(&device) {
        Some(function) => vec![function],
        None => list_dir(&device)
            .unwrap_or_default()
            .into_iter()
            .filter(|entry| {
                entry
                    .strip_prefix("nvme")
                    .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
            })
            .filter_map(|controller| function_of(&device.join(controller)))
            .collect(),
    };
    functions.sort();
    functions.dedup();
    functions
}

#[cfg(test)]
mod tests;
