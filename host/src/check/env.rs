//! `dpuctl check --env`: the settings the checked fabric needs (NCCL, UCX, perftest),
//! derived from the facts the checks judged, as `export NAME=value` lines for `eval`.
//! A pure function of the results: it refuses, rather than guessing, when a check those
//! values depend on failed or did not find them.

use std::fmt;

use serde::ser::{Serialize, SerializeMap, Serializer};

use super::rules::{FactValue, Status};
use super::CheckResult;

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
/// `{"NCCL_IB_HCA": "mlx5_0:1", ...}` (values are strings, as in the environment).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FabricEnv {
    /// The variables.
    pub vars: Vec<EnvVar>,
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
pub fn fabric_env(results: &[CheckResult]) -> Result<FabricEnv, EnvRefused> {
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
    let mut perftest = format!("-d {} -i {}", first.device, first.port);
    if let Some(index) = first.gid_index {
        perftest.push_str(&format!(" -x {index}"));
    }
    vars.push(EnvVar {
        name: "PERFTEST_FLAGS",
        value: perftest,
    });
    Ok(FabricEnv { vars })
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
