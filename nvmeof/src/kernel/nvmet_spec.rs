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

/// Where an nvmet port listens, without its id: the text form `tcp:ADDR:PORT`,
/// `rdma:ADDR:PORT` (IPv6 in brackets) or `loop` that a config file lists. It parses
/// ([`FromStr`](std::str::FromStr)) and prints ([`Display`](std::fmt::Display)) that form so
/// a config can hold ports typed and refuse a bad one once, at load; the id is where the
/// port sits in the list, so [`PortEndpoint::with_id`] makes the [`PortSpec`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PortEndpoint {
    /// `addr_trtype`.
    pub transport: Transport,
    /// `None` for loop, the address for TCP and RDMA (always set for those when parsed).
    pub address: Option<PortAddress>,
}

/// Why a port's text form was refused; the message starts with the text itself.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{text:?}: {reason}")]
pub struct PortEndpointError {
    text: String,
    reason: String,
}

impl PortEndpointError {
    fn new(text: &str, reason: impl std::fmt::Display) -> Self {
        Self {
            text: text.to_owned(),
            reason: reason.to_string(),
        }
    }
}

impl PortEndpoint {
    /// The spec of nvmet port `id` listening here.
    pub fn with_id(self, id: u16) -> PortSpec {
        PortSpec {
            id,
            transport: self.transport,
            address: self.address,
        }
    }
}

impl std::str::FromStr for PortEndpoint {
    type Err = PortEndpointError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        if text == "loop" {
            return Ok(Self {
                transport: Transport::Loop,
                address: None,
            });
        }
        let (transport, rest) = match text.split_once(':') {
            Some(("tcp", rest)) => (Transport::Tcp, rest),
            Some(("rdma", rest)) => (Transport::Rdma, rest),
            _ => {
                return Err(PortEndpointError::new(
                    text,
                    "expected tcp:ADDR:PORT, rdma:ADDR:PORT or loop",
                ))
            }
        };
        let (addr, port) = rest
            .rsplit_once(':')
            .ok_or_else(|| PortEndpointError::new(text, "missing :PORT"))?;
        let trsvcid: u16 = port
            .parse()
            .ok()
            .filter(|p| *p != 0)
            .ok_or_else(|| PortEndpointError::new(text, "port must be 1-65535"))?;
        let (family, traddr) = match addr.strip_prefix('[').and_then(|a| a.strip_suffix(']')) {
            Some(v6) => (AddressFamily::Ipv6, v6),
            None => (AddressFamily::Ipv4, addr),
        };
        crate::address::validate_traddr(family, traddr)
            .map_err(|e| PortEndpointError::new(text, e))?;
        Ok(Self {
            transport,
            address: Some(PortAddress {
                family,
                traddr: traddr.to_owned(),
                trsvcid,
            }),
        })
    }
}

impl std::fmt::Display for PortEndpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.address {
            None => f.write_str(self.transport.as_str()),
            Some(a) if a.family == AddressFamily::Ipv6 => {
                write!(f, "{}:[{}]:{}", self.transport, a.traddr, a.trsvcid)
            }
            Some(a) => write!(f, "{}:{}:{}", self.transport, a.traddr, a.trsvcid),
        }
    }
}
