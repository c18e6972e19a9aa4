//! `dpuctl capture --snap-socket`: the SNAP/SPDK transcript of a capture against the fake
//! SNAP 4. The capture sends nothing but read-only methods (the fake's own request log
//! says so, not the capture), records a method the peer lacks as the error it answered,
//! writes both readings and lists the transcript in the manifest; redaction leaves no
//! address, UUID, serial or host name of the source in it and maps them as the captured
//! files do (the unredacted capture is the control); the transcript replays through the
//! fake; an unreachable socket fails the capture with nothing written.

use std::fs;
use std::path::Path;
use std::time::Duration;

use dpu_tests::capture::first_line;
use dpu_tests::fake_snap::{FakeSnap, Replay, NOT_CAPTURED_CODE};
use dpu_tests::fixture;
use dpu_tests::harness::dpuctl;
use dpu_tests::spdk::{exchange, RawExchange};
use serde_json::{json, Value};

/// The remote target's address: an identifier the redaction must take out.
const TRADDR: &str = "192.0.2.10";
/// A serial number SNAP lists under `sn`.
const SERIAL: &str = "SECRETSN42";
/// The host fixture's host name (its `/proc/sys/kernel/hostname`), put in an NQN.
const HOSTNAME: &str = "host-bf3-lab";

/// The result of `method` with `params` on `socket` (must succeed).
fn call(socket: &Path, method: &str, params: Value) -> Value {
    let mut request = json!({"jsonrpc": "2.0", "id": 1, "method": method});
    if !params.is_null() {
        request["params"] = params;
    }
    match exchange(
        socket,
        request.to_string().as_bytes(),
        Duration::from_secs(10),
    ) {
        Ok(RawExchange::Reply(reply)) => reply,
        other => panic!("{method}: no reply: {other:?}"),
    }
}

/// A fake SNAP 4 with a remote controller `R` at [`TRADDR`] (bdev `Rn1`) and a subsystem
/// whose NQN names [`HOSTNAME`] and whose serial is [`SERIAL`]; returns it and Rn1's UUID.
fn fake_with_identifiers(dir: &Path) -> (FakeSnap, String) {
    let snap = FakeSnap::start(&dir.join("snap.sock")).expect("fake SNAP");
    let attach = json!({"name": "R", "trtype": "rdma", "adrfam": "ipv4", "traddr": TRADDR,
        "trsvcid": "4420", "subnqn": "nqn.2016-06.io.spdk:cnode1"});
    let attached = call(snap.path(), "bdev_nvme_attach_controller", attach);
    assert_eq!(attached["result"], json!(["Rn1"]), "{attached}");
    let nqn = format!("nqn.2014-08.com.example:{HOSTNAME}");
    let created = call(
        snap.path(),
        "nvme_subsystem_create",
        json!({"nqn": nqn, "serial_number": SERIAL}),
    );
    assert!(created.get("error").is_none(), "{created}");
    let bdevs = call(snap.path(), "bdev_get_bdevs", json!({"name": "Rn1"}));
    let uuid = bdevs["result"][0]["uuid"]
        .as_str()
        .unwrap_or_else(|| panic!("Rn1 has no uuid: {bdevs}"))
        .to_owned();
    (snap, uuid)
}

/// `dpuctl --sys-root ROOT capture --out OUT --snap-socket SOCKET --interval 200ms ARGS`.
fn capture(root: &Path, out: &Path, socket: &Path, args: &[&str]) -> std::process::Output {
    let (root, out, socket) = (
        root.display().to_string(),
        out.display().to_string(),
        socket.display().to_string(),
    );
    let mut argv = vec![
        "--sys-root",
        root.as_str(),
        "capture",
        "--out",
        out.as_str(),
        "--snap-socket",
        socket.as_str(),
        "--interval",
        "200ms",
    ];
    argv.extend_from_slice(args);
    dpuctl(&argv)
}

fn succeeded(run: &std::process::Output) {
    assert!(
        run.status.success(),
        "capture failed: {}",
        String::from_utf8_lossy(&run.stderr)
    );
}

/// The manifest's one transcript entry and the transcript's exchanges.
fn transcript(out: &Path) -> (Value, Vec<Value>, String) {
    let manifest: Value =
        serde_json::from_slice(&fs::read(out.join("manifest.json")).expect("manifest"))
            .expect("manifest JSON");
    let entries = manifest["jsonrpc"].as_array().expect("a jsonrpc list");
    assert_eq!(entries.len(), 1, "{manifest}");
    let entry = entries[0].clone();
    let text = fs::read_to_string(out.join(entry["transcript"].as_str().expect("path")))
        .expect("transcript written");
    let exchanges: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).expect("one JSON object per line"))
        .collect();
    (entry, exchanges, text)
}

/// What the test itself calls read-only, independently of the capture's allow-list.
fn read_only(method: &str) -> bool {
    matches!(method, "rpc_get_methods" | "spdk_get_version")
        || method.starts_with("bdev_get_")
        || method.starts_with("framework_get_")
        || method == "bdev_nvme_get_controllers"
        || method == "bdev_nvme_get_io_paths"
        || method.ends_with("_list")
}

#[test]
fn capture_records_only_read_only_answers_of_both_readings_and_redacts_them() {
    let (dir, root) = fixture::bluefield3_host_tempdir();
    let (snap, uuid) = fake_with_identifiers(dir.path());
    let setup_requests = snap.requests().len();

    let out = dir.path().join("bundle");
    succeeded(&capture(&root, &out, snap.path(), &[]));

    // What reached SNAP, from SNAP's side: read-only methods only, the listings asked.
    let sent: Vec<String> = snap.requests()[setup_requests..]
        .iter()
        .map(|(m, _)| m.clone())
        .collect();
    let written: Vec<&String> = sent.iter().filter(|m| !read_only(m)).collect();
    assert!(written.is_empty(), "the capture sent {written:?}");
    for needed in [
        "spdk_get_version",
        "bdev_get_bdevs",
        "bdev_get_iostat",
        "bdev_nvme_get_controllers",
        "nvme_subsystem_list",
        "framework_get_subsystems",
    ] {
        assert!(
            sent.iter().any(|m| m == needed),
            "{needed} not asked: {sent:?}"
        );
    }

    let (entry, exchanges, text) = transcript(&out);
    assert_eq!(entry["dialect"], "snap4", "{entry}");
    assert_eq!(entry["refused"], json!([]), "{entry}");
    assert_eq!(entry["exchanges"], json!(exchanges.len()), "{entry}");
    // Every request the fake saw is one exchange (nothing recorded that was not asked).
    assert_eq!(exchanges.len(), sent.len(), "{entry}");
    for reading in [1, 2] {
        assert!(
            exchanges.iter().any(|e| e["reading"] == reading),
            "no exchange of reading {reading}"
        );
    }
    // The fake has no framework_get_subsystems: recorded as its refusal, not a failure.
    let refused = exchanges
        .iter()
        .find(|e| e["method"] == "framework_get_subsystems")
        .expect("framework_get_subsystems recorded");
    assert_eq!(refused["response"]["error"]["code"], -32601, "{refused}");
    assert!(
        entry["errors"].as_array().expect("errors").iter().any(|e| e
            .as_str()
            .unwrap_or_default()
            .contains("framework_get_subsystems")),
        "{entry}"
    );

    // Redaction: none of the source's identifiers, consistently replaced.
    for secret in [TRADDR, uuid.as_str(), SERIAL, HOSTNAME] {
        assert!(!text.contains(secret), "{secret} is in the transcript");
    }
    let traddr_of = |reading: u64| -> String {
        exchanges
            .iter()
            .find(|e| e["reading"] == reading && e["method"] == "bdev_nvme_get_controllers")
            .and_then(|e| e["response"]["result"][0]["ctrlrs"][0]["trid"]["traddr"].as_str())
            .unwrap_or_else(|| panic!("no controller traddr in reading {reading}"))
            .to_owned()
    };
    let placeholder = traddr_of(1);
    assert_ne!(placeholder, TRADDR);
    assert!(
        placeholder.parse::<std::net::Ipv4Addr>().is_ok(),
        "{placeholder}"
    );
    assert_eq!(
        traddr_of(2),
        placeholder,
        "the mapping differs between readings"
    );
    // The host name became in the NQN what it became in the captured hostname file.
    let hostname_file =
        fs::read_to_string(out.join("root/proc/sys/kernel/hostname")).expect("hostname captured");
    let host_placeholder = hostname_file.trim();
    assert_ne!(host_placeholder, HOSTNAME);
    assert!(
        text.contains(&format!("nqn.2014-08.com.example:{host_placeholder}")),
        "the NQN's host name is not {host_placeholder}"
    );
    let manifest: Value =
        serde_json::from_slice(&fs::read(out.join("manifest.json")).expect("manifest"))
            .expect("JSON");
    let listed = manifest["redactions"]
        .as_array()
        .expect("redactions")
        .iter()
        .any(|r| {
            r["placeholder"] == placeholder.as_str()
                && r["files"].to_string().contains("jsonrpc/snap.sock.jsonl")
        });
    assert!(
        listed,
        "the transcript's address is not in the manifest's redactions"
    );

    // Control: unredacted, each identifier is there, so the checks above could fail.
    let raw = dir.path().join("raw");
    succeeded(&capture(&root, &raw, snap.path(), &["--no-redact"]));
    let (_, _, raw_text) = transcript(&raw);
    for secret in [TRADDR, uuid.as_str(), SERIAL, HOSTNAME] {
        assert!(
            raw_text.contains(secret),
            "{secret} not in the unredacted transcript"
        );
    }
}

#[test]
fn a_redacted_transcript_replays_through_the_fake() {
    let (dir, root) = fixture::bluefield3_host_tempdir();
    let (snap, uuid) = fake_with_identifiers(dir.path());
    let out = dir.path().join("bundle");
    succeeded(&capture(&root, &out, snap.path(), &[]));
    let live = call(snap.path(), "bdev_get_bdevs", Value::Null);
    drop(snap);

    let (entry, exchanges, text) = transcript(&out);
    let recorded = exchanges
        .iter()
        .find(|e| {
            e["reading"] == 1
                && e["method"] == "bdev_get_bdevs"
                && e["request"].get("params").is_none()
        })
        .expect("bdev_get_bdevs of reading 1")["response"]["result"]
        .clone();
    let replay = Replay::from_jsonl(&text).expect("transcript parses");
    let replaying =
        FakeSnap::start_replaying(&dir.path().join("replay.sock"), replay).expect("replay");
    let replayed = call(replaying.path(), "bdev_get_bdevs", Value::Null);
    assert_eq!(replayed["result"], recorded, "{entry}");
    // Redacted: the same bdevs, the UUID replaced by a placeholder of a UUID's form.
    let replayed_uuid = replayed["result"][0]["uuid"].as_str().expect("uuid");
    assert_ne!(replayed_uuid, uuid);
    assert_eq!(replayed_uuid.len(), uuid.len());
    assert_eq!(replayed["result"][0]["name"], live["result"][0]["name"]);
    assert_eq!(
        replayed["result"][0]["num_blocks"],
        live["result"][0]["num_blocks"]
    );
    // What was not captured is said to be so.
    let create = call(
        replaying.path(),
        "bdev_malloc_create",
        json!({"num_blocks": 8, "block_size": 512}),
    );
    assert_eq!(create["error"]["code"], NOT_CAPTURED_CODE, "{create}");
}

#[test]
fn an_unreachable_snap_socket_fails_the_capture_and_writes_nothing() {
    let (dir, root) = fixture::bluefield3_host_tempdir();
    let out = dir.path().join("bundle");
    let missing = dir.path().join("absent.sock");
    let run = capture(&root, &out, &missing, &[]);
    assert!(
        !run.status.success(),
        "capture of a missing socket succeeded"
    );
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(stderr.contains("absent.sock"), "{stderr}");
    assert!(!out.exists(), "the failed capture left {}", out.display());
}

#[test]
fn dpu_sim_replay_snap_serves_a_transcript_until_sigterm() {
    let (dir, root) = fixture::bluefield3_host_tempdir();
    let (snap, _) = fake_with_identifiers(dir.path());
    let out = dir.path().join("bundle");
    succeeded(&capture(&root, &out, snap.path(), &["--no-redact"]));
    let live = call(snap.path(), "bdev_get_bdevs", json!({"name": "Rn1"}));
    drop(snap);
    let (entry, _, _) = transcript(&out);
    let file = out.join(entry["transcript"].as_str().expect("path"));
    let socket = dir.path().join("served.sock");

    let mut child = std::process::Command::new(dpu_tests::harness::bin_dir().join("dpu-sim"))
        .args(["replay-snap", "--reading", "1", "--transcript"])
        .arg(&file)
        .arg("--socket")
        .arg(&socket)
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("run dpu-sim replay-snap");
    let line = first_line(&mut child);
    assert!(line.contains("replaying"), "{line}");
    let served = call(&socket, "bdev_get_bdevs", json!({"name": "Rn1"}));
    let other = call(&socket, "bdev_get_bdevs", json!({"name": "Rn9"}));
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(i32::try_from(child.id()).expect("pid")),
        nix::sys::signal::Signal::SIGTERM,
    )
    .expect("SIGTERM");
    let status = child.wait().expect("wait");
    assert!(status.success(), "{status}");
    assert_eq!(served["result"], live["result"]);
    assert_eq!(other["error"]["code"], NOT_CAPTURED_CODE, "{other}");
    assert!(!socket.exists(), "the socket outlived dpu-sim");
}
