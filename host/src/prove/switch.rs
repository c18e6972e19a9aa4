//! `dpuctl prove switch`: send a known number of UDP packets from the host interface and
//! account for them on the DPU, flow by flow, at the level that forwarded them.
//!
//! Levels, best first: hardware (what the NIC's own tc statistics counted: the eSwitch), TC
//! in software (the rest of a `dp:tc` flow's packets: the kernel's TC on the Arm cores), the
//! OVS datapath (`dp:ovs`: the Arm cores). The agent places each flow's packets by its one
//! rule (`ovs/src/flow/level.rs`, `Flow.packets_by_level`), which its `/metrics` uses too,
//! never by the `offloaded:yes` or `in_hw` flags; tc packets whose hardware share the kernel
//! did not report are "unattributed" and never count as hardware. The first packets of a
//! flow always go through
//! ovs-vswitchd (an upcall) before a datapath flow exists, so a small allowance is not
//! counted against the proof. Packets, not bytes, are compared: tc byte counts leave out
//! the Ethernet header. Hardware tc counters lag up to 2 s, so the after-snapshot waits.
//!
//! The packets are sent as trials of 1, 2, 1 ... parts with idle gaps between them
//! (`accounting::trials`): each trial is judged on its own window, the flows' growth per
//! packet sent must agree across trials, and the workload's flows must be quiet in every
//! gap, so traffic that is not the workload's cannot pass for it. With the receiver's agent
//! (`--target-agent`, `--target-interface`) the receiver's own count of arrived packets is
//! a second witness in every trial.

use std::net::{Ipv4Addr, UdpSocket};
use std::num::NonZeroU32;
use std::time::{Duration, SystemTime};

use dpu_probe::counters::{CounterSelector, Sampler};
use dpu_probe::snapshot::{diff, Sample, Snapshot, Source, Unit};
use dpu_proto::v1::{self, counters_client::CountersClient, switch_client::SwitchClient};
use tonic::transport::Channel;

use super::error::ProveError;
use super::report::{Judged, ProofReport, TrialSummary};
use super::upcalls;
use super::witness::{agent_snapshot, Witnesses};
use crate::accounting::measure::{measure, Observation, Observe, Timing, Trials};
use crate::accounting::trials::{self, trial_count};
use crate::accounting::{evaluate, Expectation, Line, Rule, Select, Side};
use crate::agent::session::{rpc_error, AgentError, Session};
use crate::param::{Field, ParamError};
use crate::snapshot_wire::snapshot_from_wire;

/// The forwarding level a switch proof must show, slowest first (so `>=` means "as good
/// or better"): the levels of the agent's `Flow.packets_by_level`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum ForwardingLevel {
    /// The OVS kernel (or userspace) datapath: the Arm CPU switched the packets.
    Datapath,
    /// TC flower rules in software: still the CPU, but through TC.
    TcSoftware,
    /// The NIC's eSwitch, as its own tc hardware statistics say.
    Hardware,
}

impl ForwardingLevel {
    /// Every level, best first.
    pub const ALL: [Self; 3] = [Self::Hardware, Self::TcSoftware, Self::Datapath];

    /// The name reports use (the agent's metric label too).
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Hardware => "hardware",
            Self::TcSoftware => "tc-software",
            Self::Datapath => "datapath",
        }
    }

    /// This level's packets of a flow.
    fn of(self, placed: &v1::TrafficByLevel) -> u64 {
        match self {
            Self::Hardware => placed.hardware,
            Self::TcSoftware => placed.tc_software,
            Self::Datapath => placed.datapath,
        }
    }
}

/// `dpuctl prove switch` as parameters.
#[derive(Debug, Clone)]
pub struct SwitchParams {
    /// The host interface to send from.
    pub interface: String,
    /// An IPv4 address beyond the DPU's switch to send to.
    pub peer: Ipv4Addr,
    /// The DPU port (representor) the host interface's traffic enters OVS through.
    pub representor: String,
    /// Packets to send, in all trials together.
    pub packets: u64,
    /// The level the traffic must reach for PROVEN.
    pub require: ForwardingLevel,
    /// The idle window before sending, for background traffic; also each gap between trials.
    pub idle: Duration,
    /// How many trials the packets are split into (1, 2, 1 ... parts); 1 is a single window,
    /// which cannot tell other traffic through the workload's flows from the workload.
    pub trials: u32,
    /// The receiver's agent and interface, whose own count of arrived packets is the second
    /// witness. `None`: the DPU is the only witness.
    pub far_end: Option<Receiver>,
    /// How many witnesses the proof must have (1 or 2; 2 needs `far_end`): checked before
    /// anything is sent.
    pub witnesses: u32,
}

/// The far end of a switch proof: the machine that holds the peer address, read by its own
/// agent.
#[derive(Debug, Clone)]
pub struct Receiver {
    /// Its agent.
    pub agent: dpu_proto::Endpoint,
    /// The interface the packets arrive on (its `rx_packets` is the count).
    pub interface: String,
}

/// The fewest packets one unit of a trial may have: the first packets' allowance must stay
/// small beside it.
pub const MIN_UNIT_PACKETS: u64 = 50;

/// Packets of a new flow that reach ovs-vswitchd before its datapath flow exists, plus
/// ARP and neighbour discovery on the same port.
const FIRST_PACKETS: u64 = 8;

/// Hardware tc counters are refreshed every ~1 s by the driver and OVS reads them late.
const SETTLE_HARDWARE: Duration = Duration::from_millis(2500);
const SETTLE_SOFTWARE: Duration = Duration::from_millis(300);

/// The mlx5 representor xstat counting packets the Arm CPU received for the port.
const CPU_HIT: &str = "cpu_hit_rx_packets";

/// The packets each of `count` trials sends out of `packets`, in [`trials::weights`]'
/// proportions; `Err` with the fewest packets that can be split so, when a unit would hold
/// fewer than [`MIN_UNIT_PACKETS`].
pub fn trial_packets(packets: u64, count: u32) -> Result<Vec<u64>, u64> {
    trials::split(packets, count, 1, MIN_UNIT_PACKETS)
}

/// Packets sent before the measured window, and the pause after them.
const WARM_UP_PACKETS: u64 = 3;
const WARM_UP_WAIT: Duration = Duration::from_millis(500);

/// UDP discard port: the peer drops the packets (or answers port-unreachable).
const DISCARD_PORT: u16 = 9;

/// The object of tc packets whose hardware share nobody reported.
const UNATTRIBUTED: &str = "unattributed";

fn object(representor: &str, level: ForwardingLevel) -> String {
    format!("flows/in_port={representor}/{}", level.as_str())
}

fn unattributed_object(representor: &str) -> String {
    format!("flows/in_port={representor}/{UNATTRIBUTED}")
}

/// The DPU's flow counters entering through `representor` whose match covers the
/// workload's packets (`covering`: the agent keeps only the flows that would count them, so
/// an unrelated flow through the same representor proves nothing), summed per level. Every
/// level is always present (0 without flows), so a flow appearing is growth, not a new
/// counter.
async fn flow_snapshot(
    channel: &Channel,
    representor: &str,
    covering: &v1::FlowPacket,
) -> Result<(Snapshot, Vec<v1::Flow>), AgentError> {
    let start = dpu_probe::snapshot::monotonic_now();
    let flows = SwitchClient::new(channel.clone())
        .max_decoding_message_size(dpu_proto::MAX_MESSAGE_BYTES)
        .list_flows(v1::ListFlowsRequest {
            filter: v1::FlowFilter::All as i32,
            in_port: representor.to_owned(),
            datapath: String::new(),
            covering: Some(covering.clone()),
        })
        .await
        .map_err(rpc_error("Switch.ListFlows"))?
        .into_inner()
        .flows;
    // The representor's offload xstats (mlx5: packets the CPU handled), where it has them.
    let counters = CountersClient::new(channel.clone())
        .max_decoding_message_size(dpu_proto::MAX_MESSAGE_BYTES)
        .snapshot(v1::SnapshotRequest {
            selectors: vec![
                v1::CounterSelector {
                    selector: Some(v1::counter_selector::Selector::Netdev(v1::NetdevSelector {
                        ifname: representor.to_owned(),
                    })),
                },
                upcalls::selector(),
            ],
        })
        .await
        .map_err(rpc_error("Counters.Snapshot"))?
        .into_inner();
    let (datapaths, datapath_errors) = upcalls::from_wire(&counters);
    let cpu_hit = snapshot_from_wire(&counters)
        .samples
        .into_iter()
        .filter(|s| s.key.source == Source::NetdevOffload && s.key.counter == CPU_HIT);
    // A flow the agent did not place (an agent older than this dpuctl) counts nowhere: it
    // can make the proof fail, never pass.
    let placed: Vec<v1::TrafficByLevel> = flows.iter().filter_map(|f| f.packets_by_level).collect();
    let sum = |of: &dyn Fn(&v1::TrafficByLevel) -> u64| -> u64 {
        placed.iter().map(of).fold(0, u64::saturating_add)
    };
    let sample = |object: String, packets: u64| {
        Sample::cumulative(Source::OvsFlow, object, "packets", packets, Unit::Packets)
    };
    let samples = ForwardingLevel::ALL
        .iter()
        .map(|level| sample(object(representor, *level), sum(&|p| level.of(p))))
        .chain([sample(
            unattributed_object(representor),
            sum(&|p| p.unattributed),
        )])
        .chain(cpu_hit)
        .chain(datapaths)
        .collect();
    let snapshot = Snapshot {
        taken_at: SystemTime::now(),
        monotonic_start: start,
        monotonic_end: dpu_probe::snapshot::monotonic_now(),
        // Flows are OVS's, not the kernel's: a daemon restart shows as a drop in the sums.
        boot_id: None,
        samples,
        errors: datapath_errors,
        read: dpu_probe::snapshot::ReadReport::default(),
    };
    Ok((snapshot, flows))
}

fn host_snapshot(sampler: &mut Sampler, interface: &str) -> Snapshot {
    sampler.snapshot(&[CounterSelector::Netdev {
        ifname: Some(interface.to_owned()),
    }])
}

/// The workload's one socket, connected to the peer's discard port, and its packets as a
/// flow match sees them: the warm-up and the measured packets share its 5-tuple, which is
/// what the flows are chosen by.
fn workload_socket(peer: Ipv4Addr) -> Result<(UdpSocket, v1::FlowPacket), ProveError> {
    let socket = UdpSocket::bind((Ipv4Addr::UNSPECIFIED, 0)).map_err(ProveError::Socket)?;
    socket
        .connect((peer, DISCARD_PORT))
        .map_err(|source| ProveError::NoRoute { peer, source })?;
    let local = socket.local_addr().map_err(ProveError::LocalAddress)?;
    let packet = v1::FlowPacket {
        src_ip: local.ip().to_string(),
        dst_ip: peer.to_string(),
        ip_proto: u32::from(UDP),
        src_port: u32::from(local.port()),
        dst_port: u32::from(DISCARD_PORT),
    };
    Ok((socket, packet))
}

/// The IP protocol number of UDP.
const UDP: u8 = 17;

fn send(socket: &UdpSocket, peer: Ipv4Addr, packets: u64) -> Result<(), ProveError> {
    let payload = [0x5a_u8; 64];
    let (mut sent, mut refused) = (0, 0);
    while sent < packets {
        match socket.send(&payload) {
            Ok(_) => sent += 1,
            // The peer's port-unreachable from an earlier packet is reported on this call,
            // which then sends nothing: send this packet again (each report comes once).
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionRefused && refused <= packets => {
                refused += 1;
                continue;
            }
            Err(source) => return Err(ProveError::Send { sent, peer, source }),
        }
        if sent % 50 == 0 {
            std::thread::sleep(Duration::from_millis(2));
        }
    }
    Ok(())
}

/// Reads the host interface with its own sampler, the DPU's flows through the session's
/// channel and, when there is one, the receiver's interface through its agent's channel;
/// keeps the last flow list for the notes.
struct Sides {
    channel: Channel,
    sampler: Sampler,
    interface: String,
    representor: String,
    covering: v1::FlowPacket,
    flows: Vec<v1::Flow>,
    far_end: Option<(Channel, String)>,
}

impl Observe for Sides {
    type Error = AgentError;

    async fn observe(&mut self) -> Result<Observation, AgentError> {
        let (dpu, flows) = flow_snapshot(&self.channel, &self.representor, &self.covering).await?;
        self.flows = flows;
        let host = host_snapshot(&mut self.sampler, &self.interface);
        let far_end = match &self.far_end {
            Some((channel, interface)) => {
                let selector = v1::counter_selector::Selector::Netdev(v1::NetdevSelector {
                    ifname: interface.clone(),
                });
                Some(agent_snapshot(channel, vec![selector], "Counters.Snapshot (receiver)").await?)
            }
            None => None,
        };
        Ok(Observation { host, dpu, far_end })
    }
}

/// What a switch proof expects of `k` packets sent, given the counters that exist
/// `before` (the receiver's line when `before` read a far end).
pub fn expectations(args: &SwitchParams, k: u64, before: &Observation) -> Vec<Expectation> {
    let dpu_before = &before.dpu;
    let mut good: Vec<String> = ForwardingLevel::ALL
        .iter()
        .filter(|level| **level >= args.require)
        .map(|level| object(&args.representor, *level))
        .collect();
    // tc forwarded the unattributed packets, in the NIC or not: as good as TC in software,
    // never hardware.
    if args.require <= ForwardingLevel::TcSoftware {
        good.push(unattributed_object(&args.representor));
    }
    let mut list = vec![
        Expectation {
            name: format!("host {} sent the packets", args.interface),
            select: Select {
                side: Side::Host,
                source: Source::Netdev,
                objects: vec![format!("netdevs/{}", args.interface)],
                counter: "tx_packets".to_owned(),
            },
            // The same allowance as below: the idle-window estimate of background traffic
            // (a neighbour solicitation, scaled to the workload's duration) is subtracted
            // and can exceed what really arrived during the window.
            rule: Rule::AtLeast(k.saturating_sub(FIRST_PACKETS)),
            why: "the workload left the host on the interface the DPU switches".to_owned(),
            if_failed: "the packets did not leave through this interface: check the route to \
                        the peer"
                .to_owned(),
            traffic: k,
            waiver: None,
            unformed: None,
        },
        Expectation {
            name: forwarded(args),
            select: Select {
                side: Side::Dpu,
                source: Source::OvsFlow,
                objects: good,
                counter: "packets".to_owned(),
            },
            rule: Rule::AtLeast(k.saturating_sub(FIRST_PACKETS)),
            why: "datapath flow counters say which layer forwarded each packet".to_owned(),
            if_failed: "the packets were not forwarded at the required level: the offload is \
                        off, not applied (restart ovs-vswitchd), or the flows stayed in a \
                        slower path"
                .to_owned(),
            traffic: k,
            waiver: None,
            unformed: None,
        },
    ];
    let worse: Vec<String> = ForwardingLevel::ALL
        .iter()
        .filter(|level| **level < args.require)
        .map(|level| object(&args.representor, *level))
        .collect();
    let representor = format!("netdevs/{}", args.representor);
    if dpu_before
        .get(Source::NetdevOffload, &representor, CPU_HIT)
        .is_some()
        && args.require == ForwardingLevel::Hardware
    {
        list.push(Expectation {
            name: format!(
                "{} cpu_hit stayed within the first packets",
                args.representor
            ),
            select: Select {
                side: Side::Dpu,
                source: Source::NetdevOffload,
                objects: vec![representor],
                counter: CPU_HIT.to_owned(),
            },
            rule: Rule::AtMost(FIRST_PACKETS),
            why: "the representor counts every packet the Arm CPU had to handle".to_owned(),
            if_failed: "the Arm CPU handled the packets: the offload did not take them".to_owned(),
            traffic: k,
            waiver: None,
            unformed: None,
        });
    }
    if args.require == ForwardingLevel::Hardware {
        list.push(Expectation {
            name: "the NIC's own statistics counted the tc packets".to_owned(),
            select: Select {
                side: Side::Dpu,
                source: Source::OvsFlow,
                objects: vec![unattributed_object(&args.representor)],
                counter: "packets".to_owned(),
            },
            rule: Rule::AtMost(FIRST_PACKETS),
            why: "only tc's hardware statistics (TCA_STATS_BASIC_HW) say the NIC forwarded a \
                  packet; offloaded:yes and in_hw are flags, which OVS also sets when tc's \
                  state is undefined"
                .to_owned(),
            if_failed: "tc forwarded these packets, but the kernel reported no hardware share \
                        for their filters: whether the NIC forwarded them cannot be shown \
                        (a kernel without TCA_STATS_BASIC_HW, or an agent older than this \
                        dpuctl)"
                .to_owned(),
            traffic: k,
            waiver: None,
            unformed: None,
        });
    }
    if let (Some(receiver), Some(far_end)) = (&args.far_end, &before.far_end) {
        list.push(receiver_line(receiver, k, far_end));
    }
    if !worse.is_empty() {
        list.push(Expectation {
            name: "slower paths did not carry the flow".to_owned(),
            select: Select {
                side: Side::Dpu,
                source: Source::OvsFlow,
                objects: worse,
                counter: "packets".to_owned(),
            },
            rule: Rule::AtMost(FIRST_PACKETS),
            why: "packets in a slower layer were switched by the Arm cores".to_owned(),
            if_failed: "the Arm CPU switched these packets: the traffic took the slow path"
                .to_owned(),
            traffic: k,
            waiver: None,
            unformed: None,
        });
    }
    list.extend(upcalls::lines(k, FIRST_PACKETS, dpu_before));
    list
}

/// The second witness: the receiver's interface counted at least the packets sent (but the
/// first packets' allowance), read by its own agent. A receiver without that interface's
/// counter is a visible line that cannot be formed.
fn receiver_line(receiver: &Receiver, k: u64, far_end: &Snapshot) -> Expectation {
    let object = format!("netdevs/{}", receiver.interface);
    let unformed = far_end
        .get(Source::Netdev, &object, "rx_packets")
        .is_none()
        .then(|| {
            format!(
                "the receiver's agent reports no rx_packets for {}: no such interface there",
                receiver.interface
            )
        });
    Expectation {
        name: format!("the receiver's {} counted the packets", receiver.interface),
        select: Select {
            side: Side::FarEnd,
            source: Source::Netdev,
            objects: vec![object],
            counter: "rx_packets".to_owned(),
        },
        rule: Rule::AtLeast(k.saturating_sub(FIRST_PACKETS)),
        why: "the machine that holds the peer address counts what arrived, on its own \
              counters: a second witness that the packets crossed the switch"
            .to_owned(),
        if_failed: "the packets did not arrive at the receiver: the switch dropped them or \
                    sent them elsewhere"
            .to_owned(),
        traffic: k,
        waiver: None,
        unformed,
    }
}

/// The gap's line: nothing but the trials sends the workload's packets, so between two
/// trials the flows that cover them stay within the first packets' allowance and a
/// twentieth of the smallest trial.
fn gap_expectation(args: &SwitchParams, smallest: u64) -> Expectation {
    let objects = ForwardingLevel::ALL
        .iter()
        .map(|level| object(&args.representor, *level))
        .chain([unattributed_object(&args.representor)])
        .collect();
    Expectation {
        name: format!(
            "nothing else went through the flows from {}",
            args.representor
        ),
        select: Select {
            side: Side::Dpu,
            source: Source::OvsFlow,
            objects,
            counter: "packets".to_owned(),
        },
        rule: Rule::AtMost(FIRST_PACKETS + smallest / 20),
        why: "between trials the proof sends nothing: what the workload's flows count then \
              is other traffic, and it would be counted in the trials too"
            .to_owned(),
        if_failed: "other traffic went through the workload's flows between trials (a flow \
                    whose match is wider than the workload's packets)"
            .to_owned(),
        traffic: smallest,
        waiver: None,
        unformed: None,
    }
}

/// The name of the line the workload's flows are judged by: the witness held to agreement.
fn forwarded(args: &SwitchParams) -> String {
    format!(
        "flows from {} forwarded at level {} or better",
        args.representor,
        args.require.as_str()
    )
}

/// The level most of the workload reached, for the summary.
fn reached(before: &Snapshot, after: &Snapshot, representor: &str) -> Option<ForwardingLevel> {
    let d = diff(before, after);
    ForwardingLevel::ALL
        .iter()
        .filter_map(|level| {
            let delta = d
                .deltas
                .iter()
                .find(|x| x.key.object == object(representor, *level))?
                .change
                .delta()?;
            (delta > 0).then_some((*level, delta))
        })
        .max_by_key(|(_, delta)| *delta)
        .map(|(level, _)| level)
}

/// Judges a switch run, trial `i` having sent `work[i]` packets, with the offload
/// `settings` read before the run and `flows` datapath flows covering the workload at the
/// end: each trial against the expectations for its own count, chosen from the counters
/// that exist before the first trial; with several trials the flows' line is held to the
/// other trials' ([`trials::hold_to_agreement`]) and each gap to quiet flows. Returns every
/// line and the notes (the settings, the level the traffic reached, what is not
/// accounted).
pub fn judge<T>(
    args: &SwitchParams,
    work: &[u64],
    m: &Trials<T>,
    settings: &v1::OffloadSettings,
    flows: usize,
) -> Judged {
    let first = m.first_before();
    let mut per_trial: Vec<Vec<Line>> = m
        .windows()
        .iter()
        .zip(work)
        .map(|(evidence, &k)| evaluate(&expectations(args, k, first), evidence).1)
        .collect();
    trials::hold_to_agreement(&mut per_trial, work, &forwarded(args));
    let smallest = work.iter().copied().min().unwrap_or(0);
    let gap = gap_expectation(args, smallest);
    let (verdict, verdicts, lines) = trials::conclude(per_trial, &gap, &m.gaps());
    let (dpu_before, dpu_after) = (&first.dpu, &m.last_after().dpu);
    let level = reached(dpu_before, dpu_after, &args.representor);
    let mut notes = vec![
        format!(
            "offload settings: hw-offload={} (active: {}), tc-policy {:?}",
            settings.hw_offload,
            settings.offload_active,
            v1::TcPolicy::try_from(settings.tc_policy).unwrap_or(v1::TcPolicy::Unspecified)
        ),
        format!(
            "the traffic was forwarded at level: {}",
            level.map_or("none seen", ForwardingLevel::as_str)
        ),
        format!(
            "{flows} datapath flows enter through {} and cover the workload's packets; \
             allowance for first packets and ARP: {FIRST_PACKETS}",
            args.representor
        ),
    ];
    if dpu_before
        .get(
            Source::NetdevOffload,
            &format!("netdevs/{}", args.representor),
            CPU_HIT,
        )
        .is_none()
    {
        notes.push(format!(
            "{} reports no {CPU_HIT} (not an mlx5 representor): CPU packets are accounted by \
             flow level only",
            args.representor
        ));
    }
    let unattributed_at = unattributed_object(&args.representor);
    let unattributed = diff(dpu_before, dpu_after)
        .deltas
        .iter()
        .find(|d| d.key.source == Source::OvsFlow && d.key.object == unattributed_at)
        .and_then(|d| d.change.delta())
        .unwrap_or(0);
    if unattributed > 0 {
        notes.push(format!(
            "{unattributed} packets went through tc flows whose filters report no hardware \
             share: tc forwarded them, but not necessarily the NIC"
        ));
    }
    if level == Some(ForwardingLevel::TcSoftware) {
        notes.push(
            "TC in software (packets tc counted outside the NIC) is the kernel's TC on the \
             Arm cores: nothing here was switched in hardware"
                .to_owned(),
        );
    }
    Judged {
        verdict,
        lines,
        notes,
        per_trial: verdicts,
    }
}

/// The packet counts of the trials, or why `args` cannot be run (checked before anything
/// is dialled or sent).
fn plan(args: &SwitchParams) -> Result<(Vec<u64>, NonZeroU32), ProveError> {
    use dpu_proto::names::check_ifname;
    check_ifname("interface", &args.interface)?;
    check_ifname("representor", &args.representor)?;
    if let Some(receiver) = &args.far_end {
        check_ifname("target interface", &receiver.interface)?;
    }
    let trials = trial_count(args.trials)?;
    let packets = trial_packets(args.packets, args.trials).map_err(|needed| {
        ParamError::new(Field::Packets)
            .field(Field::Packets)
            .text(format!(
                " {} cannot be split into {} trials of 1, 2, 1 ... parts of at least \
                 {MIN_UNIT_PACKETS} packets: it needs at least {needed} (or fewer ",
                args.packets, args.trials
            ))
            .field(Field::Trials)
            .text(")")
    })?;
    Ok((packets, trials))
}

/// Runs the switch proof: sends `packets` UDP packets as trials and accounts for them on
/// every side: the host interface under the session's sys root, the DPU's flows per level
/// through the session's agent channel, and the receiver's interface, when `args.far_end`
/// names it, through its own agent's channel, dialled before the first reading.
pub async fn run(session: &Session, args: &SwitchParams) -> Result<ProofReport, ProveError> {
    let (work, trial_count) = plan(args)?;
    Witnesses::check(args.far_end.as_ref().map(|r| &r.agent), args.witnesses)?;
    let channel = session.agent().channel().await?;
    let settings = SwitchClient::new(channel.clone())
        .max_decoding_message_size(dpu_proto::MAX_MESSAGE_BYTES)
        .get_offload_settings(v1::GetOffloadSettingsRequest {})
        .await
        .map_err(rpc_error("Switch.GetOffloadSettings"))?
        .into_inner();
    let witnesses = Witnesses::dial(session, args.far_end.as_ref().map(|r| &r.agent)).await?;
    let (socket, covering) = workload_socket(args.peer)?;
    let socket = std::sync::Arc::new(socket);
    let mut sides = Sides {
        channel,
        sampler: Sampler::new(session.sys_root()),
        interface: args.interface.clone(),
        representor: args.representor.clone(),
        covering: covering.clone(),
        flows: Vec::new(),
        far_end: witnesses
            .far_end
            .zip(args.far_end.as_ref().map(|r| r.interface.clone())),
    };
    let timing = Timing {
        idle: args.idle,
        settle: if settings.hw_offload {
            SETTLE_HARDWARE
        } else {
            SETTLE_SOFTWARE
        },
    };
    let peer = args.peer;
    // Warm-up outside the window: resolves the peer's MAC (the kernel keeps only a few
    // packets while ARP is pending and drops the rest) and lets the datapath flow exist.
    let warm_up_socket = std::sync::Arc::clone(&socket);
    let warm_up = async move {
        send(&warm_up_socket, peer, WARM_UP_PACKETS)?;
        tokio::time::sleep(WARM_UP_WAIT).await;
        Ok::<(), ProveError>(())
    };
    let workload = |i: usize| {
        let (socket, packets) = (std::sync::Arc::clone(&socket), work[i]);
        async move {
            let started = std::time::Instant::now();
            send(&socket, peer, packets)?;
            Ok::<_, ProveError>(started.elapsed())
        }
    };
    let m = measure(&mut sides, timing, warm_up, trial_count, workload).await?;
    let flows = std::mem::take(&mut sides.flows);
    let judged = judge(args, &work, &m, &settings, flows.len());
    let mut notes = judged.notes;
    if work.len() > 1 {
        notes.push(format!(
            "sent as {} trials of {} packets with {:.1} s idle gaps: each trial is judged on \
             its own window, the flows' growth per packet sent agrees across trials within \
             {:.0}%, and nothing goes through the workload's flows in the gaps",
            work.len(),
            work.iter()
                .map(u64::to_string)
                .collect::<Vec<_>>()
                .join(", "),
            args.idle.as_secs_f64(),
            trials::AGREEMENT * 100.0
        ));
    } else {
        notes.push(
            "one trial: other traffic through the workload's flows during the window would be \
             counted as the workload (three trials send N, 2N, N with quiet gaps between)"
                .to_owned(),
        );
    }
    if args.far_end.is_none() {
        notes.push(
            "one witness: the DPU's own counters (a target agent and target interface add the \
             receiver's count of what arrived)"
                .to_owned(),
        );
    }
    let trial_rows = if work.len() > 1 {
        m.runs()
            .iter()
            .zip(&work)
            .zip(&judged.per_trial)
            .zip(1u32..)
            .map(|(((run, &packets), verdict), trial)| TrialSummary {
                trial,
                work: packets,
                seconds: run.workload.as_secs_f64(),
                verdict: *verdict,
            })
            .collect()
    } else {
        Vec::new()
    };
    Ok(ProofReport {
        proof: "switch",
        verdict: judged.verdict,
        workload: format!(
            "{} UDP packets from {} ({}:{}) to {}:{} through {} (required level: {}); only the \
             flows whose match covers them are counted",
            work.iter().sum::<u64>(),
            args.interface,
            covering.src_ip,
            covering.src_port,
            args.peer,
            DISCARD_PORT,
            args.representor,
            args.require.as_str()
        ),
        lines: judged.lines,
        notes,
        trials: trial_rows,
        witnesses: witnesses.names,
    })
}

#[cfg(test)]
mod tests;
