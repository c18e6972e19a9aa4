//! What the capture tests of every tier (mocked, ovs, spdk, lab) read from a `dpuctl
//! capture` bundle and compare: a snapshot's samples as lines, a reading's live samples, an
//! agent's counter answer as the same lines, `check`'s results under a root, a recorded
//! netlink answer altered by one byte, and the first line of a replay server.
//!
//! Why here, once: each tier had its own copy of these readers. They are written apart from
//! the capture's own code (`dpu_host::capture`), so a change to the bundle's format there
//! cannot hide itself by changing the reader the tests compare with.

use std::ffi::OsString;
use std::fs;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::Child;

use dpu_probe::snapshot::Snapshot;
use serde_json::Value;

use crate::harness::dpuctl;

/// The first line of a reading's live-samples file.
pub const SAMPLES_FORMAT: &str = "dpu-samples/1";

/// A snapshot's samples as a capture keeps them: `KEY<TAB>VALUE` lines, sorted (the order
/// a sampler collects in is not part of the answer).
pub fn sample_lines(snapshot: &Snapshot) -> Vec<String> {
    let mut lines: Vec<String> = snapshot
        .samples
        .iter()
        .map(|s| format!("{}\t{}", s.key, s.value))
        .collect();
    lines.sort();
    lines
}

/// The file beside a reading's root that has `suffix` appended to the root's name
/// (`readings/1/root` → `readings/1/root.live-samples`, `….netlink`).
fn beside(root: &Path, suffix: &str) -> PathBuf {
    let mut name = OsString::from(root.as_os_str());
    name.push(suffix);
    PathBuf::from(name)
}

/// What the live sampler answered at the reading whose root is `root`: the lines of
/// `ROOT.live-samples` after its format line, which must be [`SAMPLES_FORMAT`].
pub fn live_sample_lines(root: &Path) -> Vec<String> {
    let file = beside(root, ".live-samples");
    let text = fs::read_to_string(&file)
        .unwrap_or_else(|e| panic!("the reading's live samples {}: {e}", file.display()));
    let mut lines = text.lines();
    assert_eq!(lines.next(), Some(SAMPLES_FORMAT), "{}", file.display());
    lines.map(str::to_owned).collect()
}

/// An agent's `Counters.Snapshot` as `dpuctl -o json dpu counters` prints it, as the
/// lines of [`sample_lines`] (`SOURCE:OBJECT/COUNTER<TAB>VALUE`, sorted), so an agent's
/// answer and a sampler's compare line by line.
pub fn counter_answer_lines(answer: &Value) -> Vec<String> {
    let mut lines: Vec<String> = answer["samples"]
        .as_array()
        .unwrap_or_else(|| panic!("no samples in the answer: {answer}"))
        .iter()
        .map(|s| {
            format!(
                "{}:{}/{}\t{}",
                s["source"].as_str().unwrap_or_default(),
                s["object"].as_str().unwrap_or_default(),
                s["counter"].as_str().unwrap_or_default(),
                // proto3 JSON leaves a zero u64 out.
                s["value"].as_str().unwrap_or("0")
            )
        })
        .collect();
    lines.sort();
    lines
}

/// The results of `dpuctl -o json --sys-root ROOT check --no-agent`, each as printed: what
/// a capture's replayed root must answer as its source did.
pub fn check_results(root: &Path) -> Vec<Value> {
    let shown = root.display().to_string();
    let run = dpuctl(&["-o", "json", "--sys-root", &shown, "check", "--no-agent"]);
    let results: Value = serde_json::from_slice(&run.stdout).unwrap_or_else(|e| {
        panic!(
            "check under {shown} printed no JSON ({e}): {}",
            String::from_utf8_lossy(&run.stderr)
        )
    });
    match results {
        Value::Array(results) => results,
        other => panic!("check under {shown} printed no array of results: {other}"),
    }
}

/// Rewrites the netlink recording `file` (dpu-netlink/1) with one bit changed: the low
/// byte of `rx_packets` in the first answer to `RTM_GETSTATS`. The answer's 16-byte
/// `nlmsghdr`, 12-byte `if_stats_msg` and the 4-byte header of its `IFLA_STATS_LINK_64`
/// attribute come first, so byte 32 is the low byte of `rtnl_link_stats64`'s first field.
///
/// A control for every replay test: a replay that answered live, or from anything but
/// the recording, would not see the change.
pub fn flip_first_stats_answer_byte(file: &Path) {
    let text = fs::read_to_string(file)
        .unwrap_or_else(|e| panic!("the recording {}: {e}", file.display()));
    let mut in_stats = false;
    let mut done = false;
    let altered: Vec<String> = text
        .lines()
        .map(|line| {
            if let Some(comment) = line.strip_prefix("# ") {
                in_stats = comment.starts_with("RTM_GETSTATS");
            }
            if in_stats && !done && line.starts_with("answer ") {
                done = true;
                let at = "answer ".len() + 2 * 32;
                let byte = u8::from_str_radix(&line[at..at + 2], 16).expect("hex");
                return format!("{}{:02x}{}", &line[..at], byte ^ 0x01, &line[at + 2..]);
            }
            line.to_owned()
        })
        .collect();
    assert!(
        done,
        "no RTM_GETSTATS answer to alter in {}",
        file.display()
    );
    fs::write(file, altered.join("\n") + "\n").expect("write the altered recording");
}

/// The first line `child` prints on its piped stdout: `dpu-sim replay-snap` and
/// `replay-ovs` print it once they listen, so a test may connect after it.
pub fn first_line(child: &mut Child) -> String {
    let stdout = child.stdout.take().expect("the child's stdout is piped");
    let mut line = String::new();
    BufReader::new(stdout)
        .read_line(&mut line)
        .expect("a first line");
    line
}

/// The fields of a `switch flows` answer that are relative to the moment of the answer
/// (a flow's `used`, its tc filter's `installedSec` and `lastUsedSec`), so never the same
/// twice: `scripts/capture-fixture` leaves the same ones out of a capture's expectation.
const TIME_RELATIVE: [&str; 3] = ["used", "installedSec", "lastUsedSec"];

/// Removes the time-relative fields (`used`, `installedSec`, `lastUsedSec`) at every depth of a JSON answer, so
/// a live answer and a replayed one can be compared as values.
pub fn strip_time_relative(value: &mut Value) {
    match value {
        Value::Object(members) => {
            members.retain(|key, _| !TIME_RELATIVE.contains(&key.as_str()));
            members.values_mut().for_each(strip_time_relative);
        }
        Value::Array(items) => items.iter_mut().for_each(strip_time_relative),
        _ => {}
    }
}
