//! Agent memory under attack, printed (not asserted): idle RSS, the peak after the
//! amplification request of issue 23 (20,000 × `{netdev:{}}` to `Counters.Snapshot`, four at
//! once, which the agent refuses before doing the work), and the peak under 200 concurrent
//! clients taking snapshots. Run by `.ci/run` so drift is visible run to run; the bounds
//! themselves are asserted in the hardening and mocked tiers.
//!
//! The same idle figures are printed for the agent with 16 runtime workers
//! (`TOKIO_WORKER_THREADS=16`, what a BlueField-3's 16 Arm cores would give an uncapped
//! runtime), so the cost of threads shows on a 2-core machine, and the size of the
//! stripped aarch64 binary when `DPU_TEST_AARCH64_BIN_DIR` names the cross build (as in
//! `.ci/run`). Targets (issue 24): idle RSS ≤ 16 MiB, stripped aarch64 binary ≤ 12 MiB.
//!
//! `cargo bench -p dpu-tests --bench agent_memory` (release build of the agent).

// A benchmark's job is to print its figures.
#![allow(clippy::print_stdout)]

use std::path::Path;
use std::process::Command;
use std::time::Instant;

use dpu_proto::v1::{self, counter_selector::Selector, counters_client::CountersClient};
use dpu_tests::fake_snap::FakeSnap;
use dpu_tests::fixture;
use dpu_tests::harness::{proc_status_kib, AgentOptions, AgentProcess};

/// Concurrent clients in the load scenario, and snapshots each.
const CLIENTS: usize = 200;
const SNAPSHOTS_PER_CLIENT: usize = 5;

/// Idle RSS target, KiB (16 MiB).
const IDLE_RSS_TARGET_KIB: u64 = 16 * 1024;
/// Stripped aarch64 binary target, bytes (12 MiB).
const ARM_BINARY_TARGET: u64 = 12 * 1024 * 1024;

fn kib(pid: u32, key: &str) -> u64 {
    proc_status_kib(pid, key).unwrap_or(0)
}

fn met(ok: bool) -> &'static str {
    if ok {
        "met"
    } else {
        "NOT MET"
    }
}

/// The agent's threads and idle RSS after one snapshot, with `workers` runtime threads
/// (`None`: the runtime's default, one per CPU).
fn idle_footprint(workers: Option<usize>) -> (u64, u64) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let (dir, root) = fixture::bluefield3_tempdir();
    let mut options = AgentOptions::new(dir.path(), &root);
    options.log_level = "info";
    if let Some(workers) = workers {
        options.wrapper = vec![
            "env".into(),
            format!("TOKIO_WORKER_THREADS={workers}").into(),
        ];
    }
    let _snap = FakeSnap::start(&options.snap_socket).expect("fake SNAP");
    let agent = AgentProcess::start(&options);
    runtime.block_on(async {
        CountersClient::new(agent.channel().await)
            .snapshot(v1::SnapshotRequest::default())
            .await
            .expect("snapshot");
    });
    let pid = agent.pid();
    // `Threads:` is a count, not KiB; the same reader parses it.
    (kib(pid, "Threads:"), kib(pid, "VmRSS:"))
}

/// The size of `binary` stripped of every symbol, by the cross toolchain's `strip`.
fn stripped_size(binary: &Path, strip: &str) -> Result<u64, String> {
    let out = std::env::temp_dir().join(format!("dpu-agent-stripped-{}", std::process::id()));
    let status = Command::new(strip)
        .arg("-o")
        .arg(&out)
        .arg(binary)
        .status()
        .map_err(|e| format!("{strip}: {e}"))?;
    if !status.success() {
        return Err(format!("{strip} failed on {}", binary.display()));
    }
    let size = std::fs::metadata(&out).map_err(|e| e.to_string())?.len();
    let _ = std::fs::remove_file(&out);
    Ok(size)
}

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let (dir, root) = fixture::bluefield3_tempdir();
    let mut options = AgentOptions::new(dir.path(), &root);
    // As deployed: debug logging would be part of what is measured.
    options.log_level = "info";
    let _snap = FakeSnap::start(&options.snap_socket).expect("fake SNAP");
    let agent = AgentProcess::start(&options);
    let pid = agent.pid();
    runtime.block_on(async {
        let mut counters = CountersClient::new(agent.channel().await);
        counters
            .snapshot(v1::SnapshotRequest::default())
            .await
            .expect("snapshot");
        let idle = kib(pid, "VmRSS:");
        let peak_idle = kib(pid, "VmHWM:");

        let repeated = v1::SnapshotRequest {
            selectors: vec![
                v1::CounterSelector {
                    selector: Some(Selector::Netdev(v1::NetdevSelector {
                        ifname: String::new(),
                    })),
                };
                20_000
            ],
        };
        let started = Instant::now();
        let mut calls = tokio::task::JoinSet::new();
        for _ in 0..4 {
            let (mut client, request) = (counters.clone(), repeated.clone());
            calls.spawn(async move { client.snapshot(request).await.map(drop) });
        }
        let mut refused = 0;
        while let Some(done) = calls.join_next().await {
            refused += usize::from(done.expect("join").is_err());
        }
        let amplification = started.elapsed();
        let peak_attack = kib(pid, "VmHWM:");

        let started = Instant::now();
        let mut calls = tokio::task::JoinSet::new();
        for _ in 0..CLIENTS {
            let mut client = counters.clone();
            calls.spawn(async move {
                for _ in 0..SNAPSHOTS_PER_CLIENT {
                    client
                        .snapshot(v1::SnapshotRequest::default())
                        .await
                        .expect("snapshot under load");
                }
            });
        }
        while let Some(done) = calls.join_next().await {
            done.expect("join");
        }
        let load = started.elapsed();
        let peak_load = kib(pid, "VmHWM:");

        println!("agent memory (KiB)                          value");
        println!("  idle RSS after one snapshot               {idle}");
        println!("  peak before the attack                    {peak_idle}");
        println!(
            "  peak after 4 x 20,000-selector Snapshot   {peak_attack} (+{}; {refused}/4 refused in {amplification:.2?})",
            peak_attack.saturating_sub(peak_idle)
        );
        println!(
            "  peak after {CLIENTS} clients x {SNAPSHOTS_PER_CLIENT} snapshots    {peak_load} (+{}; {:.2?})",
            peak_load.saturating_sub(peak_idle),
            load
        );
        println!(
            "  idle RSS target <= {IDLE_RSS_TARGET_KIB} KiB: {}",
            met(idle <= IDLE_RSS_TARGET_KIB)
        );
    });
    drop(agent);
    for workers in [None, Some(16)] {
        let (threads, rss) = idle_footprint(workers);
        let label = workers.map_or("default workers".to_owned(), |w| format!("{w} workers"));
        println!(
            "  idle, {label:<16} {threads:>3} threads, RSS {rss} KiB  [target <= {IDLE_RSS_TARGET_KIB}: {}]",
            met(rss <= IDLE_RSS_TARGET_KIB)
        );
    }
    match std::env::var_os("DPU_TEST_AARCH64_BIN_DIR") {
        Some(dir) => match stripped_size(
            &Path::new(&dir).join("dpu-agent"),
            "aarch64-linux-gnu-strip",
        ) {
            Ok(size) => println!(
                "  aarch64 dpu-agent stripped: {size} bytes ({:.1} MiB)  [target <= 12 MiB: {}]",
                size as f64 / (1024.0 * 1024.0),
                met(size <= ARM_BINARY_TARGET)
            ),
            Err(e) => println!("  aarch64 dpu-agent stripped: not measured: {e}"),
        },
        None => println!(
            "  aarch64 dpu-agent stripped: not measured (DPU_TEST_AARCH64_BIN_DIR is not set)"
        ),
    }
}
