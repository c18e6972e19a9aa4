//! I/O statistics: after a real read through the DPU's SPDK, the agent's numbers are
//! SPDK's `bdev_get_iostat` numbers, in `GetIoStats` and in a counter snapshot.

use dpu_proto::v1;
use dpu_tests::spdk::{export_bdev, perf_read, REMOTE_NQN};
use serde_json::Value;

use crate::{bench, json_u64, ok, spdk_reads};

/// The subsystem the DPU's SPDK exports r0n1 in, for spdk_nvme_perf to read through.
const EXPORT_NQN: &str = "nqn.2016-06.io.spdk:dpu-r0n1";
/// What perf reads: 256 reads of 4 KiB.
const IO_SIZE: u64 = 4096;
const READS: u64 = 256;

/// The `bytes_read` sample of `volumes/r0n1` in a `dpuctl -o json dpu counters` snapshot.
fn volume_bytes_read(snapshot: &Value) -> u64 {
    let samples = snapshot["samples"].as_array().expect("samples");
    let sample = samples
        .iter()
        .find(|s| s["object"] == "volumes/r0n1" && s["counter"] == "bytes_read")
        .unwrap_or_else(|| panic!("no bytes_read sample of volumes/r0n1: {snapshot}"));
    assert_eq!(sample["source"], "volume", "{sample}");
    json_u64(&sample["value"])
}

/// Asserts `low <= value <= high`.
fn between(what: &str, low: u64, value: u64, high: u64) {
    assert!(
        low <= value && value <= high,
        "{what}: the agent said {value}, SPDK said {low} before and {high} after"
    );
}

#[tokio::test]
async fn io_stats_equal_spdk_iostat_after_a_real_read() {
    let bench = bench!();
    let text = ok(&bench.attach("r0", "127.0.0.1", bench.remote.port(), REMOTE_NQN, &[]));
    assert!(text.contains("volumes/r0n1"), "{text}");
    let port = export_bdev(&bench.dpu, "r0n1", EXPORT_NQN).unwrap_or_else(|e| panic!("{e}"));

    let (start_bytes, _) = spdk_reads(&bench.dpu, "r0n1");
    let perf = perf_read(port, EXPORT_NQN, IO_SIZE, READS).unwrap_or_else(|e| panic!("{e}"));
    eprintln!("{}\n{}", perf.command.join(" "), perf.output);

    let (before_bytes, before_ops) = spdk_reads(&bench.dpu, "r0n1");
    assert!(
        before_bytes - start_bytes >= perf.bytes(),
        "SPDK counted {} bytes read during perf's {} bytes",
        before_bytes - start_bytes,
        perf.bytes()
    );

    // GetIoStats through the generated client and through dpuctl.
    let grpc = bench
        .storage()
        .await
        .get_io_stats(v1::GetIoStatsRequest {
            name: "volumes/r0n1".to_owned(),
        })
        .await
        .unwrap_or_else(|e| panic!("GetIoStats volumes/r0n1: {e:?}\n{}", bench.logs()))
        .into_inner();
    let stats = bench.ctl_json(&["storage", "stats", "volumes/r0n1"]);
    let snapshot = bench.ctl_json(&["dpu", "counters", "-s", "volume"]);
    let one = bench.ctl_json(&["dpu", "counters", "-s", "volume:r0n1"]);
    let (after_bytes, after_ops) = spdk_reads(&bench.dpu, "r0n1");
    // Nothing reads r0n1 after perf, so "between" is "exactly SPDK's bytes".
    assert_eq!(
        (before_bytes, before_ops),
        (after_bytes, after_ops),
        "SPDK's counters moved while the agent was asked"
    );
    eprintln!(
        "SPDK bdev_get_iostat r0n1: {after_bytes} bytes in {after_ops} reads; agent \
         GetIoStats: {} bytes in {} reads",
        grpc.bytes_read, grpc.read_ops
    );

    between(
        "GetIoStats bytes_read",
        before_bytes,
        grpc.bytes_read,
        after_bytes,
    );
    between("GetIoStats read_ops", before_ops, grpc.read_ops, after_ops);
    let cli_bytes = json_u64(&stats["bytesRead"]);
    let cli_ops = json_u64(&stats["readOps"]);
    between(
        "dpuctl storage stats bytesRead",
        before_bytes,
        cli_bytes,
        after_bytes,
    );
    between(
        "dpuctl storage stats readOps",
        before_ops,
        cli_ops,
        after_ops,
    );
    between(
        "dpuctl dpu counters -s volume",
        before_bytes,
        volume_bytes_read(&snapshot),
        after_bytes,
    );
    between(
        "dpuctl dpu counters -s volume:r0n1",
        before_bytes,
        volume_bytes_read(&one),
        after_bytes,
    );
    // Nothing wrote to r0n1.
    assert_eq!(grpc.bytes_written, 0, "{grpc:?}");
}
