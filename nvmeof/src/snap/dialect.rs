//! [`SnapDialect`], which method family the peer speaks, decided from `rpc_get_methods`. A
//! leaf so that both [`SnapClient::dialect`](super::SnapClient::dialect) and
//! [`NvmeEmulation`](super::NvmeEmulation) can use it without importing `snap/mod.rs`.

/// Which method family the peer implements, decided from its method list.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SnapDialect {
    /// DOCA SNAP 4: `nvme_subsystem_create`, `nvme_controller_create`, ...
    Snap4,
    /// mlnx_snap 3: `subsystem_nvme_create`, `controller_nvme_create`, ...
    Snap3,
    /// SPDK without SNAP's NVMe emulation (a lab target or a plain `spdk_tgt`).
    PlainSpdk,
}

impl SnapDialect {
    /// Decides the dialect from `rpc_get_methods`' answer.
    pub fn from_methods<S: AsRef<str>>(methods: &[S]) -> Self {
        let has = |name: &str| methods.iter().any(|m| m.as_ref() == name);
        if has("nvme_subsystem_create") {
            Self::Snap4
        } else if has("subsystem_nvme_create") {
            Self::Snap3
        } else {
            Self::PlainSpdk
        }
    }
}
