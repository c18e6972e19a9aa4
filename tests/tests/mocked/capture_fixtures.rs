//! The captures runner: every bundle under `tests/fixtures/captures/NAME/` (made by
//! `scripts/capture-fixture`) must still give the outcomes it was captured with: each
//! reading replayed through the probe's own sampler answers exactly the samples the live
//! sampler answered then (`ROOT.live-samples`, netdevs over the recorded netlink), and
//! `check --no-agent -o json` under its first reading gives the source's results
//! (`expected.json`: id, status, facts). A capture of a DPU's OVS (`--ovs-rundir`) whose
//! `expected.json` holds `switch` (what the live agent answered) is served by [`FakeOvs`]
//! from its transcripts, and a `dpu-agent` on it with `--sys-root` at the same reading
//! must answer `switch bridges` and `switch flows` as the live agent did: the flows from
//! the recorded `dpctl/dump-flows`, their tc filters from the reading's recorded netlink
//! (time-relative fields left out on both sides). A new directory there is tested with no
//! code change; a change of the probe, of `check` or of the agent's Switch service that
//! alters what a captured machine answers fails here, naming the capture.
//!
//! The fixtures: `x86-vm-host` (this project's CI-class VM, redacted), `lab-bluefield-dpu`
//! (the QEMU lab's bluefield VM, `dpu` namespace: soft-RoCE `rxe0` over RDMA netlink, OVS
//! with flows in tc; `--no-redact`), `lab-target` (the lab's target VM: nvmet, `rxe0`;
//! `--no-redact`, since redaction changes the `rdma.gid` facts). How each was taken:
//! docs/hardware.md.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

use dpu_probe::counters::Sampler;
use dpu_probe::SysRoot;
use dpu_sim::fake_ovs::FakeOvs;
use dpu_sim::fake_snap::Replay;
use dpu_tests::capture::{
    check_results, counter_answer_lines, flip_first_stats_answer_byte, live_sample_lines,
    sample_lines, strip_time_relative,
};
use dpu_tests::harness::{dpuctl, free_tcp_port, AgentOptions, AgentProcess};
use dpu_tests::prometheus::{exposed_samples, get_metrics};
use serde_json::Value;

fn captures_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/captures")
}

/// A copy of `bundle` (links as links) at `dir/label`, for a control to alter.
fn copy_of(bundle: &Path, dir: &Path, label: &str) -> PathBuf {
    let to = dir.join(label);
    let status = std::process::Command::new("cp")
        .arg("-a")
        .arg(bundle)
        .arg(&to)
        .status()
        .expect("cp");
    assert!(status.success(), "cp -a {}", bundle.display());
    to
}

/// Every capture directory, sorted.
fn captures() -> Vec<PathBuf> {
    let mut found: Vec<PathBuf> = fs::read_dir(captures_dir())
        .expect("tests/fixtures/captures")
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.is_dir())
        .collect();
    found.sort();
    found
}

/// `check --no-agent -o json` under `root`: id, status and facts of each result.
fn check(root: &Path) -> Vec<Value> {
    check_results(root)
        .iter()
        .map(|r| serde_json::json!({"id": r["id"], "status": r["status"], "facts": r["facts"]}))
        .collect()
}

/// The replay's samples as `KEY<TAB>VALUE` lines, sorted (the capture's format, written
/// here on its own).
fn replayed_samples(root: &Path) -> Vec<String> {
    let snapshot = Sampler::new(SysRoot::new(root)).snapshot(&[]);
    assert!(
        snapshot.errors.is_empty(),
        "{}: {:?}",
        root.display(),
        snapshot.errors
    );
    sample_lines(&snapshot)
}

/// What went wrong with one capture, or nothing.
fn verify(bundle: &Path) -> Vec<String> {
    let name = bundle.file_name().unwrap_or_default().to_string_lossy();
    let mut problems = Vec::new();
    let manifest: Value = match fs::read(bundle.join("manifest.json"))
        .map_err(|e| e.to_string())
        .and_then(|b| serde_json::from_slice(&b).map_err(|e| e.to_string()))
    {
        Ok(m) => m,
        Err(e) => return vec![format!("{name}: manifest.json: {e}")],
    };
    if manifest["format"] != "dpu-capture/2" {
        problems.push(format!("{name}: format {}", manifest["format"]));
    }
    let readings = manifest["readings"].as_array().cloned().unwrap_or_default();
    if readings.len() != 2 {
        problems.push(format!("{name}: {} readings, not 2", readings.len()));
    }
    for reading in &readings {
        let root = reading["root"].as_str().unwrap_or_default();
        let samples = reading["live_samples"].as_str().unwrap_or_default();
        let Ok(text) = fs::read_to_string(bundle.join(samples)) else {
            problems.push(format!("{name}: {root}: no live samples file {samples:?}"));
            continue;
        };
        let live: Vec<String> = text.lines().skip(1).map(str::to_owned).collect();
        let replayed = replayed_samples(&bundle.join(root));
        if live.is_empty() {
            problems.push(format!("{name}: {root}: the live sampler answered nothing"));
        }
        if replayed != live {
            let missing: Vec<_> = live.iter().filter(|l| !replayed.contains(l)).collect();
            let extra: Vec<_> = replayed.iter().filter(|l| !live.contains(l)).collect();
            problems.push(format!(
                "{name}: {root}: the replay differs from the live samples: live only {missing:?}, replay only {extra:?}"
            ));
        }
    }
    match fs::read(bundle.join("expected.json"))
        .map_err(|e| e.to_string())
        .and_then(|b| serde_json::from_slice::<Value>(&b).map_err(|e| e.to_string()))
    {
        Ok(expected) => {
            let replayed = check(&bundle.join("root"));
            if Some(&replayed) != expected["check"].as_array() {
                problems.push(format!(
                    "{name}: check under root/ differs from expected.json: {replayed:?}"
                ));
            }
        }
        Err(e) => problems.push(format!("{name}: expected.json: {e}")),
    }
    problems
}

/// A capture's OVS served by [`FakeOvs`] from its transcripts at one reading, and a
/// `dpu-agent` on it with `--sys-root` at the same reading (and `/metrics` on a loopback
/// port when asked); everything stops when dropped.
struct ReplayedDpu {
    agent: AgentProcess,
    /// The reading's root, relative to the bundle.
    root: &'static str,
    /// The `/metrics` address, when asked for.
    metrics: Option<String>,
    _fake: FakeOvs,
    _dir: tempfile::TempDir,
}

/// The capture's `expected.json` `switch` (`None` for a capture without one).
fn expected_switch(bundle: &Path) -> Option<Value> {
    let expected: Value =
        serde_json::from_slice(&fs::read(bundle.join("expected.json")).ok()?).ok()?;
    let switch = expected.get("switch")?.clone();
    (!switch.is_null()).then_some(switch)
}

/// Starts the replay of `bundle`'s OVS at `expected.json`'s `switch.reading`.
fn replay_dpu(bundle: &Path, switch: &Value, metrics: bool) -> Result<ReplayedDpu, String> {
    let (reading, root) = match switch["reading"].as_u64() {
        Some(1) => (1, "root"),
        Some(2) => (2, "readings/1/root"),
        other => return Err(format!("expected.json: switch.reading {other:?}")),
    };
    let transcript = |file: &str| -> Result<Replay, String> {
        let path = bundle.join("jsonrpc").join(file);
        let text = fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
        Replay::from_jsonl(&text).map_err(|e| format!("{}: {e}", path.display()))
    };
    let (ovsdb, vswitchd) = (
        transcript("ovsdb-server.jsonl")?,
        transcript("ovs-vswitchd.jsonl")?,
    );
    let dir = tempfile::tempdir().expect("tempdir");
    let rundir = dir.path().join("ovs");
    fs::create_dir(&rundir).expect("rundir");
    let fake = FakeOvs::start_replaying(&rundir, ovsdb, vswitchd).expect("replay OVS");
    fake.replay_reading(Some(reading));
    let db = format!("unix:{}", fake.ovsdb_socket().display());
    let agent_dir = dir.path().join("agent");
    fs::create_dir(&agent_dir).expect("agent dir");
    let mut options = AgentOptions::new(&agent_dir, &bundle.join(root)).with_ovs(&db, &rundir);
    let metrics = metrics.then(|| format!("127.0.0.1:{}", free_tcp_port()));
    if let Some(address) = &metrics {
        options.config_toml =
            format!("[security]\ninsecure_listen = true\n[metrics]\nlisten = \"tcp:{address}\"\n");
    }
    Ok(ReplayedDpu {
        agent: AgentProcess::start(&options),
        root,
        metrics,
        _fake: fake,
        _dir: dir,
    })
}

/// What differs between the replayed agent's `switch bridges` and `switch flows` and
/// the capture's `expected.json` `switch` (nothing for a capture without one).
fn verify_switch(bundle: &Path) -> Vec<String> {
    let name = bundle.file_name().unwrap_or_default().to_string_lossy();
    let Some(switch) = expected_switch(bundle) else {
        return Vec::new(); // verify() names an unreadable expected.json
    };
    let replayed = match replay_dpu(bundle, &switch, false) {
        Ok(replayed) => replayed,
        Err(e) => return vec![format!("{name}: {e}")],
    };
    let (endpoint, root) = (replayed.agent.endpoint(), replayed.root);
    let mut problems = Vec::new();
    for what in ["bridges", "flows"] {
        let run = dpuctl(&["--agent", &endpoint, "-o", "json", "switch", what]);
        let answered = serde_json::from_slice::<Value>(&run.stdout).map(|mut v| {
            strip_time_relative(&mut v);
            v
        });
        match answered {
            Ok(answer) if answer == switch[what] => {}
            Ok(answer) => problems.push(format!(
                "{name}: switch {what} under {root} differs from expected.json: {answer}"
            )),
            Err(_) => problems.push(format!(
                "{name}: switch {what} under {root} failed: {}",
                String::from_utf8_lossy(&run.stderr).trim()
            )),
        }
    }
    problems
}

/// The `/metrics` flow series (`dpu_ovs_flows`, `dpu_ovs_flow_packets`,
/// `dpu_ovs_flow_bytes`) as `NAME{level,in_port} VALUE` lines, sorted; zero flow counts
/// left out.
fn flow_series(exposition: &str) -> Vec<String> {
    let mut lines: Vec<String> = exposed_samples(exposition)
        .expect("an exposition")
        .into_iter()
        .filter(|s| s.name.starts_with("dpu_ovs_flow"))
        .filter(|s| !(s.name == "dpu_ovs_flows" && s.value == "0"))
        .map(|s| {
            let label = |key: &str| s.labels.get(key).cloned().unwrap_or_default();
            format!(
                "{}{{{},{}}} {}",
                s.name,
                label("level"),
                label("in_port"),
                s.value
            )
        })
        .collect();
    lines.sort();
    lines
}

/// The same series worked out from the live flows in `expected.json` by hand: the flows
/// counted (all at tc in software, as the lab's have no NIC), each flow's
/// `packetsByLevel`/`bytesByLevel` summed by level and in_port.
fn flow_series_of(flows: &[Value]) -> Vec<String> {
    let mut sums: BTreeMap<String, u64> = BTreeMap::new();
    let level_name = |key: &str| match key {
        "tcSoftware" => "tc-software".to_owned(),
        other => other.to_owned(),
    };
    for flow in flows {
        assert_eq!(flow["dpLayer"], "tc", "a lab flow not in tc: {flow}");
        *sums
            .entry("dpu_ovs_flows{tc-software,} ".to_owned())
            .or_default() += 1;
        let port = flow["inPort"].as_str().unwrap_or_default();
        for (field, series) in [
            ("packetsByLevel", "dpu_ovs_flow_packets"),
            ("bytesByLevel", "dpu_ovs_flow_bytes"),
        ] {
            for (level, value) in flow[field].as_object().into_iter().flatten() {
                let value: u64 = value
                    .as_str()
                    .and_then(|v| v.parse().ok())
                    .expect("a count");
                *sums
                    .entry(format!("{series}{{{},{port}}} ", level_name(level)))
                    .or_default() += value;
            }
        }
    }
    let mut lines: Vec<String> = sums.into_iter().map(|(k, v)| format!("{k}{v}")).collect();
    lines.sort();
    lines
}

/// The replayed agent's `/metrics` flow series.
fn replayed_flow_series(bundle: &Path) -> Vec<String> {
    let switch = expected_switch(bundle).expect("expected.json with switch");
    let replayed = replay_dpu(bundle, &switch, true).expect("replay");
    let address = replayed.metrics.as_deref().expect("metrics");
    let scraped = get_metrics(address, None).expect("scrape");
    assert_eq!(scraped.status, 200, "{}", scraped.body);
    flow_series(&scraped.body)
}

/// `/metrics` of an agent on the replayed DPU sums its flows by level as the live flows
/// in `expected.json` add up (the tc filters' traffic from the recorded netlink, the
/// flows from the recorded dump); control: the copy whose second reading's dump has
/// every packet count raised gives other packet sums and the same flow count.
#[test]
fn the_agents_metrics_on_a_replayed_dpu_sum_its_live_flows_by_level() {
    let bundle = switch_capture();
    let switch = expected_switch(&bundle).expect("switch");
    let flows = switch["flows"]["flows"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let want = flow_series_of(&flows);
    assert!(
        want.iter().any(|l| l.starts_with("dpu_ovs_flow_packets")),
        "{want:?}"
    );
    assert_eq!(replayed_flow_series(&bundle), want);

    let dir = tempfile::tempdir().expect("tempdir");
    let altered = copy_of(&bundle, dir.path(), "altered");
    raise_second_reading_packet_counts(&altered);
    let answered = replayed_flow_series(&altered);
    let differing: Vec<&String> = answered.iter().filter(|l| !want.contains(l)).collect();
    assert!(
        !differing.is_empty()
            && differing
                .iter()
                .all(|l| l.starts_with("dpu_ovs_flow_packets")),
        "{answered:?}"
    );
}

/// Every `packets:N` of the second reading's `dpctl/dump-flows` answers in `bundle`
/// becomes `packets:1N`.
fn raise_second_reading_packet_counts(bundle: &Path) {
    let path = bundle.join("jsonrpc/ovs-vswitchd.jsonl");
    let altered: Vec<String> = fs::read_to_string(&path)
        .expect("transcript")
        .lines()
        .map(|line| {
            let entry: Value = serde_json::from_str(line).expect("JSON line");
            if entry["reading"] == 2 && entry["method"] == "dpctl/dump-flows" {
                line.replace("packets:", "packets:1")
            } else {
                line.to_owned()
            }
        })
        .collect();
    fs::write(&path, altered.join("\n") + "\n").expect("write");
}

/// The capture of a DPU's OVS among the fixtures.
fn switch_capture() -> PathBuf {
    captures()
        .into_iter()
        .find(|b| b.join("jsonrpc/ovs-vswitchd.jsonl").is_file())
        .expect("a capture with OVS transcripts among the fixtures")
}

#[test]
fn an_agent_on_a_replayed_dpu_answers_its_switch_as_it_did_live() {
    let bundle = switch_capture();
    let expected: Value =
        serde_json::from_slice(&fs::read(bundle.join("expected.json")).expect("expected"))
            .expect("JSON");
    // The expectation is worth something only with flows joined to tc filters.
    let flows = expected["switch"]["flows"]["flows"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert!(
        flows
            .iter()
            .any(|f| f["tcFilters"].as_array().is_some_and(|t| !t.is_empty())),
        "{}: no flow with its tc filters in expected.json",
        bundle.display()
    );
    assert_eq!(verify_switch(&bundle), Vec::<String>::new());
}

/// Controls: the flows come from the recorded dump and their tc filters from the recorded
/// netlink, never from this machine: a changed packet count in the reading's dump, and
/// the reading's tc exchanges taken out of its recording, each fail naming `switch flows`.
#[test]
fn the_switch_replay_notices_an_altered_dump_and_missing_tc_answers() {
    let bundle = switch_capture();
    let dir = tempfile::tempdir().expect("tempdir");
    let copy = |label: &str| copy_of(&bundle, dir.path(), label);

    let dump = copy("dump");
    raise_second_reading_packet_counts(&dump);
    let problems = verify_switch(&dump);
    assert!(
        problems.len() == 1 && problems[0].contains("switch flows under readings/1/root differs"),
        "{problems:?}"
    );

    // The tc filter dumps taken out of the second reading's recording.
    let tc = copy("tc");
    let path = tc.join("readings/1/root.netlink");
    let mut kept = Vec::new();
    let mut in_tc = false;
    let recording = fs::read_to_string(&path).expect("recording");
    for line in recording.lines() {
        if let Some(comment) = line.strip_prefix("# ") {
            in_tc = comment.starts_with("RTM_GETTFILTER");
        }
        if !in_tc {
            kept.push(line);
        }
    }
    fs::write(&path, kept.join("\n") + "\n").expect("write");
    let problems = verify_switch(&tc);
    assert!(
        problems.len() == 1
            && problems[0].contains("switch flows under readings/1/root failed")
            && problems[0].contains("RTM_GETTFILTER"),
        "{problems:?}"
    );
}

#[test]
fn every_capture_in_the_fixtures_gives_the_outcomes_it_was_captured_with() {
    let found = captures();
    assert!(
        !found.is_empty(),
        "no capture under {}",
        captures_dir().display()
    );
    let problems: Vec<String> = found
        .iter()
        .flat_map(|b| verify(b).into_iter().chain(verify_switch(b)))
        .collect();
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// The runner's controls, on copies of a capture: an altered recorded netlink answer and
/// an altered expected check each make it fail, naming what differs; the untouched copy
/// passes.
#[test]
fn the_runner_notices_an_altered_answer_file_or_expectation() {
    let Some(bundle) = captures()
        .into_iter()
        .find(|b| b.join("readings/1/root.netlink").is_file())
    else {
        panic!("no capture with a netlink recording to alter");
    };
    let dir = tempfile::tempdir().expect("tempdir");
    let copy = |label: &str| copy_of(&bundle, dir.path(), label);
    let untouched = copy("untouched");
    assert_eq!(
        verify(&untouched),
        Vec::<String>::new(),
        "control: a copy passes"
    );

    // One byte of the first stats answer's rtnl_link_stats64 (rx_packets).
    let netlink = copy("netlink");
    flip_first_stats_answer_byte(&netlink.join("readings/1/root.netlink"));
    let problems = verify(&netlink);
    assert!(
        problems.len() == 1
            && problems[0].contains("readings/1/root: the replay differs")
            && problems[0].contains("rx_packets"),
        "{problems:?}"
    );

    // The expectation itself altered: the first result's status.
    let expectation = copy("expectation");
    let path = expectation.join("expected.json");
    let mut expected: Value =
        serde_json::from_slice(&fs::read(&path).expect("expected")).expect("JSON");
    expected["check"][0]["status"] = Value::String("altered".to_owned());
    fs::write(&path, serde_json::to_vec(&expected).expect("JSON")).expect("write");
    let problems = verify(&expectation);
    assert!(
        problems.len() == 1 && problems[0].contains("check under root/ differs from expected.json"),
        "{problems:?}"
    );
}

/// `dpuctl dpu counters -s netdev -o json` from a `dpu-agent` started with `--sys-root
/// root`: `source:object/counter<TAB>value` lines, sorted (the live-samples format).
fn agent_netdev_samples(root: &Path) -> Vec<String> {
    let dir = tempfile::tempdir().expect("tempdir");
    let agent = AgentProcess::start(&AgentOptions::new(dir.path(), root));
    let endpoint = agent.endpoint();
    let run = dpuctl(&[
        "--agent", &endpoint, "-o", "json", "dpu", "counters", "-s", "netdev",
    ]);
    let answer: Value = serde_json::from_slice(&run.stdout).unwrap_or_else(|e| {
        panic!(
            "dpu counters printed no JSON ({e}): {}",
            String::from_utf8_lossy(&run.stderr)
        )
    });
    counter_answer_lines(&answer)
}

/// What an agent under a capture's second reading answers, through `answer` (its
/// `Counters.Snapshot` or its `/metrics`, as live-samples lines), equals that reading's live
/// netdev samples; control: the same agent on a copy with one recorded stats byte flipped
/// differs in exactly that link's `rx_packets`.
fn an_agent_under_a_capture_answers_the_live_netdev_samples(answer: fn(&Path) -> Vec<String>) {
    let Some(bundle) = captures()
        .into_iter()
        .find(|b| b.join("readings/1/root.netlink").is_file())
    else {
        panic!("no capture with a netlink recording");
    };
    let reading = "readings/1/root";
    let live: Vec<String> = live_sample_lines(&bundle.join(reading))
        .into_iter()
        .filter(|l| l.starts_with("netdev:"))
        .collect();
    assert!(!live.is_empty(), "the capture has netdev samples");
    assert_eq!(answer(&bundle.join(reading)), live);

    let dir = tempfile::tempdir().expect("tempdir");
    let copy = copy_of(&bundle, dir.path(), "altered");
    flip_first_stats_answer_byte(&copy.join(format!("{reading}.netlink")));
    let answered = answer(&copy.join(reading));
    let differing: Vec<_> = answered.iter().filter(|l| !live.contains(l)).collect();
    assert!(
        differing.len() == 1 && differing[0].contains("/rx_packets\t"),
        "{differing:?}"
    );
}

/// The agent gets the replay through the probe too: under a capture's second reading its
/// `Counters.Snapshot` of netdevs answers the live samples of that reading, over the
/// recorded netlink; control: the flipped byte.
#[test]
fn the_agent_under_a_capture_answers_the_live_netdev_samples() {
    an_agent_under_a_capture_answers_the_live_netdev_samples(agent_netdev_samples);
}

/// The `dpu_netdev_*` series of a `dpu-agent --sys-root root`'s `/metrics` (its per-priority
/// and offload families aside) as live-samples lines, sorted:
/// `dpu_netdev_rx_bytes_total{netdev="eth0",…} 5` is `netdev:netdevs/eth0/rx_bytes<TAB>5`.
fn agent_netdev_series(root: &Path) -> Vec<String> {
    let dir = tempfile::tempdir().expect("tempdir");
    let port = free_tcp_port();
    let mut options = AgentOptions::new(dir.path(), root);
    options.config_toml = format!(
        "[security]\ninsecure_listen = true\n[metrics]\nlisten = \"tcp:127.0.0.1:{port}\"\n"
    );
    let _agent = AgentProcess::start(&options);
    let scraped = get_metrics(&format!("127.0.0.1:{port}"), None).expect("scrape");
    assert_eq!(scraped.status, 200, "{}", scraped.body);
    let mut lines: Vec<String> = exposed_samples(&scraped.body)
        .expect("an exposition")
        .into_iter()
        .filter(|s| {
            s.name.starts_with("dpu_netdev_")
                && !s.name.starts_with("dpu_netdev_prio_")
                && !s.name.starts_with("dpu_netdev_offload_")
        })
        .map(|s| {
            let counter = s
                .name
                .trim_start_matches("dpu_netdev_")
                .trim_end_matches("_total");
            let netdev = s
                .labels
                .get("netdev")
                .unwrap_or_else(|| panic!("no netdev label on {}", s.name));
            format!("netdev:netdevs/{netdev}/{counter}\t{}", s.value)
        })
        .collect();
    lines.sort();
    lines
}

/// `/metrics` under a capture's reading carries that reading's live netdev samples: every
/// one of them as its `dpu_netdev_*` series with the same value, and no other; control:
/// the copy with one recorded stats byte flipped changes exactly that link's
/// `rx_packets` series.
#[test]
fn the_agents_metrics_under_a_capture_carry_the_live_netdev_samples() {
    an_agent_under_a_capture_answers_the_live_netdev_samples(agent_netdev_series);
}
