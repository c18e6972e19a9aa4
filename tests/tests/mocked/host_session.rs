//! The host side of `dpuctl` at process level: one agent connection per run (a counting
//! proxy sits between `dpuctl` and the agent and counts what it accepts), host objects
//! read under `--sys-root` and nowhere else, and `roce nccl-check -- CMD` judging a run
//! whose RDMA counters (fixture files the command itself rewrites) grew, stayed still or
//! reset.
//!
//! Every claim has its negative control: the proxy counts two connections when a client
//! dials twice and one more per further run; another `--sys-root` gives other host
//! objects; counters that grow agree, that barely move contradict, that go down are
//! inconclusive.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Output;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use dpu_proto::v1::{self, counters_client::CountersClient, storage_client::StorageClient};
use dpu_tests::command::{describe, stdout_json as json};
use dpu_tests::fixture;
use dpu_tests::harness::{dpuctl, unix_channel};
use dpu_tests::skip;
use serde_json::Value;
use tokio::net::{UnixListener, UnixStream};

use crate::Lab;

const HOST_NQN: &str = "nqn.2022-10.io.nvda.nvme:0";
const REMOTE_NQN: &str = "nqn.2016-06.io.spdk:cnode1";

/// A Unix socket that forwards every connection to the agent's socket and counts the
/// connections it accepted. Stops accepting when dropped.
struct CountingProxy {
    path: PathBuf,
    accepted: Arc<AtomicUsize>,
    task: tokio::task::JoinHandle<()>,
}

impl CountingProxy {
    /// Listens on `path` (inside a Tokio runtime) and pipes each connection to `upstream`.
    fn start(path: &Path, upstream: &Path) -> Self {
        let listener = UnixListener::bind(path).expect("bind the proxy socket");
        let accepted = Arc::new(AtomicUsize::new(0));
        let count = Arc::clone(&accepted);
        let upstream = upstream.to_owned();
        let task = tokio::spawn(async move {
            while let Ok((mut inbound, _)) = listener.accept().await {
                count.fetch_add(1, Ordering::SeqCst);
                let upstream = upstream.clone();
                tokio::spawn(async move {
                    if let Ok(mut outbound) = UnixStream::connect(&upstream).await {
                        let _ = tokio::io::copy_bidirectional(&mut inbound, &mut outbound).await;
                    }
                });
            }
        });
        Self {
            path: path.to_owned(),
            accepted,
            task,
        }
    }

    /// `unix:{path}`, for `dpuctl --agent`.
    fn endpoint(&self) -> String {
        format!("unix:{}", self.path.display())
    }

    /// Connections accepted so far.
    fn accepted(&self) -> usize {
        self.accepted.load(Ordering::SeqCst)
    }
}

impl Drop for CountingProxy {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Runs `dpuctl` on a blocking thread, so the proxy keeps forwarding meanwhile.
async fn dpuctl_async(args: &[&str]) -> Output {
    let args: Vec<String> = args.iter().map(|a| (*a).to_owned()).collect();
    tokio::task::spawn_blocking(move || {
        let refs: Vec<&str> = args.iter().map(String::as_str).collect();
        dpuctl(&refs)
    })
    .await
    .expect("the dpuctl thread")
}

fn utf8(path: &Path) -> &str {
    path.to_str().expect("utf-8 temp path")
}

/// A temp dir on a disk filesystem (tmpfs may refuse O_DIRECT), as `storage_read` uses.
pub(crate) fn disk_tempdir() -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix("dpuctl-prove-")
        .tempdir_in("/var/tmp")
        .or_else(|_| tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")))
        .expect("temp dir for the proof's device file")
}

/// The host fixture with `statistics/` on both of its netdevs, so the sysfs netdev reader
/// (what `--sys-root` selects) gives the proof host NICs to account.
pub(crate) fn host_root_with_netdev_stats() -> (tempfile::TempDir, PathBuf) {
    let (dir, root) = fixture::bluefield3_host_tempdir();
    fixture::host_netdev_statistics(&root).expect("netdev statistics");
    (dir, root)
}

/// Exposes a remote namespace through the fake SNAP: remote controller `disk0` (NVMe/RDMA)
/// with volume `volumes/disk0n1`, what `prove storage` needs on the agent.
pub(crate) fn expose_volume(lab: &Lab) {
    expose_volume_over(lab, "rdma");
}

/// As [`expose_volume`], the remote controller reached over `transport` (`rdma`, `tcp`).
pub(crate) fn expose_volume_over(lab: &Lab, transport: &str) {
    expose_volume_on(lab, transport, &["--pf", "0"]);
}

/// As [`expose_volume_over`], the emulated controller placed by `function` (`--pf 0`,
/// `--pci 03:00.2`).
pub(crate) fn expose_volume_on(lab: &Lab, transport: &str, function: &[&str]) {
    let endpoint = lab.agent.endpoint();
    let mut args = vec![
        "--agent",
        &endpoint,
        "storage",
        "expose",
        "--id",
        "disk0",
        "--transport",
        transport,
        "--traddr",
        "192.0.2.10",
        "--subnqn",
        REMOTE_NQN,
        "--nqn",
        HOST_NQN,
    ];
    args.extend(function);
    let out = dpuctl(&args);
    assert!(out.status.success(), "expose: {}", describe(&out));
}

/// The identities the agent reports for `volume`'s host disk (`Volume.host_identities`):
/// with the fake SNAP, the exposed namespace's UUID the agent derived.
pub(crate) async fn volume_host_uuid(lab: &Lab, volume: &str) -> String {
    let remotes = StorageClient::new(unix_channel(lab.agent.socket()).await)
        .list_remote_controllers(v1::ListRemoteControllersRequest::default())
        .await
        .expect("ListRemoteControllers")
        .into_inner()
        .remote_controllers;
    let found = remotes
        .iter()
        .flat_map(|r| r.status.iter().flat_map(|s| &s.volumes))
        .find(|v| v.name == volume)
        .unwrap_or_else(|| panic!("no {volume} in {remotes:#?}"));
    let identity = found
        .host_identities
        .iter()
        .find(|i| i.source.starts_with("namespace subsystems/"))
        .unwrap_or_else(|| panic!("{volume} reports no namespace identity: {found:#?}"));
    assert!(!identity.uuid.is_empty(), "{identity:#?}");
    identity.uuid.clone()
}

/// A loop device over `file` that each of `roots` says carries `uuid`: a real block
/// device the proof can bind and read. Err: why it cannot be had here (root and the loop
/// driver are needed).
pub(crate) fn identified_loop(
    file: &Path,
    uuid: &str,
    roots: &[&Path],
) -> Result<fixture::LoopDisk, String> {
    if !dpu_tests::running_as_root() {
        return Err("a loop device needs root".to_owned());
    }
    let disk = fixture::LoopDisk::attach(file)?;
    for root in roots {
        fixture::identify_disk(root, &disk.name, disk.dev, &[("uuid", uuid)])
            .map_err(|e| format!("identify {} under {}: {e}", disk.name, root.display()))?;
    }
    Ok(disk)
}

/// [`identified_loop`] shown, under each of `roots`, as the emulated namespace a host sees
/// through the fake SNAP's PF 0 (PCI function 0000:03:00.2, where [`expose_volume`] puts
/// the controller): the disk the proof binds to a volume by identity and path.
pub(crate) fn emulated_loop(
    file: &Path,
    uuid: &str,
    roots: &[&Path],
) -> Result<fixture::LoopDisk, String> {
    let disk = identified_loop(file, uuid, roots)?;
    for root in roots {
        place_on_function(root, &disk.name, "0000:03:00.2");
    }
    Ok(disk)
}

/// Shows disk `name` under `host_root` as the host's sysfs shows an emulated namespace: its
/// controller's device is PCI function `function` (`0000:bb:dd.f`).
pub(crate) fn place_on_function(host_root: &Path, name: &str, function: &str) {
    fixture::place_disk_on_function(host_root, name, function).expect("place the disk");
}

/// The report's lines on `side`, as (source, object) pairs.
fn objects(report: &Value, side: &str) -> BTreeSet<(String, String)> {
    lines(report)
        .iter()
        .filter(|l| l["expectation"]["select"]["side"] == side)
        .flat_map(|l| {
            let select = &l["expectation"]["select"];
            let source = select["source"].as_str().unwrap_or_default().to_owned();
            select["objects"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|o| o.as_str())
                .map(move |o| (source.clone(), o.to_owned()))
                .collect::<Vec<_>>()
        })
        .collect()
}

fn lines(report: &Value) -> &[Value] {
    report["lines"].as_array().map_or(&[][..], Vec::as_slice)
}

fn pairs(list: &[(&str, &str)]) -> BTreeSet<(String, String)> {
    list.iter()
        .map(|(s, o)| ((*s).to_owned(), (*o).to_owned()))
        .collect()
}

/// The one line named `name`.
fn line<'a>(report: &'a Value, name: &str) -> &'a Value {
    lines(report)
        .iter()
        .find(|l| l["expectation"]["name"] == name)
        .unwrap_or_else(|| panic!("no line {name:?} in {report:#}"))
}

/// `prove storage` through the counting proxy: the whole proof (ListRemoteControllers and
/// four Counters.Snapshot calls: idle start and end, before, after) is one connection, and the
/// host lines name exactly the objects of the `--sys-root` tree. The controls: two dials
/// are counted as two; a second run adds exactly one; a different `--sys-root` (the DPU
/// fixture, whose netdevs are `p0`, `pf0hpf`, ...) changes the host objects to its own.
///
/// The verdict is NOT PROVEN, and that is what the fake can justify: SNAP counts no read
/// on the volume (nothing reads through an emulated controller here) and the DPU
/// fixture's RDMA counters do not move, so the DPU lines are not met, while the host's
/// fixture counters stay still, so the host lines are met.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn prove_storage_reads_the_sys_root_through_one_agent_connection() {
    let lab = Lab::start();
    expose_volume(&lab);
    let proxy_dir = tempfile::tempdir().expect("tempdir");
    let proxy = CountingProxy::start(&proxy_dir.path().join("proxy.sock"), lab.agent.socket());

    // Control: the proxy counts each dial. Two channels, one call each: two connections.
    for _ in 0..2 {
        CountersClient::new(unix_channel(&proxy.path).await)
            .snapshot(v1::SnapshotRequest::default())
            .await
            .expect("Snapshot through the proxy");
    }
    assert_eq!(proxy.accepted(), 2, "two channels are two connections");

    let disk = disk_tempdir();
    let file = disk.path().join("device.bin");
    let data: Vec<u8> = (0..1usize << 20).map(|i| (i * 13 % 251) as u8).collect();
    std::fs::write(&file, &data).expect("write the device file");
    let (_host_dir, host_root) = host_root_with_netdev_stats();
    let (_other_dir, other_root) = fixture::bluefield3_tempdir();
    let uuid = volume_host_uuid(&lab, "volumes/disk0n1").await;
    let loop_disk = match emulated_loop(&file, &uuid, &[&host_root, &other_root]) {
        Ok(disk) => disk,
        Err(why) => skip!("the proof binds a real block device: {why}"),
    };
    let device = loop_disk.path.clone();
    let endpoint = proxy.endpoint();
    let prove = |sys_root: PathBuf| {
        let endpoint = endpoint.clone();
        let device = device.clone();
        async move {
            dpuctl_async(&[
                "--agent",
                &endpoint,
                "--sys-root",
                utf8(&sys_root),
                "-o",
                "json",
                "prove",
                "storage",
                "--volume",
                "disk0n1",
                "--device",
                utf8(&device),
                "--size",
                "1m",
                "--bs",
                "64k",
                "--iodepth",
                "4",
                "--idle",
                "0.1",
                // One window: this test counts the proof's snapshots (four).
                "--trials",
                "1",
            ])
            .await
        }
    };

    let before = proxy.accepted();
    let iostat_before = lab.snap.requests_of("bdev_get_iostat").len();
    let out = prove(host_root.clone()).await;
    let iostat_calls = lab.snap.requests_of("bdev_get_iostat").len() - iostat_before;
    eprintln!(
        "DEBUG iostat calls {iostat_calls} total requests {:?}",
        lab.snap
            .requests()
            .iter()
            .map(|r| r.0.clone())
            .collect::<Vec<_>>()
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    if out.status.code() == Some(2) && (stderr.contains("O_DIRECT") || stderr.contains("io_uring"))
    {
        skip!("the proof's read needs O_DIRECT and io_uring here: {stderr}");
    }
    assert_eq!(
        proxy.accepted() - before,
        1,
        "the whole proof is one agent connection: {}",
        describe(&out)
    );
    let report = json(&out);
    assert_eq!(out.status.code(), Some(1), "{report:#}\n{stderr}");
    // And that connection carried the whole measurement: one volume reading per
    // Counters.Snapshot (idle start, idle end, before, after) reached SNAP.
    assert_eq!(iostat_calls, 4, "four snapshots of the volume: {report:#}");
    assert_eq!(report["proof"], "storage");
    assert_eq!(report["verdict"], "NOT_PROVEN", "{report:#}");
    assert!(
        report["notes"].as_array().into_iter().flatten().any(|n| n
            .as_str()
            .is_some_and(|n| n.contains(utf8(&device)) && n.contains("read 1048576 bytes"))),
        "the read ran on --device: {report:#}"
    );

    // Host lines: the host fixture's objects, and only those (this machine's own
    // interfaces and RDMA devices would show here if / were read).
    assert_eq!(
        objects(&report, "host"),
        pairs(&[
            ("netdev", "netdevs/ens1f0np0"),
            ("netdev", "netdevs/ens1f1np1"),
            ("rdma", "rdmaDevices/mlx5_0/ports/1"),
            ("rdma", "rdmaDevices/mlx5_1/ports/1"),
        ]),
        "{report:#}"
    );
    for name in [
        "host NICs did not carry the data",
        "host RDMA ports did not carry the data",
    ] {
        let l = line(&report, name);
        assert_eq!(l["delta"], 0, "the fixture's counters stay still: {l:#}");
        assert_eq!(l["outcome"]["result"], "met", "{l:#}");
    }
    // DPU lines: what the agent (through the proxy) reported.
    assert_eq!(
        objects(&report, "dpu"),
        pairs(&[
            ("volume", "volumes/disk0n1"),
            ("rdma", "rdmaDevices/mlx5_0/ports/1"),
        ]),
        "{report:#}"
    );
    let served = line(&report, "DPU volumes/disk0n1 served the read");
    assert_eq!(
        served["delta"], 0,
        "the fake SNAP counted no read: {served:#}"
    );
    assert_eq!(served["outcome"]["result"], "not_met", "{served:#}");
    let uplink = line(&report, "DPU RDMA ports received the data");
    assert_eq!(
        uplink["delta"], 0,
        "the DPU fixture's port is still: {uplink:#}"
    );
    assert_eq!(uplink["outcome"]["result"], "not_met", "{uplink:#}");

    // Control: another --sys-root, other host objects; one more run, one more connection.
    let before = proxy.accepted();
    let out = prove(other_root).await;
    assert_eq!(proxy.accepted() - before, 1, "{}", describe(&out));
    let other = json(&out);
    assert_eq!(out.status.code(), Some(1), "{other:#}");
    let host = objects(&other, "host");
    assert_eq!(
        host,
        pairs(&[
            ("netdev", "netdevs/oob_net0"),
            ("netdev", "netdevs/p0"),
            ("netdev", "netdevs/pf0hpf"),
            ("netdev", "netdevs/pf0vf0"),
            ("rdma", "rdmaDevices/mlx5_0/ports/1"),
        ]),
        "{other:#}"
    );
    assert!(
        host.iter().all(|(_, o)| !o.contains("ens1f")),
        "nothing of the first tree: {host:?}"
    );
    let nics = line(&other, "host NICs did not carry the data");
    assert_eq!(
        nics["before"],
        (1_000_000_000_u64..).step_by(1_000).take(4).sum::<u64>(),
        "the DPU fixture's rx_bytes, read from the other tree: {nics:#}"
    );
}

/// `dpuctl check` with an agent: the host checks read `--sys-root`, the agent checks
/// (reachable, consistent, MTU) go through one session, so one connection.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn check_reads_host_and_agent_facts_through_one_connection() {
    let lab = Lab::start();
    let proxy_dir = tempfile::tempdir().expect("tempdir");
    let proxy = CountingProxy::start(&proxy_dir.path().join("proxy.sock"), lab.agent.socket());
    let (_host_dir, host_root) = fixture::bluefield3_host_tempdir();
    let endpoint = proxy.endpoint();
    let out = dpuctl_async(&[
        "-o",
        "json",
        "--sys-root",
        utf8(&host_root),
        "--agent",
        &endpoint,
        "check",
    ])
    .await;
    let results = json(&out);
    let status = |id: &str| {
        results
            .as_array()
            .into_iter()
            .flatten()
            .find(|r| r["id"] == id)
            .map(|r| r["status"].as_str().unwrap_or_default().to_owned())
            .unwrap_or_else(|| panic!("no {id} in {results:#}"))
    };
    // Facts from both sides: the host fixture's narrow link, the agent's card and MTU.
    assert_eq!(status("pcie.link"), "fail");
    assert_eq!(status("agent.reachable"), "pass");
    assert_eq!(
        status("agent.consistent"),
        "fail",
        "another card's firmware"
    );
    assert_eq!(status("agent.mtu"), "pass");
    assert_eq!(proxy.accepted(), 1, "{results:#}");
}

/// `roce nccl-check -- CMD` on a one-port fixture: CMD (a test-built `sh -c`) rewrites the
/// port's packet counters as the collective would have moved them and prints a NET/IB
/// line. Returns the exit code and the JSON report.
fn nccl_check_run(xmit_after: u64, rcv_after: u64) -> (Option<i32>, Value, String) {
    nccl_check_run_printing("", xmit_after, rcv_after)
}

/// [`nccl_check_run`] whose command also prints `table` (nccl-tests' results) after the
/// NCCL lines.
fn nccl_check_run_printing(
    table: &str,
    xmit_after: u64,
    rcv_after: u64,
) -> (Option<i32>, Value, String) {
    let (_dir, root) = fixture::single_rdma_port_tempdir();
    let counters = root.join("sys/class/infiniband/mlx5_0/ports/1/counters");
    let log = format!(
        "node1:1:1 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/RoCE [RO]; OOB eth0:10.0.0.1<0>\n\
         node1:1:9 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[0] [send] via NET/IB/0/GDRDMA\n\
         {table}"
    );
    let script =
        "printf '%s\\n' \"$3\" > \"$1\" && printf '%s\\n' \"$4\" > \"$2\" && printf '%s\\n' \"$5\"";
    let (xmit, rcv) = (xmit_after.to_string(), rcv_after.to_string());
    let out = dpuctl(&[
        "--sys-root",
        utf8(&root),
        "-o",
        "json",
        "roce",
        "nccl-check",
        "--",
        "sh",
        "-c",
        script,
        "sh",
        utf8(&counters.join("port_xmit_packets")),
        utf8(&counters.join("port_rcv_packets")),
        &xmit,
        &rcv,
        &log,
    ]);
    let report = json(&out);
    assert_eq!(report["transport"], "NET/IB", "{report:#}");
    assert_eq!(report["command_exit"], 0, "{report:#}");
    assert_eq!(
        report["ib_devices"],
        serde_json::json!(["mlx5_0:1/RoCE"]),
        "{report:#}"
    );
    // The command really rewrote the fixture's files.
    let written = std::fs::read_to_string(counters.join("port_xmit_packets")).expect("read");
    assert_eq!(written.trim(), xmit);
    (
        out.status.code(),
        report,
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// The fixture starts at 5000 sent and 7000 received packets.
#[test]
fn nccl_check_agrees_when_the_rdma_port_carried_the_run() {
    let (code, report, stderr) = nccl_check_run(5_000 + 600, 7_000 + 400);
    assert_eq!(code, Some(0), "{report:#}\n{stderr}");
    let c = &report["counters"];
    assert_eq!(c["verdict"], "agrees", "{report:#}");
    assert_eq!(c["packets"], 1_000, "{report:#}");
    assert_eq!(c["ports"], serde_json::json!([["mlx5_0/1", 1_000]]));
}

/// A 1 GiB all-reduce 20 times (21.5 GB of bus bytes by nccl-tests' own numbers) with the
/// port's counters 50,000 packets up: enough for the fixed threshold, 50 times too few for
/// this run. Exit 1, the contradiction naming both numbers; the negative control, the
/// same run with the packets it needs, agrees (issue 31: thresholds scaled by the bytes).
#[test]
fn nccl_check_holds_a_large_run_to_the_packets_it_needs() {
    let table = "\
# nThread 1 nGpus 1 minBytes 1073741824 maxBytes 1073741824 step: 2(factor) warmup iters: 5 iters: 20 agg iters: 1 validation: 1 graph: 0
#       size         count      type   redop    root     time   algbw   busbw  #wrong     time   algbw   busbw  #wrong
#        (B)    (elements)                               (us)  (GB/s)  (GB/s)             (us)  (GB/s)  (GB/s)
  1073741824     268435456     float     sum      -1    53687   20.00   20.00       0    53687   20.00   20.00       0
# Avg bus bandwidth    : 20.00
";
    // 2 x 20.00 GB/s x 53687 us x 20 = 42,949,600,000 bus bytes: 5,242,871 packets at the
    // floor (half, 4096 bytes each).
    let (code, report, stderr) = nccl_check_run_printing(table, 5_000 + 30_000, 7_000 + 20_000);
    assert_eq!(code, Some(1), "{report:#}\n{stderr}");
    let c = &report["counters"];
    assert_eq!(c["verdict"], "contradicts", "{report:#}");
    assert_eq!(c["floor"]["bus_bytes"], 42_949_600_000_u64, "{report:#}");
    assert_eq!(c["floor"]["packets"], 5_242_871, "{report:#}");
    let reason = c["reason"].as_str().unwrap_or_default();
    assert!(
        reason.contains("5242871") && reason.contains("only 50000"),
        "{reason}"
    );
    let (code, report, stderr) =
        nccl_check_run_printing(table, 5_000 + 3_000_000, 7_000 + 2_300_000);
    assert_eq!(code, Some(0), "{report:#}\n{stderr}");
    assert_eq!(report["counters"]["verdict"], "agrees", "{report:#}");
}

/// A counter that went down during the run (driver reload, link recreated) leaves the
/// packet count unknown: exit 3, not "the port stayed still" and not a huge wrapped delta,
/// even though the other counter grew by far more than a collective needs.
#[test]
fn nccl_check_is_inconclusive_when_an_rdma_counter_resets_during_the_run() {
    for (xmit, rcv, what) in [
        (12, 7_000 + 100_000, "port_xmit_packets"),
        (5_000 + 100_000, 3, "port_rcv_packets"),
        (0, 0, "port_xmit_packets"),
    ] {
        let (code, report, stderr) = nccl_check_run(xmit, rcv);
        assert_eq!(code, Some(3), "{report:#}\n{stderr}");
        let c = &report["counters"];
        assert_eq!(c["verdict"], "inconclusive", "{report:#}");
        assert_eq!(c["packets"], Value::Null, "no count invented: {report:#}");
        let reason = c["reason"].as_str().unwrap_or_default();
        assert!(
            reason.contains("reset") && reason.contains(what),
            "the reason names the reset counter {what}: {reason}"
        );
        assert!(stderr.contains(reason), "stderr says why: {stderr}");
    }
}

/// Between "still" and "carried a collective" (200–999 packets) the counters neither
/// confirm nor deny NET/IB: exit 3, never the success it used to be (issue 31 §6).
#[test]
fn nccl_check_is_inconclusive_when_the_counters_cannot_tell() {
    for (xmit, rcv) in [(5_000 + 150, 7_000 + 150), (5_000 + 500, 7_000 + 499)] {
        let (code, report, stderr) = nccl_check_run(xmit, rcv);
        assert_eq!(code, Some(3), "{report:#}\n{stderr}");
        assert_eq!(report["counters"]["verdict"], "unknown", "{report:#}");
        assert!(stderr.contains("too few to confirm"), "{stderr}");
    }
}

/// NET/IB while the port moved fewer than 200 packets: the data went elsewhere, exit 1.
#[test]
fn nccl_check_contradicts_net_ib_when_the_rdma_port_barely_moved() {
    for (xmit, rcv) in [(5_000, 7_000), (5_000 + 100, 7_000 + 99)] {
        let (code, report, stderr) = nccl_check_run(xmit, rcv);
        assert_eq!(code, Some(1), "{report:#}\n{stderr}");
        let c = &report["counters"];
        assert_eq!(c["verdict"], "contradicts", "{report:#}");
        assert_eq!(c["packets"], xmit + rcv - 12_000, "{report:#}");
        assert!(
            c["reason"]
                .as_str()
                .is_some_and(|r| r.contains("NET/IB") && r.contains("moved only")),
            "{report:#}"
        );
        assert!(stderr.contains("contradict"), "{stderr}");
    }
}
