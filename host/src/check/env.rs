//! `dpuctl check --env`: the settings the checked fabric needs (NCCL, UCX, perftest),
//! derived from the facts the checks judged, as `export NAME=value` lines for `eval`.
//! A pure function of the results (and, for the traffic class, of each rail's DCB
//! configuration): it refuses, rather than guessing, when a check those values depend on
//! failed or did not find them, or when no DSCP reaches a PFC-enabled priority.

use std::fmt;

use serde::ser::{Serialize, SerializeMap, Serializer};

use super::rules::{FactValue, Status};
use super::CheckResult;
use crate::facts::dcb::DcbFacts;
use crate::facts::dcb_chain::{lossless_dscps, lossless_tos, LosslessTos, TosRail};

/// The checks whose facts the settings are made of: the interface, the RDMA device and
/// port, the port being usable, the link layer and (RoCE) the GID index.
pub const DEPENDS_ON: &[&str] = &[
    "netdev.up",
    "rdma.bound",
    "rdma.port",
    "rdma.link-layer",
    "rdma.gid",
];

/// One environment variable.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EnvVar {
    /// Its name (`NCCL_IB_GID_INDEX`).
    pub name: &'static str,
    /// Its value, unquoted (`3`).
    pub value: String,
}

/// The fabric's settings, in the order they print. Serializes as a JSON object
/// `{"NCCL_IB_HCA": "mlx5_0:1", ...}` (values are strings, as in the environment); the
/// notes are not part of it (they go to stderr).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FabricEnv {
    /// The variables.
    pub vars: Vec<EnvVar>,
    /// What a reader of the settings should know: how the traffic class was chosen, or
    /// why none is set, and rdma_cm default ToS values that differ from it.
    pub notes: Vec<String>,
}

impl FabricEnv {
    /// A variable's value by name.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.vars
            .iter()
            .find(|v| v.name == name)
            .map(|v| v.value.as_str())
    }

    /// One `export NAME=value` line per variable, values quoted for a POSIX shell
    /// ([`shell_quote`]), each ending in a newline: safe to `eval`.
    pub fn exports(&self) -> String {
        self.vars
            .iter()
            .map(|v| format!("export {}={}\n", v.name, shell_quote(&v.value)))
            .collect()
    }
}

impl Serialize for FabricEnv {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(self.vars.len()))?;
        for v in &self.vars {
            map.serialize_entry(v.name, &v.value)?;
        }
        map.end()
    }
}

/// A check the settings depend on that did not give what they need.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unmet {
    /// The check's id.
    pub id: &'static str,
    /// Its status (`fail`, or `skip`/`warn` when the needed fact is missing).
    pub status: Status,
    /// Its detail, or what is missing when the check did not run.
    pub detail: String,
}

impl fmt::Display for Unmet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let status = match self.status {
            Status::Pass => "pass",
            Status::Warn => "warn",
            Status::Fail => "fail",
            Status::Skip => "skip",
        };
        write!(f, "{} ({status}): {}", self.id, self.detail)
    }
}

/// Why no settings were produced: the checks they depend on, each with its verdict.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("no fabric settings: {} did not pass", ids(.unmet))]
pub struct EnvRefused {
    /// The checks, in catalog order.
    pub unmet: Vec<Unmet>,
}

fn ids(unmet: &[Unmet]) -> String {
    unmet.iter().map(|u| u.id).collect::<Vec<_>>().join(", ")
}

/// The NCCL, UCX and perftest settings for the checked fabric, over every rail the
/// checks judged: `NCCL_IB_HCA=DEV:PORT[,DEV:PORT...]`, `NCCL_IB_GID_INDEX=N` (RoCE),
/// `NCCL_SOCKET_IFNAME=IF` (the first rail: bootstrap needs one), `UCX_NET_DEVICES` (every
/// rail), `UCX_IB_GID_INDEX=N` (RoCE) and `PERFTEST_FLAGS='-d DEV -i PORT -x N'` (the
/// first rail; `-x` on RoCE only).
///
/// Refuses when a check in [`DEPENDS_ON`] failed for any rail, or did not record a fact
/// the settings need (no interface found, several RoCE v2 GIDs to choose from, ...), or
/// when the RoCE rails use different GID indexes (NCCL and UCX take one). Other checks
/// (PCIe width, MTUs, the agent) do not change these values and are not looked at.
/// No traffic class: that needs each rail's DCB configuration ([`lossless_fabric_env`]).
pub fn fabric_env(results: &[CheckResult]) -> Result<FabricEnv, EnvRefused> {
    settings(results, None)
}

/// [`fabric_env`] with the traffic class for lossless RoCE, derived from each RoCE
/// rail's DCB configuration (`dcb`): `NCCL_IB_TC`, `UCX_IB_TRAFFIC_CLASS` and perftest's
/// `--tclass` take the ToS byte (`DSCP << 2 | ECN`) whose DSCP lands on a PFC-enabled
/// priority on every rail ([`lossless_tos`]; DSCP 26, ToS 106, when it does). Refused,
/// naming each rail, when no DSCP does; left out with a note when a rail's configuration
/// could not be read or trusts PCP (the ToS does not choose the priority there).
/// InfiniBand rails take no traffic class.
pub fn lossless_fabric_env(
    results: &[CheckResult],
    dcb: &DcbFacts,
) -> Result<FabricEnv, EnvRefused> {
    settings(results, Some(dcb))
}

fn settings(results: &[CheckResult], dcb: Option<&DcbFacts>) -> Result<FabricEnv, EnvRefused> {
    // The rails, in order: the subjects of the first dependency's results (one result
    // without a subject when the host had none).
    let mut subjects: Vec<Option<&str>> = Vec::new();
    for r in results.iter().filter(|r| r.id == DEPENDS_ON[0]) {
        if !subjects.contains(&r.subject.as_deref()) {
            subjects.push(r.subject.as_deref());
        }
    }
    if subjects.is_empty() {
        subjects.push(None);
    }
    let mut unmet = Vec::new();
    let rails: Vec<Rail> = subjects
        .into_iter()
        .filter_map(|subject| rail_settings(results, subject, &mut unmet))
        .collect();
    if !unmet.is_empty() || rails.is_empty() {
        return Err(EnvRefused { unmet });
    }
    let mut gid_indexes: Vec<(&str, u64)> = rails
        .iter()
        .filter_map(|r| Some((r.ifname.as_str(), r.gid_index?)))
        .collect();
    let gid_index = gid_indexes.first().map(|(_, index)| *index);
    if gid_indexes
        .iter()
        .any(|(_, index)| Some(*index) != gid_index)
    {
        gid_indexes.sort_by_key(|(_, index)| *index);
        let each: Vec<String> = gid_indexes
            .iter()
            .map(|(ifname, index)| format!("{ifname} {index}"))
            .collect();
        return Err(EnvRefused {
            unmet: vec![Unmet {
                id: "rdma.gid",
                status: Status::Warn,
                detail: format!(
                    "the RoCE rails use different GID indexes ({}); NCCL_IB_GID_INDEX and \
                     UCX_IB_GID_INDEX take one: give the rails matching GIDs, or select \
                     rails that agree with --interface",
                    each.join(", ")
                ),
            }],
        });
    }
    let mut notes = Vec::new();
    let tc = match dcb {
        Some(dcb) => traffic_class(&rails, dcb, &mut notes)?,
        None => None,
    };
    let first = &rails[0];
    let hcas: Vec<String> = rails
        .iter()
        .map(|r| format!("{}:{}", r.device, r.port))
        .collect();
    let hcas = hcas.join(",");
    let mut vars = vec![EnvVar {
        name: "NCCL_IB_HCA",
        value: hcas.clone(),
    }];
    if let Some(index) = gid_index {
        vars.push(EnvVar {
            name: "NCCL_IB_GID_INDEX",
            value: index.to_string(),
        });
    }
    if let Some(tos) = tc {
        vars.push(EnvVar {
            name: "NCCL_IB_TC",
            value: tos.to_string(),
        });
    }
    vars.push(EnvVar {
        name: "NCCL_SOCKET_IFNAME",
        value: first.ifname.clone(),
    });
    vars.push(EnvVar {
        name: "UCX_NET_DEVICES",
        value: hcas,
    });
    if let Some(index) = gid_index {
        vars.push(EnvVar {
            name: "UCX_IB_GID_INDEX",
            value: index.to_string(),
        });
    }
    if let Some(tos) = tc {
        vars.push(EnvVar {
            name: "UCX_IB_TRAFFIC_CLASS",
            value: tos.to_string(),
        });
    }
    let mut perftest = format!("-d {} -i {}", first.device, first.port);
    if let Some(index) = first.gid_index {
        perftest.push_str(&format!(" -x {index}"));
        // `--tclass` sets the GRH traffic class of the QPs perftest connects itself (the
        // `-x` mode); with `-R` (rdma_cm) the ToS comes from `-T` or the rdma_cm default.
        if let Some(tos) = tc {
            perftest.push_str(&format!(" --tclass={tos}"));
        }
    }
    vars.push(EnvVar {
        name: "PERFTEST_FLAGS",
        value: perftest,
    });
    Ok(FabricEnv { vars, notes })
}

/// The ToS for the RoCE rails, or `None` with a note saying why there is none; refused
/// when every rail's configuration was read and no DSCP is lossless on all of them.
fn traffic_class(
    rails: &[Rail],
    dcb: &DcbFacts,
    notes: &mut Vec<String>,
) -> Result<Option<u8>, EnvRefused> {
    let roce: Vec<&Rail> = rails.iter().filter(|r| r.gid_index.is_some()).collect();
    if roce.is_empty() {
        return Ok(None);
    }
    let mut inputs = Vec::new();
    let mut unknown = Vec::new();
    for rail in &roce {
        let read = dcb.rails.get(&rail.ifname);
        match read.map(|r| &r.config) {
            None => unknown.push(format!(
                "{}: its DCB configuration was not read",
                rail.ifname
            )),
            Some(Err(why)) => unknown.push(format!("{}: {why}", rail.ifname)),
            Some(Ok(config)) if config.pfc.is_none() => unknown.push(format!(
                "{}: the driver reports no IEEE PFC configuration",
                rail.ifname
            )),
            Some(Ok(config)) if !config.trusts_dscp() => unknown.push(format!(
                "{} trusts PCP: the VLAN PCP (NCCL_IB_SL, UCX_IB_SL), not the ToS, chooses the priority",
                rail.ifname
            )),
            Some(Ok(config)) => inputs.push((
                *rail,
                TosRail {
                    ifname: &rail.ifname,
                    config,
                    rdma_cm: read.and_then(|r| r.tos.as_ref().ok()),
                },
            )),
        }
    }
    if !unknown.is_empty() {
        notes.push(format!(
            "NCCL_IB_TC, UCX_IB_TRAFFIC_CLASS and --tclass are not set (the traffic class comes from each rail's DCB configuration): {}",
            unknown.join("; ")
        ));
        return Ok(None);
    }
    let tos_rails: Vec<TosRail<'_>> = inputs.iter().map(|(_, t)| *t).collect();
    let chosen = lossless_tos(&tos_rails).map_err(|e| EnvRefused {
        unmet: vec![Unmet {
            id: "dcb.chain",
            status: Status::Fail,
            detail: format!(
                "{e}: no traffic class makes RoCE lossless; enable PFC on the priority the RoCE DSCP maps to (dcb pfc set dev IF prio-pfc 3:on), or map a DSCP to the PFC priority (dcb app add dev IF dscp-prio 26:3)"
            ),
        }],
    })?;
    notes.push(chosen_note(&chosen));
    for (rail, input) in &inputs {
        if let Some(note) = rdma_cm_note(rail, input, dcb, &chosen) {
            notes.push(note);
        }
    }
    Ok(Some(chosen.tos))
}

/// `NCCL_IB_TC=106 (DSCP 26, ECN 10): priority 3 by the APP table, PFC on, on
/// ens1f0np0; chosen as DSCP 26, the RoCE convention`.
fn chosen_note(chosen: &LosslessTos) -> String {
    let each: Vec<String> = chosen
        .rails
        .iter()
        .map(|(ifname, l)| format!("{ifname} priority {} {}", l.priority, l.source.words()))
        .collect();
    format!(
        "NCCL_IB_TC={} (DSCP {}, ECN bits {:02b}) lands on a PFC-enabled priority: {}; chosen as {}",
        chosen.tos,
        chosen.dscp,
        chosen.tos & 0b11,
        each.join(", "),
        chosen.chosen_because
    )
}

/// The rail's rdma_cm default ToS when it differs from the chosen one: connections made
/// through rdma_cm (perftest `-R`, rping, NVMe-oF/RDMA, UCX over rdmacm) use that, not
/// `NCCL_IB_TC`. `None` when it matches.
fn rdma_cm_note(
    rail: &Rail,
    input: &TosRail<'_>,
    dcb: &DcbFacts,
    chosen: &LosslessTos,
) -> Option<String> {
    let who = format!("{}/{}", rail.device, rail.port);
    let path = format!(
        "/sys/kernel/config/rdma_cm/{}/ports/{}/default_roce_tos",
        rail.device, rail.port
    );
    let Some(tos) = input.rdma_cm else {
        let why = dcb
            .rails
            .get(&rail.ifname)
            .and_then(|r| r.tos.as_ref().err())
            .map_or("unknown", String::as_str);
        return Some(format!(
            "{who}: the rdma_cm default ToS could not be read ({why})"
        ));
    };
    if tos.tos == chosen.tos {
        return None;
    }
    let source = match &tos.file {
        Some(file) => file.display().to_string(),
        None => format!("the kernel default: no {path}"),
    };
    let lands = match lossless_dscps(input.config)
        .into_iter()
        .find(|l| l.dscp == tos.dscp())
    {
        Some(l) => format!(
            "DSCP {} also lands on PFC priority {}, so they are lossless too",
            tos.dscp(),
            l.priority
        ),
        None => format!(
            "DSCP {} does not land on a PFC priority, so they are lossy",
            tos.dscp()
        ),
    };
    let fix = if tos.file.is_some() {
        format!("echo {} > {path}", chosen.tos)
    } else {
        format!(
            "mkdir /sys/kernel/config/rdma_cm/{} && echo {} > {path}",
            rail.device, chosen.tos
        )
    };
    Some(format!(
        "{who}: the rdma_cm default ToS is {} ({source}), not {}: connections made through rdma_cm (perftest -R, rping, NVMe-oF/RDMA, UCX over rdmacm) use it; {lands}; to match: {fix}",
        tos.tos, chosen.tos
    ))
}

/// What one rail contributes to the settings.
struct Rail {
    ifname: String,
    device: String,
    port: u64,
    /// RoCE only.
    gid_index: Option<u64>,
}

/// One rail's settings from the results about it (`subject`), or `None` with the reasons
/// added to `unmet`.
fn rail_settings(
    results: &[CheckResult],
    subject: Option<&str>,
    unmet: &mut Vec<Unmet>,
) -> Option<Rail> {
    let of_rail: Vec<&CheckResult> = results
        .iter()
        .filter(|r| r.subject.as_deref() == subject)
        .collect();
    let named = |detail: &str| match subject {
        Some(rail) => format!("{rail}: {detail}"),
        None => detail.to_owned(),
    };
    let before = unmet.len();
    for &id in DEPENDS_ON {
        match of_rail.iter().find(|r| r.id == id) {
            Some(r) if r.status == Status::Fail => unmet.push(Unmet {
                id,
                status: r.status,
                detail: named(&r.detail),
            }),
            Some(_) => {}
            None => unmet.push(Unmet {
                id,
                status: Status::Skip,
                detail: named("not run"),
            }),
        }
    }
    if unmet.len() > before {
        return None;
    }
    // Every dependency ran and none failed: now each needed fact must be there.
    let mut fact = |id: &'static str, key: &str| -> Option<FactValue> {
        let r = of_rail.iter().find(|r| r.id == id)?;
        let value = r.facts.get(key).cloned();
        if value.is_none() && !unmet[before..].iter().any(|u| u.id == id) {
            unmet.push(Unmet {
                id,
                status: r.status,
                detail: named(&format!("{} (no {key} found)", r.detail)),
            });
        }
        value
    };
    let ifname = fact("netdev.up", "interface").and_then(|v| v.as_str().map(str::to_owned));
    let device = fact("rdma.bound", "rdma_device").and_then(|v| v.as_str().map(str::to_owned));
    let port = fact("rdma.bound", "rdma_port").and_then(|v| v.as_u64());
    // Without a device the link layer and GID checks skip for that reason alone: the
    // checks above already say why, so stop here.
    let (Some(ifname), Some(device), Some(port)) = (ifname, device, port) else {
        return None;
    };
    let link_layer =
        fact("rdma.link-layer", "link_layer").and_then(|v| v.as_str().map(str::to_owned));
    let infiniband = link_layer.as_deref() == Some("InfiniBand");
    let gid_index = if infiniband || link_layer.is_none() {
        None
    } else {
        fact("rdma.gid", "gid_index").and_then(|v| v.as_u64())
    };
    if link_layer.is_none() || (!infiniband && gid_index.is_none()) {
        return None;
    }
    Some(Rail {
        ifname,
        device,
        port,
        gid_index,
    })
}

/// Quotes a value for a POSIX shell: as is when it is made only of characters no shell
/// treats specially (`[A-Za-z0-9_@%+=:,./-]`, not empty), else inside single quotes,
/// where nothing is special, with each `'` written as `'\''`. The result is always one
/// word whose value is exactly `value`.
pub fn shell_quote(value: &str) -> String {
    let plain = !value.is_empty()
        && value
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "_@%+=:,./-".contains(c));
    if plain {
        value.to_owned()
    } else {
        format!("'{}'", value.replace('\'', r"'\''"))
    }
}
