//! Samples from docs/reference/rdma-bluefield.md §3.3/§3.4 (header and message formats
//! from nccl-tests and NCCL source; numbers illustrative).

use super::*;
use crate::roce::nccl::transport::{scan_transport, NcclTransport, TransportVerdict};

/// Current nccl-tests (`#wrong`, `root`), with NCCL INFO lines interleaved and the footer.
pub(crate) const ALL_REDUCE_CURRENT: &str = "\
# nThread 1 nGpus 1 minBytes 8 maxBytes 134217728 step: 2(factor) warmup iters: 5 iters: 20
#  Rank  0 Group  0 Pid  12345 on     node1 device  0 [0x17] NVIDIA H100
node1:12345:12345 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/RoCE [RO]; OOB eth0:10.0.0.1<0>
#
#                                                              out-of-place                       in-place
#       size         count      type   redop    root     time   algbw   busbw  #wrong     time   algbw   busbw  #wrong
#        (B)    (elements)                               (us)  (GB/s)  (GB/s)             (us)  (GB/s)  (GB/s)
           8             2     float     sum      -1    27.21    0.00    0.00       0    26.80    0.00    0.00       0
   134217728      33554432     float     sum      -1   2874.1   46.70   46.70     N/A   2870.3   46.76   46.76     N/A
# Out of bounds values : 0 OK
# Avg bus bandwidth    : 23.3512 
#
# Collective test concluded: all_reduce_perf
";

/// Older releases: `error` instead of `#wrong`, no `root` column (nccl #229 layout).
pub(crate) const ALL_REDUCE_OLD: &str = "\
#                                                     out-of-place                       in-place
#       size         count    type   redop     time   algbw   busbw  error     time   algbw   busbw  error
#        (B)    (elements)                     (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)
     1048576        262144   float     sum    493.2    2.13    3.19  5e-07    489.1    2.14    3.21  5e-07
# Avg bus bandwidth    : 3.2 OK
";

/// §3.4: an IB/RoCE run (init line and channel lines).
pub(super) const LOG_IB: &str = "\
node1:1:1 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/RoCE [1]mlx5_1:1/RoCE [RO]; OOB eth0:10.0.0.1<0>
node1:1:1 [0] NCCL INFO Using network IB
node1:1:9 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[0] [send] via NET/IB/0/GDRDMA
node1:1:9 [0] NCCL INFO Channel 00/0 : 1[0] -> 0[0] [receive] via NET/IB/0(3)/GDRDMA/Shared
node1:1:9 [0] NCCL INFO Channel 01/0 : 0[0] -> 0[1] via P2P/IPC
";

/// §3.4: the silent Socket fallback (no verbs library in the container).
pub(super) const LOG_SOCKET: &str = "\
node1:1:1 [0] NCCL INFO Count not open libibverbs.so
node1:1:1 [0] NCCL INFO NET/IB : No device found.
node1:1:1 [0] NCCL INFO NET/Socket : Using [0]eth0:10.0.0.1<0>
node1:1:1 [0] NCCL INFO Using network Socket
node1:1:9 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[0] [send] via NET/Socket/0
";

#[test]
fn current_table_with_footer_and_interleaved_log() {
    let r = parse_results(ALL_REDUCE_CURRENT).expect("parses");
    assert_eq!(r.rows.len(), 2);
    assert_eq!(r.avg_busbw_gbps, Some(23.3512));
    let last = &r.rows[1];
    assert_eq!(
        (last.size, last.count, last.root),
        (134_217_728, 33_554_432, Some(-1))
    );
    assert_eq!((last.dtype.as_str(), last.redop.as_str()), ("float", "sum"));
    assert_eq!(last.out_of_place.busbw_gbps, 46.70);
    assert_eq!(last.in_place.time_us, 2870.3);
    assert_eq!(last.in_place.check, NcclCheck::NotChecked);
    assert_eq!(r.rows[0].out_of_place.check, NcclCheck::Wrong(0));
}

#[test]
fn old_table_with_error_column_and_no_root() {
    let r = parse_results(ALL_REDUCE_OLD).expect("parses");
    assert_eq!(r.avg_busbw_gbps, Some(3.2));
    let row = &r.rows[0];
    assert_eq!(row.root, None);
    assert_eq!(row.out_of_place.busbw_gbps, 3.19);
    assert_eq!(row.in_place.check, NcclCheck::Error(5e-7));
}

#[test]
fn malformed_tables_are_errors_naming_the_line() {
    assert!(parse_results("").is_err());
    assert!(parse_results("# Avg bus bandwidth : 3\n").is_err());
    let cut = ALL_REDUCE_CURRENT.replace("26.80    0.00    0.00       0", "26.80");
    assert_eq!(parse_results(&cut).map_err(|e| e.line), Err(8));
    let bad = ALL_REDUCE_CURRENT.replace("   27.21", "   fast");
    assert_eq!(parse_results(&bad).map_err(|e| e.line), Err(8));
    let bad = ALL_REDUCE_CURRENT.replace(": 23.3512", ": lots");
    assert_eq!(parse_results(&bad).map_err(|e| e.line), Err(11));
    let headless = "           8             2     float     sum      -1    27.21\n";
    assert_eq!(parse_results(headless).map_err(|e| e.line), Err(1));
    assert!(parse_results("# size count busbw\n").is_err());
    let _ = parse_results("# size count type busbw time algbw busbw error\n1 1 \u{e9}\n");
}

#[test]
fn transport_ib_with_devices() {
    let v: TransportVerdict = scan_transport(LOG_IB);
    assert_eq!(v.transport, NcclTransport::Ib);
    assert_eq!(v.ib_devices, ["mlx5_0:1/RoCE", "mlx5_1:1/RoCE"]);
    assert_eq!(v.evidence.len(), 4, "{:?}", v.evidence);
}

#[test]
fn transport_socket_fallback_and_unknown() {
    let v = scan_transport(LOG_SOCKET);
    assert_eq!(v.transport, NcclTransport::Socket);
    assert!(v.ib_devices.is_empty());
    assert_eq!(v.evidence.len(), 5);
    let mixed = format!(
        "{LOG_IB}node1:1:9 [0] NCCL INFO Channel 02/0 : 0[0] -> 1[0] [send] via NET/Socket/1\n"
    );
    assert_eq!(scan_transport(&mixed).transport, NcclTransport::Socket);
    let v = scan_transport("training done\nnode1:1:1 [0] NCCL INFO comm 0x1 rank 0 nranks 2\n");
    assert_eq!(v.transport, NcclTransport::Unknown);
    assert!(v.evidence.is_empty());
    // The plugin's init line alone says NET/IB loaded, not that a channel used it.
    let init_only = LOG_IB.lines().next().unwrap_or("");
    assert_eq!(scan_transport(init_only).transport, NcclTransport::Unknown);
}
