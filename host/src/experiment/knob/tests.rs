//! Knob values checked before anything is written, kernel files written and read back
//! (in a temporary root), and the netlink knobs' values refused before any request.

use std::path::Path;

use super::control::check_read_back;
use super::*;
use crate::experiment::plan::{PfcPriorities, RingDirection, Sysctl, Values};

fn write(root: &Path, relative: &str, text: &str) {
    let path = root.join(relative);
    std::fs::create_dir_all(path.parent().expect("should succeed")).expect("should succeed");
    std::fs::write(path, text).expect("should succeed");
}

fn read(root: &Path, relative: &str) -> String {
    std::fs::read_to_string(root.join(relative)).expect("should succeed")
}

#[test]
fn sysctl_triple_is_written_read_back_and_compared_with_single_spaces() {
    let dir = tempfile::tempdir().expect("should succeed");
    write(
        dir.path(),
        "proc/sys/net/ipv4/tcp_rmem",
        "4096\t131072\t6291456\n",
    );
    let knob = SysctlKnob::new(Sysctl::Ipv4TcpRmem, dir.path());
    assert_eq!(
        knob.read_current().expect("should succeed"),
        "4096 131072 6291456"
    );
    knob.apply("4096  262144 16777216").expect("should succeed");
    assert_eq!(
        read(dir.path(), "proc/sys/net/ipv4/tcp_rmem"),
        "4096 262144 16777216\n"
    );
}

#[test]
fn sysctl_values_of_the_wrong_shape_are_refused_before_writing() {
    let dir = tempfile::tempdir().expect("should succeed");
    write(dir.path(), "proc/sys/net/ipv4/tcp_wmem", "1 2 3\n");
    write(dir.path(), "proc/sys/net/core/rmem_max", "212992\n");
    let triple = SysctlKnob::new(Sysctl::Ipv4TcpWmem, dir.path());
    for bad in ["5", "1 2", "3 2 1", "1 2 x", "1 2 3 4", "-1 2 3"] {
        let err = triple.apply(bad).expect_err("should be refused");
        assert!(
            matches!(err, KnobError::InvalidValue { .. }),
            "{bad}: {err}"
        );
    }
    let one = SysctlKnob::new(Sysctl::CoreRmemMax, dir.path());
    for bad in ["", "1 2", "4294967295", "big"] {
        assert!(
            matches!(one.apply(bad), Err(KnobError::InvalidValue { .. })),
            "{bad}"
        );
    }
    assert_eq!(read(dir.path(), "proc/sys/net/ipv4/tcp_wmem"), "1 2 3\n");
    assert_eq!(read(dir.path(), "proc/sys/net/core/rmem_max"), "212992\n");
}

#[test]
fn a_value_the_kernel_does_not_keep_is_a_read_back_error() {
    // A directory where the file should be: the write fails, named as a write.
    let dir = tempfile::tempdir().expect("should succeed");
    std::fs::create_dir_all(dir.path().join("proc/sys/net/core/wmem_max")).expect("should succeed");
    let knob = SysctlKnob::new(Sysctl::CoreWmemMax, dir.path());
    let err = knob.apply("1000").expect_err("should be refused");
    assert!(matches!(err, KnobError::Io { op: "write", .. }), "{err}");
    assert_eq!(
        check_read_back("k", "9000", "1500".to_owned())
            .expect_err("should be refused")
            .to_string(),
        "k: set to 9000 but reads back 1500"
    );
}

#[test]
fn rdma_cm_tos_creates_the_device_directory_and_checks_the_byte() {
    let dir = tempfile::tempdir().expect("should succeed");
    let knob = RdmaCmTosKnob::new("mlx5_0", 1, dir.path());
    // Without configfs' rdma_cm directory (module not loaded) the mkdir is what fails.
    assert!(matches!(
        knob.read_current(),
        Err(KnobError::Io { op: "create", .. })
    ));
    std::fs::create_dir_all(dir.path().join("sys/kernel/config/rdma_cm")).expect("should succeed");
    // The kernel fills ports/ after the mkdir; here the test plays the kernel.
    assert!(matches!(
        knob.read_current(),
        Err(KnobError::Io { op: "read", .. })
    ));
    assert!(dir.path().join("sys/kernel/config/rdma_cm/mlx5_0").is_dir());
    write(
        dir.path(),
        "sys/kernel/config/rdma_cm/mlx5_0/ports/1/default_roce_tos",
        "0\n",
    );
    knob.apply("106").expect("should succeed");
    assert_eq!(knob.read_current().expect("should succeed"), "106");
    for bad in ["256", "-1", "0x20", ""] {
        assert!(
            matches!(knob.apply(bad), Err(KnobError::InvalidValue { .. })),
            "{bad}"
        );
    }
    assert_eq!(knob.read_current().expect("should succeed"), "106");
}

#[test]
fn mtu_values_out_of_range_are_refused_before_any_netlink_request() {
    let knob = MtuKnob::new("no-such-if0", Path::new("/"));
    for bad in ["67", "65536", "1500.0", "", "jumbo"] {
        let err = knob.apply(bad).expect_err("should be refused");
        assert!(
            matches!(err, KnobError::InvalidValue { .. }),
            "{bad}: {err}"
        );
        assert!(err.to_string().contains("mtu of no-such-if0"), "{err}");
    }
}

#[test]
fn an_env_knob_has_nothing_on_the_machine_and_ring_and_pfc_knobs_have_controls() {
    let env = Knob::Env {
        name: "NCCL_ALGO".to_owned(),
        values: Values {
            a: "Ring".to_owned(),
            b: "Tree".to_owned(),
        },
    };
    assert!(machine_knob(&env).expect("should succeed").is_none());
    assert_eq!(values_text(&env), ("Ring".to_owned(), "Tree".to_owned()));
    let ring = Knob::Ring {
        interface: "eth0".to_owned(),
        ring: RingDirection::Tx,
        values: Values { a: 1024, b: 4096 },
    };
    let control = machine_knob(&ring)
        .expect("should succeed")
        .expect("a control");
    assert_eq!(control.describe(), "tx ring of eth0");
    assert_eq!(values_text(&ring), ("1024".to_owned(), "4096".to_owned()));
    let pfc = Knob::Pfc {
        interface: "p0".to_owned(),
        values: Values {
            a: PfcPriorities(0),
            b: PfcPriorities(0b1001_0000),
        },
    };
    let control = machine_knob(&pfc)
        .expect("should succeed")
        .expect("a control");
    assert_eq!(control.describe(), "pfc of p0");
    assert_eq!(values_text(&pfc), ("none".to_owned(), "4,7".to_owned()));
}

#[test]
fn ring_and_pfc_values_of_the_wrong_shape_are_refused_before_any_netlink_request() {
    // No such interface: had a request been sent, the error would be a Driver error.
    let ring = RingKnob::new("no-such-if0", RingDirection::Rx);
    for bad in ["0", "-1", "4294967296", "1k", ""] {
        let err = ring.apply(bad).expect_err("should be refused");
        assert!(
            matches!(err, KnobError::InvalidValue { .. }),
            "{bad}: {err}"
        );
        assert!(err.to_string().contains("rx ring of no-such-if0"), "{err}");
    }
    // Negative control: a well-formed size does reach the kernel, which names the device.
    let err = ring.apply("256").expect_err("no such interface");
    assert!(matches!(err, KnobError::Driver { .. }), "{err}");
    let pfc = PfcKnob::new("no-such-if0");
    for bad in ["8", "3,3", "", "3;4", "all", "-1"] {
        let err = pfc.apply(bad).expect_err("should be refused");
        assert!(
            matches!(err, KnobError::InvalidValue { .. }),
            "{bad}: {err}"
        );
    }
    let err = pfc.apply("3,4").expect_err("no such interface");
    assert!(matches!(err, KnobError::Driver { .. }), "{err}");
}

#[test]
fn pfc_text_is_canonical_both_ways() {
    for (text, mask, canonical) in [
        ("none", 0u8, "none"),
        ("3", 0b1000, "3"),
        ("4, 3", 0b1_1000, "3,4"),
        ("0,1,2,3,4,5,6,7", 0xff, "0,1,2,3,4,5,6,7"),
    ] {
        let parsed = PfcPriorities::parse_text(text).expect("valid");
        assert_eq!(parsed, PfcPriorities(mask), "{text}");
        assert_eq!(parsed.text(), canonical);
        assert_eq!(PfcPriorities::parse_text(&parsed.text()), Ok(parsed));
    }
}

/// An interface of this namespace whose driver reports ring sizes (`ETHTOOL_MSG_RINGS_GET`
/// answers with an RX maximum), with its sizes; `None` when none does.
fn interface_with_rings() -> Option<(String, dpu_probe::ethtool_netlink::RingSizes)> {
    let mut socket = dpu_probe::ethtool_netlink::EthtoolNetlink::open().ok()?;
    let mut names: Vec<String> = std::fs::read_dir("/sys/class/net")
        .ok()?
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .collect();
    names.sort();
    names.into_iter().find_map(|name| {
        let sizes = socket.rings(&name).ok()?;
        sizes.rx_max.and(sizes.rx).map(|_| (name, sizes))
    })
}

/// `ethtool -g IF`'s RX line under `section` ("Pre-set maximums", "Current hardware
/// settings"), the anchor a user would read.
fn ethtool_g_rx(output: &str, section: &str) -> Option<u32> {
    let rest = &output[output.find(section)?..];
    let line = rest.lines().find(|l| l.starts_with("RX:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

#[test]
fn a_ring_past_the_driver_maximum_is_refused_naming_both_and_nothing_changes() {
    // Read-only on the machine's own NIC: the refusal comes before any RINGS_SET.
    let Some((name, sizes)) = interface_with_rings() else {
        return eprintln!(
            "SKIPPED: no interface here reports ring sizes (ethtool -g answers n/a); \
             the lab tier sets a real ring"
        );
    };
    let (current, max) = (sizes.rx.expect("checked"), sizes.rx_max.expect("checked"));
    // The decoder against the tool a user trusts, where it is installed.
    if let Ok(out) = std::process::Command::new("ethtool")
        .args(["-g", &name])
        .output()
    {
        if out.status.success() {
            let text = String::from_utf8_lossy(&out.stdout);
            assert_eq!(ethtool_g_rx(&text, "Pre-set maximums"), Some(max), "{text}");
            assert_eq!(
                ethtool_g_rx(&text, "Current hardware"),
                Some(current),
                "{text}"
            );
        }
    }
    let knob = RingKnob::new(&name, RingDirection::Rx);
    assert_eq!(knob.read_current().expect("readable"), current.to_string());
    let past = (max + 1).to_string();
    let err = knob.apply(&past).expect_err("past the maximum");
    let message = err.to_string();
    assert!(matches!(err, KnobError::InvalidValue { .. }), "{message}");
    assert!(
        message.contains(&format!("{past:?}")) && message.contains(&format!("maximum of {max}")),
        "{message}"
    );
    assert!(message.contains(&format!("rx ring of {name}")), "{message}");
    assert_eq!(knob.read_current().expect("readable"), current.to_string());
}
