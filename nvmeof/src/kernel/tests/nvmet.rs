//! nvmet backend tests against [`FakeConfigFs`] on a tempdir.

use std::fs;
use std::path::{Path, PathBuf};

use super::super::fake::{snapshot, FakeConfigFs};
use super::super::*;
use crate::address::AddressFamily;

const SUBNQN: &str = "nqn.2022-10.io.nvda:disk0";
const HOSTNQN: &str = "nqn.2014-08.org.nvmexpress:uuid:f81d4fae-7dec-11d0-a765-00a0c91e6bf6";
const EIO: i32 = 5;

struct Env {
    _tmp: tempfile::TempDir,
    root: PathBuf,
    paths: KernelPaths,
    nvmet: Nvmet<FakeConfigFs>,
    dev0: String,
    dev1: String,
}

fn env() -> Env {
    let tmp = tempfile::tempdir().expect("tempdir");
    let paths = KernelPaths::under(tmp.path());
    for group in ["subsystems", "ports", "hosts"] {
        fs::create_dir_all(paths.configfs_nvmet.join(group)).expect("mkdir group");
    }
    let dev = tmp.path().join("dev");
    fs::create_dir_all(&dev).expect("mkdir dev");
    let dev0 = dev.join("nullb0");
    let dev1 = dev.join("nullb1");
    fs::write(&dev0, "").expect("dev0");
    fs::write(&dev1, "").expect("dev1");
    Env {
        root: paths.configfs_nvmet.clone(),
        paths: paths.clone(),
        nvmet: Nvmet::with_configfs(&paths, FakeConfigFs::new(&paths.configfs_nvmet)),
        dev0: dev0.display().to_string(),
        dev1: dev1.display().to_string(),
        _tmp: tmp,
    }
}

fn subsystem(hosts: &[&str]) -> SubsystemSpec {
    SubsystemSpec {
        nqn: SUBNQN.to_owned(),
        allowed_hosts: hosts.iter().map(|h| (*h).to_owned()).collect(),
        serial: Some("SN0001".to_owned()),
        model: Some("DPU disk".to_owned()),
    }
}

fn namespace(device_path: &str) -> NamespaceSpec {
    NamespaceSpec {
        nsid: 1,
        device_path: device_path.to_owned(),
        uuid: Some("0f3c4a9e-1b2d-4c5e-8f70-1a2b3c4d5e6f".to_owned()),
    }
}

fn tcp_port(port: u16) -> PortSpec {
    PortSpec {
        id: 1,
        transport: Transport::Tcp,
        address: Some(PortAddress {
            family: AddressFamily::Ipv4,
            traddr: "192.168.100.2".to_owned(),
            trsvcid: port,
        }),
    }
}

/// Every step of a full set-up, returning what each reported.
fn set_up(e: &Env) -> Vec<Change> {
    vec![
        e.nvmet.ensure_host(HOSTNQN).expect("host"),
        e.nvmet
            .ensure_subsystem(&subsystem(&[HOSTNQN]))
            .expect("subsystem"),
        e.nvmet
            .ensure_namespace(SUBNQN, &namespace(&e.dev0))
            .expect("namespace"),
        e.nvmet.ensure_port(&tcp_port(4420)).expect("port"),
        e.nvmet.link_subsystem(1, SUBNQN).expect("link"),
    ]
}

fn read(path: &Path) -> String {
    fs::read_to_string(path)
        .expect("read")
        .trim_end()
        .to_owned()
}

#[test]
fn full_set_up_is_listed_and_torn_down_to_the_empty_tree() {
    let e = env();
    let empty = snapshot(&e.root);
    assert!(set_up(&e).iter().all(|c| c.is_changed()));
    let sub = e.root.join("subsystems").join(SUBNQN);
    assert_eq!(read(&sub.join("attr_serial")), "SN0001");
    assert_eq!(read(&sub.join("attr_model")), "DPU disk");
    assert_eq!(
        read(&sub.join("namespaces/1/device_uuid")),
        "0f3c4a9e-1b2d-4c5e-8f70-1a2b3c4d5e6f"
    );
    assert_eq!(
        fs::read_link(sub.join("allowed_hosts").join(HOSTNQN)).expect("host link"),
        e.root.join("hosts").join(HOSTNQN)
    );
    assert_eq!(
        fs::read_link(e.root.join("ports/1/subsystems").join(SUBNQN)).expect("port link"),
        sub
    );

    let state = e.nvmet.list().expect("list");
    assert_eq!(state.hosts, vec![HOSTNQN.to_owned()]);
    assert_eq!(
        state.subsystems,
        vec![SubsystemState {
            nqn: SUBNQN.to_owned(),
            allow_any_host: false,
            allowed_hosts: vec![HOSTNQN.to_owned()],
            namespaces: vec![NamespaceState {
                nsid: 1,
                device_path: e.dev0.clone(),
                enabled: true,
                uuid: Some("0f3c4a9e-1b2d-4c5e-8f70-1a2b3c4d5e6f".to_owned()),
            }],
        }]
    );
    assert_eq!(
        state.ports,
        vec![PortState {
            id: 1,
            transport: "tcp".to_owned(),
            family: "ipv4".to_owned(),
            traddr: "192.168.100.2".to_owned(),
            trsvcid: "4420".to_owned(),
            subsystems: vec![SUBNQN.to_owned()],
        }]
    );

    assert!(e
        .nvmet
        .unlink_subsystem(1, SUBNQN)
        .expect("unlink")
        .is_changed());
    assert!(e.nvmet.remove_port(1).expect("port").is_changed());
    assert!(e
        .nvmet
        .remove_namespace(SUBNQN, 1)
        .expect("ns")
        .is_changed());
    assert!(e
        .nvmet
        .remove_subsystem(SUBNQN, false)
        .expect("sub")
        .is_changed());
    assert!(e.nvmet.remove_host(HOSTNQN).expect("host").is_changed());
    assert_eq!(snapshot(&e.root), empty);
    // Removing what is gone is not an error.
    assert_eq!(
        e.nvmet.remove_subsystem(SUBNQN, true).expect("again"),
        Change::Unchanged
    );
    assert_eq!(e.nvmet.remove_port(1).expect("again"), Change::Unchanged);
    assert_eq!(
        e.nvmet.unlink_subsystem(1, SUBNQN).expect("again"),
        Change::Unchanged
    );
}

#[test]
fn second_set_up_changes_nothing_and_leaves_the_tree_identical() {
    let e = env();
    set_up(&e);
    let before = snapshot(&e.root);
    assert_eq!(set_up(&e), vec![Change::Unchanged; 5]);
    assert_eq!(snapshot(&e.root), before);
}

#[test]
fn changing_the_device_of_an_enabled_namespace_disables_rewrites_and_enables() {
    let e = env();
    set_up(&e);
    // The fake refuses device_path writes while enabled, like the kernel (EBUSY).
    let change = e
        .nvmet
        .ensure_namespace(SUBNQN, &namespace(&e.dev1))
        .expect("change");
    assert_eq!(change, Change::Changed);
    let ns = e.root.join("subsystems").join(SUBNQN).join("namespaces/1");
    assert_eq!(read(&ns.join("device_path")), e.dev1);
    assert_eq!(read(&ns.join("enable")), "1");
}

#[test]
fn switching_between_allowed_hosts_and_any_host() {
    let e = env();
    set_up(&e);
    let sub = e.root.join("subsystems").join(SUBNQN);
    assert!(e
        .nvmet
        .ensure_subsystem(&subsystem(&[]))
        .expect("any")
        .is_changed());
    assert_eq!(read(&sub.join("attr_allow_any_host")), "1");
    assert!(fs::read_dir(sub.join("allowed_hosts"))
        .expect("dir")
        .next()
        .is_none());
    assert!(e
        .nvmet
        .ensure_subsystem(&subsystem(&[HOSTNQN]))
        .expect("back")
        .is_changed());
    assert_eq!(read(&sub.join("attr_allow_any_host")), "0");
    assert!(sub.join("allowed_hosts").join(HOSTNQN).is_symlink());
}

#[test]
fn busy_refusals_and_cascade() {
    let e = env();
    set_up(&e);
    let busy = |r: Result<Change, KernelError>| match r {
        Err(err) => assert_eq!(err.kind(), KernelErrorKind::Busy, "{err}"),
        Ok(c) => panic!("expected Busy, got {c:?}"),
    };
    busy(e.nvmet.remove_port(1));
    busy(e.nvmet.remove_subsystem(SUBNQN, false));
    busy(e.nvmet.remove_host(HOSTNQN));
    busy(e.nvmet.ensure_port(&tcp_port(4421)));
    assert!(e.root.join("ports/1").is_dir());
    assert!(e.root.join("subsystems").join(SUBNQN).is_dir());
    assert_eq!(read(&e.root.join("ports/1/addr_trsvcid")), "4420");

    assert!(e
        .nvmet
        .remove_subsystem(SUBNQN, true)
        .expect("cascade")
        .is_changed());
    assert!(!e.root.join("subsystems").join(SUBNQN).exists());
    assert!(!e.root.join("ports/1/subsystems").join(SUBNQN).is_symlink());
    assert!(e.nvmet.remove_port(1).expect("port now free").is_changed());
    assert!(e
        .nvmet
        .remove_host(HOSTNQN)
        .expect("host now free")
        .is_changed());
}

#[test]
fn a_failed_enable_removes_the_namespace_it_created() {
    let e = env();
    let created = e.nvmet.ensure_subsystem(&subsystem(&[]));
    assert_eq!(created.expect("subsystem"), Change::Changed);
    let before = snapshot(&e.root);
    e.nvmet.fs.fail_writes_to("enable", EIO);
    let err = e
        .nvmet
        .ensure_namespace(SUBNQN, &namespace(&e.dev0))
        .expect_err("enable fails");
    assert!(
        matches!(&err, KernelError::Io { op: "write", path, .. } if path.ends_with("namespaces/1/enable")),
        "{err}"
    );
    assert_eq!(snapshot(&e.root), before);
}

#[test]
fn a_failed_subsystem_attribute_removes_the_dirs_and_links_it_made() {
    let e = env();
    let before = snapshot(&e.root);
    e.nvmet.fs.fail_writes_to("attr_model", EIO);
    let err = e
        .nvmet
        .ensure_subsystem(&subsystem(&[HOSTNQN]))
        .expect_err("model write fails");
    assert!(err.to_string().contains("attr_model"), "{err}");
    assert_eq!(
        snapshot(&e.root),
        before,
        "subsystem, link and host dir rolled back"
    );
}

#[test]
fn an_unremovable_leftover_is_named_in_the_error() {
    let e = env();
    set_up(&e);
    // Make re-enable fail after the disable succeeded: only writes of "1" to enable fail.
    #[derive(Debug)]
    struct FailEnableOn(FakeConfigFs);
    impl ConfigFs for FailEnableOn {
        fn mkdir(&self, p: &Path) -> std::io::Result<()> {
            self.0.mkdir(p)
        }
        fn rmdir(&self, p: &Path) -> std::io::Result<()> {
            self.0.rmdir(p)
        }
        fn write_attr(&self, p: &Path, v: &str) -> std::io::Result<()> {
            if p.ends_with("enable") && v == "1" {
                return Err(std::io::Error::from_raw_os_error(EIO));
            }
            self.0.write_attr(p, v)
        }
    }
    let nvmet = Nvmet::with_configfs(&e.paths, FailEnableOn(FakeConfigFs::new(&e.root)));
    let err = nvmet
        .ensure_namespace(SUBNQN, &namespace(&e.dev1))
        .expect_err("re-enable fails");
    let KernelError::Incomplete { left, .. } = &err else {
        panic!("expected Incomplete, got {err}");
    };
    assert_eq!(left.len(), 1);
    assert!(
        left[0].contains("namespaces/1 (was enabled, left disabled)"),
        "{err}"
    );
}

#[test]
fn bad_inputs_are_refused_by_field_before_anything_changes() {
    let e = env();
    set_up(&e);
    let before = snapshot(&e.root);
    let field = |r: Result<Change, KernelError>| match r {
        Err(KernelError::Invalid { field, .. }) => field,
        other => panic!("expected Invalid, got {other:?}"),
    };
    let mut bad = subsystem(&[]);
    bad.nqn = "nqn.2022-10.io.nvda:a b".to_owned();
    assert_eq!(field(e.nvmet.ensure_subsystem(&bad)), "nqn");
    let mut bad = subsystem(&["not-an-nqn"]);
    bad.nqn = SUBNQN.to_owned();
    assert_eq!(field(e.nvmet.ensure_subsystem(&bad)), "allowed_hosts");
    let mut ns = namespace(&e.dev1);
    ns.nsid = 0;
    assert_eq!(field(e.nvmet.ensure_namespace(SUBNQN, &ns)), "nsid");
    let ns = namespace(&format!("{}/../nullb1", e.dev0));
    assert_eq!(field(e.nvmet.ensure_namespace(SUBNQN, &ns)), "device_path");
    let mut ns = namespace(&e.dev1);
    ns.uuid = Some("nope".to_owned());
    assert_eq!(field(e.nvmet.ensure_namespace(SUBNQN, &ns)), "uuid");
    let mut port = tcp_port(4420);
    port.address = None;
    assert_eq!(field(e.nvmet.ensure_port(&port)), "address");
    assert_eq!(field(e.nvmet.ensure_port(&tcp_port(0))), "trsvcid");
    assert_eq!(snapshot(&e.root), before);
}

#[test]
fn missing_backing_device_and_subsystem_are_not_found() {
    let e = env();
    let before = snapshot(&e.root);
    let err = e
        .nvmet
        .ensure_namespace(SUBNQN, &namespace(&e.dev0))
        .expect_err("no subsystem");
    assert_eq!(err.kind(), KernelErrorKind::NotFound);
    let created = e.nvmet.ensure_subsystem(&subsystem(&[]));
    assert_eq!(created.expect("subsystem"), Change::Changed);
    let gone = format!("{}-missing", e.dev0);
    let err = e
        .nvmet
        .ensure_namespace(SUBNQN, &namespace(&gone))
        .expect_err("no device");
    assert_eq!(err.kind(), KernelErrorKind::NotFound);
    assert!(err.to_string().contains(&gone), "{err}");
    assert!(!e
        .root
        .join("subsystems")
        .join(SUBNQN)
        .join("namespaces/1")
        .exists());
    assert_ne!(snapshot(&e.root), before);
}

#[test]
fn loop_port_has_only_a_transport() {
    let e = env();
    let port = PortSpec {
        id: 7,
        transport: Transport::Loop,
        address: None,
    };
    assert!(e.nvmet.ensure_port(&port).expect("loop").is_changed());
    assert_eq!(read(&e.root.join("ports/7/addr_trtype")), "loop");
    assert_eq!(read(&e.root.join("ports/7/addr_traddr")), "");
    assert_eq!(
        e.nvmet.ensure_port(&port).expect("again"),
        Change::Unchanged
    );
}

#[test]
fn missing_nvmet_is_unsupported() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let paths = KernelPaths::under(tmp.path());
    let nvmet = Nvmet::with_configfs(&paths, FakeConfigFs::new(&paths.configfs_nvmet));
    for err in [
        nvmet.list().map(drop).expect_err("list"),
        nvmet.ensure_host(HOSTNQN).map(drop).expect_err("host"),
    ] {
        assert_eq!(err.kind(), KernelErrorKind::Unsupported);
        assert!(err.to_string().contains("nvmet module not loaded"), "{err}");
    }
}

#[test]
fn port_endpoints_parse_print_back_and_bad_ones_are_named() {
    let tcp: PortEndpoint = "tcp:10.0.0.1:4420".parse().expect("tcp");
    assert_eq!(tcp.transport, Transport::Tcp);
    assert_eq!(tcp.address.as_ref().map(|a| a.trsvcid), Some(4420));
    let v6: PortEndpoint = "rdma:[fd00::1]:4421".parse().expect("v6");
    assert_eq!(
        v6.address.as_ref().map(|a| a.family),
        Some(AddressFamily::Ipv6)
    );
    let lo: PortEndpoint = "loop".parse().expect("loop");
    assert!(lo.address.is_none());
    for text in ["tcp:10.0.0.1:4420", "rdma:[fd00::1]:4421", "loop"] {
        let port: PortEndpoint = text.parse().expect(text);
        assert_eq!(port.to_string(), text);
    }
    assert_eq!(lo.with_id(3).id, 3);
    for bad in [
        "udp:1.2.3.4:1",
        "tcp:1.2.3.4",
        "tcp:1.2.3.4:0",
        "tcp:not-an-ip:4420",
    ] {
        let err = bad.parse::<PortEndpoint>().expect_err(bad).to_string();
        assert!(err.contains(bad), "{err}");
    }
}
