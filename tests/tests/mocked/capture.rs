//! `dpuctl capture`: a bundle's `root/` replays as a `--sys-root` and gives the answers
//! the source gave (this machine's kernel and the BlueField-3 host fixture), redaction
//! leaves no identifier of the source in the bundle and keeps the replay parseable, and
//! bad input is refused with nothing written.

use std::fs;
use std::path::{Path, PathBuf};

use dpu_probe::counters::{NetdevSource, Sampler};
use dpu_probe::pci::PciFilter;
use dpu_probe::{netdev, pci, rdma, system, SysRoot};
use dpu_tests::capture::check_results;
use dpu_tests::fixture;
use dpu_tests::harness::dpuctl;
use serde_json::Value;

/// Runs `dpuctl [--sys-root ROOT] capture --out OUT ARGS`, requiring success.
fn capture(root: Option<&Path>, out: &Path, args: &[&str]) {
    let mut argv: Vec<String> = Vec::new();
    if let Some(root) = root {
        argv.extend(["--sys-root".into(), root.display().to_string()]);
    }
    argv.extend(["capture".into(), "--out".into(), out.display().to_string()]);
    argv.extend(args.iter().map(|a| (*a).to_owned()));
    let argv: Vec<&str> = argv.iter().map(String::as_str).collect();
    let run = dpuctl(&argv);
    assert!(
        run.status.success(),
        "capture failed: {}",
        String::from_utf8_lossy(&run.stderr)
    );
}

/// `check --no-agent -o json` under `root`: each result's id, status and facts, and its
/// detail with the root's path taken out (the fw.* results name it).
fn check_answers(root: &Path) -> Vec<Value> {
    let shown = root.display().to_string();
    check_results(root)
        .iter()
        .map(|r| {
            let detail = r["detail"].as_str().unwrap_or_default().replace(&shown, "ROOT");
            serde_json::json!({"id": r["id"], "status": r["status"], "facts": r["facts"], "detail": detail})
        })
        .collect()
}

/// What `dpu info` shows of a machine, read the way the agent's inventory reads it; the
/// uptime left out (it moves) unless `with_uptime`.
fn inventory(root: &Path, with_uptime: bool) -> String {
    let root = SysRoot::new(root);
    let mut system = system::read_system_facts(&root);
    if !with_uptime {
        system.uptime = None;
    }
    format!(
        "{system:#?}\n{:#?}\n{:#?}\n{:#?}",
        pci::list_pci_functions(&root, PciFilter::All),
        netdev::list_netdevs(&root),
        rdma::list_rdma_devices(&root),
    )
}

/// A counter snapshot's keys and values under `root` (netdevs from sysfs).
fn counters(root: &Path) -> Vec<(String, String)> {
    let mut sampler = Sampler::with_netdev_source(SysRoot::new(root), NetdevSource::Sysfs);
    let snapshot = sampler.snapshot(&[]);
    let mut values: Vec<_> = snapshot
        .samples
        .iter()
        .map(|s| (format!("{:?}", s.key), format!("{:?}", s.value)))
        .collect();
    values.sort();
    values
}

fn manifest(out: &Path) -> Value {
    serde_json::from_slice(&fs::read(out.join("manifest.json")).expect("manifest")).expect("JSON")
}

#[test]
fn a_capture_of_this_kernel_replays_the_same_check_facts_and_inventory() {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = dir.path().join("bundle");
    let live = Path::new("/");
    let live_check = check_answers(live);
    capture(None, &out, &["--no-redact", "--interval", "200ms"]);
    let replay = out.join("root");
    let strip_fw = |answers: Vec<Value>| -> Vec<Value> {
        // The firmware tool runs on the live machine and never on a tree, and a capture
        // does not record its output (manifest `not_captured`).
        answers
            .into_iter()
            .filter(|r| !r["id"].as_str().unwrap_or_default().starts_with("fw."))
            .map(|mut r| {
                r["detail"] = Value::Null;
                r
            })
            .collect()
    };
    let live_check = strip_fw(live_check);
    assert!(live_check.len() > 10, "check answered: {live_check:?}");
    assert_eq!(strip_fw(check_answers(&replay)), live_check);
    assert_eq!(inventory(&replay, false), inventory(live, false));

    let m = manifest(&out);
    assert_eq!(m["redacted"], false);
    assert_eq!(m["format"], "dpu-capture/2");
    let kernel = fs::read_to_string("/proc/sys/kernel/osrelease").expect("osrelease");
    assert_eq!(m["kernel"], kernel.trim());
    assert!(out
        .join("readings/1/root/proc/sys/kernel/osrelease")
        .is_file());

    // Negative control: the comparison sees a change in the replayed tree.
    let netdevs = netdev::list_netdevs(&SysRoot::new(&replay)).expect("netdevs");
    let first = netdevs.first().expect("this machine has a netdev");
    let mtu = replay.join("sys/class/net").join(&first.ifname).join("mtu");
    fs::write(&mtu, format!("{}\n", first.mtu + 1)).expect("change the replayed mtu");
    assert_ne!(inventory(&replay, false), inventory(live, false));
}

#[test]
fn a_fixture_capture_replays_check_inventory_and_counters_exactly() {
    let (_fixture, source) = fixture::bluefield3_host_tempdir();
    let dir = tempfile::tempdir().expect("tempdir");
    let out = dir.path().join("bundle");
    capture(Some(&source), &out, &["--no-redact", "--interval", "100ms"]);
    let replay = out.join("root");
    let expected = check_answers(&source);
    assert!(
        expected
            .iter()
            .any(|r| r["id"] == "rdma.port" && r["status"] == "pass"),
        "the fixture has an RDMA port to replay: {expected:?}"
    );
    assert_eq!(check_answers(&replay), expected);
    assert_eq!(inventory(&replay, true), inventory(&source, true));
    let counted = counters(&source);
    assert!(
        counted.len() > 20,
        "the fixture has counters: {}",
        counted.len()
    );
    assert_eq!(counters(&replay), counted);
    assert_eq!(counters(&out.join("readings/1/root")), counted);

    // Negative control: a counter changed in the replay is seen.
    let data = replay.join("sys/class/infiniband/mlx5_0/ports/1/counters/port_xmit_data");
    let before = fs::read_to_string(&data).expect("a recorded counter");
    fs::write(
        &data,
        format!("{}\n", before.trim().parse::<u64>().expect("u64") + 1),
    )
    .expect("write");
    assert_ne!(counters(&replay), counted);
}

/// Every regular file and link target under `dir`, as text (lowercased).
fn bundle_text(dir: &Path) -> Vec<(PathBuf, String)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_owned()];
    while let Some(at) = stack.pop() {
        for entry in fs::read_dir(&at).expect("read_dir") {
            let path = entry.expect("entry").path();
            let meta = fs::symlink_metadata(&path).expect("lstat");
            let text = if meta.file_type().is_symlink() {
                fs::read_link(&path).expect("link").display().to_string()
            } else if meta.is_dir() {
                stack.push(path.clone());
                path.display().to_string()
            } else {
                String::from_utf8_lossy(&fs::read(&path).expect("read")).into_owned()
            };
            out.push((path, text.to_lowercase()));
        }
    }
    out
}

/// The fixture's identifiers (sim/src/fixture/host.rs); its IPv4 address 192.168.100.1 is
/// in the IPv4-mapped GID as `c0a8:6401`.
const ORIGINALS: [&str; 7] = [
    "b8:3f:d2:12:34:56",
    "b8:3f:d2:12:34:57",
    "b83f:d203:0012:3456",
    "b83f:d203:0012:3457",
    "ba3f:d2ff:fe12:3456",
    "c0a8:6401",
    "host-bf3-lab",
];

#[test]
fn a_redacted_capture_holds_no_identifier_of_the_source_and_still_replays() {
    let (_fixture, source) = fixture::bluefield3_host_tempdir();
    let dir = tempfile::tempdir().expect("tempdir");
    let kept = dir.path().join("kept");
    capture(Some(&source), &kept, &["--no-redact", "--interval", "50ms"]);
    let kept_text = bundle_text(&kept);
    // Negative control: every value searched for is in the unredacted bundle.
    for original in ORIGINALS {
        assert!(
            kept_text.iter().any(|(_, t)| t.contains(original)),
            "{original} is not in the unredacted capture: the search proves nothing"
        );
    }

    let out = dir.path().join("redacted");
    capture(Some(&source), &out, &["--interval", "50ms"]);
    for (path, text) in bundle_text(&out) {
        for original in ORIGINALS {
            assert!(
                !text.contains(original),
                "{original} left in {}",
                path.display()
            );
        }
    }

    // Consistent: mlx5_0's node GUID is both devices' system image GUID in the source,
    // and one placeholder in the capture.
    let ib = out.join("root/sys/class/infiniband");
    let read = |p: &str| fs::read_to_string(ib.join(p)).expect(p).trim().to_owned();
    let node_guid = read("mlx5_0/node_guid");
    assert_eq!(read("mlx5_0/sys_image_guid"), node_guid);
    assert_eq!(read("mlx5_1/sys_image_guid"), node_guid);
    assert_ne!(read("mlx5_1/node_guid"), node_guid);
    let m = manifest(&out);
    assert_eq!(m["redacted"], true);
    let guid = m["redactions"]
        .as_array()
        .expect("redactions")
        .iter()
        .find(|r| r["placeholder"] == node_guid.as_str())
        .expect("the placeholder is listed");
    assert_eq!(guid["kind"], "guid");
    assert!(
        guid["files"].as_array().expect("files").len() >= 3,
        "{guid}"
    );

    // The redacted tree still replays: the same results, devices, ports and GIDs.
    let replayed = check_answers(&out.join("root"));
    let original = check_answers(&source);
    let ids = |a: &[Value]| a.iter().map(|r| r["id"].clone()).collect::<Vec<_>>();
    assert_eq!(ids(&replayed), ids(&original));
    let (a, b) = (SysRoot::new(out.join("root")), SysRoot::new(&source));
    let gids = |root: &SysRoot| {
        rdma::list_rdma_devices(root)
            .expect("rdma")
            .iter()
            .map(|d| {
                d.ports
                    .iter()
                    .map(|p| {
                        (
                            p.gids.len(),
                            p.gids.iter().filter(|g| g.ip.is_some()).count(),
                        )
                    })
                    .collect::<Vec<_>>()
            })
            .collect::<Vec<_>>()
    };
    assert_eq!(gids(&a), gids(&b));
    assert_eq!(
        netdev::list_netdevs(&a).expect("netdevs").len(),
        netdev::list_netdevs(&b).expect("netdevs").len()
    );
}

fn refused(args: &[&str]) -> String {
    let run = dpuctl(args);
    assert!(!run.status.success(), "{args:?} was accepted");
    String::from_utf8_lossy(&run.stderr).into_owned()
}

#[test]
fn bad_output_directories_and_intervals_are_refused_with_nothing_written() {
    let dir = tempfile::tempdir().expect("tempdir");
    let full = dir.path().join("full");
    fs::create_dir(&full).expect("mkdir");
    fs::write(full.join("keep.txt"), "mine").expect("write");
    let err = refused(&["capture", "--out", full.to_str().expect("utf-8")]);
    assert!(err.contains("not empty"), "{err}");
    assert_eq!(
        fs::read_dir(&full).expect("dir").count(),
        1,
        "nothing added"
    );
    assert_eq!(
        fs::read_to_string(full.join("keep.txt")).expect("kept"),
        "mine"
    );

    let file = dir.path().join("a-file");
    fs::write(&file, "x").expect("write");
    let err = refused(&["capture", "--out", file.to_str().expect("utf-8")]);
    assert!(err.contains("not a directory"), "{err}");
    let under_file = file.join("bundle");
    let err = refused(&["capture", "--out", under_file.to_str().expect("utf-8")]);
    assert!(err.contains("cannot write"), "{err}");

    let fresh = dir.path().join("fresh");
    for (interval, says) in [
        ("0s", "more than zero"),
        ("soon", "not a duration"),
        ("2h", "at most"),
    ] {
        let err = refused(&[
            "capture",
            "--out",
            fresh.to_str().expect("utf-8"),
            "--interval",
            interval,
        ]);
        assert!(err.contains(says), "--interval {interval}: {err}");
        assert!(
            !fresh.exists(),
            "--interval {interval} wrote {}",
            fresh.display()
        );
    }
}
