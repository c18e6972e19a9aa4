//! `dpuctl capture --snap-socket` against the real `spdk_tgt`, replayed through the fake:
//! an agent on the replaying fake gives the answers the live agent gave at the captured
//! instant (the storage listing with its remote controller, volumes and paths; the
//! volume counters of a snapshot; GetIoStats). Controls: a transcript with one answer
//! altered gives a different answer and the comparison notices; a transcript without a
//! request's answer makes the agent fail that request naming what was not captured.
//!
//! B holds a remote controller `r0` the agent attached (bdev `r0n1`, read by
//! `spdk_nvme_perf` first so its counters are not zero), a malloc bdev and a null bdev.

use std::fs;
use std::path::Path;

use dpu_tests::fake_snap::{FakeSnap, Replay};
use dpu_tests::harness::{dpuctl, AgentOptions, AgentProcess};
use dpu_tests::spdk::{export_bdev, perf_read, REMOTE_NQN};
use serde_json::Value;

use crate::{agent_config, bench, ok, Bench};

/// The subsystem B exports r0n1 in for spdk_nvme_perf to read through.
const EXPORT_NQN: &str = "nqn.2016-06.io.spdk:dpu-capture-r0n1";
/// The volumes whose counters are compared.
const VOLUMES: [&str; 3] = ["r0n1", "m0", "n0"];

/// `dpuctl --agent ENDPOINT -o json ARGS`, which must succeed, parsed.
fn ctl_json(endpoint: &str, args: &[&str]) -> Value {
    let mut all = vec!["--agent", endpoint, "-o", "json"];
    all.extend_from_slice(args);
    let out = dpuctl(&all);
    serde_json::from_str(&ok(&out)).unwrap_or_else(|e| panic!("dpuctl {all:?}: not JSON ({e})"))
}

/// What the agent at `endpoint` answers, the parts that come from SPDK: the storage
/// listing, each volume's counter samples (key, value, unit, source; a snapshot's time
/// is the agent's own) and GetIoStats of r0n1 (without `takenAt`, the agent's clock).
fn answers(endpoint: &str) -> Value {
    let list = ctl_json(endpoint, &["storage", "list"]);
    let mut select = vec!["dpu", "counters"];
    let selectors: Vec<String> = VOLUMES.iter().map(|v| format!("volume:{v}")).collect();
    for selector in &selectors {
        select.extend(["-s", selector.as_str()]);
    }
    let snapshot = ctl_json(endpoint, &select);
    let mut samples: Vec<Value> = snapshot["samples"]
        .as_array()
        .unwrap_or_else(|| panic!("no samples: {snapshot}"))
        .iter()
        // The agent adds its local sources to a snapshot; only the volumes come from SPDK.
        .filter(|s| s["source"] == "volume")
        .map(|s| {
            serde_json::json!({"object": s["object"], "counter": s["counter"],
                "value": s["value"], "unit": s["unit"], "source": s["source"]})
        })
        .collect();
    samples.sort_by_key(|s| s.to_string());
    let mut stats = ctl_json(endpoint, &["storage", "stats", "volumes/r0n1"]);
    // When the agent answered, not what SPDK said.
    stats
        .as_object_mut()
        .expect("GetIoStats is an object")
        .remove("takenAt");
    serde_json::json!({"list": list, "samples": samples, "errors": snapshot["errors"],
        "stats": stats})
}

/// Copies the files under `from` to `to` (the agent's state directory: plain files).
fn copy_tree(from: &Path, to: &Path) {
    fs::create_dir_all(to).expect("mkdir");
    for entry in fs::read_dir(from).expect("read state dir") {
        let entry = entry.expect("entry");
        let target = to.join(entry.file_name());
        if entry.file_type().expect("type").is_dir() {
            copy_tree(&entry.path(), &target);
        } else {
            fs::copy(entry.path(), &target).expect("copy");
        }
    }
}

/// An agent like the live one (same config, a copy of its desired state, same sys root)
/// on a fake replaying `transcript` at reading 1; returns it with the fake.
fn replay_agent(bench: &Bench, name: &str, transcript: &str) -> (AgentProcess, FakeSnap) {
    let dir = bench.dir().join(name);
    fs::create_dir_all(&dir).expect("mkdir");
    let replay = Replay::from_jsonl(transcript).expect("transcript parses");
    let fake = FakeSnap::start_replaying(&dir.join("replay.sock"), replay).expect("fake");
    fake.replay_reading(Some(1));
    copy_tree(&bench.dir().join("state"), &dir.join("state"));
    let mut options = AgentOptions::new(&dir, &bench._root);
    options.snap_socket = fake.path().to_owned();
    options.config_toml = agent_config("");
    (AgentProcess::start(&options), fake)
}

/// Every `bdev_get_iostat` answer for r0n1 with `bytes_read` raised by 4096.
fn altered(transcript: &str) -> String {
    let mut changed = 0;
    let lines: Vec<String> = transcript
        .lines()
        .map(|line| {
            let mut exchange: Value = serde_json::from_str(line).expect("exchange");
            if exchange["method"] == "bdev_get_iostat" {
                for bdev in exchange["response"]["result"]["bdevs"]
                    .as_array_mut()
                    .into_iter()
                    .flatten()
                {
                    if bdev["name"] == "r0n1" {
                        let read = bdev["bytes_read"].as_u64().expect("bytes_read");
                        bdev["bytes_read"] = (read + 4096).into();
                        changed += 1;
                    }
                }
            }
            exchange.to_string()
        })
        .collect();
    assert!(changed > 0, "no r0n1 iostat answer in the transcript");
    lines.join("\n")
}

#[test]
fn spdk_transcript_replays_through_the_fake_to_the_live_agents_answers() {
    let bench = bench!();
    ok(&bench.attach("r0", "127.0.0.1", bench.remote.port(), REMOTE_NQN, &[]));
    bench
        .dpu
        .rpc("bdev_malloc_create", &["-b", "m0", "8", "512"])
        .unwrap_or_else(|e| panic!("{e}"));
    bench
        .dpu
        .rpc("bdev_null_create", &["n0", "16", "512"])
        .unwrap_or_else(|e| panic!("{e}"));
    let port = export_bdev(&bench.dpu, "r0n1", EXPORT_NQN).unwrap_or_else(|e| panic!("{e}"));
    perf_read(port, EXPORT_NQN, 4096, 64).unwrap_or_else(|e| panic!("{e}"));

    let endpoint = bench.agent.endpoint();
    let before = answers(&endpoint);
    let out = bench.dir().join("bundle");
    let (root, bundle, socket) = (
        bench._root.display().to_string(),
        out.display().to_string(),
        bench.dpu.socket().display().to_string(),
    );
    let capture = dpuctl(&[
        "--sys-root",
        &root,
        "capture",
        "--out",
        &bundle,
        "--snap-socket",
        &socket,
        "--no-redact",
        "--interval",
        "1s",
    ]);
    eprintln!("{}", ok(&capture));
    let after = answers(&endpoint);
    assert_eq!(before, after, "the live answers moved during the capture");
    // Not trivially equal: the listing shows r0's volume and path, the counters moved.
    let listed = after["list"].to_string();
    assert!(
        listed.contains("volumes/r0n1") && listed.contains("NVME_PATH_STATE_USABLE"),
        "{listed}"
    );
    let reads = after["stats"]["bytesRead"].clone();
    assert_ne!(crate::json_u64(&reads), 0, "r0n1 was not read: {after}");

    let manifest: Value =
        serde_json::from_slice(&fs::read(out.join("manifest.json")).expect("manifest"))
            .expect("JSON");
    let entry = &manifest["jsonrpc"][0];
    assert_eq!(entry["dialect"], "plain-spdk", "{entry}");
    assert_eq!(entry["refused"], serde_json::json!([]), "{entry}");
    let transcript = fs::read_to_string(out.join(entry["transcript"].as_str().expect("path")))
        .expect("transcript");
    // Plain SPDK lacks SNAP's listings: recorded as SPDK's refusal.
    let refusals = entry["errors"].to_string();
    assert!(refusals.contains("nvme_subsystem_list"), "{entry}");
    eprintln!(
        "transcript: {} exchanges, {} answered with an error",
        entry["exchanges"],
        entry["errors"].as_array().map_or(0, Vec::len)
    );

    // The agent on the replaying fake answers as the live one did.
    let (agent, fake) = replay_agent(&bench, "replay", &transcript);
    let replayed = answers(&agent.endpoint());
    assert_eq!(
        replayed,
        after,
        "replayed answers differ from the live ones\n--- replay agent ---\n{}",
        agent.log()
    );
    // Everything it asked was in the transcript: no answer was a "not captured".
    let recorded: Vec<(Value, Value)> = transcript
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).expect("exchange"))
        .map(|e| {
            (
                e["method"].clone(),
                e["request"].get("params").cloned().unwrap_or(Value::Null),
            )
        })
        .collect();
    for (method, params) in fake.requests() {
        assert!(
            recorded.contains(&(Value::from(method.as_str()), params.clone())),
            "the replay agent asked {method} {params}, which was not captured"
        );
    }
    let asked: Vec<String> = fake.requests().into_iter().map(|(m, _)| m).collect();
    eprintln!("the replay agent asked {} requests: {asked:?}", asked.len());
    drop((agent, fake));

    // Control: one answer altered (r0n1's bytes_read), and the comparison notices.
    let (agent, _fake) = replay_agent(&bench, "altered", &altered(&transcript));
    let changed = answers(&agent.endpoint());
    assert_ne!(
        changed, after,
        "an altered transcript gave the live answers"
    );
    assert_eq!(
        crate::json_u64(&changed["stats"]["bytesRead"]),
        crate::json_u64(&reads) + 4096
    );
    drop(agent);

    // Control: without r0n1's iostat the agent's GetIoStats fails, naming what is missing.
    let without: Vec<&str> = transcript
        .lines()
        .filter(|l| {
            !(l.contains("\"bdev_get_iostat\"") && l.contains("\"params\":{\"name\":\"r0n1\"}"))
        })
        .collect();
    assert!(
        without.len() < transcript.lines().count(),
        "nothing removed"
    );
    let (agent, _fake) = replay_agent(&bench, "missing", &without.join("\n"));
    let refused = dpuctl(&[
        "--agent",
        &agent.endpoint(),
        "storage",
        "stats",
        "volumes/r0n1",
    ]);
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(
        !refused.status.success(),
        "stats answered without its answer"
    );
    assert!(stderr.contains("not captured"), "{stderr}");
}
