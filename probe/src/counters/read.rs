//! Dispatch from a selector to the readers. Kept apart from the engine so each reader's
//! failure mode (skip, error entry) is decided in one place.

use std::collections::HashMap;
use std::path::PathBuf;

use super::netdev_source::NetdevSource;
use super::selector::CounterSelector;
use crate::netlink::{
    self, LinkCounterReading, LinkNames, NetlinkError, RouteSocket, RouteStats, TcParent,
};
use crate::rdma_counters::ObjectDirs;
use crate::rdma_netlink::HwCounterReader;
use crate::snapshot::{Collector, Sample, Source};
use crate::{block, netdev_stats, rdma_counters, ProbeError, SysRoot};

/// Netdev and tc counters, from sysfs or from a netlink socket opened on first use and
/// kept across snapshots (a `Watch` reuses it every interval), with the ifindex → name map
/// that the socket's link watch keeps exact (see [`LinkNames`]).
pub(super) struct NetdevReader {
    source: NetdevSource,
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
    pub(super) fn new(source: NetdevSource) -> Self {
        Self {
            source,
            netns: None,
            socket: None,
            names: LinkNames::new(),
        }
    }

    pub(super) fn in_netns(path: PathBuf) -> Self {
        Self {
            source: NetdevSource::Netlink,
            netns: Some(path),
            socket: None,
            names: LinkNames::new(),
        }
    }

    pub(super) fn with_route_stats(stats: Box<dyn RouteStats + Send>) -> Self {
        Self {
            source: NetdevSource::Netlink,
            netns: None,
            socket: Some(stats),
            names: LinkNames::new(),
        }
    }

    fn socket(&mut self) -> Result<&mut (dyn RouteStats + Send), NetlinkError> {
        Self::open(&mut self.socket, self.netns.as_deref())
    }

    /// Every device's counters from one stats dump, with the name map brought up to date
    /// around it: refreshed before the dump when links changed (so the dump is not
    /// delayed), and again after it if a link changed meanwhile or the dump named an
    /// ifindex the map lacks.
    fn counters(&mut self) -> Result<Vec<LinkCounterReading>, NetlinkError> {
        let socket = Self::open(&mut self.socket, self.netns.as_deref())?;
        self.names.prepare(socket)?;
        let readings = socket.link_counters()?;
        self.names.confirm(socket, &readings)?;
        Ok(readings)
    }

    /// The ifindex of the link named `ifname`, from the name map refreshed if needed;
    /// `None` when there is no such link.
    fn ifindex(&mut self, ifname: &str) -> Result<Option<u32>, NetlinkError> {
        let socket = Self::open(&mut self.socket, self.netns.as_deref())?;
        self.names.prepare(socket)?;
        Ok(self.names.ifindex(ifname))
    }

    /// [`socket`](Self::socket) on the fields, so the name map can be borrowed with it.
    fn open<'s>(
        socket: &'s mut Option<Box<dyn RouteStats + Send>>,
        netns: Option<&std::path::Path>,
    ) -> Result<&'s mut (dyn RouteStats + Send), NetlinkError> {
        if socket.is_none() {
            let opened = match netns {
                Some(path) => RouteSocket::open_in_netns(path)?,
                None => RouteSocket::open()?,
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
    /// Netlink for `hw_counters` when `root` is the live system (see [`HwCounterReader`]).
    pub(super) fn for_root(root: &SysRoot) -> Self {
        Self::with_hw_reader(HwCounterReader::for_root(root))
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

pub(super) fn collect(
    root: &SysRoot,
    netdevs: &mut NetdevReader,
    rdma_files: &mut RdmaFiles,
    selector: &CounterSelector,
    out: &mut Collector,
) {
    match selector {
        CounterSelector::Rdma { device, port } => {
            rdma(root, rdma_files, device.as_deref(), *port, out);
        }
        CounterSelector::Block { device } => block(root, device.as_deref(), out),
        CounterSelector::Netdev { ifname } => match netdevs.source {
            NetdevSource::Sysfs => netdev_sysfs(root, ifname.as_deref(), out),
            NetdevSource::Netlink => netdev_netlink(netdevs, ifname.as_deref(), out),
        },
        CounterSelector::Tc { ifname } => match netdevs.source {
            NetdevSource::Sysfs => out.error(
                Source::Tc,
                netlink::netdev_object(ifname),
                "tc filters are only visible through netlink on a live system, not under a --sys-root",
            ),
            NetdevSource::Netlink => tc(netdevs, ifname, out),
        },
    }
}

/// One unit of RDMA counter reading: a device's own `hw_counters/` or one port.
enum RdmaJob {
    Device(String),
    Port(String, u32),
}

impl RdmaJob {
    fn object(&self) -> String {
        match self {
            Self::Device(d) => rdma_counters::device_object(d),
            Self::Port(d, p) => rdma_counters::port_object(d, *p),
        }
    }

    /// The object's directories, nothing opened yet.
    fn dirs(&self, root: &SysRoot) -> Result<ObjectDirs, ProbeError> {
        match self {
            Self::Device(d) => ObjectDirs::device(root, d),
            Self::Port(d, p) => ObjectDirs::port(root, d, *p),
        }
    }

    /// Reads the object from sysfs through its kept directories, except a port's `hw_counters` when `hw` has them.
    fn read(
        &self,
        root: &SysRoot,
        dirs: &mut Option<ObjectDirs>,
        hw: Option<Vec<Sample>>,
    ) -> Result<Vec<Sample>, ProbeError> {
        let dirs = match dirs {
            Some(dirs) => dirs,
            slot => slot.insert(self.dirs(root)?),
        };
        match self {
            Self::Device(d) => rdma_counters::read_device_hw_counters_kept(root, d, dirs),
            Self::Port(d, p) => rdma_counters::read_port_counters_kept(root, d, *p, dirs, hw),
        }
    }
}

/// Ports per reading thread below which threads cost more than they save.
const PORTS_PER_THREAD: usize = 8;
/// Most threads one snapshot uses: a BlueField-3 has 16 Arm cores, and the agent is not
/// the only thing running on them.
const MAX_THREADS: usize = 8;

fn rdma(
    root: &SysRoot,
    files: &mut RdmaFiles,
    device: Option<&str>,
    port: Option<u32>,
    out: &mut Collector,
) {
    if let (Some(device), Some(port)) = (device, port) {
        let job = RdmaJob::Port(device.to_owned(), port);
        let object = job.object();
        let hw = files.port_hw(root, &job);
        let mut dirs = files.per_object.remove(&object);
        files.per_object.clear();
        let result = job.read(root, &mut dirs, hw);
        if let Some(dirs) = dirs {
            files.per_object.insert(object.clone(), dirs);
        }
        return out.record(Source::Rdma, &object, result);
    }
    let devices = match device {
        Some(device) => vec![device.to_owned()],
        None => match crate::root::list_dir(&root.sys("class/infiniband")) {
            Ok(devices) => devices,
            Err(e) => return out.record::<ProbeError>(Source::Rdma, "rdmaDevices", Err(e)),
        },
    };
    // List first (cheap), then read every object back to back, in parallel when the tree
    // is big: a switchdev BlueField has a port per representor, thousands of files.
    let mut jobs = Vec::new();
    for device in devices {
        match rdma_counters::list_ports(root, &device) {
            Ok(ports) => {
                if root
                    .sys("class/infiniband")
                    .join(&device)
                    .join("hw_counters")
                    .is_dir()
                {
                    jobs.push(RdmaJob::Device(device.clone()));
                }
                jobs.extend(ports.into_iter().map(|p| RdmaJob::Port(device.clone(), p)));
            }
            Err(e) => out.record::<ProbeError>(
                Source::Rdma,
                &rdma_counters::device_object(&device),
                Err(e),
            ),
        }
    }
    // Ports' hw_counters over netlink first, on this thread (one socket); the threads
    // below then read only files.
    let mut hw: Vec<Option<Vec<Sample>>> =
        jobs.iter().map(|job| files.port_hw(root, job)).collect();
    // Each object keeps its own directories; objects gone since the last snapshot drop
    // theirs (and their descriptors) here.
    let mut dirs: Vec<Option<ObjectDirs>> = jobs
        .iter()
        .map(|job| files.per_object.remove(&job.object()))
        .collect();
    files.per_object.clear();
    let threads = reading_threads().min(jobs.len() / PORTS_PER_THREAD).max(1);
    let read_part = |part: &[RdmaJob],
                     part_dirs: &mut [Option<ObjectDirs>],
                     part_hw: &mut [Option<Vec<Sample>>]| {
        part.iter()
            .zip(part_dirs.iter_mut())
            .zip(part_hw.iter_mut())
            .map(|((job, dirs), hw)| job.read(root, dirs, hw.take()))
            .collect::<Vec<_>>()
    };
    // The first part is read on this thread while the others run: one thread fewer to
    // start per snapshot.
    let chunk = jobs.len().div_ceil(threads).max(1);
    let mut parts = jobs
        .chunks(chunk)
        .zip(dirs.chunks_mut(chunk))
        .zip(hw.chunks_mut(chunk));
    let results: Vec<_> = match parts.next() {
        None => Vec::new(),
        Some(((first, first_dirs), first_hw)) => std::thread::scope(|scope| {
            let handles: Vec<_> = parts
                .map(|((part, part_dirs), part_hw)| {
                    scope.spawn(move || read_part(part, part_dirs, part_hw))
                })
                .collect();
            let mut results = read_part(first, first_dirs, first_hw);
            for handle in handles {
                results.extend(
                    handle
                        .join()
                        .unwrap_or_else(|panic| std::panic::resume_unwind(panic)),
                );
            }
            results
        }),
    };
    for (job, dirs) in jobs.iter().zip(dirs) {
        if let Some(dirs) = dirs {
            files.per_object.insert(job.object(), dirs);
        }
    }
    for (job, result) in jobs.iter().zip(results) {
        out.record(Source::Rdma, &job.object(), result);
    }
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
    for name in names {
        let result = block::read_block_samples(root, &name);
        out.record(Source::Block, &block::block_object(&name), result);
    }
}

fn netdev_sysfs(root: &SysRoot, ifname: Option<&str>, out: &mut Collector) {
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
        Ok(readings) => readings,
        Err(e) => {
            let object = ifname.map_or("netdevs".to_owned(), netlink::netdev_object);
            out.record::<NetlinkError>(Source::Netdev, &object, Err(e));
            return netdevs.forget_socket();
        }
    };
    let names = &netdevs.names;
    match ifname {
        Some(want) => {
            let reading = names
                .ifindex(want)
                .and_then(|index| readings.iter().find(|r| r.ifindex == index));
            match reading {
                Some(reading) => out.extend(netlink::reading_samples(want, reading)),
                None => out.error(
                    Source::Netdev,
                    netlink::netdev_object(want),
                    "no such interface",
                ),
            }
        }
        None => {
            // After `confirm` every answered ifindex is named, except a link deleted
            // between the dump and the refresh: it is gone, so it is left out.
            let named = readings
                .iter()
                .filter_map(|reading| Some((names.name(reading.ifindex)?, reading)));
            out.extend(netlink::device_samples(named));
        }
    }
}

/// Filters on the ingress and egress hooks of one device.
fn tc(netdevs: &mut NetdevReader, ifname: &str, out: &mut Collector) {
    let object = netlink::netdev_object(ifname);
    let ifindex = match netdevs.ifindex(ifname) {
        Ok(Some(ifindex)) => ifindex,
        Ok(None) => return out.error(Source::Tc, object, "no such interface"),
        Err(e) => {
            out.record::<NetlinkError>(Source::Tc, &object, Err(e));
            return netdevs.forget_socket();
        }
    };
    let socket = match netdevs.socket() {
        Ok(socket) => socket,
        Err(e) => return out.record::<NetlinkError>(Source::Tc, &object, Err(e)),
    };
    for parent in [TcParent::Ingress, TcParent::Egress] {
        match socket.tc_filters(ifindex, parent) {
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
        collect(
            root,
            &mut NetdevReader::new(NetdevSource::Sysfs),
            files,
            &selector,
            &mut out,
        );
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
