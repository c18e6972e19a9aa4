//! Knob values checked before anything is written, kernel files written and read back
//! (in a temporary root), and the knobs this build cannot apply refused by name.

use std::path::Path;

use super::control::check_read_back;
use super::*;
use crate::experiment::plan::{RingDirection, Sysctl, Values};

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
fn an_env_knob_has_nothing_on_the_machine_and_a_ring_knob_is_refused() {
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
        ring: RingDirection::Rx,
        values: Values { a: 1024, b: 4096 },
    };
    let err = machine_knob(&ring).expect_err("should be refused");
    assert!(
        err.to_string()
            .contains("ring knob: not supported by this build"),
        "{err}"
    );
}
