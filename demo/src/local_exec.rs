//! The local executor: the plan's steps as processes on this machine (no Kubernetes, no
//! Kubeflow), for labs and CI. Commands are argv vectors from the plan, never shell lines;
//! each step's output is kept in the run's work directory.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use dpu_probe::SysRoot;

use super::fingerprint;
use super::plan::Plan;
use super::step_report::StepOutcome;
use dpu_host::roce::local_run::run_measured_env;
use dpu_host::roce::nccl::corroborate::{corroborate, named_ports, snapshot, CollectiveFloor};
use dpu_host::roce::nccl::parse_results;
use dpu_host::roce::nccl::transport::{scan_transport, NcclTransport};

/// The marker the example scripts print before their result (examples/demo/README.md).
const RESULT_MARKER: &str = "DEMO-RESULT ";

/// The run's directory could not be created: where, and the system's reason.
#[derive(Debug, thiserror::Error)]
#[error("cannot create the run directory under {}", work.display())]
pub struct RunDirError {
    /// The work directory the run's directory was to be made in.
    pub work: PathBuf,
    /// The system's reason.
    #[source]
    pub source: std::io::Error,
}

/// Where one run keeps its logs and outputs.
#[derive(Debug, Clone)]
pub struct RunDir(pub PathBuf);

impl RunDir {
    /// `{work_dir}/{run_id}`, created.
    pub fn create(work_dir: &Path, run_id: &str) -> std::io::Result<Self> {
        let dir = work_dir.join(run_id);
        std::fs::create_dir_all(&dir)?;
        Ok(Self(dir))
    }

    /// The run's directory under the plan's `work_dir` (default `$TMPDIR/dpuctl-demo`),
    /// created, with an error that names it.
    pub fn for_plan(plan: &Plan, run_id: &str) -> Result<Self, RunDirError> {
        let work = plan
            .executor
            .work_dir
            .clone()
            .unwrap_or_else(|| std::env::temp_dir().join("dpuctl-demo"));
        Self::create(&work, run_id).map_err(|source| RunDirError { work, source })
    }

    fn log(&self, name: &str) -> PathBuf {
        self.0.join(format!("{name}.log"))
    }
}

/// The last `DEMO-RESULT {json}` line of a log.
pub fn demo_result(log: &str) -> Option<serde_json::Value> {
    log.lines()
        .rev()
        .find_map(|l| l.trim().strip_prefix(RESULT_MARKER))
        .and_then(|json| serde_json::from_str(json).ok())
}

/// Runs `argv` with extra `env` to completion (at most `timeout`), keeps its output in
/// `log`, and returns (success, output) or the reason it could not run.
fn run_logged(
    argv: &[String],
    env: &[(String, String)],
    timeout: Duration,
    log: &Path,
) -> Result<(bool, String, Option<f64>), String> {
    let (program, rest) = argv.split_first().ok_or("empty command")?;
    let run = run_measured_env(program, rest, env, timeout)
        .map_err(|e| format!("cannot run {program}: {e}"))?;
    let text = format!("{}{}", run.stdout, run.stderr);
    let _ = std::fs::write(log, &text);
    if run.timed_out {
        return Err(format!(
            "{program} did not finish within {}",
            humantime::format_duration(timeout)
        ));
    }
    if !run.status_success {
        let tail: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
        return Err(format!(
            "{program} exited {:?}: {} (log: {})",
            run.exit_code,
            tail[tail.len().saturating_sub(2)..].join(" | "),
            log.display()
        ));
    }
    Ok((true, text, run.cpu_seconds))
}

/// Step b: an NCCL all-reduce between two RDMA counter snapshots.
pub fn communication(plan: &Plan, dir: &RunDir, sys_root: &Path) -> StepOutcome {
    let mut out = StepOutcome::default();
    let c = &plan.communication;
    let mut env = vec![("NCCL_DEBUG".to_owned(), "INFO".to_owned())];
    if let Some(dev) = &c.rdma_device {
        env.push(("NCCL_IB_HCA".to_owned(), dev.clone()));
    }
    let root = SysRoot::new(sys_root);
    let before = snapshot(&root);
    let result = run_logged(
        &c.nccl_tests,
        &env,
        Duration::from_secs(1800),
        &dir.log("nccl"),
    );
    std::thread::sleep(Duration::from_millis(30));
    let after = snapshot(&root);
    let text = match result {
        Ok((_, text, _)) => text,
        Err(e) => return out.fail(e),
    };
    let transport = scan_transport(&text);
    let named = named_ports(&transport.ib_devices);
    let results = parse_results(&text).ok();
    let floor = results.as_ref().map(CollectiveFloor::of);
    let counters = corroborate(&before, &after, transport.transport, &named, floor);
    out.note(format!(
        "RDMA counters: {} ({})",
        counters.verdict, counters.reason
    ));
    for e in transport.evidence.iter().take(3) {
        out.note(format!("log: {e}"));
    }
    let busbw = results.and_then(|r| r.avg_busbw_gbps);
    if let Some(b) = busbw {
        out.note(format!("average bus bandwidth {b} GB/s"));
    }
    match transport.transport {
        NcclTransport::Socket => {
            return out.fail("NCCL fell back to NET/Socket: the collective did not use RDMA")
        }
        NcclTransport::Unknown => {
            return out.fail(
                "the NCCL log does not say which transport it used (NCCL_DEBUG=INFO lines missing)",
            )
        }
        NcclTransport::Ib => {}
    }
    if counters.verdict != "agrees" {
        return out.fail(format!("NCCL reports NET/IB, but {}", counters.reason));
    }
    if let Some(min) = c.min_busbw_gbps {
        match busbw {
            Some(b) if b >= min => {}
            Some(b) => {
                return out.fail(format!(
                    "bus bandwidth {b} GB/s is below the plan's {min} GB/s"
                ))
            }
            None => return out.fail("nccl-tests printed no average bus bandwidth"),
        }
    }
    out.headline = format!(
        "NET/IB{}, confirmed by {} RDMA packets",
        busbw.map(|b| format!(" at {b} GB/s")).unwrap_or_default(),
        counters.packets.unwrap_or(0)
    );
    out
}

/// Step c: the fine-tune as a local process.
pub fn training(plan: &Plan, dir: &RunDir) -> (StepOutcome, Option<serde_json::Value>) {
    let mut out = StepOutcome::default();
    let argv = plan.local.train.as_ref().unwrap_or(&plan.training.command);
    let env: Vec<(String, String)> = plan.training.env.clone().into_iter().collect();
    let text = match run_logged(argv, &env, plan.training.timeout.0, &dir.log("train")) {
        Ok((_, text, cpu)) => {
            if let Some(cpu) = cpu {
                out.note(format!("training used {cpu:.1} CPU seconds"));
            }
            text
        }
        Err(e) => {
            let socket =
                scan_transport(&std::fs::read_to_string(dir.log("train")).unwrap_or_default());
            if socket.transport == NcclTransport::Socket {
                out.note("diagnosis: NCCL fell back to NET/Socket".to_owned());
            }
            return (out.fail(e), None);
        }
    };
    if scan_transport(&text).transport == NcclTransport::Socket {
        return (
            out.fail(
                "training finished, but NCCL used NET/Socket: the data went over TCP, not RDMA",
            ),
            None,
        );
    }
    let result = demo_result(&text);
    match &result {
        Some(r) if r.get("ok").and_then(serde_json::Value::as_bool) == Some(false) => {
            let e = r
                .get("error")
                .and_then(|e| e.as_str())
                .unwrap_or("no reason given");
            return (
                out.fail(format!("the training script reported failure: {e}")),
                result,
            );
        }
        Some(r) => {
            for key in [
                "bytes_read",
                "steps",
                "first_loss",
                "final_loss",
                "seconds",
                "device",
            ] {
                if let Some(v) = r.get(key) {
                    out.note(format!("{key}: {v}"));
                }
            }
            if let Some(files) = r.get("files_read").and_then(|f| f.as_array()) {
                out.note(format!("read {} files from the storage path", files.len()));
            }
        }
        None => out.note("no DEMO-RESULT line in the training output".to_owned()),
    }
    out.headline = "the fine-tune finished".to_owned();
    (out, result)
}

/// Step d: merge, then compare the fingerprint with the archive.
pub fn merge(plan: &Plan, dir: &RunDir) -> StepOutcome {
    let mut out = StepOutcome::default();
    let argv = plan.local.merge.as_ref().unwrap_or(&plan.merge.command);
    if let Err(e) = run_logged(argv, &[], Duration::from_secs(3600), &dir.log("merge")) {
        return out.fail(e);
    }
    let read = |p: &Path| {
        std::fs::read_to_string(p)
            .map_err(|e| format!("{}: {e}", p.display()))
            .and_then(|t| fingerprint::parse(&t).map_err(|e| format!("{}: {e}", p.display())))
    };
    let (merged, archived) = match (read(&plan.merge.fingerprint), read(&plan.merge.archive)) {
        (Ok(m), Ok(a)) => (m, a),
        (Err(e), _) | (_, Err(e)) => return out.fail(e),
    };
    let diffs = fingerprint::compare(&archived, &merged, plan.merge.rel_tolerance);
    out.note(format!(
        "{} tensors, {} parameters compared at relative tolerance {}",
        merged.tensors.len(),
        merged.param_count,
        plan.merge.rel_tolerance
    ));
    if let Some(first) = diffs.first() {
        for d in diffs.iter().take(10) {
            out.note(d.clone());
        }
        return out.fail(format!(
            "the merged model differs from the archive in {} values, e.g. {first}",
            diffs.len()
        ));
    }
    out.headline = "the merged model matches the archived fingerprint".to_owned();
    out
}

/// The local stand-in for the vLLM replicas: a process started from `local.serve`.
#[derive(Debug)]
pub struct LocalServer {
    child: Child,
}

impl LocalServer {
    /// Starts `local.serve` with its output in the run directory.
    pub fn start(plan: &Plan, dir: &RunDir) -> Result<Self, String> {
        let argv = plan.local.serve.as_ref().ok_or(
            "the local executor needs [local] serve (a command that serves the OpenAI API)",
        )?;
        let (program, rest) = argv.split_first().ok_or("[local] serve is empty")?;
        let log = std::fs::File::create(dir.log("serve")).map_err(|e| e.to_string())?;
        let err = log.try_clone().map_err(|e| e.to_string())?;
        let child = Command::new(program)
            .args(rest)
            .stdin(Stdio::null())
            .stdout(log)
            .stderr(err)
            .spawn()
            .map_err(|e| format!("cannot start {program}: {e}"))?;
        Ok(Self { child })
    }

    /// The process id, for a server left running.
    pub fn id(&self) -> u32 {
        self.child.id()
    }

    /// Stops it.
    pub fn stop(mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_last_result_line_is_read() {
        let log = "step 1 loss 5.5\nDEMO-RESULT {\"step\":\"x\",\"ok\":false}\nnoise\n\
                   DEMO-RESULT {\"step\":\"finetune\",\"bytes_read\":26884}\n";
        assert_eq!(demo_result(log).expect("result")["bytes_read"], 26884);
        assert!(demo_result("nothing").is_none());
    }
}
