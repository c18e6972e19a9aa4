//! How the commands reach a running `dpu-sim up`: its pid file (which `down` signals) and
//! a request directory (which `fault` writes and `up` answers, since `up` holds the SNAPs
//! and agents a fault acts on). Files in the simulation's own directory: no socket, no
//! port, nothing another user can reach.

use std::fs;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use anyhow::{bail, Context as _};
use dpu_sim::fault::Fault;
use dpu_sim::Simulation;
use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;

/// How long `fault` waits for `up` to answer.
const ANSWER_TIMEOUT: Duration = Duration::from_secs(15);

/// How long `down` waits for `up` to stop its agents and exit.
const STOP_TIMEOUT: Duration = Duration::from_secs(60);

fn pid_file(dir: &Path) -> PathBuf {
    dir.join("dpu-sim.pid")
}

fn requests(dir: &Path) -> PathBuf {
    dir.join("control")
}

/// The pid of the `dpu-sim up` serving `dir`, when one is alive (a pid file left by one
/// that was killed, or a pid reused by another program, is not).
pub(crate) fn running(dir: &Path) -> Option<i32> {
    let pid: i32 = fs::read_to_string(pid_file(dir))
        .ok()?
        .trim()
        .parse()
        .ok()?;
    let comm = fs::read_to_string(format!("/proc/{pid}/comm")).ok()?;
    (comm.trim() == "dpu-sim" && kill(Pid::from_raw(pid), None).is_ok()).then_some(pid)
}

/// Removes what a `dpu-sim up` that died without stopping left: its pid file, inventory
/// and requests (the agents it started died with their parent's SNAPs unreachable, and
/// are stopped by their own SIGTERM handling when the session ends).
pub(crate) fn clear_stale(dir: &Path) -> anyhow::Result<()> {
    for file in [pid_file(dir), dir.join("inventory.toml")] {
        match fs::remove_file(&file) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                return Err(e).with_context(|| format!("cannot remove {}", file.display()));
            }
            _ => {}
        }
    }
    let _ = fs::remove_dir_all(requests(dir));
    Ok(())
}

/// Marks `dir` as served by this process.
pub(crate) fn claim(dir: &Path) -> anyhow::Result<()> {
    fs::create_dir_all(requests(dir))
        .with_context(|| format!("cannot create {}", requests(dir).display()))?;
    fs::write(pid_file(dir), format!("{}\n", std::process::id()))
        .with_context(|| format!("cannot write {}", pid_file(dir).display()))
}

/// Unmarks `dir` after the simulation stopped.
pub(crate) fn release(dir: &Path) {
    let _ = fs::remove_file(pid_file(dir));
    let _ = fs::remove_dir_all(requests(dir));
}

/// Stops the `dpu-sim up` serving `dir` and waits until it has stopped its agents;
/// `None` when none was running (stale files are cleared).
pub(crate) fn stop(dir: &Path) -> anyhow::Result<Option<i32>> {
    let Some(pid) = running(dir) else {
        clear_stale(dir)?;
        return Ok(None);
    };
    kill(Pid::from_raw(pid), Signal::SIGTERM)
        .with_context(|| format!("cannot signal dpu-sim (pid {pid})"))?;
    let deadline = Instant::now() + STOP_TIMEOUT;
    while running(dir).is_some() {
        if Instant::now() > deadline {
            bail!("dpu-sim (pid {pid}) did not stop within {STOP_TIMEOUT:?}");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    Ok(Some(pid))
}

/// Asks the running `up` to apply `fault` to `node` and waits for its answer.
pub(crate) fn request(dir: &Path, node: &str, fault: &[String]) -> anyhow::Result<()> {
    if running(dir).is_none() {
        bail!(
            "no simulation is running in {}: start one with `dpu-sim up --detach --dir {}`",
            dir.display(),
            dir.display()
        );
    }
    let stamp = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let name = format!("{}-{stamp}", std::process::id());
    let base = requests(dir).join(&name);
    let partial = base.with_extension("partial");
    // Written whole, then renamed: `up` never reads half a request.
    fs::write(&partial, format!("{node}\n{}\n", fault.join(" ")))
        .with_context(|| format!("cannot write {}", partial.display()))?;
    fs::rename(&partial, base.with_extension("req"))
        .with_context(|| format!("cannot hand the request to {}", dir.display()))?;
    let answer = base.with_extension("done");
    let deadline = Instant::now() + ANSWER_TIMEOUT;
    loop {
        if let Ok(text) = fs::read_to_string(&answer) {
            let _ = fs::remove_file(&answer);
            return match text.trim_end().strip_prefix("error: ") {
                Some(error) => bail!("{error}"),
                None => Ok(()),
            };
        }
        if Instant::now() > deadline {
            let _ = fs::remove_file(base.with_extension("req"));
            bail!(
                "the simulation in {} did not answer within {ANSWER_TIMEOUT:?}",
                dir.display()
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Applies every pending request and answers each.
pub(crate) fn serve_requests(dir: &Path, simulation: &mut Simulation) {
    let Ok(entries) = fs::read_dir(requests(dir)) else {
        return;
    };
    let mut pending: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "req"))
        .collect();
    pending.sort();
    for request in pending {
        let text = fs::read_to_string(&request).unwrap_or_default();
        let _ = fs::remove_file(&request);
        let answer = match apply(simulation, &text) {
            Ok(()) => "ok\n".to_owned(),
            Err(e) => format!("error: {e:#}\n"),
        };
        let partial = request.with_extension("answer");
        if fs::write(&partial, answer).is_ok() {
            let _ = fs::rename(&partial, request.with_extension("done"));
        }
    }
}

/// One request: the node's name on the first line, the fault's words on the second.
fn apply(simulation: &mut Simulation, text: &str) -> anyhow::Result<()> {
    let mut lines = text.lines();
    let (Some(node), Some(words)) = (lines.next(), lines.next()) else {
        bail!("a request must name a node and a fault");
    };
    let index = simulation.node_index(node)?;
    let root = simulation.nodes()[index].root();
    let words: Vec<String> = words.split_whitespace().map(str::to_owned).collect();
    let fault = Fault::parse(&words, &root)?;
    simulation.apply(index, &fault)?;
    Ok(())
}
