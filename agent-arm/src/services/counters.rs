//! `dpu.v1.Counters`: one consistent snapshot, or a stream of them at an interval.
//!
//! Selectors are checked at the edge (names become sysfs path components). Reading is
//! blocking (sysfs files, a netlink dump) and runs on the blocking pool; a `Watch` keeps
//! one [`Sampler`] for its whole life so the netlink socket is opened once, and stops as
//! soon as the client goes away.

use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use dpu_probe::counters::{CounterSelector, Sampler};
use dpu_proto::v1::{self, counters_server::Counters};
use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;
use tokio_stream::Stream;
use tonic::{Request, Response, Status};

use super::counters_convert::{selectors_from_wire, snapshot_to_wire};
use super::status::invalid;
use crate::context::AgentContext;

/// Bounds of `WatchRequest.interval`: faster than 100 ms measures the agent, not the
/// traffic; slower than an hour is a cron job.
const MIN_INTERVAL: Duration = Duration::from_millis(100);
const MAX_INTERVAL: Duration = Duration::from_secs(3600);

/// Snapshots queued for a slow client before the watch waits for it. Small: a client
/// that cannot keep up should see the interval stretch, not the agent's memory grow.
const WATCH_BUFFER: usize = 4;

/// Serves counter snapshots from the agent's root.
#[derive(Debug, Clone)]
pub(crate) struct CountersService {
    ctx: Arc<AgentContext>,
}

impl CountersService {
    pub(crate) fn new(ctx: Arc<AgentContext>) -> Self {
        Self { ctx }
    }

    fn sampler(&self) -> Sampler {
        Sampler::new(self.ctx.root.clone())
    }
}

/// Takes one snapshot on the blocking pool and gives the sampler back for reuse.
async fn take(
    mut sampler: Sampler,
    selectors: Arc<Vec<CounterSelector>>,
) -> Result<(Sampler, v1::CounterSnapshot), Status> {
    tokio::task::spawn_blocking(move || {
        let snapshot = sampler.snapshot(&selectors);
        (sampler, snapshot_to_wire(&snapshot))
    })
    .await
    .map_err(|e| Status::internal(format!("snapshot task failed: {e}")))
}

fn interval(req: &v1::WatchRequest) -> Result<Duration, Status> {
    let interval = req
        .interval
        .as_ref()
        .ok_or_else(|| invalid("interval", "is required"))?;
    let interval = u64::try_from(interval.seconds)
        .ok()
        .zip(u32::try_from(interval.nanos).ok())
        .map(|(secs, nanos)| Duration::new(secs, nanos))
        .ok_or_else(|| invalid("interval", "must not be negative"))?;
    if !(MIN_INTERVAL..=MAX_INTERVAL).contains(&interval) {
        return Err(invalid(
            "interval",
            format!("{interval:?} is outside {MIN_INTERVAL:?}..={MAX_INTERVAL:?}"),
        ));
    }
    Ok(interval)
}

type WatchStream = Pin<Box<dyn Stream<Item = Result<v1::CounterSnapshot, Status>> + Send>>;

#[tonic::async_trait]
impl Counters for CountersService {
    async fn snapshot(
        &self,
        request: Request<v1::SnapshotRequest>,
    ) -> Result<Response<v1::CounterSnapshot>, Status> {
        let selectors = Arc::new(selectors_from_wire(&request.get_ref().selectors)?);
        let (_, snapshot) = take(self.sampler(), selectors).await?;
        Ok(Response::new(snapshot))
    }

    type WatchStream = WatchStream;

    async fn watch(
        &self,
        request: Request<v1::WatchRequest>,
    ) -> Result<Response<WatchStream>, Status> {
        let req = request.into_inner();
        let selectors = Arc::new(selectors_from_wire(&req.selectors)?);
        let period = interval(&req)?;
        let limit = (req.max_snapshots != 0).then_some(req.max_snapshots);
        let (tx, rx) = mpsc::channel(WATCH_BUFFER);
        let mut sampler = self.sampler();
        tokio::spawn(async move {
            let mut ticker = tokio::time::interval(period);
            // A slow snapshot or client delays the next one; never a burst to catch up.
            ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            let mut sent = 0u32;
            loop {
                tokio::select! {
                    () = tx.closed() => break,
                    _ = ticker.tick() => {}
                }
                let item = match take(sampler, Arc::clone(&selectors)).await {
                    Ok((back, snapshot)) => {
                        sampler = back;
                        Ok(snapshot)
                    }
                    Err(status) => {
                        // The sampler is lost with the task; end the stream with the cause.
                        let _ = tx.send(Err(status)).await;
                        break;
                    }
                };
                if tx.send(item).await.is_err() {
                    break;
                }
                sent += 1;
                if limit.is_some_and(|limit| sent >= limit) {
                    break;
                }
            }
            tracing::debug!(sent, "counter watch ended");
        });
        Ok(Response::new(Box::pin(ReceiverStream::new(rx))))
    }
}
