//! The switch proof's verdicts from in-memory counters: the positive case and every
//! negative control of docs/proofs.md, through [`judge`] with one trial; [`trials`] runs
//! them as trials, with the receiver as a second witness.

use super::super::*;
use crate::accounting::measure::fixture::Scenario;
use crate::accounting::{Outcome, Verdict};

/// Packets sent.
const K: u64 = 400;
const HOST_IF: &str = "netdevs/ens1f0np0";
const REPRESENTOR: &str = "netdevs/pf0hpf";

const SENT: &str = "host ens1f0np0 sent the packets";
const CPU: &str = "pf0hpf cpu_hit stayed within the first packets";
const SLOWER: &str = "slower paths did not carry the flow";
const UPCALLS: &str = "the datapaths sent no packet up to ovs-vswitchd (upcalls)";
const LOST: &str = "no upcall was lost";
const NIC_COUNTED: &str = "the NIC's own statistics counted the tc packets";

fn at_level(level: &str) -> String {
    format!("flows from pf0hpf forwarded at level {level} or better")
}

fn args(require: ForwardingLevel) -> SwitchParams {
    SwitchParams {
        interface: "ens1f0np0".to_owned(),
        peer: Ipv4Addr::new(192, 0, 2, 20),
        representor: "pf0hpf".to_owned(),
        packets: K,
        require,
        idle: Duration::from_secs(1),
        trials: 1,
        far_end: None,
        witnesses: 1,
    }
}

fn settings(hw_offload: bool) -> v1::OffloadSettings {
    v1::OffloadSettings {
        hw_offload,
        offload_active: hw_offload,
        tc_policy: v1::TcPolicy::None as i32,
        ..Default::default()
    }
}

/// What each counter moved over the workload; `cpu_hit` is None on a representor without
/// the mlx5 xstat (the lab's veth).
#[derive(Debug, Clone, Copy)]
struct Moved {
    host: u64,
    hardware: u64,
    tc: u64,
    datapath: u64,
    /// tc packets whose filters reported no hardware share.
    unattributed: u64,
    cpu_hit: Option<u64>,
}

/// A BlueField with the offload on: the eSwitch carried everything but the first packets.
const IN_HARDWARE: Moved = Moved {
    host: K + 2,
    hardware: K - 3,
    tc: 0,
    datapath: 3,
    unattributed: 0,
    cpu_hit: Some(3),
};

fn flow_level(level: &str) -> String {
    format!("flows/in_port=pf0hpf/{level}")
}

/// The kernel datapath's object in the agent's datapath counters.
const DATAPATH: &str = "datapaths/system@ovs-system";

fn scenario(moved: Moved) -> Scenario {
    with_upcalls(scenario_without_datapaths(moved), 0, 0)
}

/// `scenario` whose datapath counted `missed` upcalls and `lost` lost ones over the window.
fn with_upcalls(scenario: Scenario, missed: u64, lost: u64) -> Scenario {
    scenario
        .grows(
            Side::Dpu,
            Source::OvsDatapath,
            DATAPATH,
            upcalls::MISSED,
            Unit::Packets,
            (40, missed),
        )
        .grows(
            Side::Dpu,
            Source::OvsDatapath,
            DATAPATH,
            upcalls::LOST,
            Unit::Packets,
            (1, lost),
        )
}

/// The counters of `moved`, from an agent that reports no datapath lookups.
fn scenario_without_datapaths(moved: Moved) -> Scenario {
    let flows = [
        ("hardware", moved.hardware),
        ("tc-software", moved.tc),
        ("datapath", moved.datapath),
        ("unattributed", moved.unattributed),
    ];
    let mut scenario = Scenario::default().grows(
        Side::Host,
        Source::Netdev,
        HOST_IF,
        "tx_packets",
        Unit::Packets,
        (90_000, moved.host),
    );
    for (level, by) in flows {
        // The warm-up's packets are already counted before the window.
        scenario = scenario.grows(
            Side::Dpu,
            Source::OvsFlow,
            &flow_level(level),
            "packets",
            Unit::Packets,
            (3, by),
        );
    }
    if let Some(by) = moved.cpu_hit {
        scenario = scenario.grows(
            Side::Dpu,
            Source::NetdevOffload,
            REPRESENTOR,
            CPU_HIT,
            Unit::Packets,
            (1_200, by),
        );
    }
    scenario
}

fn judged(
    require: ForwardingLevel,
    hw_offload: bool,
    scenario: &Scenario,
) -> (Verdict, Vec<Line>, Vec<String>) {
    let judged = judge(
        &args(require),
        &[K],
        &scenario.measured(()),
        &settings(hw_offload),
        2,
    );
    assert_eq!(
        judged.per_trial,
        [judged.verdict],
        "one trial is the verdict"
    );
    (judged.verdict, judged.lines, judged.notes)
}

fn names(lines: &[Line]) -> Vec<&str> {
    lines.iter().map(|l| l.expectation.name.as_str()).collect()
}

/// The lines not met, with their reasons.
fn failed(lines: &[Line]) -> Vec<(&str, &str)> {
    lines
        .iter()
        .filter_map(|l| match &l.outcome {
            Outcome::NotMet(why) => Some((l.expectation.name.as_str(), why.as_str())),
            _ => None,
        })
        .collect()
}

/// The lines that could not be judged, with their reasons.
fn inconclusive(lines: &[Line]) -> Vec<(&str, &str)> {
    lines
        .iter()
        .filter_map(|l| match &l.outcome {
            Outcome::Inconclusive(why) => Some((l.expectation.name.as_str(), why.as_str())),
            _ => None,
        })
        .collect()
}

const NOT_AT_LEVEL: &str = "the packets were not forwarded at the required level: the \
                            offload is off, not applied (restart ovs-vswitchd), or the flows \
                            stayed in a slower path";
const SLOW_PATH: &str = "the Arm CPU switched these packets: the traffic took the slow path";

#[test]
fn packets_switched_in_hardware_are_proven() {
    let (verdict, lines, notes) = judged(ForwardingLevel::Hardware, true, &scenario(IN_HARDWARE));
    assert_eq!(verdict, Verdict::Proven, "{lines:#?}");
    assert_eq!(
        names(&lines),
        [
            SENT,
            at_level("hardware").as_str(),
            CPU,
            NIC_COUNTED,
            SLOWER,
            UPCALLS,
            LOST
        ]
    );
    assert_eq!(
        lines[1].expectation.select.objects,
        [flow_level("hardware")]
    );
    assert_eq!(lines[1].net, Some(K - 3));
    assert_eq!(
        lines[3].expectation.select.objects,
        [flow_level("unattributed")]
    );
    assert_eq!(
        lines[4].expectation.select.objects,
        [flow_level("tc-software"), flow_level("datapath")]
    );
    assert_eq!(lines[4].net, Some(3));
    // The report's notes, word for word.
    assert_eq!(
        notes,
        [
            "offload settings: hw-offload=true (active: true), tc-policy None",
            "the traffic was forwarded at level: hardware",
            "2 datapath flows enter through pf0hpf and cover the workload's packets; allowance for first packets and ARP: 8",
        ]
    );
}

#[test]
fn offload_off_is_not_proven_when_hardware_is_required() {
    // hw-offload=false: every packet in the OVS datapath on the Arm cores.
    let off = Moved {
        hardware: 0,
        datapath: K,
        cpu_hit: None,
        ..IN_HARDWARE
    };
    let (verdict, lines, notes) = judged(ForwardingLevel::Hardware, false, &scenario(off));
    assert_eq!(verdict, Verdict::NotProven);
    assert_eq!(
        failed(&lines),
        [
            (
                at_level("hardware").as_str(),
                format!("0 is not >= {}: {NOT_AT_LEVEL}", K - FIRST_PACKETS).as_str()
            ),
            (
                SLOWER,
                format!("{K} is not <= {FIRST_PACKETS}: {SLOW_PATH}").as_str()
            ),
        ]
    );
    assert_eq!(notes[1], "the traffic was forwarded at level: datapath");
    assert_eq!(
        notes[3],
        "pf0hpf reports no cpu_hit_rx_packets (not an mlx5 representor): CPU packets are \
         accounted by flow level only"
    );
}

#[test]
fn tc_in_software_is_not_hardware_but_meets_require_tc() {
    // The lab: hw-offload=true without a NIC, the flows stay in TC in software.
    let tc = Moved {
        hardware: 0,
        tc: K - 3,
        cpu_hit: None,
        ..IN_HARDWARE
    };
    let (verdict, lines, notes) = judged(ForwardingLevel::Hardware, true, &scenario(tc));
    assert_eq!(verdict, Verdict::NotProven);
    assert_eq!(
        failed(&lines),
        [
            (
                at_level("hardware").as_str(),
                format!("0 is not >= {}: {NOT_AT_LEVEL}", K - FIRST_PACKETS).as_str()
            ),
            (
                SLOWER,
                format!("{K} is not <= {FIRST_PACKETS}: {SLOW_PATH}").as_str()
            ),
        ]
    );
    assert!(notes
        .last()
        .is_some_and(|n| n.starts_with("TC in software")));

    let (verdict, lines, notes) = judged(ForwardingLevel::TcSoftware, true, &scenario(tc));
    assert_eq!(verdict, Verdict::Proven, "{lines:#?}");
    assert_eq!(
        names(&lines),
        [
            SENT,
            at_level("tc-software").as_str(),
            SLOWER,
            UPCALLS,
            LOST
        ]
    );
    // TC or better: the hardware level counts too, and tc packets of unknown hardware
    // share (tc forwarded them either way); only the datapath is slower.
    assert_eq!(
        lines[1].expectation.select.objects,
        [
            flow_level("hardware"),
            flow_level("tc-software"),
            flow_level("unattributed")
        ]
    );
    assert_eq!(
        lines[2].expectation.select.objects,
        [flow_level("datapath")]
    );
    assert_eq!(notes[1], "the traffic was forwarded at level: tc-software");
    assert_eq!(
        notes.last().map(String::as_str),
        Some(
            "TC in software (packets tc counted outside the NIC) is the kernel's TC on the \
             Arm cores: nothing here was switched in hardware"
        )
    );
}

#[test]
fn the_arm_cpu_handling_the_packets_is_not_proven() {
    // The flows claim in_hw, but the representor's cpu_hit counted every packet.
    let cpu = Moved {
        cpu_hit: Some(K),
        ..IN_HARDWARE
    };
    let (verdict, lines, _) = judged(ForwardingLevel::Hardware, true, &scenario(cpu));
    assert_eq!(verdict, Verdict::NotProven);
    assert_eq!(
        failed(&lines),
        [(
            CPU,
            format!(
                "{K} is not <= {FIRST_PACKETS}: the Arm CPU handled the packets: the offload \
                 did not take them"
            )
            .as_str()
        )]
    );
    // The first packets' upcalls are allowed.
    let first = Moved {
        cpu_hit: Some(FIRST_PACKETS),
        ..IN_HARDWARE
    };
    let (verdict, lines, _) = judged(ForwardingLevel::Hardware, true, &scenario(first));
    assert_eq!(verdict, Verdict::Proven, "{lines:#?}");
}

#[test]
fn a_host_interface_that_did_not_send_is_not_proven() {
    // The flows moved (another sender), but not from this interface: the route is wrong.
    let elsewhere = Moved {
        host: 0,
        ..IN_HARDWARE
    };
    let (verdict, lines, _) = judged(ForwardingLevel::Hardware, true, &scenario(elsewhere));
    assert_eq!(verdict, Verdict::NotProven);
    assert_eq!(
        failed(&lines),
        [(
            SENT,
            format!(
                "0 is not >= {}: the packets did not leave through this interface: check \
                 the route to the peer",
                K - FIRST_PACKETS
            )
            .as_str()
        )]
    );
}

#[test]
fn an_ovs_restart_mid_run_is_inconclusive() {
    // ovs-vswitchd restarted: the hardware flows' sum dropped from 5,000 to 50.
    let restarted = scenario(IN_HARDWARE).row(
        Side::Dpu,
        Source::OvsFlow,
        &flow_level("hardware"),
        "packets",
        Unit::Packets,
        [Some(5_000), Some(5_000), Some(5_000), Some(50)],
    );
    let (verdict, lines, notes) = judged(ForwardingLevel::Hardware, true, &restarted);
    assert_eq!(verdict, Verdict::Inconclusive, "{lines:#?}");
    assert_eq!(
        inconclusive(&lines),
        [(
            at_level("hardware").as_str(),
            "packets of flows/in_port=pf0hpf/hardware went down from 5000 to 50 (a reset: driver \
             reload, link recreated)"
        )]
    );
    assert!(failed(&lines).is_empty());
    // A reset level is not a level the traffic reached.
    assert_eq!(notes[1], "the traffic was forwarded at level: datapath");
}

#[test]
fn a_vanished_host_counter_is_inconclusive() {
    // The host interface went away (link recreated) before the after-reading.
    let vanished = scenario(IN_HARDWARE).row(
        Side::Host,
        Source::Netdev,
        HOST_IF,
        "tx_packets",
        Unit::Packets,
        [Some(90_000), Some(90_000), Some(90_000), None],
    );
    let (verdict, lines, _) = judged(ForwardingLevel::Hardware, true, &vanished);
    assert_eq!(verdict, Verdict::Inconclusive, "{lines:#?}");
    assert_eq!(
        inconclusive(&lines),
        [(
            SENT,
            "tx_packets of netdevs/ens1f0np0 could not be read after the run"
        )]
    );
    assert!(failed(&lines).is_empty());
}

#[test]
fn tc_packets_with_no_hardware_share_are_never_hardware() {
    // dp:tc, offloaded:yes and in_hw, but the kernel reported no hardware statistics: the
    // agent placed the packets as unattributed. A flag is not evidence.
    let flagged = Moved {
        hardware: 0,
        unattributed: K - 3,
        cpu_hit: None,
        ..IN_HARDWARE
    };
    let (verdict, lines, notes) = judged(ForwardingLevel::Hardware, true, &scenario(flagged));
    assert_eq!(verdict, Verdict::NotProven, "{lines:#?}");
    let failed = failed(&lines);
    assert_eq!(
        failed.iter().map(|(name, _)| *name).collect::<Vec<_>>(),
        [at_level("hardware").as_str(), NIC_COUNTED]
    );
    assert!(failed[1].1.contains("no hardware share"), "{failed:?}");
    assert!(
        notes
            .iter()
            .any(|n| n.starts_with(&format!("{} packets went through tc flows", K - 3))),
        "{notes:?}"
    );
    // They did go through tc: enough for --require tc.
    let (verdict, lines, _) = judged(ForwardingLevel::TcSoftware, true, &scenario(flagged));
    assert_eq!(verdict, Verdict::Proven, "{lines:#?}");
}

#[test]
fn in_hw_flows_whose_packets_went_through_software_are_not_hardware() {
    // in_hw filters without skip_sw: tc's statistics say software carried every packet;
    // the agent placed them as tc-software, so --require hardware is NOT PROVEN.
    let software = Moved {
        hardware: 0,
        tc: K - 3,
        ..IN_HARDWARE
    };
    let (verdict, lines, _) = judged(ForwardingLevel::Hardware, true, &scenario(software));
    assert_eq!(verdict, Verdict::NotProven, "{lines:#?}");
    assert!(failed(&lines)
        .iter()
        .any(|(name, _)| *name == at_level("hardware")));
}

mod trials;

/// Upcall accounting (issue 31): the flows counted the packets, but the kernel datapath
/// sent 300 packets of the trial up to ovs-vswitchd, a flow installed and evicted over and
/// over: the upcall line is not met, and the proof is not PROVEN. Lost upcalls likewise.
/// The negative control is every other test here: no upcalls, PROVEN.
#[test]
fn packets_ovs_vswitchd_forwarded_as_upcalls_are_not_proven() {
    let (verdict, lines, _) = judged(
        ForwardingLevel::Hardware,
        true,
        &with_upcalls(scenario_without_datapaths(IN_HARDWARE), 300, 0),
    );
    assert_eq!(verdict, Verdict::NotProven, "{:?}", failed(&lines));
    assert_eq!(
        failed(&lines).iter().map(|(n, _)| *n).collect::<Vec<_>>(),
        [UPCALLS],
        "{lines:#?}"
    );
    let line = lines
        .iter()
        .find(|l| l.expectation.name == UPCALLS)
        .expect("the upcall line");
    assert_eq!(line.expectation.select.objects, [DATAPATH]);
    let (verdict, lines, _) = judged(
        ForwardingLevel::Hardware,
        true,
        &with_upcalls(scenario_without_datapaths(IN_HARDWARE), 0, 120),
    );
    assert_eq!(verdict, Verdict::NotProven, "{:?}", failed(&lines));
    assert_eq!(
        failed(&lines).iter().map(|(n, _)| *n).collect::<Vec<_>>(),
        [LOST]
    );
    // The first packets' allowance: a few upcalls while a flow is installed are fine.
    let (verdict, lines, _) = judged(
        ForwardingLevel::Hardware,
        true,
        &with_upcalls(scenario_without_datapaths(IN_HARDWARE), 5, 0),
    );
    assert_eq!(verdict, Verdict::Proven, "{:?}", failed(&lines));
}

/// An agent that cannot say how many packets went up to ovs-vswitchd (older than this
/// dpuctl, or ovs-vswitchd out of reach) leaves the upcall lines unformed: INCONCLUSIVE,
/// not PROVEN on the flows alone.
#[test]
fn without_the_datapaths_lookups_the_proof_is_inconclusive() {
    let (verdict, lines, _) = judged(
        ForwardingLevel::Hardware,
        true,
        &scenario_without_datapaths(IN_HARDWARE),
    );
    assert_eq!(verdict, Verdict::Inconclusive, "{lines:#?}");
    let unformed: Vec<&str> = lines
        .iter()
        .filter_map(|l| l.expectation.unformed.as_deref())
        .collect();
    assert_eq!(unformed.len(), 2, "{unformed:?}");
    assert!(
        unformed[0].contains("no datapath lookup counters"),
        "{unformed:?}"
    );
}
