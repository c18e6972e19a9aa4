//! Through the snapshot engine: a sampler whose RDMA netlink is a fake reads ports'
//! `hw_counters` from it and everything else from the fixture tree, for one selected
//! port and for a tree large enough to be read on several threads, and a refused port
//! still comes from sysfs in the same snapshot.

use std::fs;

use crate::counters::{CounterSelector, Sampler};
use crate::rdma::netlink::fake::{Answer, Fake};
use crate::rdma::netlink::RdmaDevice;
use crate::snapshot::{Snapshot, Source};
use crate::SysRoot;

/// Ports of the big device: enough for the engine to use two threads (8 ports each).
const BIG_PORTS: u32 = 16;

/// Counter names of the big device's ports (static, as the fake's answers are).
const NAMES: [&str; 2] = ["rp_cnp_handled", "rx_write_requests"];

fn write(root: &std::path::Path, rel: &str, text: &str) {
    let path = root.join(rel);
    fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
    fs::write(path, text).expect("write");
}

/// mlx5_0 port 1 (PMA and hw counters, index 1) and mlx5_1 with 16 ports (index 2), on
/// which netlink answers the even ports with sysfs + 1000 and refuses the odd ones.
fn setup() -> (tempfile::TempDir, Fake) {
    let dir = tempfile::tempdir().expect("tempdir");
    let r = dir.path();
    write(r, "proc/sys/kernel/random/boot_id", "boot-1\n");
    let port = "sys/class/infiniband/mlx5_0/ports/1";
    write(r, &format!("{port}/counters/port_rcv_data"), "1000\n");
    write(r, &format!("{port}/counters/unicast_rcv_packets"), "10\n");
    write(r, &format!("{port}/hw_counters/np_cnp_sent"), "3\n");
    write(r, &format!("{port}/hw_counters/lifespan"), "10\n");
    for p in 1..=BIG_PORTS {
        let port = format!("sys/class/infiniband/mlx5_1/ports/{p}");
        write(
            r,
            &format!("{port}/counters/port_xmit_data"),
            &format!("{p}\n"),
        );
        for name in NAMES {
            write(r, &format!("{port}/hw_counters/{name}"), &format!("{p}\n"));
        }
    }
    let fake = Fake::default();
    {
        let mut state = fake.state();
        state.devices = vec![
            RdmaDevice {
                index: 1,
                name: "mlx5_0".to_owned(),
                ports: 1,
            },
            RdmaDevice {
                index: 2,
                name: "mlx5_1".to_owned(),
                ports: BIG_PORTS,
            },
        ];
        state
            .answers
            .insert((1, 1), Answer::Counters(vec![("np_cnp_sent", 103)]));
        for p in (2..=BIG_PORTS).step_by(2) {
            let value = u64::from(p) + 1000;
            let counters = NAMES.iter().map(|name| (*name, value)).collect();
            state.answers.insert((2, p), Answer::Counters(counters));
        }
    }
    (dir, fake)
}

fn value(snap: &Snapshot, source: Source, object: &str, counter: &str) -> u64 {
    snap.get(source, object, counter)
        .unwrap_or_else(|| panic!("{source}:{object}/{counter} missing"))
        .value
}

#[test]
fn one_port_mixes_netlink_hw_counters_with_sysfs_pma_counters() {
    let (dir, fake) = setup();
    let mut sampler = Sampler::with_rdma_hw_reader(SysRoot::new(dir.path()), fake.reader());
    let selector: CounterSelector = "rdma:mlx5_0/1".parse().expect("selector");
    let snap = sampler.snapshot(std::slice::from_ref(&selector));
    assert!(snap.errors.is_empty(), "{:?}", snap.errors);
    let object = "rdmaDevices/mlx5_0/ports/1";
    assert_eq!(value(&snap, Source::RdmaHw, object, "np_cnp_sent"), 103);
    assert_eq!(value(&snap, Source::Rdma, object, "port_rcv_data"), 4000);
    let counters: Vec<&str> = snap
        .samples
        .iter()
        .map(|s| s.key.counter.as_ref())
        .collect();
    assert_eq!(
        counters,
        ["port_rcv_data", "unicast_rcv_packets", "np_cnp_sent"],
        "PMA first, then hw, as from sysfs"
    );
    // The socket is kept for the next snapshot of a Watch.
    sampler.snapshot(std::slice::from_ref(&selector));
    let state = fake.state();
    assert_eq!((state.opens, state.dumps, state.asks), (1, 1, 2));
}

#[test]
fn a_threaded_snapshot_takes_netlink_where_it_answers_and_sysfs_elsewhere() {
    let (dir, fake) = setup();
    let mut sampler = Sampler::with_rdma_hw_reader(SysRoot::new(dir.path()), fake.reader());
    let snap = sampler.snapshot(&["rdma".parse().expect("selector")]);
    assert!(snap.errors.is_empty(), "{:?}", snap.errors);
    for p in 1..=BIG_PORTS {
        let object = format!("rdmaDevices/mlx5_1/ports/{p}");
        let expected = if p % 2 == 0 {
            u64::from(p) + 1000
        } else {
            u64::from(p)
        };
        for name in NAMES {
            assert_eq!(
                value(&snap, Source::RdmaHw, &object, name),
                expected,
                "{object}"
            );
        }
        assert_eq!(
            value(&snap, Source::Rdma, &object, "port_xmit_data"),
            u64::from(p) * 4
        );
    }
    assert_eq!(
        value(
            &snap,
            Source::RdmaHw,
            "rdmaDevices/mlx5_0/ports/1",
            "np_cnp_sent"
        ),
        103
    );
    let hw = snap
        .samples
        .iter()
        .filter(|s| s.key.source == Source::RdmaHw)
        .count();
    assert_eq!(hw, 1 + 2 * BIG_PORTS as usize);
}

#[test]
fn a_sampler_with_its_rdma_socket_can_move_to_a_blocking_thread() {
    fn send<T: Send>() {}
    send::<Sampler>();
}
