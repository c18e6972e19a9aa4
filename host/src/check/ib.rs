//! The `ib.*` checks: every RDMA port whose link layer is InfiniBand must be ACTIVE with
//! its link up, hold a LID from a subnet manager that it can name, run at the expected
//! rate and width, and carry the default partition key at P_Key index 0. Ports that are
//! not InfiniBand (RoCE) are listed in the facts and not judged; on a host without an
//! InfiniBand port every `ib.*` check is a skip that says so. Plain functions of
//! [`HostFacts`], called by `rules::judge`.

use dpu_probe::rdma::ib::{
    default_partition_membership, IbPortAttributes, PkeyMembership, LAST_UNICAST_LID,
    PHYS_STATE_LINK_UP, PORT_STATE_ACTIVE, PORT_STATE_ARMED, PORT_STATE_INIT,
};

use super::facts::HostFacts;
use super::verdict::{fail, pass, put, skip, warn, CheckVerdict, Facts, Status};

/// What one port showed for one check; [`summarize`] turns a port list into a verdict.
enum Finding {
    /// As it should be.
    Good(String),
    /// Works, but likely to bite.
    Doubt(String),
    /// Wrong.
    Bad(String),
    /// Could not be judged on this port (an attribute is absent, the link is down).
    NotJudged(String),
}

/// Any bad port fails the check; else any doubtful one warns; a check that could judge
/// no port is a skip; otherwise it passes, naming the ports it could not judge.
fn summarize(findings: &[Finding]) -> CheckVerdict {
    let texts = |wanted: fn(&Finding) -> bool| -> Vec<&str> {
        findings
            .iter()
            .filter(|f| wanted(f))
            .map(Finding::text)
            .collect()
    };
    let good = texts(|f| matches!(f, Finding::Good(_)));
    let doubt = texts(|f| matches!(f, Finding::Doubt(_)));
    let bad = texts(|f| matches!(f, Finding::Bad(_)));
    let not_judged = texts(|f| matches!(f, Finding::NotJudged(_)));
    let also = if not_judged.is_empty() {
        String::new()
    } else {
        format!("; not judged: {}", not_judged.join(", "))
    };
    if !bad.is_empty() {
        fail(bad.join("; "))
    } else if !doubt.is_empty() {
        warn(format!("{}{also}", doubt.join("; ")))
    } else if good.is_empty() {
        skip(not_judged.join("; "))
    } else {
        pass(format!("{}{also}", good.join("; ")))
    }
}

impl Finding {
    fn text(&self) -> &str {
        match self {
            Self::Good(s) | Self::Doubt(s) | Self::Bad(s) | Self::NotJudged(s) => s,
        }
    }
}

/// One InfiniBand port as facts: the same record in every `ib.*` check.
fn port_record(p: &IbPortAttributes) -> Facts {
    let mut r = Facts::new();
    r.insert("port", p.name().into());
    r.insert("rdma_device", (&p.ibdev).into());
    r.insert("rdma_port", p.port.into());
    put(&mut r, "state", p.state.as_ref().map(|s| s.code));
    put(
        &mut r,
        "state_text",
        p.state.as_ref().map(|s| s.name.as_str()),
    );
    put(&mut r, "phys_state", p.phys_state.as_ref().map(|s| s.code));
    put(
        &mut r,
        "phys_state_text",
        p.phys_state.as_ref().map(|s| s.name.as_str()),
    );
    put(&mut r, "lid", p.lid);
    put(&mut r, "sm_lid", p.sm_lid);
    put(&mut r, "sm_sl", p.sm_sl.map(u32::from));
    put(&mut r, "rate_gbps", p.rate.as_ref().map(|r| r.gbps));
    put(&mut r, "width", p.rate.as_ref().map(|r| r.width));
    put(
        &mut r,
        "speed",
        p.rate.as_ref().and_then(|r| r.speed.as_deref()),
    );
    put(&mut r, "default_pkey", p.default_pkey.map(u32::from));
    put(
        &mut r,
        "pkey_membership",
        p.default_pkey
            .and_then(default_partition_membership)
            .map(|m| match m {
                PkeyMembership::Full => "full",
                PkeyMembership::Limited => "limited",
            }),
    );
    r
}

/// The InfiniBand ports, with every port recorded in `f` (`ports`: the InfiniBand ones,
/// `other_ports`: the rest with their link layer); or the skip when there is none.
fn infiniband_ports<'a>(
    host: &'a HostFacts,
    f: &mut Facts,
) -> Result<Vec<&'a IbPortAttributes>, CheckVerdict> {
    let all = match &host.ib_ports {
        Ok(all) => all,
        Err(e) => return Err(skip(format!("cannot read the RDMA ports: {e}"))),
    };
    let (ib, others): (Vec<&IbPortAttributes>, Vec<&IbPortAttributes>) =
        all.iter().partition(|p| p.is_infiniband());
    let records: Vec<Facts> = ib.iter().map(|p| port_record(p)).collect();
    f.insert("ports", records.into());
    let other_records: Vec<Facts> = others
        .iter()
        .map(|p| {
            let mut r = Facts::new();
            r.insert("port", p.name().into());
            r.insert("link_layer", link_layer(p).into());
            r
        })
        .collect();
    f.insert("other_ports", other_records.into());
    if !ib.is_empty() {
        return Ok(ib);
    }
    if others.is_empty() {
        return Err(skip("no InfiniBand port: this host has no RDMA port"));
    }
    let seen: Vec<String> = others
        .iter()
        .map(|p| match link_layer(p) {
            "Ethernet" => format!("{} Ethernet (RoCE)", p.name()),
            other => format!("{} {other}", p.name()),
        })
        .collect();
    Err(skip(format!(
        "no InfiniBand port ({}): LIDs, the subnet manager and P_Keys exist only on InfiniBand",
        seen.join(", ")
    )))
}

fn link_layer(p: &IbPortAttributes) -> &str {
    p.link_layer.as_deref().unwrap_or("unknown")
}

/// Runs `judge_port` over the InfiniBand ports (or returns the skip).
fn each_port(
    host: &HostFacts,
    f: &mut Facts,
    judge_port: impl Fn(&IbPortAttributes) -> Finding,
) -> CheckVerdict {
    match infiniband_ports(host, f) {
        Ok(ports) => summarize(&ports.into_iter().map(judge_port).collect::<Vec<_>>()),
        Err(skipped) => skipped,
    }
}

/// `ib.port`: ACTIVE and LinkUp; a link that is up on a port stuck in INIT means no
/// subnet manager configured it.
pub(super) fn port_state(host: &HostFacts, f: &mut Facts) -> CheckVerdict {
    each_port(host, f, |p| {
        let name = p.name();
        let (Some(state), Some(phys)) = (&p.state, &p.phys_state) else {
            return Finding::NotJudged(format!("{name} (no state or phys_state file)"));
        };
        let seen = format!(
            "{name} state {} ({}), phys_state {} ({})",
            state.code, state.name, phys.code, phys.name
        );
        let link_up = phys.code == PHYS_STATE_LINK_UP;
        match state.code {
            PORT_STATE_ACTIVE if link_up => Finding::Good(format!("{name} ACTIVE, LinkUp")),
            PORT_STATE_INIT if link_up => Finding::Bad(format!(
                "{seen}: the link is up but no subnet manager answered (the port was never configured)"
            )),
            PORT_STATE_ARMED if link_up => Finding::Bad(format!(
                "{seen}: the subnet manager configured the port but has not activated it"
            )),
            _ if link_up => Finding::Bad(format!("{seen}: link up but the port is not ACTIVE")),
            _ => Finding::Bad(format!(
                "{seen}: the physical link is down (cable, transceiver or switch port)"
            )),
        }
    })
}

/// `ib.lid`: a unicast LID, which only a subnet manager assigns.
pub(super) fn lid_assigned(host: &HostFacts, f: &mut Facts) -> CheckVerdict {
    each_port(host, f, |p| {
        let name = p.name();
        match p.lid {
            None => Finding::NotJudged(format!("{name} (no lid file)")),
            Some(0) => Finding::Bad(format!(
                "{name} LID 0x0: no LID assigned, no subnet manager answered"
            )),
            Some(lid) if lid > LAST_UNICAST_LID => Finding::Bad(format!(
                "{name} LID {lid:#x} is not a unicast LID (0x1-{LAST_UNICAST_LID:#x})"
            )),
            Some(lid) => Finding::Good(format!("{name} LID {lid:#x}")),
        }
    })
}

/// `ib.sm`: the port knows its subnet manager's LID (and the SL to reach it).
pub(super) fn subnet_manager(host: &HostFacts, f: &mut Facts) -> CheckVerdict {
    each_port(host, f, |p| {
        let name = p.name();
        match p.sm_lid {
            None => Finding::NotJudged(format!("{name} (no sm_lid file)")),
            Some(0) => Finding::Bad(format!(
                "{name} SM LID 0x0: no subnet manager answered (none runs on the fabric, or it cannot reach this port)"
            )),
            Some(sm) => Finding::Good(match p.sm_sl {
                Some(sl) => format!("{name} SM at LID {sm:#x}, SL {sl}"),
                None => format!("{name} SM at LID {sm:#x}"),
            }),
        }
    })
}

/// `ib.rate`: at least `expected` Gbit/s when given; without it, a width below 4X warns.
/// Only ports with a trained link have a rate to judge.
pub(super) fn rate(host: &HostFacts, expected: Option<u32>, f: &mut Facts) -> CheckVerdict {
    put(f, "expected_rate_gbps", expected);
    let verdict = each_port(host, f, |p| {
        let name = p.name();
        let link_up = p.phys_state.as_ref().map(|s| s.code) == Some(PHYS_STATE_LINK_UP);
        if !link_up {
            return Finding::NotJudged(format!("{name} (link not up)"));
        }
        let Some(rate) = &p.rate else {
            return Finding::NotJudged(format!("{name} (no rate)"));
        };
        let speed = rate
            .speed
            .as_deref()
            .map(|s| format!(" {s}"))
            .unwrap_or_default();
        let seen = format!("{name} {} Gb/s ({}X{speed})", rate.gbps, rate.width);
        match expected {
            Some(want) if rate.gbps < f64::from(want) => {
                Finding::Bad(format!("{seen}, below the required {want} Gb/s"))
            }
            Some(_) => Finding::Good(seen),
            None if rate.width < 4 => Finding::Doubt(format!(
                "{seen}: narrower than 4X (a lane or cable fault, or a split port)"
            )),
            None => Finding::Good(seen),
        }
    });
    match (expected, verdict.status) {
        (None, Status::Pass) => pass(format!(
            "{}; pass --ib-rate GBPS to require a rate",
            verdict.detail
        )),
        _ => verdict,
    }
}

/// `ib.pkey`: P_Key index 0 holds the default partition key (0xffff full, 0x7fff
/// limited membership), the key verbs users get unless they choose another index.
pub(super) fn default_pkey(host: &HostFacts, f: &mut Facts) -> CheckVerdict {
    each_port(host, f, |p| {
        let name = p.name();
        let Some(pkey) = p.default_pkey else {
            return Finding::Bad(format!(
                "{name} has no P_Key at index 0 (no pkeys/0): the default partition key is missing"
            ));
        };
        match default_partition_membership(pkey) {
            Some(PkeyMembership::Full) => Finding::Good(format!(
                "{name} P_Key[0] {pkey:#06x} (default partition, full member)"
            )),
            Some(PkeyMembership::Limited) => Finding::Doubt(format!(
                "{name} P_Key[0] {pkey:#06x}: a limited member of the default partition reaches only full members"
            )),
            None if pkey & 0x7fff == 0 => Finding::Bad(format!(
                "{name} P_Key[0] {pkey:#06x} is empty: the default partition key is missing"
            )),
            None => Finding::Bad(format!(
                "{name} P_Key[0] {pkey:#06x} is not the default partition key (0xffff or 0x7fff)"
            )),
        }
    })
}
