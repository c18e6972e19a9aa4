//! The fake SNAP's QoS limits enforced for real: a node's host disk (a loop device) is
//! throttled by the kernel's block throttle (blk-throttle) to the limit SNAP holds on the
//! volume the disk shows, so a reader of the disk sees the rate a real SNAP's bdev QoS
//! would give it, and `dpuctl prove qos` has a real limit to measure.
//!
//! SPDK's limits map onto blk-throttle's files in the root cgroup v1 blkio hierarchy
//! (`blkio.throttle.{read,write}_{bps,iops}_device`, `MAJ:MIN VALUE`, 0 lifts):
//! `r_mbytes_per_sec` → read bps, `w_mbytes_per_sec` → write bps, `rw_mbytes_per_sec` →
//! both read and write bps (SPDK counts reads and writes against one budget; blk-throttle
//! cannot, so a mixed workload gets up to twice the rw limit here, a read-only one the
//! same), `rw_ios_per_sec` → read and write IOPS (the same caveat); the tightest applies
//! where several do. MiB are 2^20 bytes, as in SPDK.
//!
//! Cgroup v2 has no `io.max` in the root cgroup, and the simulator's processes (and the
//! host's reader) are not moved into a child: there the limit is not enforced, and the
//! simulator says so rather than pretending.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

/// One MiB, SPDK's unit for the `*_mbytes_per_sec` limits.
const MIB: u64 = 1 << 20;

/// Where the root blkio cgroup is mounted on a cgroup v1 (or hybrid) machine.
const BLKIO_ROOT: &str = "/sys/fs/cgroup/blkio";

/// The throttle files, in the order of [`Throttle`]'s fields.
const FILES: [&str; 4] = [
    "blkio.throttle.read_bps_device",
    "blkio.throttle.write_bps_device",
    "blkio.throttle.read_iops_device",
    "blkio.throttle.write_iops_device",
];

/// What the kernel is asked to hold a device to; 0 = unlimited.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Throttle {
    /// Read bytes per second.
    pub read_bps: u64,
    /// Write bytes per second.
    pub write_bps: u64,
    /// Read I/Os per second.
    pub read_iops: u64,
    /// Write I/Os per second.
    pub write_iops: u64,
}

/// The smallest of the limits that are set (0 = unset); 0 when none is.
fn tightest(limits: &[u64]) -> u64 {
    limits
        .iter()
        .copied()
        .filter(|l| *l != 0)
        .min()
        .unwrap_or(0)
}

impl Throttle {
    /// The throttle for SPDK's limits as the fake SNAP holds them (`[rw_ios_per_sec,
    /// rw_mbytes_per_sec, r_mbytes_per_sec, w_mbytes_per_sec]`, 0 = unlimited).
    pub fn from_spdk(qos: [u64; 4]) -> Self {
        let [rw_ios, rw_mbytes, r_mbytes, w_mbytes] = qos;
        let bytes = |mib: u64| mib.saturating_mul(MIB);
        Self {
            read_bps: tightest(&[bytes(r_mbytes), bytes(rw_mbytes)]),
            write_bps: tightest(&[bytes(w_mbytes), bytes(rw_mbytes)]),
            read_iops: rw_ios,
            write_iops: rw_ios,
        }
    }

    fn values(self) -> [u64; 4] {
        [
            self.read_bps,
            self.write_bps,
            self.read_iops,
            self.write_iops,
        ]
    }
}

/// Whether this machine can throttle a block device, and where.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Facility {
    /// The root blkio cgroup (v1) with its throttle files, in this directory.
    BlkioV1(PathBuf),
    /// No usable block throttle; why.
    Missing(String),
}

impl Facility {
    /// Looks for the root cgroup v1 blkio hierarchy with writable throttle files.
    pub fn detect() -> Self {
        Self::detect_in(Path::new(BLKIO_ROOT), Path::new("/sys/fs/cgroup"))
    }

    /// [`Facility::detect`] with the blkio root and the cgroup mount point given.
    pub fn detect_in(blkio: &Path, cgroup: &Path) -> Self {
        if FILES.iter().all(|f| blkio.join(f).is_file()) {
            let probe = blkio.join(FILES[0]);
            return match fs::OpenOptions::new().write(true).open(&probe) {
                Ok(_) => Self::BlkioV1(blkio.to_owned()),
                Err(e) => Self::Missing(format!(
                    "{} cannot be written ({e}): blk-throttle needs root",
                    probe.display()
                )),
            };
        }
        if cgroup.join("cgroup.controllers").is_file() {
            return Self::Missing(format!(
                "{} is cgroup v2, whose root cgroup has no io.max (limits apply only to \
                 child cgroups, and the readers are not moved into one)",
                cgroup.display()
            ));
        }
        Self::Missing(format!(
            "no cgroup v1 blkio hierarchy with throttle files at {}",
            blkio.display()
        ))
    }

    /// Why limits are not enforced; `None` when they are.
    pub fn missing(&self) -> Option<&str> {
        match self {
            Self::BlkioV1(_) => None,
            Self::Missing(why) => Some(why),
        }
    }
}

/// One block device's throttle as the simulator set it: written only when it changes,
/// lifted when dropped, so nothing is left on the device after the simulation.
#[derive(Debug)]
pub struct DeviceThrottle {
    facility: Facility,
    dev: (u32, u32),
    /// What was last written (every file of it), or assumed lifted at the start.
    applied: Throttle,
}

impl DeviceThrottle {
    /// The throttle of device `dev` (`MAJ:MIN`); a rule an earlier run left on the device
    /// is lifted now.
    pub fn new(facility: Facility, dev: (u32, u32)) -> io::Result<Self> {
        let mut throttle = Self {
            facility,
            dev,
            applied: Throttle::default(),
        };
        throttle.write(Throttle::default())?;
        Ok(throttle)
    }

    /// Why limits are not enforced on this machine; `None` when they are.
    pub fn missing(&self) -> Option<&str> {
        self.facility.missing()
    }

    /// What the kernel holds the device to now.
    pub fn applied(&self) -> Throttle {
        self.applied
    }

    /// Holds the device to `wanted` (all 0: lifted); writes only the files that change.
    /// Without the facility nothing is written.
    pub fn set(&mut self, wanted: Throttle) -> io::Result<()> {
        if wanted == self.applied {
            return Ok(());
        }
        self.write(wanted)
    }

    fn write(&mut self, wanted: Throttle) -> io::Result<()> {
        let Facility::BlkioV1(dir) = &self.facility else {
            return Ok(());
        };
        let (major, minor) = self.dev;
        let before = self.applied.values();
        for ((file, value), old) in FILES.iter().zip(wanted.values()).zip(before) {
            // At the start every file is written, to clear what an earlier run left.
            if value == old && self.applied != Throttle::default() {
                continue;
            }
            let path = dir.join(file);
            fs::write(&path, format!("{major}:{minor} {value}\n")).map_err(|e| {
                io::Error::new(e.kind(), format!("cannot write {}: {e}", path.display()))
            })?;
        }
        self.applied = wanted;
        Ok(())
    }
}

impl Drop for DeviceThrottle {
    fn drop(&mut self) {
        if self.applied != Throttle::default() {
            if let Err(e) = self.write(Throttle::default()) {
                // Nowhere else to say it: a drop cannot fail, and `down` has no log.
                eprintln!("dpu-sim: cannot lift the block throttle: {e}");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spdk_limits_become_the_tightest_kernel_limit_in_bytes() {
        assert_eq!(Throttle::from_spdk([0; 4]), Throttle::default());
        let read_only = Throttle::from_spdk([0, 0, 8, 0]);
        assert_eq!(read_only.read_bps, 8 << 20);
        assert_eq!(read_only.write_bps, 0);
        // rw applies to both directions; the tighter of rw and r wins for reads.
        let both = Throttle::from_spdk([2000, 4, 8, 0]);
        assert_eq!((both.read_bps, both.write_bps), (4 << 20, 4 << 20));
        assert_eq!((both.read_iops, both.write_iops), (2000, 2000));
        let tighter_read = Throttle::from_spdk([0, 16, 8, 32]);
        assert_eq!(
            (tighter_read.read_bps, tighter_read.write_bps),
            (8 << 20, 16 << 20)
        );
    }

    #[test]
    fn the_facility_is_found_or_its_absence_named() {
        let dir = tempfile::tempdir().expect("tempdir");
        let blkio = dir.path().join("blkio");
        fs::create_dir_all(&blkio).expect("mkdir");
        let v2 = dir.path().join("v2");
        fs::create_dir_all(&v2).expect("mkdir");
        let missing = Facility::detect_in(&blkio, dir.path());
        assert!(
            missing
                .missing()
                .is_some_and(|w| w.contains("no cgroup v1")),
            "{missing:?}"
        );
        fs::write(v2.join("cgroup.controllers"), "io memory\n").expect("write");
        let unified = Facility::detect_in(&blkio, &v2);
        assert!(
            unified.missing().is_some_and(|w| w.contains("io.max")),
            "{unified:?}"
        );
        for file in FILES {
            fs::write(blkio.join(file), "").expect("write");
        }
        assert_eq!(
            Facility::detect_in(&blkio, &v2),
            Facility::BlkioV1(blkio.clone())
        );
    }

    #[test]
    fn only_changes_are_written_and_drop_lifts_the_limit() {
        let dir = tempfile::tempdir().expect("tempdir");
        let blkio = dir.path().to_owned();
        let read = |file: &str| fs::read_to_string(blkio.join(file)).unwrap_or_default();
        let mut throttle =
            DeviceThrottle::new(Facility::BlkioV1(blkio.clone()), (7, 3)).expect("new");
        assert_eq!(
            read(FILES[0]),
            "7:3 0\n",
            "a stale rule is lifted at the start"
        );
        throttle
            .set(Throttle::from_spdk([0, 0, 8, 0]))
            .expect("set");
        assert_eq!(read(FILES[0]), format!("7:3 {}\n", 8 << 20));
        // Unchanged: nothing written (the file's text, changed behind its back, stays).
        fs::write(blkio.join(FILES[0]), "untouched").expect("write");
        throttle
            .set(Throttle::from_spdk([0, 0, 8, 0]))
            .expect("set");
        assert_eq!(read(FILES[0]), "untouched");
        drop(throttle);
        assert_eq!(read(FILES[0]), "7:3 0\n", "dropped: lifted");
    }

    #[test]
    fn without_the_facility_nothing_is_written() {
        let mut throttle =
            DeviceThrottle::new(Facility::Missing("none here".to_owned()), (7, 3)).expect("new");
        throttle
            .set(Throttle::from_spdk([0, 0, 8, 0]))
            .expect("set is a no-op");
        assert_eq!(throttle.missing(), Some("none here"));
    }
}
