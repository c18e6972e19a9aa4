//! The Linux kernel NVMe-oF backend: an nvmet target set up through configfs ([`Nvmet`])
//! and an nvme-fabrics initiator through `/dev/nvme-fabrics` and sysfs ([`Fabrics`]),
//! the alternative to SNAP/SPDK when the DPU (or a lab VM) runs a stock kernel.
//!
//! # What this relies on, and how sure we are
//!
//! Verified against kernel sources (`shared/reference/storage.md` §4;
//! `drivers/nvme/target/configfs.c`, `drivers/nvme/host/fabrics.c`, `core.c`,
//! `multipath.c`, `tcp.c`):
//! - the configfs layout: `subsystems/<nqn>/{attr_allow_any_host,attr_serial,attr_model,
//!   namespaces/<nsid>/{device_path,device_uuid,enable},allowed_hosts/}`,
//!   `ports/<id>/{addr_trtype,addr_adrfam,addr_traddr,addr_trsvcid,subsystems/}`,
//!   `hosts/<nqn>/`; `device_path`/`device_uuid` writable only while the namespace is
//!   disabled; port address attributes read-only while any subsystem is linked;
//!   `allowed_hosts` links and `attr_allow_any_host=1` exclude each other;
//! - the `/dev/nvme-fabrics` protocol: one option-string write, `instance=N,cntlid=M`
//!   read back on the same file; `instance=-1,cntlid=-1,<tokens>` when no controller;
//! - `delete_controller`, `transport`, `address` (TCP appends `src_addr=`), `subsysnqn`,
//!   `state`, `cntlid` under `/sys/class/nvme/nvme<N>/`; disk names `nvme<S>n<H>` (head)
//!   and `nvme<S>c<N>n<H>` (multipath path device); `device_path` shown as `(null)` when
//!   unset, `device_uuid` shown lower-case;
//! - `/sys/block/<disk>/stat` sectors are 512 bytes.
//!
//! UNVERIFIED (from memory of the sources or not checked at all, never run here): the
//! disk attributes `nsid`, `uuid`, `wwid` and the controller's `hostnqn` (all read as
//! optional); that configfs `rmdir` refuses while links remain (we unlink first anyway);
//! the exact errno of each refusal (EINVAL for the allow_any_host/link conflict); how a
//! real configfs reports `readlink` of our links (we only look at link names); and
//! `ensure_*` against a live kernel in general. This CI kernel has no
//! nvmet module and no configfs mount, so everything here is tested against fake trees
//! ([`ConfigFs`] and [`FabricsDevice`] are the seams); the real path is exercised in the
//! QEMU lab.

use std::path::{Path, PathBuf};

mod configfs;
mod error;
mod fabrics;
mod nvmet;
mod nvmet_list;
mod nvmet_spec;
mod sysfs;
mod validate;

#[cfg(test)]
mod fake;
#[cfg(test)]
mod tests_fabrics;
#[cfg(test)]
mod tests_nvmet;

pub use configfs::{ConfigFs, KernelConfigFs};
pub use error::{KernelError, KernelErrorKind};
pub use fabrics::{ConnectSpec, ConnectedController, Fabrics, FabricsDevice, KernelFabricsDevice};
pub use nvmet::Nvmet;
pub use nvmet_list::{NamespaceState, NvmetState, PortState, SubsystemState};
pub use nvmet_spec::{
    NamespaceSpec, PortAddress, PortEndpoint, PortEndpointError, PortSpec, SubsystemSpec,
};
pub use sysfs::{DiskIoStats, FabricsController, KernelNamespace};

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

/// A fabrics transport both sides support here; spelled as nvmet's `addr_trtype` and the
/// fabrics `transport=` option.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Transport {
    /// NVMe/TCP (`nvmet-tcp`, `nvme-tcp`).
    Tcp,
    /// NVMe/RDMA (`nvmet-rdma`, `nvme-rdma`).
    Rdma,
    /// The in-kernel loop transport (`nvme-loop`): no network, for tests and labs.
    Loop,
}

impl Transport {
    /// The kernel's spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Tcp => "tcp",
            Self::Rdma => "rdma",
            Self::Loop => "loop",
        }
    }
}

impl std::fmt::Display for Transport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Whether an idempotent operation had to change anything, so callers can log and report
/// "created" versus "already there".
#[must_use]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Change {
    /// The kernel state already matched; nothing was written.
    Unchanged,
    /// Something was created, written or removed.
    Changed,
}

impl Change {
    /// True for [`Change::Changed`].
    pub fn is_changed(self) -> bool {
        self == Self::Changed
    }

    pub(crate) fn from_bool(changed: bool) -> Self {
        if changed {
            Self::Changed
        } else {
            Self::Unchanged
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
