//! `scripts/hardware-conformance.sh` on synthetic lists and sys trees: an item runs only
//! where its side, needs and tools are present (each skip has its control: the same item
//! runs once the need is there), a changing item only with `--allow-changes`, a by-hand
//! item never; each run's output and exit status are kept; bad arguments are refused
//! before anything runs; the script is shellcheck-clean.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use dpu_tests::docs::repo_root;
use dpu_tests::skip;

fn kit() -> PathBuf {
    repo_root().join("scripts/hardware-conformance.sh")
}

const LIST: &str = "\
# a synthetic list
id: legend-one
kind: legend
doc: docs/x.md
quote: q
claim: the marker

id: plain
doc: docs/x.md
quote: q
claim: c
where: both
needs: none
run: echo observed-plain
 echo second line
look: l

id: failing
doc: docs/x.md
quote: q
claim: c
where: host
needs: none
run: echo before-failing; exit 3
look: l

id: slow
doc: docs/x.md
quote: q
claim: c
where: host
needs: none
run: sleep 30
look: l

id: missing-tool
doc: docs/x.md
quote: q
claim: c
where: host
needs: none
tools: no-such-tool-for-the-kit
run: no-such-tool-for-the-kit
look: l

id: bf
doc: docs/x.md
quote: q
claim: c
where: host
needs: bluefield
run: echo \"bdf=$BF_BDF if=$MLX_IF\"
look: l

id: changes
doc: docs/x.md
quote: q
claim: c
where: host
needs: none
mutates: yes
run: touch \"$ITEM_DIR/touched\"
look: l

id: arm
doc: docs/x.md
quote: q
claim: c
where: dpu-arm
needs: none
run: echo on-arm
look: l

id: byhand
doc: docs/x.md
quote: q
claim: c
where: host
needs: peer
manual: needs a second node
run: touch \"$ITEM_DIR/../../byhand-ran\"
look: l
";

struct Run {
    out: PathBuf,
    output: Output,
    summary: serde_json::Value,
}

impl Run {
    fn item(&self, id: &str) -> &serde_json::Value {
        self.summary["items"]
            .as_array()
            .expect("items")
            .iter()
            .find(|i| i["id"] == id)
            .unwrap_or_else(|| panic!("no item {id} in {}", self.summary))
    }
    fn status(&self, id: &str) -> (String, String) {
        let item = self.item(id);
        (
            item["status"].as_str().unwrap_or_default().to_string(),
            item["reason"].as_str().unwrap_or_default().to_string(),
        )
    }
}

/// Runs the kit on `LIST` over the sys tree `sys`, with `args`, into a fresh bundle.
fn run(dir: &Path, name: &str, sys: &Path, args: &[&str]) -> Run {
    let list = dir.join("list");
    std::fs::write(&list, LIST).expect("write list");
    let out = dir.join(name);
    let output = Command::new("bash")
        .arg(kit())
        .args([
            "--list",
            list.to_str().expect("utf-8"),
            "--out",
            out.to_str().expect("utf-8"),
        ])
        .args(["--no-capture", "--timeout", "1"])
        .args(args)
        .env("DPU_KIT_SYS_ROOT", sys)
        .output()
        .expect("run the kit");
    assert!(
        output.status.success(),
        "kit failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let summary = std::fs::read_to_string(out.join("summary.json")).expect("summary.json");
    let summary =
        serde_json::from_str(&summary).unwrap_or_else(|e| panic!("summary.json: {e}\n{summary}"));
    Run {
        out,
        output,
        summary,
    }
}

/// A sys tree with one BlueField-3 NIC function `0000:03:00.0` and its netdev.
fn bluefield_tree(root: &Path) {
    let dev = root.join("sys/bus/pci/devices/0000:03:00.0");
    std::fs::create_dir_all(dev.join("net/ens1f0np0")).expect("mkdir");
    for (file, value) in [
        ("vendor", "0x15b3\n"),
        ("device", "0xa2dc\n"),
        ("class", "0x020000\n"),
    ] {
        std::fs::write(dev.join(file), value).expect("write");
    }
}

#[test]
fn items_run_only_where_they_can_and_each_outcome_is_recorded() {
    let dir = tempfile::tempdir().expect("tempdir");
    let empty = dir.path().join("empty-sys");
    std::fs::create_dir_all(&empty).expect("mkdir");
    let run = run(dir.path(), "bundle", &empty, &["--where", "host"]);

    assert_eq!(run.status("plain"), ("ran".into(), "exit 0".into()));
    let stdout = std::fs::read_to_string(run.out.join("items/plain/stdout")).expect("stdout");
    assert_eq!(stdout, "observed-plain\nsecond line\n");
    assert!(run.item("plain")["observed"]
        .as_str()
        .unwrap_or_default()
        .starts_with("observed-plain"));
    assert_eq!(run.item("failing")["exit_status"], 3);
    assert_eq!(run.status("failing").0, "ran");
    assert_eq!(
        run.status("slow"),
        ("failed".into(), "timed out after 1s".into())
    );
    assert!(run
        .status("missing-tool")
        .1
        .contains("needs the tool no-such-tool-for-the-kit"));
    let (status, reason) = run.status("bf");
    assert!(
        status == "skipped" && reason.starts_with("needs bluefield:"),
        "{reason}"
    );
    assert_eq!(run.status("changes").0, "skipped");
    assert!(
        !run.out.join("items/changes/touched").exists(),
        "a changing item ran without --allow-changes"
    );
    assert_eq!(
        run.status("arm"),
        ("skipped".into(), "runs on dpu-arm (this is host)".into())
    );
    assert_eq!(
        run.status("byhand"),
        ("manual".into(), "needs a second node".into())
    );
    assert!(!run.out.join("byhand-ran").exists(), "a by-hand item ran");
    assert_eq!(run.status("legend-one").0, "legend");

    let summary = std::fs::read_to_string(run.out.join("summary.txt")).expect("summary.txt");
    let tgz = format!("{}.tgz", run.out.display());
    assert!(summary.contains(&format!("send back {tgz}")), "{summary}");
    assert!(Path::new(&tgz).is_file(), "no {tgz}");
    assert!(
        String::from_utf8_lossy(&run.output.stdout).contains("ran: 2"),
        "{summary}"
    );
}

#[test]
fn the_controls_each_skip_turns_into_a_run_when_its_reason_is_gone() {
    let dir = tempfile::tempdir().expect("tempdir");
    let sys = dir.path().join("bf-sys");
    bluefield_tree(&sys);
    let run = run(
        dir.path(),
        "bundle",
        &sys,
        &["--where", "dpu-arm", "--allow-changes"],
    );
    assert_eq!(
        run.status("bf"),
        ("skipped".into(), "runs on host (this is dpu-arm)".into())
    );
    assert_eq!(run.status("arm").0, "ran");
    let run = self::run(
        dir.path(),
        "bundle2",
        &sys,
        &["--where", "host", "--allow-changes"],
    );
    assert_eq!(run.status("bf").0, "ran", "{}", run.summary);
    let stdout = std::fs::read_to_string(run.out.join("items/bf/stdout")).expect("stdout");
    assert_eq!(stdout, "bdf=0000:03:00.0 if=ens1f0np0\n");
    assert_eq!(run.status("changes").0, "ran");
    assert!(run.out.join("items/changes/touched").exists());
    assert_eq!(
        run.status("byhand").0,
        "manual",
        "--allow-changes must not run a by-hand item"
    );
}

#[test]
fn only_runs_the_named_items() {
    let dir = tempfile::tempdir().expect("tempdir");
    let run = run(
        dir.path(),
        "bundle",
        dir.path(),
        &["--only", "plain,arm", "--where", "host"],
    );
    let ids: Vec<_> = run.summary["items"]
        .as_array()
        .expect("items")
        .iter()
        .map(|i| i["id"].clone())
        .collect();
    assert_eq!(ids, ["plain", "arm"]);
}

#[test]
fn bad_arguments_are_refused_naming_the_problem_before_anything_runs() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("list"), LIST).expect("write");
    let full = dir.path().join("full");
    std::fs::create_dir_all(&full).expect("mkdir");
    std::fs::write(full.join("keep"), "x").expect("write");
    let list = dir.path().join("list");
    let list = list.to_str().expect("utf-8");
    for (args, want) in [
        (
            vec!["--where", "mars"],
            "--where: `mars` is not host or dpu-arm",
        ),
        (vec!["--only", "nope"], "--only: no item `nope`"),
        (vec!["--timeout", "0"], "--timeout needs a whole number"),
        (
            vec!["--out", full.to_str().expect("utf-8")],
            "exists and is not empty",
        ),
        (vec!["--frobnicate"], "unknown argument `--frobnicate`"),
    ] {
        let output = Command::new("bash")
            .arg(kit())
            .args(["--list", list, "--no-capture"])
            .args(&args)
            .current_dir(dir.path())
            .output()
            .expect("run the kit");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(want), "{args:?}: {stderr}");
    }
    let left: Vec<_> = std::fs::read_dir(dir.path())
        .expect("read")
        .map(|e| e.expect("entry").file_name())
        .collect();
    assert_eq!(left.len(), 2, "a refused run left files: {left:?}");
}

#[test]
fn the_kit_is_shellcheck_clean() {
    if !dpu_tests::docs::on_path("shellcheck") {
        skip!("shellcheck not on PATH (apt-get install shellcheck)");
    }
    let output = Command::new("shellcheck")
        .arg(kit())
        .output()
        .expect("shellcheck");
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stdout)
    );
}

#[test]
fn the_kit_reads_the_real_list_as_the_drift_test_does_and_runs_nothing_it_cannot() {
    let text = std::fs::read_to_string(repo_root().join("docs/unverified.list")).expect("list");
    let entries = super::list::parse(&text).unwrap_or_else(|p| panic!("{p:?}"));
    let dir = tempfile::tempdir().expect("tempdir");
    let out = dir.path().join("plan");
    let output = Command::new("bash")
        .arg(kit())
        .args([
            "--dry-run",
            "--where",
            "host",
            "--out",
            out.to_str().expect("utf-8"),
        ])
        .env("DPU_KIT_SYS_ROOT", dir.path())
        .output()
        .expect("run the kit");
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).expect("json"))
            .expect("summary.json parses");
    let items = summary["items"].as_array().expect("items");
    let kit_view: Vec<(String, String)> = items
        .iter()
        .map(|i| {
            (
                i["id"].as_str().unwrap_or_default().into(),
                i["run"].as_str().unwrap_or_default().into(),
            )
        })
        .collect();
    let test_view: Vec<(String, String)> = entries
        .iter()
        .map(|e| (e.id().to_string(), e.run.join("\n")))
        .collect();
    assert_eq!(
        kit_view, test_view,
        "bash and the drift test read the list differently"
    );
    for item in items {
        let (status, needs) = (
            item["status"].as_str().unwrap_or_default(),
            item["needs"].as_str().unwrap_or_default(),
        );
        assert!(
            ["legend", "skipped", "manual", "would-run"].contains(&status),
            "{item}"
        );
        // An empty sys tree has no BlueField, NIC, RDMA, NVMe, SNAP, OVS or GPU.
        let hardware = [
            "bluefield",
            "connectx",
            "rdma",
            "infiniband",
            "snap",
            "ovs",
            "gpu",
            "nvme",
            "peer",
        ];
        if needs.split_whitespace().any(|n| hardware.contains(&n)) {
            assert_ne!(status, "would-run", "{item}");
        }
    }
    assert!(
        items.iter().any(|i| i["status"] == "would-run"),
        "nothing would run anywhere: {summary}"
    );
    assert!(
        !out.join("items")
            .read_dir()
            .expect("items dir")
            .any(|_| true),
        "a dry run ran something"
    );
}
