//! `dpu.v1.Counters`: one consistent snapshot, or a stream of them at an interval.
//!
//! Selectors are checked at the edge (names become sysfs path components), capped,
//! deduplicated and the answer's size estimated before anything is read
//! ([`limits`]). Reading is blocking (sysfs files, a
//! netlink dump) and runs on the blocking pool; a `Watch` keeps one [`Sampler`] for its
//! whole life, and `Snapshot` calls share a small pool of them, so the netlink sockets
//! and counter files are opened once; a `Watch` stops as soon as the client goes away,
//! and ends with `RESOURCE_EXHAUSTED` when its client stops reading.

mod convert;
mod limits;

use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use dpu_probe::counters::Sampler;
use dpu_probe::snapshot_wire::{error_kind_to_wire, sample_to_wire};
use dpu_proto::v1::{self, counters_server::Counters};
use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;
use tokio_stream::Stream;
use tonic::{Request, Response, Status};

use self::convert::{selectors_from_wire, snapshot_to_wire, Selectors};
use self::limits::{check_built, check_estimate};
use crate::context::AgentContext;
use crate::services::status::invalid;

/// Bounds of `WatchRequest.interval`: faster than 100 ms measures the agent, not the
/// traffic; slower than an hour is a cron job.
const MIN_INTERVAL: Duration = Duration::from_millis(100);
const MAX_INTERVAL: Duration = Duration::from_secs(3600);

/// Snapshots one `Watch` keeps queued for its client, at most. Small: what a stream can
/// hold in the agent is this many snapshots (each bounded by the response limit) plus the
/// one HTTP/2 is sending, whatever the client does.
const WATCH_BUFFER: usize = 4;

/// How long a `Watch` whose queue is full waits for its client to take a snapshot. A
/// reader that pauses (a terminal scrolled back, a stop-the-world pause) sees the interval
/// stretch; one that takes nothing for this long with [`WATCH_BUFFER`] snapshots waiting
/// is not reading, and its stream is ended so that it holds no sampler, no netlink socket
/// and no open counter files.
const WATCH_STALL: Duration = Duration::from_secs(10);

/// Samplers kept idle between `Counters.Snapshot` calls, at most: one per call that
/// commonly runs at once (a proof's before/after from one host, a dashboard poll). A call
/// that finds none makes one; one returned to a full pool is dropped.
const IDLE_SAMPLERS: usize = 2;

/// Serves counter snapshots from the agent's root.
#[derive(Debug, Clone)]
pub(crate) struct CountersService {
    ctx: Arc<AgentContext>,
    /// The agent's `max_response_bytes`: a snapshot expected to be larger is refused
    /// before it is read.
    max_response_bytes: usize,
    /// Samplers of finished `Snapshot` calls, so the next call reads through kept counter
    /// files and sockets instead of opening them again (the snapshot engine notices files
    /// that changed under it; see `dpu_probe::counters::Sampler`).
    idle: Arc<std::sync::Mutex<Vec<Sampler>>>,
}

impl CountersService {
    pub(crate) fn new(ctx: Arc<AgentContext>, max_response_bytes: usize) -> Self {
        Self {
            ctx,
            max_response_bytes,
            idle: Arc::default(),
        }
    }

    fn sampler(&self) -> Sampler {
        Sampler::new(self.ctx.root.clone())
    }

    /// An idle sampler, or a new one.
    fn pooled_sampler(&self) -> Sampler {
        self.idle
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .pop()
            .unwrap_or_else(|| self.sampler())
    }

    /// Gives a sampler back to the pool, or drops it (and its descriptors) when the pool
    /// is full.
    fn return_sampler(&self, sampler: Sampler) {
        let mut idle = self
            .idle
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if idle.len() < IDLE_SAMPLERS {
            idle.push(sampler);
        }
    }
}

/// Takes one snapshot and gives the sampler back for reuse: the storage engine's volume
/// counters first, then the probe's on the blocking pool; the snapshot's window covers
/// both. The probe's part is refused with `RESOURCE_EXHAUSTED` when the objects its
/// selectors expand to would make an answer over `limit` bytes (checked before reading),
/// or when what was read is (checked before the wire copy is made).
async fn take(
    ctx: &AgentContext,
    mut sampler: Sampler,
    selectors: Arc<Selectors>,
    limit: usize,
) -> Result<(Sampler, v1::CounterSnapshot), Status> {
    let started = dpu_probe::snapshot::monotonic_now();
    // What the agent's backends answer (storage volumes, OVS datapaths) is read before the
    // probe's part and leads the answer.
    let (mut backend_samples, mut backend_errors) = if selectors.volumes.is_empty() {
        (Vec::new(), Vec::new())
    } else {
        volume_counters(&ctx.storage, &selectors.volumes).await
    };
    let mut backend_windows = Vec::new();
    let nanos = |d: Duration| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX);
    if !selectors.volumes.is_empty() {
        backend_windows.push(v1::ReadWindow {
            source: "volume".to_owned(),
            start_ns: nanos(started),
            end_ns: nanos(dpu_probe::snapshot::monotonic_now()),
        });
    }
    if !selectors.datapaths.is_empty() {
        let start = dpu_probe::snapshot::monotonic_now();
        let (samples, errors) = datapath_counters(&ctx.ovs, &selectors.datapaths).await;
        backend_samples.extend(samples);
        backend_errors.extend(errors);
        backend_windows.push(v1::ReadWindow {
            source: "ovs_datapath".to_owned(),
            start_ns: nanos(start),
            end_ns: nanos(dpu_probe::snapshot::monotonic_now()),
        });
    }
    let (root, probe) = (ctx.root.clone(), Arc::clone(&selectors));
    let (sampler, wire) = tokio::task::spawn_blocking(move || {
        let wire = check_estimate(&root, &probe.probe, limit).and_then(|()| {
            let snapshot = sampler.snapshot(&probe.probe);
            let wire = check_built(&snapshot, limit).map(|()| snapshot_to_wire(&snapshot));
            // Encoded: its buffers serve the sampler's next snapshot (kept between calls
            // and a Watch's intervals) instead of being freed and allocated again.
            sampler.recycle(snapshot);
            wire
        });
        (sampler, wire)
    })
    .await
    .map_err(|e| Status::internal(format!("snapshot task failed: {e}")))?;
    let mut wire = wire?;
    if !selectors.volumes.is_empty() || !selectors.datapaths.is_empty() {
        wire.monotonic_start_ns = u64::try_from(started.as_nanos()).unwrap_or(u64::MAX);
        wire.samples.splice(0..0, backend_samples);
        wire.errors.extend(backend_errors);
        wire.windows.splice(0..0, backend_windows);
    }
    // The skew is what the snapshot itself reports: its first read to its last.
    let skew = wire
        .monotonic_end_ns
        .saturating_sub(wire.monotonic_start_ns);
    ctx.metrics.snapshot_taken(
        dpu_probe::snapshot::monotonic_now().saturating_sub(started),
        Duration::from_nanos(skew),
    );
    Ok((sampler, wire))
}

/// The requested volumes' counters in wire form (the one reader, [`crate::volume_counters`]).
async fn volume_counters(
    storage: &crate::storage::StorageEngine,
    wanted: &[Option<String>],
) -> (Vec<v1::CounterSample>, Vec<v1::SourceError>) {
    let (samples, errors) = crate::volume_counters::read(storage, wanted).await;
    let errors = errors
        .into_iter()
        .map(|e| v1::SourceError {
            selector: Some(v1::CounterSelector {
                selector: Some(v1::counter_selector::Selector::Volumes(
                    v1::VolumeSelector { volume: e.object },
                )),
            }),
            message: e.message,
            kind: error_kind_to_wire(e.kind).into(),
        })
        .collect();
    (samples.iter().map(sample_to_wire).collect(), errors)
}

/// The requested OVS datapaths' lookup counters in wire form (the one reader,
/// [`crate::datapath_counters`]).
async fn datapath_counters(
    ovs: &crate::ovs::OvsBackend,
    wanted: &[Option<String>],
) -> (Vec<v1::CounterSample>, Vec<v1::SourceError>) {
    let (samples, errors) = crate::datapath_counters::read(ovs, wanted).await;
    let errors = errors
        .into_iter()
        .map(|e| v1::SourceError {
            selector: Some(v1::CounterSelector {
                selector: Some(v1::counter_selector::Selector::OvsDatapaths(
                    v1::OvsDatapathSelector {
                        datapath: e
                            .object
                            .strip_prefix("datapaths/")
                            .unwrap_or_default()
                            .to_owned(),
                    },
                )),
            }),
            message: e.message,
            kind: error_kind_to_wire(e.kind).into(),
        })
        .collect();
    (samples.iter().map(sample_to_wire).collect(), errors)
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
        let (sampler, snapshot) = take(
            &self.ctx,
            self.pooled_sampler(),
            selectors,
            self.max_response_bytes,
        )
        .await?;
        self.return_sampler(sampler);
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
        // Refused at the call, like a Snapshot, rather than as the stream's first item.
        let (root, probe, max_bytes) = (
            self.ctx.root.clone(),
            Arc::clone(&selectors),
            self.max_response_bytes,
        );
        tokio::task::spawn_blocking(move || check_estimate(&root, &probe.probe, max_bytes))
            .await
            .map_err(|e| Status::internal(format!("snapshot task failed: {e}")))??;
        let limit = (req.max_snapshots != 0).then_some(req.max_snapshots);
        // One slot more than the snapshots a stream may queue: a snapshot is queued only
        // when two slots are free, so the last one always has room for the status that
        // ends the stream.
        let (tx, rx) = mpsc::channel(WATCH_BUFFER + 1);
        let mut sampler = self.sampler();
        let ctx = Arc::clone(&self.ctx);
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
                // Room for the snapshot first: nothing is read for a client that is not
                // taking what it was sent.
                let room = tokio::select! {
                    () = tx.closed() => break,
                    room = tokio::time::timeout(WATCH_STALL, tx.reserve_many(2)) => room,
                };
                let permit = match room {
                    Ok(Ok(mut permits)) => permits.next(),
                    Ok(Err(_closed)) => break,
                    Err(_stalled) => {
                        let _ = tx.try_send(Err(Status::resource_exhausted(format!(
                            "counter watch closed: the client took no snapshot for \
                             {WATCH_STALL:?} with {WATCH_BUFFER} waiting, and the agent \
                             does not keep snapshots for a client that is not reading"
                        ))));
                        tracing::info!(sent, "counter watch closed: client not reading");
                        break;
                    }
                };
                let Some(permit) = permit else { break };
                match take(&ctx, sampler, Arc::clone(&selectors), max_bytes).await {
                    Ok((back, snapshot)) => {
                        sampler = back;
                        permit.send(Ok(snapshot));
                    }
                    Err(status) => {
                        // The sampler is lost with the task; end the stream with the cause.
                        permit.send(Err(status));
                        break;
                    }
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
