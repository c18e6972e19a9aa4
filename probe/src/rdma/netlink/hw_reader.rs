//! [`HwCounterReader`]: the sampler's per-port choice between RDMA netlink and sysfs for
//! a port's `hw_counters`, and the state that makes netlink cheap across a `Watch` (the
//! socket, the device name → index map, each port's counter names).
//!
//! Netlink is used only where it gives exactly what sysfs would: on the live system (the
//! root is `/`), when the socket opens, the device is known to netlink, the answer is
//! about that device, and it has every counter the port's `hw_counters/` directory lists.
//! The samples then carry the sysfs names, in the sysfs order, with the same units and
//! widths (built by the same [`rdma::counters::hw_sample`]); counters only netlink
//! reports (optional counters enabled with `rdma statistic set ... optional-counters`,
//! which sysfs does not list) are left out, so the two paths cannot disagree on what a
//! snapshot contains. In every other case the answer is a [`Fallback`] and the caller
//! reads sysfs, whose errors are the snapshot's errors: a failure here is never a zero.

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::time::{Duration, Instant};

use nix::errno::Errno;

use super::devices::RdmaDevice;
use super::error::RdmaNetlinkError;
use super::handle::RdmaNetlink;
use super::rdma_stats::RdmaStats;
use crate::netlink::NetlinkAccess;
use crate::snapshot::Sample;
use crate::{error_chain, rdma, ProbeError, SysRoot};

/// How long after a failed open the socket is not tried again. Opening `NETLINK_RDMA`
/// without `ib_core` loaded makes the kernel try to load the module each time, which is
/// not something to do every snapshot.
const REOPEN_AFTER: Duration = Duration::from_secs(60);

/// The path each port was last read by in this process (`true`: netlink), across every
/// sampler (the agent makes one per `Counters.Snapshot` call), so that a port's path is
/// logged at info level when it is first read and when it changes, not once per call.
static PATHS: std::sync::Mutex<BTreeMap<(String, u32), bool>> =
    std::sync::Mutex::new(BTreeMap::new());

/// Records that `ibdev`/`port` was read by netlink (or not); whether that is news.
fn path_changed(ibdev: &str, port: u32, netlink: bool) -> bool {
    let mut paths = PATHS
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    paths.insert((ibdev.to_owned(), port), netlink) != Some(netlink)
}

/// Makes a socket; [`RdmaNetlink::open`] outside tests.
pub(crate) type Opener =
    Box<dyn FnMut() -> Result<Box<dyn RdmaStats + Send>, RdmaNetlinkError> + Send>;

/// Why a port's `hw_counters` are read from sysfs this time.
#[derive(Debug)]
pub(crate) enum Fallback {
    /// Not the live system (a fixture or mounted image): netlink would describe
    /// another machine.
    Disabled,
    /// The socket could not be opened just now.
    Open(RdmaNetlinkError),
    /// The last open failed less than [`REOPEN_AFTER`] ago, or the socket failed earlier
    /// in this snapshot (so a hung socket costs one timeout per snapshot, not one per
    /// port).
    NotReopened,
    /// The kernel refused a request or the socket failed.
    Netlink(RdmaNetlinkError),
    /// Netlink does not list the device (another namespace in "exclusive" mode, or gone).
    UnknownDevice,
    /// The port number is beyond the device's ports as netlink reports them.
    NoSuchPort(u32),
    /// Listing the port's `hw_counters/` failed; the sysfs read reports why.
    Listing(ProbeError),
    /// The port has no `hw_counters/` (or an empty one): nothing to ask for.
    NoHwCounters,
    /// Netlink failed for this port of this device before; it is not asked again until
    /// the device is re-created.
    Refused,
    /// The answer was about a device of another name (renamed or replaced).
    Renamed(String),
    /// The answer lacks a counter sysfs lists.
    Lacks(String),
}

/// A port's netlink state, for one device instance (kernel index).
#[derive(Debug)]
struct PortState {
    dev_index: u32,
    /// The `hw_counters/` file names (without `lifespan`), sorted; `None` without the
    /// directory. Fixed for the life of a device: sysfs creates them at registration.
    names: Option<Vec<String>>,
    refused: bool,
}

/// See the module documentation.
pub(crate) struct HwCounterReader {
    enabled: bool,
    open: Opener,
    socket: Option<Box<dyn RdmaStats + Send>>,
    reopen_at: Option<Instant>,
    devices: Option<HashMap<String, RdmaDevice>>,
    dumped_this_round: bool,
    /// A request failed, an answer named another device, or a refused port was met: the
    /// next snapshot dumps the device list again, so a re-created or renamed device is
    /// seen (the rest of this one keeps the map, for the other ports).
    refresh_next_round: bool,
    /// The socket failed in this snapshot: no more netlink until the next one.
    broken_this_round: bool,
    ports: HashMap<(String, u32), PortState>,
}

impl fmt::Debug for HwCounterReader {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HwCounterReader")
            .field("enabled", &self.enabled)
            .field("socket_open", &self.socket.is_some())
            .field("devices", &self.devices.as_ref().map(HashMap::len))
            .field("ports", &self.ports.len())
            .finish_non_exhaustive()
    }
}

impl Default for HwCounterReader {
    fn default() -> Self {
        Self::disabled()
    }
}

impl HwCounterReader {
    /// Netlink when `access` answers (the live system, or a capture's recording), the
    /// socket opened on first use; sysfs only otherwise.
    pub(crate) fn for_access(access: &NetlinkAccess) -> Self {
        if !access.answers_requests() {
            return Self::disabled();
        }
        let access = access.clone();
        Self::with_opener(Box::new(move || {
            RdmaNetlink::open_via(&access).map(|nl| Box::new(nl) as Box<dyn RdmaStats + Send>)
        }))
    }

    /// Always sysfs.
    pub(crate) fn disabled() -> Self {
        Self {
            enabled: false,
            ..Self::with_opener(Box::new(|| {
                Err(RdmaNetlinkError::Unexpected {
                    request: "NETLINK_RDMA socket".to_owned(),
                    detail: "RDMA netlink is not used for this root".to_owned(),
                })
            }))
        }
    }

    /// Netlink through sockets `open` makes (a fake in tests), whatever the root.
    pub(crate) fn with_opener(open: Opener) -> Self {
        Self {
            enabled: true,
            open,
            socket: None,
            reopen_at: None,
            devices: None,
            dumped_this_round: false,
            refresh_next_round: false,
            broken_this_round: false,
            ports: HashMap::new(),
        }
    }

    /// Whether netlink is tried at all.
    pub(crate) fn is_enabled(&self) -> bool {
        self.enabled
    }

    /// Starts a snapshot: the device list may be dumped again (at most once per snapshot)
    /// if a device is missing from it, or a port was refused in the last one.
    pub(crate) fn start_round(&mut self) {
        self.dumped_this_round = false;
        self.broken_this_round = false;
        if std::mem::take(&mut self.refresh_next_round) {
            self.devices = None;
        }
    }

    /// The port's `hw_counters` samples from netlink, or `None` when the caller must read
    /// sysfs (the reason is logged at debug level; each change of a port's path, and its
    /// first read, at info level, so an operator can tell which path serves a port).
    pub(crate) fn port_samples(
        &mut self,
        root: &SysRoot,
        ibdev: &str,
        port: u32,
    ) -> Option<Vec<Sample>> {
        let read = self.read_port(root, ibdev, port);
        if !matches!(read, Err(Fallback::Disabled | Fallback::NoHwCounters)) {
            let netlink = read.is_ok();
            let changed = path_changed(ibdev, port, netlink);
            match &read {
                Ok(_) if changed => {
                    tracing::info!(ibdev, port, "hw_counters over RDMA netlink");
                }
                Err(reason) if changed => {
                    tracing::info!(ibdev, port, reason = %describe(reason), "hw_counters from sysfs");
                }
                _ => {}
            }
        }
        match read {
            Ok(samples) => Some(samples),
            Err(Fallback::Disabled | Fallback::NoHwCounters | Fallback::Refused) => None,
            Err(reason) => {
                tracing::debug!(ibdev, port, reason = %describe(&reason), "hw_counters from sysfs");
                None
            }
        }
    }

    /// [`port_samples`](Self::port_samples) with the reason for a fallback.
    pub(crate) fn read_port(
        &mut self,
        root: &SysRoot,
        ibdev: &str,
        port: u32,
    ) -> Result<Vec<Sample>, Fallback> {
        if !self.enabled {
            return Err(Fallback::Disabled);
        }
        let device = self.device(ibdev)?;
        if port == 0 || port > device.ports {
            return Err(Fallback::NoSuchPort(device.ports));
        }
        let key = (ibdev.to_owned(), port);
        if self
            .ports
            .get(&key)
            .is_none_or(|state| state.dev_index != device.index)
        {
            let names =
                rdma::counters::hw_counter_names(root, ibdev, port).map_err(Fallback::Listing)?;
            let state = PortState {
                dev_index: device.index,
                names,
                refused: false,
            };
            self.ports.insert(key.clone(), state);
        }
        match self.ports.get(&key) {
            Some(state) if state.refused => {
                self.refresh_next_round = true;
                return Err(Fallback::Refused);
            }
            Some(state) if state.names.as_ref().is_none_or(Vec::is_empty) => {
                return Err(Fallback::NoHwCounters)
            }
            _ => {}
        }
        let answer = match self.socket()?.port_hw_counters(device.index, port) {
            Ok(answer) => answer,
            Err(e) => {
                if refuses_port(&e) {
                    if let Some(state) = self.ports.get_mut(&key) {
                        state.refused = true;
                    }
                }
                self.failed(&e);
                return Err(Fallback::Netlink(e));
            }
        };
        if answer.dev_name != ibdev {
            self.refresh_next_round = true;
            return Err(Fallback::Renamed(answer.dev_name));
        }
        let Some(state) = self.ports.get_mut(&key) else {
            return Err(Fallback::Refused);
        };
        let values: HashMap<&str, u64> = answer
            .counters
            .iter()
            .map(|(name, value)| (name.as_str(), *value))
            .collect();
        let object = rdma::counters::port_object(ibdev, port);
        let names = state.names.as_deref().unwrap_or_default();
        let mut samples = Vec::with_capacity(names.len());
        for name in names {
            match values.get(name.as_str()) {
                Some(&value) => {
                    samples.push(rdma::counters::hw_sample(&object, name.clone(), value))
                }
                None => {
                    state.refused = true;
                    return Err(Fallback::Lacks(name.clone()));
                }
            }
        }
        Ok(samples)
    }

    /// The device named `ibdev`, dumping the list first when it is not known (once per
    /// snapshot at most).
    fn device(&mut self, ibdev: &str) -> Result<RdmaDevice, Fallback> {
        let known = self
            .devices
            .as_ref()
            .is_some_and(|devices| devices.contains_key(ibdev));
        if !known && !self.dumped_this_round {
            self.dumped_this_round = true;
            match self.socket()?.devices() {
                Ok(list) => {
                    let map = list.into_iter().map(|d| (d.name.clone(), d)).collect();
                    self.devices = Some(map);
                }
                Err(e) => {
                    self.failed(&e);
                    return Err(Fallback::Netlink(e));
                }
            }
        }
        self.devices
            .as_ref()
            .and_then(|devices| devices.get(ibdev))
            .cloned()
            .ok_or(Fallback::UnknownDevice)
    }

    /// The open socket, opening one if none is (not within [`REOPEN_AFTER`] of a failure).
    fn socket(&mut self) -> Result<&mut (dyn RdmaStats + Send + 'static), Fallback> {
        if self.socket.is_none() {
            if self.broken_this_round || self.reopen_at.is_some_and(|at| Instant::now() < at) {
                return Err(Fallback::NotReopened);
            }
            match (self.open)() {
                Ok(socket) => {
                    self.socket = Some(socket);
                    self.reopen_at = None;
                }
                Err(e) => {
                    self.reopen_at = Some(Instant::now() + REOPEN_AFTER);
                    return Err(Fallback::Open(e));
                }
            }
        }
        self.socket.as_deref_mut().ok_or(Fallback::NotReopened)
    }

    /// After a failed request: a broken socket is dropped (the next snapshot opens a
    /// fresh one), and the next snapshot dumps the device map again, since an unknown
    /// index is also how a re-created device shows.
    fn failed(&mut self, e: &RdmaNetlinkError) {
        if e.is_transport() {
            self.socket = None;
            self.broken_this_round = true;
        }
        self.refresh_next_round = true;
    }
}

/// Whether a failed port request will fail again for this device instance: the kernel's
/// refusal (`EINVAL`: no counters there; `EMSGSIZE`: more counters than one answer holds)
/// or an answer that does not decode. Not a broken socket, a transient shortage, or an
/// answer about something else.
fn refuses_port(e: &RdmaNetlinkError) -> bool {
    if e.is_transport() || matches!(e, RdmaNetlinkError::Unexpected { .. }) {
        return false;
    }
    !matches!(
        e.raw_os_error().map(Errno::from_raw),
        Some(Errno::ENOMEM | Errno::EAGAIN | Errno::EBUSY | Errno::EINTR)
    )
}

/// A fallback reason as one line for the log.
fn describe(reason: &Fallback) -> String {
    match reason {
        Fallback::Disabled => "not the live system".to_owned(),
        Fallback::Open(e) | Fallback::Netlink(e) => error_chain(e),
        Fallback::NotReopened => "the NETLINK_RDMA socket failed to open recently".to_owned(),
        Fallback::UnknownDevice => "the device is not in the RDMA netlink device list".to_owned(),
        Fallback::NoSuchPort(ports) => format!("RDMA netlink reports {ports} ports"),
        Fallback::Listing(e) => error_chain(e),
        Fallback::NoHwCounters => "no hw_counters".to_owned(),
        Fallback::Refused => "RDMA netlink refused this port before".to_owned(),
        Fallback::Renamed(name) => format!("RDMA netlink answered for device {name:?}"),
        Fallback::Lacks(name) => format!("RDMA netlink does not report {name:?}"),
    }
}

#[cfg(test)]
mod tests;
