//! Dispatch from a selector to the readers. Kept apart from the engine so each reader's
//! failure mode (skip, error entry) is decided in one place.

use std::collections::HashMap;
use std::path::PathBuf;

use super::netdev_source::NetdevSource;
use super::read_threads::{self, ReadThreads};
use super::selector::CounterSelector;
use crate::netlink::{
    self, LinkCounterReading, LinkNames, NetlinkAccess, NetlinkError, RouteSocket, RouteStats,
    TcParent,
};
use crate::rdma::counters::ObjectDirs;
use crate::rdma::netlink::HwCounterReader;
use crate::snapshot::{monotonic_now, Collector, Sample, Source, SpareStrings};
use crate::{block, netdev_stats, rdma, ProbeError, SysRoot};

/// Netdev and tc counters, from sysfs or from a netlink socket opened on first use and
/// kept across snapshots (a `Watch` reuses it every interval), with the ifindex → name map
/// that the socket's link watch keeps exact (see [`LinkNames`]).
pub(super) struct NetdevReader {
    source: NetdevSource,
    /// Who answers the socket opened outside a namespace: the kernel, or a capture.
    access: NetlinkAccess,
    netns: Option<PathBuf>,
    socket: Option<Box<dyn RouteStats + Send>>,
    names: LinkNames,
}

impl std::fmt::Debug for NetdevReader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NetdevReader")
            .field("source", &self.source)
            .field("netns", &self.netns)
            .field("socket_open", &self.socket.is_some())
            .field("names", &self.names.len())
            .finish()
    }
}

impl NetdevReader {
    /// A reader from `source`; a netlink socket is opened on `access` (the root's).
    pub(super) fn new(source: NetdevSource, access: NetlinkAccess) -> Self {
        Self {
            source,
            access,
            netns: None,
            socket: None,
            names: LinkNames::new(),
        }
    }

    pub(super) fn in_netns(path: PathBuf) -> Self {
        Self {
            source: NetdevSource::Netlink,
            access: NetlinkAccess::Live,
            netns: Some(path),
            socket: None,
            names: LinkNames::new(),
        }
    }

    pub(super) fn with_route_stats(stats: Box<dyn RouteStats + Send>) -> Self {
        Self {
            source: NetdevSource::Netlink,
            access: NetlinkAccess::Live,
            netns: None,
            socket: Some(stats),
            names: LinkNames::new(),
        }
    }

    fn socket(&mut self) -> Result<&mut (dyn RouteStats + Send), NetlinkError> {
        Self::open(&mut self.socket, self.netns.as_deref(), &self.access)
    }

    /// Every device's counters from one stats dump, with the name map brought up to date
    /// around it: refreshed before the dump when links changed (so the dump is not
    /// delayed), and again after it if a link changed meanwhile or the dump named an
    /// ifindex the map lacks. With the dump's own window (the refreshes are outside it).
    fn counters(&mut self) -> Result<(Vec<LinkCounterReading>, Window), NetlinkError> {
        let socket = Self::open(&mut self.socket, self.netns.as_deref(), &self.access)?;
        self.names.prepare(socket)?;
        let start = monotonic_now();
        let readings = socket.link_counters()?;
        let window = (start, monotonic_now());
        self.names.confirm(socket, &readings)?;
        Ok((readings, window))
    }

    /// The ifindex of the link named `ifname`, from the name map refreshed if needed;
    /// `None` when there is no such link.
    fn ifindex(&mut self, ifname: &str) -> Result<Option<u32>, NetlinkError> {
        let socket = Self::open(&mut self.socket, self.netns.as_deref(), &self.access)?;
        self.names.prepare(socket)?;
        Ok(self.names.ifindex(ifname))
    }

    /// [`socket`](Self::socket) on the fields, so the name map can be borrowed with it.
    fn open<'s>(
        socket: &'s mut Option<Box<dyn RouteStats + Send>>,
        netns: Option<&std::path::Path>,
        access: &NetlinkAccess,
    ) -> Result<&'s mut (dyn RouteStats + Send), NetlinkError> {
        if socket.is_none() {
            let opened = match netns {
                Some(path) => RouteSocket::open_in_netns(path)?,
                None => RouteSocket::open_via(access)?,
            };
            *socket = Some(Box::new(opened));
        }
        Ok(socket
            .as_deref_mut()
            .unwrap_or_else(|| unreachable!("opened above")))
    }

    /// Drops a socket that failed (the request socket and its link watch together), so
    /// the next snapshot opens a fresh one and rebuilds the name map.
    fn forget_socket(&mut self) {
        self.socket = None;
        self.names.invalidate();
    }
}

/// A source's read window: `CLOCK_MONOTONIC` before its first read and after its last.
type Window = (std::time::Duration, std::time::Duration);

/// Kept RDMA counter directories per object (device or port), across snapshots so a
/// `Watch` reads each counter with one `pread` (see [`ObjectDirs`]); their descriptors
/// are bounded across the process (see `counter_file`). With them, the RDMA
/// netlink socket that reads ports' `hw_counters` on the live system (one request per
/// port instead of one file per counter), kept across snapshots the same way.
#[derive(Debug, Default)]
pub(super) struct RdmaFiles {
    per_object: HashMap<String, ObjectDirs>,
    hw: HwCounterReader,
}

impl RdmaFiles {
    /// Netlink for `hw_counters` when `access` answers (the live system, a capture's
    /// recording; see [`HwCounterReader`]).
    pub(super) fn for_access(access: &NetlinkAccess) -> Self {
        Self::with_hw_reader(HwCounterReader::for_access(access))
    }

    /// With the given `hw_counters` reader (a fake socket in tests).
    pub(super) fn with_hw_reader(hw: HwCounterReader) -> Self {
        Self {
            per_object: HashMap::new(),
            hw,
        }
    }

    /// Starts a snapshot (see [`HwCounterReader::start_round`]).
    pub(super) fn start_snapshot(&mut self) {
        self.hw.start_round();
    }

    /// A port's `hw_counters` over netlink, or `None` to read them from sysfs.
    fn port_hw(&mut self, root: &SysRoot, job: &RdmaJob) -> Option<Vec<Sample>> {
        match job {
            RdmaJob::Port(device, port) if self.hw.is_enabled() => {
                self.hw.port_samples(root, device, *port)
            }
            _ => None,
        }
    }
}

/// Reads what `selector` names into `out`. RDMA counter files come back unparsed, so
/// the caller can parse them after every selector was read ([`RdmaRead::parse`]) and keep
/// that work out of the snapshot's window.
pub(super) fn collect(
    root: &SysRoot,
    netdevs: &mut NetdevReader,
    rdma_files: &mut RdmaFiles,
    helpers: &mut ReadThreads,
    selector: &CounterSelector,
    out: &mut Collector,
) -> Option<RdmaRead> {
    match selector {
        CounterSelector::Rdma { device, port } => {
            return rdma(root, rdma_files, helpers, device.as_deref(), *port, out);
        }
        CounterSelector::Block { device } => block(root, device.as_deref(), out),
        CounterSelector::Netdev { ifname } => match netdevs.source {
            NetdevSource::Sysfs => netdev_sysfs(root, ifname.as_deref(), out),
            NetdevSource::Netlink => netdev_netlink(netdevs, ifname.as_deref(), out),
        },
        CounterSelector::Tc { ifname } => match netdevs.source {
            NetdevSource::Sysfs => tc_sysfs(root, ifname, out),
            NetdevSource::Netlink => tc(netdevs, ifname, out),
        },
    }
    None
}

/// One unit of RDMA counter reading: a device's own `hw_counters/` or one port.
enum RdmaJob {
    Device(String),
    Port(String, u32),
}

impl RdmaJob {
    fn object(&self) -> String {
        match self {
            Self::Device(d) => rdma::counters::device_object(d),
            Self::Port(d, p) => rdma::counters::port_object(d, *p),
        }
    }

    /// The object's directories, nothing opened yet.
    fn dirs(&self, root: &SysRoot) -> Result<ObjectDirs, ProbeError> {
        match self {
            Self::Device(d) => ObjectDirs::device(root, d),
            Self::Port(d, p) => ObjectDirs::port(root, d, *p),
        }
    }

    /// The object's samples from its read directories (and its `hw_counters` from
    /// netlink when `hw` has them), their object strings from `spare`.
    fn parse(
        &self,
        root: &SysRoot,
        dirs: &ObjectDirs,
        hw: Option<Vec<Sample>>,
        spare: &mut SpareStrings,
    ) -> Result<Vec<Sample>, ProbeError> {
        match self {
            Self::Device(d) => rdma::counters::parse_device_hw_counters(root, d, dirs, spare),
            Self::Port(d, p) => rdma::counters::parse_port_counters(root, d, *p, dirs, hw, spare),
        }
    }
}

/// Ports per reading thread below which threads cost more than they save.
const PORTS_PER_THREAD: usize = 8;
/// Most threads one snapshot uses: a BlueField-3 has 16 Arm cores, and the agent is not
/// the only thing running on them.
const MAX_THREADS: usize = 8;

/// The objects one thread reads in the window, owned while it reads them.
type Part = Vec<(usize, ObjectDirs)>;

/// What one thread's part of the window came to: its objects back, when it read them,
/// and whether it was switched out meanwhile.
struct PartRead {
    part: Part,
    start: std::time::Duration,
    end: std::time::Duration,
    preempted: bool,
}

/// Reads a part's files back to back: the only work inside the RDMA read window.
fn read_part(mut part: Part) -> PartRead {
    let switches = read_threads::involuntary_switches();
    let start = monotonic_now();
    for (_, dirs) in &mut part {
        dirs.read_all();
    }
    let end = monotonic_now();
    let preempted = match (switches, read_threads::involuntary_switches()) {
        (Some(before), Some(after)) => after > before,
        _ => false,
    };
    PartRead {
        part,
        start,
        end,
        preempted,
    }
}

/// RDMA counters in three steps, so the read window holds reads only: prepare every
/// object (list devices and ports, bring each directory's listing up to date, open
/// descriptors), read (ports' `hw_counters` over RDMA netlink, then every counter file,
/// split across the sampler's reading threads when the tree is big), parse.
fn rdma(
    root: &SysRoot,
    files: &mut RdmaFiles,
    helpers: &mut ReadThreads,
    device: Option<&str>,
    port: Option<u32>,
    out: &mut Collector,
) -> Option<RdmaRead> {
    let jobs = rdma_jobs(root, device, port, out)?;
    // Prepare. Each object keeps its own directories; objects gone since the last
    // snapshot drop theirs (and their descriptors) here.
    let netlink_hw = files.hw.is_enabled();
    let mut prepared: Vec<Option<ObjectDirs>> = Vec::with_capacity(jobs.len());
    for job in &jobs {
        let object = job.object();
        let dirs = match files.per_object.remove(&object) {
            Some(dirs) => Ok(dirs),
            None => job.dirs(root),
        };
        let hw_elsewhere = netlink_hw && matches!(job, RdmaJob::Port(..));
        let dirs = dirs.and_then(|mut dirs| dirs.prepare(hw_elsewhere).map(|()| dirs));
        match dirs {
            Ok(dirs) => prepared.push(Some(dirs)),
            Err(e) => {
                out.record::<ProbeError>(Source::Rdma, &object, Err(e));
                prepared.push(None);
            }
        }
    }
    files.per_object.clear();

    // Read: ports' hw_counters over netlink on this thread (one socket); a port netlink
    // does not answer for after all reads its files in the window instead.
    let mut hw: Vec<Option<Vec<Sample>>> = Vec::with_capacity(jobs.len());
    if netlink_hw {
        let start = monotonic_now();
        for (job, slot) in jobs.iter().zip(&mut prepared) {
            let answer = files.port_hw(root, job);
            if answer.is_none() && matches!(job, RdmaJob::Port(..)) {
                if let Some(Err(e)) = slot.as_mut().map(|dirs| dirs.prepare(false)) {
                    out.record::<ProbeError>(Source::Rdma, &job.object(), Err(e));
                    *slot = None;
                }
            }
            hw.push(answer);
        }
        out.window(Source::RdmaHw, start, monotonic_now());
    } else {
        hw.resize_with(jobs.len(), || None);
    }
    let objects: Vec<(usize, ObjectDirs)> = prepared
        .into_iter()
        .enumerate()
        .filter_map(|(i, dirs)| Some((i, dirs?)))
        .collect();
    let threads = reading_threads()
        .min(objects.len() / PORTS_PER_THREAD)
        .max(1);
    let chunk = objects.len().div_ceil(threads).max(1);
    let mut parts: Vec<Part> = Vec::with_capacity(threads);
    let mut objects = objects.into_iter().peekable();
    while objects.peek().is_some() {
        parts.push(objects.by_ref().take(chunk).collect());
    }
    let mut parts = parts.into_iter();
    let first = parts.next().unwrap_or_default();
    let pending: Vec<_> = parts
        .enumerate()
        .map(|(i, part)| helpers.start(i, move || read_part(part)))
        .collect();
    let mut reads = vec![read_part(first)];
    reads.extend(pending.into_iter().map(read_threads::Pending::wait));

    let mut dirs: Vec<Option<ObjectDirs>> = (0..jobs.len()).map(|_| None).collect();
    for read in reads {
        if !read.part.is_empty() {
            out.window(Source::Rdma, read.start, read.end);
        }
        if read.preempted {
            out.preempted();
        }
        for (i, object_dirs) in read.part {
            dirs[i] = Some(object_dirs);
        }
    }
    Some(RdmaRead { jobs, dirs, hw })
}

/// RDMA objects read but not parsed yet.
pub(super) struct RdmaRead {
    jobs: Vec<RdmaJob>,
    dirs: Vec<Option<ObjectDirs>>,
    hw: Vec<Option<Vec<Sample>>>,
}

impl RdmaRead {
    /// Parses what was read into `out`, outside the window, and gives each object's
    /// directories back to `files` for the next snapshot.
    pub(super) fn parse(self, root: &SysRoot, files: &mut RdmaFiles, out: &mut Collector) {
        for ((job, dirs), hw) in self.jobs.iter().zip(self.dirs).zip(self.hw) {
            let Some(dirs) = dirs else { continue };
            let object = job.object();
            let samples = job.parse(root, &dirs, hw, out.spare());
            out.record(Source::Rdma, &object, samples);
            files.per_object.insert(object, dirs);
        }
    }
}

/// The objects the selector names: one port, or every device's own `hw_counters/` and
/// ports. `None` (with the error recorded) when the devices cannot be listed.
fn rdma_jobs(
    root: &SysRoot,
    device: Option<&str>,
    port: Option<u32>,
    out: &mut Collector,
) -> Option<Vec<RdmaJob>> {
    if let (Some(device), Some(port)) = (device, port) {
        return Some(vec![RdmaJob::Port(device.to_owned(), port)]);
    }
    let devices = match device {
        Some(device) => vec![device.to_owned()],
        None => match crate::root::list_dir(&root.sys("class/infiniband")) {
            Ok(devices) => devices,
            Err(e) => {
                out.record::<ProbeError>(Source::Rdma, "rdmaDevices", Err(e));
                return None;
            }
        },
    };
    let mut jobs = Vec::new();
    for device in devices {
        match rdma::counters::list_ports(root, &device) {
            Ok(ports) => {
                let hw_counters = root
                    .sys("class/infiniband")
                    .join(&device)
                    .join("hw_counters");
                if crate::root::is_dir(&hw_counters) {
                    jobs.push(RdmaJob::Device(device.clone()));
                }
                jobs.extend(ports.into_iter().map(|p| RdmaJob::Port(device.clone(), p)));
            }
            Err(e) => out.record::<ProbeError>(
                Source::Rdma,
                &rdma::counters::device_object(&device),
                Err(e),
            ),
        }
    }
    Some(jobs)
}

/// Threads for reading a big RDMA tree: the CPUs this process may use (cgroup quota
/// included, read once: `available_parallelism` reads cgroup files, which costs more than
/// a small snapshot), at most [`MAX_THREADS`].
fn reading_threads() -> usize {
    static THREADS: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *THREADS.get_or_init(|| {
        std::thread::available_parallelism()
            .map_or(1, std::num::NonZeroUsize::get)
            .min(MAX_THREADS)
    })
}

fn block(root: &SysRoot, device: Option<&str>, out: &mut Collector) {
    let names = match device {
        Some(name) => vec![name.to_owned()],
        None => match block::list_nvme_namespaces(root) {
            Ok(names) => names,
            Err(e) => {
                out.record::<ProbeError>(Source::Block, "blockDevices", Err(e));
                return;
            }
        },
    };
    let start = monotonic_now();
    for name in names {
        let result = block::read_block_samples(root, &name);
        out.record(Source::Block, &block::block_object(&name), result);
    }
    out.window(Source::Block, start, monotonic_now());
}

fn netdev_sysfs(root: &SysRoot, ifname: Option<&str>, out: &mut Collector) {
    let start = monotonic_now();
    netdev_sysfs_read(root, ifname, out);
    out.window(Source::Netdev, start, monotonic_now());
}

fn netdev_sysfs_read(root: &SysRoot, ifname: Option<&str>, out: &mut Collector) {
    match ifname {
        Some(ifname) => {
            let result = netdev_stats::read_netdev_stats(root, ifname);
            out.record(Source::Netdev, &netlink::netdev_object(ifname), result);
        }
        None => match netdev_stats::read_all_netdev_stats(root) {
            Ok(readings) => {
                for r in readings {
                    out.record(Source::Netdev, &netlink::netdev_object(&r.ifname), r.result);
                }
            }
            Err(e) => out.record::<ProbeError>(Source::Netdev, "netdevs", Err(e)),
        },
    }
}

/// Link stats64 and `CPU_HIT` offload xstats of every link, or the one named, from one
/// `RTM_GETSTATS` dump, named from the reader's [`LinkNames`] map. Links the dump does not
/// answer for, or answers without counters, produce no samples.
fn netdev_netlink(netdevs: &mut NetdevReader, ifname: Option<&str>, out: &mut Collector) {
    let readings = match netdevs.counters() {
        Ok((readings, (start, end))) => {
            out.window(Source::Netdev, start, end);
            readings
        }
        Err(e) => {
            let object = ifname.map_or("netdevs".to_owned(), netlink::netdev_object);
            out.record::<NetlinkError>(Source::Netdev, &object, Err(e));
            return netdevs.forget_socket();
        }
    };
    let names = &netdevs.names;
    match ifname {
        Some(want) => match names.ifindex(want) {
            None => out.not_found(
                Source::Netdev,
                netlink::netdev_object(want),
                "no such interface",
            ),
            // The link exists but the dump did not answer for it: not read, not missing.
            Some(index) => match readings.iter().find(|r| r.ifindex == index) {
                Some(reading) => out.extend(netlink::reading_samples(want, reading)),
                None => out.error(
                    Source::Netdev,
                    netlink::netdev_object(want),
                    "the RTM_GETSTATS dump did not answer for this interface",
                ),
            },
        },
        None => {
            // After `confirm` every answered ifindex is named, except a link deleted
            // between the dump and the refresh: it is gone, so it is left out.
            let named = readings
                .iter()
                .filter_map(|reading| Some((names.name(reading.ifindex)?, reading)));
            let (samples, spare) = out.samples_and_spare();
            samples.extend(netlink::device_samples(named, spare));
        }
    }
}

/// tc under a sys root: filters are only visible through netlink, so an interface the
/// root has is UNREADABLE, while one it does not have is NOT_FOUND, as `netdev:X` and the
/// netlink path say: `tc:typo` is a typo wherever it is read (a client refuses it, exit 2).
fn tc_sysfs(root: &SysRoot, ifname: &str, out: &mut Collector) {
    let object = netlink::netdev_object(ifname);
    let class = root.sys("class/net");
    if ifname.is_empty() || ifname.contains('/') || !crate::root::is_dir(&class.join(ifname)) {
        return out.not_found(
            Source::Tc,
            object,
            format!("no such interface under {}", class.display()),
        );
    }
    out.error(
        Source::Tc,
        object,
        "tc filters are only visible through netlink on a live system, not under a --sys-root",
    );
}

/// Filters on the ingress and egress hooks of one device.
fn tc(netdevs: &mut NetdevReader, ifname: &str, out: &mut Collector) {
    let object = netlink::netdev_object(ifname);
    let ifindex = match netdevs.ifindex(ifname) {
        Ok(Some(ifindex)) => ifindex,
        Ok(None) => return out.not_found(Source::Tc, object, "no such interface"),
        Err(e) => {
            out.record::<NetlinkError>(Source::Tc, &object, Err(e));
            return netdevs.forget_socket();
        }
    };
    let socket = match netdevs.socket() {
        Ok(socket) => socket,
        Err(e) => return out.record::<NetlinkError>(Source::Tc, &object, Err(e)),
    };
    let start = monotonic_now();
    let answers =
        [TcParent::Ingress, TcParent::Egress].map(|parent| socket.tc_filters(ifindex, parent));
    out.window(Source::Tc, start, monotonic_now());
    for answer in answers {
        match answer {
            Ok(filters) => {
                for filter in &filters {
                    out.extend(netlink::tc_samples(ifname, filter));
                }
            }
            Err(e) => out.record::<NetlinkError>(Source::Tc, &object, Err(e)),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::VecDeque;
    use std::fs;
    use std::sync::{Arc, Mutex};

    use super::*;
    use crate::netlink::{LinkCounters, LinkEvents, LinkStats, OffloadStats, TcFilter};
    use crate::snapshot::Snapshot;

    /// What the fake namespace holds and how often it was asked.
    #[derive(Default)]
    struct State {
        links: Vec<LinkStats>,
        readings: Vec<LinkCounterReading>,
        events: VecDeque<LinkEvents>,
        link_dumps: u32,
        fail_counters: bool,
    }

    struct Fake(Arc<Mutex<State>>);

    impl Fake {
        fn state(&self) -> std::sync::MutexGuard<'_, State> {
            self.0.lock().unwrap_or_else(|e| e.into_inner())
        }
    }

    impl RouteStats for Fake {
        fn links(&mut self) -> Result<Vec<LinkStats>, NetlinkError> {
            let mut state = self.state();
            state.link_dumps += 1;
            Ok(state.links.clone())
        }
        fn offload_stats(&mut self) -> Result<Vec<OffloadStats>, NetlinkError> {
            Ok(Vec::new())
        }
        fn tc_filters(&mut self, _: u32, _: TcParent) -> Result<Vec<TcFilter>, NetlinkError> {
            Ok(Vec::new())
        }
        fn link_counters(&mut self) -> Result<Vec<LinkCounterReading>, NetlinkError> {
            let state = self.state();
            if state.fail_counters {
                return Err(NetlinkError::DumpInterrupted {
                    request: "RTM_GETSTATS dump".to_owned(),
                    attempts: 3,
                });
            }
            Ok(state.readings.clone())
        }
        fn link_events(&mut self) -> Result<LinkEvents, NetlinkError> {
            Ok(self.state().events.pop_front().unwrap_or(LinkEvents::Quiet))
        }
    }

    fn link(ifindex: u32, ifname: &str) -> LinkStats {
        LinkStats {
            ifindex,
            ifname: ifname.to_owned(),
            flags: 1,
            operstate: "up".to_owned(),
            mtu: Some(1500),
            phys_port_name: None,
            counters: None,
        }
    }

    fn counters(rx_packets: u64) -> LinkCounters {
        LinkCounters {
            width_bits: 64,
            rx_packets,
            ..LinkCounters::default()
        }
    }

    fn reading(ifindex: u32, rx_packets: u64, cpu_hit: Option<u64>) -> LinkCounterReading {
        LinkCounterReading {
            ifindex,
            counters: Some(counters(rx_packets)),
            cpu_hit: cpu_hit.map(counters),
        }
    }

    fn setup() -> (Arc<Mutex<State>>, NetdevReader, tempfile::TempDir) {
        let state = Arc::new(Mutex::new(State {
            links: vec![link(1, "lo"), link(2, "p0"), link(3, "pf0vf0")],
            readings: vec![
                reading(1, 10, None),
                reading(2, 20, None),
                reading(3, 30, Some(3)),
            ],
            events: [LinkEvents::Unknown].into(),
            ..State::default()
        }));
        let reader = NetdevReader::with_route_stats(Box::new(Fake(Arc::clone(&state))));
        (state, reader, tempfile::tempdir().expect("tempdir"))
    }

    fn snapshot(
        reader: &mut NetdevReader,
        dir: &tempfile::TempDir,
        ifname: Option<&str>,
    ) -> Snapshot {
        let root = SysRoot::new(dir.path());
        let mut out = Collector::start(&root);
        let selector = CounterSelector::Netdev {
            ifname: ifname.map(str::to_owned),
        };
        collect(
            &root,
            reader,
            &mut RdmaFiles::default(),
            &mut ReadThreads::default(),
            &selector,
            &mut out,
        );
        out.finish()
    }

    fn objects(snap: &Snapshot) -> Vec<&str> {
        let mut objects: Vec<&str> = snap.samples.iter().map(|s| s.key.object.as_str()).collect();
        objects.dedup();
        objects
    }

    fn rdma_snapshot(files: &mut RdmaFiles, root: &SysRoot) -> Snapshot {
        let mut out = Collector::start(root);
        let selector = CounterSelector::Rdma {
            device: None,
            port: None,
        };
        let read = collect(
            root,
            &mut NetdevReader::new(NetdevSource::Sysfs, NetlinkAccess::Live),
            files,
            &mut ReadThreads::default(),
            &selector,
            &mut out,
        );
        if let Some(read) = read {
            read.parse(root, files, &mut out);
        }
        out.finish()
    }

    fn port_rcv_data(snap: &Snapshot, port: u32) -> Option<u64> {
        snap.get(
            Source::Rdma,
            &format!("rdmaDevices/mlx5_0/ports/{port}"),
            "port_rcv_data",
        )
        .map(|s| s.value)
    }

    /// A sampler kept across snapshots (a `Watch`, the agent's pooled samplers) keeps
    /// each port's files open, yet sees what changed in the tree: a value rewritten in
    /// place, a file renamed over (a new inode), a port added and one removed.
    #[test]
    fn kept_ports_read_through_open_files_and_follow_the_tree() {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = SysRoot::new(dir.path());
        let counters = |port: u32| {
            dir.path()
                .join(format!("sys/class/infiniband/mlx5_0/ports/{port}/counters"))
        };
        // Enough ports that the reads are split across threads where there are CPUs.
        for port in 1..=20 {
            fs::create_dir_all(counters(port)).expect("mkdir");
            fs::write(counters(port).join("port_rcv_data"), "10\n").expect("write");
        }
        let mut files = RdmaFiles::default();
        let first = rdma_snapshot(&mut files, &root);
        assert!(first.errors.is_empty(), "{:?}", first.errors);
        assert_eq!(port_rcv_data(&first, 20), Some(40));
        assert_eq!(files.per_object.len(), 20, "every port kept");
        assert!(
            files.per_object.values().all(|d| d.open_files() == 1),
            "each port's file kept open"
        );

        fs::write(counters(1).join("port_rcv_data"), "11\n").expect("rewrite");
        fs::write(counters(2).join("new"), "12\n").expect("write");
        fs::rename(counters(2).join("new"), counters(2).join("port_rcv_data")).expect("rename");
        fs::remove_dir_all(dir.path().join("sys/class/infiniband/mlx5_0/ports/3"))
            .expect("remove port");
        fs::create_dir_all(counters(21)).expect("mkdir");
        fs::write(counters(21).join("port_rcv_data"), "13\n").expect("write");

        let second = rdma_snapshot(&mut files, &root);
        assert!(second.errors.is_empty(), "{:?}", second.errors);
        assert_eq!(port_rcv_data(&second, 1), Some(44), "rewritten in place");
        assert_eq!(port_rcv_data(&second, 2), Some(48), "renamed over");
        assert_eq!(port_rcv_data(&second, 3), None, "removed port");
        assert_eq!(port_rcv_data(&second, 21), Some(52), "added port");
        assert_eq!(
            files.per_object.len(),
            20,
            "the removed port's files closed"
        );
    }

    #[test]
    fn one_stats_dump_named_from_a_map_dumped_once_while_links_are_quiet() {
        let (state, mut reader, dir) = setup();
        for _ in 0..3 {
            let snap = snapshot(&mut reader, &dir, None);
            assert!(snap.errors.is_empty(), "{:?}", snap.errors);
            assert_eq!(snap.samples.len(), 3 * 24 + 4);
            assert_eq!(
                objects(&snap),
                ["netdevs/lo", "netdevs/p0", "netdevs/pf0vf0"]
            );
        }
        assert_eq!(
            state.lock().expect("state").link_dumps,
            1,
            "names were cached"
        );
        let snap = snapshot(&mut reader, &dir, None);
        let rx = snap
            .get(Source::Netdev, "netdevs/p0", "rx_packets")
            .expect("rx_packets");
        assert_eq!((rx.value, rx.width_bits), (20, 64));
        let hit = snap
            .get(
                Source::NetdevOffload,
                "netdevs/pf0vf0",
                "cpu_hit_rx_packets",
            )
            .expect("cpu_hit");
        assert_eq!((hit.value, hit.unit), (3, crate::snapshot::Unit::Packets));
        assert!(
            snap.get(Source::NetdevOffload, "netdevs/p0", "cpu_hit_rx_packets")
                .is_none(),
            "no CPU_HIT: absent, not zero"
        );
    }

    #[test]
    fn renamed_added_and_deleted_links_show_after_a_notification() {
        let (state, mut reader, dir) = setup();
        snapshot(&mut reader, &dir, None);
        {
            let mut s = state.lock().expect("state");
            s.links = vec![link(1, "lo"), link(2, "uplink"), link(4, "pf0vf1")];
            s.readings = vec![
                reading(1, 10, None),
                reading(2, 21, None),
                reading(4, 0, None),
            ];
            s.events.push_back(LinkEvents::Changed);
        }
        let snap = snapshot(&mut reader, &dir, None);
        assert_eq!(
            objects(&snap),
            ["netdevs/lo", "netdevs/uplink", "netdevs/pf0vf1"]
        );
        assert_eq!(state.lock().expect("state").link_dumps, 2);
    }

    #[test]
    fn an_ifindex_the_map_lacks_refreshes_it_even_without_a_notification() {
        let (state, mut reader, dir) = setup();
        snapshot(&mut reader, &dir, None);
        {
            let mut s = state.lock().expect("state");
            s.links.push(link(5, "pf0vf2"));
            s.readings.push(reading(5, 1, None));
        }
        let snap = snapshot(&mut reader, &dir, None);
        assert!(
            objects(&snap).contains(&"netdevs/pf0vf2"),
            "{:?}",
            objects(&snap)
        );
        assert_eq!(state.lock().expect("state").link_dumps, 2);
    }

    #[test]
    fn a_named_interface_alone_or_no_such_interface() {
        let (_state, mut reader, dir) = setup();
        let snap = snapshot(&mut reader, &dir, Some("pf0vf0"));
        assert!(snap.errors.is_empty(), "{:?}", snap.errors);
        assert_eq!(objects(&snap), ["netdevs/pf0vf0"]);
        assert_eq!(snap.samples.len(), 28);
        let snap = snapshot(&mut reader, &dir, Some("eth9"));
        assert!(snap.samples.is_empty());
        assert_eq!(snap.errors.len(), 1);
        assert_eq!(
            (
                snap.errors[0].object.as_str(),
                snap.errors[0].message.as_str()
            ),
            ("netdevs/eth9", "no such interface")
        );
        assert_eq!(
            snap.errors[0].kind,
            crate::snapshot::SourceErrorKind::NotFound
        );
    }

    #[test]
    fn a_link_the_dump_does_not_answer_for_is_unreadable_not_missing() {
        let (state, mut reader, dir) = setup();
        state.lock().expect("state").links.push(link(4, "pf0hpf"));
        let snap = snapshot(&mut reader, &dir, Some("pf0hpf"));
        assert!(snap.samples.is_empty());
        assert_eq!(snap.errors.len(), 1, "{:?}", snap.errors);
        assert_eq!(snap.errors[0].object, "netdevs/pf0hpf");
        assert_eq!(
            snap.errors[0].kind,
            crate::snapshot::SourceErrorKind::Unreadable,
            "the link exists: a typo it is not"
        );
    }

    #[test]
    fn a_failed_dump_is_an_error_and_drops_the_socket() {
        let (state, mut reader, dir) = setup();
        snapshot(&mut reader, &dir, None);
        state.lock().expect("state").fail_counters = true;
        let snap = snapshot(&mut reader, &dir, None);
        assert!(snap.samples.is_empty());
        assert_eq!(snap.errors.len(), 1);
        assert_eq!(snap.errors[0].object, "netdevs");
        assert!(
            snap.errors[0].message.contains("RTM_GETSTATS"),
            "{:?}",
            snap.errors
        );
        assert!(
            reader.socket.is_none(),
            "the next snapshot opens a fresh socket"
        );
        assert!(reader.names.stale_before_dump(LinkEvents::Quiet));
    }
}
