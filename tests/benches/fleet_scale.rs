//! `dpuctl fleet` over 200 real agents (release builds; tests/src/fleet.rs
//! `FleetSpec::standard`: twelve faulty, two of them hung and two refusing TLS), printed,
//! never asserted: the wall time of `fleet health` and `fleet check`, of one single-node
//! call (`dpu health`, `dpu info`) against one agent, their ratio, and dpuctl's peak RSS
//! (wait4's `ru_maxrss`).
//!
//! A hung node costs its whole `--timeout` whatever the rest of the fleet does, so each
//! fleet command is run twice: over all 200 ("all"), where the hung nodes set the wall
//! time, and with the hung nodes left out by `--select name!=...` ("no hung"), which is
//! what the fleet itself costs. The ratio uses the second.
//!
//! Then the inventory at the size a large cluster has: 100,000 `[[target]]` tables with one
//! unknown key at the end, and 100,000 tables all named the same, read by `dpuctl fleet`
//! (which reports the problems and runs nothing), next to Python's `tomllib` loading the
//! same file (what a user would otherwise validate it with). The target is about a second.
//!
//! `cargo bench -p dpu-tests --bench fleet_scale` (run by `.ci/run`).

// A benchmark's job is to print its figures.
#![allow(clippy::print_stdout)]

use std::fs::File;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use dpu_tests::fleet::{Fault, Fleet, FleetSpec, FLEET_MTU};
use dpu_tests::harness::{bin_dir, proc_status_kib};

/// `--timeout` of every run (seconds): what a hung node costs.
const TIMEOUT_S: &str = "2";
/// `--deadline` of the fleet runs (seconds).
const DEADLINE_S: &str = "5";
/// Runs of each fleet command without the hung nodes, and of each single-node call; the
/// median is printed.
const FLEET_RUNS: usize = 3;
const SINGLE_RUNS: usize = 7;

/// One finished dpuctl run.
#[derive(Debug, Clone)]
struct Measured {
    wall: Duration,
    /// Peak resident set, KiB (`ru_maxrss`).
    peak_rss_kib: u64,
    exit: i32,
    /// The report's `summary` for fleet runs ("PASS 188 FAIL 8 ..."), else empty.
    summary: String,
}

/// Runs dpuctl with `args`, stdout to a file (a 200-node JSON report would fill a pipe),
/// and reaps it with wait4 for its own rusage.
fn measure(args: &[&str], out_dir: &Path) -> Measured {
    let stdout_path = out_dir.join("stdout.json");
    let stdout = File::create(&stdout_path).expect("stdout file");
    let started = Instant::now();
    let child = Command::new(bin_dir().join("dpuctl"))
        .args(args)
        .env_remove("DPUCTL_AGENT")
        .stdin(Stdio::null())
        .stdout(stdout)
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn dpuctl");
    let pid = libc::pid_t::try_from(child.id()).expect("pid fits");
    let mut status: libc::c_int = 0;
    // SAFETY: an all-zero `rusage` is a valid value of the plain C struct.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `pid` is our own unreaped child (std's `Child` never waits for it after
    // this: it is dropped unwaited), and both pointers are to live, writable locals.
    let reaped = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
    let wall = started.elapsed();
    assert_eq!(reaped, pid, "wait4: {}", std::io::Error::last_os_error());
    drop(child);
    let exit = if libc::WIFEXITED(status) {
        libc::WEXITSTATUS(status)
    } else {
        -1
    };
    let summary = std::fs::read_to_string(&stdout_path)
        .ok()
        .and_then(|text| serde_json::from_str::<serde_json::Value>(&text).ok())
        .and_then(|report| {
            let summary = report.get("summary")?.as_object()?.clone();
            Some(
                summary
                    .iter()
                    .map(|(status, count)| format!("{status} {count}"))
                    .collect::<Vec<_>>()
                    .join(", "),
            )
        })
        .unwrap_or_default();
    Measured {
        wall,
        peak_rss_kib: u64::try_from(usage.ru_maxrss).unwrap_or(0),
        exit,
        summary,
    }
}

/// The run with the median wall time of `runs` runs.
fn median(runs: usize, mut once: impl FnMut() -> Measured) -> Measured {
    let mut all: Vec<Measured> = (0..runs).map(|_| once()).collect();
    all.sort_by_key(|m| m.wall);
    all.swap_remove(all.len() / 2)
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn row(label: &str, m: &Measured) {
    println!(
        "  {label:<44} {:>9.1} ms {:>8.1} MiB {:>5}   {}",
        ms(m.wall),
        m.peak_rss_kib as f64 / 1024.0,
        m.exit,
        m.summary
    );
}

fn main() {
    // Built before the clock starts (bin_dir builds the release binaries on first use).
    let _ = bin_dir();
    let started = Instant::now();
    let fleet = Fleet::start(&FleetSpec::standard());
    let start_time = started.elapsed();
    let agents_rss: Vec<u64> = fleet
        .nodes()
        .iter()
        .filter(|n| n.fault() != Some(Fault::Hung))
        .filter_map(|n| proc_status_kib(n.agent().pid(), "VmRSS:"))
        .collect();
    let mean_rss = agents_rss.iter().sum::<u64>() as f64 / agents_rss.len().max(1) as f64;

    let out = tempfile::tempdir().expect("tempdir");
    let inventory = fleet.inventory().display().to_string();
    let mtu = FLEET_MTU.to_string();
    let no_hung: Vec<String> = fleet
        .with_fault(Fault::Hung)
        .iter()
        .flat_map(|name| ["--select".to_owned(), format!("name!={name}")])
        .collect();
    let fleet_args = |without_hung: bool, command: &[&str]| -> Vec<String> {
        let mut args: Vec<String> = ["-o", "json", "--timeout", TIMEOUT_S, "fleet"]
            .iter()
            .map(|s| (*s).to_owned())
            .collect();
        args.extend(["--inventory".to_owned(), inventory.clone()]);
        args.extend(["--deadline".to_owned(), DEADLINE_S.to_owned()]);
        if without_hung {
            args.extend(no_hung.iter().cloned());
        }
        args.extend(command.iter().map(|s| (*s).to_owned()));
        args
    };
    let run = |args: &[String]| {
        let refs: Vec<&str> = args.iter().map(String::as_str).collect();
        measure(&refs, out.path())
    };

    let health = ["health"];
    let check = ["check", "--mtu", mtu.as_str()];
    let health_all = run(&fleet_args(false, &health));
    let check_all = run(&fleet_args(false, &check));
    let health_fleet = median(FLEET_RUNS, || run(&fleet_args(true, &health)));
    let check_fleet = median(FLEET_RUNS, || run(&fleet_args(true, &check)));

    let one = fleet.healthy()[0];
    let endpoint = fleet.node(one).endpoint().to_owned();
    let single = |command: &[&str]| {
        let mut args = vec!["-o", "json", "--timeout", TIMEOUT_S, "--agent", &endpoint];
        args.extend(command);
        median(SINGLE_RUNS, || measure(&args, out.path()))
    };
    let dpu_health = single(&["dpu", "health"]);
    let dpu_info = single(&["dpu", "info"]);

    let size = fleet.nodes().len();
    let hung = fleet.with_fault(Fault::Hung).len();
    let faulty = size - fleet.healthy().len();
    println!("dpuctl fleet over {size} agents ({faulty} faulty, {hung} of them hung)");
    println!("  --timeout {TIMEOUT_S} s, --deadline {DEADLINE_S} s, --parallel 128 (the default)");
    println!("  {size} agents started in {start_time:.2?}; mean agent RSS {mean_rss:.0} KiB");
    println!(
        "  {:<44} {:>12} {:>12} {:>5}   summary",
        "run", "wall", "peak RSS", "exit"
    );
    row(
        &format!("fleet health, all {size} (hung: --timeout)"),
        &health_all,
    );
    row(
        &format!("fleet health, {} without the hung", size - hung),
        &health_fleet,
    );
    row(&format!("fleet check --mtu {mtu}, all {size}"), &check_all);
    row(
        &format!("fleet check --mtu {mtu}, {} without the hung", size - hung),
        &check_fleet,
    );
    row("dpu health, one agent", &dpu_health);
    row("dpu info, one agent", &dpu_info);
    let ratio = |fleet: &Measured, single: &Measured| ms(fleet.wall) / ms(single.wall).max(0.001);
    println!(
        "  ratio (fleet without the hung / one single-node call; \
         one node after another would be ~{size}x):"
    );
    println!(
        "    fleet health / dpu health                 {:>8.1}x",
        ratio(&health_fleet, &dpu_health)
    );
    println!(
        "    fleet check  / dpu info                   {:>8.1}x",
        ratio(&check_fleet, &dpu_info)
    );
    println!(
        "  (medians of {FLEET_RUNS} fleet and {SINGLE_RUNS} single-node runs; \
         the \"all\" rows are one run each)"
    );
    drop(fleet);
    inventory_at_scale(out.path());
}

/// Targets in the large inventories.
const LARGE_INVENTORY: usize = 100_000;

/// `dpuctl fleet --inventory` on 100,000 targets (one bad key; all duplicates) against
/// Python's `tomllib` on the same files.
fn inventory_at_scale(dir: &Path) {
    use std::fmt::Write as _;
    let write = |name: &str, same_name: bool| {
        let mut text = String::with_capacity(LARGE_INVENTORY * 80);
        for i in 0..LARGE_INVENTORY {
            let name = if same_name { 0 } else { i };
            let _ = write!(
                text,
                "[[target]]\nname = \"gpu-{name}\"\nagent = \"tcp:10.{}.{}.{}:50051\"\n\n",
                i >> 16,
                (i >> 8) & 0xff,
                i & 0xff
            );
        }
        if !same_name {
            text.push_str("[[target]]\nname = \"last\"\nagent = \"unix:/s\"\nadress = \"x\"\n");
        }
        let path = dir.join(name);
        std::fs::write(&path, text).expect("write the inventory");
        path
    };
    let one_bad = write("one-bad-key.toml", false);
    let duplicates = write("duplicates.toml", true);
    println!("inventory of {LARGE_INVENTORY} targets (target: about 1 s)");
    println!(
        "  {:<44} {:>12} {:>12} {:>5}   summary",
        "run", "wall", "peak RSS", "exit"
    );
    for (label, path) in [
        ("one unknown key at the end", &one_bad),
        ("every name the same", &duplicates),
    ] {
        let path_text = path.display().to_string();
        let parsed = measure(
            &[
                "--timeout",
                TIMEOUT_S,
                "fleet",
                "--inventory",
                &path_text,
                "health",
            ],
            dir,
        );
        row(&format!("dpuctl fleet, {label}"), &parsed);
    }
    let python = std::env::var("DPU_BENCH_PYTHON").unwrap_or_else(|_| "python3".to_owned());
    let started = Instant::now();
    let loaded = Command::new(&python)
        .args([
            "-c",
            "import sys, tomllib; tomllib.load(open(sys.argv[1], 'rb'))",
        ])
        .arg(&one_bad)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status();
    match loaded {
        Ok(status) => println!(
            "  {:<44} {:>9.1} ms {:>12} {:>5}   (parse only, no validation)",
            "python3 tomllib.load, the same file",
            ms(started.elapsed()),
            "-",
            status.code().unwrap_or(-1)
        ),
        Err(e) => println!("  python3 tomllib: not run ({e})"),
    }
}
