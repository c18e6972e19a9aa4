//! Runs a benchmark client (or ssh) locally and measures what it cost: wall time and the
//! process's own CPU time. The CPU time is read from `/proc/<pid>/stat` after the process
//! exited but before it is reaped (`waitid` with `WNOWAIT` leaves it a zombie whose stat
//! still holds its final `utime`/`stime`), so nothing else running on the machine counts.

use std::ffi::OsStr;
use std::io::Read as _;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use nix::sys::wait::{waitid, Id, WaitPidFlag, WaitStatus};
use nix::unistd::{sysconf, SysconfVar};

/// What one local run produced.
#[derive(Debug, Clone)]
pub struct LocalRun {
    /// Its stdout.
    pub stdout: String,
    /// Its stderr.
    pub stderr: String,
    /// Whether it exited 0.
    pub status_success: bool,
    /// Its exit code; None when a signal ended it.
    pub exit_code: Option<i32>,
    /// Whether dpuctl stopped it at the deadline.
    pub timed_out: bool,
    /// Wall time from spawn to exit.
    pub wall: Duration,
    /// User + system CPU seconds of the process and the children it waited for; None when
    /// `/proc` could not tell.
    pub cpu_seconds: Option<f64>,
}

/// utime + stime + cutime + cstime of a process, in seconds.
fn cpu_seconds(pid: u32) -> Option<f64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name is in parentheses and may contain spaces: count from after it.
    let rest = &stat[stat.rfind(')')? + 2..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // rest[0] is field 3 (state); utime..cstime are fields 14..17.
    let ticks: u64 = fields
        .get(11..15)?
        .iter()
        .map(|f| f.parse::<u64>().ok())
        .sum::<Option<u64>>()?;
    let hz = sysconf(SysconfVar::CLK_TCK)
        .ok()
        .flatten()
        .filter(|&hz| hz > 0)?;
    Some(ticks as f64 / hz as f64)
}

/// Runs `program args` with stdin closed, stops it at `timeout`, and measures it.
pub fn run_measured(
    program: impl AsRef<OsStr>,
    args: &[impl AsRef<OsStr>],
    timeout: Duration,
) -> std::io::Result<LocalRun> {
    run_measured_env(program, args, &[], timeout)
}

/// [`run_measured`] with extra environment variables.
pub fn run_measured_env(
    program: impl AsRef<OsStr>,
    args: &[impl AsRef<OsStr>],
    env: &[(String, String)],
    timeout: Duration,
) -> std::io::Result<LocalRun> {
    let started = Instant::now();
    let mut child = Command::new(program)
        .args(args)
        .envs(env.iter().map(|(k, v)| (k, v)))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()?;
    let pid = child.id();
    let mut readers = [
        child.stdout.take().map(box_reader),
        child.stderr.take().map(box_reader),
    ]
    .map(|r| {
        std::thread::spawn(move || {
            let mut text = Vec::new();
            if let Some(mut r) = r {
                let _ = r.read_to_end(&mut text);
            }
            String::from_utf8_lossy(&text).into_owned()
        })
    })
    .into_iter();
    let raw = nix::unistd::Pid::from_raw(
        i32::try_from(pid).map_err(|_| std::io::Error::other("pid out of range"))?,
    );
    let mut timed_out = false;
    loop {
        match waitid(
            Id::Pid(raw),
            WaitPidFlag::WEXITED | WaitPidFlag::WNOWAIT | WaitPidFlag::WNOHANG,
        ) {
            Ok(WaitStatus::StillAlive) => {
                if !timed_out && started.elapsed() >= timeout {
                    timed_out = true;
                    let _ = child.kill();
                }
                std::thread::sleep(Duration::from_millis(5));
            }
            Ok(_) => break,
            Err(nix::errno::Errno::EINTR) => {}
            Err(e) => return Err(e.into()),
        }
    }
    let wall = started.elapsed();
    let cpu = cpu_seconds(pid);
    let status = child.wait()?;
    let stdout = readers
        .next()
        .and_then(|h| h.join().ok())
        .unwrap_or_default();
    let stderr = readers
        .next()
        .and_then(|h| h.join().ok())
        .unwrap_or_default();
    Ok(LocalRun {
        stdout,
        stderr,
        status_success: status.success(),
        exit_code: status.code(),
        timed_out,
        wall,
        cpu_seconds: cpu,
    })
}

fn box_reader(r: impl std::io::Read + Send + 'static) -> Box<dyn std::io::Read + Send> {
    Box::new(r)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_busy_child_is_charged_its_cpu_and_an_idle_one_nearly_none() {
        let busy = run_measured(
            "sh",
            &[
                "-c",
                "i=0; while [ $i -lt 300000 ]; do i=$((i+1)); done; echo done",
            ],
            Duration::from_secs(60),
        )
        .expect("run");
        assert!(busy.status_success);
        assert_eq!(busy.stdout.trim(), "done");
        let busy_cpu = busy.cpu_seconds.expect("cpu");
        assert!(busy_cpu > 0.05, "busy loop charged {busy_cpu} s");
        let idle = run_measured("sleep", &["0.3"], Duration::from_secs(10)).expect("run");
        let idle_cpu = idle.cpu_seconds.expect("cpu");
        assert!(idle.wall >= Duration::from_millis(300));
        assert!(idle_cpu < busy_cpu / 2.0, "sleep charged {idle_cpu} s");
    }

    #[test]
    fn a_hung_child_is_stopped_at_the_deadline() {
        let run = run_measured("sleep", &["30"], Duration::from_millis(200)).expect("run");
        assert!(run.timed_out);
        assert!(!run.status_success);
        assert!(run.wall < Duration::from_secs(10));
    }
}
