//! `RDMA_NLDEV_CMD_GET` dump: the kernel's device index of every RDMA device, which port
//! requests need, with its name (the `/sys/class/infiniband` directory) and port count.
//! Answers carry much more (firmware, GUIDs, protocol); only these three are read.

use netlink_packet_core::DecodeError;

use super::abi;
use super::decode::{attributes, attributes_of, missing, plain_name, u32_value};
use super::error::RdmaNetlinkError;
use super::handle::RdmaNetlink;
use super::message::RdmaMessage;

/// One RDMA device as RDMA netlink names it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RdmaDevice {
    /// `RDMA_NLDEV_ATTR_DEV_INDEX`: what port requests name the device by. Allocated
    /// cyclically, so a device removed and added again gets a new index.
    pub index: u32,
    /// `RDMA_NLDEV_ATTR_DEV_NAME`: `mlx5_0`, `rxe0`; validated as one path component.
    pub name: String,
    /// `RDMA_NLDEV_ATTR_PORT_INDEX` in this answer: the last port number
    /// (`rdma_end_port`); ports are numbered from 1.
    pub ports: u32,
}

/// The device list request: `RdmaNetlink::devices().execute()`.
#[derive(Debug)]
#[must_use = "a request does nothing until it is executed"]
pub struct DevicesRequest<'a> {
    handle: &'a mut RdmaNetlink,
}

impl RdmaNetlink {
    /// Every RDMA device: index, name, port count (`rdma dev show`). (Next to its request
    /// rather than in `handle.rs`, so the handle needs no request and the modules import
    /// one way.)
    pub fn devices(&mut self) -> DevicesRequest<'_> {
        DevicesRequest::new(self)
    }
}

impl<'a> DevicesRequest<'a> {
    fn new(handle: &'a mut RdmaNetlink) -> Self {
        Self { handle }
    }

    /// Dumps every device visible in the socket's network namespace.
    pub fn execute(self) -> Result<Vec<RdmaDevice>, RdmaNetlinkError> {
        self.handle.exchange(
            "RDMA_NLDEV_CMD_GET dump",
            &RdmaMessage::device_dump(),
            device_from_message,
        )
    }
}

/// Decodes one answer of the dump (`nlmsghdr` included); `Ok(None)` for another message
/// type. Unknown attributes are skipped; the three read here must be present and well
/// formed.
pub(crate) fn device_from_message(message: &[u8]) -> Result<Option<RdmaDevice>, DecodeError> {
    let message_type = abi::message_type(abi::RDMA_NLDEV_CMD_GET);
    let Some(message_attributes) = attributes_of(message, message_type)? else {
        return Ok(None);
    };
    let (mut index, mut name, mut ports) = (None, None, None);
    for attribute in attributes(message_attributes, "the answer") {
        let attribute = attribute?;
        match attribute.kind() {
            abi::RDMA_NLDEV_ATTR_DEV_INDEX => index = Some(u32_value(&attribute)?),
            abi::RDMA_NLDEV_ATTR_DEV_NAME => {
                name = Some(plain_name(&attribute, abi::IB_DEVICE_NAME_MAX)?);
            }
            abi::RDMA_NLDEV_ATTR_PORT_INDEX => ports = Some(u32_value(&attribute)?),
            _ => {}
        }
    }
    Ok(Some(RdmaDevice {
        index: index.ok_or_else(|| missing(abi::RDMA_NLDEV_ATTR_DEV_INDEX))?,
        name: name.ok_or_else(|| missing(abi::RDMA_NLDEV_ATTR_DEV_NAME))?,
        ports: ports.ok_or_else(|| missing(abi::RDMA_NLDEV_ATTR_PORT_INDEX))?,
    }))
}
