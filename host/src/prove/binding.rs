//! Binds `prove storage`'s device to its DPU volume by NVMe namespace identity, before
//! anything is counted. Counters that move during the read prove nothing about *this*
//! read unless the device read is the volume counted: a regular file, a loop device or
//! another disk read while someone else reads the volume would otherwise be PROVEN.
//!
//! The agent reports every identity under which a host can see a disk carrying the volume
//! (`Volume.host_identities`: its own disk's, and each emulated namespace's); the host reads
//! the device's identity from its own sysfs (`dpu_probe::disk_identity`). The device is
//! bound when one of them agrees on every identifier both have; a device whose identifiers
//! differ, that reports none, or that shares no kind of identifier with the volume is
//! refused, naming both sides. Where the agent also names the host PCI functions of the
//! emulated controllers the namespace is attached to, the disk must be reached through one
//! of them (`dpu_probe::disk_identity::disk_pci_functions`): the same identity over a
//! fabric, or through another function, is another path to the data, not the emulation.

use std::fmt;
use std::path::{Path, PathBuf};

use dpu_probe::disk_identity::{
    block_dev_number, block_disk, disk_pci_functions, disks_with_identity, Agreement, BlockDisk,
    DeviceError, IdentityFormatError, NamespaceIdentity,
};
use dpu_probe::netdev::looks_like_pci_address;
use dpu_probe::{ProbeError, SysRoot};
use dpu_proto::v1;

use crate::param::{Field, ParamError};

/// One identity the agent reports for the volume, and where it took it from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VolumeIdentity {
    /// The identifiers.
    pub identity: NamespaceIdentity,
    /// Where the agent read or configured them ("namespace subsystems/.../namespaces/1").
    pub source: String,
    /// The host PCI functions (`0000:3b:00.2`) the namespace's emulated controllers are on;
    /// empty when the agent does not know them.
    pub host_pci_functions: Vec<String>,
}

/// The volume's identities, for messages: `uuid X (source); nguid Y (source)`.
struct Listed<'a>(&'a [VolumeIdentity]);

impl fmt::Display for Listed<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let parts: Vec<String> = self
            .0
            .iter()
            .map(|v| format!("{} ({})", v.identity, v.source))
            .collect();
        f.write_str(&parts.join("; "))
    }
}

/// A host device bound to its volume.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Binding {
    /// The device node read.
    pub device: PathBuf,
    /// The disk it is (a partition's disk).
    pub disk: BlockDisk,
    /// The identifiers that agreed (`uuid`, `nguid`, `eui64`).
    pub agreed_on: Vec<&'static str>,
    /// The volume identity it agreed with.
    pub matched: VolumeIdentity,
    /// The emulated controller's PCI function the disk is reached through, when the agent
    /// named the functions.
    pub pci_function: Option<String>,
}

impl Binding {
    /// One line for the report's notes.
    pub fn note(&self, volume: &str) -> String {
        let disk = match &self.disk.partition {
            Some(part) => format!("partition {part} of disk {}", self.disk.name),
            None => format!("disk {}", self.disk.name),
        };
        let on = self
            .pci_function
            .as_ref()
            .map(|f| format!(", on the emulated controller's PCI function {f}"))
            .unwrap_or_default();
        format!(
            "{} ({disk}) is {volume}: {} agree with {} ({}){on}",
            self.device.display(),
            self.agreed_on.join(" and "),
            self.matched.identity,
            self.matched.source
        )
    }
}

/// Why the device cannot be bound to the volume; nothing has been read or counted.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BindError {
    /// The agent reports no identity for the volume.
    #[error(
        "volume {volume}: the agent reports no identity a host disk could carry (no \
         namespace exposes it, or the agent predates identity reporting): nothing can show \
         that a host device is this volume"
    )]
    VolumeWithoutIdentity {
        /// The volume.
        volume: String,
    },
    /// An identity the agent reports is malformed.
    #[error("volume {volume}: the agent reports a malformed identity ({source_name})")]
    BadAgentIdentity {
        /// The volume.
        volume: String,
        /// Where the agent took it from.
        source_name: String,
        /// What is wrong.
        #[source]
        source: IdentityFormatError,
    },
    /// A PCI function the agent reports is not one.
    #[error(
        "volume {volume}: the agent reports {function:?} as a host PCI function \
         ({source_name}), which is not a PCI address (dddd:bb:dd.f)"
    )]
    BadAgentPciFunction {
        /// The volume.
        volume: String,
        /// Where the agent took the identity from.
        source_name: String,
        /// What it sent.
        function: String,
    },
    /// The device carries the identity, but is not reached through the emulated
    /// controller's PCI function: another path to the same namespace.
    #[error(
        "device {path} (disk {disk}) carries volume {volume}'s identity but is reached \
         through {found}, not the emulated controller's PCI function {expected}: another \
         path to the same namespace, not the DPU's emulation"
    )]
    OtherPath {
        /// The device given.
        path: PathBuf,
        /// Its disk.
        disk: String,
        /// The PCI functions it is reached through, or "no PCI function (NVMe over a
        /// fabric, or not NVMe)".
        found: String,
        /// The volume.
        volume: String,
        /// The emulated controllers' PCI functions, comma-separated, and where the agent
        /// took the identity from.
        expected: String,
    },
    /// The device is not a block device with a sysfs directory.
    #[error("device {path} cannot be bound to volume {volume}")]
    Device {
        /// The device given.
        path: PathBuf,
        /// The volume.
        volume: String,
        /// Why.
        #[source]
        source: DeviceError,
    },
    /// The device's disk reports no namespace identifier at all.
    #[error(
        "device {path} (disk {disk}) reports no NVMe namespace identifier (uuid, nguid, \
         eui): it cannot be shown to be volume {volume} ({expected})"
    )]
    NoIdentity {
        /// The device given.
        path: PathBuf,
        /// Its disk.
        disk: String,
        /// The volume.
        volume: String,
        /// The volume's identities.
        expected: String,
    },
    /// The device is another namespace.
    #[error(
        "device {path} (disk {disk}: {found}) is not volume {volume} ({expected}): the \
         {field} differs"
    )]
    Mismatch {
        /// The device given.
        path: PathBuf,
        /// Its disk.
        disk: String,
        /// The disk's identity.
        found: Box<NamespaceIdentity>,
        /// The volume.
        volume: String,
        /// The volume's identities.
        expected: String,
        /// The first identifier that differs.
        field: &'static str,
    },
    /// The device and the volume have no kind of identifier in common.
    #[error(
        "device {path} (disk {disk}: {found}) shares no kind of identifier with volume \
         {volume} ({expected}): nothing shows they are the same namespace"
    )]
    Unrelated {
        /// The device given.
        path: PathBuf,
        /// Its disk.
        disk: String,
        /// The disk's identity.
        found: Box<NamespaceIdentity>,
        /// The volume.
        volume: String,
        /// The volume's identities.
        expected: String,
    },
    /// No device given, and no disk of this host carries the volume's identity.
    #[error("no disk on this host carries volume {volume}'s identity ({expected})")]
    NotFound {
        /// The volume.
        volume: String,
        /// The volume's identities.
        expected: String,
        /// What to do: give the device (a parameter, so a front end names it its way).
        #[source]
        next: ParamError,
    },
    /// No device given, and several disks carry the volume's identity.
    #[error("several disks on this host carry volume {volume}'s identity ({disks})")]
    Several {
        /// The volume.
        volume: String,
        /// The disks, comma-separated.
        disks: String,
        /// What to do: give one as the device.
        #[source]
        next: ParamError,
    },
    /// The disk that carries the identity has no usable device node.
    #[error("disk {disk} carries volume {volume}'s identity, but {path} is not its device node")]
    NoNode {
        /// The disk.
        disk: String,
        /// The volume.
        volume: String,
        /// The node looked for.
        path: PathBuf,
        /// Why it is not the disk's node.
        #[source]
        source: Option<Box<DeviceError>>,
    },
    /// The host's disks cannot be listed.
    #[error("cannot list this host's disks to find volume {volume}")]
    Scan {
        /// The volume.
        volume: String,
        /// Why.
        #[source]
        source: ProbeError,
    },
}

/// The identities the agent reports for `volume`, parsed; at least one.
pub fn volume_identities(volume: &v1::Volume) -> Result<Vec<VolumeIdentity>, BindError> {
    let nonempty = |s: &str| (!s.is_empty()).then(|| s.to_owned());
    let mut out = Vec::new();
    for wire in &volume.host_identities {
        let identity = NamespaceIdentity::from_parts(
            nonempty(&wire.uuid).as_deref(),
            nonempty(&wire.nguid).as_deref(),
            nonempty(&wire.eui64).as_deref(),
        )
        .map_err(|source| BindError::BadAgentIdentity {
            volume: volume.name.clone(),
            source_name: wire.source.clone(),
            source,
        })?;
        let mut host_pci_functions = Vec::new();
        for function in &wire.host_pci_functions {
            let canonical = function.to_ascii_lowercase();
            if !looks_like_pci_address(&canonical) {
                return Err(BindError::BadAgentPciFunction {
                    volume: volume.name.clone(),
                    source_name: wire.source.clone(),
                    function: function.clone(),
                });
            }
            host_pci_functions.push(canonical);
        }
        if !identity.is_empty() {
            out.push(VolumeIdentity {
                identity,
                source: wire.source.clone(),
                host_pci_functions,
            });
        }
    }
    if out.is_empty() {
        return Err(BindError::VolumeWithoutIdentity {
            volume: volume.name.clone(),
        });
    }
    Ok(out)
}

/// Binds `device` to `volume`, whose identities are `wanted`, reading the device's disk
/// under `root`.
pub fn bind_device(
    root: &SysRoot,
    device: &Path,
    volume: &str,
    wanted: &[VolumeIdentity],
) -> Result<Binding, BindError> {
    let disk = block_disk(root, device).map_err(|source| BindError::Device {
        path: device.to_owned(),
        volume: volume.to_owned(),
        source,
    })?;
    bind_disk(root, device, disk, volume, wanted)
}

/// Binds `device`, already resolved to `disk`, to `volume` by the identities `wanted`; an
/// identity that names PCI functions binds only a disk reached through one of them (read
/// under `root`).
fn bind_disk(
    root: &SysRoot,
    device: &Path,
    disk: BlockDisk,
    volume: &str,
    wanted: &[VolumeIdentity],
) -> Result<Binding, BindError> {
    let expected = || Listed(wanted).to_string();
    if disk.identity.is_empty() {
        return Err(BindError::NoIdentity {
            path: device.to_owned(),
            disk: disk.name,
            volume: volume.to_owned(),
            expected: expected(),
        });
    }
    let mut differs = None;
    let mut other_path = None;
    for candidate in wanted {
        match disk.identity.agreement(&candidate.identity) {
            Agreement::Same(fields) => {
                let pci_function = if candidate.host_pci_functions.is_empty() {
                    None
                } else {
                    let reached = disk_pci_functions(root, &disk.name);
                    match reached
                        .iter()
                        .find(|f| candidate.host_pci_functions.contains(f))
                    {
                        Some(function) => Some(function.clone()),
                        None => {
                            other_path.get_or_insert_with(|| BindError::OtherPath {
                                path: device.to_owned(),
                                disk: disk.name.clone(),
                                found: if reached.is_empty() {
                                    "no PCI function (NVMe over a fabric, or not NVMe)".to_owned()
                                } else {
                                    format!("PCI function {}", reached.join(", "))
                                },
                                volume: volume.to_owned(),
                                expected: format!(
                                    "{} ({})",
                                    candidate.host_pci_functions.join(", "),
                                    candidate.source
                                ),
                            });
                            continue;
                        }
                    }
                };
                return Ok(Binding {
                    device: device.to_owned(),
                    disk,
                    agreed_on: fields,
                    matched: candidate.clone(),
                    pci_function,
                });
            }
            Agreement::Differ(field) => {
                differs.get_or_insert(field);
            }
            Agreement::Unrelated => {}
        }
    }
    if let Some(other_path) = other_path {
        return Err(other_path);
    }
    Err(match differs {
        Some(field) => BindError::Mismatch {
            path: device.to_owned(),
            disk: disk.name,
            found: Box::new(disk.identity),
            volume: volume.to_owned(),
            expected: expected(),
            field,
        },
        None => BindError::Unrelated {
            path: device.to_owned(),
            disk: disk.name,
            found: Box::new(disk.identity),
            volume: volume.to_owned(),
            expected: expected(),
        },
    })
}

/// Finds the one disk under `root` that carries one of `wanted` and binds its device node
/// (`/dev/<disk>`, which must be that disk's block device: the same `major:minor`).
pub fn find_device(
    root: &SysRoot,
    volume: &str,
    wanted: &[VolumeIdentity],
) -> Result<Binding, BindError> {
    let mut found: Vec<BlockDisk> = Vec::new();
    for candidate in wanted {
        let disks =
            disks_with_identity(root, &candidate.identity).map_err(|source| BindError::Scan {
                volume: volume.to_owned(),
                source,
            })?;
        for disk in disks {
            if !found.iter().any(|d| d.name == disk.name) {
                found.push(disk);
            }
        }
    }
    let disk = match found.len() {
        0 => {
            return Err(BindError::NotFound {
                volume: volume.to_owned(),
                expected: Listed(wanted).to_string(),
                next: ParamError::new(Field::Device)
                    .text("is its emulated controller attached and running? Pass the disk with ")
                    .field(Field::Device),
            })
        }
        1 => found.remove(0),
        _ => {
            return Err(BindError::Several {
                volume: volume.to_owned(),
                disks: found
                    .iter()
                    .map(|d| d.name.as_str())
                    .collect::<Vec<_>>()
                    .join(", "),
                next: ParamError::new(Field::Device)
                    .text("pass one with ")
                    .field(Field::Device),
            })
        }
    };
    let node = PathBuf::from("/dev").join(&disk.name);
    match block_dev_number(&node) {
        Ok(dev) if dev == disk.dev => bind_disk(root, &node, disk, volume, wanted),
        Ok(_) => Err(BindError::NoNode {
            disk: disk.name,
            volume: volume.to_owned(),
            path: node,
            source: None,
        }),
        Err(e) => Err(BindError::NoNode {
            disk: disk.name,
            volume: volume.to_owned(),
            path: node,
            source: Some(Box::new(e)),
        }),
    }
}

#[cfg(test)]
mod tests;
