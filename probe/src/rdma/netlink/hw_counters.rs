//! `RDMA_NLDEV_CMD_STAT_GET` of one port without a counter id: every hardware counter of
//! the port in one answer (what `rdma statistic show link DEV/PORT` prints), instead of
//! one sysfs file per counter.
//!
//! The answer: `DEV_INDEX`, `DEV_NAME`, `PORT_INDEX`, then the nest `STAT_HWCOUNTERS` of
//! `STAT_HWCOUNTER_ENTRY` nests, each a `..._ENTRY_NAME` string and a `..._ENTRY_VALUE`
//! u64 (possibly after a `RDMA_NLDEV_ATTR_PAD`). The kernel sets `NLA_F_NESTED` on the
//! nests; netlink-packet-core's attribute `kind()` masks it off.

use std::collections::HashSet;

use netlink_packet_core::{DecodeError, ErrorContext};

use super::abi;
use super::decode::{
    attributes, attributes_of, missing, plain_name, u32_value, u64_value, Attribute,
};
use super::error::RdmaNetlinkError;
use super::handle::RdmaNetlink;
use super::message::RdmaMessage;

/// Longest counter name accepted: far above the kernel's (about 40 bytes), short of
/// anything absurd.
const MAX_COUNTER_NAME: usize = 256;

/// One port's hardware counters, with the device and port the kernel says they are of.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PortHwCounters {
    /// `RDMA_NLDEV_ATTR_DEV_INDEX` of the answer.
    pub dev_index: u32,
    /// `RDMA_NLDEV_ATTR_DEV_NAME` of the answer: lets a caller that resolved the index
    /// earlier notice a device renamed or replaced since.
    pub dev_name: String,
    /// `RDMA_NLDEV_ATTR_PORT_INDEX` of the answer.
    pub port: u32,
    /// Name and value of every enabled counter, in the driver's order. The value is what
    /// sysfs prints: the driver's count plus the history of bound QP counters.
    pub counters: Vec<(String, u64)>,
}

/// The port counter request: `RdmaNetlink::port_hw_counters(dev, port).execute()`.
#[derive(Debug)]
#[must_use = "a request does nothing until it is executed"]
pub struct PortHwCountersRequest<'a> {
    handle: &'a mut RdmaNetlink,
    dev_index: u32,
    port: u32,
}

impl RdmaNetlink {
    /// The hardware counters of one port of the device with kernel index `dev_index`
    /// (`rdma statistic show link DEV/PORT`).
    pub fn port_hw_counters(&mut self, dev_index: u32, port: u32) -> PortHwCountersRequest<'_> {
        PortHwCountersRequest::new(self, dev_index, port)
    }
}

impl<'a> PortHwCountersRequest<'a> {
    fn new(handle: &'a mut RdmaNetlink, dev_index: u32, port: u32) -> Self {
        Self {
            handle,
            dev_index,
            port,
        }
    }

    /// Sends the request and returns the one answer, checked to be about the device index
    /// and port asked for. The kernel answers `EINVAL` for an unknown index or port and
    /// for a port without hardware counters.
    pub fn execute(self) -> Result<PortHwCounters, RdmaNetlinkError> {
        let request = describe(self.dev_index, self.port);
        let answers = self.handle.exchange(
            &request,
            &RdmaMessage::port_counters(self.dev_index, self.port),
            hw_counters_from_message,
        )?;
        single_answer(&request, answers, self.dev_index, self.port)
    }
}

/// How errors name this request.
pub(crate) fn describe(dev_index: u32, port: u32) -> String {
    format!("RDMA_NLDEV_CMD_STAT_GET of device index {dev_index} port {port}")
}

/// The one answer about `dev_index`/`port`, or why the answers are not that.
pub(crate) fn single_answer(
    request: &str,
    mut answers: Vec<PortHwCounters>,
    dev_index: u32,
    port: u32,
) -> Result<PortHwCounters, RdmaNetlinkError> {
    let unexpected = |detail: String| RdmaNetlinkError::Unexpected {
        request: request.to_owned(),
        detail,
    };
    let answer = match answers.len() {
        1 => answers.remove(0),
        n => return Err(unexpected(format!("{n} answers instead of one"))),
    };
    if (answer.dev_index, answer.port) != (dev_index, port) {
        return Err(unexpected(format!(
            "the answer is about device index {} ({}) port {}",
            answer.dev_index, answer.dev_name, answer.port
        )));
    }
    Ok(answer)
}

/// Decodes the answer (`nlmsghdr` included); `Ok(None)` for another message type.
/// Unknown attributes, at every level, are skipped; a counter without a name or value,
/// a value that is not 8 bytes, a repeated name or broken framing is an error naming the
/// attribute and the entry.
pub(crate) fn hw_counters_from_message(
    message: &[u8],
) -> Result<Option<PortHwCounters>, DecodeError> {
    let message_type = abi::message_type(abi::RDMA_NLDEV_CMD_STAT_GET);
    let Some(message_attributes) = attributes_of(message, message_type)? else {
        return Ok(None);
    };
    let (mut dev_index, mut dev_name, mut port, mut counters) = (None, None, None, None);
    for attribute in attributes(message_attributes, "the answer") {
        let attribute = attribute?;
        match attribute.kind() {
            abi::RDMA_NLDEV_ATTR_DEV_INDEX => dev_index = Some(u32_value(&attribute)?),
            abi::RDMA_NLDEV_ATTR_DEV_NAME => {
                dev_name = Some(plain_name(&attribute, abi::IB_DEVICE_NAME_MAX)?);
            }
            abi::RDMA_NLDEV_ATTR_PORT_INDEX => port = Some(u32_value(&attribute)?),
            abi::RDMA_NLDEV_ATTR_STAT_HWCOUNTERS => counters = Some(table(&attribute)?),
            _ => {}
        }
    }
    Ok(Some(PortHwCounters {
        dev_index: dev_index.ok_or_else(|| missing(abi::RDMA_NLDEV_ATTR_DEV_INDEX))?,
        dev_name: dev_name.ok_or_else(|| missing(abi::RDMA_NLDEV_ATTR_DEV_NAME))?,
        port: port.ok_or_else(|| missing(abi::RDMA_NLDEV_ATTR_PORT_INDEX))?,
        counters: counters.ok_or_else(|| missing(abi::RDMA_NLDEV_ATTR_STAT_HWCOUNTERS))?,
    }))
}

/// The `STAT_HWCOUNTERS` nest: its entries, in order.
fn table(nest: &Attribute<'_>) -> Result<Vec<(String, u64)>, DecodeError> {
    let mut counters = Vec::new();
    let mut seen = HashSet::new();
    for (position, attribute) in
        attributes(nest.value(), "RDMA_NLDEV_ATTR_STAT_HWCOUNTERS").enumerate()
    {
        let context = || {
            format!(
                "{} entry {position}",
                abi::attribute_name(abi::RDMA_NLDEV_ATTR_STAT_HWCOUNTERS)
            )
        };
        let attribute = attribute.with_context(context)?;
        if attribute.kind() != abi::RDMA_NLDEV_ATTR_STAT_HWCOUNTER_ENTRY {
            continue;
        }
        let (name, value) = entry(&attribute).with_context(context)?;
        if !seen.insert(name.clone()) {
            return Err(DecodeError::from(format!(
                "{}: counter {name:?} appears twice",
                context()
            )));
        }
        counters.push((name, value));
    }
    Ok(counters)
}

/// One `STAT_HWCOUNTER_ENTRY` nest: name and value; pads and unknown attributes skipped.
fn entry(nest: &Attribute<'_>) -> Result<(String, u64), DecodeError> {
    let (mut name, mut value) = (None, None);
    for attribute in attributes(nest.value(), "RDMA_NLDEV_ATTR_STAT_HWCOUNTER_ENTRY") {
        let attribute = attribute?;
        match attribute.kind() {
            abi::RDMA_NLDEV_ATTR_STAT_HWCOUNTER_ENTRY_NAME => {
                name = Some(plain_name(&attribute, MAX_COUNTER_NAME)?);
            }
            abi::RDMA_NLDEV_ATTR_STAT_HWCOUNTER_ENTRY_VALUE => value = Some(u64_value(&attribute)?),
            // The alignment pad before the value.
            abi::RDMA_NLDEV_ATTR_PAD => {}
            // Attributes newer than this reader (`STAT_HWCOUNTER_INDEX`, ...).
            _ => {}
        }
    }
    Ok((
        name.ok_or_else(|| missing(abi::RDMA_NLDEV_ATTR_STAT_HWCOUNTER_ENTRY_NAME))?,
        value.ok_or_else(|| missing(abi::RDMA_NLDEV_ATTR_STAT_HWCOUNTER_ENTRY_VALUE))?,
    ))
}
