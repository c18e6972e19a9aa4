//! `dpuctl capture` round trips on the lab's real kernel (issue 38): in the bluefield VM's
//! DPU side and host side, a `--no-redact` capture replays what the live machine answered.
//!
//! Asserted per side: `dpuctl --sys-root BUNDLE/root -o json check --no-agent` (run in the
//! same VM) gives every result of the live `check` taken just before and just after the
//! capture, field for field, and the same exit code; the one exclusion is the `detail` of
//! the `fw.*` checks, which under a tree say that the firmware tool queries the machine,
//! not a tree (by design: `fw.*` skip under every `--sys-root`), where live they say the
//! tool is missing (status and facts are compared for them too). The live `check` before
//! and after must agree, so a fact that moved during the capture cannot pass or fail the
//! comparison by chance. Each reading replayed through the probe's own sampler (what the
//! agent builds for a `--sys-root`) here, on the test machine, whose kernel has no RDMA
//! device, answers exactly the samples the live sampler answered in the VM
//! (`ROOT.live-samples`).
//!
//! On the DPU side, where soft-RoCE's `rxe0` answers RDMA nldev statistics: each reading's
//! recording holds `RDMA_NLDEV_CMD_STAT_GET` exchanges (protocol 20), its live samples
//! hold `rxe0`'s `hw_counters` and some of them are not zero (the tier has read the
//! target over RDMA by then), and a `dpu-agent --sys-root BUNDLE/readings/1/root` in the
//! VM answers `dpu counters -s rdma:rxe0/1` with exactly those live samples, reading them
//! over the replayed RDMA netlink (its log says so).
//!
//! Negative control: the low byte of `rcvd_pkts`'s value in the first recorded
//! `STAT_GET` answer, changed by one, makes exactly that sample of the replay differ from
//! the live one. Redaction: a redacted capture of the DPU side holds none of the VM's MACs
//! (both namespaces', searched as text, as netlink hex and as raw bytes in every file and
//! link target), where the `--no-redact` bundle holds them (the search is shown to find
//! them), and it still replays its live samples.

use std::collections::BTreeSet;
use std::fs;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use dpu_probe::counters::{NetdevSource, Sampler};
use dpu_probe::SysRoot;
use dpu_tests::capture::{counter_answer_lines, live_sample_lines, sample_lines};
use serde_json::Value;

use crate::{shown, Lab};

/// The two readings of a bundle, as roots relative to it.
const READINGS: [&str; 2] = ["root", "readings/1/root"];

/// The RDMA port soft-RoCE gives the DPU side, as the samples name it.
const RXE_PORT: &str = "rdmaDevices/rxe0/ports/1";

/// Live `check` before and after a capture, the capture, and the replayed `check`, in
/// `/tmp/NAME` of the VM. With `agent`, a `dpu-agent` on the second reading answers
/// `dpu counters -s rdma:rxe0/1` and is stopped again, and `check` replays a copy of the
/// bundle whose `p0` `mtu` file says 9000 (`replay-mtu.json`). The MACs of both namespaces go to
/// `macs`. Ends by writing the directory to stdout as a base64 tar.
fn capture_script(name: &str, capture_flags: &str, agent: bool) -> String {
    let mut script = format!(
        "set -u; w=/tmp/{name}; rm -rf $w; mkdir -p $w\n\
         dpuctl -o json check --no-agent > $w/live-before.json; echo $? > $w/live-before.rc\n\
         dpuctl capture --out $w/bundle --interval 1s {capture_flags} > $w/capture.out 2>&1 \
           || {{ cat $w/capture.out >&2; exit 1; }}\n\
         dpuctl -o json check --no-agent > $w/live-after.json; echo $? > $w/live-after.rc\n\
         dpuctl --sys-root $w/bundle/root -o json check --no-agent > $w/replay.json; \
         echo $? > $w/replay.rc\n\
         {{ cat /sys/class/net/*/address; ip netns exec host sh -c 'cat /sys/class/net/*/address'; }} \
           > $w/macs 2>/dev/null\n"
    );
    if agent {
        script.push_str(
            "printf '[ovs]\\nenabled = false\\n' > $w/agent.toml\n\
             dpu-agent --config $w/agent.toml --listen unix:$w/agent.sock \
               --sys-root $w/bundle/readings/1/root --storage-backend kernel \
               --state-dir $w/state --log-level info > $w/agent.log 2>&1 & pid=$!\n\
             for _ in $(seq 300); do [ -S $w/agent.sock ] && break; sleep 0.1; done\n\
             dpuctl --agent unix:$w/agent.sock -o json dpu counters -s rdma:rxe0/1 \
               > $w/agent-counters.json; echo $? > $w/agent-counters.rc\n\
             kill $pid; wait $pid; rm -rf $w/agent.sock $w/state\n\
             cp -a $w/bundle $w/mtu; echo 9000 > $w/mtu/root/sys/class/net/p0/mtu\n\
             dpuctl --sys-root $w/mtu/root -o json check --no-agent > $w/replay-mtu.json\n\
             rm -rf $w/mtu\n",
        );
    }
    script.push_str(&format!("tar -C /tmp -czf - {name} | base64 -w0\n"));
    script
}

/// Runs [`capture_script`] in `ns` of the bluefield VM (with the agent for the DPU side's
/// `--no-redact` capture) and unpacks what it wrote under
/// `into`; returns the unpacked directory.
fn capture_in_the_vm(lab: &Lab, ns: &str, name: &str, flags: &str, into: &Path) -> PathBuf {
    let agent = ns == "dpu" && flags == "--no-redact";
    let (code, stdout, stderr) = lab.run("bluefield", ns, &capture_script(name, flags, agent));
    assert_eq!(code, 0, "capture in {ns}: {stderr}");
    let mut unpack = Command::new("sh")
        .arg("-c")
        .arg("base64 -d | tar -xz -C \"$0\"")
        .arg(into)
        .stdin(Stdio::piped())
        .spawn()
        .expect("sh");
    unpack
        .stdin
        .take()
        .expect("stdin")
        .write_all(stdout.trim().as_bytes())
        .expect("write the tar");
    assert!(unpack.wait().expect("unpack").success(), "unpacking {name}");
    into.join(name)
}

fn read_json(path: &Path) -> Value {
    let text = fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text)
        .unwrap_or_else(|e| panic!("{}: not JSON ({e}): {text}", path.display()))
}

fn read_rc(path: &Path) -> String {
    fs::read_to_string(path)
        .expect("an exit code")
        .trim()
        .to_owned()
}

/// A `check -o json` result as compared: all of it, less `detail` for `fw.*` (the
/// firmware tool refuses a tree by design, and says so there).
fn comparable(result: &Value) -> Value {
    let mut result = result.clone();
    if result["id"]
        .as_str()
        .is_some_and(|id| id.starts_with("fw."))
    {
        if let Some(fields) = result.as_object_mut() {
            fields.remove("detail");
        }
    }
    result
}

/// The replayed `check` equals the live one; returns how many results were compared.
fn replayed_check_equals_live(side: &Path, ns: &str) -> usize {
    let results = |file: &str| -> Vec<Value> {
        read_json(&side.join(file))
            .as_array()
            .unwrap_or_else(|| panic!("{ns} {file}: not an array"))
            .iter()
            .map(comparable)
            .collect()
    };
    let (before, after, replay) = (
        results("live-before.json"),
        results("live-after.json"),
        results("replay.json"),
    );
    assert_eq!(
        before, after,
        "{ns}: the live check moved during the capture, so no comparison is fair"
    );
    assert!(!after.is_empty(), "{ns}: the live check gave no result");
    for (live, replayed) in after.iter().zip(&replay) {
        assert_eq!(
            live, replayed,
            "{ns}: the replay answers {} otherwise",
            live["id"]
        );
    }
    assert_eq!(after.len(), replay.len(), "{ns}: {replay:?}");
    assert_eq!(
        read_rc(&side.join("live-after.rc")),
        read_rc(&side.join("replay.rc")),
        "{ns}: check's exit code"
    );
    let (live, replayed) = (
        read_json(&side.join("live-after.json")),
        read_json(&side.join("replay.json")),
    );
    let pairs = live
        .as_array()
        .into_iter()
        .flatten()
        .zip(replayed.as_array().into_iter().flatten());
    for (live, replayed) in pairs.filter(|(l, r)| l["detail"] != r["detail"]) {
        assert!(
            replayed["detail"]
                .as_str()
                .is_some_and(|d| d.contains("not a tree")),
            "{ns}: the one exclusion is a fw.* detail saying the tool refuses a tree: \
             live {live}, replayed {replayed}"
        );
    }
    after.len()
}

/// The reading replayed here through the root's own sampler, as [`sample_lines`].
fn replayed_samples(bundle: &Path, reading: &str) -> Vec<String> {
    let root = SysRoot::new(bundle.join(reading));
    assert_eq!(
        NetdevSource::for_root(&root),
        NetdevSource::Netlink,
        "{reading}"
    );
    let snapshot = Sampler::new(root).snapshot(&[]);
    assert!(
        snapshot.errors.is_empty(),
        "{reading}: {:?}",
        snapshot.errors
    );
    sample_lines(&snapshot)
}

/// Lines in one list and not the other, each side.
fn differing(replayed: &[String], live: &[String]) -> Vec<String> {
    let (a, b): (BTreeSet<&String>, BTreeSet<&String>) =
        (replayed.iter().collect(), live.iter().collect());
    a.symmetric_difference(&b).map(|l| (*l).clone()).collect()
}

/// Each reading replays its live samples; returns how many samples both readings had.
fn replayed_samples_equal_live(bundle: &Path, label: &str) -> usize {
    READINGS
        .iter()
        .map(|reading| {
            let live = live_sample_lines(&bundle.join(reading));
            assert!(!live.is_empty(), "{label} {reading}: no live sample");
            let replayed = replayed_samples(bundle, reading);
            assert_eq!(
                differing(&replayed, &live),
                Vec::<String>::new(),
                "{label} {reading}: the replay differs from the live samples"
            );
            live.len()
        })
        .sum()
}

/// `rxe0`'s recorded RDMA side: nldev statistics exchanges in each reading's recording,
/// `hw_counters` among its live samples (some not zero); returns reading 1's RDMA lines.
fn the_recording_holds_rdma_netlink(bundle: &Path) -> Vec<String> {
    let manifest = read_json(&bundle.join("manifest.json"));
    let mut last = Vec::new();
    for (index, reading) in READINGS.iter().enumerate() {
        let exchanges = manifest["readings"][index]["netlink"]["exchanges"].to_string();
        assert!(
            exchanges.contains("rdma: RDMA_NLDEV_CMD_STAT_GET of device index"),
            "{reading}: {exchanges}"
        );
        let recording =
            fs::read_to_string(bundle.join(format!("{reading}.netlink"))).expect("the recording");
        assert!(
            recording.lines().any(|l| l.starts_with("request 20 ")),
            "{reading}: no NETLINK_RDMA request recorded"
        );
        last = live_sample_lines(&bundle.join(reading))
            .into_iter()
            .filter(|l| l.contains(&format!(":{RXE_PORT}/")))
            .collect();
        assert!(!last.is_empty(), "{reading}: no live sample of {RXE_PORT}");
    }
    assert!(
        last.iter().any(|l| !l.ends_with("\t0")),
        "every rxe0 counter is zero: the replay would prove little: {last:?}"
    );
    last
}

/// The agent in the VM, under the second reading: its `dpu counters -s rdma:rxe0/1` as
/// `source:object/counter<TAB>value` lines, sorted (proto3 JSON leaves out a zero).
fn agent_rdma_samples(side: &Path) -> Vec<String> {
    assert_eq!(
        read_rc(&side.join("agent-counters.rc")),
        "0",
        "dpu counters"
    );
    let log = fs::read_to_string(side.join("agent.log")).expect("the agent's log");
    assert!(
        log.lines()
            .any(|l| l.contains("hw_counters over RDMA netlink") && l.contains("rxe0")),
        "the replaying agent did not read rxe0 over RDMA netlink:\n{log}"
    );
    let answer = read_json(&side.join("agent-counters.json"));
    counter_answer_lines(&answer)
}

/// A copy of `bundle` whose reading 1 recording has the low byte of `rcvd_pkts`'s value,
/// in the first `STAT_GET` answer, raised by one. The value attribute follows its name:
/// the name attribute (`"rcvd_pkts\0"`, padded to 4 bytes), then a 12-byte attribute
/// `RDMA_NLDEV_ATTR_STAT_HWCOUNTER_ENTRY_VALUE` (type 0x53) holding the u64 (x86: little
/// endian, so its first byte is the low one).
fn with_rcvd_pkts_altered(bundle: &Path, into: &Path) -> PathBuf {
    let copy = into.join("altered");
    let status = Command::new("cp")
        .arg("-a")
        .arg(bundle)
        .arg(&copy)
        .status()
        .expect("cp");
    assert!(status.success());
    let file = copy.join("readings/1/root.netlink");
    let text = fs::read_to_string(&file).expect("the recording");
    let name: String = b"rcvd_pkts\0".iter().map(|b| format!("{b:02x}")).collect();
    let mut in_stat = false;
    let mut done = false;
    let lines: Vec<String> = text
        .lines()
        .map(|line| {
            if let Some(comment) = line.strip_prefix("# ") {
                in_stat = comment.starts_with("RDMA_NLDEV_CMD_STAT_GET");
            }
            let Some(found) = line.find(&name).filter(|_| in_stat && !done) else {
                return line.to_owned();
            };
            assert!(line.starts_with("answer ") && found % 2 == 1, "{line}");
            // The name's 10 bytes padded to 12, then the value attribute's header.
            let header = found + 2 * 12;
            assert_eq!(&line[header..header + 8], "0c005300", "the value attribute");
            let at = header + 8;
            let byte = u8::from_str_radix(&line[at..at + 2], 16).expect("hex");
            done = true;
            format!(
                "{}{:02x}{}",
                &line[..at],
                byte.wrapping_add(1),
                &line[at + 2..]
            )
        })
        .collect();
    assert!(done, "no rcvd_pkts in a recorded STAT_GET answer");
    fs::write(&file, lines.join("\n") + "\n").expect("write");
    copy
}

/// The VM's link-layer addresses worth redacting (not all-zero, not broadcast).
fn vm_macs(side: &Path) -> Vec<String> {
    let text = fs::read_to_string(side.join("macs")).expect("the VM's MACs");
    let macs: BTreeSet<String> = text
        .lines()
        .map(|l| l.trim().to_ascii_lowercase())
        .filter(|m| m.len() == 17 && !m.split(':').all(|g| g == "00" || g == "ff"))
        .collect();
    assert!(macs.len() >= 3, "the VM has p0, p1, pf0, ...: {macs:?}");
    macs.into_iter().collect()
}

/// Every file and link target under `bundle` that holds `mac` as text, netlink hex or
/// raw bytes.
fn files_holding(bundle: &Path, mac: &str) -> Vec<PathBuf> {
    let hex = mac.replace(':', "");
    let raw: Vec<u8> = mac
        .split(':')
        .map(|g| u8::from_str_radix(g, 16).expect("hex"))
        .collect();
    let mut found = Vec::new();
    let mut pending = vec![bundle.to_path_buf()];
    while let Some(path) = pending.pop() {
        let meta = fs::symlink_metadata(&path).expect("metadata");
        let bytes = if meta.file_type().is_symlink() {
            fs::read_link(&path)
                .expect("link")
                .into_os_string()
                .into_encoded_bytes()
        } else if meta.is_dir() {
            pending.extend(
                fs::read_dir(&path)
                    .expect("dir")
                    .flatten()
                    .map(|e| e.path()),
            );
            continue;
        } else {
            fs::read(&path).expect("file")
        };
        let text = String::from_utf8_lossy(&bytes).to_ascii_lowercase();
        if text.contains(mac) || text.contains(&hex) || bytes.windows(6).any(|w| w == raw) {
            found.push(path);
        }
    }
    found
}

pub(crate) fn captures_in_the_bluefield_vm_replay_the_live_answers(lab: &Lab) {
    let dir = tempfile::tempdir().expect("tempdir");
    for ns in ["dpu", "host"] {
        let side = capture_in_the_vm(lab, ns, &format!("cap-{ns}"), "--no-redact", dir.path());
        let bundle = side.join("bundle");
        let results = replayed_check_equals_live(&side, ns);
        let samples = replayed_samples_equal_live(&bundle, ns);
        shown(&format!(
            "[lab] capture {ns}: check replays {results} results, readings replay {samples} samples"
        ));
        if ns != "dpu" {
            continue;
        }
        let rdma = the_recording_holds_rdma_netlink(&bundle);
        assert_eq!(
            agent_rdma_samples(&side),
            rdma,
            "the agent under reading 1 answers rxe0's live samples"
        );

        // Control of the check replay: it reads the bundle (an altered mtu file shows),
        // and the comparison notices.
        let mtu = read_json(&side.join("replay-mtu.json"));
        let netdev_mtu = mtu
            .as_array()
            .into_iter()
            .flatten()
            .find(|r| r["id"] == "netdev.mtu")
            .unwrap_or_else(|| panic!("no netdev.mtu: {mtu}"));
        assert_eq!(netdev_mtu["facts"]["mtu"], 9000, "{netdev_mtu}");
        let live: Vec<Value> = read_json(&side.join("live-after.json"))
            .as_array()
            .into_iter()
            .flatten()
            .map(comparable)
            .collect();
        let noticed: Vec<&str> = live
            .iter()
            .zip(mtu.as_array().into_iter().flatten())
            .filter(|(l, r)| **l != comparable(r))
            .filter_map(|(l, _)| l["id"].as_str())
            .collect();
        assert!(noticed.contains(&"netdev.mtu"), "{noticed:?}");
        shown(&format!(
            "[lab] capture dpu, mtu file 9000: {noticed:?} differ"
        ));

        // Negative control: one recorded answer byte changed, one replayed sample differs.
        let altered = with_rcvd_pkts_altered(&bundle, dir.path());
        let reading = READINGS[1];
        let changed = differing(
            &replayed_samples(&altered, reading),
            &live_sample_lines(&altered.join(reading)),
        );
        assert_eq!(changed.len(), 2, "the old and the new value: {changed:?}");
        assert!(
            changed
                .iter()
                .all(|l| l.starts_with(&format!("rdma_hw:{RXE_PORT}/rcvd_pkts\t"))),
            "{changed:?}"
        );
        shown(&format!("[lab] capture dpu, altered byte: {changed:?}"));

        // Redaction: the VM's MACs are in the plain bundle (the search finds them) and
        // in none of the redacted one's files, which still replays.
        let redacted = capture_in_the_vm(lab, ns, "cap-redacted", "", dir.path());
        let macs = vm_macs(&redacted);
        assert!(
            macs.iter().any(|m| !files_holding(&bundle, m).is_empty()),
            "control: no MAC of {macs:?} in the --no-redact bundle"
        );
        for mac in &macs {
            let leaks = files_holding(&redacted.join("bundle"), mac);
            assert!(leaks.is_empty(), "{mac} in the redacted bundle: {leaks:?}");
        }
        replayed_samples_equal_live(&redacted.join("bundle"), "redacted dpu");
    }
}
