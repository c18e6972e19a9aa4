use super::*;
use crate::snapshot::Kind;
use std::fs;
use std::os::unix::fs::symlink;
use std::path::Path;

fn write(path: std::path::PathBuf, text: &str) {
    fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
    fs::write(path, text).expect("write");
}

fn port(root: &SysRoot, ibdev: &str) -> std::path::PathBuf {
    let port = root.sys("class/infiniband").join(ibdev).join("ports/1");
    write(port.join("state"), "4: ACTIVE\n");
    port
}

/// An mlx5 port: the extended PMA table and the basic Q counters.
fn mlx5_port(root: &SysRoot) -> std::path::PathBuf {
    let port = port(root, "mlx5_0");
    for (name, value) in [
        ("port_xmit_data", "1234567890"),
        ("port_rcv_data", "9876543210"),
        ("port_xmit_packets", "1205632"),
        ("port_rcv_packets", "9645063"),
        ("unicast_xmit_packets", "1205632"),
        ("unicast_rcv_packets", "9645063"),
        ("multicast_xmit_packets", "0"),
        ("multicast_rcv_packets", "0"),
        ("symbol_error", "0"),
        ("link_downed", "1"),
        ("port_xmit_wait", "17"),
        ("VL15_dropped", "0"),
    ] {
        write(port.join("counters").join(name), &format!("{value}\n"));
    }
    for (name, value) in [
        ("rx_write_requests", "42"),
        ("out_of_buffer", "3"),
        ("np_cnp_sent", "5"),
        ("rp_cnp_handled", "6"),
        ("local_ack_timeout_err", "0"),
        ("lifespan", "10"),
    ] {
        write(port.join("hw_counters").join(name), &format!("{value}\n"));
    }
    port
}

fn find<'a>(samples: &'a [Sample], source: Source, counter: &str) -> &'a Sample {
    samples
        .iter()
        .find(|s| s.key.source == source && s.key.counter == counter)
        .unwrap_or_else(|| panic!("{source}:{counter} missing from {samples:?}"))
}

#[test]
fn reads_pma_counters_with_units_widths_and_the_word_scale() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = SysRoot::new(dir.path());
    mlx5_port(&root);
    let samples = read_pma_counters(&root, "mlx5_0", 1).expect("read");
    assert_eq!(samples.len(), 12);
    let xmit = find(&samples, Source::Rdma, "port_xmit_data");
    assert_eq!(xmit.key.object, "rdmaDevices/mlx5_0/ports/1");
    assert_eq!(xmit.value, 1_234_567_890 * 4, "4-byte words become bytes");
    assert_eq!(
        (xmit.unit, xmit.scale, xmit.width_bits),
        (Unit::Bytes, 4, 64)
    );
    assert_eq!(xmit.kind, Kind::Cumulative);
    let packets = find(&samples, Source::Rdma, "unicast_rcv_packets");
    assert_eq!((packets.unit, packets.width_bits), (Unit::Packets, 64));
    let downed = find(&samples, Source::Rdma, "link_downed");
    assert_eq!((downed.unit, downed.width_bits), (Unit::Events, 0));
    assert_eq!(
        find(&samples, Source::Rdma, "port_xmit_wait").unit,
        Unit::Ticks
    );
}

#[test]
fn legacy_pma_table_has_unknown_width() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = SysRoot::new(dir.path());
    let port = port(&root, "mlx4_0");
    write(port.join("counters/port_xmit_data"), "4000000000\n");
    write(port.join("counters/port_xmit_packets"), "5\n");
    let samples = read_pma_counters(&root, "mlx4_0", 1).expect("read");
    for s in &samples {
        assert_eq!(
            s.width_bits, 0,
            "{}: saturating 32-bit or 64-bit, unknown",
            s.key
        );
    }
    assert_eq!(
        find(&samples, Source::Rdma, "port_xmit_data").value,
        16_000_000_000
    );
}

#[test]
fn reads_hw_counters_skipping_lifespan() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = SysRoot::new(dir.path());
    mlx5_port(&root);
    let samples = read_hw_counters(&root, "mlx5_0", 1).expect("read");
    let names: Vec<_> = samples.iter().map(|s| s.key.counter.as_ref()).collect();
    assert_eq!(
        names,
        [
            "local_ack_timeout_err",
            "np_cnp_sent",
            "out_of_buffer",
            "rp_cnp_handled",
            "rx_write_requests"
        ]
    );
    let writes = find(&samples, Source::RdmaHw, "rx_write_requests");
    assert_eq!((writes.value, writes.unit), (42, Unit::Operations));
    assert_eq!(
        find(&samples, Source::RdmaHw, "np_cnp_sent").unit,
        Unit::Packets
    );
    assert_eq!(
        find(&samples, Source::RdmaHw, "out_of_buffer").unit,
        Unit::Events
    );
    let both = read_port_counters(&root, "mlx5_0", 1).expect("read");
    assert_eq!(both.len(), 12 + 5);
}

#[test]
fn missing_counter_directories_are_normal() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = SysRoot::new(dir.path());
    port(&root, "rxe0");
    assert!(read_port_counters(&root, "rxe0", 1)
        .expect("no counters dirs")
        .is_empty());
    let err = read_port_counters(&root, "rxe0", 2).expect_err("no port 2");
    assert!(
        matches!(
            err,
            ProbeError::NotFound {
                what: "RDMA port",
                ..
            }
        ),
        "{err}"
    );
    let err = read_port_counters(&root, "mlx5_9", 1).expect_err("no device");
    assert!(matches!(err, ProbeError::NotFound { .. }), "{err}");
    let err = read_port_counters(&root, "..", 1).expect_err("not a name");
    assert!(matches!(err, ProbeError::NotFound { .. }), "{err}");
}

#[test]
fn garbage_counter_is_a_format_error_naming_the_file() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = SysRoot::new(dir.path());
    let port = mlx5_port(&root);
    write(port.join("hw_counters/out_of_sequence"), "lots\n");
    let err = read_hw_counters(&root, "mlx5_0", 1).expect_err("garbage");
    assert!(matches!(err, ProbeError::Format { .. }), "{err}");
    assert!(
        err.to_string().contains("hw_counters/out_of_sequence"),
        "{err}"
    );
    assert!(err.to_string().contains("lots"), "{err}");
    write(port.join("hw_counters/out_of_sequence"), "-1\n");
    assert!(read_hw_counters(&root, "mlx5_0", 1).is_err(), "negative");
}

#[test]
fn no_pma_and_unsupported_counters_are_skipped_other_errors_reported() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = SysRoot::new(dir.path());
    let port = port(&root, "mlx4_1");
    write(port.join("counters/port_xmit_data"), "N/A (no PMA)\n");
    write(port.join("counters/port_rcv_data"), "7\n");
    let samples = read_pma_counters(&root, "mlx4_1", 1).expect("read");
    assert_eq!(samples.len(), 1);
    assert_eq!(samples[0].key.counter, "port_rcv_data");

    for errno in [
        Errno::EINVAL,
        Errno::EOPNOTSUPP,
        Errno::ENODATA,
        Errno::ENOENT,
    ] {
        assert!(
            is_unavailable(&io::Error::from_raw_os_error(errno as i32)),
            "{errno}"
        );
    }
    for errno in [Errno::EIO, Errno::EACCES, Errno::EPERM] {
        assert!(
            !is_unavailable(&io::Error::from_raw_os_error(errno as i32)),
            "{errno}"
        );
    }

    // A real EINVAL read, where the host has one (`speed` of loopback).
    let lo_speed = Path::new("/sys/class/net/lo/speed");
    let einval = fs::read_to_string(lo_speed)
        .err()
        .is_some_and(|e| e.raw_os_error() == Some(Errno::EINVAL as i32));
    if einval {
        symlink(lo_speed, port.join("counters/port_xmit_packets")).expect("link");
        assert_eq!(
            read_pma_counters(&root, "mlx4_1", 1)
                .expect("skipped")
                .len(),
            1
        );
    }

    // A read that fails with EIO (a regular file whose offset 0 is unmapped).
    symlink("/proc/self/mem", port.join("counters/port_rcv_packets")).expect("link");
    let err = read_pma_counters(&root, "mlx4_1", 1).expect_err("EIO is a fault");
    assert!(matches!(err, ProbeError::Read { .. }), "{err}");
    assert!(err.to_string().contains("port_rcv_packets"), "{err}");
}

#[test]
fn hw_counter_units_cover_the_table_prefixes_and_suffixes() {
    for (name, unit) in [
        ("rx_read_requests", Unit::Operations),
        ("vport_rx_write_requests", Unit::Operations),
        ("vport_out_of_sequence", Unit::Events),
        ("np_ecn_marked_roce_packets", Unit::Packets),
        ("rx_icrc_encapsulated", Unit::Packets),
        ("roce_slow_restart_cnps", Unit::Events),
        ("req_transport_retries_exceeded", Unit::Events),
        ("resp_cqe_flush_error", Unit::Events),
        ("rdma_tx_bytes", Unit::Bytes),
        ("rdma_rx_packets_per_qp", Unit::Packets),
        ("cc_rx_cnp_pkts", Unit::Packets),
        ("sent_pkts", Unit::Packets),
        ("retry_exceeded_err", Unit::Events),
        ("ack_deferred", Unit::Unspecified),
    ] {
        assert_eq!(hw_counter_unit(name), unit, "{name}");
    }
    assert_eq!(
        pma_counter_unit("port_rcv_remote_physical_errors"),
        Unit::Events
    );
    assert_eq!(pma_counter_unit("port_xmit_data_64"), Unit::Unspecified);
}

#[test]
fn reads_every_device_keeping_one_entry_per_object() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = SysRoot::new(dir.path());
    mlx5_port(&root);
    write(
        root.sys("class/infiniband/mlx5_0/hw_counters/rx_write_requests"),
        "1\n",
    );
    let bad = port(&root, "mlx5_1");
    write(bad.join("counters/port_rcv_data"), "oops\n");
    let all = read_all_counters(&root).expect("list");
    let objects: Vec<_> = all.iter().map(|o| o.object.as_str()).collect();
    assert_eq!(
        objects,
        [
            "rdmaDevices/mlx5_0",
            "rdmaDevices/mlx5_0/ports/1",
            "rdmaDevices/mlx5_1/ports/1"
        ]
    );
    let device = all[0].result.as_ref().expect("device counters");
    assert_eq!(device[0].key.object, "rdmaDevices/mlx5_0");
    assert_eq!(all[1].result.as_ref().expect("port").len(), 17);
    assert!(all[2].result.is_err(), "the bad port fails alone");

    let one = read_device_counters(&root, "mlx5_1").expect("device");
    assert_eq!(one.len(), 1);
    assert!(read_device_counters(&root, "mlx5_7").is_err());
    let empty = tempfile::tempdir().expect("tempdir");
    assert!(read_all_counters(&SysRoot::new(empty.path()))
        .expect("no class dir")
        .is_empty());
}
