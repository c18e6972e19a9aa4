//! Samples from docs/reference/rdma-bluefield.md §3.1 (layout and header constants from
//! perftest's source; numbers illustrative). Variants not shown verbatim there are built
//! from the documented header constants.

use super::*;

/// §3.1 "Output layout", `ib_write_bw --report_gbits` (RESULT_FMT_G).
pub(super) const WRITE_BW_GBITS: &str = "\
---------------------------------------------------------------------------------------
                    RDMA_Write BW Test
 Dual-port       : OFF\t\tDevice         : mlx5_0
 Number of qps   : 1\t\tTransport type : IB
 Connection type : RC\t\tUsing SRQ      : OFF
 PCIe relax order: ON\t\tLock-free      : OFF
 ibv_wr* API     : ON\t\tUsing Enhanced Reorder      : OFF
 TX depth        : 128
 CQ Moderation   : 100
 Mtu             : 1024[B]
 Link type       : Ethernet
 GID index       : 3
 Max inline data : 0[B]
 rdma_cm QPs\t : OFF
 Data ex. method : Ethernet
---------------------------------------------------------------------------------------
 local address: LID 0000 QPN 0x025e PSN 0xb34c82 RKey 0x1fff VAddr 0x7f00
 GID: 00:00:00:00:00:00:00:00:00:00:255:255:12:12:12:16
 remote address: LID 0000 QPN 0x025f PSN 0x1 RKey 0x1 VAddr 0x7f00
---------------------------------------------------------------------------------------
 #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]
 65536      5000             97.12              97.05              0.185114
---------------------------------------------------------------------------------------
";

/// RESULT_FMT (MiB/s, no `--report_gbits`), `-a` sweep, `--cpu_util` column appended.
pub(super) const SEND_BW_MB_CPU: &str = "\
                    Send BW Test
 Connection type : RC\t\tDevice         : mlx5_1
 #bytes     #iterations    BW peak[MB/sec]    BW average[MB/sec]   MsgRate[Mpps]    CPU_Util[%]
 2          1000             9.12               8.97                 4.701234         12.50
 65536      1000             11570.33           11568.91             0.185102         3.10
---------------------------------------------------------------------------------------
\tport_xmit_data=123456
";

/// The full latency header constant (current perftest).
pub(super) const WRITE_LAT_FULL: &str = "\
                    RDMA_Write Latency Test
 Mtu             : 4096[B]
 Link type       : Ethernet
 GID index       : 3
 #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]    t_avg[usec]    t_stdev[usec]   99% percentile[usec]   99.9% percentile[usec] 
 2       1000          1.62           5.43         1.66               1.68           0.07            1.98                   5.43
---------------------------------------------------------------------------------------
";

/// Older perftest: no t_avg/t_stdev and no percentiles.
pub(super) const SEND_LAT_OLD: &str = "\
 #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]
 2       1000          0.86           4.23         0.90
---------------------------------------------------------------------------------------
";

/// Latency in duration mode (`-D`).
pub(super) const READ_LAT_DURATION: &str = "\
 #bytes        #iterations       t_avg[usec]    tps average
 2             1713563           1.75           571185.23
---------------------------------------------------------------------------------------
";

#[test]
fn bw_gbits_with_header() {
    let report = parse(WRITE_BW_GBITS).expect("parses");
    let h = &report.header;
    assert_eq!(h.test.as_deref(), Some("RDMA_Write BW Test"));
    assert_eq!(h.device.as_deref(), Some("mlx5_0"));
    assert_eq!(h.transport.as_deref(), Some("IB"));
    assert_eq!(h.connection.as_deref(), Some("RC"));
    assert_eq!(h.gid_index, Some(3));
    assert_eq!(h.mtu, Some(1024));
    assert_eq!(h.link_type.as_deref(), Some("Ethernet"));
    let PerftestTable::Bandwidth { unit, rows } = report.table else {
        panic!("expected a BW table");
    };
    assert_eq!(unit, BwUnit::GbitPerSec);
    assert_eq!(rows.len(), 1);
    assert_eq!((rows[0].bytes, rows[0].iterations), (65536, 5000));
    assert_eq!(rows[0].peak, Some(97.12));
    assert_eq!(rows[0].average, 97.05);
    assert_eq!(rows[0].msg_rate_mpps, Some(0.185114));
    assert!((rows[0].average * unit.bytes_per_sec() - 12.13125e9).abs() < 1.0);
}

#[test]
fn bw_mib_sweep_with_extra_column() {
    let report = parse(SEND_BW_MB_CPU).expect("parses");
    assert_eq!(report.header.device.as_deref(), Some("mlx5_1"));
    let PerftestTable::Bandwidth { unit, rows } = report.table else {
        panic!("expected a BW table");
    };
    assert_eq!(unit, BwUnit::MibPerSec);
    assert_eq!(rows.len(), 2);
    assert_eq!(rows[1].bytes, 65536);
    assert_eq!(rows[1].average, 11568.91);
}

#[test]
fn latency_full_old_and_duration() {
    let full = parse(WRITE_LAT_FULL).expect("parses");
    assert_eq!(full.header.mtu, Some(4096));
    let PerftestTable::Latency { rows } = full.table else {
        panic!("expected a latency table");
    };
    let r = &rows[0];
    assert_eq!(
        (r.t_min, r.t_typical, r.t_avg),
        (Some(1.62), Some(1.66), Some(1.68))
    );
    assert_eq!(
        (r.p99, r.p99_9, r.tps_average),
        (Some(1.98), Some(5.43), None)
    );

    let PerftestTable::Latency { rows } = parse(SEND_LAT_OLD).expect("parses").table else {
        panic!("expected a latency table");
    };
    assert_eq!(
        (rows[0].t_typical, rows[0].t_avg, rows[0].p99),
        (Some(0.90), None, None)
    );

    let PerftestTable::Latency { rows } = parse(READ_LAT_DURATION).expect("parses").table else {
        panic!("expected a latency table");
    };
    assert_eq!(rows[0].iterations, 1_713_563);
    assert_eq!(
        (rows[0].t_avg, rows[0].tps_average),
        (Some(1.75), Some(571_185.23))
    );
}

#[test]
fn malformed_input_is_an_error_naming_the_line() {
    let short_row = WRITE_BW_GBITS.replace("0.185114", "");
    let err = parse(&short_row).expect_err("a value is missing");
    assert_eq!(err.line, 22);
    assert!(
        err.to_string().contains("4 values under 5 columns"),
        "{err}"
    );
    let err = parse(&WRITE_LAT_FULL.replace("1.62", "x")).expect_err("not a number");
    assert_eq!(err.line, 6);
    assert!(parse("").is_err());
    assert!(parse(" Failed to modify QP 1234 to RTR\n").is_err());
    assert!(parse(" #bytes  foo[x]\n 1 2\n").is_err());
    assert!(parse(" #bytes #iterations t_min[usec]\n------\n").is_err());
    assert!(parse(" #bytes #iterations t_min[usec]\n -1 2 3\n").is_err());
    assert!(parse(" #bytes #iterations t_min[usec]\n 1 2 nan\n").is_err());
    for text in [
        "#bytes ]",
        "#bytes\u{e9}\u{e9}]  [",
        ":::\u{e9}:",
        " Mtu : \u{e9}[B]",
    ] {
        let _ = parse(text);
    }
}
