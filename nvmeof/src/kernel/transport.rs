//! [`Transport`], the fabrics transports the target and the initiator both support. Its own
//! leaf so that the spec types ([`PortSpec`](super::PortSpec),
//! [`ConnectSpec`](super::ConnectSpec)) can name it without importing `kernel/mod.rs`.

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
