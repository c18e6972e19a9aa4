use std::fs;

use dpu_probe::capture::write_netlink_file;

use super::*;

/// Where the agent's tc reads go: a capture's recording when its root has one (so a
/// replayed OVS is joined to the captured machine's filters), a broken recording stays
/// broken, and the live kernel for `/` and for a fixture tree without a recording.
#[test]
fn tc_reads_follow_a_captures_recording_and_the_live_kernel_otherwise() {
    assert!(matches!(
        tc_netlink_for(&SysRoot::new("/")),
        NetlinkAccess::Live
    ));
    let dir = tempfile::tempdir().expect("tempdir");
    let fixture = dir.path().join("fixture");
    fs::create_dir_all(fixture.join("sys/class/net")).expect("tree");
    assert!(matches!(
        tc_netlink_for(&SysRoot::new(&fixture)),
        NetlinkAccess::Live
    ));

    let capture = dir.path().join("bundle/root");
    fs::create_dir_all(capture.join("sys/class/net")).expect("tree");
    fs::write(
        dir.path().join("bundle/root.netlink"),
        write_netlink_file(&[]),
    )
    .expect("write");
    assert!(matches!(
        tc_netlink_for(&SysRoot::new(&capture)),
        NetlinkAccess::Replay(_)
    ));

    fs::write(dir.path().join("bundle/root.netlink"), "not a recording\n").expect("write");
    assert!(matches!(
        tc_netlink_for(&SysRoot::new(&capture)),
        NetlinkAccess::Broken { .. }
    ));
}
