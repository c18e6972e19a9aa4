//! `dpuctl fleet roce pairs` end to end on this machine: the real `dpuctl` reads a real
//! inventory, probes every host's RDMA port over ssh, and runs the real `dpuctl roce perf`
//! on each pair's client host over ssh, which reads that host's counters and starts the
//! server on the other host over ssh.
//!
//! The hosts are fixture trees (`mlx5_0/1`, 200 Gb/sec, a RoCE v2 GID on `ens1f0np0`);
//! the stand-ins, first on PATH:
//! - `ssh` runs the remote command here, as the host the destination names (`FAKE_HOST`, `FAKE_ROOT`); `ssh -G` answers the host's address
//!   from `addrs`, and `/sys/class/infiniband` paths are read from the host's tree;
//! - `dpuctl` is the real one with `--sys-root` set to that host's tree;
//! - `ib_write_bw` as a server does nothing; as a client it prints a `--report_gbits`
//!   table with the bandwidth `bw` gives the (client, server) pair (195 Gbit/s otherwise,
//!   97.5 % of line rate) and moves the client's PMA counters by the payload, or resets
//!   them (`reset-CLIENT-SERVER`), or sleeps (`sleep-CLIENT-SERVER`).
//!
//! Asserted: one slow link blames only that link, one slow node only that node (the
//! negative controls of each other: the hosts they leave out are not blamed), a reset
//! counter makes its run INCONCLUSIVE (exit 3) while the fleet is otherwise healthy and
//! nothing is blamed, a host without ssh is skipped with the reason, a host ssh cannot
//! reach is probed once and blamed as the node (pairs `within:rail`), and Ctrl-C stops the
//! remote runs (the sleeping client is gone) and prints what finished (exit 130).

use std::io::BufRead as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use dpu_tests::command::{describe, stdout_json as json};
use dpu_tests::fixture;
use dpu_tests::harness::bin_dir;
use dpu_tests::skip;
use dpu_tests::stand_in::{sh_quote, write_script};
use serde_json::Value;

/// The hosts with ssh; `gpu-05` is in the inventory without it.
const HOSTS: [&str; 4] = ["gpu-01", "gpu-02", "gpu-03", "gpu-04"];
const INTERFACE: &str = "ens1f0np0";
const SIZE: u64 = 65536;

fn utf8(path: &Path) -> &str {
    path.to_str().expect("utf-8 temp path")
}

fn tools_available() -> Result<(), String> {
    for tool in ["sh", "awk", "sed", "getconf"] {
        let found = Command::new("sh")
            .args(["-c", &format!("command -v {tool}")])
            .stdout(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        if !found {
            return Err(format!(
                "{tool} is needed for the ssh and perftest stand-ins"
            ));
        }
    }
    Ok(())
}

/// The hosts (`rail` 0: gpu-01, gpu-02; 1: gpu-03, gpu-04), gpu-05 without ssh, then
/// `extra`.
fn inventory(extra: &str) -> String {
    let mut inventory = String::new();
    for (i, host) in HOSTS.iter().enumerate() {
        inventory.push_str(&format!(
            "[[target]]\nname = \"{host}\"\nagent = \"unix:/nonexistent/{host}.sock\"\n\
             ssh = \"root@{host}\"\ninterface = \"{INTERFACE}\"\nlabels = {{ rail = \"{}\" }}\n\n",
            i / 2
        ));
    }
    inventory
        .push_str("[[target]]\nname = \"gpu-05\"\nagent = \"unix:/nonexistent/gpu-05.sock\"\n\n");
    inventory.push_str(extra);
    inventory
}

/// A fleet of fixture hosts with the stand-ins.
struct Fleet {
    dir: tempfile::TempDir,
    bin: PathBuf,
    inventory: PathBuf,
}

impl Fleet {
    fn new() -> Self {
        let dir = tempfile::tempdir().expect("tempdir");
        let d = dir.path();
        let mut addrs = String::new();
        for (i, host) in HOSTS.iter().enumerate() {
            let root = d.join("hosts").join(host);
            fixture::single_rdma_port(&root).expect("fixture");
            // 192.0.2.(i+1) as an IPv4-mapped RoCE v2 GID.
            let gid = format!("0000:0000:0000:0000:0000:ffff:c000:02{:02x}", i + 1);
            fixture::set_gid(&root, "mlx5_0", 1, 3, &gid, "RoCE v2", Some(INTERFACE)).expect("gid");
            addrs.push_str(&format!("{host} 127.0.1.{}\n", i + 1));
        }
        std::fs::write(d.join("addrs"), addrs).expect("addrs");
        std::fs::write(d.join("bw"), "").expect("bw");
        let bin = d.join("bin");
        std::fs::create_dir_all(&bin).expect("mkdir");
        let q = |p: &Path| sh_quote(utf8(p));
        write_script(
            &bin.join("ssh"),
            &format!(
                r#"dir={dir}
for a; do [ "$a" = -M ] && exit 255; done
if [ "$1" = -G ]; then
    [ "$2" = -- ] && shift
    awk -v h="${{2#*@}}" '$1 == h {{ print "hostname " $2; found = 1 }} END {{ exit !found }}' "$dir/addrs"
    exit
fi
while [ $# -gt 0 ] && [ "$1" != -- ]; do shift; done
[ $# -eq 3 ] || {{ echo "fake ssh: expected -- DEST COMMAND, got $*" >&2; exit 255; }}
host=${{2#*@}}
root=$dir/hosts/$host
printf '%s -> %s: %s\n' "${{FAKE_HOST:-here}}" "$host" "$3" >> "$dir/log"
[ -d "$root" ] || {{ echo "ssh: Could not resolve hostname $host" >&2; exit 255; }}
export FAKE_HOST="$host" FAKE_ROOT="$root"
case $3 in
*/sys/class/infiniband/*)
    cmd=$(printf '%s' "$3" | sed "s#/sys/class/infiniband#$root/sys/class/infiniband#g")
    sh -c "$cmd" | sed "s#^$root##" ;;
*) exec sh -c "$3" ;;
esac
"#,
                dir = q(d),
            ),
        );
        write_script(
            &bin.join("dpuctl"),
            &format!(
                "exec {} --sys-root \"$FAKE_ROOT\" \"$@\"\n",
                q(&bin_dir().join("dpuctl"))
            ),
        );
        write_script(
            &bin.join("ib_write_bw"),
            &format!(
                r#"dir={dir}
for a; do last=$a; done
[ "$last" = --report_gbits ] && exit 0
prev=; size=; n=
for a; do case $prev in -s) size=$a;; -n) n=$a;; esac; prev=$a; done
server=$(awk -v a="$last" '$2 == a {{ print $1 }}' "$dir/addrs")
pair="$FAKE_HOST-$server"
bw=$(awk -v c="$FAKE_HOST" -v s="$server" '$1 == c && $2 == s {{ print $3 }}' "$dir/bw")
[ -n "$bw" ] || bw=195.00
if [ -f "$dir/sleep-$pair" ]; then echo $$ > "$dir/sleeping"; sleep 60; fi
c=$FAKE_ROOT/sys/class/infiniband/mlx5_0/ports/1/counters
add() {{ v=$(cat "$c/$1"); echo $((v + $2)) > "$c/$1"; }}
if [ -f "$dir/reset-$pair" ]; then
    echo 1 > "$c/port_xmit_packets"
else
    add port_xmit_packets $((n * ((size + 4095) / 4096) + 10))
    add port_rcv_packets 10
    add port_xmit_data $((n * size / 4 + 100))
    add port_rcv_data 100
fi
printf ' Mtu             : 4096[B]\n #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]\n %s    %s    %s    %s    0.1\n---------------------------------------------------------------------------------------\n' "$size" "$n" "$bw" "$bw"
"#,
                dir = q(d),
            ),
        );
        let path = d.join("inventory.toml");
        std::fs::write(&path, inventory("")).expect("inventory");
        Self {
            dir,
            bin,
            inventory: path,
        }
    }

    /// Lists `extra` (TOML) in the inventory too.
    fn add_to_inventory(&self, extra: &str) {
        std::fs::write(&self.inventory, inventory(extra)).expect("inventory");
    }

    /// Both directions between `a` and `b` at `gbps`.
    fn slow(&self, a: &str, b: &str, gbps: f64) {
        let path = self.dir.path().join("bw");
        let mut text = std::fs::read_to_string(&path).expect("bw");
        text.push_str(&format!("{a} {b} {gbps}\n{b} {a} {gbps}\n"));
        std::fs::write(path, text).expect("bw");
    }

    /// Makes the run from `client` to `server` do `what` (`reset`, `sleep`).
    fn mark(&self, what: &str, client: &str, server: &str) {
        std::fs::write(
            self.dir.path().join(format!("{what}-{client}-{server}")),
            "",
        )
        .expect("marker");
    }

    /// The test's `dpuctl fleet roce pairs` of all pairs, with `-o json` when `json`.
    fn command(&self, json: bool) -> Command {
        self.command_with(json, "all-pairs")
    }

    /// The test's `dpuctl fleet roce pairs --pattern PATTERN`.
    fn command_with(&self, json: bool, pattern: &str) -> Command {
        let path = std::env::var_os("PATH").unwrap_or_default();
        let mut paths = vec![self.bin.clone()];
        paths.extend(std::env::split_paths(&path));
        let mut cmd = Command::new(bin_dir().join("dpuctl"));
        if json {
            cmd.args(["-o", "json"]);
        }
        cmd.args(["fleet", "--inventory"])
            .arg(&self.inventory)
            .args([
                "roce",
                "pairs",
                "--pattern",
                pattern,
                "--sizes",
                &SIZE.to_string(),
                "--iterations",
                "100",
                "--run-timeout",
                "60",
            ])
            .env("PATH", std::env::join_paths(paths).expect("PATH"))
            .env("DPUCTL_SSH", self.bin.join("ssh"))
            .env_remove("DPUCTL_AGENT")
            .env_remove("DPUCTL_INVENTORY")
            .stdin(Stdio::null());
        cmd
    }

    fn run(&self) -> Output {
        self.command(true).output().expect("run dpuctl")
    }

    fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("log")).unwrap_or_default()
    }
}

fn runs(report: &Value) -> Vec<&Value> {
    report["runs"].as_array().into_iter().flatten().collect()
}

fn between<'a>(report: &'a Value, a: &str, b: &str) -> Vec<&'a Value> {
    runs(report)
        .into_iter()
        .filter(|r| (r["from"] == a && r["to"] == b) || (r["from"] == b && r["to"] == a))
        .collect()
}

fn findings(report: &Value) -> Vec<(String, String)> {
    report["findings"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|f| {
            (
                f["kind"].as_str().unwrap_or_default().to_owned(),
                f["text"].as_str().unwrap_or_default().to_owned(),
            )
        })
        .collect()
}

/// What every run of a finished test shows: 12 runs (6 pairs both ways), each measured by
/// the remote `roce perf` with its counter evidence read on the client from sysfs, held
/// to the fixtures' 200 Gbit/s; gpu-05 skipped for its missing ssh.
fn assert_complete(fleet: &Fleet, report: &Value) {
    let all = runs(report);
    assert_eq!(all.len(), 12, "{report:#}");
    for run in &all {
        assert_eq!(run["test"], "ib_write_bw", "{run:#}");
        assert_eq!(run["size"], SIZE, "{run:#}");
        assert_eq!(run["error"], Value::Null, "{run:#}");
        assert_eq!(run["counter_source"], "sysfs", "{run:#}");
        assert_eq!(run["line_rate"]["gbps"], 200.0, "{run:#}");
        assert!(
            run["line_rate"]["source"]
                .as_str()
                .is_some_and(|s| s.contains("mlx5_0/1 \"200 Gb/sec (2X NDR)\"")),
            "{run:#}"
        );
    }
    let skipped = &report["skipped"];
    assert_eq!(skipped[0]["name"], "gpu-05", "{report:#}");
    assert!(
        skipped[0]["reason"]
            .as_str()
            .is_some_and(|r| r.contains("no ssh destination")),
        "{report:#}"
    );
    for (i, host) in report["hosts"]
        .as_array()
        .expect("hosts")
        .iter()
        .enumerate()
    {
        assert_eq!(host["port"]["endpoint"]["ibdev"], "mlx5_0", "{host:#}");
        assert_eq!(host["port"]["endpoint"]["gid_index"], 3, "{host:#}");
        let ipv4 = format!("192.0.2.{}", i + 1);
        assert_eq!(host["port"]["endpoint"]["ipv4"], ipv4.as_str(), "{host:#}");
    }
    // The client's dpuctl started each server over ssh with both sides pinned, and no host
    // was in two runs of one round.
    let log = fleet.log();
    assert!(
        log.contains("gpu-01 -> gpu-02: sh -c 'grace=$1"),
        "the server was started by the client host's dpuctl: {log}"
    );
    let mut rounds: std::collections::BTreeMap<u64, Vec<&str>> = Default::default();
    for run in &all {
        let round = run["round"].as_u64().expect("round");
        for host in [&run["from"], &run["to"]] {
            let host = host.as_str().expect("host");
            let hosts = rounds.entry(round).or_default();
            assert!(
                !hosts.contains(&host),
                "{host} twice in round {round}: {report:#}"
            );
            hosts.push(host);
        }
    }
}

#[test]
fn one_slow_link_is_blamed_on_the_link_and_not_on_its_hosts() {
    if let Err(why) = tools_available() {
        skip!("{why}");
    }
    let fleet = Fleet::new();
    fleet.slow("gpu-01", "gpu-02", 50.0);
    let out = fleet.run();
    let report = json(&out);
    assert_eq!(out.status.code(), Some(1), "{}", describe(&out));
    assert_complete(&fleet, &report);
    assert_eq!(report["verdict"], "FAIL", "{report:#}");
    // The run's progress (its observer's events, drawn by dpuctl on stderr): each host's
    // port as read, the first round, and every run as it ends.
    let stderr = String::from_utf8_lossy(&out.stderr);
    for host in ["gpu-01", "gpu-02", "gpu-03", "gpu-04"] {
        assert!(
            stderr
                .lines()
                .any(|l| l.starts_with(&format!("{host}: ")) && l.contains(", line rate ")),
            "no port line for {host}: {stderr}"
        );
    }
    assert!(stderr.contains("\nround 1/"), "{stderr}");
    let done = stderr
        .lines()
        .filter(|l| l.contains(" ib_write_bw "))
        .count();
    assert_eq!(done, runs(&report).len(), "one line per run: {stderr}");
    for run in between(&report, "gpu-01", "gpu-02") {
        assert_eq!(run["verdict"], "FAIL", "{run:#}");
        assert_eq!(
            run["problems"],
            serde_json::json!(["below-line-rate"]),
            "{run:#}"
        );
        assert_eq!(run["percent_of_line_rate"], 25.0, "{run:#}");
        assert_eq!(run["path"], "rdma", "slow, but over RDMA: {run:#}");
    }
    let others = runs(&report)
        .into_iter()
        .filter(|r| !(r["from"].as_str() < Some("gpu-03") && r["to"].as_str() < Some("gpu-03")));
    for run in others {
        assert_eq!(run["verdict"], "PASS", "{run:#}");
        assert_eq!(run["path"], "rdma", "{run:#}");
    }
    assert_eq!(
        findings(&report),
        [(
            "slow-link".to_owned(),
            "link gpu-01 ↔ gpu-02: below 90 % of line rate; both hosts fine elsewhere".to_owned()
        )],
        "{report:#}"
    );
}

#[test]
fn one_slow_node_is_blamed_on_the_node_and_not_on_its_peers() {
    if let Err(why) = tools_available() {
        skip!("{why}");
    }
    let fleet = Fleet::new();
    for peer in ["gpu-01", "gpu-02", "gpu-03"] {
        fleet.slow("gpu-04", peer, 40.0);
    }
    let out = fleet.run();
    let report = json(&out);
    assert_eq!(out.status.code(), Some(1), "{}", describe(&out));
    assert_complete(&fleet, &report);
    assert_eq!(
        findings(&report),
        [(
            "slow-node".to_owned(),
            "node gpu-04: 3 of 3 pairs below 90 % of line rate".to_owned()
        )],
        "{report:#}"
    );
    let tallies = report["tallies"].as_array().expect("tallies");
    for t in tallies {
        let failed = if t["name"] == "gpu-04" { 3 } else { 1 };
        assert_eq!(t["failed"], failed, "{t:#}");
    }
    // The table says the same to a person.
    let text = fleet.command(false).output().expect("run dpuctl");
    let stdout = String::from_utf8_lossy(&text.stdout);
    eprintln!("{stdout}");
    assert_eq!(text.status.code(), Some(1), "{}", describe(&text));
    assert!(
        stdout.contains("node gpu-04: 3 of 3 pairs below 90 % of line rate"),
        "{stdout}"
    );
    assert!(
        stdout.contains("skipped gpu-05: no ssh destination"),
        "{stdout}"
    );
    assert!(
        stdout.contains("RDMA ("),
        "the path evidence column: {stdout}"
    );
}

#[test]
fn a_reset_counter_is_inconclusive_in_a_healthy_fleet_and_nothing_is_blamed() {
    if let Err(why) = tools_available() {
        skip!("{why}");
    }
    let fleet = Fleet::new();
    fleet.mark("reset", "gpu-03", "gpu-01");
    let out = fleet.run();
    let report = json(&out);
    assert_eq!(out.status.code(), Some(3), "{}", describe(&out));
    assert_complete(&fleet, &report);
    assert_eq!(report["verdict"], "INCONCLUSIVE", "{report:#}");
    for run in runs(&report) {
        let reset = run["from"] == "gpu-03" && run["to"] == "gpu-01";
        if reset {
            assert_eq!(run["verdict"], "INCONCLUSIVE", "{run:#}");
            assert_eq!(run["path"], "unknown", "{run:#}");
            assert_eq!(
                run["packets_delta"],
                Value::Null,
                "never read as 0: {run:#}"
            );
            let why = run["counters_inconclusive"].as_str().unwrap_or_default();
            assert!(why.contains("port_xmit_packets"), "{run:#}");
        } else {
            assert_eq!(run["verdict"], "PASS", "{run:#}");
            assert_eq!(run["percent_of_line_rate"], 97.5, "{run:#}");
        }
    }
    assert!(findings(&report).is_empty(), "{report:#}");
}

/// Whether `pid` still runs (a zombie waiting for its reaper does not).
fn alive(pid: &str) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        !stat
            .rsplit_once(") ")
            .is_some_and(|(_, r)| r.starts_with('Z'))
    })
}

/// The start time (clock ticks since boot, `/proc/PID/stat` field 22) of process `pid`, so
/// a later check is about the same process and not another that reused its number (this
/// kernel's `pid_max` may be 32768).
fn started_at(pid: &str) -> Option<String> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let (_, rest) = stat.rsplit_once(") ")?;
    // Field 3 (state) is the first after the name; the start time is field 22.
    rest.split_whitespace().nth(19).map(str::to_owned)
}

/// What process `pid` is now, for a failure message: its stat line and command line.
fn describe_process(pid: &str) -> String {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let cmdline = std::fs::read(format!("/proc/{pid}/cmdline"))
        .map(|c| String::from_utf8_lossy(&c).replace('\0', " "))
        .unwrap_or_default();
    format!("stat: {} cmdline: {cmdline}", stat.trim())
}

#[test]
fn ctrl_c_stops_the_remote_runs_and_prints_what_finished() {
    if let Err(why) = tools_available() {
        skip!("{why}");
    }
    let fleet = Fleet::new();
    // Round 1 is gpu-01 -> gpu-02 and gpu-03 -> gpu-04; the first never ends by itself.
    fleet.mark("sleep", "gpu-01", "gpu-02");
    let mut child = fleet
        .command(true)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn dpuctl");
    let stderr_lines = Arc::new(Mutex::new(Vec::<String>::new()));
    let reader = {
        let lines = Arc::clone(&stderr_lines);
        let err = child.stderr.take().expect("stderr");
        std::thread::spawn(move || {
            for line in std::io::BufReader::new(err).lines().map_while(Result::ok) {
                lines.lock().expect("lines").push(line);
            }
        })
    };
    let stdout = {
        let mut out = child.stdout.take().expect("stdout");
        std::thread::spawn(move || {
            let mut text = String::new();
            let _ = std::io::Read::read_to_string(&mut out, &mut text);
            text
        })
    };
    let sleeping = fleet.dir.path().join("sleeping");
    let deadline = Instant::now() + Duration::from_secs(120);
    let other_done = || {
        stderr_lines
            .lock()
            .expect("lines")
            .iter()
            .any(|l| l.contains("gpu-03 → gpu-04 ib_write_bw"))
    };
    while !(sleeping.exists() && other_done()) {
        assert!(
            Instant::now() < deadline,
            "round 1 never got going: {:?}",
            stderr_lines.lock().expect("lines")
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    let pid = std::fs::read_to_string(&sleeping).expect("pid");
    let pid = pid.trim();
    let born = started_at(pid).unwrap_or_else(|| panic!("the sleeping client {pid} is gone"));
    let dpuctl = nix::unistd::Pid::from_raw(i32::try_from(child.id()).expect("pid"));
    nix::sys::signal::kill(dpuctl, nix::sys::signal::Signal::SIGINT).expect("SIGINT");
    let status = child.wait().expect("wait");
    reader.join().expect("reader");
    let text = stdout.join().expect("stdout");
    let report: Value = serde_json::from_str(&text)
        .unwrap_or_else(|e| panic!("JSON ({e}): {text}\n{:?}", stderr_lines.lock()));
    assert_eq!(status.code(), Some(130), "{report:#}");
    assert_eq!(report["cancelled"], true, "{report:#}");
    assert_eq!(report["verdict"], "INCONCLUSIVE", "{report:#}");
    let finished = runs(&report);
    assert_eq!(finished.len(), 1, "{report:#}");
    assert_eq!(
        (&finished[0]["from"], &finished[0]["to"]),
        (&"gpu-03".into(), &"gpu-04".into())
    );
    assert_eq!(finished[0]["verdict"], "PASS", "{report:#}");
    let not_run = report["not_run"].as_array().expect("not_run");
    assert_eq!(not_run.len(), 11, "{report:#}");
    assert!(
        not_run
            .iter()
            .any(|r| r["client"] == "gpu-01" && r["server"] == "gpu-02" && r["round"] == 1),
        "{report:#}"
    );
    // The remote run was stopped, not left to finish: its client is gone (a process that
    // took its number since is another process).
    let same_client = || alive(pid) && started_at(pid).as_deref() == Some(born.as_str());
    let deadline = Instant::now() + Duration::from_secs(10);
    while same_client() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(
        !same_client(),
        "the remote client {pid} outlived Ctrl-C: {}\nstderr: {:?}",
        describe_process(pid),
        stderr_lines.lock().expect("lines")
    );
}

#[test]
fn an_unreachable_host_is_reported_once_and_blamed_as_the_node() {
    if let Err(why) = tools_available() {
        skip!("{why}");
    }
    let fleet = Fleet::new();
    // In rail 0 with gpu-01 and gpu-02, but no such host answers over ssh.
    fleet.add_to_inventory(
        "[[target]]\nname = \"gpu-06\"\nagent = \"unix:/nonexistent/gpu-06.sock\"\n\
         ssh = \"root@gpu-06\"\nlabels = { rail = \"0\" }\n",
    );
    let out = fleet
        .command_with(true, "within:rail")
        .output()
        .expect("run dpuctl");
    let report = json(&out);
    assert_eq!(out.status.code(), Some(1), "{}", describe(&out));
    let pairs: Vec<(String, String)> =
        serde_json::from_value(report["pairs"].clone()).expect("pairs");
    let pair = |a: &str, b: &str| (a.to_owned(), b.to_owned());
    assert_eq!(
        pairs,
        [
            pair("gpu-01", "gpu-02"),
            pair("gpu-01", "gpu-06"),
            pair("gpu-02", "gpu-06"),
            pair("gpu-03", "gpu-04"),
        ],
        "pairs within each rail only: {report:#}"
    );
    let host = report["hosts"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|h| h["name"] == "gpu-06")
        .expect("gpu-06");
    let why = host["error"].as_str().unwrap_or_default();
    assert!(
        why.contains("Could not resolve hostname gpu-06"),
        "{host:#}"
    );
    // Its runs never reached ssh: the probe's one failure is what each of them names.
    assert_eq!(
        fleet.log().matches("-> gpu-06:").count(),
        1,
        "{}",
        fleet.log()
    );
    for run in runs(&report) {
        if run["from"] == "gpu-06" || run["to"] == "gpu-06" {
            assert_eq!(run["verdict"], "FAIL", "{run:#}");
            assert_eq!(
                run["problems"],
                serde_json::json!(["run-failed"]),
                "{run:#}"
            );
            let error = run["error"].as_str().unwrap_or_default();
            assert!(error.starts_with("gpu-06 cannot be used: "), "{run:#}");
        } else {
            assert_eq!(run["verdict"], "PASS", "{run:#}");
        }
    }
    assert_eq!(
        findings(&report),
        [(
            "slow-node".to_owned(),
            "node gpu-06: 2 of 2 pairs failed to run".to_owned()
        )],
        "{report:#}"
    );
}
