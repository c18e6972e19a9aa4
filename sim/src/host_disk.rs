//! The host side of a simulated node, for proofs: a real block device (a loop device over
//! a sparse file) that the host reads as it would read the namespace SNAP emulates, and a
//! host sys tree (`--sys-root` for `dpuctl`) that shows that disk as the emulated
//! namespace.
//!
//! What a read of the disk moves is decided by the kernel's own count of it: each step
//! reads the loop device's `/sys/block/loopN/stat` (sectors read, as the block layer
//! counts them) and hands the bytes read since the last step to the path the host's reads
//! take ([`HostPath`]). Through the emulation (the default), they are counted on the
//! volume in SNAP and arrive on the DPU's storage RDMA port, as an NVMe-oF read over RDMA
//! moves them; a proof run against the node is then PROVEN for the right reason, the
//! bytes the host read. The other paths are the proof's adversaries on purpose: the host
//! reading the remote target itself over its own RDMA port, or a disk that is not the
//! volume at all. Neither moves the volume, and the proof must say NOT PROVEN.
//!
//! A loop device needs root (and the loop driver): without them a host disk is refused
//! with that reason, and the rest of the simulation works as before.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use crate::fake_snap::{FakeSnap, FakeSnapState};
use crate::fixture::{self, LoopDisk};
use crate::qos_throttle::{DeviceThrottle, Facility, Throttle};
use crate::traffic;

/// The size of a sector in `/sys/block/*/stat` (always 512 bytes, whatever the device's
/// logical block size: `Documentation/block/stat.rst`).
const STAT_SECTOR_BYTES: u64 = 512;

/// The host's RDMA port a host that reads the target itself reads it over (the GPU
/// server's active ConnectX port).
const HOST_STORAGE_PORT: (&str, u32) = ("mlx5_0", 1);

/// Where the host's reads of its disk go.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum HostPath {
    /// Through the emulated namespace: counted on the volume and on the DPU's storage
    /// RDMA port.
    #[default]
    Emulated,
    /// The host reads the remote target itself over its own RDMA port: the host port
    /// counts the bytes, the DPU and the volume see nothing.
    HostRdma,
    /// The disk is the host's own: nothing outside the host moves.
    Local,
}

impl HostPath {
    /// Every path, by the word `dpu-sim fault NODE host-path WORD` takes.
    pub const ALL: [(&'static str, HostPath); 3] = [
        ("emulated", HostPath::Emulated),
        ("host-rdma", HostPath::HostRdma),
        ("local", HostPath::Local),
    ];

    /// The word it is written as.
    pub fn name(self) -> &'static str {
        match self {
            Self::Emulated => "emulated",
            Self::HostRdma => "host-rdma",
            Self::Local => "local",
        }
    }

    /// The path `word` names.
    pub fn parse(word: &str) -> Option<Self> {
        Self::ALL
            .iter()
            .find(|(name, _)| *name == word)
            .map(|(_, path)| *path)
    }
}

/// Why a host disk could not be had.
#[derive(Debug, thiserror::Error)]
pub enum HostDiskError {
    /// Not root: a loop device cannot be attached.
    #[error(
        "--host-disk needs root to attach a loop device (the proof reads a real block \
         device with O_DIRECT); run dpu-sim up as root, or leave --host-disk out"
    )]
    NotRoot,
    /// The size is not a whole number of 4 KiB blocks, or is too small to read.
    #[error("--host-disk must be a multiple of 4096 bytes and at least 1 MiB, got {0} bytes")]
    Size(u64),
    /// The loop device could not be attached.
    #[error("cannot attach a loop device over {}: {why}", file.display())]
    Attach {
        /// The backing file.
        file: PathBuf,
        /// What `losetup` said.
        why: String,
    },
    /// A file of the host's tree or the backing file could not be made.
    #[error("cannot prepare {}", path.display())]
    Prepare {
        /// What could not be made.
        path: PathBuf,
        /// Why.
        #[source]
        source: io::Error,
    },
}

/// The namespace the host's disk currently is, as the host sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Shown {
    /// The volume (bdev) behind it.
    bdev: String,
    /// Its identifiers (`uuid`, `nguid`, `eui`).
    identity: Vec<(&'static str, String)>,
    /// The host PCI function its controller emulates (`0000:03:00.2`).
    function: String,
}

/// A node's host: its tree and its disk.
#[derive(Debug)]
pub struct HostDisk {
    root: PathBuf,
    /// The kernel's throttle of the disk to the volume's QoS limit; declared before the
    /// disk so it is lifted before the loop device is detached.
    throttle: DeviceThrottle,
    /// Whether SNAP's limit is enforced on the disk (`dpu-sim fault NODE qos unenforced`
    /// cuts it while SNAP still reports the limit).
    qos_enforced: bool,
    disk: LoopDisk,
    path: HostPath,
    /// Sectors read as the kernel counted them at the last step.
    sectors_read: u64,
    /// Reads completed at the last step.
    reads: u64,
    shown: Option<Shown>,
}

impl HostDisk {
    /// Builds the host's tree under `dir/root` (the GPU server a BlueField-3 sits in,
    /// with netdev statistics so the proof has host NICs to account) and attaches a loop
    /// device over a sparse file of `bytes` in `dir`.
    pub fn attach(dir: &Path, bytes: u64) -> Result<Self, HostDiskError> {
        if !bytes.is_multiple_of(4096) || bytes < 1 << 20 {
            return Err(HostDiskError::Size(bytes));
        }
        if !nix::unistd::geteuid().is_root() {
            return Err(HostDiskError::NotRoot);
        }
        let prepare = |path: &Path| {
            let path = path.to_owned();
            move |source| HostDiskError::Prepare { path, source }
        };
        fs::create_dir_all(dir).map_err(prepare(dir))?;
        let root = dir.join("root");
        fixture::bluefield3_host(&root).map_err(prepare(&root))?;
        fixture::host_netdev_statistics(&root).map_err(prepare(&root))?;
        let file = dir.join("disk.img");
        let backing = fs::File::create(&file).map_err(prepare(&file))?;
        backing.set_len(bytes).map_err(prepare(&file))?;
        drop(backing);
        let disk = LoopDisk::attach(&file).map_err(|why| HostDiskError::Attach {
            file: file.clone(),
            why,
        })?;
        // The disk exists for the host from the start; it is a namespace once one is
        // exposed (`step` writes its identity then).
        fixture::identify_disk(&root, &disk.name, disk.dev, &[]).map_err(prepare(&root))?;
        // The host's own count of the disk's I/O is the kernel's: `stat` in the host's tree
        // is the real one, so `dpuctl --sys-root` reads what the block layer counted.
        let stat = root.join("sys/block").join(&disk.name).join("stat");
        std::os::unix::fs::symlink(Path::new("/sys/block").join(&disk.name).join("stat"), &stat)
            .map_err(prepare(&stat))?;
        let (sectors_read, reads) = read_stat(&disk.name).unwrap_or_default();
        let throttle = DeviceThrottle::new(Facility::detect(), disk.dev).map_err(|source| {
            HostDiskError::Prepare {
                path: disk.path.clone(),
                source,
            }
        })?;
        Ok(Self {
            root,
            throttle,
            qos_enforced: true,
            disk,
            path: HostPath::default(),
            sectors_read,
            reads,
            shown: None,
        })
    }

    /// The host's tree, for `dpuctl --sys-root`.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The disk's device node (`/dev/loop3`), for `dpuctl prove storage --device`.
    pub fn device(&self) -> &Path {
        &self.disk.path
    }

    /// Where the host's reads go now.
    pub fn path(&self) -> HostPath {
        self.path
    }

    /// Sends the host's reads down `path` from now on.
    pub fn set_path(&mut self, path: HostPath) {
        self.path = path;
    }

    /// Why SNAP's QoS limits are not enforced on the disk on this machine (no block
    /// throttle); `None` when they are.
    pub fn qos_unenforceable(&self) -> Option<&str> {
        self.throttle.missing()
    }

    /// Enforces SNAP's QoS limit on the disk from the next step on, or stops enforcing
    /// it while SNAP still reports it (a fault: a limit that is not held).
    pub fn set_qos_enforced(&mut self, enforced: bool) {
        self.qos_enforced = enforced;
    }

    /// What the kernel holds the disk to now (all 0: unlimited).
    pub fn throttle(&self) -> Throttle {
        self.throttle.applied()
    }

    /// Shows the disk as the first namespace SNAP exposes (none: a disk with no
    /// identity), and hands the bytes the kernel counted as read since the last step to
    /// the path the reads take. `dpu_root` is the DPU's tree, `port` its storage RDMA
    /// port. Returns the bytes moved.
    pub fn step(&mut self, snap: &FakeSnap, dpu_root: &Path, port: (&str, u32)) -> io::Result<u64> {
        let state = snap.state();
        self.show(&state)?;
        self.enforce(&state)?;
        let Some((sectors_read, reads)) = read_stat(&self.disk.name) else {
            return Ok(0);
        };
        // The kernel's counters only grow while the device exists; anything else (the
        // device re-created) restarts the count rather than inventing a read.
        let sectors = sectors_read.saturating_sub(self.sectors_read);
        let ops = reads.saturating_sub(self.reads);
        self.sectors_read = sectors_read;
        self.reads = reads;
        let bytes = sectors * STAT_SECTOR_BYTES;
        if bytes == 0 {
            return Ok(0);
        }
        match self.path {
            HostPath::Emulated => {
                if let Some(shown) = &self.shown {
                    snap.record_reads(&shown.bdev, bytes, ops);
                    traffic::arrive_on_port(dpu_root, port, bytes)?;
                }
            }
            HostPath::HostRdma => {
                traffic::arrive_on_port(&self.root, HOST_STORAGE_PORT, bytes)?;
            }
            HostPath::Local => {}
        }
        Ok(bytes)
    }

    /// Holds the disk to the QoS limit SNAP reports on the volume it shows (lifted when
    /// there is none, the volume is gone, or enforcement is cut by a fault). A limit
    /// cleared on SNAP's socket directly, behind the agent's back, is lifted here too:
    /// what SNAP holds is the only source.
    fn enforce(&mut self, state: &FakeSnapState) -> io::Result<()> {
        let limits = self
            .shown
            .as_ref()
            .and_then(|shown| state.bdevs.get(&shown.bdev))
            .map(|bdev| bdev.qos)
            .filter(|_| self.qos_enforced)
            .unwrap_or_default();
        self.throttle.set(Throttle::from_spdk(limits))
    }

    /// Writes (or clears) the disk's identity so the host shows the namespace SNAP
    /// exposes now.
    fn show(&mut self, state: &FakeSnapState) -> io::Result<()> {
        let wanted = exposed_namespace(state);
        if wanted == self.shown {
            return Ok(());
        }
        let dir = self.root.join("sys/block").join(&self.disk.name);
        for attr in ["uuid", "nguid", "eui", "device"] {
            match fs::remove_file(dir.join(attr)) {
                Err(e) if e.kind() != io::ErrorKind::NotFound => return Err(e),
                _ => {}
            }
        }
        if let Some(shown) = &wanted {
            let identity: Vec<(&str, &str)> = shown
                .identity
                .iter()
                .map(|(attr, value)| (*attr, value.as_str()))
                .collect();
            fixture::identify_disk(&self.root, &self.disk.name, self.disk.dev, &identity)?;
            fixture::place_disk_on_function(&self.root, &self.disk.name, &shown.function)?;
        }
        self.shown = wanted;
        Ok(())
    }
}

/// The first namespace (by subsystem NQN, then NSID) attached to an emulated controller:
/// the disk a host sees.
fn exposed_namespace(state: &FakeSnapState) -> Option<Shown> {
    for subsystem in state.subsystems.values() {
        for namespace in subsystem.namespaces.values() {
            let Some(controller) = namespace
                .controllers
                .iter()
                .find_map(|name| state.controllers.get(name))
            else {
                continue;
            };
            let mut identity = vec![("uuid", namespace.uuid.clone())];
            if let Some(nguid) = &namespace.nguid {
                identity.push(("nguid", nguid.clone()));
            }
            if let Some(eui64) = &namespace.eui64 {
                identity.push(("eui", eui64.clone()));
            }
            return Some(Shown {
                bdev: namespace.bdev.clone(),
                identity,
                function: format!("0000:{}", controller.pci_bdf),
            });
        }
    }
    None
}

/// Sectors read and reads completed, from the real `/sys/block/NAME/stat` (fields 3 and
/// 1); `None` when it cannot be read.
fn read_stat(name: &str) -> Option<(u64, u64)> {
    let text = fs::read_to_string(Path::new("/sys/block").join(name).join("stat")).ok()?;
    parse_stat(&text)
}

/// Sectors read and reads completed from the text of a `stat` file.
fn parse_stat(text: &str) -> Option<(u64, u64)> {
    let fields: Vec<u64> = text
        .split_whitespace()
        .map(str::parse)
        .collect::<Result<_, _>>()
        .ok()?;
    Some((*fields.get(2)?, *fields.first()?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_stat_file_gives_sectors_and_reads() {
        // Documentation/block/stat.rst: read I/Os, read merges, read sectors, read ticks ...
        let text = "     120        3     4096       57        0        0        0        0        0       60       57        0        0        0        0        0        0\n";
        assert_eq!(parse_stat(text), Some((4096, 120)));
        assert_eq!(parse_stat("1 2\n"), None, "too short");
        assert_eq!(parse_stat("1 2 x 4\n"), None, "not a number");
    }

    #[test]
    fn host_paths_read_back_by_name() {
        for (word, path) in HostPath::ALL {
            assert_eq!(HostPath::parse(word), Some(path));
            assert_eq!(path.name(), word);
        }
        assert_eq!(HostPath::parse("fabric"), None);
    }

    #[test]
    fn a_size_that_is_not_whole_blocks_is_refused_before_anything_is_made() {
        let dir = tempfile::tempdir().expect("tempdir");
        let made = dir.path().join("host");
        for bytes in [0, 4096, (1 << 20) + 1] {
            let err = HostDisk::attach(&made, bytes).expect_err("refused");
            assert!(matches!(err, HostDiskError::Size(b) if b == bytes), "{err}");
        }
        assert!(!made.exists(), "nothing made for a refused size");
    }
}
