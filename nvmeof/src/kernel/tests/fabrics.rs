//! nvme-fabrics initiator tests against [`FakeFabricsDevice`] and fake sysfs trees.

use std::fs;
use std::path::Path;

use super::super::fake::{write_tree, FakeFabricsDevice};
use super::super::*;

const SUBNQN: &str = "nqn.2022-10.io.nvda:disk0";
const HOSTNQN: &str = "nqn.2014-08.org.nvmexpress:uuid:f81d4fae-7dec-11d0-a765-00a0c91e6bf6";

fn tcp_spec() -> ConnectSpec {
    ConnectSpec {
        traddr: Some("10.0.0.2".to_owned()),
        trsvcid: Some(4420),
        ..ConnectSpec::new(Transport::Tcp, SUBNQN)
    }
}

fn invalid_field(r: Result<String, KernelError>) -> &'static str {
    match r {
        Err(KernelError::Invalid { field, .. }) => field,
        other => panic!("expected Invalid, got {other:?}"),
    }
}

#[test]
fn option_string_is_exactly_the_fabrics_tokens() {
    let spec = ConnectSpec {
        hostnqn: Some(HOSTNQN.to_owned()),
        host_traddr: Some("10.0.0.1".to_owned()),
        nr_io_queues: Some(4),
        ctrl_loss_tmo: Some(-1),
        reconnect_delay: Some(10),
        hdr_digest: true,
        data_digest: true,
        ..tcp_spec()
    };
    assert_eq!(
        spec.options().expect("valid"),
        format!(
            "transport=tcp,traddr=10.0.0.2,trsvcid=4420,nqn={SUBNQN},hostnqn={HOSTNQN},\
             host_traddr=10.0.0.1,nr_io_queues=4,ctrl_loss_tmo=-1,reconnect_delay=10,\
             hdr_digest,data_digest"
        )
    );
    assert_eq!(
        tcp_spec().options().expect("minimal"),
        format!("transport=tcp,traddr=10.0.0.2,trsvcid=4420,nqn={SUBNQN}")
    );
    assert_eq!(
        ConnectSpec::new(Transport::Loop, SUBNQN)
            .options()
            .expect("loop"),
        format!("transport=loop,nqn={SUBNQN}")
    );
}

#[test]
fn option_values_that_would_split_are_refused_by_field() {
    let with = |f: fn(&mut ConnectSpec)| {
        let mut spec = tcp_spec();
        f(&mut spec);
        spec.options()
    };
    // A valid NQN may contain ',' and '=': only the option check stops them.
    assert_eq!(
        invalid_field(with(|s| s.subnqn = format!("{SUBNQN},x"))),
        "subnqn"
    );
    assert_eq!(
        invalid_field(with(|s| s.hostnqn = Some(format!("{SUBNQN}=1")))),
        "hostnqn"
    );
    assert_eq!(
        invalid_field(with(|s| s.traddr = Some("10.0.0.2,nqn=x".to_owned()))),
        "traddr"
    );
    assert_eq!(invalid_field(with(|s| s.traddr = None)), "traddr");
    assert_eq!(invalid_field(with(|s| s.trsvcid = Some(0))), "trsvcid");
    assert_eq!(
        invalid_field(with(|s| s.nr_io_queues = Some(0))),
        "nr_io_queues"
    );
    assert_eq!(
        invalid_field(with(|s| s.subnqn = "nqn.bad".to_owned())),
        "subnqn"
    );
    assert_eq!(
        invalid_field(with(|s| {
            s.transport = Transport::Rdma;
            s.hdr_digest = true;
        })),
        "hdr_digest"
    );
    assert_eq!(
        invalid_field(with(|s| s.transport = Transport::Loop)),
        "traddr",
        "loop takes no address"
    );
}

fn fabrics(root: &Path, reply: &str) -> Fabrics<FakeFabricsDevice> {
    let paths = KernelPaths::under(root);
    write_tree(root, &[("dev/nvme-fabrics", "")]);
    Fabrics::with_device(&paths, FakeFabricsDevice::replying(reply))
}

#[test]
fn connect_writes_the_options_once_and_parses_the_reply() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let f = fabrics(tmp.path(), "instance=3,cntlid=17\n");
    let connected = f.connect(&tcp_spec()).expect("connect");
    assert_eq!(
        connected,
        ConnectedController {
            instance: 3,
            cntlid: 17,
            device: "nvme3".to_owned(),
        }
    );
    assert_eq!(
        *f.device.written.borrow(),
        vec![format!(
            "transport=tcp,traddr=10.0.0.2,trsvcid=4420,nqn={SUBNQN}"
        )]
    );
}

#[test]
fn the_no_controller_reply_and_garbage_are_errors() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let tokens = "instance=-1,cntlid=-1,transport=%s,traddr=%s,trsvcid=%s,nqn=%s\n";
    let err = fabrics(tmp.path(), tokens)
        .connect(&tcp_spec())
        .expect_err("-1");
    assert!(
        matches!(&err, KernelError::NoController { reply, .. } if reply.starts_with("instance=-1")),
        "{err}"
    );
    assert!(err.to_string().contains("nvme-fabrics"), "{err}");
    let err = fabrics(tmp.path(), "hello")
        .connect(&tcp_spec())
        .expect_err("garbage");
    assert!(matches!(err, KernelError::Format { .. }), "{err}");
    // Order and spacing of the tokens do not matter.
    let ok = fabrics(tmp.path(), " cntlid=2, instance=0 ")
        .connect(&tcp_spec())
        .expect("ok");
    assert_eq!(
        (ok.instance, ok.cntlid, ok.device.as_str()),
        (0, 2, "nvme0")
    );
}

#[test]
fn connect_without_the_fabrics_device_is_unsupported() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let f = Fabrics::with_device(
        &KernelPaths::under(tmp.path()),
        FakeFabricsDevice::replying("instance=1,cntlid=1"),
    );
    let err = f.connect(&tcp_spec()).expect_err("no device");
    assert_eq!(err.kind(), KernelErrorKind::Unsupported);
    assert!(f.device.written.borrow().is_empty());
}

/// A fabrics controller directory with the attributes `find_connected` reads.
fn controller(root: &Path, name: &str, transport: &str, address: &str, nqn: &str, state: &str) {
    let dir = format!("sys/class/nvme/{name}");
    write_tree(
        root,
        &[
            (&format!("{dir}/transport"), &format!("{transport}\n")),
            (&format!("{dir}/address"), &format!("{address}\n")),
            (&format!("{dir}/subsysnqn"), &format!("{nqn}\n")),
            (&format!("{dir}/state"), &format!("{state}\n")),
            (&format!("{dir}/cntlid"), "1\n"),
            (&format!("{dir}/delete_controller"), ""),
        ],
    );
}

/// A head disk in /sys/block with its attributes; `nsid` omitted when `None`.
fn disk(root: &Path, name: &str, sectors: u64, nsid: Option<u32>) {
    let dir = format!("sys/block/{name}");
    let mut files = vec![
        (format!("{dir}/size"), format!("{sectors}\n")),
        (
            format!("{dir}/queue/logical_block_size"),
            "4096\n".to_owned(),
        ),
        (format!("{dir}/wwid"), format!("uuid.{name}\n")),
    ];
    if let Some(nsid) = nsid {
        files.push((format!("{dir}/nsid"), format!("{nsid}\n")));
    }
    let refs: Vec<(&str, &str)> = files
        .iter()
        .map(|(a, b)| (a.as_str(), b.as_str()))
        .collect();
    write_tree(root, &refs);
}

#[test]
fn find_connected_matches_transport_subsystem_and_address() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let root = tmp.path();
    controller(root, "nvme0", "pcie", "0000:01:00.0", SUBNQN, "live");
    controller(
        root,
        "nvme1",
        "tcp",
        "traddr=10.0.0.2,trsvcid=4420",
        "nqn.2022-10.io.x:other",
        "live",
    );
    controller(
        root,
        "nvme2",
        "tcp",
        "traddr=10.0.0.2,trsvcid=4420",
        SUBNQN,
        "deleting",
    );
    controller(
        root,
        "nvme3",
        "tcp",
        "traddr=10.0.0.2,trsvcid=4420,src_addr=10.0.0.1",
        SUBNQN,
        "live",
    );
    let f = fabrics(root, "");
    let found = f
        .find_connected(&tcp_spec())
        .expect("scan")
        .expect("nvme3 matches");
    assert_eq!(found.device, "nvme3");
    assert_eq!(found.host_traddr.as_deref(), Some("10.0.0.1"));
    assert_eq!(found.cntlid, Some(1));

    let other_port = ConnectSpec {
        trsvcid: Some(4421),
        ..tcp_spec()
    };
    assert_eq!(f.find_connected(&other_port).expect("scan"), None);
    let other_src = ConnectSpec {
        host_traddr: Some("10.0.0.9".to_owned()),
        ..tcp_spec()
    };
    assert_eq!(f.find_connected(&other_src).expect("scan"), None);
    let rdma = ConnectSpec {
        transport: Transport::Rdma,
        ..tcp_spec()
    };
    assert_eq!(f.find_connected(&rdma).expect("scan"), None);
    let devices: Vec<String> = f
        .controllers()
        .expect("list")
        .into_iter()
        .map(|c| c.device)
        .collect();
    assert_eq!(devices, ["nvme1", "nvme2", "nvme3"], "PCIe left out");
}

#[test]
fn namespaces_are_found_in_both_sysfs_layouts() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let root = tmp.path();
    // Without multipath: the disk is a child of the controller.
    controller(
        root,
        "nvme1",
        "tcp",
        "traddr=10.0.0.2,trsvcid=4420",
        SUBNQN,
        "live",
    );
    write_tree(root, &[("sys/class/nvme/nvme1/nvme1n1/dev", "259:1\n")]);
    disk(root, "nvme1n1", 2_097_152, Some(1));
    // Native multipath: the controller lists the hidden path nvme0c2n1, the head is
    // nvme0n1, and its nsid (5) differs from the head instance suffix (1).
    controller(
        root,
        "nvme2",
        "rdma",
        "traddr=10.0.0.3,trsvcid=4420",
        SUBNQN,
        "live",
    );
    write_tree(root, &[("sys/class/nvme/nvme2/nvme0c2n1/dev", "259:2\n")]);
    write_tree(root, &[("sys/class/nvme/nvme2/ng0n1/dev", "242:0\n")]);
    disk(root, "nvme0n1", 8, Some(5));
    // No nsid attribute: the suffix is used.
    controller(root, "nvme4", "loop", "", SUBNQN, "live");
    write_tree(root, &[("sys/class/nvme/nvme4/nvme4n3/dev", "259:3\n")]);
    disk(root, "nvme4n3", 1 << 40, None);

    let ctrls = fabrics(root, "").controllers().expect("list");
    let ns = |i: usize| &ctrls[i].namespaces;
    assert_eq!(
        ns(0),
        &vec![KernelNamespace {
            disk: "nvme1n1".to_owned(),
            nsid: 1,
            size_bytes: 2_097_152 * 512,
            logical_block_size: 4096,
            uuid: None,
            wwid: Some("uuid.nvme1n1".to_owned()),
        }]
    );
    assert_eq!(
        (ns(1).len(), ns(1)[0].disk.as_str(), ns(1)[0].nsid),
        (1, "nvme0n1", 5)
    );
    assert_eq!((ns(2)[0].disk.as_str(), ns(2)[0].nsid), ("nvme4n3", 3));
    assert_eq!(ns(2)[0].size_bytes, (1u64 << 40) * 512, "64-bit sizes");
    assert_eq!(ctrls[2].traddr, None, "loop has no address");
}

#[test]
fn disconnect_writes_delete_controller() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let root = tmp.path();
    controller(
        root,
        "nvme3",
        "tcp",
        "traddr=10.0.0.2,trsvcid=4420",
        SUBNQN,
        "live",
    );
    let f = fabrics(root, "");
    assert_eq!(f.disconnect("nvme3").expect("delete"), Change::Changed);
    let written = fs::read_to_string(root.join("sys/class/nvme/nvme3/delete_controller"));
    assert_eq!(written.expect("read"), "1");
    assert_eq!(f.disconnect("nvme9").expect("absent"), Change::Unchanged);
    let err = f.disconnect("nvme3/../x").expect_err("bad name");
    assert!(
        matches!(
            err,
            KernelError::Invalid {
                field: "device",
                ..
            }
        ),
        "{err}"
    );
}

#[test]
fn io_stats_are_in_bytes_and_64_bit() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let root = tmp.path();
    let big = 10_000_000_000u64;
    write_tree(
        root,
        &[(
            "sys/block/nvme1n1/stat",
            &format!("5 0 {big} 1 7 0 8 2 0 3 4 0 0 0 0 0 0\n"),
        )],
    );
    let stats = fabrics(root, "").io_stats("nvme1n1").expect("stats");
    assert_eq!(stats.read_ios, 5);
    assert_eq!(stats.read_bytes, big * 512);
    assert_eq!(stats.write_ios, 7);
    assert_eq!(stats.write_bytes, 8 * 512);
    assert!(stats.raw.flush.is_some());
    let err = fabrics(root, "").io_stats("nvme9n9").expect_err("absent");
    assert_eq!(err.kind(), KernelErrorKind::NotFound);
    let err = fabrics(root, "").io_stats("../x").expect_err("bad name");
    assert_eq!(err.kind(), KernelErrorKind::Invalid);
}

/// Seen in the lab (Debian 6.1, native multipath on): the head `nvme0n1` has
/// `queue/iostats` 0 and an all-zero `stat`; the reads are counted on `nvme0c0n1`.
#[test]
fn a_multipath_head_without_accounting_is_counted_on_its_paths() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let root = tmp.path();
    let zeros = "0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0\n";
    write_tree(
        root,
        &[
            ("sys/block/nvme0n1/stat", zeros),
            ("sys/block/nvme0n1/queue/iostats", "0\n"),
            (
                "sys/block/nvme0c0n1/stat",
                "582 0 262168 47647 0 0 0 0 0 13336 47647 0 0 0 0 0 0\n",
            ),
            (
                "sys/block/nvme0c1n1/stat",
                "18 0 32 5 0 0 0 0 0 1 5 0 0 0 0 0 0\n",
            ),
            (
                "sys/block/nvme0c0n2/stat",
                "999 0 999 1 0 0 0 0 0 1 1 0 0 0 0 0 0\n",
            ),
            (
                "sys/block/nvme1c0n1/stat",
                "999 0 999 1 0 0 0 0 0 1 1 0 0 0 0 0 0\n",
            ),
        ],
    );
    let stats = fabrics(root, "").io_stats("nvme0n1").expect("stats");
    assert_eq!(stats.counted_on, ["nvme0c0n1", "nvme0c1n1"]);
    assert_eq!(stats.read_ios, 600);
    assert_eq!(stats.read_bytes, (262_168 + 32) * 512);

    // With accounting on, the head's own counters are the answer.
    write_tree(root, &[("sys/block/nvme0n1/queue/iostats", "1\n")]);
    let stats = fabrics(root, "").io_stats("nvme0n1").expect("stats");
    assert_eq!(stats.counted_on, ["nvme0n1"]);
    assert_eq!(stats.read_ios, 0);
}
