//! PCIe Access Control Services (ACS) of a bridge, read from its configuration space.
//! ACS P2P Request Redirect and Completion Redirect on a switch port send peer-to-peer
//! traffic (a NIC reading GPU memory: GPUDirect RDMA) up to the root complex instead of
//! across the switch, which costs bandwidth or breaks it (sources and layout:
//! `docs/reference/gpudirect-rdma.md`).
//!
//! The parsing is pure functions over the bytes of `config` (extended capability walk,
//! ACS decode); [`read_bridge_acs`] reads the file under a [`SysRoot`]. sysfs returns only
//! the first 64 bytes of `config` to a reader without `CAP_SYS_ADMIN`, which is reported
//! as [`BridgeAcs::NeedsRoot`], never guessed.

use std::fmt;

use crate::{ProbeError, SysRoot};

/// The PCIe extended capability ID of ACS (`PCI_EXT_CAP_ID_ACS`).
pub const PCI_EXT_CAP_ID_ACS: u16 = 0x000d;
/// Where the extended capability list starts (`PCI_CFG_SPACE_SIZE`): the end of the
/// conventional 256-byte configuration space.
pub const EXTENDED_CONFIG_START: usize = 0x100;
/// The size of PCIe configuration space (`PCI_CFG_SPACE_EXP_SIZE`).
pub const EXTENDED_CONFIG_END: usize = 0x1000;

/// ACS control or capability bits (`PCI_ACS_*` in `include/uapi/linux/pci_regs.h`); the
/// same layout in the ACS Capability Register (+4) and the ACS Control Register (+6).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct AcsFlags(pub u16);

impl AcsFlags {
    /// Source Validation (`PCI_ACS_SV`).
    pub const SOURCE_VALIDATION: u16 = 0x0001;
    /// Translation Blocking (`PCI_ACS_TB`).
    pub const TRANSLATION_BLOCKING: u16 = 0x0002;
    /// P2P Request Redirect (`PCI_ACS_RR`).
    pub const REQUEST_REDIRECT: u16 = 0x0004;
    /// P2P Completion Redirect (`PCI_ACS_CR`).
    pub const COMPLETION_REDIRECT: u16 = 0x0008;
    /// Upstream Forwarding (`PCI_ACS_UF`).
    pub const UPSTREAM_FORWARDING: u16 = 0x0010;
    /// P2P Egress Control (`PCI_ACS_EC`).
    pub const EGRESS_CONTROL: u16 = 0x0020;
    /// Direct Translated P2P (`PCI_ACS_DT`).
    pub const DIRECT_TRANSLATED: u16 = 0x0040;

    /// Each bit with the name `lspci -vvv` prints for it (`ACSCtl: SrcValid+ ...`).
    pub const NAMES: [(u16, &'static str); 7] = [
        (Self::SOURCE_VALIDATION, "SrcValid"),
        (Self::TRANSLATION_BLOCKING, "TransBlk"),
        (Self::REQUEST_REDIRECT, "ReqRedir"),
        (Self::COMPLETION_REDIRECT, "CmpltRedir"),
        (Self::UPSTREAM_FORWARDING, "UpstreamFwd"),
        (Self::EGRESS_CONTROL, "EgressCtrl"),
        (Self::DIRECT_TRANSLATED, "DirectTrans"),
    ];

    /// Whether every bit of `mask` is set.
    pub fn has(self, mask: u16) -> bool {
        self.0 & mask == mask
    }

    /// The names of the set bits, in register order (bits above 6 are not named).
    pub fn names(self) -> Vec<&'static str> {
        Self::NAMES
            .iter()
            .filter(|(bit, _)| self.has(*bit))
            .map(|(_, name)| *name)
            .collect()
    }

    /// Whether peer-to-peer requests or completions are redirected upstream (RR or CR):
    /// what forces peer traffic below this port through the root complex.
    pub fn redirects_peer_traffic(self) -> bool {
        self.0 & (Self::REQUEST_REDIRECT | Self::COMPLETION_REDIRECT) != 0
    }
}

impl fmt::Display for AcsFlags {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names = self.names();
        if names.is_empty() {
            write!(f, "none")
        } else {
            write!(f, "{}", names.join(" "))
        }
    }
}

/// One entry of the extended capability list.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ExtendedCapability {
    /// Its offset in configuration space (0x100 or more).
    pub offset: usize,
    /// The capability ID (`PCI_EXT_CAP_ID`, 16 bits).
    pub id: u16,
    /// Its version (`PCI_EXT_CAP_VER`, 4 bits).
    pub version: u8,
}

/// A bridge's ACS capability: which controls it implements and which are on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AcsCapability {
    /// Where the ACS extended capability sits in configuration space.
    pub offset: usize,
    /// The ACS Capability Register (+4): the controls implemented.
    pub capability: AcsFlags,
    /// The ACS Control Register (+6): the controls enabled.
    pub control: AcsFlags,
}

/// What a bridge's configuration space says about ACS.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BridgeAcs {
    /// `config` was shorter than 256 bytes: sysfs gives the rest only to root.
    NeedsRoot {
        /// How many bytes were readable.
        bytes: usize,
    },
    /// 256 bytes and no more: a conventional PCI function without extended space.
    NoExtendedConfig,
    /// The extended capability list has no ACS entry (or is empty).
    NotImplemented,
    /// ACS is implemented; its registers.
    Implemented(AcsCapability),
}

/// Why configuration space bytes could not be walked; every case names the offset.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConfigSpaceError {
    /// A header or register lies (partly) beyond the bytes read.
    #[error("{what} at offset {offset:#x} needs {needed} bytes but only {len} were read")]
    Truncated {
        /// What was being read.
        what: &'static str,
        /// Where.
        offset: usize,
        /// How many bytes it needs from `offset`.
        needed: usize,
        /// How many bytes there are.
        len: usize,
    },
    /// A next pointer below 0x100 (other than 0, the end of the list).
    #[error(
        "extended capability at {offset:#x} points to {next:#x}, inside conventional config space"
    )]
    NextInsideConventional {
        /// The capability holding the pointer.
        offset: usize,
        /// The pointer.
        next: usize,
    },
    /// The list visits an offset twice.
    #[error("extended capability list loops back to {offset:#x}")]
    Loop {
        /// The offset seen twice.
        offset: usize,
    },
    /// A header reads as all ones: the function did not answer the config read.
    #[error(
        "extended capability header at {offset:#x} reads 0xffffffff (the function did not answer)"
    )]
    AllOnes {
        /// Where.
        offset: usize,
    },
}

fn u16_at(config: &[u8], offset: usize, what: &'static str) -> Result<u16, ConfigSpaceError> {
    config
        .get(offset..offset + 2)
        .map(|b| u16::from_le_bytes([b[0], b[1]]))
        .ok_or(ConfigSpaceError::Truncated {
            what,
            offset,
            needed: 2,
            len: config.len(),
        })
}

fn u32_at(config: &[u8], offset: usize, what: &'static str) -> Result<u32, ConfigSpaceError> {
    config
        .get(offset..offset + 4)
        .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        .ok_or(ConfigSpaceError::Truncated {
            what,
            offset,
            needed: 4,
            len: config.len(),
        })
}

/// Walks the extended capability list from 0x100, as the kernel's
/// `pci_find_next_ext_capability` does: header = 16-bit ID, 4-bit version, 12-bit next
/// pointer (its low two bits masked, `PCI_EXT_CAP_NEXT`); a header of 0 means no
/// capabilities, a next pointer of 0 ends the list. Config space shorter than 0x104 has
/// no list (empty). A pointer into conventional space, a loop, a header beyond the bytes
/// read or a header of all ones is an error naming the offset.
pub fn extended_capabilities(config: &[u8]) -> Result<Vec<ExtendedCapability>, ConfigSpaceError> {
    let mut found = Vec::new();
    if config.len() < EXTENDED_CONFIG_START + 4 {
        return Ok(found);
    }
    let mut seen = vec![false; config.len().div_ceil(4)];
    let mut offset = EXTENDED_CONFIG_START;
    loop {
        let header = u32_at(config, offset, "extended capability header")?;
        if header == 0 && offset == EXTENDED_CONFIG_START {
            return Ok(found);
        }
        if header == u32::MAX {
            return Err(ConfigSpaceError::AllOnes { offset });
        }
        seen[offset / 4] = true;
        found.push(ExtendedCapability {
            offset,
            id: (header & 0xffff) as u16,
            version: ((header >> 16) & 0xf) as u8,
        });
        let next = ((header >> 20) & 0xffc) as usize;
        if next == 0 {
            return Ok(found);
        }
        if next < EXTENDED_CONFIG_START {
            return Err(ConfigSpaceError::NextInsideConventional { offset, next });
        }
        if seen.get(next / 4).copied().unwrap_or(false) {
            return Err(ConfigSpaceError::Loop { offset: next });
        }
        offset = next;
    }
}

/// Decodes a bridge's ACS state from its configuration space bytes (as many as were
/// read): [`BridgeAcs::NeedsRoot`] below 256 bytes, [`BridgeAcs::NoExtendedConfig`] at
/// exactly 256, else the ACS capability's registers if the list has one.
pub fn decode_acs(config: &[u8]) -> Result<BridgeAcs, ConfigSpaceError> {
    if config.len() < EXTENDED_CONFIG_START {
        return Ok(BridgeAcs::NeedsRoot {
            bytes: config.len(),
        });
    }
    if config.len() == EXTENDED_CONFIG_START {
        return Ok(BridgeAcs::NoExtendedConfig);
    }
    let Some(acs) = extended_capabilities(config)?
        .into_iter()
        .find(|c| c.id == PCI_EXT_CAP_ID_ACS)
    else {
        return Ok(BridgeAcs::NotImplemented);
    };
    Ok(BridgeAcs::Implemented(AcsCapability {
        offset: acs.offset,
        capability: AcsFlags(u16_at(config, acs.offset + 4, "ACS Capability Register")?),
        control: AcsFlags(u16_at(config, acs.offset + 6, "ACS Control Register")?),
    }))
}

/// Reads `sys/bus/pci/devices/<address>/config` under `root` (at most 4096 bytes are
/// looked at) and decodes its ACS state. An unreadable file, or bytes that do not walk,
/// is an error naming the file; an address with a `/` or `..` is refused.
pub fn read_bridge_acs(root: &SysRoot, address: &str) -> Result<BridgeAcs, ProbeError> {
    if address.is_empty() || address.contains('/') || address == ".." || address == "." {
        return Err(ProbeError::InvalidName {
            what: "PCI address",
            name: address.to_owned(),
            why: "a PCI address has no '/' and is not '.' or '..'",
        });
    }
    let path = root.sys("bus/pci/devices").join(address).join("config");
    let bytes = crate::root::read_bytes(&path).map_err(|e| ProbeError::read(&path, e))?;
    let bytes = &bytes[..bytes.len().min(EXTENDED_CONFIG_END)];
    decode_acs(bytes).map_err(|e| ProbeError::Format {
        path,
        detail: e.to_string(),
    })
}

#[cfg(test)]
mod tests;
