//! The netlink part of `dpuctl capture` on this machine's real kernel: each reading's
//! netlink exchanges replay, through the probe's own sampler under the reading's root,
//! exactly the samples the live sampler answered at that instant (`ROOT.live-samples`);
//! an altered recorded answer changes the replayed answer (and only that one); a request
//! the recording lacks is an error naming it, never a live answer; redaction leaves no
//! MAC of the machine in the netlink files and maps a MAC as its sysfs twin is mapped.

use std::fs;
use std::path::{Path, PathBuf};

use dpu_probe::counters::{NetdevSource, Sampler};
use dpu_probe::netlink::RouteSocket;
use dpu_probe::snapshot::Snapshot;
use dpu_probe::SysRoot;
use dpu_tests::capture::{flip_first_stats_answer_byte, live_sample_lines, sample_lines};
use dpu_tests::harness::dpuctl;
use dpu_tests::skip;

/// The two readings of a bundle, as roots relative to it.
const READINGS: [&str; 2] = ["root", "readings/1/root"];

/// Runs `dpuctl capture --out OUT ARGS` on the live machine, requiring success.
fn capture(out: &Path, args: &[&str]) {
    let shown = out.display().to_string();
    let mut argv = vec!["capture", "--out", shown.as_str(), "--interval", "200ms"];
    argv.extend_from_slice(args);
    let run = dpuctl(&argv);
    assert!(
        run.status.success(),
        "capture failed: {}",
        String::from_utf8_lossy(&run.stderr)
    );
}

/// The root's own sampler (what the agent builds for a `--sys-root`) replaying a reading.
fn replay(bundle: &Path, reading: &str) -> Snapshot {
    let root = SysRoot::new(bundle.join(reading));
    assert_eq!(
        NetdevSource::for_root(&root),
        NetdevSource::Netlink,
        "a capture's reading with a recording answers netlink"
    );
    Sampler::new(root).snapshot(&[])
}

fn netdev_lines(lines: &[String]) -> Vec<&String> {
    lines.iter().filter(|l| l.starts_with("netdev:")).collect()
}

/// Skips unless this kernel answers a `NETLINK_ROUTE` link dump.
fn netlink_answers() -> Result<(), String> {
    use dpu_probe::netlink::RouteStats;
    let mut socket = RouteSocket::open().map_err(|e| format!("no NETLINK_ROUTE socket: {e}"))?;
    let links = socket.links().map_err(|e| format!("no link dump: {e}"))?;
    if links.is_empty() {
        return Err("the link dump lists no link".to_owned());
    }
    Ok(())
}

fn copy_tree(from: &Path, to: &Path) {
    let status = std::process::Command::new("cp")
        .arg("-a")
        .arg(from)
        .arg(to)
        .status()
        .expect("cp");
    assert!(status.success());
}

#[test]
fn a_capture_of_this_kernel_replays_the_live_netlink_answers_of_each_reading() {
    if let Err(why) = netlink_answers() {
        skip!("{why}");
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let bundle = dir.path().join("bundle");
    // Loopback traffic throughout, so some counter surely moves between the readings.
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let sender = {
        let stop = std::sync::Arc::clone(&stop);
        std::thread::spawn(move || {
            let socket = std::net::UdpSocket::bind("127.0.0.1:0").expect("udp socket");
            let target = socket.local_addr().expect("its address");
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                let _ = socket.send_to(b"capture round trip", target);
                let mut buf = [0u8; 64];
                let _ = socket.set_read_timeout(Some(std::time::Duration::from_millis(10)));
                let _ = socket.recv_from(&mut buf);
            }
        })
    };
    capture(&bundle, &["--no-redact"]);
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    sender.join().expect("sender");

    let manifest: serde_json::Value =
        serde_json::from_slice(&fs::read(bundle.join("manifest.json")).expect("manifest"))
            .expect("JSON");
    assert_eq!(manifest["format"], "dpu-capture/2");
    for (index, reading) in READINGS.iter().enumerate() {
        let listed = &manifest["readings"][index]["netlink"];
        assert_eq!(listed["path"], format!("{reading}.netlink"));
        let exchanges: Vec<&str> = listed["exchanges"]
            .as_array()
            .expect("exchanges")
            .iter()
            .filter_map(|e| e.as_str())
            .collect();
        assert!(
            exchanges.contains(&"route: RTM_GETLINK dump")
                && exchanges
                    .iter()
                    .any(|e| e.starts_with("route: RTM_GETSTATS")),
            "{reading}: {exchanges:?}"
        );

        let live = live_sample_lines(&bundle.join(reading));
        let replayed = replay(&bundle, reading);
        assert!(
            replayed.errors.is_empty(),
            "{reading}: {:?}",
            replayed.errors
        );
        let replayed = sample_lines(&replayed);
        assert!(
            !netdev_lines(&live).is_empty(),
            "{reading}: the live sampler read netdevs over netlink"
        );
        assert_eq!(
            replayed, live,
            "{reading}: replay differs from the live answers"
        );
    }
    // The two readings are two instants: the loopback traffic above moved `lo`'s
    // counters, so the second reading is not the first replayed twice.
    assert_ne!(
        live_sample_lines(&bundle.join(READINGS[0])),
        live_sample_lines(&bundle.join(READINGS[1])),
        "no counter moved between the readings"
    );
}

#[test]
fn an_altered_recorded_answer_changes_the_replay_and_a_missing_one_is_an_error() {
    if let Err(why) = netlink_answers() {
        skip!("{why}");
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let bundle = dir.path().join("bundle");
    capture(&bundle, &["--no-redact"]);
    let reading = READINGS[1];
    let live = live_sample_lines(&bundle.join(reading));
    let file: PathBuf = bundle.join(format!("{reading}.netlink"));
    let text = fs::read_to_string(&file).expect("recording");

    // Control first: untouched, the replay equals the live answers.
    assert_eq!(sample_lines(&replay(&bundle, reading)), live);

    // rx_packets of the first link in the stats dump, one bit changed.
    let altered = dir.path().join("altered");
    copy_tree(&bundle, &altered);
    flip_first_stats_answer_byte(&altered.join(format!("{reading}.netlink")));
    let replayed = sample_lines(&replay(&altered, reading));
    let differing: Vec<_> = replayed.iter().filter(|l| !live.contains(l)).collect();
    assert_eq!(
        differing.len(),
        1,
        "one altered byte changes exactly one replayed answer: {differing:?}"
    );
    assert!(differing[0].contains("/rx_packets\t"), "{differing:?}");

    // The stats exchange taken out: an error naming the request and the file, and no
    // netdev sample from anywhere else (never the live kernel).
    let missing = dir.path().join("missing");
    copy_tree(&bundle, &missing);
    let without: Vec<&str> = {
        let mut keep = Vec::new();
        let mut dropping = false;
        for line in text.lines() {
            if let Some(comment) = line.strip_prefix("# ") {
                dropping = comment.starts_with("RTM_GETSTATS");
            }
            if !dropping {
                keep.push(line);
            }
        }
        keep
    };
    fs::write(
        missing.join(format!("{reading}.netlink")),
        without.join("\n") + "\n",
    )
    .expect("write");
    let snapshot = replay(&missing, reading);
    let errors = format!("{:?}", snapshot.errors);
    assert!(
        errors.contains("RTM_GETSTATS") && errors.contains("not in the netlink recording"),
        "{errors}"
    );
    assert!(
        netdev_lines(&sample_lines(&snapshot)).is_empty(),
        "no netdev answer without its recording"
    );
}

/// This machine's link-layer addresses worth redacting, from sysfs, as netlink-file hex.
fn machine_macs() -> Vec<(String, String)> {
    let mut macs = Vec::new();
    for entry in fs::read_dir("/sys/class/net")
        .expect("/sys/class/net")
        .flatten()
    {
        let Ok(text) = fs::read_to_string(entry.path().join("address")) else {
            continue;
        };
        let mac = text.trim().to_ascii_lowercase();
        if mac.is_empty() || mac.split(':').all(|g| g == "00" || g == "ff") {
            continue;
        }
        macs.push((mac.clone(), mac.replace(':', "")));
    }
    macs
}

#[test]
fn redaction_leaves_no_mac_in_the_netlink_files_and_maps_it_like_sysfs() {
    if let Err(why) = netlink_answers() {
        skip!("{why}");
    }
    let macs = machine_macs();
    if macs.is_empty() {
        skip!("no link with a MAC on this machine: nothing to redact");
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let plain = dir.path().join("plain");
    let redacted = dir.path().join("redacted");
    capture(&plain, &["--no-redact"]);
    capture(&redacted, &[]);
    for reading in READINGS {
        let name = format!("{reading}.netlink");
        let plain_text = fs::read_to_string(plain.join(&name)).expect("plain recording");
        let redacted_text = fs::read_to_string(redacted.join(&name)).expect("redacted");
        // Control: the search finds the MACs where they were not redacted.
        assert!(
            macs.iter()
                .any(|(_, hex)| plain_text.contains(hex.as_str())),
            "{name}: no MAC of {macs:?} in the unredacted recording"
        );
        for (mac, hex) in &macs {
            assert!(
                !redacted_text.contains(hex.as_str()),
                "{name}: {mac} is in the redacted recording"
            );
        }
    }
    // The same placeholder as the sysfs twin: each redacted sysfs address is in the
    // netlink file as bytes.
    let mut twins = 0;
    for entry in fs::read_dir(redacted.join("root/sys/class/net"))
        .expect("net")
        .flatten()
    {
        let Ok(text) = fs::read_to_string(entry.path().join("address")) else {
            continue;
        };
        let placeholder = text.trim();
        if !placeholder.starts_with("02:00:00") {
            continue;
        }
        let hex = placeholder.replace(':', "");
        let recording = fs::read_to_string(redacted.join("root.netlink")).expect("recording");
        assert!(
            recording.contains(&hex),
            "{placeholder} of {:?} not in root.netlink",
            entry.file_name()
        );
        twins += 1;
    }
    assert!(twins > 0, "no redacted address in the tree to compare");
    // A redacted capture still replays the live answers (counters carry no MAC).
    for reading in READINGS {
        assert_eq!(
            sample_lines(&replay(&redacted, reading)),
            live_sample_lines(&redacted.join(reading)),
            "{reading}"
        );
    }
}
