//! Agent memory under attack, printed (not asserted): idle RSS, the peak after the
//! amplification request of issue 23 (20,000 × `{netdev:{}}` to `Counters.Snapshot`, four at
//! once, which the agent refuses before doing the work), and the peak under 200 concurrent
//! clients taking snapshots. Run by `.ci/run` so drift is visible run to run; the bounds
//! themselves are asserted in the hardening and mocked tiers.
//!
//! `cargo bench -p dpu-tests --bench agent_memory` (release build of the agent).

// A benchmark's job is to print its figures.
#![allow(clippy::print_stdout)]

use std::time::Instant;

use dpu_proto::v1::{self, counter_selector::Selector, counters_client::CountersClient};
use dpu_tests::fake_snap::FakeSnap;
use dpu_tests::fixture;
use dpu_tests::harness::{proc_status_kib, AgentOptions, AgentProcess};

/// Concurrent clients in the load scenario, and snapshots each.
const CLIENTS: usize = 200;
const SNAPSHOTS_PER_CLIENT: usize = 5;

fn kib(pid: u32, key: &str) -> u64 {
    proc_status_kib(pid, key).unwrap_or(0)
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
    });
}
