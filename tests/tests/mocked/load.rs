//! Many clients at once: 500 concurrent connections hammer counter snapshots and listings
//! for a bounded time. Every call must succeed, and the agent's peak memory stays
//! bounded. The figures (calls, calls per second, peak RSS) are printed; timings are not
//! asserted (they belong to benchmarks), memory and failures are.

use std::time::{Duration, Instant};

use dpu_proto::v1;
use dpu_tests::harness::unix_channel;

use super::Lab;

const CLIENTS: usize = 500;
const RUN_FOR: Duration = Duration::from_secs(8);
/// Peak resident memory the agent may reach under this load.
const MAX_PEAK_RSS_KIB: u64 = 512 * 1024;

fn status_kib(pid: u32, key: &str) -> u64 {
    dpu_tests::harness::proc_status_kib(pid, key).unwrap_or(0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn five_hundred_clients_get_every_answer_within_bounded_memory() {
    let lab = Lab::start();
    let pid = lab.agent.pid();
    let rss_before = status_kib(pid, "VmRSS:");
    let socket = lab.agent.socket().to_path_buf();
    let start = Instant::now();
    let mut tasks = tokio::task::JoinSet::new();
    for i in 0..CLIENTS {
        let socket = socket.clone();
        tasks.spawn(async move {
            let channel = unix_channel(&socket).await;
            let mut counters = v1::counters_client::CountersClient::new(channel.clone());
            let mut storage = v1::storage_client::StorageClient::new(channel.clone());
            let mut inventory = v1::inventory_client::InventoryClient::new(channel);
            let (mut ok, mut failed) = (0u64, Vec::new());
            let mut n = i;
            while start.elapsed() < RUN_FOR {
                let result = match n % 3 {
                    0 => counters
                        .snapshot(v1::SnapshotRequest::default())
                        .await
                        .map(drop),
                    1 => storage
                        .list_exposures(v1::ListExposuresRequest::default())
                        .await
                        .map(drop),
                    _ => inventory
                        .list_netdevs(v1::ListNetdevsRequest::default())
                        .await
                        .map(drop),
                };
                match result {
                    Ok(()) => ok += 1,
                    Err(status) => failed.push(status),
                }
                n += 1;
            }
            (ok, failed)
        });
    }
    let (mut calls, mut failures) = (0u64, Vec::new());
    while let Some(done) = tasks.join_next().await {
        let (ok, failed) = done.expect("client task");
        calls += ok;
        failures.extend(failed);
    }
    let elapsed = start.elapsed().as_secs_f64();
    let peak = status_kib(pid, "VmHWM:");
    eprintln!(
        "load: {CLIENTS} clients, {calls} calls in {elapsed:.1} s ({:.0}/s), {} failed; \
         agent RSS {rss_before} KiB before, peak {peak} KiB",
        calls as f64 / elapsed,
        failures.len()
    );
    assert!(
        failures.is_empty(),
        "{} calls failed, first: {:?}",
        failures.len(),
        failures.first()
    );
    assert!(
        calls >= CLIENTS as u64,
        "every client got at least one answer: {calls}"
    );
    assert!(
        peak > 0 && peak < MAX_PEAK_RSS_KIB,
        "agent peak RSS {peak} KiB"
    );
}
