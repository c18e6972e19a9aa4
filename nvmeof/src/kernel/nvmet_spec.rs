//! What the agent asks nvmet for: subsystem, namespace and port specs, validated by the
//! `ensure_*` operations of [`Nvmet`](super::Nvmet).

use super::{validate, KernelError, Transport};
use crate::address::AddressFamily;

/// A subsystem as the agent wants it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SubsystemSpec {
    /// The subsystem NQN (its directory name).
    pub nqn: String,
    /// Host NQNs allowed to connect; empty means any host may (`attr_allow_any_host=1`).
    pub allowed_hosts: Vec<String>,
    /// `attr_serial`, left as the kernel chose when `None`.
    pub serial: Option<String>,
    /// `attr_model`, left as the kernel chose when `None`.
    pub model: Option<String>,
}

/// A namespace of a subsystem, backed by a block device or file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NamespaceSpec {
    /// The NSID, 1..=0xFFFFFFFE.
    pub nsid: u32,
    /// Absolute path of the backing block device or file.
    pub device_path: String,
    /// `device_uuid`, left as the kernel generated it when `None`.
    pub uuid: Option<String>,
}

/// The network address of a TCP or RDMA port.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PortAddress {
    /// `addr_adrfam`.
    pub family: AddressFamily,
    /// `addr_traddr`, an address of `family` (the address to listen on).
    pub traddr: String,
    /// `addr_trsvcid`, the TCP port or RDMA service id (NVMe-oF's default is 4420).
    pub trsvcid: u16,
}

/// An nvmet port: where subsystems linked to it are exported.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PortSpec {
    /// The port id (its directory name).
    pub id: u16,
    /// `addr_trtype`.
    pub transport: Transport,
    /// Required for TCP and RDMA, refused for loop (which has no address).
    pub address: Option<PortAddress>,
}

impl PortSpec {
    /// Validates the spec and returns the port attributes to write, in order.
    pub(crate) fn attributes(&self) -> Result<Vec<(&'static str, String)>, KernelError> {
        let mut attrs = vec![("addr_trtype", self.transport.as_str().to_owned())];
        match (self.transport, &self.address) {
            (Transport::Loop, None) => {}
            (Transport::Loop, Some(_)) => {
                return Err(KernelError::invalid(
                    "address",
                    &self.id.to_string(),
                    "a loop port has no address",
                ))
            }
            (_, None) => {
                return Err(KernelError::invalid(
                    "address",
                    &self.id.to_string(),
                    "tcp and rdma ports need one",
                ))
            }
            (_, Some(a)) => {
                validate::traddr_of("traddr", a.family, &a.traddr)?;
                validate::trsvcid(a.trsvcid)?;
                attrs.push(("addr_adrfam", a.family.as_str().to_owned()));
                attrs.push(("addr_traddr", a.traddr.clone()));
                attrs.push(("addr_trsvcid", a.trsvcid.to_string()));
            }
        }
        Ok(attrs)
    }
}
