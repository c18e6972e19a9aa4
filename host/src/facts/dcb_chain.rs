//! One rail's DCB configuration as the RoCE tools use it: the view `dpuctl roce dcb`
//! reports beside the counter deltas that prove it ([`RailDcb`]), and the traffic class
//! `dpuctl check --env` sets so that NCCL, UCX and perftest land on a lossless priority
//! ([`lossless_tos`]). Pure functions of what the `dcb.*` checks read
//! ([`DcbFacts`]: `RTM_GETDCB` and the rdma_cm configfs ToS).
//!
//! The chain is the one `dcb.chain` judges: ToS → DSCP (`ToS >> 2`) → priority (the APP
//! table's DSCP entry; under DSCP trust without an entry, mlx5's default map `DSCP >> 3`,
//! UNVERIFIED on hardware) → PFC on that priority → its ETS traffic class. Sources:
//! `docs/reference/dcb-netlink.md`.

use dpu_probe::dcb::{tsa_name, DcbConfig, RoceTos};
use serde::Serialize;

use super::dcb::DcbFacts;

/// The DSCP RoCE conventionally uses (NVIDIA's RoCE QoS guides; UCX's
/// `UCX_IB_TRAFFIC_CLASS=auto` picks ToS 106 on RoCE v2, which is DSCP 26): preferred when
/// it lands on a lossless priority, so the settings match what the fabric expects.
pub const ROCE_DSCP: u8 = 26;

/// ECN bits `10`, ECT(0): the low two bits of ToS 106 (ECN-capable transport, so switches
/// can mark congestion instead of dropping).
pub const ECT0: u8 = 0b10;

/// The ToS byte (`DSCP << 2 | ECN`) that carries `dscp` with ECT(0): the value
/// `NCCL_IB_TC`, `UCX_IB_TRAFFIC_CLASS` and perftest's `--tclass` take (each writes it
/// into the GRH traffic class, which RoCE v2 sends as the IP ToS).
pub fn tos_of(dscp: u8) -> u8 {
    (dscp << 2) | ECT0
}

/// How a DSCP value got its priority.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum PrioritySource {
    /// The APP table has an entry for it (`dcb app show dscp-prio`).
    AppTable,
    /// No entry: mlx5's default DSCP → priority map, `DSCP >> 3` (UNVERIFIED on hardware).
    DefaultDscpMap,
}

impl PrioritySource {
    /// How it reads in a sentence.
    pub fn words(self) -> &'static str {
        match self {
            Self::AppTable => "by the APP table",
            Self::DefaultDscpMap => "by the default DSCP>>3 map (no APP entry)",
        }
    }
}

/// The priority `dscp` lands on: `None` under PCP trust (no DSCP entries in the APP
/// table), where the priority is the frame's VLAN PCP, not anything in the ToS.
pub fn dscp_priority(config: &DcbConfig, dscp: u8) -> Option<(u8, PrioritySource)> {
    if !config.trusts_dscp() {
        return None;
    }
    Some(match config.dscp_priority(dscp) {
        Some(priority) => (priority, PrioritySource::AppTable),
        None => (dscp >> 3, PrioritySource::DefaultDscpMap),
    })
}

/// A DSCP value that lands on a priority PFC makes lossless.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct LosslessDscp {
    /// The DSCP value.
    pub dscp: u8,
    /// Its priority, which has PFC.
    pub priority: u8,
    /// How it got that priority.
    pub source: PrioritySource,
}

/// Every DSCP (0..=63) whose priority has PFC, ascending; empty under PCP trust, without
/// an IEEE PFC configuration, or with PFC off everywhere.
pub fn lossless_dscps(config: &DcbConfig) -> Vec<LosslessDscp> {
    let Some(pfc) = config.pfc else {
        return Vec::new();
    };
    (0..64u8)
        .filter_map(|dscp| {
            let (priority, source) = dscp_priority(config, dscp)?;
            pfc.is_enabled(priority).then_some(LosslessDscp {
                dscp,
                priority,
                source,
            })
        })
        .collect()
}

/// How the port classifies received and sent RoCE frames.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Trust {
    /// By the DSCP of the IP header (the APP table has DSCP entries).
    Dscp,
    /// By the VLAN PCP (no DSCP entries).
    Pcp,
}

/// One APP table entry mapping a DSCP value to a priority.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct DscpEntry {
    /// The DSCP value.
    pub dscp: u16,
    /// Its priority.
    pub priority: u8,
}

/// ETS as configured: each traffic class's share and algorithm, each priority's class.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct EtsShares {
    /// Transmit bandwidth percent per traffic class (the classes the port has).
    pub tc_tx_bw: Vec<u8>,
    /// Each class's algorithm (`ets`, `strict`, `vendor`, ...).
    pub tc_tsa: Vec<&'static str>,
    /// The traffic class of each priority 0..7.
    pub prio_tc: [u8; 8],
}

/// Where RoCE traffic of the rail lands by its rdma_cm default ToS.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RoceChain {
    /// The rdma_cm default ToS.
    pub tos: u8,
    /// The configfs file it came from, or that the kernel default applies.
    pub tos_source: String,
    /// `tos >> 2`.
    pub dscp: u8,
    /// Its priority; `None` under PCP trust.
    pub priority: Option<u8>,
    /// How it got that priority.
    pub priority_source: Option<PrioritySource>,
    /// Whether PFC is enabled on that priority (`None`: unknown).
    pub pfc: Option<bool>,
    /// The ETS traffic class of that priority, when ETS is reported.
    pub traffic_class: Option<u8>,
}

/// One rail's DCB configuration, as `roce dcb` reports it (`-o json`: the `dcb` object).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RailDcb {
    /// The interface the answer describes.
    pub interface: String,
    /// DSCP or PCP trust.
    pub trust: Trust,
    /// The priorities PFC makes lossless; `None` when the driver reports no IEEE PFC.
    pub pfc_enabled: Option<Vec<u8>>,
    /// The APP table's DSCP → priority entries (64 on mlx5 under DSCP trust).
    pub dscp_map: Vec<DscpEntry>,
    /// ETS, when the driver reports it.
    pub ets: Option<EtsShares>,
    /// Every DSCP that lands on a PFC priority (what a sender must mark to be lossless).
    pub lossless_dscps: Vec<LosslessDscp>,
    /// The chain of the rdma_cm default ToS; `None` when the ToS is unknown.
    pub roce: Option<RoceChain>,
    /// Why the ToS is unknown (no RDMA port, an unreadable configfs file).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub roce_unknown: Option<String>,
}

impl RailDcb {
    /// The view of `config` with the rail's rdma_cm default ToS (or why it is unknown).
    pub fn new(config: &DcbConfig, tos: Result<&RoceTos, &str>) -> Self {
        let ets = config.ets.map(|ets| {
            let classes = usize::from(ets.ets_cap.clamp(1, 8));
            EtsShares {
                tc_tx_bw: ets.tc_tx_bw[..classes].to_vec(),
                tc_tsa: ets.tc_tsa[..classes].iter().map(|t| tsa_name(*t)).collect(),
                prio_tc: ets.prio_tc,
            }
        });
        let (roce, roce_unknown) = match tos {
            Ok(tos) => (Some(chain(config, tos)), None),
            Err(why) => (None, Some(why.to_owned())),
        };
        Self {
            interface: config.ifname.clone(),
            trust: if config.trusts_dscp() {
                Trust::Dscp
            } else {
                Trust::Pcp
            },
            pfc_enabled: config.pfc.map(|p| p.enabled_priorities()),
            dscp_map: config
                .dscp_entries()
                .into_iter()
                .map(|(dscp, priority)| DscpEntry { dscp, priority })
                .collect(),
            ets,
            lossless_dscps: lossless_dscps(config),
            roce,
            roce_unknown,
        }
    }

    /// The view of rail `ifname` from what the `dcb.*` checks read, or why there is none
    /// (not read, not the live system, no DCB support).
    pub fn from_facts(facts: &DcbFacts, ifname: &str) -> Result<Self, String> {
        let rail = facts
            .rails
            .get(ifname)
            .ok_or_else(|| format!("the DCB configuration of {ifname} was not read"))?;
        let config = rail.config.as_ref().map_err(Clone::clone)?;
        Ok(Self::new(config, rail.tos.as_ref().map_err(String::as_str)))
    }

    /// The priority the configuration puts RoCE (its rdma_cm default ToS) on.
    pub fn roce_priority(&self) -> Option<u8> {
        self.roce.as_ref()?.priority
    }

    /// `RoCE ToS 106 → DSCP 26 → priority 3 (by the APP table); PFC enabled on 3`: the
    /// chain in one line, naming what breaks it.
    pub fn chain_text(&self) -> String {
        let pfc = match &self.pfc_enabled {
            None => "no IEEE PFC configuration reported".to_owned(),
            Some(on) if on.is_empty() => "PFC enabled on no priority".to_owned(),
            Some(on) => format!("PFC enabled on {}", list(on)),
        };
        let Some(roce) = &self.roce else {
            let why = self.roce_unknown.as_deref().unwrap_or("unknown");
            return format!("RoCE ToS unknown ({why}); {pfc}");
        };
        let head = format!("RoCE ToS {} → DSCP {}", roce.tos, roce.dscp);
        match (roce.priority, roce.priority_source) {
            (Some(priority), Some(source)) => {
                format!("{head} → priority {priority} ({}); {pfc}", source.words())
            }
            _ => format!(
                "{head}; {} trusts PCP: the priority is the VLAN PCP, not the ToS; {pfc}",
                self.interface
            ),
        }
    }
}

fn chain(config: &DcbConfig, tos: &RoceTos) -> RoceChain {
    let dscp = tos.dscp();
    let found = dscp_priority(config, dscp);
    let priority = found.map(|(p, _)| p);
    RoceChain {
        tos: tos.tos,
        tos_source: tos.file.as_ref().map_or_else(
            || "the kernel default (no rdma_cm configfs entry)".to_owned(),
            |p| p.display().to_string(),
        ),
        dscp,
        priority,
        priority_source: found.map(|(_, s)| s),
        pfc: priority.and_then(|p| Some(config.pfc?.is_enabled(p))),
        traffic_class: priority.and_then(|p| Some(config.ets?.prio_tc[usize::from(p & 7)])),
    }
}

/// `3` or `3, 4`, or `none`.
pub fn list(priorities: &[u8]) -> String {
    if priorities.is_empty() {
        return "none".to_owned();
    }
    let names: Vec<String> = priorities.iter().map(u8::to_string).collect();
    names.join(", ")
}

/// One rail as [`lossless_tos`] weighs it: its interface, DCB configuration (DSCP trust,
/// PFC reported) and rdma_cm default ToS when known.
#[derive(Debug, Clone, Copy)]
pub struct TosRail<'a> {
    /// The rail's interface.
    pub ifname: &'a str,
    /// Its DCB configuration.
    pub config: &'a DcbConfig,
    /// Its rdma_cm default ToS.
    pub rdma_cm: Option<&'a RoceTos>,
}

/// The ToS chosen for every rail, and why that one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LosslessTos {
    /// The ToS byte.
    pub tos: u8,
    /// Its DSCP.
    pub dscp: u8,
    /// On each rail, in order: its interface and where the DSCP lands there.
    pub rails: Vec<(String, LosslessDscp)>,
    /// Why this DSCP among the lossless ones (`the rdma_cm default ToS of IF`, ...).
    pub chosen_because: String,
}

/// No DSCP lands on a PFC priority of every rail: what each rail makes lossless.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("no DSCP maps to a PFC-enabled priority on every rail: {}", .rails.join("; "))]
pub struct NoLosslessDscp {
    /// One line per rail: `IF: PFC on 4; DSCP 32..39 land there` or why nothing does.
    pub rails: Vec<String>,
}

/// The ToS that lands on a PFC-enabled priority on every rail, for the one traffic class
/// NCCL and UCX take. Preferred, in order: the first rail's rdma_cm default ToS (so
/// rdma_cm and verbs traffic agree), DSCP 26 (the RoCE convention, ToS 106), the lowest
/// DSCP the APP table maps to a PFC priority on every rail, the lowest the default map
/// does. Refused, naming each rail's PFC priorities, when no DSCP is lossless everywhere.
pub fn lossless_tos(rails: &[TosRail<'_>]) -> Result<LosslessTos, NoLosslessDscp> {
    if rails.is_empty() {
        return Err(NoLosslessDscp { rails: Vec::new() });
    }
    let per_rail: Vec<Vec<LosslessDscp>> = rails.iter().map(|r| lossless_dscps(r.config)).collect();
    let on_every_rail = |dscp: u8| -> Option<Vec<LosslessDscp>> {
        per_rail
            .iter()
            .map(|set| set.iter().find(|l| l.dscp == dscp).copied())
            .collect()
    };
    let everywhere: Vec<(u8, Vec<LosslessDscp>)> = (0..64u8)
        .filter_map(|dscp| Some((dscp, on_every_rail(dscp)?)))
        .collect();
    let explicit = |(_, found): &&(u8, Vec<LosslessDscp>)| {
        found.iter().all(|l| l.source == PrioritySource::AppTable)
    };
    let from_rdma_cm = rails.first().and_then(|r| r.rdma_cm).and_then(|tos| {
        let found = everywhere.iter().find(|(d, _)| *d == tos.dscp())?;
        Some((
            tos.tos,
            found,
            format!("the rdma_cm default ToS of {}", rails[0].ifname),
        ))
    });
    let chosen = from_rdma_cm
        .or_else(|| {
            let found = everywhere.iter().find(|(d, _)| *d == ROCE_DSCP)?;
            Some((
                tos_of(ROCE_DSCP),
                found,
                format!("DSCP {ROCE_DSCP}, the RoCE convention"),
            ))
        })
        .or_else(|| {
            let found = everywhere.iter().find(explicit)?;
            Some((
                tos_of(found.0),
                found,
                "the lowest DSCP the APP table maps to a PFC priority".to_owned(),
            ))
        })
        .or_else(|| {
            let found = everywhere.first()?;
            Some((
                tos_of(found.0),
                found,
                "the lowest DSCP the default DSCP>>3 map puts on a PFC priority (UNVERIFIED on hardware)"
                    .to_owned(),
            ))
        });
    let Some((tos, (dscp, found), chosen_because)) = chosen else {
        return Err(NoLosslessDscp {
            rails: rails
                .iter()
                .zip(&per_rail)
                .map(|(r, set)| describe_rail(r, set))
                .collect(),
        });
    };
    Ok(LosslessTos {
        tos,
        dscp: *dscp,
        rails: rails
            .iter()
            .map(|r| r.ifname.to_owned())
            .zip(found.iter().copied())
            .collect(),
        chosen_because,
    })
}

/// What one rail makes lossless, for a refusal.
fn describe_rail(rail: &TosRail<'_>, lossless: &[LosslessDscp]) -> String {
    let enabled = rail
        .config
        .pfc
        .map(|p| p.enabled_priorities())
        .unwrap_or_default();
    if enabled.is_empty() {
        return format!("{}: PFC is enabled on no priority", rail.ifname);
    }
    if lossless.is_empty() {
        return format!(
            "{}: PFC on {}, but no DSCP maps there (the APP table maps {})",
            rail.ifname,
            list(&enabled),
            app_summary(rail.config)
        );
    }
    let dscps: Vec<u8> = lossless.iter().map(|l| l.dscp).collect();
    format!(
        "{}: PFC on {}, reached by DSCP {}",
        rail.ifname,
        list(&enabled),
        ranges(&dscps)
    )
}

/// `24..31, 48` for an ascending list of values.
pub fn ranges(values: &[u8]) -> String {
    let mut out: Vec<String> = Vec::new();
    let mut i = 0;
    while let Some(&start) = values.get(i) {
        let mut end = start;
        while values.get(i + 1) == Some(&end.wrapping_add(1)) {
            end += 1;
            i += 1;
        }
        out.push(if end == start {
            start.to_string()
        } else {
            format!("{start}..{end}")
        });
        i += 1;
    }
    out.join(", ")
}

/// `26→3, 48→6`, shortened after eight entries.
fn app_summary(config: &DcbConfig) -> String {
    let entries = config.dscp_entries();
    let mut shown: Vec<String> = entries
        .iter()
        .take(8)
        .map(|(d, p)| format!("{d}→{p}"))
        .collect();
    if entries.len() > 8 {
        shown.push(format!("... {} entries", entries.len()));
    }
    shown.join(", ")
}
