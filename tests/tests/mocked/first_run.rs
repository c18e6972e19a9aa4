//! The rough edges a new user hits first (issue 35), through the real `dpuctl` binary: an
//! unreachable agent is said once with a way forward, an agent's rejection is said once,
//! and a storage change that fails because SNAP is away says "cannot connect" once.

use dpu_tests::fixture;
use dpu_tests::harness::{dpuctl, AgentOptions, AgentProcess};

use crate::Lab;

fn stderr(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn an_unreachable_agent_is_said_once_with_a_hint_by_cause() {
    let dir = tempfile::tempdir().expect("tempdir");
    let missing = dir.path().join("nobody.sock");
    let out = dpuctl(&[
        "--agent",
        &format!("unix:{}", missing.display()),
        "--timeout",
        "2",
        "dpu",
        "info",
    ]);
    assert_eq!(out.status.code(), Some(2));
    let text = stderr(&out);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 2, "{text}");
    assert!(
        lines[0].starts_with("dpuctl: error: cannot reach the agent at unix:"),
        "{text}"
    );
    assert_eq!(
        text.matches("No such file or directory").count(),
        1,
        "{text}"
    );
    assert!(
        lines[1].starts_with(&format!(
            "dpuctl: hint: there is no socket at {}: start dpu-agent",
            missing.display()
        )),
        "{text}"
    );
    assert!(lines[1].contains("--agent or DPUCTL_AGENT"), "{text}");

    // A socket file nobody listens on any more: refused, not missing.
    let stale = dir.path().join("stale.sock");
    drop(std::os::unix::net::UnixListener::bind(&stale).expect("bind"));
    let out = dpuctl(&[
        "--agent",
        &format!("unix:{}", stale.display()),
        "--timeout",
        "2",
        "dpu",
        "info",
    ]);
    assert_eq!(out.status.code(), Some(2));
    let text = stderr(&out);
    assert_eq!(text.matches("Connection refused").count(), 1, "{text}");
    assert!(
        text.contains("dpuctl: hint: nothing is listening at unix:"),
        "{text}"
    );
}

#[test]
fn an_agents_rejection_is_said_once_with_its_code_name() {
    let lab = Lab::start();
    let out = dpuctl(&[
        "--agent",
        &lab.agent.endpoint(),
        "storage",
        "attach",
        "--id",
        "r0",
        "--traddr",
        "192.0.2.10",
        "--subnqn",
        "bogus",
    ]);
    assert_eq!(out.status.code(), Some(2));
    let text = stderr(&out);
    assert_eq!(
        text.trim_end(),
        "dpuctl: error: Storage.CreateRemoteController failed: spec.subnqn: NQN \"bogus\" \
         does not start with \"nqn.\" (InvalidArgument)"
    );
}

#[test]
fn an_expose_without_snap_says_cannot_connect_once() {
    // No fake SNAP: the agent's SNAP socket does not exist, so every step of the change
    // and of its rollback fails with the same cause.
    let (dir, root) = fixture::bluefield3_tempdir();
    let agent = AgentProcess::start(&AgentOptions::new(dir.path(), &root));
    let out = dpuctl(&[
        "--agent",
        &agent.endpoint(),
        "--timeout",
        "20",
        "storage",
        "expose",
        "--id",
        "r0",
        "--traddr",
        "192.0.2.10",
        "--subnqn",
        "nqn.2016-06.io.spdk:cnode1",
        "--nqn",
        "nqn.2022-10.io.nvda.nvme:0",
    ]);
    assert_eq!(out.status.code(), Some(2));
    let text = stderr(&out);
    assert_eq!(text.matches("cannot connect").count(), 1, "{text}");
    assert!(text.contains("still to undo"), "{text}");
    assert!(text.contains("(the same cause)"), "{text}");
    assert!(text.trim_end().ends_with("(Unavailable)"), "{text}");
}

#[test]
fn counter_values_are_grouped_in_tables_and_plain_in_json() {
    let lab = Lab::start();
    let agent = lab.agent.endpoint();
    let args = ["dpu", "counters", "-s", "rdma:mlx5_0/1"];
    let out = dpuctl(&[&["--agent", agent.as_str()][..], &args].concat());
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let table = String::from_utf8_lossy(&out.stdout);
    // port_rcv_data: 3141592653 four-byte words in the fixture.
    assert!(table.contains("12,566,370,612"), "{table}");
    let out = dpuctl(&[&["--agent", agent.as_str(), "-o", "json"][..], &args].concat());
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let json = String::from_utf8_lossy(&out.stdout);
    assert!(json.contains("12566370612"), "{json}");
    assert!(!json.contains("12,566"), "{json}");
}

/// Runs dpuctl with its stdout pipe closed before it writes a byte; returns its exit
/// status and stderr. A run that does not end within 30 s is killed and fails the test.
///
/// The pipe's read end is closed before dpuctl starts, not after: closed after the spawn,
/// a loaded machine could let dpuctl write its few lines into the pipe's buffer and exit 0
/// before this thread closed it (seen once in CI, `dpu info` exiting 0).
fn with_stdout_closed(args: &[&str]) -> (Option<i32>, String) {
    use std::io::Read as _;
    use std::process::{Command, Stdio};
    let (reader, writer) = std::io::pipe().expect("pipe");
    drop(reader);
    let mut child = Command::new(dpu_tests::harness::bin_dir().join("dpuctl"))
        .args(args)
        .env_remove("DPUCTL_AGENT")
        .stdin(Stdio::null())
        .stdout(writer)
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn dpuctl");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait") {
            break status;
        }
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            panic!("dpuctl {args:?} kept running with nobody reading its stdout");
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    let mut err = String::new();
    child
        .stderr
        .take()
        .expect("stderr")
        .read_to_string(&mut err)
        .expect("read stderr");
    (status.code(), err)
}

#[test]
fn a_reader_that_goes_away_ends_dpuctl_quietly() {
    let lab = Lab::start();
    let agent = lab.agent.endpoint();
    for args in [
        vec!["--agent", &agent, "-o", "json", "dpu", "counters"],
        vec!["--agent", &agent, "dpu", "info"],
        // A watch without --count would print forever: it must stop too.
        vec![
            "--agent", &agent, "-o", "json", "dpu", "counters", "--watch", "0.1",
        ],
    ] {
        let (code, err) = with_stdout_closed(&args);
        assert_eq!(code, Some(141), "{args:?}: {err}");
        assert_eq!(err, "", "{args:?}");
    }
}
