//! The watcher's argv, a command to its exit code, and cancels that take the command's
//! process tree and group with it (against a stand-in ssh that runs the command here).

use std::path::PathBuf;

use super::*;
fn hop(program: &str) -> Ssh {
    Ssh::new(program.into(), Some(2222), None)
}

#[test]
fn the_remote_words_arrive_as_words_under_the_watcher() {
    let words = vec!["dpuctl".to_owned(), "--peer".into(), "a b;$(x)".into()];
    let argv = hop("ssh")
        .watched_argv("root@gpu-01", &words)
        .expect("argv");
    let remote = argv.last().expect("remote").to_string_lossy().into_owned();
    let split = shlex::split(&remote).expect("split");
    assert_eq!(split[..2], ["sh", "-c"]);
    assert_eq!(split[2], WATCHER);
    assert_eq!(split[3..], ["dpuctl-fleet", "dpuctl", "--peer", "a b;$(x)"]);
    assert!(argv.iter().any(|a| a == "BatchMode=yes"));
    assert_eq!(argv[argv.len() - 2], "root@gpu-01");
    assert_eq!(argv[argv.len() - 3], "--");
}

#[test]
fn a_destination_that_could_be_an_option_is_refused() {
    let err = hop("ssh")
        .watched_argv("-oProxyCommand=x", &["true".to_owned()])
        .expect_err("option");
    assert!(err.to_string().contains("is not a host"), "{err}");
}

/// A stand-in for ssh that runs the remote command here, with the watcher.
fn local_ssh(dir: &std::path::Path) -> PathBuf {
    use std::os::unix::fs::PermissionsExt as _;
    let path = dir.join("ssh");
    std::fs::write(
        &path,
        "#!/bin/sh\nwhile [ \"$1\" != -- ]; do shift; done\nexec sh -c \"$3\"\n",
    )
    .expect("write");
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    path
}

fn words(w: &[&str]) -> Vec<String> {
    w.iter().map(|s| (*s).to_owned()).collect()
}

/// Runs `script` on the stand-in and cancels it after half a second.
fn cancelled(program: PathBuf, script: &str) -> RemoteOutput {
    let hop = Ssh::new(program, None, None);
    let cancel = Cancel::new();
    let flag = cancel.clone();
    let stopper = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(500));
        flag.cancel();
    });
    let started = Instant::now();
    let out = hop
        .run_watched(
            "h",
            &words(&["sh", "-c", script]),
            Duration::from_secs(60),
            &cancel,
        )
        .expect("run");
    stopper.join().expect("stopper");
    // Well under the 30 s the grandchild would hold the output open if it were
    // waited for, with room for a loaded 2-core CI machine.
    assert!(
        started.elapsed() < Duration::from_secs(25),
        "stopped, not waited for"
    );
    out
}

#[test]
fn a_command_runs_to_its_exit_code_and_a_cancelled_one_stops() {
    let dir = tempfile::tempdir().expect("dir");
    let hop = Ssh::new(local_ssh(dir.path()), None, None);
    let out = hop
        .run_watched(
            "h",
            &words(&["sh", "-c", "echo out; echo err >&2; exit 3"]),
            Duration::from_secs(30),
            &Cancel::new(),
        )
        .expect("run");
    assert_eq!(out.ended, Ended::Exited(Some(3)));
    assert_eq!(
        (out.stdout.as_str(), out.stderr.as_str()),
        ("out\n", "err\n")
    );

    // A long command, cancelled: the watcher ends it (its marker file never appears).
    let marker = dir.path().join("finished");
    let script = format!(
        "trap 'exit 0' TERM; i=0; while [ $i -lt 200 ]; do sleep 0.1; i=$((i+1)); done; : > {}",
        marker.display()
    );
    let out = cancelled(local_ssh(dir.path()), &script);
    assert_eq!(out.ended, Ended::Cancelled);
    std::thread::sleep(Duration::from_millis(300));
    assert!(!marker.exists(), "the remote command was not stopped");
}

/// Whether `pid` still runs (a zombie waiting for its reaper does not).
fn alive(pid: &str) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        !stat
            .rsplit_once(") ")
            .is_some_and(|(_, r)| r.starts_with('Z'))
    })
}

#[test]
fn a_cancelled_command_is_stopped_with_the_processes_it_started() {
    let dir = tempfile::tempdir().expect("dir");
    let pidfile = dir.path().join("pid");
    // A grandchild the command waits for, as roce perf waits for its perftest client.
    let script = format!("sleep 30 & echo $! > {}; wait", pidfile.display());
    let out = cancelled(local_ssh(dir.path()), &script);
    assert_eq!(out.ended, Ended::Cancelled);
    let pid = std::fs::read_to_string(&pidfile).expect("pid");
    let deadline = Instant::now() + Duration::from_secs(5);
    while alive(pid.trim()) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(
        !alive(pid.trim()),
        "the grandchild {pid} outlived the cancel"
    );
}

/// A process whose parent ended before the cancel (as a perftest client is orphaned when
/// the remote `dpuctl` dies on a closed pipe first) is no descendant of the command any
/// more: the tree walk cannot find it, the process group does (seen in the mocked fleet
/// tier under load: "the remote client outlived Ctrl-C", its parent pid 1).
#[test]
fn an_orphaned_process_of_the_command_is_stopped_with_its_group() {
    let have_setsid = std::process::Command::new("sh")
        .args(["-c", "command -v setsid"])
        .stdout(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !have_setsid {
        // The watcher runs without a group of its own there; nothing to test.
        return;
    }
    let dir = tempfile::tempdir().expect("dir");
    let pidfile = dir.path().join("pid");
    // The subshell starts the sleeper and exits at once: the sleeper's parent is pid 1
    // (or a subreaper) long before the cancel.
    let script = format!(
        "(sleep 30 </dev/null >/dev/null 2>&1 & echo $! > {}); sleep 30",
        pidfile.display()
    );
    let out = cancelled(local_ssh(dir.path()), &script);
    assert_eq!(out.ended, Ended::Cancelled);
    let pid = std::fs::read_to_string(&pidfile).expect("pid");
    let deadline = Instant::now() + Duration::from_secs(5);
    while alive(pid.trim()) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(
        !alive(pid.trim()),
        "the orphaned process {pid} outlived the cancel"
    );
}
