//! A fake RDMA netlink socket for tests: canned devices and per-port answers or failures,
//! and counts of what was asked, shared with the test through a mutex.

use std::collections::HashMap;
use std::io;
use std::sync::{Arc, Mutex, MutexGuard};

use super::hw_reader::HwCounterReader;
use super::{PortHwCounters, RdmaDevice, RdmaNetlinkError, RdmaStats};
use crate::netlink::NetlinkError;

/// How the fake answers a port request.
#[derive(Clone)]
pub(crate) enum Answer {
    /// These counters, about the device asked for.
    Counters(Vec<(&'static str, u64)>),
    /// These counters, about a device of this name.
    Named(&'static str, Vec<(&'static str, u64)>),
    /// The kernel's errno.
    Errno(i32),
    /// The socket fails (a receive timeout).
    Broken,
}

/// What the fake holds and how often it was asked.
#[derive(Default)]
pub(crate) struct State {
    pub(crate) devices: Vec<RdmaDevice>,
    pub(crate) answers: HashMap<(u32, u32), Answer>,
    pub(crate) opens: u32,
    pub(crate) dumps: u32,
    pub(crate) asks: u32,
    pub(crate) fail_open: bool,
}

/// The fake socket; clones share the state.
#[derive(Clone, Default)]
pub(crate) struct Fake(Arc<Mutex<State>>);

impl Fake {
    pub(crate) fn state(&self) -> MutexGuard<'_, State> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A reader whose sockets are this fake (counting opens, failing when told to).
    pub(crate) fn reader(&self) -> HwCounterReader {
        let fake = self.clone();
        HwCounterReader::with_opener(Box::new(move || {
            let mut state = fake.state();
            state.opens += 1;
            if state.fail_open {
                return Err(RdmaNetlinkError::Socket {
                    op: "create",
                    source: io::Error::from_raw_os_error(libc::EPROTONOSUPPORT),
                });
            }
            Ok(Box::new(fake.clone()) as Box<dyn RdmaStats + Send>)
        }))
    }
}

impl RdmaStats for Fake {
    fn devices(&mut self) -> Result<Vec<RdmaDevice>, RdmaNetlinkError> {
        let mut state = self.state();
        state.dumps += 1;
        Ok(state.devices.clone())
    }

    fn port_hw_counters(
        &mut self,
        dev_index: u32,
        port: u32,
    ) -> Result<PortHwCounters, RdmaNetlinkError> {
        let mut state = self.state();
        state.asks += 1;
        let request = super::hw_counters::describe(dev_index, port);
        let own_name = state
            .devices
            .iter()
            .find(|d| d.index == dev_index)
            .map(|d| d.name.clone())
            .unwrap_or_default();
        let answer = state
            .answers
            .get(&(dev_index, port))
            .cloned()
            .unwrap_or(Answer::Errno(libc::EINVAL));
        let counters = |list: Vec<(&str, u64)>| {
            list.into_iter()
                .map(|(name, value)| (name.to_owned(), value))
                .collect()
        };
        match answer {
            Answer::Counters(list) => Ok(PortHwCounters {
                dev_index,
                dev_name: own_name,
                port,
                counters: counters(list),
            }),
            Answer::Named(name, list) => Ok(PortHwCounters {
                dev_index,
                dev_name: name.to_owned(),
                port,
                counters: counters(list),
            }),
            Answer::Errno(errno) => Err(RdmaNetlinkError::Answer(NetlinkError::Kernel {
                request,
                extack: None,
                source: io::Error::from_raw_os_error(errno),
            })),
            Answer::Broken => Err(RdmaNetlinkError::Receive {
                request,
                source: io::Error::new(io::ErrorKind::TimedOut, "no answer within 5 s"),
            }),
        }
    }
}
