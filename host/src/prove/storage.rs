//! `dpuctl prove storage`: read N bytes from the host's device for a DPU-exposed namespace
//! and account for them on both sides.
//!
//! Expectations (see `accounting`): the DPU volume's read bytes grew by about N; the DPU's
//! RDMA ports received at least N (or, where only packet counts exist — soft-RoCE — at
//! least N / 4096 packets, since no RoCE packet carries more); the host's own NICs and
//! RDMA ports did not carry the data (under 5% of N). Background traffic is measured over
//! an idle window first and subtracted.
//!
//! The read runs as trials of 1, 2, 1 ... parts of the size, with idle gaps between them
//! (`accounting::trials`): each trial is judged on its own window, the volume's growth per
//! byte read must agree across trials, and the volume must be quiet in every gap, so
//! another reader of the same volume cannot pass for the read.

use std::num::NonZeroU32;
use std::path::PathBuf;
use std::time::Duration;

use dpu_probe::counters::{CounterSelector, Sampler};
use dpu_probe::rdma::list_rdma_devices;
use dpu_probe::snapshot::{Snapshot, Source};
use dpu_probe::SysRoot;
use dpu_proto::v1::{self, storage_client::StorageClient};
use dpu_proto::Endpoint;
use tonic::transport::Channel;

use super::binding::{bind_device, find_device, volume_identities, Binding};
use super::error::ProveError;
use super::report::{Judged, ProofReport, TrialSummary};
use super::witness::{agent_snapshot, snapshot_far_end, Witnesses};
use crate::accounting::measure::{measure, Observation, Observe, Timing, Trials};
use crate::accounting::trials::{self, trial_count};
use crate::accounting::{evaluate, Expectation, Line, Outcome, Rule, Select, Side, Waiver};
use crate::agent::session::{rpc_error, AgentError, Session};
use crate::param::{Field, ParamError};

/// `dpuctl prove storage` as parameters.
#[derive(Debug, Clone)]
pub struct StorageParams {
    /// The host's block device for the volume; default: the one the agent reports.
    pub device: Option<PathBuf>,
    /// The DPU volume (`r0n1` or `volumes/r0n1`); default: the agent's only one.
    pub volume: Option<String>,
    /// Bytes to read.
    pub size: u64,
    /// Block size.
    pub bs: u64,
    /// Reads in flight.
    pub iodepth: u32,
    /// The idle window before the read, for background traffic; also each gap between trials.
    pub idle: Duration,
    /// How many trials the read is split into (1, 2, 1 ... parts of `size`); 1 is a single
    /// window, which cannot tell another reader of the volume from the read.
    pub trials: u32,
    /// Negative controls the user does without where they cannot be formed.
    pub waive: Vec<StorageWaiver>,
    /// The agent on the storage target, whose own counters are the second witness: it
    /// must have sent what the host read. `None`: the DPU is the only witness.
    pub far_end: Option<Endpoint>,
    /// How many witnesses the proof must have (1 or 2; 2 needs `far_end`): checked before
    /// anything is read.
    pub witnesses: u32,
}

/// A negative control of the storage proof that can be waived by name, where it cannot be
/// formed (its counters do not exist here). The report shows every waiver.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StorageWaiver {
    /// "host RDMA ports did not carry the data": the only guard against the host reading
    /// the target itself over NVMe/RDMA.
    HostRdma,
}

impl StorageWaiver {
    /// The name it is waived by.
    pub fn name(self) -> &'static str {
        match self {
            Self::HostRdma => "host-rdma",
        }
    }
}

/// The RDMA ports this host can see, sorted by whose they are: the negative control "host
/// RDMA ports did not carry the data" watches `own`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HostRdmaPorts {
    /// Ports bound to one of this host's netdevs, and ports bound to none (InfiniBand, a
    /// RoCE port without `gid_attrs/ndevs`): the host could read the target over each, so
    /// each is watched. Only a port bound to a netdev this host does not have (the DPU's,
    /// in the lab where both share a kernel) is left out.
    pub own: Vec<String>,
    /// The ports of `own` bound to no netdev, for the notes.
    pub without_netdev: Vec<String>,
    /// Why the RDMA devices could not be listed, when they could not.
    pub unreadable: Option<String>,
}

/// The largest payload a RoCE packet carries (the largest IB MTU).
const MAX_ROCE_PAYLOAD: u64 = 4096;

/// How long counters are given to settle after the read (RDMA and block counters are
/// updated on completion; this covers a driver that batches its updates).
const SETTLE: Duration = Duration::from_millis(500);

/// The volume under test and what the agent knows about it.
#[derive(Debug, Clone)]
pub struct Target {
    /// The volume's name on the agent (`volumes/r0n1`).
    pub volume: String,
    /// Whether its remote controller is reached over NVMe/RDMA.
    pub rdma: bool,
    /// The DPU interfaces the kernel routes the remote controller's addresses out of, as
    /// the agent reports them (`status.uplinks`): an NVMe/TCP remote's transport line
    /// counts what they received. Empty when the agent cannot tell.
    pub uplinks: Vec<String>,
    /// The host's device for it, and how it was bound to the volume.
    pub binding: Binding,
}

async fn resolve(
    root: &SysRoot,
    channel: Channel,
    args: &StorageParams,
) -> Result<Target, ProveError> {
    let remotes = StorageClient::new(channel)
        .max_decoding_message_size(dpu_proto::MAX_MESSAGE_BYTES)
        .list_remote_controllers(v1::ListRemoteControllersRequest::default())
        .await
        .map_err(rpc_error("Storage.ListRemoteControllers"))?
        .into_inner()
        .remote_controllers;
    let mut volumes: Vec<(v1::Volume, Reached)> = Vec::new();
    for remote in &remotes {
        let reached = Reached {
            rdma: remote
                .spec
                .as_ref()
                .is_some_and(|s| s.transport == v1::NvmeTransport::Rdma as i32),
            uplinks: remote
                .status
                .as_ref()
                .map(|s| s.uplinks.clone())
                .unwrap_or_default(),
        };
        for volume in remote.status.iter().flat_map(|s| &s.volumes) {
            volumes.push((volume.clone(), reached.clone()));
        }
    }
    let wanted = args
        .volume
        .as_deref()
        .map(|v| format!("volumes/{}", v.strip_prefix("volumes/").unwrap_or(v)));
    let names = || {
        volumes
            .iter()
            .map(|(v, _)| v.name.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    };
    let (volume, reached) = match &wanted {
        Some(name) => volumes
            .iter()
            .find(|(v, _)| &v.name == name)
            .cloned()
            .ok_or_else(|| ProveError::NoSuchVolume {
                volume: name.clone(),
                known: names(),
            })?,
        None => match volumes.as_slice() {
            [only] => only.clone(),
            [] => return Err(ProveError::NoVolume),
            _ => return Err(ProveError::SeveralVolumes { known: names() }),
        },
    };
    // Identity before any counting: the device read must be the volume counted.
    let wanted = volume_identities(&volume)?;
    let binding = match &args.device {
        Some(path) => bind_device(root, path, &volume.name, &wanted)?,
        None => find_device(root, &volume.name, &wanted)?,
    };
    Ok(Target {
        volume: volume.name,
        rdma: reached.rdma,
        uplinks: reached.uplinks,
        binding,
    })
}

/// How a volume's remote controller is reached: its transport and the DPU uplinks the
/// agent routes it out of.
#[derive(Debug, Clone)]
struct Reached {
    rdma: bool,
    uplinks: Vec<String>,
}

/// Reads the host with its own sampler, the DPU through the session's one channel, and the
/// far end, when there is one, through its agent's channel (dialled once, before the first
/// reading).
struct Sides {
    channel: Channel,
    sampler: Sampler,
    volume: String,
    /// The DPU uplinks read beside the volume (an NVMe/TCP remote's transport line).
    uplinks: Vec<String>,
    far_end: Option<Channel>,
}

impl Observe for Sides {
    type Error = AgentError;

    async fn observe(&mut self) -> Result<Observation, AgentError> {
        let mut observation = snapshot_both(
            &self.channel,
            &mut self.sampler,
            &self.volume,
            &self.uplinks,
        )
        .await?;
        if let Some(channel) = &self.far_end {
            observation.far_end = Some(snapshot_far_end(channel).await?);
        }
        Ok(observation)
    }
}

async fn snapshot_both(
    channel: &Channel,
    sampler: &mut Sampler,
    volume: &str,
    uplinks: &[String],
) -> Result<Observation, AgentError> {
    use v1::counter_selector::Selector;
    let mut selectors = vec![
        Selector::Volumes(v1::VolumeSelector {
            volume: volume.to_owned(),
        }),
        Selector::Rdma(v1::RdmaSelector::default()),
    ];
    selectors.extend(uplinks.iter().map(|ifname| {
        Selector::Netdev(v1::NetdevSelector {
            ifname: ifname.clone(),
        })
    }));
    let dpu = agent_snapshot(channel, selectors, "Counters.Snapshot").await?;
    let host = sampler.snapshot(&[
        CounterSelector::Netdev { ifname: None },
        CounterSelector::Rdma {
            device: None,
            port: None,
        },
    ]);
    Ok(Observation {
        host,
        dpu,
        far_end: None,
    })
}

/// Objects of `source` in `snapshot` that have `counter`, filtered.
fn objects_with(
    snapshot: &Snapshot,
    source: Source,
    counter: &str,
    keep: impl Fn(&str) -> bool,
) -> Vec<String> {
    let mut objects: Vec<String> = snapshot
        .samples
        .iter()
        .filter(|s| s.key.source == source && s.key.counter == counter && keep(&s.key.object))
        .map(|s| s.key.object.clone())
        .collect();
    objects.dedup();
    objects
}

/// The name of the line the volume's own count is judged by: the witness bound to the
/// device read, which trials hold to each other.
fn served(target: &Target) -> String {
    format!("DPU {} served the read", target.volume)
}

/// Which way an RDMA expectation counts: what arrived, or what was sent.
#[derive(Debug, Clone, Copy)]
enum Direction {
    /// `port_rcv_data`, else soft-RoCE's `rcvd_pkts`.
    Received,
    /// `port_xmit_data`, else soft-RoCE's `sent_pkts`.
    Sent,
}

/// RDMA expectations over `objects` (all RDMA ports of one side): bytes where the port
/// counts bytes (`port_rcv_data`, `port_xmit_data`), packets where it only counts packets
/// (soft-RoCE).
fn rdma_select(
    snapshot: &Snapshot,
    side: Side,
    direction: Direction,
    keep: impl Fn(&str) -> bool + Copy,
) -> Option<(Select, bool)> {
    let (bytes_counter, packets_counter) = match direction {
        Direction::Received => ("port_rcv_data", "rcvd_pkts"),
        Direction::Sent => ("port_xmit_data", "sent_pkts"),
    };
    let bytes = objects_with(snapshot, Source::Rdma, bytes_counter, keep);
    if !bytes.is_empty() {
        return Some((
            Select {
                side,
                source: Source::Rdma,
                objects: bytes,
                counter: bytes_counter.to_owned(),
            },
            true,
        ));
    }
    let packets = objects_with(snapshot, Source::RdmaHw, packets_counter, keep);
    (!packets.is_empty()).then(|| {
        (
            Select {
                side,
                source: Source::RdmaHw,
                objects: packets,
                counter: packets_counter.to_owned(),
            },
            false,
        )
    })
}

/// The second witness: the far end sent at least what was read, counted by its own agent
/// on its RDMA ports (an NVMe/RDMA remote) or its network interfaces (NVMe/TCP). A far end
/// with neither is a visible line that cannot be formed.
fn far_end_line(target: &Target, n: u64, far_end: &Snapshot) -> Expectation {
    let line = |select: Select, min: u64| Expectation {
        name: "far end sent the data".to_owned(),
        select,
        rule: Rule::AtLeast(min),
        why: "the storage target counts what it sent, on another machine than the one that \
              read and the one that served: a second witness"
            .to_owned(),
        if_failed: "the far end did not send this data: the read was served from somewhere \
                    else (a cache on the way, another target)"
            .to_owned(),
        traffic: min,
        waiver: None,
        unformed: None,
    };
    let netdevs = || objects_with(far_end, Source::Netdev, "tx_bytes", |o| o != "netdevs/lo");
    if target.rdma {
        if let Some((select, bytes)) = rdma_select(far_end, Side::FarEnd, Direction::Sent, |_| true)
        {
            return line(select, if bytes { n } else { n / MAX_ROCE_PAYLOAD });
        }
    } else if !netdevs().is_empty() {
        let select = Select {
            side: Side::FarEnd,
            source: Source::Netdev,
            objects: netdevs(),
            counter: "tx_bytes".to_owned(),
        };
        return line(select, n);
    }
    Expectation {
        unformed: Some(format!(
            "the far end reports no {} counter to count what it sent",
            if target.rdma {
                "RDMA port (port_xmit_data or sent_pkts)"
            } else {
                "network interface (tx_bytes)"
            }
        )),
        ..line(
            Select {
                side: Side::FarEnd,
                source: Source::Rdma,
                objects: Vec::new(),
                counter: "port_xmit_data".to_owned(),
            },
            n,
        )
    }
}

/// What a storage proof expects of `n` bytes read from `target`, given the counters that
/// exist `before`, the host's own RDMA ports and the waivers given; and the notes on what
/// is not accounted.
pub fn expectations(
    target: &Target,
    n: u64,
    before: &Observation,
    host_rdma: &HostRdmaPorts,
    waive: &[StorageWaiver],
) -> (Vec<Expectation>, Vec<String>) {
    let mut notes = Vec::new();
    let mut list = vec![Expectation {
        name: served(target),
        select: Select {
            side: Side::Dpu,
            source: Source::Volume,
            objects: vec![target.volume.clone()],
            counter: "bytes_read".to_owned(),
        },
        rule: Rule::Between(n, n + n / 2),
        why: "the DPU's storage backend counts what it reads for the host".to_owned(),
        if_failed: "the DPU volume did not serve these bytes: the read did not go through \
                    the emulated controller"
            .to_owned(),
        traffic: n + n / 2,
        waiver: None,
        unformed: None,
    }];
    if target.rdma {
        match rdma_select(&before.dpu, Side::Dpu, Direction::Received, |_| true) {
            Some((select, bytes)) => list.push(Expectation {
                name: "DPU RDMA ports received the data".to_owned(),
                rule: Rule::AtLeast(if bytes { n } else { n / MAX_ROCE_PAYLOAD }),
                select,
                why: "the remote namespace is reached over NVMe/RDMA from the DPU".to_owned(),
                if_failed: "the DPU's RDMA ports did not carry the data: it came from \
                            somewhere else (a cache, another path)"
                    .to_owned(),
                traffic: if bytes { n } else { n / MAX_ROCE_PAYLOAD },
                waiver: None,
                unformed: None,
            }),
            None => {
                notes.push("the DPU reports no RDMA port counters; uplink not accounted".to_owned())
            }
        }
    } else if target.uplinks.is_empty() {
        notes.push(
            "the remote controller uses NVMe/TCP and the agent names no uplink for it (a \
             fixture sys root, no route to the target, or an agent older than this dpuctl): \
             the DPU uplink is not accounted"
                .to_owned(),
        );
    } else {
        list.push(uplink_line(target, n, before));
    }
    let host_nics = objects_with(&before.host, Source::Netdev, "rx_bytes", |o| {
        o != "netdevs/lo"
    });
    if host_nics.is_empty() {
        notes.push("the host has no network interfaces to account".to_owned());
    } else {
        list.push(Expectation {
            name: "host NICs did not carry the data".to_owned(),
            select: Select {
                side: Side::Host,
                source: Source::Netdev,
                objects: host_nics,
                counter: "rx_bytes".to_owned(),
            },
            rule: Rule::AtMost(n / 20),
            why: "bytes arriving on the host's own interfaces bypassed the DPU".to_owned(),
            if_failed: "bytes crossed the host's own NIC: the read did not go through the \
                        emulated controller"
                .to_owned(),
            traffic: n,
            waiver: None,
            unformed: None,
        });
    }
    host_rdma_lines(n, before, host_rdma, waive, &mut list, &mut notes);
    if let Some(far_end) = &before.far_end {
        list.push(far_end_line(target, n, far_end));
    }
    (list, notes)
}

/// An NVMe/TCP remote's transport line: the DPU uplinks the kernel routes the target's
/// addresses out of received at least the data (TCP/IP headers only add to it). An uplink
/// the agent names but whose `rx_bytes` its snapshot lacks is a line that cannot be formed
/// (INCONCLUSIVE), never a silent absence.
fn uplink_line(target: &Target, n: u64, before: &Observation) -> Expectation {
    let wanted: Vec<String> = target
        .uplinks
        .iter()
        .map(|u| format!("netdevs/{u}"))
        .collect();
    let present = objects_with(&before.dpu, Source::Netdev, "rx_bytes", |o| {
        wanted.iter().any(|w| w == o)
    });
    let missing: Vec<&str> = wanted
        .iter()
        .filter(|w| !present.contains(w))
        .map(String::as_str)
        .collect();
    Expectation {
        name: "DPU uplink received the data".to_owned(),
        select: Select {
            side: Side::Dpu,
            source: Source::Netdev,
            objects: wanted.clone(),
            counter: "rx_bytes".to_owned(),
        },
        rule: Rule::AtLeast(n),
        why: format!(
            "the remote namespace is reached over NVMe/TCP, and the DPU's kernel routes the \
             target out of {}",
            target.uplinks.join(", ")
        ),
        if_failed: "the DPU's uplink did not receive the data: it came from somewhere else (a \
                    cache, another path)"
            .to_owned(),
        traffic: n + n / 20,
        waiver: None,
        unformed: (!missing.is_empty()).then(|| {
            format!(
                "the agent routes the target out of {} but reports no rx_bytes for {}",
                target.uplinks.join(", "),
                missing.join(", ")
            )
        }),
    }
}

/// The negative control on the host's own RDMA ports: one line per kind of counter the
/// ports have (bytes where they count bytes, packets where only packets), and a visible
/// line that cannot be formed for ports with neither, or when the ports cannot be listed.
fn host_rdma_lines(
    n: u64,
    before: &Observation,
    ports: &HostRdmaPorts,
    waive: &[StorageWaiver],
    list: &mut Vec<Expectation>,
    notes: &mut Vec<String>,
) {
    const NAME: &str = "host RDMA ports did not carry the data";
    let waiver = Some(Waiver {
        name: StorageWaiver::HostRdma.name(),
        granted: waive.contains(&StorageWaiver::HostRdma),
    });
    let control = |select: Select, rule: Rule, traffic: u64| Expectation {
        name: NAME.to_owned(),
        select,
        rule,
        why: "an NVMe/RDMA connection from the host itself would bypass the DPU".to_owned(),
        if_failed: "bytes arrived on the host's own RDMA port: the host read the target \
                    directly"
            .to_owned(),
        traffic,
        waiver: waiver.clone(),
        unformed: None,
    };
    let unformed = |objects: Vec<String>, why: String| Expectation {
        unformed: Some(why),
        ..control(
            Select {
                side: Side::Host,
                source: Source::Rdma,
                objects,
                counter: "port_rcv_data".to_owned(),
            },
            Rule::AtMost(n / 20),
            n,
        )
    };
    if let Some(why) = &ports.unreadable {
        list.push(unformed(
            Vec::new(),
            format!("the host's RDMA devices cannot be listed ({why})"),
        ));
        return;
    }
    if ports.own.is_empty() {
        notes.push(
            "the host has no RDMA port of its own: it cannot read the target over NVMe/RDMA"
                .to_owned(),
        );
        return;
    }
    if !ports.without_netdev.is_empty() {
        notes.push(format!(
            "host RDMA ports bound to no netdev ({}) are watched as the host's own",
            ports.without_netdev.join(", ")
        ));
    }
    let own = |o: &str| ports.own.iter().any(|p| p == o);
    let bytes = objects_with(&before.host, Source::Rdma, "port_rcv_data", own);
    let packets = objects_with(&before.host, Source::RdmaHw, "rcvd_pkts", |o| {
        own(o) && !bytes.iter().any(|b| b == o)
    });
    let unwatched: Vec<String> = ports
        .own
        .iter()
        .filter(|o| !bytes.contains(o) && !packets.contains(o))
        .cloned()
        .collect();
    if !bytes.is_empty() {
        list.push(control(
            Select {
                side: Side::Host,
                source: Source::Rdma,
                objects: bytes,
                counter: "port_rcv_data".to_owned(),
            },
            Rule::AtMost(n / 20),
            n,
        ));
    }
    if !packets.is_empty() {
        list.push(control(
            Select {
                side: Side::Host,
                source: Source::RdmaHw,
                objects: packets,
                counter: "rcvd_pkts".to_owned(),
            },
            Rule::AtMost(n / MAX_ROCE_PAYLOAD / 20),
            n / MAX_ROCE_PAYLOAD,
        ));
    }
    if !unwatched.is_empty() {
        let why = format!(
            "no readable receive counter (port_rcv_data or rcvd_pkts) on {}",
            unwatched.join(", ")
        );
        list.push(unformed(unwatched, why));
    }
}

/// Notes on each waiver given: used (its control could not be formed) or not needed.
fn waiver_notes(lines: &[Line], waive: &[StorageWaiver], notes: &mut Vec<String>) {
    for waiver in waive {
        let used = lines.iter().any(|l| {
            matches!(l.outcome, Outcome::Waived(_))
                && l.expectation
                    .waiver
                    .as_ref()
                    .is_some_and(|w| w.name == waiver.name())
        });
        notes.push(if used {
            format!(
                "waived `{}`: a negative control that could not be formed did not count",
                waiver.name()
            )
        } else {
            format!(
                "waiver `{}` not needed: its negative control was formed and judged",
                waiver.name()
            )
        });
    }
}

/// The gap's line: nothing but the trials reads the volume, so between two trials its
/// count stays within a twentieth of the smallest trial.
fn gap_expectation(target: &Target, smallest: u64) -> Expectation {
    Expectation {
        name: format!("nothing else read {}", target.volume),
        select: Select {
            side: Side::Dpu,
            source: Source::Volume,
            objects: vec![target.volume.clone()],
            counter: "bytes_read".to_owned(),
        },
        rule: Rule::AtMost(smallest / 20),
        why: "between trials the proof reads nothing: what the volume counts then is \
              another reader's, and it would be counted in the trials too"
            .to_owned(),
        if_failed: "the volume was read between trials: another reader of this volume, \
                    whose reads cannot be told from the proof's"
            .to_owned(),
        traffic: smallest,
        waiver: None,
        unformed: None,
    }
}

/// Judges a read, trial `i` having read `work[i]` bytes from `target` (`host_rdma` the
/// host's own RDMA ports, `waive` the negative controls the user does without where they
/// cannot be formed): each trial against the expectations for its own size, chosen from the
/// counters that exist before the first trial; with several trials the volume line is held
/// to the other trials' ([`trials::hold_to_agreement`]) and each gap to a quiet volume
/// (within a twentieth of the smallest trial). One trial is one window, its lines named as
/// they are.
pub fn judge<T>(
    target: &Target,
    work: &[u64],
    m: &Trials<T>,
    host_rdma: &HostRdmaPorts,
    waive: &[StorageWaiver],
) -> Judged {
    let before = m.first_before();
    let mut notes = Vec::new();
    let mut per_trial: Vec<Vec<Line>> = Vec::new();
    for (i, (evidence, &n)) in m.windows().iter().zip(work).enumerate() {
        let (expectations, trial_notes) = expectations(target, n, before, host_rdma, waive);
        if i == 0 {
            notes = trial_notes;
        }
        per_trial.push(evaluate(&expectations, evidence).1);
    }
    trials::hold_to_agreement(&mut per_trial, work, &served(target));
    let smallest = work.iter().copied().min().unwrap_or(0);
    let gap = gap_expectation(target, smallest);
    let (verdict, verdicts, lines) = trials::conclude(per_trial, &gap, &m.gaps());
    waiver_notes(&lines, waive, &mut notes);
    Judged {
        verdict,
        lines,
        notes,
        per_trial: verdicts,
    }
}

/// The bytes each of `count` trials reads out of `size`, in [`trials::weights`]'
/// proportions, each a whole number of `bs` blocks; `Err` with the fewest bytes that can be
/// split so, when `size` holds fewer than one block per unit.
pub fn trial_sizes(size: u64, bs: u64, count: u32) -> Result<Vec<u64>, u64> {
    trials::split(size, count, bs, bs)
}

/// The RDMA ports this host can see, sorted by whose they are ([`HostRdmaPorts`]). In a
/// lab where host and DPU share a kernel, the DPU's ports are visible but bound to
/// netdevs the host does not have.
pub fn host_rdma_ports(root: &SysRoot, host: &Snapshot) -> HostRdmaPorts {
    let host_netdevs: Vec<&str> = host
        .samples
        .iter()
        .filter(|s| s.key.source == Source::Netdev)
        .filter_map(|s| s.key.object.strip_prefix("netdevs/"))
        .collect();
    let devices = match list_rdma_devices(root) {
        Ok(devices) => devices,
        Err(e) => {
            return HostRdmaPorts {
                unreadable: Some(e.to_string()),
                ..HostRdmaPorts::default()
            }
        }
    };
    let mut ports = HostRdmaPorts::default();
    for device in &devices {
        for port in &device.ports {
            let object = format!("rdmaDevices/{}/ports/{}", device.ibdev, port.port);
            match port.netdev() {
                Some(netdev) if host_netdevs.contains(&netdev) => ports.own.push(object),
                Some(_) => {}
                None => {
                    ports.without_netdev.push(object.clone());
                    ports.own.push(object);
                }
            }
        }
    }
    ports
}

/// The sizes of the read's trials, or why `args` cannot be run (checked before anything is
/// dialled or read).
fn plan(args: &StorageParams) -> Result<(Vec<u64>, NonZeroU32), ParamError> {
    let trials = trial_count(args.trials)?;
    let sizes = trial_sizes(args.size, args.bs, args.trials).map_err(|needed| {
        if args.trials == 1 {
            ParamError::new(Field::Size)
                .field(Field::Size)
                .text(format!(" {} must be at least ", args.size))
                .field(Field::BlockSize)
                .text(format!(" {}", args.bs))
        } else {
            ParamError::new(Field::Size)
                .field(Field::Size)
                .text(format!(
                    " {} cannot be split into {} trials of 1, 2, 1 ... parts of whole ",
                    args.size, args.trials
                ))
                .field(Field::BlockSize)
                .text(format!(
                    " {} blocks: it needs at least {needed} bytes (or fewer ",
                    args.bs
                ))
                .field(Field::Trials)
                .text(")")
        }
    })?;
    Ok((sizes, trials))
}

/// Runs the storage proof: reads `size` bytes of the volume's host device, as trials, and
/// accounts for them on every side: the host under the session's sys root, the DPU through
/// the session's agent channel, and the far end, when `args.far_end` names one, through its
/// own agent's channel, dialled before the first reading.
pub async fn run(session: &Session, args: &StorageParams) -> Result<ProofReport, ProveError> {
    let (work, trial_count) = plan(args)?;
    Witnesses::check(args.far_end.as_ref(), args.witnesses)?;
    let channel = session.agent().channel().await?;
    let root = session.sys_root();
    let target = resolve(&root, channel.clone(), args).await?;
    let witnesses = Witnesses::dial(session, args.far_end.as_ref()).await?;
    let mut sides = Sides {
        channel,
        sampler: Sampler::new(root.clone()),
        volume: target.volume.clone(),
        uplinks: if target.rdma {
            Vec::new()
        } else {
            target.uplinks.clone()
        },
        far_end: witnesses.far_end,
    };
    // Each trial reads on from where the last ended.
    let starts: Vec<u64> = work
        .iter()
        .scan(0u64, |at, &n| {
            let start = *at;
            *at += n;
            Some(start)
        })
        .collect();
    let (device, bs, iodepth) = (target.binding.device.clone(), args.bs, args.iodepth);
    // The read is a blocking io_uring loop: on a blocking thread, so the runtime keeps
    // serving the channel meanwhile.
    let read = |i: usize| {
        let (device, n, start) = (device.clone(), work[i], starts[i]);
        async move {
            tokio::task::spawn_blocking(move || {
                crate::storage_read::read_with(
                    &device,
                    bs,
                    iodepth,
                    crate::storage_read::engine::Limit::Bytes(n),
                    start,
                )
            })
            .await
            .map_err(ProveError::ReadThread)?
            .map_err(ProveError::Read)
        }
    };
    let timing = Timing {
        idle: args.idle,
        settle: SETTLE,
    };
    let shown = target.binding.device.display().to_string();
    let m = measure(
        &mut sides,
        timing,
        async { Ok::<(), ProveError>(()) },
        trial_count,
        read,
    )
    .await?;
    let host_rdma = host_rdma_ports(&root, &m.first_before().host);
    let read_bytes: Vec<u64> = m.runs().iter().map(|r| r.workload.io_bytes).collect();
    let total: u64 = read_bytes.iter().sum();
    let judged = judge(&target, &read_bytes, &m, &host_rdma, &args.waive);
    let mut notes = judged.notes;
    if let [only] = m.runs() {
        notes.push(format!(
            "read {} bytes from {shown} in {:.2} s ({} reads of {bs} bytes, {iodepth} in \
             flight)",
            only.workload.io_bytes,
            only.workload.runtime.as_secs_f64(),
            only.workload.total_ios,
        ));
        notes.push(
            "one trial: a reader of the same volume during the window would be counted as \
             this read (three trials run N, 2N, N with quiet gaps between)"
                .to_owned(),
        );
    } else {
        notes.push(format!(
            "read {total} bytes from {shown} as {} trials of {} bytes with {:.1} s idle gaps \
             ({bs}-byte reads, {iodepth} in flight): each trial is judged on its own \
             window, the volume's growth per byte read agrees across trials within {:.0}%, \
             and nothing reads the volume in the gaps",
            read_bytes.len(),
            read_bytes
                .iter()
                .map(u64::to_string)
                .collect::<Vec<_>>()
                .join(", "),
            args.idle.as_secs_f64(),
            trials::AGREEMENT * 100.0
        ));
    }
    // The table of trials is for a run of several; one trial is the window itself.
    let trial_rows = if m.runs().len() > 1 {
        m.runs()
            .iter()
            .zip(&judged.per_trial)
            .zip(1u32..)
            .map(|((run, verdict), trial)| TrialSummary {
                trial,
                work: run.workload.io_bytes,
                seconds: run.workload.runtime.as_secs_f64(),
                verdict: *verdict,
            })
            .collect()
    } else {
        Vec::new()
    };
    let verdict = judged.verdict;
    let lines = judged.lines;
    notes.insert(0, target.binding.note(&target.volume));
    if args.far_end.is_none() {
        notes.push(
            "one witness: the DPU's own counters (a target agent adds the storage target's \
             count of what it sent)"
                .to_owned(),
        );
    }
    Ok(ProofReport {
        proof: "storage",
        verdict,
        workload: format!("read {total} bytes of {shown} (DPU {})", target.volume),
        lines,
        notes,
        trials: trial_rows,
        witnesses: witnesses.names,
    })
}

#[cfg(test)]
mod tests;
