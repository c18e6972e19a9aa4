//! The one way to lay out a fake sysfs/procfs tree as the kernel does, for tests of every
//! tier (feature `testing`; always on in this crate's own tests).
//!
//! Why it exists: the probe's unit tests, `dpu-host`'s check tests and `dpu-sim`'s fixture
//! trees (which the integration tiers run the real agent and `dpuctl` against) all write
//! trees for the probe's readers. Written three ways, they drift: one tier's bridge has a
//! `numa_node`, another's link is absolute, and a reader passes against one layout and fails
//! on the machine. One builder keeps every tier's fixtures agreeing with each other and
//! with the readers in this crate: attributes end in a newline as the kernel prints them,
//! links are relative so a copied or moved tree still resolves, a PCI function sits below
//! its bridges under `sys/devices` and is linked from `sys/bus/pci/devices`.
//!
//! Two layers: free functions over a caller's directory returning [`io::Result`] (what
//! `dpu-sim` writes its trees with, into a directory it is given), and [`SysTree`], an owned
//! temporary tree whose methods panic with the path on failure (test support: a tree that
//! cannot be written is a broken test, not a result to handle).

use std::fs;
use std::io;
use std::os::unix::fs::symlink;
use std::path::{Component, Path, PathBuf};

use crate::SysRoot;

/// The vendor the bridges above a [`SysTree::pci_function`] show: Broadcom (PLX), the
/// PCIe switches of GPU servers. Only its class makes it a bridge to the readers.
const BRIDGE_VENDOR: &str = "0x1000";
/// PCI class "PCI-to-PCI bridge" (`0x0604`, programming interface 0): root and switch
/// ports.
const BRIDGE_CLASS: &str = "0x060400";
/// NVIDIA, and the class of a compute GPU (3D controller, `0x0302`), as an H100 shows.
const GPU_IDS: (&str, &str) = ("0x10de", "0x030200");
/// Mellanox, and the class of an InfiniBand/RoCE controller (`0x0207`), as a ConnectX-7
/// shows.
const NIC_IDS: (&str, &str) = ("0x15b3", "0x020700");

/// The DGX H100 rail layout as (host bridge, ConnectX-7, NUMA node): GPU -> NIC 1b ->
/// mlx5_0, 43 -> mlx5_3, 52 -> mlx5_4, 61 -> mlx5_5 on node 0; 9d -> mlx5_6, c3 -> mlx5_9,
/// d1 -> mlx5_10, df -> mlx5_11 on node 1, each pair on its own host bridge
/// ([`SysTree::gpu_tray_slot`]). The server both the topology reader's and the GPU checks'
/// tests stand on.
pub const DGX_H100_RAILS: [(u8, &str, &str); 8] = [
    (0x15, "mlx5_0", "0"),
    (0x3d, "mlx5_3", "0"),
    (0x4c, "mlx5_4", "0"),
    (0x5b, "mlx5_5", "0"),
    (0x97, "mlx5_6", "1"),
    (0xbd, "mlx5_9", "1"),
    (0xcb, "mlx5_10", "1"),
    (0xd9, "mlx5_11", "1"),
];

/// A PCIe switch below root port `0000:{hb}:01.0` of host bridge `pci0000:{hb}` (its
/// upstream port on bus hb+1); the path (below `sys/devices`) of its downstream port
/// `port`, `0000:{hb+2}:{port}.0`.
pub fn switch_port(hb: u8, port: u8) -> String {
    format!(
        "pci0000:{hb:02x}/0000:{hb:02x}:01.0/0000:{:02x}:00.0/0000:{:02x}:{port:02x}.0",
        hb + 1,
        hb + 2
    )
}

/// Writes `{root}/{rel}` with `text` exactly as given, creating the directories on the
/// way; for files that are not one-value attributes (`proc/modules`, a `stat` line).
pub fn write(root: &Path, rel: &str, text: &str) -> io::Result<()> {
    let path = root.join(rel);
    fs::create_dir_all(path.parent().unwrap_or(root))?;
    fs::write(path, text)
}

/// Creates `dir` and writes sysfs attributes into it, each value followed by a newline as
/// the kernel prints it, so the readers' trimming is exercised. Names may contain `/`
/// (e.g. `gid_attrs/types/0`).
pub fn write_attrs(dir: &Path, attrs: &[(&str, &str)]) -> io::Result<()> {
    fs::create_dir_all(dir)?;
    for (name, value) in attrs {
        let path = dir.join(name);
        fs::create_dir_all(path.parent().unwrap_or(dir))?;
        fs::write(path, format!("{value}\n"))?;
    }
    Ok(())
}

/// Creates the symlink `{root}/{link}` pointing at `{root}/{target}` by a relative path
/// (up to the root, then down to `target`), as sysfs links are relative: the tree still
/// resolves when it is copied, moved or captured.
pub fn link(root: &Path, link: &str, target: &str) -> io::Result<()> {
    let link_path = root.join(link);
    fs::create_dir_all(link_path.parent().unwrap_or(root))?;
    let depth = Path::new(link).parent().map_or(0, |p| {
        p.components()
            .filter(|c| matches!(c, Component::Normal(_)))
            .count()
    });
    let mut relative = PathBuf::new();
    for _ in 0..depth {
        relative.push("..");
    }
    relative.push(target);
    symlink(relative, link_path)
}

/// A sysfs tree in its own temporary directory, removed when dropped: what a unit test
/// points a [`SysRoot`] at. Paths given to its methods are relative to the root
/// (`sys/...`, `proc/...`), except PCI paths, which are below `sys/devices` as the kernel
/// names them (`pci0000:15/0000:15:01.0/0000:16:00.0`).
#[derive(Debug)]
pub struct SysTree {
    dir: tempfile::TempDir,
}

impl Default for SysTree {
    fn default() -> Self {
        Self::new()
    }
}

impl SysTree {
    /// An empty tree in a new temporary directory.
    pub fn new() -> Self {
        Self {
            dir: tempfile::tempdir().expect("a temporary directory for a sysfs tree"),
        }
    }

    /// The root the probe's readers take, at this tree.
    pub fn root(&self) -> SysRoot {
        SysRoot::new(self.dir.path())
    }

    /// `{root}/{rel}`, for what a test does to the tree by hand (remove, replace, read).
    pub fn path(&self, rel: &str) -> PathBuf {
        self.dir.path().join(rel)
    }

    /// Writes `rel` with `text` exactly as given (see [`write()`]).
    pub fn write(&self, rel: &str, text: &str) {
        write(self.dir.path(), rel, text).unwrap_or_else(|e| panic!("writing {rel}: {e}"));
    }

    /// Writes one attribute at `rel`, `value` and a newline as the kernel prints it.
    pub fn attr(&self, rel: &str, value: &str) {
        self.write(rel, &format!("{value}\n"));
    }

    /// Creates directory `dir` with these attributes (see [`write_attrs`]).
    pub fn attrs(&self, dir: &str, attrs: &[(&str, &str)]) {
        write_attrs(&self.path(dir), attrs).unwrap_or_else(|e| panic!("writing {dir}: {e}"));
    }

    /// Creates directory `rel` and its parents: an entry that exists but holds nothing the
    /// test needs (a soft-RoCE device's port, an empty IOMMU group).
    pub fn dir(&self, rel: &str) {
        fs::create_dir_all(self.path(rel)).unwrap_or_else(|e| panic!("creating {rel}: {e}"));
    }

    /// Links `link` to `target`, relatively (see [`link`]).
    pub fn link(&self, link_rel: &str, target_rel: &str) {
        link(self.dir.path(), link_rel, target_rel)
            .unwrap_or_else(|e| panic!("linking {link_rel} to {target_rel}: {e}"));
    }

    /// A PCI function at `path` below `sys/devices` with `vendor`, `class` and, when given,
    /// `numa_node`, linked from `sys/bus/pci/devices/<bdf>`. Every function above it on the
    /// path that does not exist yet is created as a PCI bridge (with the same `numa_node`)
    /// and linked too, so the topology readers find a real hierarchy: the first component is
    /// the host bridge (`pci0000:15`), not a function.
    pub fn pci_function(&self, path: &str, vendor: &str, class: &str, numa: Option<&str>) {
        let parts: Vec<&str> = path.split('/').collect();
        for end in 2..=parts.len() {
            let at = parts[..end].join("/");
            let dir = format!("sys/devices/{at}");
            let (vendor, class) = if end == parts.len() {
                (vendor, class)
            } else if self.path(&dir).exists() {
                continue;
            } else {
                (BRIDGE_VENDOR, BRIDGE_CLASS)
            };
            let mut attrs = vec![("vendor", vendor), ("class", class)];
            attrs.extend(numa.map(|numa| ("numa_node", numa)));
            self.attrs(&dir, &attrs);
            let bus = format!("sys/bus/pci/devices/{}", parts[end - 1]);
            if fs::symlink_metadata(self.path(&bus)).is_err() {
                self.link(&bus, &dir);
            }
        }
    }

    /// An NVIDIA compute GPU (an H100's vendor and class) at `path` on NUMA node `numa`.
    pub fn gpu(&self, path: &str, numa: &str) {
        self.pci_function(path, GPU_IDS.0, GPU_IDS.1, Some(numa));
    }

    /// A ConnectX function (a ConnectX-7's vendor and class) at `path` on NUMA node `numa`,
    /// with RDMA device `ibdev` on it (see [`SysTree::rdma_device`]).
    pub fn nic(&self, path: &str, ibdev: &str, numa: &str) {
        self.pci_function(path, NIC_IDS.0, NIC_IDS.1, Some(numa));
        self.rdma_device(ibdev, path);
    }

    /// One GPU tray slot of a DGX H100: a ConnectX-7 `ibdev` (bus hb+3, on `nic_numa`) and
    /// an H100 (bus hb+6, on `gpu_numa`) on downstream ports 0 and 1 of one PCIe switch
    /// below host bridge `hb` ([`switch_port`]).
    pub fn gpu_tray_slot(&self, hb: u8, ibdev: &str, gpu_numa: &str, nic_numa: &str) {
        self.nic(
            &format!("{}/0000:{:02x}:00.0", switch_port(hb, 0), hb + 3),
            ibdev,
            nic_numa,
        );
        self.gpu(
            &format!("{}/0000:{:02x}:00.0", switch_port(hb, 1), hb + 6),
            gpu_numa,
        );
    }

    /// RDMA device `ibdev` with port 1, its `sys/class/infiniband/<ibdev>/device` linked to
    /// the PCI function at `pci_path` (below `sys/devices`), as the kernel places it.
    pub fn rdma_device(&self, ibdev: &str, pci_path: &str) {
        let ib = format!("sys/class/infiniband/{ibdev}");
        self.dir(&format!("{ib}/ports/1"));
        self.link(&format!("{ib}/device"), &format!("sys/devices/{pci_path}"));
    }

    /// Writes `bytes` as the `config` space of the function at `path` (below
    /// `sys/devices`): 64 bytes is what an unprivileged reader sees, 4096 a root one.
    pub fn config(&self, path: &str, bytes: &[u8]) {
        let rel = format!("sys/devices/{path}/config");
        fs::write(self.path(&rel), bytes).unwrap_or_else(|e| panic!("writing {rel}: {e}"));
    }
}
