//! The configuration next to the counters that prove it: where a rail's DCB configuration
//! says RoCE lands (ToS → DSCP → priority → PFC, [`RailDcb`]) against where the window's
//! traffic and pauses were counted (`rx_prio{P}_bytes`, `tx_prio{P}_bytes`,
//! `rx_prio{P}_pause`, `tx_prio{P}_pause`: mlx5's per-priority port counters, reference
//! §1.3). Configured on one priority and counted on another is a named finding; so is a
//! RoCE priority without PFC. Pure: the view and the deltas in, the proof and findings out.

use serde::Serialize;

use super::findings::{finding, Counters, Finding, Severity};
use crate::facts::dcb_chain::{list, RailDcb};

/// One priority's movement in the window: `None` where the driver has no such counter.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PriorityCounters {
    /// The priority, 0..7.
    pub priority: u8,
    /// `rx_prio{P}_bytes`.
    pub rx_bytes: Option<u64>,
    /// `tx_prio{P}_bytes`.
    pub tx_bytes: Option<u64>,
    /// `rx_prio{P}_pause`: PFC frames received (the peer asked this port to stop).
    pub rx_pause: Option<u64>,
    /// `tx_prio{P}_pause`: PFC frames sent (this port asked the peer to stop).
    pub tx_pause: Option<u64>,
}

impl PriorityCounters {
    /// The counters of priority `p` among `moved`, when it has any.
    fn read(moved: &Counters, p: u8) -> Option<Self> {
        let named = |dir: &str, what: &str| moved.get(&format!("{dir}_prio{p}_{what}")).copied();
        let counters = Self {
            priority: p,
            rx_bytes: named("rx", "bytes"),
            tx_bytes: named("tx", "bytes"),
            rx_pause: named("rx", "pause"),
            tx_pause: named("tx", "pause"),
        };
        let any = [
            counters.rx_bytes,
            counters.tx_bytes,
            counters.rx_pause,
            counters.tx_pause,
        ]
        .iter()
        .any(Option::is_some);
        any.then_some(counters)
    }

    /// Bytes received plus sent.
    pub fn bytes(&self) -> u64 {
        self.rx_bytes
            .unwrap_or(0)
            .saturating_add(self.tx_bytes.unwrap_or(0))
    }

    /// Pause frames received plus sent.
    pub fn pauses(&self) -> u64 {
        self.rx_pause
            .unwrap_or(0)
            .saturating_add(self.tx_pause.unwrap_or(0))
    }

    /// Whether the driver counts this priority's bytes at all.
    fn counts_bytes(&self) -> bool {
        self.rx_bytes.is_some() || self.tx_bytes.is_some()
    }

    /// The byte counters that moved, as evidence.
    fn byte_evidence(&self) -> Vec<(String, u64)> {
        let p = self.priority;
        [("rx", self.rx_bytes), ("tx", self.tx_bytes)]
            .into_iter()
            .filter_map(|(dir, v)| {
                let v = v.filter(|v| *v > 0)?;
                Some((format!("{dir}_prio{p}_bytes"), v))
            })
            .collect()
    }

    /// `rx_prio3_bytes +1.2 GB, tx_prio3_bytes +1.1 GB` (or `+0 B`).
    fn bytes_text(&self) -> String {
        let evidence = self.byte_evidence();
        if evidence.is_empty() {
            return format!("prio{}_bytes +0 B", self.priority);
        }
        evidence
            .iter()
            .map(|(name, v)| format!("{name} +{}", bytes_text(*v)))
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// What the configuration says against where the counters moved (`-o json`: `proof`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ConfigProof {
    /// The priority the configuration puts RoCE on; `None` when unknown (unread, PCP
    /// trust, no ToS).
    pub configured_priority: Option<u8>,
    /// Whether PFC is enabled on it.
    pub pfc_on_configured: Option<bool>,
    /// Every priority the driver counts, 0..7.
    pub per_priority: Vec<PriorityCounters>,
    /// The priority that counted the most bytes, when any moved.
    pub busiest_priority: Option<u8>,
    /// RDMA packets sent plus received in the window (the port's counters), when
    /// readable: whether the window had RoCE traffic to prove anything with.
    pub rdma_packets: Option<u64>,
    /// The chain and the counters in words, one line each.
    pub summary: Vec<String>,
}

/// Where RDMA packet counts come from, first found first: the PMA port counters (mlx5),
/// soft-RoCE's own, mlx5's vport RDMA counters in `ethtool -S`.
const RDMA_PACKETS: [[&str; 2]; 3] = [
    ["port_xmit_packets", "port_rcv_packets"],
    ["sent_pkts", "rcvd_pkts"],
    [
        "tx_vport_rdma_unicast_packets",
        "rx_vport_rdma_unicast_packets",
    ],
];

fn rdma_packets(moved: &Counters) -> Option<u64> {
    RDMA_PACKETS.iter().find_map(|pair| {
        let found: Vec<u64> = pair.iter().filter_map(|n| moved.get(*n).copied()).collect();
        (!found.is_empty()).then(|| found.iter().sum())
    })
}

/// Ties the rail's configuration (`dcb`, or why it could not be read) to the window's
/// deltas `moved`; `judged` is the priority the counter rules judged (`--priority`).
pub fn tie(
    dcb: Result<&RailDcb, &str>,
    moved: &Counters,
    judged: u8,
) -> (ConfigProof, Vec<Finding>) {
    let per_priority: Vec<PriorityCounters> = (0..8)
        .filter_map(|p| PriorityCounters::read(moved, p))
        .collect();
    let busiest = per_priority
        .iter()
        .filter(|c| c.bytes() > 0)
        .max_by_key(|c| (c.bytes(), std::cmp::Reverse(c.priority)));
    let rdma = rdma_packets(moved);
    let mut summary = Vec::new();
    let mut findings = Vec::new();
    let (configured, pfc_on) = match dcb {
        Err(why) => {
            summary.push(format!(
                "DCB configuration not read ({why}): the deltas below are not tied to a configured priority"
            ));
            (None, None)
        }
        Ok(config) => {
            summary.push(config.chain_text());
            config_findings(config, judged, &mut findings);
            let roce = config.roce.as_ref();
            (roce.and_then(|r| r.priority), roce.and_then(|r| r.pfc))
        }
    };
    let moved_on = |p: u8| per_priority.iter().find(|c| c.priority == p);
    match (rdma, busiest) {
        _ if per_priority.iter().all(|c| !c.counts_bytes()) => summary.push(
            "the driver counts no per-priority bytes (rx_prio<N>_bytes): where the traffic landed cannot be shown"
                .to_owned(),
        ),
        (None | Some(0), _) => summary.push(
            "no RDMA traffic in the window: the per-priority counters cannot show where RoCE lands (run a workload: -- ib_write_bw ...)"
                .to_owned(),
        ),
        (Some(_), None) => summary.push(
            "RDMA packets moved but no per-priority bytes did: the driver does not count RoCE per priority here"
                .to_owned(),
        ),
        (Some(_), Some(busiest)) => {
            let target = configured.and_then(moved_on);
            match configured {
                Some(p) if busiest.bytes() > target.map_or(0, PriorityCounters::bytes) => {
                    let on_p = target.map_or_else(
                        || format!("priority {p} has no counters"),
                        |c| format!("priority {p}: {}", c.bytes_text()),
                    );
                    let chain = dcb.ok().map(RailDcb::chain_text).unwrap_or_default();
                    summary.push(format!(
                        "the run's traffic was counted on priority {} ({}), not on {p} ({on_p})",
                        busiest.priority,
                        busiest.bytes_text()
                    ));
                    let mut evidence = busiest.byte_evidence();
                    evidence.extend(target.map(PriorityCounters::byte_evidence).unwrap_or_default());
                    findings.push(finding(
                        Severity::Misconfigured,
                        format!(
                            "the configuration puts RoCE on priority {p} ({chain}), but the run's traffic was counted on priority {}: the application marked another ToS (NCCL_IB_TC, UCX_IB_TRAFFIC_CLASS or --tclass unset sends ToS 0), or the peer or switch re-marks it",
                            busiest.priority
                        ),
                        evidence,
                    ));
                }
                Some(p) => {
                    // Its bytes are at least the busiest's, so it has counters.
                    let on_p = target.unwrap_or(busiest);
                    let line = format!(
                        "the run's traffic was counted on priority {p} ({}), pauses on {p}: {}",
                        on_p.bytes_text(),
                        on_p.pauses()
                    );
                    summary.push(line.clone());
                    if pfc_on == Some(true) {
                        findings.push(finding(
                            Severity::Info,
                            format!("{line}: RoCE ran on the priority PFC protects, as configured"),
                            on_p.byte_evidence(),
                        ));
                    }
                }
                None => summary.push(format!(
                    "the run's traffic was counted on priority {} ({}); the configured RoCE priority is unknown",
                    busiest.priority,
                    busiest.bytes_text()
                )),
            }
        }
    }
    let proof = ConfigProof {
        configured_priority: configured,
        pfc_on_configured: pfc_on,
        busiest_priority: busiest.map(|c| c.priority),
        per_priority,
        rdma_packets: rdma,
        summary,
    };
    (proof, findings)
}

/// What the configuration alone shows: RoCE on a priority without PFC (what `dcb.chain`
/// fails), and a `--priority` other than the configured one.
fn config_findings(config: &RailDcb, judged: u8, findings: &mut Vec<Finding>) {
    let Some(roce) = &config.roce else {
        return;
    };
    let Some(priority) = roce.priority else {
        return;
    };
    if roce.pfc == Some(false) {
        let enabled = config.pfc_enabled.as_deref().unwrap_or_default();
        let on = if enabled.is_empty() {
            "no priority".to_owned()
        } else {
            format!("priority {}", list(enabled))
        };
        findings.push(finding(
            Severity::Misconfigured,
            format!(
                "RoCE traffic (ToS {} → DSCP {}) maps to priority {priority}; PFC is enabled on {on}: RoCE is lossy",
                roce.tos, roce.dscp
            ),
            Vec::new(),
        ));
    }
    if priority != judged {
        findings.push(finding(
            Severity::Warning,
            format!(
                "the configuration puts RoCE on priority {priority}, but the counters were judged against --priority {judged}: pass --priority {priority}"
            ),
            Vec::new(),
        ));
    }
}

/// `1.2 GB`, `512 B`: decimal units, one decimal, for a sentence.
pub fn bytes_text(bytes: u64) -> String {
    const UNITS: [&str; 5] = ["kB", "MB", "GB", "TB", "PB"];
    if bytes < 1000 {
        return format!("{bytes} B");
    }
    let mut value = bytes as f64 / 1000.0;
    let mut unit = 0;
    while value >= 999.95 && unit + 1 < UNITS.len() {
        value /= 1000.0;
        unit += 1;
    }
    format!("{value:.1} {}", UNITS[unit])
}
