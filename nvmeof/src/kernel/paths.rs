//! [`KernelPaths`], where the kernel interfaces (configfs, sysfs, the fabrics device) are
//! found. A leaf of its own because both halves of the backend, [`Nvmet`](super::Nvmet)
//! and [`Fabrics`](super::Fabrics), are built from it while `kernel/mod.rs` re-exports
//! them, which would otherwise make the children import their parent.

use std::path::{Path, PathBuf};

/// Where the kernel interfaces live; everything is relative to these so tests (and a
/// chroot'ed agent) can point the backend at another tree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KernelPaths {
    /// The nvmet configfs root, `/sys/kernel/config/nvmet`.
    pub configfs_nvmet: PathBuf,
    /// The sysfs mount, `/sys`.
    pub sys: PathBuf,
    /// The fabrics control device, `/dev/nvme-fabrics`.
    pub fabrics_device: PathBuf,
}

impl KernelPaths {
    /// The paths of the running system.
    pub fn host() -> Self {
        Self::under(Path::new("/"))
    }

    /// The same layout below `root` (a test fixture or a mounted image).
    pub fn under(root: &Path) -> Self {
        Self {
            configfs_nvmet: root.join("sys/kernel/config/nvmet"),
            sys: root.join("sys"),
            fabrics_device: root.join("dev/nvme-fabrics"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_under_a_root() {
        let p = KernelPaths::under(Path::new("/r"));
        assert_eq!(p.configfs_nvmet, Path::new("/r/sys/kernel/config/nvmet"));
        assert_eq!(p.sys, Path::new("/r/sys"));
        assert_eq!(p.fabrics_device, Path::new("/r/dev/nvme-fabrics"));
        assert_eq!(
            KernelPaths::host().configfs_nvmet,
            Path::new("/sys/kernel/config/nvmet")
        );
    }
}
