//! The lossless-RoCE and firmware facts ([`crate::dcb`], [`crate::fw_config`]) as the
//! `dpu.v1.Inventory/GetFabricConfig` messages, both ways: the agent sends what it read on
//! the BlueField's Arm, `dpuctl check` turns it back into the same types its host-side
//! checks judge, so one set of rules judges both sides. Lossless where the checks look;
//! the ETS recommendation fields (`tc_reco_*`), which no check reads, are not carried and
//! come back as zeros.

use dpu_proto::v1;

use crate::dcb::{DcbApp, DcbConfig, IeeeEts, IeeePfc, RoceTos};
use crate::fw_config::{
    FwColumn, FwDevice, FwFacts, FwParam, FwQuery, FwTool, FwValue, TOOL_NAMES,
};
use crate::pci::{BlueFieldGeneration, PciFunctionKind};

/// A DCB configuration for the wire.
pub fn dcb_to_wire(config: &DcbConfig) -> v1::DcbConfiguration {
    let bytes = |a: &[u8; 8]| a.iter().map(|b| u32::from(*b)).collect::<Vec<u32>>();
    let trust = if config.trusts_dscp() {
        v1::DcbTrust::Dscp
    } else {
        v1::DcbTrust::Pcp
    };
    v1::DcbConfiguration {
        ets: config.ets.map(|e| v1::DcbEts {
            willing: e.willing != 0,
            ets_cap: u32::from(e.ets_cap),
            tc_tx_bw: bytes(&e.tc_tx_bw),
            tc_tsa: bytes(&e.tc_tsa),
            prio_tc: bytes(&e.prio_tc),
            tc_rx_bw: bytes(&e.tc_rx_bw),
            cbs: e.cbs != 0,
        }),
        pfc: config.pfc.map(|p| v1::DcbPfc {
            pfc_cap: u32::from(p.pfc_cap),
            enabled_priorities: p.enabled_priorities().into_iter().map(u32::from).collect(),
            mbc: u32::from(p.mbc),
            delay: u32::from(p.delay),
            requests: p.requests.to_vec(),
            indications: p.indications.to_vec(),
        }),
        apps: config
            .apps
            .iter()
            .map(|a| v1::DcbAppEntry {
                selector: u32::from(a.selector),
                priority: u32::from(a.priority),
                protocol: u32::from(a.protocol),
            })
            .collect(),
        trust: trust as i32,
    }
}

/// Why a message from the agent cannot be judged: it names the field.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{field}: {problem}")]
pub struct WireError {
    /// The field, e.g. `ets.prio_tc`.
    pub field: &'static str,
    /// What is wrong with it.
    pub problem: String,
}

fn wire_error(field: &'static str, problem: impl Into<String>) -> WireError {
    WireError {
        field,
        problem: problem.into(),
    }
}

/// Eight small numbers (a per-class or per-priority table); fewer are padded with zeros.
fn eight<T: Copy + Default + TryFrom<V>, V: Copy + std::fmt::Display>(
    field: &'static str,
    values: &[V],
) -> Result<[T; 8], WireError> {
    if values.len() > 8 {
        return Err(wire_error(
            field,
            format!("{} entries, at most 8", values.len()),
        ));
    }
    let mut out = [T::default(); 8];
    for (slot, v) in out.iter_mut().zip(values) {
        *slot = T::try_from(*v).map_err(|_| wire_error(field, format!("{v} out of range")))?;
    }
    Ok(out)
}

fn small<T: TryFrom<u32>>(field: &'static str, value: u32) -> Result<T, WireError> {
    T::try_from(value).map_err(|_| wire_error(field, format!("{value} out of range")))
}

/// The agent's DCB configuration of `ifname` as the host-side checks take it; a value out
/// of its kernel type's range is refused, naming the field.
pub fn dcb_from_wire(ifname: &str, wire: &v1::DcbConfiguration) -> Result<DcbConfig, WireError> {
    let ets = wire
        .ets
        .as_ref()
        .map(|e| -> Result<IeeeEts, WireError> {
            Ok(IeeeEts {
                willing: u8::from(e.willing),
                ets_cap: small("ets.ets_cap", e.ets_cap)?,
                cbs: u8::from(e.cbs),
                tc_tx_bw: eight("ets.tc_tx_bw", &e.tc_tx_bw)?,
                tc_rx_bw: eight("ets.tc_rx_bw", &e.tc_rx_bw)?,
                tc_tsa: eight("ets.tc_tsa", &e.tc_tsa)?,
                prio_tc: eight("ets.prio_tc", &e.prio_tc)?,
                ..IeeeEts::default()
            })
        })
        .transpose()?;
    let pfc = wire
        .pfc
        .as_ref()
        .map(|p| -> Result<IeeePfc, WireError> {
            let mut pfc_en = 0u8;
            for priority in &p.enabled_priorities {
                if *priority > 7 {
                    return Err(wire_error(
                        "pfc.enabled_priorities",
                        format!("priority {priority}, not 0-7"),
                    ));
                }
                pfc_en |= 1 << priority;
            }
            Ok(IeeePfc {
                pfc_cap: small("pfc.pfc_cap", p.pfc_cap)?,
                pfc_en,
                mbc: small("pfc.mbc", p.mbc)?,
                delay: small("pfc.delay", p.delay)?,
                requests: eight("pfc.requests", &p.requests)?,
                indications: eight("pfc.indications", &p.indications)?,
            })
        })
        .transpose()?;
    let apps = wire
        .apps
        .iter()
        .map(|a| {
            Ok(DcbApp {
                selector: small("apps.selector", a.selector)?,
                priority: small("apps.priority", a.priority)?,
                protocol: small("apps.protocol", a.protocol)?,
            })
        })
        .collect::<Result<Vec<_>, WireError>>()?;
    Ok(DcbConfig {
        ifname: ifname.to_owned(),
        ets,
        pfc,
        apps,
    })
}

/// An rdma_cm default ToS for the wire.
pub fn roce_tos_to_wire(tos: &RoceTos) -> v1::RoceDefaultTos {
    v1::RoceDefaultTos {
        tos: u32::from(tos.tos),
        file: tos
            .file
            .as_ref()
            .map(|p| p.display().to_string())
            .unwrap_or_default(),
    }
}

/// The agent's rdma_cm default ToS back.
pub fn roce_tos_from_wire(wire: &v1::RoceDefaultTos) -> Result<RoceTos, WireError> {
    Ok(RoceTos {
        tos: small("roce_tos.tos", wire.tos)?,
        file: (!wire.file.is_empty()).then(|| wire.file.clone().into()),
    })
}

fn kind_to_wire(kind: PciFunctionKind) -> v1::PciFunctionKind {
    match kind {
        PciFunctionKind::BlueFieldNic => v1::PciFunctionKind::BluefieldNic,
        _ => v1::PciFunctionKind::OtherMellanox,
    }
}

fn kind_from_wire(kind: i32) -> PciFunctionKind {
    match v1::PciFunctionKind::try_from(kind) {
        Ok(v1::PciFunctionKind::BluefieldNic) => PciFunctionKind::BlueFieldNic,
        _ => PciFunctionKind::OtherMellanox,
    }
}

/// The generation names a model can be, so one read back keeps its `&'static str`.
const MODELS: [BlueFieldGeneration; 5] = [
    BlueFieldGeneration::BlueField1,
    BlueFieldGeneration::BlueField2,
    BlueFieldGeneration::BlueField3Lx,
    BlueFieldGeneration::BlueField3,
    BlueFieldGeneration::BlueField4,
];

fn value_to_wire(value: &FwValue) -> v1::FirmwareValue {
    v1::FirmwareValue {
        raw: value.raw.clone(),
        name: value.name.clone(),
        number: value.number,
    }
}

fn value_from_wire(value: &v1::FirmwareValue) -> FwValue {
    FwValue {
        raw: value.raw.clone(),
        name: value.name.clone(),
        number: value.number,
    }
}

fn query_to_wire(q: &FwQuery) -> v1::FirmwareQuery {
    v1::FirmwareQuery {
        device_type: q.device_type.clone().unwrap_or_default(),
        part_name: q.part_name.clone().unwrap_or_default(),
        description: q.description.clone().unwrap_or_default(),
        shows_default: q.columns.contains(&FwColumn::Default),
        shows_current: q.shows_current(),
        parameters: q
            .params
            .iter()
            .map(|p| v1::FirmwareParameter {
                name: p.name.clone(),
                default_value: p.default.as_ref().map(value_to_wire),
                current: p.current.as_ref().map(value_to_wire),
                next_boot: Some(value_to_wire(&p.next_boot)),
                marked: p.marked,
                read_only: p.read_only,
            })
            .collect(),
        tool_errors: q.errors.clone(),
        tool_notes: q.notes.clone(),
    }
}

fn query_from_wire(q: &v1::FirmwareQuery) -> FwQuery {
    let text = |s: &String| (!s.is_empty()).then(|| s.clone());
    let columns = [
        (q.shows_default, FwColumn::Default),
        (q.shows_current, FwColumn::Current),
        (true, FwColumn::NextBoot),
    ]
    .into_iter()
    .filter_map(|(shown, column)| shown.then_some(column))
    .collect();
    FwQuery {
        device_type: text(&q.device_type),
        part_name: text(&q.part_name),
        description: text(&q.description),
        device: None,
        columns,
        params: q
            .parameters
            .iter()
            .map(|p| FwParam {
                name: p.name.clone(),
                default: p.default_value.as_ref().map(value_from_wire),
                current: p.current.as_ref().map(value_from_wire),
                next_boot: p.next_boot.as_ref().map_or(
                    FwValue {
                        raw: "N/A".to_owned(),
                        name: None,
                        number: None,
                    },
                    value_from_wire,
                ),
                marked: p.marked,
                read_only: p.read_only,
            })
            .collect(),
        errors: q.tool_errors.clone(),
        notes: q.tool_notes.clone(),
    }
}

/// Firmware facts for the wire. `not_live`/`not_root` words come from the facts
/// themselves; the other reasons are named here.
pub fn fw_to_wire(facts: &FwFacts) -> v1::FirmwareSettings {
    let unavailable = |why: v1::FirmwareUnavailable, detail: String| v1::FirmwareSettings {
        unavailable: why as i32,
        unavailable_detail: detail,
        ..Default::default()
    };
    match facts {
        FwFacts::NotRun(why) => unavailable(v1::FirmwareUnavailable::NotLive, why.clone()),
        FwFacts::NotRoot => unavailable(
            v1::FirmwareUnavailable::NotRoot,
            format!(
                "reading firmware settings (mlxconfig/mstconfig) needs root: the agent runs as uid {}",
                nix::unistd::geteuid()
            ),
        ),
        FwFacts::NoTool => unavailable(
            v1::FirmwareUnavailable::NoTool,
            format!(
                "neither {} (NVIDIA MFT) nor {} (Debian package mstflint) is on the agent's PATH",
                TOOL_NAMES[0], TOOL_NAMES[1]
            ),
        ),
        FwFacts::PciUnreadable(e) => unavailable(
            v1::FirmwareUnavailable::PciUnreadable,
            format!("cannot list PCI functions: {e}"),
        ),
        FwFacts::Queried { tool, devices } => v1::FirmwareSettings {
            tool: tool.name.to_owned(),
            tool_path: tool.path.display().to_string(),
            devices: devices
                .iter()
                .map(|d| v1::FirmwareDevice {
                    address: Some(v1::PciAddress {
                        bdf: d.address.clone(),
                    }),
                    kind: kind_to_wire(d.kind) as i32,
                    model: d.model.unwrap_or_default().to_owned(),
                    result: Some(match &d.query {
                        Ok(q) => v1::firmware_device::Result::Query(query_to_wire(q)),
                        Err(e) => v1::firmware_device::Result::Error(e.clone()),
                    }),
                })
                .collect(),
            ..Default::default()
        },
    }
}

/// The agent's firmware facts as the host-side `fw.*` checks take them. A reason it could
/// not read them becomes [`FwFacts::NotRun`] with the agent's words (prefixed by
/// `context`, e.g. "the agent: "), so the checks skip saying so; an unknown tool name is
/// refused.
pub fn fw_from_wire(wire: &v1::FirmwareSettings, context: &str) -> Result<FwFacts, WireError> {
    let unavailable = v1::FirmwareUnavailable::try_from(wire.unavailable)
        .unwrap_or(v1::FirmwareUnavailable::Unspecified);
    if unavailable != v1::FirmwareUnavailable::Unspecified || wire.tool.is_empty() {
        let detail = if wire.unavailable_detail.is_empty() {
            unavailable.as_str_name().to_owned()
        } else {
            wire.unavailable_detail.clone()
        };
        return Ok(FwFacts::NotRun(format!("{context}{detail}")));
    }
    let name = TOOL_NAMES
        .iter()
        .find(|n| **n == wire.tool)
        .ok_or_else(|| {
            wire_error(
                "firmware.tool",
                format!("{:?} is not mlxconfig or mstconfig", wire.tool),
            )
        })?;
    let devices = wire
        .devices
        .iter()
        .map(|d| {
            let address = d
                .address
                .as_ref()
                .map(|a| a.bdf.clone())
                .filter(|a| !a.is_empty())
                .ok_or_else(|| wire_error("firmware.devices.address", "missing"))?;
            let query = match &d.result {
                Some(v1::firmware_device::Result::Query(q)) => Ok(query_from_wire(q)),
                Some(v1::firmware_device::Result::Error(e)) => Err(e.clone()),
                None => Err("the agent sent neither a table nor an error".to_owned()),
            };
            Ok(FwDevice {
                address,
                kind: kind_from_wire(d.kind),
                model: MODELS.iter().map(|g| g.name()).find(|m| *m == d.model),
                query,
            })
        })
        .collect::<Result<Vec<_>, WireError>>()?;
    Ok(FwFacts::Queried {
        tool: FwTool {
            name,
            path: wire.tool_path.clone().into(),
        },
        devices,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fw_config::parse_fw_query;

    fn config() -> DcbConfig {
        DcbConfig {
            ifname: "p0".to_owned(),
            ets: Some(IeeeEts {
                willing: 1,
                ets_cap: 8,
                tc_tx_bw: [50, 0, 0, 50, 0, 0, 0, 0],
                tc_tsa: [2, 0, 0, 2, 0, 0, 0, 0],
                prio_tc: [0, 0, 0, 3, 0, 0, 0, 0],
                ..IeeeEts::default()
            }),
            pfc: Some(IeeePfc {
                pfc_cap: 8,
                pfc_en: 0b1000,
                requests: [0, 0, 0, 7, 0, 0, 0, 0],
                ..IeeePfc::default()
            }),
            apps: vec![DcbApp {
                selector: 5,
                priority: 3,
                protocol: 26,
            }],
        }
    }

    #[test]
    fn a_dcb_configuration_survives_the_wire_and_says_its_trust() {
        let wire = dcb_to_wire(&config());
        assert_eq!(wire.trust, v1::DcbTrust::Dscp as i32);
        assert_eq!(
            wire.pfc.as_ref().map(|p| p.enabled_priorities.clone()),
            Some(vec![3])
        );
        assert_eq!(dcb_from_wire("p0", &wire), Ok(config()));
        let pcp = DcbConfig {
            apps: Vec::new(),
            ..config()
        };
        assert_eq!(dcb_to_wire(&pcp).trust, v1::DcbTrust::Pcp as i32);
    }

    #[test]
    fn an_impossible_value_from_the_agent_is_refused_by_field() {
        let mut wire = dcb_to_wire(&config());
        if let Some(pfc) = wire.pfc.as_mut() {
            pfc.enabled_priorities = vec![9];
        }
        let err = dcb_from_wire("p0", &wire).expect_err("priority 9");
        assert_eq!(err.field, "pfc.enabled_priorities");
        let mut wire = dcb_to_wire(&config());
        if let Some(ets) = wire.ets.as_mut() {
            ets.prio_tc = vec![0; 9];
        }
        assert_eq!(
            dcb_from_wire("p0", &wire).expect_err("9").field,
            "ets.prio_tc"
        );
        let mut wire = dcb_to_wire(&config());
        wire.apps[0].protocol = 70_000;
        assert_eq!(
            dcb_from_wire("p0", &wire).expect_err("big").field,
            "apps.protocol"
        );
    }

    #[test]
    fn the_roce_tos_keeps_whether_a_file_set_it() {
        for tos in [
            RoceTos {
                tos: 106,
                file: Some("/sys/kernel/config/rdma_cm/mlx5_0/ports/1/default_roce_tos".into()),
            },
            RoceTos { tos: 0, file: None },
        ] {
            assert_eq!(roce_tos_from_wire(&roce_tos_to_wire(&tos)), Ok(tos));
        }
    }

    const TABLE: &str = "Device type:        BlueField3\n\
Name:               900-9D3B6-00CV-AA0\n\
Configurations:                              Default         Current         Next Boot\n\
         INTERNAL_CPU_MODEL                  EMBEDDED_CPU(1) EMBEDDED_CPU(1) EMBEDDED_CPU(1)\n\
*        INTERNAL_CPU_OFFLOAD_ENGINE         ENABLED(0)      ENABLED(0)      DISABLED(1)\n\
         CNP_DSCP_P1                         48              48              48\n";

    #[test]
    fn a_firmware_table_survives_the_wire() {
        let query = parse_fw_query(TABLE).expect("table");
        let facts = FwFacts::Queried {
            tool: FwTool {
                name: "mstconfig",
                path: "/usr/bin/mstconfig".into(),
            },
            devices: vec![
                FwDevice {
                    address: "0000:03:00.0".to_owned(),
                    kind: PciFunctionKind::BlueFieldNic,
                    model: Some("BlueField-3"),
                    query: Ok(query.clone()),
                },
                FwDevice {
                    address: "0000:04:00.0".to_owned(),
                    kind: PciFunctionKind::OtherMellanox,
                    model: None,
                    query: Err("mstconfig -e -d 0000:04:00.0 query exited 3: -E- Failed".to_owned()),
                },
            ],
        };
        let back = fw_from_wire(&fw_to_wire(&facts), "").expect("valid");
        let FwFacts::Queried { tool, devices } = back else {
            panic!("queried");
        };
        assert_eq!(tool.name, "mstconfig");
        assert_eq!(devices[0].model, Some("BlueField-3"));
        assert!(devices[0].is_bluefield());
        let mut expected = query;
        expected.device = None;
        assert_eq!(devices[0].query, Ok(expected));
        assert_eq!(
            devices[1].query.as_ref().expect_err("error kept"),
            "mstconfig -e -d 0000:04:00.0 query exited 3: -E- Failed"
        );
    }

    #[test]
    fn a_reason_the_agent_could_not_read_comes_back_as_its_words() {
        for (facts, reason) in [
            (FwFacts::NoTool, v1::FirmwareUnavailable::NoTool),
            (FwFacts::NotRoot, v1::FirmwareUnavailable::NotRoot),
            (
                FwFacts::NotRun("--sys-root /f: not a tree".to_owned()),
                v1::FirmwareUnavailable::NotLive,
            ),
        ] {
            let wire = fw_to_wire(&facts);
            assert_eq!(wire.unavailable, reason as i32);
            let FwFacts::NotRun(why) = fw_from_wire(&wire, "the agent: ").expect("valid") else {
                panic!("not run");
            };
            assert_eq!(why, format!("the agent: {}", wire.unavailable_detail));
        }
        let wire = v1::FirmwareSettings {
            tool: "flint".to_owned(),
            ..Default::default()
        };
        assert_eq!(
            fw_from_wire(&wire, "").expect_err("flint").field,
            "firmware.tool"
        );
    }
}
