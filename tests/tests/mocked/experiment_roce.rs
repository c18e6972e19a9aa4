//! `dpuctl experiment run` with a `roce-perf` measurement, at process level: the MTU knob
//! on a real veth in a network namespace (set by dpuctl through netlink), the RDMA
//! counters on the one-port fixture under `--sys-root`, ssh a stand-in that runs the
//! server's command here (and the peer's GID listing against a peer fixture), and
//! `ib_write_bw` a stand-in first on PATH whose bandwidth follows the veth's MTU.
//!
//! - the client stand-in moves the port's packet counters by the payload: every trial is
//!   corroborated (path `rdma`), the verdict IMPROVEMENT, the MTU back at 1500;
//! - negative control: the same stand-in leaving the counters still: every trial is
//!   refused NOT PROVEN (no data point), the verdict INCONCLUSIVE (exit 3) and names them,
//!   the MTU back at 1500.
//!
//! Needs root (namespaces, MTU changes) and sh; SKIPs with the reason without them.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use dpu_sim::netns::Netns;
use dpu_tests::command::{describe, stdout_json as json};
use dpu_tests::fixture;
use dpu_tests::harness::bin_dir;
use dpu_tests::stand_in::{sh_quote, write_script};
use dpu_tests::{running_as_root, skip};
use serde_json::Value;

const IFACE: &str = "v0";
const COUNTERS: &str = "sys/class/infiniband/mlx5_0/ports/1/counters";
/// 100 messages of 64 KiB at perftest's default MTU (1024): 6,400 packets of payload.
const ITERATIONS: u64 = 100;
const SIZE: u64 = 65_536;

fn utf8(path: &Path) -> &str {
    path.to_str().expect("utf-8 temp path")
}

/// The namespace with its veth, the fixtures and the stand-ins.
struct Setup {
    ns: Netns,
    dir: tempfile::TempDir,
    root: PathBuf,
    bin: PathBuf,
}

impl Setup {
    /// `moves`: whether the client stand-in moves the port's counters by its payload.
    fn new(purpose: &str, moves: bool) -> Self {
        let ns = Netns::create(purpose).expect("namespace");
        ns.ip(&["link", "add", IFACE, "type", "veth", "peer", "name", "v1"])
            .expect("veth");
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path().join("root");
        fixture::single_rdma_port(&root).expect("fixture");
        fixture::set_gid(
            &root,
            "mlx5_0",
            1,
            3,
            "0000:0000:0000:0000:0000:ffff:c0a8:6401",
            "RoCE v2",
            Some("ens1f0np0"),
        )
        .expect("gid");
        let peer = dir.path().join("peer");
        fixture::single_rdma_port(&peer).expect("peer fixture");
        fixture::set_gid(
            &peer,
            "mlx5_0",
            1,
            1,
            "0000:0000:0000:0000:0000:ffff:7f00:0001",
            "RoCE v2",
            Some("p0"),
        )
        .expect("gid");
        let bin = dir.path().join("bin");
        std::fs::create_dir_all(&bin).expect("mkdir");
        // ssh: no ControlMaster; the remote command runs here with sh; the GID listing
        // reads the peer fixture.
        write_script(
            &bin.join("ssh"),
            &format!(
                r#"peer={peer}
for a; do [ "$a" = -M ] && exit 255; done
while [ $# -gt 0 ] && [ "$1" != -- ]; do shift; done
case $3 in
*/sys/class/infiniband/*)
    cmd=$(printf '%s' "$3" | sed "s#/sys/class/infiniband#$peer/sys/class/infiniband#g")
    sh -c "$cmd" | sed "s#^$peer##" ;;
*) exec sh -c "$3" ;;
esac
"#,
                peer = sh_quote(utf8(&peer)),
            ),
        );
        // ib_write_bw: the server (no address last) has nothing to do; the client prints
        // a bandwidth that follows the veth's MTU (1000 MB/s at 1500, 1200 above, with a
        // ±1 % wobble by trial) and, when `moves`, adds the payload's packets and bytes (in
        // the PMA's 4-byte words) to the port's counters each way, as the NIC would.
        let counters = root.join(COUNTERS);
        let moved = if moves {
            format!(
                "add() {{ n=$(cat {c}/$1); echo $((n + $2)) > {c}/$1; }}\n\
                 add port_xmit_packets {packets}; add port_rcv_packets {packets}\n\
                 add port_xmit_data {words}; add port_rcv_data {words}\n",
                c = sh_quote(utf8(&counters)),
                packets = ITERATIONS * SIZE / 1024,
                words = ITERATIONS * SIZE / 4,
            )
        } else {
            String::new()
        };
        write_script(
            &bin.join("ib_write_bw"),
            &format!(
                r#"for last; do :; done
case $last in *.*.*.*) ;; *) exit 0 ;; esac
trial={trial}; n=$(cat "$trial" 2>/dev/null || echo 0); echo $((n + 1)) > "$trial"
base=1000; [ "$(cat /sys/class/net/{IFACE}/mtu)" -gt 1500 ] && base=1200
bw=$((base + (n % 3) * 7 - 7)).00
{moved}cat <<TABLE
 #bytes     #iterations    BW peak[MB/sec]    BW average[MB/sec]   MsgRate[Mpps]
 {SIZE}      {ITERATIONS}             $bw            $bw              0.016000
---------------------------------------------------------------------------------------
TABLE
"#,
                trial = sh_quote(utf8(&dir.path().join("trials"))),
            ),
        );
        Self { ns, dir, root, bin }
    }

    fn plan(&self) -> PathBuf {
        let plan = self.dir.path().join("mtu-roce.toml");
        std::fs::write(
            &plan,
            format!(
                "trials = 3\n[measurement]\nkind = \"roce-perf\"\npeer = \"target\"\n\
                 test = \"write_bw\"\nsize = {SIZE}\niterations = {ITERATIONS}\n\
                 peer_address = \"127.0.0.1\"\n[knob]\nkind = \"mtu\"\ninterface = {IFACE:?}\n\
                 a = 1500\nb = 4200\n"
            ),
        )
        .expect("plan");
        plan
    }

    fn run(&self) -> Output {
        let path = std::env::var_os("PATH").unwrap_or_default();
        let mut paths = vec![self.bin.clone()];
        paths.extend(std::env::split_paths(&path));
        let journal = self.dir.path().join("journal.json");
        Command::new("ip")
            .args(["netns", "exec", self.ns.name()])
            .arg(bin_dir().join("dpuctl"))
            .arg("--sys-root")
            .arg(&self.root)
            .args(["-o", "json", "experiment", "run"])
            .arg(self.plan())
            .arg("--journal")
            .arg(&journal)
            .arg("--ssh")
            .arg(self.bin.join("ssh"))
            .env("PATH", std::env::join_paths(paths).expect("PATH"))
            .env_remove("DPUCTL_SSH")
            .env_remove("DPUCTL_AGENT")
            .stdin(Stdio::null())
            .output()
            .expect("dpuctl runs")
    }

    fn mtu(&self) -> String {
        self.ns
            .exec("cat", &[&format!("/sys/class/net/{IFACE}/mtu")])
            .expect("mtu readable")
            .trim()
            .to_owned()
    }
}

fn setup(purpose: &str, moves: bool) -> Option<Setup> {
    let sh = Command::new("sh")
        .args(["-c", "true"])
        .status()
        .is_ok_and(|s| s.success());
    (running_as_root() && sh).then(|| Setup::new(purpose, moves))
}

fn trials(report: &Value) -> &Vec<Value> {
    report["trials"].as_array().expect("a trials list")
}

#[test]
fn a_roce_perf_experiment_counts_only_trials_its_counters_corroborate() {
    let Some(setup) = setup("exp-roce-ok", true) else {
        skip!("needs root (a network namespace and MTU changes) and sh");
    };
    let out = setup.run();
    assert_eq!(out.status.code(), Some(0), "{}", describe(&out));
    let report = json(&out);
    assert_eq!(report["analysis"]["verdict"], "IMPROVEMENT", "{report:#}");
    assert_eq!(trials(&report).len(), 9, "{report:#}");
    for trial in trials(&report) {
        assert_eq!(trial["counted"], true, "{trial:#}");
        assert_eq!(trial["rdma"]["path"], "rdma", "{trial:#}");
        assert_eq!(trial["rdma"]["payload_packets"], 6_400, "{trial:#}");
        assert_eq!(trial["rdma"]["packets_delta"], 12_800, "{trial:#}");
        assert_eq!(
            trial["rdma"]["bytes_delta"],
            2 * ITERATIONS * SIZE,
            "{trial:#}"
        );
    }
    assert_eq!(
        report["metric"], "ib_write_bw BW average Gb/s at 65536 B",
        "{report:#}"
    );
    assert_eq!(setup.mtu(), "1500");
    assert!(!setup.dir.path().join("journal.json").exists());
}

#[test]
fn trials_whose_counters_stayed_still_are_refused_and_the_verdict_is_inconclusive() {
    let Some(setup) = setup("exp-roce-still", false) else {
        skip!("needs root (a network namespace and MTU changes) and sh");
    };
    let out = setup.run();
    assert_eq!(out.status.code(), Some(3), "{}", describe(&out));
    let report = json(&out);
    assert_eq!(report["analysis"]["verdict"], "INCONCLUSIVE", "{report:#}");
    assert_eq!(trials(&report).len(), 9, "{report:#}");
    for trial in trials(&report) {
        assert_eq!(trial["counted"], false, "{trial:#}");
        assert_eq!(trial["rdma"]["path"], "not-rdma", "{trial:#}");
        assert_eq!(trial["rdma"]["packets_delta"], 0, "{trial:#}");
        let why = trial["refused"].as_str().unwrap_or_default();
        assert!(why.starts_with("NOT PROVEN"), "{trial:#}");
    }
    for phase in report["analysis"]["phases"].as_array().expect("phases") {
        assert_eq!(phase["trials"], serde_json::json!([]), "{phase:#}");
    }
    let summary = report["analysis"]["summary"].as_str().unwrap_or_default();
    assert!(
        summary.contains("9 refused") && summary.contains("B1 trial 2"),
        "{summary}"
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("REFUSED"), "{stderr}");
    assert_eq!(setup.mtu(), "1500");
}
