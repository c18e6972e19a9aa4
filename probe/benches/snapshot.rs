//! Snapshot speed against what a user would otherwise run, in the same run.
//!
//! The tree is DPU-sized: two uplink RDMA devices with every IB PMA and mlx5 driver
//! counter, and 66 netdevs (2 uplinks + 64 representors, veth devices in a network
//! namespace this benchmark creates). `dpu-probe` reads the RDMA files from the tree and
//! the link stats from one netlink dump inside the namespace; the shell baseline is what an
//! engineer scripts: `cat` of the same counter files plus `ip -s -j link show`.
//!
//! A second scenario gives every representor an RDMA port too (switchdev exposes `vport_*`
//! Q counters per representor), to show how the snapshot scales with the file count.
//!
//! Each tree is measured idle and busy: busy is one thread per CPU spinning like an SPDK
//! reactor or an OVS-DOCA PMD thread (a BlueField is never idle), with the shell baseline
//! under the same load, and the sampler both with its default placement (reads at nice
//! −10 where the process may) and with `[counters] priority = "high"` (`SCHED_FIFO`,
//! where permitted). Each line also gives
//! where the window went (the median read window of each source) and how many snapshots
//! were preempted and read again. Each snapshot is handed back to its sampler once its
//! figures are taken (`Sampler::recycle`), as the agent does after encoding one, so the
//! next is built in its buffers.
//!
//! Run: `cargo bench -p dpu-probe --bench snapshot` (as root; without root or `ip` it says
//! why and exits 0). Targets: idle, at least 50x faster than the shell baseline, and a
//! median skew (first to last counter read) of at most 1 ms for the representor-heavy
//! tree; busy, at least 20x the shell under the same load, and a median skew of at most
//! 2 ms with the high read priority.

#![allow(clippy::print_stdout, missing_docs)]

use std::fs;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use dpu_probe::counters::{CounterSelector, ReadPlacement, ReadPriority, Sampler};
use dpu_probe::snapshot::Source;
use dpu_probe::SysRoot;

const PMA: &[&str] = &[
    "port_xmit_data",
    "port_rcv_data",
    "port_xmit_packets",
    "port_rcv_packets",
    "unicast_xmit_packets",
    "unicast_rcv_packets",
    "multicast_xmit_packets",
    "multicast_rcv_packets",
    "symbol_error",
    "port_rcv_errors",
    "port_rcv_remote_physical_errors",
    "port_rcv_switch_relay_errors",
    "link_error_recovery",
    "link_downed",
    "port_xmit_constraint_errors",
    "port_rcv_constraint_errors",
    "local_link_integrity_errors",
    "excessive_buffer_overrun_errors",
    "port_xmit_discards",
    "VL15_dropped",
    "port_xmit_wait",
];

const HW: &[&str] = &[
    "rx_write_requests",
    "rx_read_requests",
    "rx_atomic_requests",
    "rx_dct_connect",
    "out_of_buffer",
    "out_of_sequence",
    "duplicate_request",
    "rnr_nak_retry_err",
    "packet_seq_err",
    "implied_nak_seq_err",
    "local_ack_timeout_err",
    "resp_local_length_error",
    "resp_cqe_error",
    "req_cqe_error",
    "req_remote_invalid_request",
    "req_remote_access_errors",
    "resp_remote_access_errors",
    "resp_cqe_flush_error",
    "req_cqe_flush_error",
    "req_transport_retries_exceeded",
    "req_rnr_retries_exceeded",
    "roce_adp_retrans",
    "roce_adp_retrans_to",
    "roce_slow_restart",
    "roce_slow_restart_cnps",
    "roce_slow_restart_trans",
    "rp_cnp_ignored",
    "rp_cnp_handled",
    "np_ecn_marked_roce_packets",
    "np_cnp_sent",
    "rx_icrc_encapsulated",
];

const REPRESENTORS: usize = 64;

/// How long a freshly built tree is left before it is measured: past the sampler's racy
/// window (50 ms) for directory listings, with room to spare.
const TREE_SETTLE: Duration = Duration::from_millis(200);

fn write_port(root: &Path, dev: &str, port: u32, vport: bool) -> std::io::Result<usize> {
    let dir = root.join(format!("sys/class/infiniband/{dev}/ports/{port}"));
    fs::create_dir_all(dir.join("counters"))?;
    fs::create_dir_all(dir.join("hw_counters"))?;
    let mut files = 0;
    for (i, name) in PMA.iter().enumerate() {
        fs::write(
            dir.join("counters").join(name),
            format!("{}\n", 1_000_000 + i),
        )?;
        files += 1;
    }
    for (i, name) in HW.iter().enumerate() {
        let name = if vport {
            format!("vport_{name}")
        } else {
            (*name).to_owned()
        };
        fs::write(dir.join("hw_counters").join(name), format!("{i}\n"))?;
        files += 1;
    }
    Ok(files)
}

/// Builds the RDMA part of the tree; returns the number of counter files.
fn build_tree(root: &Path, ports_per_device: u32) -> std::io::Result<usize> {
    fs::create_dir_all(root.join("proc/sys/kernel/random"))?;
    fs::write(root.join("proc/sys/kernel/random/boot_id"), "bench\n")?;
    let mut files = 0;
    for dev in ["mlx5_0", "mlx5_1"] {
        for port in 1..=ports_per_device {
            files += write_port(root, dev, port, port > 1)?;
        }
    }
    Ok(files)
}

/// The benchmark's network namespace with 66 links, removed on drop. The links are veth
/// devices (every kernel has veth; `dummy` is often a module that is not there) whose
/// peers live in a second namespace, so the measured one holds exactly the DPU's 66.
struct Netns(String, String);

impl Netns {
    fn create() -> Result<Self, String> {
        let name = format!("dpu-bench-{}", std::process::id());
        let peers = format!("{name}-peers");
        run("ip", &["netns", "add", &name])?;
        let ns = Self(name, peers);
        run("ip", &["netns", "add", &ns.1])?;
        let mut batch = String::new();
        let mut add = |ifname: &str, i: usize| {
            batch.push_str(&format!(
                "link add {ifname} type veth peer name peer{i} netns {}\nlink set {ifname} up\n",
                ns.1
            ));
        };
        add("p0", 0);
        add("p1", 1);
        for i in 0..REPRESENTORS {
            add(&format!("pf{}vf{}", i / 32, i % 32), i + 2);
        }
        let path = std::env::temp_dir().join(format!("{}.batch", ns.0));
        fs::write(&path, batch).map_err(|e| e.to_string())?;
        let path_text = path.to_string_lossy().into_owned();
        let result = run("ip", &["-n", &ns.0, "-batch", &path_text]);
        let _ = fs::remove_file(&path);
        result?;
        Ok(ns)
    }
}

impl Drop for Netns {
    fn drop(&mut self) {
        let _ = run("ip", &["netns", "del", &self.0]);
        let _ = run("ip", &["netns", "del", &self.1]);
    }
}

fn run(program: &str, args: &[&str]) -> Result<(), String> {
    let out = Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("{program}: {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "{program} {}: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort_unstable();
    v[v.len() / 2]
}

fn max(v: &[Duration]) -> Duration {
    v.iter().copied().max().unwrap_or_default()
}

struct Scenario {
    name: &'static str,
    ports_per_device: u32,
    /// The idle skew target, where the issue sets one for this tree.
    idle_skew_target: Option<Duration>,
}

/// Threads that spin like SPDK reactors or OVS-DOCA PMD threads, one per CPU, at normal
/// priority, until dropped.
struct BusyPollers {
    stop: Arc<AtomicBool>,
    threads: Vec<std::thread::JoinHandle<()>>,
}

impl BusyPollers {
    fn start(count: usize) -> Self {
        let stop = Arc::new(AtomicBool::new(false));
        let threads = (0..count)
            .map(|_| {
                let stop = Arc::clone(&stop);
                std::thread::spawn(move || {
                    while !stop.load(Ordering::Relaxed) {
                        std::hint::spin_loop();
                    }
                })
            })
            .collect();
        Self { stop, threads }
    }
}

impl Drop for BusyPollers {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        for thread in self.threads.drain(..) {
            let _ = thread.join();
        }
    }
}

/// A sampler's figures over many snapshots.
struct Measured {
    median: Duration,
    skews: Vec<Duration>,
    /// Median window per source, in the order the snapshot reports them.
    windows: Vec<(Source, Duration)>,
    preempted: usize,
    retried: usize,
    runs: usize,
}

fn measure(sampler: &mut Sampler, selectors: &[CounterSelector], runs: usize) -> Measured {
    let _ = sampler.snapshot(selectors);
    let mut times = Vec::with_capacity(runs);
    let mut skews = Vec::with_capacity(runs);
    let mut per_source: Vec<(Source, Vec<Duration>)> = Vec::new();
    let (mut preempted, mut retried) = (0, 0);
    for _ in 0..runs {
        let start = Instant::now();
        let snap = sampler.snapshot(selectors);
        times.push(start.elapsed());
        skews.push(snap.skew());
        preempted += usize::from(snap.read.preempted);
        retried += usize::from(snap.read.attempts > 1);
        for w in &snap.read.windows {
            match per_source.iter_mut().find(|(s, _)| *s == w.source) {
                Some((_, lengths)) => lengths.push(w.length()),
                None => per_source.push((w.source, vec![w.length()])),
            }
        }
        sampler.recycle(snap);
    }
    Measured {
        median: median(times),
        skews,
        windows: per_source
            .into_iter()
            .map(|(source, lengths)| (source, median(lengths)))
            .collect(),
        preempted,
        retried,
        runs,
    }
}

fn shell(root: &str, ns: &Netns, runs: usize) -> Result<Duration, String> {
    let script = r#"cat "$1"/sys/class/infiniband/*/ports/*/counters/* "$1"/sys/class/infiniband/*/ports/*/hw_counters/* >/dev/null && ip -n "$2" -s -j link show >/dev/null"#;
    let mut times = Vec::new();
    for _ in 0..runs {
        let start = Instant::now();
        let status = Command::new("sh")
            .args(["-c", script, "sh", root, &ns.0])
            .status()
            .map_err(|e| format!("sh: {e}"))?;
        times.push(start.elapsed());
        if !status.success() {
            return Err("the shell baseline failed".to_owned());
        }
    }
    Ok(median(times))
}

fn verdict(met: bool) -> &'static str {
    if met {
        "met"
    } else {
        "NOT MET"
    }
}

/// One line for a sampler against the shell under the same conditions.
fn report(
    label: &str,
    m: &Measured,
    shell: Duration,
    ratio_target: f64,
    skew_target: Option<Duration>,
) {
    let ratio = shell.as_secs_f64() / m.median.as_secs_f64();
    let skew = median(m.skews.clone());
    let windows: Vec<String> = m
        .windows
        .iter()
        .map(|(source, length)| format!("{source} {length:.3?}"))
        .collect();
    println!(
        "  {label:<34} median {:>10.3?}  {ratio:>5.1}x the shell [target >= {ratio_target}x: {}]",
        m.median,
        verdict(ratio >= ratio_target)
    );
    let skew_verdict = match skew_target {
        Some(target) => format!("  [target <= {target:?}: {}]", verdict(skew <= target)),
        None => String::new(),
    };
    println!(
        "  {:<34} skew median {skew:.3?}, max {:.3?}{skew_verdict}",
        "",
        max(&m.skews)
    );
    println!(
        "  {:<34} windows (median): {}; preempted {}/{}, read again {}",
        "",
        windows.join(", "),
        m.preempted,
        m.runs,
        m.retried
    );
}

fn bench(ns: &Netns, scenario: &Scenario) -> Result<(), String> {
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let files = build_tree(dir.path(), scenario.ports_per_device).map_err(|e| e.to_string())?;
    // A sampler does not trust a directory listing taken within 50 ms of the directory's
    // last change (`RACY_WINDOW` in counter_file.rs: inode times are a jiffy coarse), so it
    // lists such a directory again, and opens its files again, every snapshot. Every
    // sysfs directory of a running machine is older than that; a tree measured the moment
    // it is written is not, and its first ~40 ms of snapshots cost twice as much (the
    // first tree's idle median read 177 µs instead of 79 µs before this wait).
    std::thread::sleep(TREE_SETTLE);
    let netns = format!("/run/netns/{}", ns.0);
    let new_sampler = || Sampler::in_netns(SysRoot::new(dir.path()), netns.clone());
    let mut sampler = new_sampler();
    let selectors = [
        CounterSelector::Rdma {
            device: None,
            port: None,
        },
        CounterSelector::Netdev { ifname: None },
    ];

    let first = sampler.snapshot(&selectors);
    if !first.errors.is_empty() {
        return Err(format!("snapshot errors: {:?}", first.errors));
    }
    let counters = first.samples.len();
    let netdev_samples = first
        .samples
        .iter()
        .filter(|s| s.key.object.starts_with("netdevs/"))
        .count();
    println!("scenario: {}", scenario.name);
    println!(
        "  tree: {files} RDMA counter files, {} netdevs ({netdev_samples} link samples); {counters} counters per snapshot",
        2 + REPRESENTORS
    );

    let root = dir.path().to_string_lossy().into_owned();
    let idle = measure(&mut sampler, &selectors, 200);
    let idle_shell = shell(&root, ns, 30)?;
    println!("  idle: shell (cat + ip -s) median {idle_shell:.3?} (30 runs); dpu-probe 200 runs:");
    report(
        "default placement",
        &idle,
        idle_shell,
        50.0,
        scenario.idle_skew_target,
    );
    // Its kept descriptors go back to the process's budget, which the next sampler needs.
    drop(sampler);

    let cpus = std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get);
    let high = ReadPlacement {
        cpus: None,
        priority: ReadPriority::High,
    };
    let high_allowed = high.check();
    let busy = BusyPollers::start(cpus);
    let busy_default = measure(&mut new_sampler(), &selectors, 200);
    // One sampler at a time: each keeps its own descriptors.
    let busy_high = match &high_allowed {
        Ok(()) => Some(measure(
            &mut new_sampler().placed(high.clone()),
            &selectors,
            200,
        )),
        Err(_) => None,
    };
    let busy_shell = shell(&root, ns, 20)?;
    drop(busy);
    println!(
        "  busy ({cpus} threads spinning like reactors, one per CPU, normal priority): shell median {busy_shell:.3?} (20 runs); dpu-probe 200 runs:"
    );
    report("default placement", &busy_default, busy_shell, 20.0, None);
    if busy_shell.as_secs_f64() / busy_default.median.as_secs_f64() < 20.0 {
        println!(
            "  {:<34} not met with the default placement: on a busy DPU set [counters] priority = \"high\" (and cpus off the pollers' cores; docs/counters.md)",
            ""
        );
    }
    match (&busy_high, &high_allowed) {
        (Some(m), _) => report(
            "[counters] priority = \"high\"",
            m,
            busy_shell,
            20.0,
            Some(Duration::from_millis(2)),
        ),
        (None, Err(e)) => println!("  priority high: not measured: {e}"),
        (None, Ok(())) => {}
    }
    Ok(())
}

fn main() {
    // `cargo bench` passes `--bench`; `cargo test --benches` passes nothing: both run it.
    if !nix::unistd::geteuid().is_root() {
        println!("SKIPPED: the snapshot benchmark creates a network namespace and needs root");
        return;
    }
    let ns = match Netns::create() {
        Ok(ns) => ns,
        Err(e) => {
            println!("SKIPPED: cannot create the benchmark's network namespace: {e}");
            return;
        }
    };
    for scenario in [
        Scenario {
            name: "2 uplink RDMA devices with all counters, 66 netdevs",
            ports_per_device: 1,
            idle_skew_target: None,
        },
        Scenario {
            name: "same, plus an RDMA port (vport_ Q counters) per representor",
            ports_per_device: 1 + (REPRESENTORS as u32) / 2,
            idle_skew_target: Some(Duration::from_millis(1)),
        },
    ] {
        if let Err(e) = bench(&ns, &scenario) {
            println!("FAILED: {}: {e}", scenario.name);
            std::process::exit(1);
        }
    }
}
