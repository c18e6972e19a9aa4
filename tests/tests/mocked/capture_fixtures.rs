//! The captures runner: every bundle under `tests/fixtures/captures/NAME/` (made by
//! `scripts/capture-fixture`) must still give the outcomes it was captured with: each
//! reading replayed through the probe's own sampler answers exactly the samples the live
//! sampler answered then (`ROOT.live-samples`, netdevs over the recorded netlink), and
//! `check --no-agent -o json` under its first reading gives the source's results
//! (`expected.json`: id, status, facts). A new directory there is tested with no code
//! change; a change of the probe or of `check` that alters what a captured machine
//! answers fails here, naming the capture.

use std::fs;
use std::path::{Path, PathBuf};

use dpu_probe::counters::Sampler;
use dpu_probe::SysRoot;
use dpu_tests::capture::{
    check_results, counter_answer_lines, flip_first_stats_answer_byte, live_sample_lines,
    sample_lines,
};
use dpu_tests::harness::{dpuctl, free_tcp_port, AgentOptions, AgentProcess};
use dpu_tests::prometheus::{exposed_samples, get_metrics};
use serde_json::Value;

fn captures_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/captures")
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

#[test]
fn every_capture_in_the_fixtures_gives_the_outcomes_it_was_captured_with() {
    let found = captures();
    assert!(
        !found.is_empty(),
        "no capture under {}",
        captures_dir().display()
    );
    let problems: Vec<String> = found.iter().flat_map(|b| verify(b)).collect();
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
    let copy = |label: &str| -> PathBuf {
        let to = dir.path().join(label);
        let status = std::process::Command::new("cp")
            .arg("-a")
            .arg(&bundle)
            .arg(&to)
            .status()
            .expect("cp");
        assert!(status.success());
        to
    };
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
    let copy = dir.path().join("altered");
    let status = std::process::Command::new("cp")
        .arg("-a")
        .arg(&bundle)
        .arg(&copy)
        .status()
        .expect("cp");
    assert!(status.success());
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
