//! `dpuctl prove qos`: reads the host's device for a DPU volume long enough to measure its
//! rate, and judges that rate against the volume's QoS read limit on both sides' own
//! counters (the volume's bytes on the DPU, the disk's on the host).
//!
//! Three windows, A/B/A: the limit in force (limited), the limit lifted through the agent
//! (lifted: can this workload exceed the limit at all?), the limit set back (restored, the
//! second limited window). A rate within the limit's bounds proves the limit only when the
//! lifted window read at least [`HEADROOM`] times past it; `--no-lift` skips the lifted
//! window, and can then only say NOT PROVEN (above the limit) or INCONCLUSIVE. The limit
//! is set back on every path (the read failing, an error, an interruption), and the agent's
//! applied limit is checked to be the original again. Judging: [`super::qos_judge`].

use std::path::PathBuf;
use std::time::{Duration, Instant};

use dpu_probe::counters::{CounterSelector, Sampler};
use dpu_probe::snapshot::{diff, Source};
use dpu_probe::SysRoot;
use dpu_proto::v1::{self, storage_client::StorageClient};
use tonic::transport::Channel;

use super::binding::{bind_device, find_device, volume_identities, Binding};
use super::error::{ProveError, QosRefusal};
use super::qos_judge::{self, ReadDone, ReadLimit, Watched, Window, WindowKind, HEADROOM};
use super::qos_report::{LiftRecord, QosReport};
use super::report::ProofReport;
use super::witness::agent_snapshot;
use crate::accounting::measure::{Observation, Observe};
use crate::accounting::Evidence;
use crate::agent::session::{rpc_error, AgentError, Session};
use crate::param::{Field, ParamError};

/// `dpuctl prove qos` as parameters.
#[derive(Debug, Clone)]
pub struct QosParams {
    /// The DPU volume (`r0n1` or `volumes/r0n1`); default: the agent's only one.
    pub volume: Option<String>,
    /// The host's block device for it; default: the one that carries its identity.
    pub device: Option<PathBuf>,
    /// How long each limited window reads.
    pub duration: Duration,
    /// Block size of each read.
    pub bs: u64,
    /// Reads in flight.
    pub iodepth: u32,
    /// How far the rate may stray from the limit, a fraction in (0, 1).
    pub tolerance: f64,
    /// Lift the limit for a window to show the workload can exceed it.
    pub lift: bool,
}

/// The lifted window is shorter than a limited one: it only has to show headroom, and it
/// is time a production volume runs without its limit.
fn lifted_duration(duration: Duration) -> Duration {
    (duration / 2).max(Duration::from_millis(500))
}

/// Time for counters updated on completion, and for a backend applying a new limit, to
/// settle (the simulator moves its counters every 25 ms).
const SETTLE: Duration = Duration::from_millis(150);

/// The idle window before the first read, for background traffic.
const IDLE: Duration = Duration::from_millis(500);

/// How long a changed limit is given to show in the agent's applied limits.
const APPLY_DEADLINE: Duration = Duration::from_secs(10);

/// Checks the parameters before anything is dialled or read.
pub fn check(args: &QosParams) -> Result<(), ParamError> {
    let refuse =
        |field: Field, reason: String| Err(ParamError::new(field).field(field).text(reason));
    if args.duration.is_zero() {
        return refuse(Field::Duration, " must be more than 0 seconds".to_owned());
    }
    if !(args.tolerance > 0.0 && args.tolerance < 1.0) {
        return refuse(
            Field::Tolerance,
            format!(
                " must be a fraction between 0 and 1 (0.15 = 15%), not {}",
                args.tolerance
            ),
        );
    }
    if args.bs == 0 || !args.bs.is_multiple_of(512) {
        return refuse(
            Field::BlockSize,
            format!(" {} is not a multiple of 512 bytes", args.bs),
        );
    }
    if args.iodepth == 0 {
        return refuse(Field::IoDepth, " must be at least 1".to_owned());
    }
    Ok(())
}

/// The volume named by `wanted` (or the only one) among the agent's.
fn choose(volumes: Vec<v1::Volume>, wanted: Option<&str>) -> Result<v1::Volume, ProveError> {
    let names = volumes
        .iter()
        .map(|v| v.name.as_str())
        .collect::<Vec<_>>()
        .join(", ");
    match wanted {
        Some(name) => {
            let name = format!("volumes/{}", name.strip_prefix("volumes/").unwrap_or(name));
            volumes
                .into_iter()
                .find(|v| v.name == name)
                .ok_or(ProveError::NoSuchVolume {
                    volume: name,
                    known: names,
                })
        }
        None => match <[v1::Volume; 1]>::try_from(volumes) {
            Ok([only]) => Ok(only),
            Err(v) if v.is_empty() => Err(ProveError::NoVolume),
            Err(_) => Err(ProveError::SeveralVolumes { known: names }),
        },
    }
}

/// Why `volume`'s limits cannot be proven by this proof, if they cannot; else the read
/// limit to judge and the limits to set back.
pub(crate) fn limit_to_prove(
    volume: &v1::Volume,
    bs: u64,
) -> Result<(ReadLimit, v1::QosLimits), QosRefusal> {
    let name = &volume.name;
    let desired = volume.qos.unwrap_or_default();
    if desired == v1::QosLimits::default() {
        return Err(QosRefusal::NoLimit {
            volume: name.clone(),
        });
    }
    let Some(applied) = volume.applied_qos else {
        return Err(QosRefusal::NotReported {
            volume: name.clone(),
        });
    };
    if applied != desired {
        return Err(QosRefusal::Differs {
            volume: name.clone(),
            applied: limits_text(&applied),
            desired: limits_text(&desired),
        });
    }
    let Some(limit) = qos_judge::read_limit(&desired, bs) else {
        return Err(QosRefusal::WriteOnly {
            volume: name.clone(),
            limits: limits_text(&desired),
        });
    };
    Ok((limit, desired))
}

/// SPDK's keys with their values, the set ones only.
pub fn limits_text(l: &v1::QosLimits) -> String {
    let parts: Vec<String> = [
        ("rw_ios_per_sec", l.rw_ios_per_sec),
        ("rw_mbytes_per_sec", l.rw_mbytes_per_sec),
        ("r_mbytes_per_sec", l.r_mbytes_per_sec),
        ("w_mbytes_per_sec", l.w_mbytes_per_sec),
    ]
    .into_iter()
    .filter(|(_, v)| *v != 0)
    .map(|(k, v)| format!("{k} {v}"))
    .collect();
    if parts.is_empty() {
        "unlimited".to_owned()
    } else {
        parts.join(", ")
    }
}

async fn list_volumes(channel: &Channel) -> Result<Vec<v1::Volume>, AgentError> {
    let remotes = StorageClient::new(channel.clone())
        .max_decoding_message_size(dpu_proto::MAX_MESSAGE_BYTES)
        .list_remote_controllers(v1::ListRemoteControllersRequest::default())
        .await
        .map_err(rpc_error("Storage.ListRemoteControllers"))?
        .into_inner()
        .remote_controllers;
    Ok(remotes
        .into_iter()
        .flat_map(|r| r.status.map(|s| s.volumes).unwrap_or_default())
        .collect())
}

/// Sets `limits` on `volume` through the agent and waits until the agent reports them in
/// force.
async fn set_limits(
    channel: &Channel,
    volume: &str,
    limits: &v1::QosLimits,
) -> Result<(), ProveError> {
    StorageClient::new(channel.clone())
        .set_volume_qos(v1::SetVolumeQosRequest {
            volume: volume.to_owned(),
            limits: Some(*limits),
            options: None,
        })
        .await
        .map_err(rpc_error("Storage.SetVolumeQos"))?;
    let deadline = Instant::now() + APPLY_DEADLINE;
    loop {
        let applied = list_volumes(channel)
            .await?
            .into_iter()
            .find(|v| v.name == volume)
            .and_then(|v| v.applied_qos);
        if applied.as_ref() == Some(limits) {
            // The backend has it; give the data path a moment to follow.
            tokio::time::sleep(SETTLE).await;
            return Ok(());
        }
        if Instant::now() > deadline {
            return Err(QosRefusal::NotApplied {
                volume: volume.to_owned(),
                wanted: limits_text(limits),
                within_secs: APPLY_DEADLINE.as_secs(),
                reported: applied.map_or_else(|| "nothing".to_owned(), |a| limits_text(&a)),
            }
            .into());
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// The volume's counters on the DPU, the disk's and the NICs' on the host.
struct QosSides {
    channel: Channel,
    sampler: Sampler,
    volume: String,
    disk: String,
}

impl Observe for QosSides {
    type Error = AgentError;

    async fn observe(&mut self) -> Result<Observation, AgentError> {
        use v1::counter_selector::Selector;
        let dpu = agent_snapshot(
            &self.channel,
            vec![Selector::Volumes(v1::VolumeSelector {
                volume: self.volume.clone(),
            })],
            "Counters.Snapshot",
        )
        .await?;
        let host = self.sampler.snapshot(&[
            CounterSelector::Block {
                device: Some(self.disk.clone()),
            },
            CounterSelector::Netdev { ifname: None },
        ]);
        Ok(Observation {
            host,
            dpu,
            far_end: None,
        })
    }
}

/// Everything a run of windows needs.
struct Run<'a> {
    sides: QosSides,
    device: PathBuf,
    args: &'a QosParams,
    channel: Channel,
    volume: String,
    original: v1::QosLimits,
}

/// Where the lift stands, for the caller to set the limit back whatever happened.
#[derive(Debug, Default)]
struct LiftState {
    lifted_at: Option<Instant>,
    lifted_for: Option<Duration>,
}

impl Run<'_> {
    async fn window(
        &mut self,
        kind: WindowKind,
        time: Duration,
        start: u64,
        quiet: (&Observation, &Observation),
    ) -> Result<Window, ProveError> {
        let before = self.sides.observe().await?;
        let (device, bs, iodepth) = (self.device.clone(), self.args.bs, self.args.iodepth);
        let measured = tokio::task::spawn_blocking(move || {
            crate::storage_read::read_with(
                &device,
                bs,
                iodepth,
                crate::storage_read::engine::Limit::Time(time),
                start,
            )
        })
        .await
        .map_err(ProveError::ReadThread)??;
        tokio::time::sleep(SETTLE).await;
        let after = self.sides.observe().await?;
        Ok(Window {
            kind,
            evidence: Evidence {
                host: diff(&before.host, &after.host),
                dpu: diff(&before.dpu, &after.dpu),
                host_background: Some(diff(&quiet.0.host, &quiet.1.host)),
                dpu_background: Some(diff(&quiet.0.dpu, &quiet.1.dpu)),
                far_end: None,
                far_end_background: None,
            },
            read: ReadDone {
                bytes: measured.io_bytes,
                ios: measured.total_ios,
                seconds: measured.runtime.as_secs_f64(),
            },
        })
    }

    /// The idle window, then limited, (lifted, restored) windows; `lift` records the lift
    /// as it happens, so the caller can set the limit back on any path.
    async fn windows(
        &mut self,
        lift: &mut LiftState,
    ) -> Result<(Vec<Window>, Observation), ProveError> {
        let quiet_start = self.sides.observe().await?;
        tokio::time::sleep(IDLE).await;
        let quiet_end = self.sides.observe().await?;
        let quiet = (&quiet_start, &quiet_end);
        let duration = self.args.duration;
        let mut windows = vec![self.window(WindowKind::Limited, duration, 0, quiet).await?];
        if self.args.lift {
            lift.lifted_at = Some(Instant::now());
            let (channel, volume) = (self.channel.clone(), self.volume.clone());
            set_limits(&channel, &volume, &v1::QosLimits::default()).await?;
            // Reading on from where the last window ended: no cache in the way.
            let at = windows[0].read.bytes;
            windows.push(
                self.window(WindowKind::Lifted, lifted_duration(duration), at, quiet)
                    .await?,
            );
            let original = self.original;
            set_limits(&channel, &volume, &original).await?;
            lift.lifted_for = lift.lifted_at.take().map(|at| at.elapsed());
            let at = windows.iter().map(|w| w.read.bytes).sum();
            windows.push(
                self.window(WindowKind::Restored, duration, at, quiet)
                    .await?,
            );
        }
        Ok((windows, quiet_start))
    }
}

/// The host's network interfaces in `observation` (not `lo`).
fn host_nics(observation: &Observation) -> Vec<String> {
    let mut nics: Vec<String> = observation
        .host
        .samples
        .iter()
        .filter(|s| s.key.source == Source::Netdev && s.key.counter == "rx_bytes")
        .map(|s| s.key.object.clone())
        .filter(|o| o != "netdevs/lo")
        .collect();
    nics.dedup();
    nics
}

async fn resolve(
    root: &SysRoot,
    channel: &Channel,
    args: &QosParams,
) -> Result<(v1::Volume, Binding), ProveError> {
    let volume = choose(list_volumes(channel).await?, args.volume.as_deref())?;
    let wanted = volume_identities(&volume)?;
    let binding = match &args.device {
        Some(path) => bind_device(root, path, &volume.name, &wanted)?,
        None => find_device(root, &volume.name, &wanted)?,
    };
    Ok((volume, binding))
}

/// Runs the QoS proof. `interrupted` resolves when the user asks to stop (Ctrl-C,
/// SIGTERM): the windows stop, and a lifted limit is set back before the error returns.
pub async fn run(
    session: &Session,
    args: &QosParams,
    interrupted: impl std::future::Future<Output = String>,
) -> Result<QosReport, ProveError> {
    check(args)?;
    let channel = session.agent().channel().await?;
    let root = session.sys_root();
    let (volume, binding) = resolve(&root, &channel, args).await?;
    let (limit, original) = limit_to_prove(&volume, args.bs)?;
    let disk = binding.disk.name.clone();
    let mut run = Run {
        sides: QosSides {
            channel: channel.clone(),
            sampler: Sampler::new(root.clone()),
            volume: volume.name.clone(),
            disk: disk.clone(),
        },
        device: binding.device.clone(),
        args,
        channel: channel.clone(),
        volume: volume.name.clone(),
        original,
    };
    let mut lift = LiftState::default();
    let result = tokio::select! {
        result = run.windows(&mut lift) => result,
        why = interrupted => Err(ProveError::Interrupted { why }),
    };
    // Set back whatever happened: a lift still in force, or one whose restore failed.
    // Only a lift that happened is reported (an error before it leaves the limit alone).
    let lifted = if lift.lifted_at.is_some() || lift.lifted_for.is_some() {
        let still_lifted = lift.lifted_at.is_some();
        let restored = if still_lifted {
            set_limits(&channel, &volume.name, &original).await
        } else {
            Ok(())
        };
        let seconds = lift
            .lifted_for
            .or_else(|| lift.lifted_at.map(|at| at.elapsed()))
            .map_or(0.0, |d| d.as_secs_f64());
        if let Err(e) = restored {
            return Err(ProveError::NotSetBack {
                volume: volume.name.clone(),
                original: limits_text(&original),
                source: Box::new(e),
            });
        }
        Some(LiftRecord {
            seconds,
            restored: true,
        })
    } else {
        None
    };
    let (windows, first) = match (result, &lifted) {
        (Ok(done), _) => done,
        (Err(e), Some(record)) => {
            return Err(ProveError::StoppedAfterLift {
                volume: volume.name.clone(),
                seconds: record.seconds,
                original: limits_text(&original),
                source: Box::new(e),
            })
        }
        (Err(e), None) => return Err(e),
    };
    // The agent must report the original limit in force again.
    let after = list_volumes(&channel)
        .await?
        .into_iter()
        .find(|v| v.name == volume.name)
        .and_then(|v| v.applied_qos);
    if after.as_ref() != Some(&original) {
        return Err(QosRefusal::NotRestored {
            volume: volume.name.clone(),
            reported: after.map_or_else(|| "nothing".to_owned(), |a| limits_text(&a)),
            original: limits_text(&original),
        }
        .into());
    }
    let watched = Watched {
        volume: volume.name.clone(),
        disk: dpu_probe::block::block_object(&disk),
        host_nics: host_nics(&first),
    };
    let judged = qos_judge::judge(&watched, &limit, args.tolerance, &windows);
    let mut notes = vec![binding.note(&volume.name)];
    notes.extend(judged.notes);
    match &lifted {
        Some(record) => notes.push(format!(
            "the limit was lifted through the agent for {:.1} s and set back; the agent \
             reports {} in force again",
            record.seconds,
            limits_text(&original)
        )),
        None => notes.push(format!(
            "the limit was not lifted, as asked; without a window showing the device can read \
             past {HEADROOM}x the limit, a rate within it is INCONCLUSIVE"
        )),
    }
    for w in &windows {
        notes.push(format!(
            "{}: read {} bytes in {:.2} s ({}, {} reads of {} bytes, {} in flight)",
            w.kind.as_str(),
            w.read.bytes,
            w.read.seconds,
            qos_judge::rate_text(w.read.bytes, w.read.seconds),
            w.read.ios,
            args.bs,
            args.iodepth
        ));
    }
    notes.push(
        "one witness: the DPU's own counters (the host's disk counts what it delivered)".to_owned(),
    );
    let shown = binding.device.display().to_string();
    Ok(QosReport {
        proof: ProofReport {
            proof: "qos",
            verdict: judged.verdict,
            workload: format!(
                "read {shown} (DPU {}) for {:.1} s per limited window against {} bytes/s ({})",
                volume.name,
                args.duration.as_secs_f64(),
                limit.bytes_per_sec,
                limit.from
            ),
            lines: judged.lines,
            notes,
            trials: Vec::new(),
            witnesses: vec!["DPU".to_owned()],
        },
        limit,
        tolerance: args.tolerance,
        windows: judged.windows,
        lifted,
    })
}
