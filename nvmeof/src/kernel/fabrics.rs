//! The nvme-fabrics initiator: connect through `/dev/nvme-fabrics`, find and disconnect
//! controllers through sysfs (`docs/reference/storage.md` §4.2).

use std::fs::OpenOptions;
use std::io::{self, Read, Write};
use std::net::IpAddr;
use std::path::Path;

use super::configfs::present;
use super::sysfs::{self, DiskIoStats, FabricsController};
use super::validate;
use super::{Change, KernelError, KernelPaths, Transport};

/// What to connect to, as the fabrics option tokens of `drivers/nvme/host/fabrics.c`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConnectSpec {
    /// `transport=`.
    pub transport: Transport,
    /// `traddr=`, the target's IP address; required for TCP and RDMA, refused for loop.
    pub traddr: Option<String>,
    /// `trsvcid=`; required for TCP and RDMA, refused for loop.
    pub trsvcid: Option<u16>,
    /// `nqn=`, the subsystem to connect to.
    pub subnqn: String,
    /// `hostnqn=`; the kernel uses `/etc/nvme/hostnqn`'s default when `None`.
    pub hostnqn: Option<String>,
    /// `host_traddr=`, the local address to connect from.
    pub host_traddr: Option<String>,
    /// `nr_io_queues=`, at least 1.
    pub nr_io_queues: Option<u32>,
    /// `ctrl_loss_tmo=` in seconds; negative means reconnect forever.
    pub ctrl_loss_tmo: Option<i32>,
    /// `reconnect_delay=` in seconds, at least 1.
    pub reconnect_delay: Option<u32>,
    /// `fast_io_fail_tmo=` in seconds: fail I/O after this long while reconnecting goes on.
    pub fast_io_fail_tmo: Option<u32>,
    /// `hdr_digest` (TCP only).
    pub hdr_digest: bool,
    /// `data_digest` (TCP only).
    pub data_digest: bool,
}

impl ConnectSpec {
    /// A spec for `subnqn` over `transport` with every option left to the kernel.
    pub fn new(transport: Transport, subnqn: impl Into<String>) -> Self {
        Self {
            transport,
            traddr: None,
            trsvcid: None,
            subnqn: subnqn.into(),
            hostnqn: None,
            host_traddr: None,
            nr_io_queues: None,
            ctrl_loss_tmo: None,
            reconnect_delay: None,
            fast_io_fail_tmo: None,
            hdr_digest: false,
            data_digest: false,
        }
    }

    /// Validates the spec and renders the option string written to `/dev/nvme-fabrics`,
    /// e.g. `transport=tcp,traddr=10.0.0.2,trsvcid=4420,nqn=...`. Any value that contains
    /// `,`, `=`, whitespace or NUL is refused, since the kernel's parser splits on them.
    pub fn options(&self) -> Result<String, KernelError> {
        let mut opts = vec![format!("transport={}", self.transport)];
        let remote = self.transport != Transport::Loop;
        match (&self.traddr, remote) {
            (Some(traddr), true) => {
                validate::option_value("traddr", traddr)?;
                validate::traddr("traddr", traddr)?;
                opts.push(format!("traddr={traddr}"));
            }
            (None, true) => return Err(missing("traddr", self.transport)),
            (Some(traddr), false) => return Err(loop_has_no("traddr", traddr)),
            (None, false) => {}
        }
        match (self.trsvcid, remote) {
            (Some(port), true) => opts.push(format!("trsvcid={}", validate::trsvcid(port)?)),
            (None, true) => return Err(missing("trsvcid", self.transport)),
            (Some(port), false) => return Err(loop_has_no("trsvcid", &port.to_string())),
            (None, false) => {}
        }
        validate::option_value("subnqn", &self.subnqn)?;
        validate::nqn("subnqn", &self.subnqn)?;
        opts.push(format!("nqn={}", self.subnqn));
        if let Some(hostnqn) = &self.hostnqn {
            validate::option_value("hostnqn", hostnqn)?;
            validate::nqn("hostnqn", hostnqn)?;
            opts.push(format!("hostnqn={hostnqn}"));
        }
        if let Some(host_traddr) = &self.host_traddr {
            validate::option_value("host_traddr", host_traddr)?;
            validate::traddr("host_traddr", host_traddr)?;
            opts.push(format!("host_traddr={host_traddr}"));
        }
        if let Some(n) = self.nr_io_queues {
            opts.push(format!("nr_io_queues={}", positive_int("nr_io_queues", n)?));
        }
        if let Some(tmo) = self.ctrl_loss_tmo {
            opts.push(format!("ctrl_loss_tmo={tmo}"));
        }
        if let Some(delay) = self.reconnect_delay {
            opts.push(format!(
                "reconnect_delay={}",
                positive_int("reconnect_delay", delay)?
            ));
        }
        if let Some(tmo) = self.fast_io_fail_tmo {
            opts.push(format!("fast_io_fail_tmo={tmo}"));
        }
        for (on, name) in [
            (self.hdr_digest, "hdr_digest"),
            (self.data_digest, "data_digest"),
        ] {
            if !on {
                continue;
            }
            if self.transport != Transport::Tcp {
                return Err(KernelError::invalid(
                    name,
                    "true",
                    "digests exist only for tcp",
                ));
            }
            opts.push(name.to_owned());
        }
        Ok(opts.join(","))
    }
}

fn missing(field: &'static str, transport: Transport) -> KernelError {
    KernelError::invalid(field, "", format!("is required for {transport}"))
}

fn loop_has_no(field: &'static str, value: &str) -> KernelError {
    KernelError::invalid(field, value, "the loop transport takes no address")
}

/// The kernel parses these with `%d`: 1..=i32::MAX.
fn positive_int(field: &'static str, n: u32) -> Result<u32, KernelError> {
    if n >= 1 && i32::try_from(n).is_ok() {
        Ok(n)
    } else {
        Err(KernelError::invalid(
            field,
            &n.to_string(),
            "must be 1..=2147483647",
        ))
    }
}

/// The controller a successful connect created.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConnectedController {
    /// The controller instance `N` of `/dev/nvme<N>`.
    pub instance: u32,
    /// The controller id the target assigned.
    pub cntlid: u32,
    /// The device name, `nvme<N>`.
    pub device: String,
}

/// The `/dev/nvme-fabrics` exchange, behind a trait so tests can fake the kernel.
pub trait FabricsDevice: std::fmt::Debug {
    /// Opens `device` read-write, writes `options` in one `write(2)` (the kernel parses
    /// and connects inside that call) and returns what a read on the same file gives.
    fn exchange(&self, device: &Path, options: &str) -> io::Result<String>;
}

/// The real `/dev/nvme-fabrics`.
#[derive(Debug, Clone, Copy, Default)]
pub struct KernelFabricsDevice;

impl FabricsDevice for KernelFabricsDevice {
    fn exchange(&self, device: &Path, options: &str) -> io::Result<String> {
        let mut file = OpenOptions::new().read(true).write(true).open(device)?;
        let n = file.write(options.as_bytes())?;
        if n != options.len() {
            return Err(io::Error::new(
                io::ErrorKind::WriteZero,
                format!("short write: {n} of {} bytes", options.len()),
            ));
        }
        let mut reply = String::new();
        file.read_to_string(&mut reply)?;
        Ok(reply)
    }
}

/// Parses `instance=N,cntlid=M`; the `instance=-1,cntlid=-1,<tokens>` reply means no
/// controller was made and is an error naming the reply.
pub(crate) fn parse_reply(device: &Path, reply: &str) -> Result<ConnectedController, KernelError> {
    let field = |key: &str| {
        reply
            .trim()
            .split(',')
            .filter_map(|kv| kv.split_once('='))
            .find(|(k, _)| k.trim() == key)
            .and_then(|(_, v)| v.trim().parse::<i64>().ok())
    };
    let (Some(instance), Some(cntlid)) = (field("instance"), field("cntlid")) else {
        return Err(KernelError::Format {
            path: device.to_owned(),
            detail: format!("expected \"instance=N,cntlid=M\", got {reply:?}"),
        });
    };
    let no_controller = || KernelError::NoController {
        path: device.to_owned(),
        reply: reply.trim().to_owned(),
    };
    let instance = u32::try_from(instance).map_err(|_| no_controller())?;
    let cntlid = u32::try_from(cntlid).map_err(|_| no_controller())?;
    Ok(ConnectedController {
        instance,
        cntlid,
        device: format!("nvme{instance}"),
    })
}

/// The host side: connects, lists and disconnects fabrics controllers. Generic over the
/// [`FabricsDevice`] so tests can fake the connect.
#[derive(Debug)]
pub struct Fabrics<D: FabricsDevice = KernelFabricsDevice> {
    paths: KernelPaths,
    pub(crate) device: D,
}

impl Fabrics<KernelFabricsDevice> {
    /// The initiator of the system at `paths`.
    pub fn new(paths: &KernelPaths) -> Self {
        Self::with_device(paths, KernelFabricsDevice)
    }
}

impl<D: FabricsDevice> Fabrics<D> {
    /// The initiator at `paths`, connecting through `device`.
    pub fn with_device(paths: &KernelPaths, device: D) -> Self {
        Self {
            paths: paths.clone(),
            device,
        }
    }

    /// Connects as `spec` says. Not idempotent by itself (the kernel may refuse a
    /// duplicate with EALREADY or make a second controller): call
    /// [`Fabrics::find_connected`] first.
    pub fn connect(&self, spec: &ConnectSpec) -> Result<ConnectedController, KernelError> {
        let options = spec.options()?;
        let dev = &self.paths.fabrics_device;
        if !present(dev) {
            return Err(KernelError::Unsupported {
                path: dev.clone(),
                hint: "nvme-fabrics is not loaded (modprobe nvme-tcp, nvme-rdma or nvme-loop)",
            });
        }
        let reply = self
            .device
            .exchange(dev, &options)
            .map_err(|e| KernelError::io("connect", dev, e))?;
        let connected = parse_reply(dev, &reply)?;
        tracing::info!(%options, device = %connected.device, "nvme-fabrics connected");
        Ok(connected)
    }

    /// A live controller already connected as `spec` describes: same transport,
    /// subsystem, target address and, where the spec and sysfs both give them, host NQN
    /// and host address. Controllers being deleted or dead do not count.
    pub fn find_connected(
        &self,
        spec: &ConnectSpec,
    ) -> Result<Option<FabricsController>, KernelError> {
        spec.options()?;
        Ok(self.controllers()?.into_iter().find(|c| matches(c, spec)))
    }

    /// Deletes controller `device` (`nvme<N>`) by writing `delete_controller`; unchanged
    /// if it does not exist.
    pub fn disconnect(&self, device: &str) -> Result<Change, KernelError> {
        validate::controller_name(device)?;
        let dir = self.paths.sys.join("class/nvme").join(device);
        if !present(&dir) {
            return Ok(Change::Unchanged);
        }
        let path = dir.join("delete_controller");
        OpenOptions::new()
            .write(true)
            .open(&path)
            .and_then(|mut f| f.write_all(b"1"))
            .map_err(|e| KernelError::io("write", &path, e))?;
        Ok(Change::Changed)
    }

    /// Every fabrics controller (PCIe controllers are left out) with its namespaces.
    pub fn controllers(&self) -> Result<Vec<FabricsController>, KernelError> {
        sysfs::controllers(&self.paths.sys)
    }

    /// The I/O counters of block device `disk`, in bytes.
    pub fn io_stats(&self, disk: &str) -> Result<DiskIoStats, KernelError> {
        sysfs::io_stats(&self.paths.sys, disk)
    }
}

/// Whether `ctrl` is a usable controller connected as `spec` describes.
fn matches(ctrl: &FabricsController, spec: &ConnectSpec) -> bool {
    if ctrl.transport != spec.transport.as_str()
        || ctrl.subsysnqn != spec.subnqn
        || ctrl.state.starts_with("deleting")
        || ctrl.state == "dead"
    {
        return false;
    }
    let same_ip = |have: &Option<String>, want: &str| {
        have.as_deref().and_then(|h| h.parse::<IpAddr>().ok()) == want.parse::<IpAddr>().ok()
    };
    if spec.transport != Transport::Loop {
        let (Some(traddr), Some(port)) = (&spec.traddr, spec.trsvcid) else {
            return false;
        };
        if !same_ip(&ctrl.traddr, traddr)
            || ctrl.trsvcid.as_deref().and_then(|p| p.parse::<u16>().ok()) != Some(port)
        {
            return false;
        }
    }
    if let (Some(want), Some(have)) = (&spec.hostnqn, &ctrl.hostnqn) {
        if want != have {
            return false;
        }
    }
    if let (Some(want), Some(_)) = (&spec.host_traddr, &ctrl.host_traddr) {
        if !same_ip(&ctrl.host_traddr, want) {
            return false;
        }
    }
    true
}
