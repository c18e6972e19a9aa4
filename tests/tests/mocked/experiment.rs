//! `dpuctl experiment run` on the real kernel: a network namespace with a veth pair, an
//! MTU experiment 1500 → 9000 whose measurement is a stand-in for ib_write_bw
//! (tests/fixtures/experiment/fake_ib_write_bw.sh, which reads the MTU from /sys as a real
//! benchmark's path would feel it). The MTU is set through netlink by dpuctl itself.
//!
//! - a run ends with a verdict and the MTU back at 1500, the journal gone; the page it
//!   writes parses in headless chromium with one `<svg>`;
//! - negative control: a measurement that ignores the MTU gives NO EFFECT, one that
//!   follows it IMPROVEMENT;
//! - SIGTERM mid-run (in phase B, MTU 9000): MTU 1500 and no journal after;
//! - SIGKILL mid-run: the MTU stays 9000 with the journal on disk, and `dpuctl
//!   experiment recover`, or separately the next `run`, restores 1500.
//!
//! Needs root (namespaces, MTU changes); SKIPs with the reason without it.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};

use dpu_sim::netns::Netns;
use dpu_tests::harness::bin_dir;
use dpu_tests::{running_as_root, skip};

const IFACE: &str = "v0";

/// The namespace, its veth, a temp dir with the plan and journal paths.
struct Setup {
    ns: Netns,
    dir: tempfile::TempDir,
}

impl Setup {
    fn new(purpose: &str) -> Result<Self, String> {
        let ns = Netns::create(purpose).map_err(|e| e.to_string())?;
        ns.ip(&["link", "add", IFACE, "type", "veth", "peer", "name", "v1"])
            .map_err(|e| e.to_string())?;
        let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
        Ok(Self { ns, dir })
    }

    fn journal(&self) -> PathBuf {
        self.dir.path().join("journal.json")
    }

    /// Writes the plan; `mode` is the stand-in's `mtu` (follows the knob) or `flat`.
    fn plan(&self, mode: &str, trials: u32) -> PathBuf {
        let script =
            Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/experiment/fake_ib_write_bw.sh");
        let counter = self.dir.path().join("counter");
        let plan = self.dir.path().join(format!("mtu-{mode}.toml"));
        let text = format!(
            "trials = {trials}\n[measurement]\nkind = \"command\"\nargv = [{:?}, {IFACE:?}, {mode:?}, {:?}]\n\
             parser = \"perftest\"\n[knob]\nkind = \"mtu\"\ninterface = {IFACE:?}\na = 1500\nb = 9000\n\
             [metric]\nbetter = \"higher\"\n",
            script.display().to_string(),
            counter.display().to_string(),
        );
        std::fs::write(&plan, text).expect("plan written");
        plan
    }

    fn mtu(&self) -> String {
        self.ns
            .exec("cat", &[&format!("/sys/class/net/{IFACE}/mtu")])
            .expect("mtu readable")
            .trim()
            .to_owned()
    }

    fn dpuctl_command(&self, args: &[&str]) -> Command {
        let mut command = Command::new("ip");
        command
            .args(["netns", "exec", self.ns.name()])
            .arg(bin_dir().join("dpuctl"))
            .args(args)
            .stdin(Stdio::null());
        command
    }

    fn dpuctl(&self, args: &[&str]) -> Output {
        self.dpuctl_command(args).output().expect("dpuctl runs")
    }

    fn run(&self, plan: &Path, extra: &[&str]) -> Output {
        let journal = self.journal();
        let mut args = vec![
            "experiment",
            "run",
            plan.to_str().expect("utf-8"),
            "--journal",
            journal.to_str().expect("utf-8"),
        ];
        args.extend_from_slice(extra);
        self.dpuctl(&args)
    }

    /// Starts a run and returns once its first trial of phase B has been reported (the
    /// MTU is 9000 then), with the stderr lines read so far.
    fn start_and_wait_for_b(&self, plan: &Path) -> (Child, Vec<String>) {
        let journal = self.journal();
        let mut child = self
            .dpuctl_command(&[
                "experiment",
                "run",
                plan.to_str().expect("utf-8"),
                "--journal",
                journal.to_str().expect("utf-8"),
            ])
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("dpuctl starts");
        let mut lines = Vec::new();
        let stderr = child.stderr.take().expect("stderr piped");
        let mut reader = BufReader::new(stderr);
        loop {
            let mut line = String::new();
            if reader.read_line(&mut line).expect("stderr readable") == 0 {
                panic!("dpuctl ended before phase B: {lines:#?}");
            }
            let done = line.contains("B1 trial 1:");
            lines.push(line);
            if done {
                break;
            }
        }
        // Keep draining stderr so the process never blocks on a full pipe.
        std::thread::spawn(move || {
            let mut rest = String::new();
            while reader.read_line(&mut rest).unwrap_or(0) > 0 {
                rest.clear();
            }
        });
        (child, lines)
    }
}

fn setup(purpose: &str) -> Option<Setup> {
    if !running_as_root() {
        return None;
    }
    Some(Setup::new(purpose).expect("namespace with a veth pair"))
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[test]
fn an_mtu_experiment_reaches_a_verdict_and_leaves_the_mtu_as_it_was() {
    let Some(s) = setup("exp-verdict") else {
        skip!("needs root for a network namespace and MTU changes");
    };
    let html = s.dir.path().join("page.html");
    let out = s.run(
        &s.plan("mtu", 5),
        &["--html", html.to_str().expect("utf-8")],
    );
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert!(stdout.starts_with("IMPROVEMENT"), "{stdout}");
    assert!(stderr.contains("phase B1: 9000"), "{stderr}");
    assert!(stderr.contains("mtu of v0 restored to 1500"), "{stderr}");
    assert_eq!(s.mtu(), "1500");
    assert!(!s.journal().exists());
    let page = std::fs::read_to_string(&html).expect("page written");
    assert_eq!(page.matches("<svg").count(), 1);
    check_in_chromium(&html, s.dir.path());
}

/// The page parsed by a real browser: its DOM has the one `<svg>` with all 15 trials,
/// and a screenshot is rendered (kept when `DPU_EXPERIMENT_SCREENSHOT` names a file).
fn check_in_chromium(html: &Path, dir: &Path) {
    let chromium = Path::new("/usr/bin/chromium");
    if !chromium.exists() {
        skip!("/usr/bin/chromium is absent: the page was not opened in a browser");
    }
    let url = format!("file://{}", html.display());
    let common = [
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--hide-scrollbars",
        "--window-size=900,820",
    ];
    let dom = Command::new(chromium)
        .args(common)
        .arg("--dump-dom")
        .arg(&url)
        .output()
        .expect("chromium runs");
    let dom = text(&dom.stdout);
    assert_eq!(dom.matches("<svg").count(), 1, "{dom}");
    assert_eq!(dom.matches("<circle").count(), 15, "every trial is a point");
    let shot = std::env::var_os("DPU_EXPERIMENT_SCREENSHOT")
        .map_or_else(|| dir.join("page.png"), PathBuf::from);
    let status = Command::new(chromium)
        .args(common)
        .arg(format!("--screenshot={}", shot.display()))
        .arg(&url)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .expect("chromium runs");
    assert!(status.success());
    let png = std::fs::read(&shot).expect("screenshot written");
    assert!(png.starts_with(b"\x89PNG"), "not a PNG");
}

#[test]
fn a_measurement_that_ignores_the_mtu_gives_no_effect() {
    let Some(s) = setup("exp-flat") else {
        skip!("needs root for a network namespace and MTU changes");
    };
    let out = s.run(&s.plan("flat", 5), &["-o", "json"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(report["analysis"]["verdict"], "NO_EFFECT", "{report}");
    assert_eq!(report["restored"], "1500");
    assert_eq!(s.mtu(), "1500");
}

#[test]
fn sigterm_mid_run_restores_the_mtu_and_removes_the_journal() {
    let Some(s) = setup("exp-term") else {
        skip!("needs root for a network namespace and MTU changes");
    };
    let (mut child, _) = s.start_and_wait_for_b(&s.plan("mtu", 5));
    assert_eq!(s.mtu(), "9000", "killed in phase B");
    assert!(s.journal().exists());
    let pid = nix::unistd::Pid::from_raw(i32::try_from(child.id()).expect("pid"));
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM).expect("SIGTERM sent");
    let status = child.wait().expect("dpuctl exits");
    assert_eq!(status.code(), Some(1), "a stopped run exits 1");
    assert_eq!(s.mtu(), "1500");
    assert!(!s.journal().exists());
}

#[test]
fn sigkill_mid_run_leaves_a_journal_that_recover_and_the_next_run_undo() {
    let Some(s) = setup("exp-kill") else {
        skip!("needs root for a network namespace and MTU changes");
    };
    let plan = s.plan("mtu", 3);
    let journal = s.journal();
    let journal_arg = journal.to_str().expect("utf-8");
    for undo in ["recover", "run"] {
        let (mut child, _) = s.start_and_wait_for_b(&plan);
        child.kill().expect("SIGKILL sent");
        child.wait().expect("reaped");
        assert_eq!(s.mtu(), "9000", "nothing could restore it");
        assert!(journal.exists(), "the journal outlives the process");
        let out = match undo {
            "recover" => s.dpuctl(&["experiment", "recover", "--journal", journal_arg]),
            _ => s.run(&plan, &[]),
        };
        let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
        assert!(out.status.success(), "{undo}: {stdout}\n{stderr}");
        match undo {
            "recover" => {
                assert!(
                    stdout.starts_with("restored mtu of v0 from 9000 to 1500"),
                    "{stdout}"
                );
                assert_eq!(s.mtu(), "1500", "restored before anything else");
            }
            _ => {
                let undone = stderr
                    .lines()
                    .position(|l| l.contains("was undone: mtu of v0 restored to 1500"))
                    .expect("the run says it undid the journal");
                let first_phase = stderr
                    .lines()
                    .position(|l| l.contains("phase A1"))
                    .expect("the run then ran");
                assert!(undone < first_phase, "{stderr}");
                assert_eq!(s.mtu(), "1500");
            }
        }
        assert!(!journal.exists());
    }
    let nothing = s.dpuctl(&["experiment", "recover", "--journal", journal_arg]);
    assert!(text(&nothing.stdout).contains("nothing to recover"));
}
