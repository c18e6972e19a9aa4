//! What PFC/ECN/CNP counter deltas mean: the rules of `dpuctl roce dcb`. Pure functions
//! over two snapshots (driver statistics by their `ethtool -S` names, RDMA `hw_counters`),
//! so every rule is tested with the counter names the reference documents (§1.3, §1.6).

mod error;
pub mod findings;
pub mod tie;
pub use error::DcbError;

use std::collections::BTreeMap;

use dpu_probe::ethtool_stats::read_ethtool_stats;
use dpu_probe::rdma::counters::{
    device_object, port_object, read_device_hw_counters, read_port_counters,
};
use dpu_probe::snapshot::{diff, Collector, Sample, Snapshot, Source, Unit};
use dpu_probe::SysRoot;
use serde::Serialize;

use self::tie::{tie, ConfigProof};
use super::endpoint::Endpoint;
use crate::accounting::deltas::{named, NamedDeltas};
use crate::facts::dcb::DcbFacts;
use crate::facts::dcb_chain::RailDcb;
use crate::param::{Field, ParamError};

use self::findings::{finding, moved};
pub use self::findings::{Counters, Finding, Severity};

/// One moment of an interface's driver statistics (SIOCETHTOOL, by their `ethtool -S`
/// names) and its RDMA port's counters, as a probe snapshot so before and after go through
/// the one accounting engine.
pub fn snapshot(
    interface: &str,
    root: &SysRoot,
    rdma: Option<&Endpoint>,
) -> Result<Snapshot, DcbError> {
    let stats = read_ethtool_stats(interface).map_err(|source| DcbError::Stats {
        interface: interface.to_owned(),
        source,
    })?;
    let mut collector = Collector::start(root);
    let object = format!("netdevs/{interface}");
    collector.extend(stats.into_iter().map(|s| {
        Sample::cumulative(
            Source::Netdev,
            object.clone(),
            s.name,
            s.value,
            Unit::Unspecified,
        )
    }));
    if let Some(ep) = rdma {
        collector.record(
            Source::Rdma,
            &port_object(&ep.ibdev, ep.port),
            read_port_counters(root, &ep.ibdev, ep.port),
        );
        collector.record(
            Source::RdmaHw,
            &device_object(&ep.ibdev),
            read_device_hw_counters(root, &ep.ibdev),
        );
    }
    Ok(collector.finish())
}

/// The names a reading has (for [`has_dcb_counters`]); the first value of a name read twice
/// (driver statistics before RDMA counters).
pub fn values(snapshot: &Snapshot) -> Counters {
    let mut c = Counters::new();
    for s in &snapshot.samples {
        c.entry(s.key.counter.to_string()).or_insert(s.value);
    }
    c
}

/// The deltas between two readings: the counters read both times with a trustworthy
/// delta, and those that reset, vanished or appeared (never read as 0 or left out
/// silently).
pub fn deltas(before: &Snapshot, after: &Snapshot) -> NamedDeltas {
    named(&diff(before, after))
}

/// Whether a counter that broke matters: one of the counters the rules read.
pub fn is_judged(name: &str) -> bool {
    has_dcb_counters(&Counters::from([(name.to_owned(), 0)]))
        || name.contains("discard")
        || name.contains("retrans")
        || name.contains("out_of_sequence")
        || name.contains("out_of_buffer")
        || name.contains("duplicate_request")
        || name.contains("rnr")
        || name.contains("timeout")
}

/// `rx_prio{p}_pause` style names for one priority.
fn prio_names(p: u8, suffixes: &[&str]) -> Vec<String> {
    suffixes
        .iter()
        .flat_map(|s| [format!("rx_prio{p}_{s}"), format!("tx_prio{p}_{s}")])
        .collect()
}

/// Whether the snapshot has anything this check reads: per-priority or global pause
/// counters, or the RDMA congestion counters.
pub fn has_dcb_counters(c: &Counters) -> bool {
    c.keys().any(|k| {
        k.contains("_pause") || k.starts_with("np_") || k.starts_with("rp_") || k.contains("_prio")
    })
}

/// The findings for deltas `d` when RoCE is meant to run lossless on priority `lossless`.
pub fn evaluate(d: &Counters, lossless: u8) -> Vec<Finding> {
    let mut out = Vec::new();
    // PFC on the lossless priority: the mechanism working under congestion.
    let pfc = moved(d, prio_names(lossless, &["pause", "pause_duration"]));
    if !pfc.is_empty() {
        out.push(finding(
            Severity::Info,
            format!("PFC is pausing on the lossless priority {lossless}: congestion was absorbed without drops"),
            pfc,
        ));
    }
    // Pause frames on other priorities: PFC enabled on, or RoCE mapped to, the wrong one.
    for p in (0..8).filter(|&p| p != lossless) {
        let wrong = moved(d, prio_names(p, &["pause"]));
        if !wrong.is_empty() {
            out.push(finding(
                Severity::Misconfigured,
                format!(
                    "pause frames on priority {p}, not on the lossless priority {lossless}: PFC is \
                     enabled on the wrong priority, or RoCE traffic is mapped (DSCP/PCP trust) to {p}"
                ),
                wrong,
            ));
        }
    }
    // Link-level (global) pause instead of PFC.
    let global = moved(
        d,
        [
            "rx_pause_ctrl_phy",
            "tx_pause_ctrl_phy",
            "rx_global_pause",
            "tx_global_pause",
        ]
        .map(String::from),
    );
    if !global.is_empty() {
        out.push(finding(
            Severity::Misconfigured,
            "global (802.3x) pause frames: link-level flow control is on, which stalls every \
             class instead of only the lossless one; enable PFC and turn global pause off",
            global,
        ));
    }
    let storm = moved(
        d,
        [
            "tx_pause_storm_warning_events",
            "tx_pause_storm_error_events",
        ]
        .map(String::from),
    );
    if !storm.is_empty() {
        out.push(finding(
            Severity::Misconfigured,
            "pause storm protection fired: a receiver stopped draining and pause TX was disabled \
             (drops follow)",
            storm,
        ));
    }
    // Drops: on the lossless priority they mean PFC is not protecting it.
    let lossless_drops = moved(
        d,
        prio_names(lossless, &["discards", "buf_discard", "cong_discard"]),
    );
    if !lossless_drops.is_empty() {
        out.push(finding(
            Severity::Misconfigured,
            format!("drops on the lossless priority {lossless}: PFC is not protecting it (not enabled end to end, or headroom too small)"),
            lossless_drops,
        ));
    }
    let mut lossy: Vec<(String, u64)> = (0..8)
        .filter(|&p| p != lossless)
        .flat_map(|p| {
            moved(
                d,
                prio_names(p, &["discards", "buf_discard", "cong_discard"]),
            )
        })
        .collect();
    lossy.extend(moved(
        d,
        ["rx_discards_phy", "tx_discards_phy"].map(String::from),
    ));
    if !lossy.is_empty() {
        out.push(finding(
            Severity::Warning,
            "drops on lossy queues or at the port (expected under congestion for TCP, never for RoCE)",
            lossy,
        ));
    }
    // ECN / DCQCN.
    let marked = moved(d, ["np_ecn_marked_roce_packets".to_owned()]);
    let cnp_sent = moved(d, ["np_cnp_sent".to_owned()]);
    let handled = moved(d, ["rp_cnp_handled".to_owned()]);
    let ignored = moved(d, ["rp_cnp_ignored".to_owned()]);
    if !marked.is_empty() && !cnp_sent.is_empty() {
        let mut ev = marked.clone();
        ev.extend(cnp_sent.clone());
        out.push(finding(
            Severity::Info,
            "ECN marking and CNPs flowing: switches mark CE, this port (notification point) \
             answers with CNPs (DCQCN is working)",
            ev,
        ));
    } else if !marked.is_empty() {
        out.push(finding(
            Severity::Misconfigured,
            "CE-marked RoCE packets arrived but no CNP was sent: ECN is disabled for the \
             notification point on this priority (roce_np), so senders never slow down",
            marked,
        ));
    }
    if !handled.is_empty() {
        out.push(finding(
            Severity::Info,
            "CNPs handled: this port (reaction point) lowered its send rate as asked",
            handled,
        ));
    }
    if !ignored.is_empty() {
        out.push(finding(
            Severity::Misconfigured,
            "CNPs ignored: congestion notifications arrived but the reaction point did not act; \
             ECN/DCQCN is disabled on the adapter for this priority (roce_rp)",
            ignored,
        ));
    }
    // MTU mismatch, seen by the receiver.
    let oversize = moved(
        d,
        [
            "rx_oversize_pkts_phy",
            "rx_out_of_range_len_phy",
            "rx_oversize_pkts_sw_drop",
        ]
        .map(String::from),
    );
    if !oversize.is_empty() {
        out.push(finding(
            Severity::Misconfigured,
            "frames larger than this port's MTU arrived and were dropped: the peer or the \
             switch has a larger MTU (RoCE path MTU follows the smallest)",
            oversize,
        ));
    }
    // Loss on the RDMA transport.
    let retrans = moved(
        d,
        [
            "out_of_sequence",
            "packet_seq_err",
            "local_ack_timeout_err",
            "roce_adp_retrans",
            "duplicate_request",
            "out_of_seq_request",
            "rcvd_seq_err",
        ]
        .map(String::from),
    );
    if !retrans.is_empty() {
        out.push(finding(
            Severity::Warning,
            "RDMA retransmissions or out-of-sequence packets: packets were lost on the fabric \
             (a lossless network shows none)",
            retrans,
        ));
    }
    out
}

/// `dpuctl roce dcb` as parameters.
#[derive(Debug, Clone)]
pub struct DcbParams {
    /// The interface; default: the netdev of the local RDMA device's RoCE GID.
    pub interface: Option<String>,
    /// The local RDMA device; default: the first with an IPv4 RoCE v2 GID.
    pub device: Option<String>,
    /// The lossless priority.
    pub priority: u8,
    /// Seconds to wait when there is no workload.
    pub duration: u64,
    /// A workload to run between the readings (argv, never through a shell); its stdout
    /// goes to stderr so it cannot mix with a JSON report.
    pub workload: Vec<String>,
}

/// What `-o json` prints.
#[derive(Debug, Serialize)]
pub struct DcbReport {
    /// The interface read.
    pub interface: String,
    /// The RDMA port read, when one was found.
    pub rdma: Option<Endpoint>,
    /// The lossless priority judged.
    pub priority: u8,
    /// The rail's DCB configuration as the `dcb.*` checks read it (DCB netlink, the
    /// rdma_cm default ToS), at the start of the window; `None` when it could not be read
    /// (`dcb_unread` says why).
    pub dcb: Option<RailDcb>,
    /// Why the configuration could not be read (a `--sys-root` tree, a driver without
    /// DCB, a netlink error); the deltas are still reported.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dcb_unread: Option<String>,
    /// The configuration tied to the per-priority counters: where RoCE should land and
    /// where the window's traffic and pauses were counted.
    pub proof: ConfigProof,
    /// The window's length.
    pub seconds: f64,
    /// The workload's exit code.
    pub workload_exit: Option<i32>,
    /// Counters that moved.
    pub deltas: Counters,
    /// Counters the rules read whose growth is unknown (reset, vanished, appeared): name →
    /// why. Any makes the verdict `inconclusive`.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub broken: BTreeMap<String, String>,
    /// What the deltas mean.
    pub findings: Vec<Finding>,
    /// `ok`, `misconfigured`, `no-counters` or `inconclusive`.
    pub verdict: &'static str,
}

/// Runs `dpuctl roce dcb`: a reading, the workload (or the wait), a reading, the rules.
pub fn run(root: &SysRoot, args: &DcbParams) -> Result<DcbReport, DcbError> {
    if let Some(i) = &args.interface {
        dpu_proto::names::check_ifname("interface", i)?;
    }
    if args.workload.is_empty() && !(1..=86_400).contains(&args.duration) {
        return Err(ParamError::new(Field::Duration)
            .field(Field::Duration)
            .text(" must be 1 .. 86400 seconds")
            .into());
    }
    let pass_interface = |why: String| {
        ParamError::new(Field::Interface)
            .text(why)
            .field(Field::Interface)
    };
    let rdma = super::endpoint::local(
        root,
        &super::endpoint::Pin {
            ibdev: args.device.clone(),
            ..super::endpoint::Pin::default()
        },
    );
    let (interface, rdma) = match (&args.interface, rdma) {
        (Some(i), rdma) => (i.clone(), rdma.ok()),
        (None, Ok(ep)) => (
            ep.netdev.clone().ok_or_else(|| {
                pass_interface("the RDMA device's GID names no netdev: pass ".to_owned())
            })?,
            Some(ep),
        ),
        (None, Err(e)) => return Err(pass_interface(format!("{e}; pass ")).into()),
    };
    let mut dcb = DcbFacts::default();
    dcb.read_rail(
        root,
        &interface,
        rdma.as_ref().map(|ep| (ep.ibdev.as_str(), ep.port)),
    );
    let config = RailDcb::from_facts(&dcb, &interface);
    let before = snapshot(&interface, root, rdma.as_ref())?;
    let started = std::time::Instant::now();
    let workload_exit = if let Some((program, rest)) = args.workload.split_first() {
        let status = std::process::Command::new(program)
            .args(rest)
            .stdin(std::process::Stdio::null())
            // Its output must not mix with the report (JSON on stdout).
            .stdout(std::process::Stdio::from(std::io::stderr()))
            .status()
            .map_err(|source| DcbError::Workload {
                program: program.clone(),
                source,
            })?;
        status.code()
    } else {
        std::thread::sleep(std::time::Duration::from_secs(args.duration));
        None
    };
    let seconds = started.elapsed().as_secs_f64();
    // hw_counters are cached for `lifespan` (10 ms by default).
    std::thread::sleep(std::time::Duration::from_millis(30));
    let after = snapshot(&interface, root, rdma.as_ref())?;
    let d = deltas(&before, &after);
    let broken: BTreeMap<String, String> = d
        .broken
        .into_iter()
        .filter(|(name, _)| is_judged(name))
        .collect();
    let mut findings = evaluate(&d.moved, args.priority);
    let (proof, tied) = tie(
        config.as_ref().map_err(String::as_str),
        &d.moved,
        args.priority,
    );
    findings.extend(tied);
    // A misconfiguration the configuration itself shows stands even where the driver has
    // no counters to corroborate it.
    let verdict = if findings
        .iter()
        .any(|f| f.severity == Severity::Misconfigured)
    {
        "misconfigured"
    } else if !has_dcb_counters(&values(&after)) {
        "no-counters"
    } else if !broken.is_empty() {
        "inconclusive"
    } else {
        "ok"
    };
    Ok(DcbReport {
        interface,
        rdma,
        priority: args.priority,
        dcb_unread: config.as_ref().err().cloned(),
        dcb: config.ok(),
        proof,
        seconds,
        workload_exit,
        deltas: d.moved.into_iter().filter(|(_, v)| *v > 0).collect(),
        broken,
        findings,
        verdict,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn c(pairs: &[(&str, u64)]) -> Counters {
        pairs.iter().map(|(k, v)| ((*k).to_owned(), *v)).collect()
    }

    fn severities(f: &[Finding]) -> Vec<Severity> {
        f.iter().map(|f| f.severity).collect()
    }

    #[test]
    fn pfc_on_the_lossless_priority_is_the_mechanism_working() {
        let f = evaluate(&c(&[("rx_prio3_pause", 12), ("tx_prio3_pause", 0)]), 3);
        assert_eq!(severities(&f), [Severity::Info]);
        assert_eq!(f[0].evidence, [("rx_prio3_pause".to_owned(), 12)]);
    }

    #[test]
    fn pause_on_another_priority_is_named() {
        let f = evaluate(&c(&[("tx_prio0_pause", 5)]), 3);
        assert_eq!(severities(&f), [Severity::Misconfigured]);
        assert!(f[0].meaning.contains("priority 0"), "{f:?}");
    }

    #[test]
    fn cnps_ignored_means_ecn_is_off_on_the_adapter() {
        let f = evaluate(&c(&[("rp_cnp_ignored", 40), ("rp_cnp_handled", 0)]), 3);
        assert_eq!(severities(&f), [Severity::Misconfigured]);
        assert!(f[0].meaning.contains("disabled on the adapter"), "{f:?}");
    }

    #[test]
    fn ecn_marks_without_cnps_and_with_cnps() {
        let broken = evaluate(&c(&[("np_ecn_marked_roce_packets", 9)]), 3);
        assert_eq!(severities(&broken), [Severity::Misconfigured]);
        let working = evaluate(
            &c(&[
                ("np_ecn_marked_roce_packets", 9),
                ("np_cnp_sent", 9),
                ("rp_cnp_handled", 3),
            ]),
            3,
        );
        assert_eq!(severities(&working), [Severity::Info, Severity::Info]);
    }

    #[test]
    fn drops_split_lossless_from_lossy_and_mtu_and_global_pause_are_caught() {
        let f = evaluate(
            &c(&[
                ("rx_prio3_discards", 1),
                ("rx_prio0_discards", 7),
                ("rx_oversize_pkts_phy", 2),
                ("rx_pause_ctrl_phy", 4),
            ]),
            3,
        );
        let meanings: Vec<&str> = f.iter().map(|f| f.meaning.as_str()).collect();
        assert!(
            meanings
                .iter()
                .any(|m| m.starts_with("drops on the lossless priority 3")),
            "{meanings:?}"
        );
        assert!(
            meanings.iter().any(|m| m.starts_with("drops on lossy")),
            "{meanings:?}"
        );
        assert!(
            meanings.iter().any(|m| m.contains("larger MTU")),
            "{meanings:?}"
        );
        assert!(
            meanings.iter().any(|m| m.starts_with("global (802.3x)")),
            "{meanings:?}"
        );
    }

    #[test]
    fn quiet_counters_say_nothing_and_resets_are_not_deltas() {
        assert!(evaluate(&c(&[("rx_prio3_pause", 0), ("np_cnp_sent", 0)]), 3).is_empty());
        let reading = |values: &[(&str, u64)]| Snapshot {
            taken_at: std::time::SystemTime::UNIX_EPOCH,
            monotonic_start: std::time::Duration::ZERO,
            monotonic_end: std::time::Duration::ZERO,
            boot_id: Some("b".to_owned()),
            samples: values
                .iter()
                .map(|(n, v)| {
                    Sample::cumulative(
                        Source::Netdev,
                        "netdevs/p0",
                        n.to_string(),
                        *v,
                        Unit::Unspecified,
                    )
                })
                .collect(),
            errors: Vec::new(),
            read: dpu_probe::snapshot::ReadReport::default(),
        };
        let d = deltas(
            &reading(&[("a", 10), ("b", 5), ("rx_prio3_pause", 7)]),
            &reading(&[("a", 4), ("b", 8), ("new", 1), ("rx_prio3_pause", 2)]),
        );
        assert_eq!(d.moved, c(&[("b", 3)]));
        // The resets and the new counter are kept, with their reasons, not dropped.
        assert_eq!(d.broken.len(), 3, "{:?}", d.broken);
        assert!(d.broken["rx_prio3_pause"].contains("reset"));
        assert!(is_judged("rx_prio3_pause") && !is_judged("a"));
        assert!(has_dcb_counters(&c(&[("rx_prio3_pause", 0)])));
        assert!(!has_dcb_counters(&c(&[("peer_ifindex", 3)])));
    }
}
