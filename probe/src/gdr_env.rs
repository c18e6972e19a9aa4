//! What GPUDirect RDMA needs from the host kernel, read from sysfs and procfs under a
//! root: a peer-memory client (`nvidia_peermem`, or the older `nv_peer_mem`) or the
//! DMA-BUF path (kernel 5.12 or later with NVIDIA's open kernel module), and an IOMMU that
//! does not translate the GPUs' peer traffic. NCCL decides the same from the same files
//! and otherwise logs "GPU Direct RDMA Disabled" and stages every transfer through host
//! memory (sources: `docs/reference/gpudirect-rdma.md`).

use std::io;
use std::path::Path;

use crate::root::{list_dir, read_attr};
use crate::{ProbeError, SysRoot};

/// The files whose existence NCCL's `ibGdrSupportInitOnce` (`src/transport/net_ib.cc`)
/// takes as a loaded peer-memory client, below the sys root.
pub const PEERMEM_SYSFS: [&str; 3] = [
    "kernel/mm/memory_peers/nv_mem/version",
    "kernel/mm/memory_peers/nv_mem_nc/version",
    "module/nvidia_peermem/version",
];

/// Module names of the peer-memory clients: the driver's own (R470 and later) and the
/// older Mellanox one.
pub const PEERMEM_MODULES: [&str; 2] = ["nvidia_peermem", "nv_peer_mem"];

/// The NVIDIA kernel driver as `/proc/driver/nvidia/version` describes it.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct NvidiaDriver {
    /// The `NVRM version:` line, as printed.
    pub version_line: String,
    /// Whether it is the open kernel module (`NVIDIA UNIX Open Kernel Module for x86_64`),
    /// which exports GPU memory as DMA-BUF; the proprietary one prints
    /// `NVIDIA UNIX x86_64 Kernel Module`.
    pub open_kernel_module: bool,
    /// The driver version (`580.126.09`), when the line has one.
    pub version: Option<String>,
}

/// One IOMMU group (`/sys/kernel/iommu_groups/N`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct IommuGroup {
    /// The group number.
    pub id: u32,
    /// Its default domain type (`type`, kernel 5.11+): `DMA`, `DMA-FQ` (translated),
    /// `identity` (passthrough), `blocked`, `unmanaged`, `unknown`; `None` without the file.
    pub domain_type: Option<String>,
    /// The PCI addresses (and other device names) in it (`devices/`).
    pub devices: Vec<String>,
}

impl IommuGroup {
    /// Whether the default domain translates DMA addresses (`DMA`, `DMA-FQ`, `DMA-SQ`):
    /// peer-to-peer then goes through IOMMU translation.
    pub fn is_translated(&self) -> bool {
        self.domain_type
            .as_deref()
            .is_some_and(|t| t == "DMA" || t.starts_with("DMA-"))
    }
}

/// Everything the `gdr.*` checks read apart from PCIe topology and ACS.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct GdrEnvironment {
    /// Evidence of a loaded peer-memory client: each sysfs path that exists (as
    /// `/sys/...`) and each matching `/proc/modules` line's module name; empty when none.
    pub peer_memory: Vec<String>,
    /// `/proc/sys/kernel/osrelease` (`6.8.0-49-generic`), when readable.
    pub kernel_release: Option<String>,
    /// `/proc/driver/nvidia/version`'s first line, when the NVIDIA driver is loaded.
    pub nvidia_driver: Option<NvidiaDriver>,
    /// `/proc/cmdline`, when readable.
    pub cmdline: Option<String>,
    /// Every IOMMU group, by number; empty when the IOMMU is off (or absent).
    pub iommu_groups: Vec<IommuGroup>,
}

impl GdrEnvironment {
    /// `(major, minor)` of the running kernel, from `kernel_release`.
    pub fn kernel_version(&self) -> Option<(u32, u32)> {
        parse_kernel_version(self.kernel_release.as_deref()?)
    }

    /// Whether the kernel command line carries `word` as one whole parameter
    /// (`iommu=pt`), not as part of another.
    pub fn cmdline_has(&self, word: &str) -> bool {
        self.cmdline
            .as_deref()
            .is_some_and(|c| c.split_whitespace().any(|w| w == word))
    }

    /// The IOMMU group holding PCI function `address`, if any.
    pub fn iommu_group_of(&self, address: &str) -> Option<&IommuGroup> {
        self.iommu_groups
            .iter()
            .find(|g| g.devices.iter().any(|d| d == address))
    }
}

/// `(major, minor)` from a kernel release such as `6.8.0-49-generic` or `5.15.0`.
pub fn parse_kernel_version(release: &str) -> Option<(u32, u32)> {
    let mut parts = release.trim().split(|c: char| !c.is_ascii_digit());
    let major = parts.next()?.parse().ok()?;
    let minor = parts.next()?.parse().ok()?;
    Some((major, minor))
}

/// Parses `/proc/driver/nvidia/version`'s text: its `NVRM version:` line (the first
/// line when none is marked so), whether it names the open kernel module, and the first
/// token shaped like a version (`580.126.09`). Empty text is `None`.
pub fn parse_nvidia_version(text: &str) -> Option<NvidiaDriver> {
    let line = text
        .lines()
        .find(|l| l.starts_with("NVRM version:"))
        .or_else(|| text.lines().find(|l| !l.trim().is_empty()))?
        .trim();
    let version = line
        .split_whitespace()
        .find(|t| {
            t.contains('.')
                && t.split('.')
                    .all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()))
        })
        .map(str::to_owned);
    Some(NvidiaDriver {
        version_line: line.to_owned(),
        open_kernel_module: line.contains("Open Kernel Module"),
        version,
    })
}

/// The module names of `/proc/modules` lines (`nvidia_peermem 16384 0 - Live 0x0 (OE)`)
/// that are peer-memory clients.
pub fn peermem_modules(proc_modules: &str) -> Vec<String> {
    proc_modules
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .filter(|name| PEERMEM_MODULES.contains(name))
        .map(str::to_owned)
        .collect()
}

/// Reads the GPUDirect RDMA environment under `root`. Absent files mean "not there"
/// (no module, no driver, no IOMMU groups); an unreadable one, or an IOMMU group whose
/// name is not a number, is an error naming it.
pub fn read_gdr_environment(root: &SysRoot) -> Result<GdrEnvironment, ProbeError> {
    let mut peer_memory = Vec::new();
    for rel in PEERMEM_SYSFS {
        if exists(&root.sys(rel))? {
            peer_memory.push(format!("/sys/{rel}"));
        }
    }
    for module in PEERMEM_MODULES {
        let rel = format!("module/{module}");
        let shown = format!("/sys/{rel}");
        if !peer_memory.iter().any(|p| p.starts_with(&shown)) && exists(&root.sys(&rel))? {
            peer_memory.push(shown);
        }
    }
    if let Some(modules) = optional(&root.proc("modules"))? {
        for name in peermem_modules(&modules) {
            peer_memory.push(format!("/proc/modules: {name}"));
        }
    }
    let nvidia_driver =
        optional(&root.proc("driver/nvidia/version"))?.and_then(|t| parse_nvidia_version(&t));
    Ok(GdrEnvironment {
        peer_memory,
        kernel_release: optional(&root.proc("sys/kernel/osrelease"))?.map(|s| s.trim().to_owned()),
        nvidia_driver,
        cmdline: optional(&root.proc("cmdline"))?.map(|s| s.trim().to_owned()),
        iommu_groups: read_iommu_groups(root)?,
    })
}

/// Every group under `sys/kernel/iommu_groups`, sorted by number.
fn read_iommu_groups(root: &SysRoot) -> Result<Vec<IommuGroup>, ProbeError> {
    let dir = root.sys("kernel/iommu_groups");
    let mut groups = Vec::new();
    for name in list_dir(&dir)? {
        let id = name.parse::<u32>().map_err(|_| ProbeError::Format {
            path: dir.clone(),
            detail: format!("IOMMU group {name:?} is not a number"),
        })?;
        let group = dir.join(&name);
        groups.push(IommuGroup {
            id,
            domain_type: optional(&group.join("type"))?.map(|t| t.trim().to_owned()),
            devices: list_dir(&group.join("devices"))?,
        });
    }
    groups.sort_by_key(|g| g.id);
    Ok(groups)
}

/// Whether `path` exists (a broken link counts as absent); other errors are errors.
fn exists(path: &Path) -> Result<bool, ProbeError> {
    match std::fs::metadata(path) {
        Ok(_) => Ok(true),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(ProbeError::read(path, e)),
    }
}

/// A file's text, `None` when it does not exist.
fn optional(path: &Path) -> Result<Option<String>, ProbeError> {
    match read_attr(path) {
        Ok(text) => Ok(Some(text)),
        Err(ProbeError::Read { source, .. }) if source.kind() == io::ErrorKind::NotFound => {
            Ok(None)
        }
        Err(e) => Err(e),
    }
}

#[cfg(test)]
mod tests;
