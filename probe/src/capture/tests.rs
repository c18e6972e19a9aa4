//! The recorder sees the probe's reads, keeps links as links, and costs nothing when off.
//! One test function: a recording is process-wide, so tests that start one must not run
//! in parallel with each other, and other tests' reads meanwhile are recorded as outside
//! the root (the assertions are about this test's tree only).

use std::fs;
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};

use super::{start, RecordError, RecordedNode};
use crate::root::{list_dir, read_attr, read_optional_attr};
use crate::SysRoot;

fn tree() -> (tempfile::TempDir, SysRoot) {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path().join("root");
    let dev = root.join("sys/devices/pci0000:00/0000:03:00.0/net/eth0");
    fs::create_dir_all(&dev).expect("mkdir");
    fs::write(dev.join("address"), "b8:3f:d2:12:34:56\n").expect("write");
    fs::write(dev.join("mtu"), "9000\n").expect("write");
    // A directory where a file is expected: the read fails with EISDIR, not ENOENT.
    fs::create_dir(dev.join("speed")).expect("mkdir");
    fs::create_dir_all(root.join("sys/class/net")).expect("mkdir");
    symlink(
        "../../devices/pci0000:00/0000:03:00.0/net/eth0",
        root.join("sys/class/net/eth0"),
    )
    .expect("symlink");
    (dir, SysRoot::new(root))
}

fn node<'a>(
    nodes: &'a std::collections::BTreeMap<PathBuf, RecordedNode>,
    p: &str,
) -> &'a RecordedNode {
    nodes
        .get(Path::new(p))
        .unwrap_or_else(|| panic!("{p} not recorded: {:?}", nodes.keys().collect::<Vec<_>>()))
}

#[test]
fn reads_are_recorded_at_their_physical_paths_with_links_kept_and_nothing_when_off() {
    let (dir, root) = tree();
    let class = root.sys("class/net");

    // Off: reads work and nothing is kept for a later session.
    assert_eq!(read_attr(&class.join("eth0/mtu")).expect("mtu"), "9000");

    let session = start(root.path()).expect("start");
    assert!(
        matches!(start(root.path()), Err(RecordError::Busy)),
        "one at a time"
    );
    assert_eq!(list_dir(&class).expect("list"), ["eth0"]);
    assert_eq!(
        read_attr(&class.join("eth0/address")).expect("address"),
        "b8:3f:d2:12:34:56"
    );
    assert_eq!(read_optional_attr(&class.join("eth0/speed")), None);
    assert_eq!(read_optional_attr(&class.join("eth0/absent")), None);
    let recording = session.finish();
    let nodes = &recording.nodes;

    assert_eq!(
        node(nodes, "sys/class/net/eth0"),
        &RecordedNode::Link {
            target: "../../devices/pci0000:00/0000:03:00.0/net/eth0".into(),
            resolved: "sys/devices/pci0000:00/0000:03:00.0/net/eth0".into(),
            to_dir: true,
        }
    );
    assert_eq!(node(nodes, "sys/class/net"), &RecordedNode::Dir);
    let physical = "sys/devices/pci0000:00/0000:03:00.0/net/eth0";
    assert_eq!(
        node(nodes, &format!("{physical}/address")),
        &RecordedNode::File(b"b8:3f:d2:12:34:56\n".to_vec())
    );
    assert!(matches!(
        node(nodes, &format!("{physical}/speed")),
        RecordedNode::Unreadable {
            errno: Some(libc::EISDIR),
            ..
        }
    ));
    assert!(
        !nodes.contains_key(Path::new(&format!("{physical}/absent"))),
        "absence replays by itself"
    );
    assert!(
        !nodes.contains_key(Path::new(&format!("{physical}/mtu"))),
        "the read made before the session is not in it"
    );
    // A recording is process-wide: other tests of this binary, running meanwhile, read
    // their own temporary trees, which land here as outside the root. None of this test's
    // reads may.
    let ours: Vec<_> = recording
        .outside
        .iter()
        .filter(|(path, _)| path.starts_with(dir.path()))
        .collect();
    assert!(ours.is_empty(), "{ours:?}");

    // Finished: a new session may start, and reads after the end are not recorded.
    let again = start(root.path()).expect("a second session after the first finished");
    let empty = again.finish();
    read_attr(&class.join("eth0/mtu")).expect("mtu");
    assert!(empty.nodes.is_empty());
}
