//! The `dcb.*` checks: is RoCE lossless on each rail? RoCE traffic gets a ToS (the
//! rdma_cm default, from configfs), the ToS a DSCP (`tos >> 2`), the port's trust mode
//! and APP table a priority, and PFC must make exactly that priority lossless; ETS must
//! leave its traffic class some bandwidth. Each link of that chain is read from the
//! kernel (`RTM_GETDCB`, [`dpu_probe::dcb`]); a mismatch is named with the numbers
//! ("RoCE traffic (ToS 106 → DSCP 26) maps to priority 3; PFC is enabled on priority 4").
//! Sources and what is unverified: `docs/reference/dcb-netlink.md`.
//!
//! The checks take [`DcbFacts`] (the foundation `crate::facts::dcb`) and the rail's name
//! rather than the whole `HostFacts`.

use dpu_probe::dcb::{tsa_name, DcbConfig, RoceTos, TSA_ETS};

use super::verdict::{fail, pass, put, skip, warn, CheckVerdict, Facts};
use crate::facts::dcb::{DcbFacts, DcbRail};

/// Where RoCE traffic of a rail lands: ToS → DSCP → priority.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Chain {
    tos: u8,
    dscp: u8,
    /// `None` under PCP trust: the priority is the frame's VLAN PCP, not the ToS.
    priority: Option<u8>,
    /// How the priority was found (`app-table`, `default-dscp-map`, `pcp-trust`).
    priority_source: &'static str,
}

fn chain(config: &DcbConfig, tos: &RoceTos) -> Chain {
    let dscp = tos.dscp();
    let (priority, priority_source) = if !config.trusts_dscp() {
        (None, "pcp-trust")
    } else if let Some(priority) = config.dscp_priority(dscp) {
        (Some(priority), "app-table")
    } else {
        // mlx5 keeps a DSCP → priority table in firmware whose default is DSCP >> 3
        // (UNVERIFIED on hardware); the APP table shows only entries someone set.
        (Some(dscp >> 3), "default-dscp-map")
    };
    Chain {
        tos: tos.tos,
        dscp,
        priority,
        priority_source,
    }
}

/// The rail's DCB configuration, or the skip that says why there is none.
fn rail<'a>(
    dcb: &'a DcbFacts,
    ifname: Option<&str>,
    f: &mut Facts,
) -> Result<(&'a DcbConfig, &'a DcbRail), CheckVerdict> {
    let ifname = ifname.ok_or_else(|| skip("no RDMA data interface found on this host"))?;
    f.insert("interface", ifname.into());
    let rail = dcb
        .rails
        .get(ifname)
        .ok_or_else(|| skip(format!("the DCB configuration of {ifname} was not read")))?;
    let config = rail.config.as_ref().map_err(|e| skip(e.clone()))?;
    Ok((config, rail))
}

/// The rail's chain, or the skip that says why the ToS is unknown.
fn rail_chain(config: &DcbConfig, rail: &DcbRail, f: &mut Facts) -> Result<Chain, CheckVerdict> {
    let tos = rail.tos.as_ref().map_err(|e| skip(e.clone()))?;
    let chain = chain(config, tos);
    f.insert("roce_tos", u32::from(chain.tos).into());
    f.insert(
        "tos_source",
        tos.file
            .as_ref()
            .map_or("rdma_cm default (no configfs entry)".to_owned(), |p| {
                p.display().to_string()
            })
            .into(),
    );
    f.insert("dscp", u32::from(chain.dscp).into());
    f.insert("priority_source", chain.priority_source.into());
    put(f, "roce_priority", chain.priority.map(u32::from));
    Ok(chain)
}

fn list(priorities: &[u8]) -> String {
    let names: Vec<String> = priorities.iter().map(u8::to_string).collect();
    match names.len() {
        0 => "no priority".to_owned(),
        1 => format!("priority {}", names[0]),
        _ => format!("priorities {}", names.join(", ")),
    }
}

fn enabled_facts(f: &mut Facts, enabled: &[u8]) {
    let values: Vec<u32> = enabled.iter().map(|p| u32::from(*p)).collect();
    f.insert("pfc_enabled", values.into());
}

/// `dcb.pfc`: PFC enabled on exactly the priority RoCE traffic maps to.
pub(super) fn pfc(dcb: &DcbFacts, ifname: Option<&str>, f: &mut Facts) -> CheckVerdict {
    let (config, rail) = match rail(dcb, ifname, f) {
        Ok(found) => found,
        Err(verdict) => return verdict,
    };
    let Some(pfc) = config.pfc else {
        return skip(format!(
            "{} reports no IEEE PFC configuration",
            config.ifname
        ));
    };
    let enabled = pfc.enabled_priorities();
    enabled_facts(f, &enabled);
    f.insert("pfc_cap", u32::from(pfc.pfc_cap).into());
    if enabled.is_empty() {
        return fail(format!(
            "PFC is off on every priority of {}: RoCE traffic is lossy, every drop costs a go-back-N retransmission",
            config.ifname
        ));
    }
    let chain = match rail_chain(config, rail, f) {
        Ok(chain) => chain,
        Err(verdict) => return verdict,
    };
    let Some(priority) = chain.priority else {
        let note = "trust PCP: RoCE must be sent with that PCP (service level / VLAN egress map)";
        return if enabled.len() == 1 {
            pass(format!("PFC on {} only; {note}", list(&enabled)))
        } else {
            warn(format!("PFC on {}; {note}", list(&enabled)))
        };
    };
    if !pfc.is_enabled(priority) {
        return fail(format!(
            "PFC is enabled on {} but RoCE traffic (DSCP {}) maps to priority {priority}: RoCE is lossy",
            list(&enabled),
            chain.dscp
        ));
    }
    if enabled.len() > 1 {
        return warn(format!(
            "PFC on {}: the RoCE priority {priority} and others; every extra lossless priority takes buffer and can spread pause storms",
            list(&enabled)
        ));
    }
    pass(format!(
        "PFC on priority {priority} only, the RoCE priority (DSCP {} → priority {priority})",
        chain.dscp
    ))
}

/// `dcb.trust`: the port classifies by DSCP (APP table DSCP entries) rather than PCP.
pub(super) fn trust(dcb: &DcbFacts, ifname: Option<&str>, f: &mut Facts) -> CheckVerdict {
    let (config, _) = match rail(dcb, ifname, f) {
        Ok(found) => found,
        Err(verdict) => return verdict,
    };
    let entries = config.dscp_entries();
    f.insert("dscp_entries", (entries.len() as u64).into());
    if entries.is_empty() {
        f.insert("trust", "pcp".into());
        return warn(format!(
            "{} trusts PCP (no DSCP entries in the APP table): a routed RoCE v2 fabric carries no VLAN tag across L3 hops, so the priority must come from DSCP",
            config.ifname
        ));
    }
    f.insert("trust", "dscp".into());
    pass(format!(
        "{} trusts DSCP ({} DSCP → priority entries in the APP table)",
        config.ifname,
        entries.len()
    ))
}

/// `dcb.chain`: ToS → DSCP → priority → PFC on that priority, as one named chain.
pub(super) fn roce_chain(dcb: &DcbFacts, ifname: Option<&str>, f: &mut Facts) -> CheckVerdict {
    let (config, rail) = match rail(dcb, ifname, f) {
        Ok(found) => found,
        Err(verdict) => return verdict,
    };
    let chain = match rail_chain(config, rail, f) {
        Ok(chain) => chain,
        Err(verdict) => return verdict,
    };
    let Some(priority) = chain.priority else {
        return skip(format!(
            "{} trusts PCP: the priority comes from the VLAN PCP, not the ToS (see dcb.trust)",
            config.ifname
        ));
    };
    let Some(pfc) = config.pfc else {
        return skip(format!(
            "{} reports no IEEE PFC configuration",
            config.ifname
        ));
    };
    let enabled = pfc.enabled_priorities();
    enabled_facts(f, &enabled);
    let how = match chain.priority_source {
        "app-table" => "by the APP table",
        _ => "by the default DSCP>>3 map (no APP entry)",
    };
    let head = format!(
        "RoCE traffic (ToS {} → DSCP {}) maps to priority {priority} {how}",
        chain.tos, chain.dscp
    );
    if pfc.is_enabled(priority) {
        pass(format!("{head}; PFC is enabled on priority {priority}"))
    } else {
        fail(format!(
            "RoCE traffic (ToS {} → DSCP {}) maps to priority {priority}; PFC is enabled on {}",
            chain.tos,
            chain.dscp,
            list(&enabled)
        ))
    }
}

/// `dcb.ets`: ETS shares per traffic class and the priority → class map; the RoCE class
/// must not have 0 % under ETS.
pub(super) fn ets(dcb: &DcbFacts, ifname: Option<&str>, f: &mut Facts) -> CheckVerdict {
    let (config, rail) = match rail(dcb, ifname, f) {
        Ok(found) => found,
        Err(verdict) => return verdict,
    };
    let Some(ets) = config.ets else {
        return skip(format!(
            "{} reports no IEEE ETS configuration",
            config.ifname
        ));
    };
    let classes = usize::from(ets.ets_cap.clamp(1, 8));
    let bw: Vec<u32> = ets.tc_tx_bw[..classes]
        .iter()
        .map(|b| u32::from(*b))
        .collect();
    let tsa: Vec<&str> = ets.tc_tsa[..classes].iter().map(|t| tsa_name(*t)).collect();
    let prio_tc: Vec<u32> = ets.prio_tc.iter().map(|t| u32::from(*t)).collect();
    f.insert("tc_tx_bw", bw.clone().into());
    f.insert("tc_tsa", tsa.clone().into());
    f.insert("prio_tc", prio_tc.into());
    let shares: Vec<String> = (0..classes)
        .map(|tc| match ets.tc_tsa[tc] {
            TSA_ETS => format!("TC{tc} ets {}%", ets.tc_tx_bw[tc]),
            other => format!("TC{tc} {}", tsa_name(other)),
        })
        .collect();
    let map: Vec<String> = ets
        .prio_tc
        .iter()
        .enumerate()
        .map(|(p, tc)| format!("{p}:{tc}"))
        .collect();
    let report = format!("{}; prio:tc {}", shares.join(", "), map.join(" "));
    let priority = rail_chain(config, rail, f).ok().and_then(|c| c.priority);
    let Some(priority) = priority else {
        return pass(format!("{report} (RoCE priority unknown: not judged)"));
    };
    let tc = ets.prio_tc[usize::from(priority & 7)];
    f.insert("roce_tc", u32::from(tc).into());
    let tc_index = usize::from(tc & 7);
    if ets.tc_tsa[tc_index] == TSA_ETS && ets.tc_tx_bw[tc_index] == 0 {
        return warn(format!(
            "the RoCE priority {priority} is in TC{tc}, which has 0% under ETS: RoCE starves whenever other classes are busy; {report}"
        ));
    }
    pass(format!("RoCE priority {priority} → TC{tc}; {report}"))
}
