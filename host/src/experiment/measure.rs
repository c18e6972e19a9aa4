//! The measurements a trial runs: a command (or an nccl-tests binary) without a shell,
//! its output read by [`super::metric`], a `storage read` through the `storage_read`
//! engine, and a `roce perf` run with its counter corroboration
//! ([`super::measure_roce`]). Each is a [`Measure`], so the runner is tested with a fake.

use std::io::Read;
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::Duration;

use super::cancel::Cancel;
use super::metric::{read_metric, Metric, MetricError};
use super::plan::OutputParser;
use crate::roce::perf::RdmaEvidence;

/// How often a running command is checked for exit and for cancellation.
const POLL: Duration = Duration::from_millis(50);

/// One trial's measurement.
pub trait Measure: Send {
    /// Runs one trial with `env` added to the measured command's environment (the `env`
    /// knob), stopping early when `cancel` is set.
    fn measure(
        &mut self,
        env: &[(String, String)],
        cancel: &Cancel,
    ) -> Result<Metric, MeasureError>;
}

/// Why a trial gave no number.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum MeasureError {
    /// The command could not be started.
    #[error("cannot start {program}")]
    Spawn {
        /// The program run (`argv[0]`).
        program: String,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
    /// The command failed.
    #[error("{program} exited with {status}: {stderr_tail}")]
    Failed {
        /// The program run (`argv[0]`).
        program: String,
        /// Its exit status.
        status: String,
        /// The end of its stderr.
        stderr_tail: String,
    },
    /// Its output had no metric.
    #[error(transparent)]
    Metric(#[from] MetricError),
    /// The storage read failed.
    #[error("storage read of {device}: {reason}")]
    Storage {
        /// The device.
        device: PathBuf,
        /// Why.
        reason: String,
    },
    /// The run was cancelled while the trial ran; the command was killed.
    #[error("cancelled")]
    Cancelled,
    /// This build cannot run the measurement.
    #[error("{0}")]
    Unsupported(String),
    /// The measurement could not be set up (a `roce-perf` peer that does not resolve).
    #[error("{0}")]
    Setup(String),
    /// A `roce perf` run failed (the tool, ssh, or its output).
    #[error("{test}: {reason}")]
    Run {
        /// The test.
        test: &'static str,
        /// What went wrong.
        reason: String,
    },
    /// The trial ran and gave a number, but its counters do not corroborate its traffic:
    /// the runner records it as refused and goes on; it is never a data point.
    #[error("refused: {}", .0.reason)]
    Refused(Box<Refusal>),
}

/// A trial whose number cannot be believed: what it measured and why it is refused.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Refusal {
    /// The number the tool printed.
    pub value: f64,
    /// What it measures.
    pub name: String,
    /// Why it is refused: `INCONCLUSIVE: ...` or `NOT PROVEN: ...`.
    pub reason: String,
    /// The counters that refused it.
    pub rdma: RdmaEvidence,
}

/// A command run without a shell, in its own process group (so a cancel kills what it
/// started too), stdout parsed by `parser`.
#[derive(Debug, Clone)]
pub struct CommandMeasure {
    /// The argv.
    pub argv: Vec<String>,
    /// The parser of its stdout.
    pub parser: OutputParser,
}

impl Measure for CommandMeasure {
    fn measure(
        &mut self,
        env: &[(String, String)],
        cancel: &Cancel,
    ) -> Result<Metric, MeasureError> {
        let program = self.argv.first().cloned().unwrap_or_default();
        let mut child = Command::new(&program)
            .args(&self.argv[1..])
            .envs(env.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0)
            .spawn()
            .map_err(|source| MeasureError::Spawn {
                program: program.clone(),
                source,
            })?;
        let stdout = drain(child.stdout.take());
        let stderr = drain(child.stderr.take());
        let status = loop {
            if cancel.is_set() {
                kill_group(child.id());
                let _ = child.wait();
                return Err(MeasureError::Cancelled);
            }
            match child.try_wait() {
                Ok(Some(status)) => break status,
                Ok(None) => std::thread::sleep(POLL),
                Err(source) => {
                    kill_group(child.id());
                    let _ = child.wait();
                    return Err(MeasureError::Spawn { program, source });
                }
            }
        };
        let stdout = stdout.join().unwrap_or_default();
        let stderr = stderr.join().unwrap_or_default();
        if !status.success() {
            let tail: String = stderr.lines().rev().take(3).collect::<Vec<_>>().join(" | ");
            return Err(MeasureError::Failed {
                program,
                status: status.to_string(),
                stderr_tail: tail,
            });
        }
        Ok(read_metric(self.parser, &stdout)?)
    }
}

/// Reads a pipe to its end on a thread (so neither pipe can fill and block the child).
fn drain<R: Read + Send + 'static>(pipe: Option<R>) -> std::thread::JoinHandle<String> {
    std::thread::spawn(move || {
        let mut text = String::new();
        if let Some(mut pipe) = pipe {
            let mut bytes = Vec::new();
            let _ = pipe.read_to_end(&mut bytes);
            text = String::from_utf8_lossy(&bytes).into_owned();
        }
        text
    })
}

/// SIGKILLs the process group the command leads.
fn kill_group(pid: u32) {
    if let Ok(pid) = i32::try_from(pid) {
        let _ = nix::sys::signal::killpg(
            nix::unistd::Pid::from_raw(pid),
            nix::sys::signal::Signal::SIGKILL,
        );
    }
}

/// A `storage read` of `size` bytes in `bs` blocks (O_DIRECT, io_uring, depth 16): MiB/s.
#[derive(Debug, Clone)]
pub struct StorageMeasure {
    /// The device or file.
    pub device: PathBuf,
    /// Bytes per trial.
    pub size: u64,
    /// Block size.
    pub bs: u64,
}

impl Measure for StorageMeasure {
    fn measure(
        &mut self,
        _env: &[(String, String)],
        _cancel: &Cancel,
    ) -> Result<Metric, MeasureError> {
        use crate::storage_read::engine;
        let fail = |e: anyhow::Error| MeasureError::Storage {
            device: self.device.clone(),
            reason: format!("{e:#}"),
        };
        let mut file = engine::open_direct(&self.device).map_err(|e| fail(e.into()))?;
        let file_size = engine::size_of(&mut file, &self.device).map_err(|e| fail(e.into()))?;
        let align = engine::dio_alignment(&file);
        let extent = engine::Extent {
            size: file_size,
            start: 0,
        };
        let measured = engine::read_loop(
            &file,
            extent,
            self.bs,
            16,
            align,
            engine::Limit::Bytes(self.size),
            |_| {},
        )
        .map_err(|e| fail(e.into()))?;
        let secs = measured.runtime.as_secs_f64();
        if secs <= 0.0 || measured.io_bytes == 0 {
            return Err(MeasureError::Storage {
                device: self.device.clone(),
                reason: "nothing was read".to_owned(),
            });
        }
        Ok(Metric {
            value: measured.io_bytes as f64 / 1_048_576.0 / secs,
            name: format!("read MiB/s ({} B blocks)", self.bs),
            rdma: None,
        })
    }
}

#[cfg(test)]
mod tests;
