//! The skeleton every proof runs, written once: an idle window (to measure background
//! traffic), a reading before the workload, the workload, a pause for the counters to
//! settle, and a reading after. The proof supplies how to read both sides and what the
//! workload is; the result is the [`Evidence`] the expectations are judged on.

use std::future::Future;
use std::time::Duration;

use dpu_probe::snapshot::{diff, Snapshot};

use super::Evidence;

/// Both sides' counters at one moment.
#[derive(Debug, Clone)]
pub struct Observation {
    /// What dpuctl read on this host.
    pub host: Snapshot,
    /// What the agent read on the DPU, in its own snapshot window.
    pub dpu: Snapshot,
}

/// How a proof reads both sides. One implementation per proof, holding its sampler and
/// the session's channel, so no reading dials or re-reads files.
pub trait Observe {
    /// Reads both sides once.
    fn observe(&mut self) -> impl Future<Output = anyhow::Result<Observation>>;
}

/// The timing of one measurement.
#[derive(Debug, Clone, Copy)]
pub struct Timing {
    /// The idle window before the workload, for background traffic.
    pub idle: Duration,
    /// The pause after the workload, for counters updated on completion or late.
    pub settle: Duration,
}

/// The four readings of a measurement and what the workload returned.
#[derive(Debug)]
pub struct Measured<T> {
    /// The start of the idle window.
    pub quiet_start: Observation,
    /// Its end.
    pub quiet_end: Observation,
    /// Just before the workload.
    pub before: Observation,
    /// After the workload and the settle pause.
    pub after: Observation,
    /// The workload's own result (bytes read, packets sent ...).
    pub workload: T,
}

impl<T> Measured<T> {
    /// The deltas the expectations are judged on: the workload's window, and the idle
    /// window as background.
    pub fn evidence(&self) -> Evidence {
        Evidence {
            host: diff(&self.before.host, &self.after.host),
            dpu: diff(&self.before.dpu, &self.after.dpu),
            host_background: Some(diff(&self.quiet_start.host, &self.quiet_end.host)),
            dpu_background: Some(diff(&self.quiet_start.dpu, &self.quiet_end.dpu)),
        }
    }
}

/// Runs the skeleton: idle window, then `prepare` (outside every window: a warm-up), then
/// before → `workload` → settle → after.
pub async fn measure<O, P, W, T>(
    observer: &mut O,
    timing: Timing,
    prepare: P,
    workload: W,
) -> anyhow::Result<Measured<T>>
where
    O: Observe,
    P: Future<Output = anyhow::Result<()>>,
    W: Future<Output = anyhow::Result<T>>,
{
    let quiet_start = observer.observe().await?;
    tokio::time::sleep(timing.idle).await;
    let quiet_end = observer.observe().await?;
    prepare.await?;
    let before = observer.observe().await?;
    let workload = workload.await?;
    tokio::time::sleep(timing.settle).await;
    let after = observer.observe().await?;
    Ok(Measured {
        quiet_start,
        quiet_end,
        before,
        after,
        workload,
    })
}
