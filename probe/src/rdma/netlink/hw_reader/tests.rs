//! The netlink-or-sysfs decision, on a fixture tree and a fake socket whose answers and
//! failures each test sets.

use std::fs;

use super::*;
use crate::rdma::netlink::fake::{Answer, Fake};
use crate::snapshot::{Source, Unit};

fn write(root: &std::path::Path, rel: &str, text: &str) {
    let path = root.join(rel);
    fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
    fs::write(path, text).expect("write");
}

/// mlx5_0 (index 3): port 1 with PMA and hw counters, port 2 without `hw_counters/`;
/// rxe0 (index 4): port 1 with hw counters.
fn setup() -> (tempfile::TempDir, SysRoot, Fake) {
    let dir = tempfile::tempdir().expect("tempdir");
    let r = dir.path();
    let mlx5 = "sys/class/infiniband/mlx5_0/ports";
    write(r, &format!("{mlx5}/1/counters/port_rcv_data"), "1000\n");
    for (name, value) in [
        ("rx_write_requests", "42"),
        ("out_of_buffer", "3"),
        ("np_cnp_sent", "5"),
        ("lifespan", "10"),
    ] {
        write(
            r,
            &format!("{mlx5}/1/hw_counters/{name}"),
            &format!("{value}\n"),
        );
    }
    write(r, &format!("{mlx5}/2/counters/port_rcv_data"), "7\n");
    write(
        r,
        "sys/class/infiniband/rxe0/ports/1/hw_counters/sent_pkts",
        "9\n",
    );
    let fake = Fake::default();
    {
        let mut state = fake.state();
        state.devices = vec![
            RdmaDevice {
                index: 3,
                name: "mlx5_0".to_owned(),
                ports: 2,
            },
            RdmaDevice {
                index: 4,
                name: "rxe0".to_owned(),
                ports: 1,
            },
        ];
        state.answers.insert(
            (3, 1),
            Answer::Counters(vec![
                ("np_cnp_sent", 1005),
                ("rx_write_requests", 1042),
                // An optional counter enabled with `rdma statistic set`: not in sysfs.
                ("cc_rx_ce_pkts", 7),
                ("out_of_buffer", 1003),
            ]),
        );
        state
            .answers
            .insert((4, 1), Answer::Counters(vec![("sent_pkts", 19)]));
    }
    let root = SysRoot::new(r);
    (dir, root, fake)
}

fn values(samples: &[Sample]) -> Vec<(&str, u64)> {
    samples
        .iter()
        .map(|s| (s.key.counter.as_ref(), s.value))
        .collect()
}

#[test]
fn netlink_values_come_with_the_sysfs_names_order_units_and_widths() {
    let (_dir, root, fake) = setup();
    let mut reader = fake.reader();
    let netlink = reader.read_port(&root, "mlx5_0", 1).expect("from netlink");
    let sysfs = rdma::counters::read_hw_counters(&root, "mlx5_0", 1).expect("from sysfs");
    assert_eq!(
        values(&netlink),
        [
            ("np_cnp_sent", 1005),
            ("out_of_buffer", 1003),
            ("rx_write_requests", 1042)
        ],
        "the optional counter sysfs lacks is left out"
    );
    assert_eq!(netlink.len(), sysfs.len());
    for (n, s) in netlink.iter().zip(&sysfs) {
        assert_eq!(n.key, s.key);
        assert_eq!(
            (n.unit, n.kind, n.width_bits, n.scale),
            (s.unit, s.kind, s.width_bits, s.scale)
        );
    }
    assert_eq!(netlink[0].key.source, Source::RdmaHw);
    assert_eq!(netlink[0].key.object, "rdmaDevices/mlx5_0/ports/1");
    assert_eq!(netlink[2].unit, Unit::Operations);
    // A second snapshot asks again, but neither opens nor dumps again.
    reader.start_round();
    reader.read_port(&root, "mlx5_0", 1).expect("again");
    let state = fake.state();
    assert_eq!((state.opens, state.dumps, state.asks), (1, 1, 2));
}

#[test]
fn a_counter_netlink_lacks_means_sysfs_for_that_port_from_then_on() {
    let (_dir, root, fake) = setup();
    fake.state().answers.insert(
        (3, 1),
        Answer::Counters(vec![("np_cnp_sent", 1), ("rx_write_requests", 2)]),
    );
    let mut reader = fake.reader();
    match reader.read_port(&root, "mlx5_0", 1) {
        Err(Fallback::Lacks(name)) => assert_eq!(name, "out_of_buffer"),
        other => panic!("{other:?}"),
    }
    reader.start_round();
    assert!(matches!(
        reader.read_port(&root, "mlx5_0", 1),
        Err(Fallback::Refused)
    ));
    assert_eq!(fake.state().asks, 1, "not asked again");
    // Other ports are not affected.
    assert_eq!(
        values(&reader.read_port(&root, "rxe0", 1).expect("rxe0")),
        [("sent_pkts", 19)]
    );
}

#[test]
fn a_refusing_kernel_means_sysfs_until_the_device_is_re_created() {
    let (_dir, root, fake) = setup();
    fake.state()
        .answers
        .insert((3, 1), Answer::Errno(libc::EMSGSIZE));
    let mut reader = fake.reader();
    match reader.read_port(&root, "mlx5_0", 1) {
        Err(Fallback::Netlink(e)) => assert_eq!(e.raw_os_error(), Some(libc::EMSGSIZE)),
        other => panic!("{other:?}"),
    }
    // The next snapshot dumps the device list again (an unknown index is also how a
    // re-created device shows); same index, so the port stays on sysfs.
    reader.start_round();
    assert!(matches!(
        reader.read_port(&root, "mlx5_0", 1),
        Err(Fallback::Refused)
    ));
    let counts = |fake: &Fake| {
        let state = fake.state();
        (state.dumps, state.asks)
    };
    assert_eq!(counts(&fake), (2, 1));
    // The device comes back under a new index: since a port is refused, every snapshot
    // dumps the list, sees the new index, and tries netlink again.
    {
        let mut state = fake.state();
        state.devices[0].index = 7;
        let counters = vec![
            ("np_cnp_sent", 1),
            ("out_of_buffer", 2),
            ("rx_write_requests", 3),
        ];
        state.answers.insert((7, 1), Answer::Counters(counters));
    }
    reader.start_round();
    let samples = reader.read_port(&root, "mlx5_0", 1).expect("new index");
    assert_eq!(samples.len(), 3);
    assert_eq!(counts(&fake), (3, 2));
}

#[test]
fn a_transient_refusal_is_retried_next_snapshot() {
    let (_dir, root, fake) = setup();
    fake.state()
        .answers
        .insert((4, 1), Answer::Errno(libc::ENOMEM));
    let mut reader = fake.reader();
    assert!(matches!(
        reader.read_port(&root, "rxe0", 1),
        Err(Fallback::Netlink(_))
    ));
    fake.state()
        .answers
        .insert((4, 1), Answer::Counters(vec![("sent_pkts", 20)]));
    reader.start_round();
    assert_eq!(
        values(&reader.read_port(&root, "rxe0", 1).expect("retried")),
        [("sent_pkts", 20)]
    );
}

#[test]
fn a_broken_socket_is_dropped_and_a_fresh_one_opened() {
    let (_dir, root, fake) = setup();
    fake.state().answers.insert((4, 1), Answer::Broken);
    let mut reader = fake.reader();
    match reader.read_port(&root, "rxe0", 1) {
        Err(Fallback::Netlink(e)) => assert!(e.is_transport(), "{e}"),
        other => panic!("{other:?}"),
    }
    assert!(reader.socket.is_none());
    // The rest of this snapshot does not wait on the socket again.
    assert!(matches!(
        reader.read_port(&root, "mlx5_0", 1),
        Err(Fallback::NotReopened)
    ));
    assert_eq!(fake.state().opens, 1);
    fake.state()
        .answers
        .insert((4, 1), Answer::Counters(vec![("sent_pkts", 21)]));
    reader.start_round();
    assert!(reader.read_port(&root, "rxe0", 1).is_ok());
    assert_eq!(fake.state().opens, 2);
}

#[test]
fn a_socket_that_does_not_open_is_not_retried_every_snapshot() {
    let (_dir, root, fake) = setup();
    fake.state().fail_open = true;
    let mut reader = fake.reader();
    match reader.read_port(&root, "mlx5_0", 1) {
        Err(Fallback::Open(e)) => {
            assert_eq!(e.raw_os_error(), Some(libc::EPROTONOSUPPORT));
            assert_eq!(e.to_string(), "cannot create the NETLINK_RDMA socket");
        }
        other => panic!("{other:?}"),
    }
    reader.start_round();
    assert!(matches!(
        reader.read_port(&root, "mlx5_0", 1),
        Err(Fallback::NotReopened)
    ));
    assert_eq!(fake.state().opens, 1);
}

#[test]
fn unknown_devices_and_ports_fall_back_with_one_dump_per_snapshot() {
    let (_dir, root, fake) = setup();
    let mut reader = fake.reader();
    assert!(matches!(
        reader.read_port(&root, "mlx5_9", 1),
        Err(Fallback::UnknownDevice)
    ));
    assert!(matches!(
        reader.read_port(&root, "mlx5_8", 1),
        Err(Fallback::UnknownDevice)
    ));
    assert_eq!(fake.state().dumps, 1, "one dump per snapshot");
    reader.start_round();
    assert!(matches!(
        reader.read_port(&root, "mlx5_9", 1),
        Err(Fallback::UnknownDevice)
    ));
    assert_eq!(fake.state().dumps, 2);
    assert!(matches!(
        reader.read_port(&root, "mlx5_0", 3),
        Err(Fallback::NoSuchPort(2))
    ));
    assert!(matches!(
        reader.read_port(&root, "mlx5_0", 0),
        Err(Fallback::NoSuchPort(2))
    ));
    assert_eq!(fake.state().asks, 0);
}

#[test]
fn a_port_without_hw_counters_is_not_asked_for() {
    let (_dir, root, fake) = setup();
    let mut reader = fake.reader();
    assert!(matches!(
        reader.read_port(&root, "mlx5_0", 2),
        Err(Fallback::NoHwCounters)
    ));
    assert_eq!(fake.state().asks, 0);
}

#[test]
fn an_answer_about_another_device_falls_back_and_refreshes_the_map() {
    let (_dir, root, fake) = setup();
    fake.state()
        .answers
        .insert((4, 1), Answer::Named("rxe1", vec![("sent_pkts", 1)]));
    let mut reader = fake.reader();
    match reader.read_port(&root, "rxe0", 1) {
        Err(Fallback::Renamed(name)) => assert_eq!(name, "rxe1"),
        other => panic!("{other:?}"),
    }
    reader.start_round();
    assert!(reader.read_port(&root, "mlx5_0", 1).is_ok());
    assert_eq!(fake.state().dumps, 2, "dumped again in the next snapshot");
}

#[test]
fn a_fixture_root_never_uses_netlink() {
    let (_dir, root, _fake) = setup();
    let mut reader = HwCounterReader::for_access(&NetlinkAccess::for_root(&root));
    assert!(!reader.is_enabled());
    assert!(matches!(
        reader.read_port(&root, "mlx5_0", 1),
        Err(Fallback::Disabled)
    ));
    assert!(reader.port_samples(&root, "mlx5_0", 1).is_none());
    assert!(HwCounterReader::for_access(&NetlinkAccess::Live).is_enabled());
    assert!(!HwCounterReader::default().is_enabled());
}
