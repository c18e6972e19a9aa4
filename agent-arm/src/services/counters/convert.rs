//! Wire mapping for counters: `dpu.v1` selectors to the probe's selectors (validating
//! every name: the agent owns the status codes), and probe snapshots to
//! `dpu.v1.CounterSnapshot` (the one mapping in `dpu_probe::snapshot_wire`, which dpuctl
//! decodes with).

use dpu_probe::counters::CounterSelector;
use dpu_proto::v1::{self, counter_selector::Selector};
use tonic::Status;

use super::limits::{check_count, dedup};
use crate::services::status::{echo, invalid, not_yet};

/// A checked request: what the probe reads, which storage volumes the storage engine is
/// asked about (`None`: every volume the agent manages), and which OVS datapaths
/// ovs-vswitchd is (`None`: every datapath).
#[derive(Debug, Default)]
pub(crate) struct Selectors {
    pub(crate) probe: Vec<CounterSelector>,
    pub(crate) volumes: Vec<Option<String>>,
    pub(crate) datapaths: Vec<Option<String>>,
}

/// Longest datapath name (`type@name`) a selector may carry.
const MAX_DATAPATH_NAME: usize = 64;

/// A datapath name as OVS writes it (`system@ovs-system`): letters, digits and `@._-`.
fn datapath_name(field: &str, name: &str) -> Result<String, Status> {
    check_length(field, "datapath", name, MAX_DATAPATH_NAME)?;
    if !name
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '@' | '.' | '_' | '-'))
    {
        return Err(invalid(
            field,
            format!(
                "{} is not a datapath name (type@name, e.g. system@ovs-system)",
                echo(name)
            ),
        ));
    }
    Ok(name.to_owned())
}

/// Checks and converts the request's selectors: at most
/// [`MAX_SELECTORS`](super::limits::MAX_SELECTORS), counted before any is looked
/// at, and repeats dropped once every one is checked (so an error still names the index
/// the client sent). OVS flow counters are not served yet: asking for them is
/// `UNIMPLEMENTED`, never an empty answer that looks like "no traffic".
pub(crate) fn selectors_from_wire(selectors: &[v1::CounterSelector]) -> Result<Selectors, Status> {
    check_count(selectors.len())?;
    let mut out = Selectors::default();
    for (i, selector) in selectors.iter().enumerate() {
        if let Some(Selector::Volumes(v)) = &selector.selector {
            let id = match v.volume.as_str() {
                "" => None,
                name => {
                    let id = name.strip_prefix("volumes/").unwrap_or(name);
                    dpu_proto::names::Collection::Volumes
                        .parse(&format!("volumes/{id}"))
                        .map_err(|e| invalid(&format!("selectors[{i}].volumes.volume"), e))?;
                    Some(id.to_owned())
                }
            };
            out.volumes.push(id);
        }
        if let Some(Selector::OvsDatapaths(d)) = &selector.selector {
            out.datapaths.push(match d.datapath.as_str() {
                "" => None,
                name => Some(datapath_name(
                    &format!("selectors[{i}].ovs_datapaths.datapath"),
                    name,
                )?),
            });
        }
    }
    out.probe = probe_selectors(selectors)?;
    dedup(&mut out.probe);
    dedup(&mut out.volumes);
    dedup(&mut out.datapaths);
    Ok(out)
}

/// Longest RDMA or block device name a selector may carry: the probe's own limit.
const MAX_DEVICE_NAME: usize = 64;

/// Refuses a name too long to be valid with one cut echo of it. The probe's own message
/// would quote it twice (in the selector and in the reason) and in full.
fn check_length(field: &str, what: &str, name: &str, max: usize) -> Result<(), Status> {
    if name.len() > max {
        return Err(invalid(
            field,
            format!("{what} name {} is longer than {max} bytes", echo(name)),
        ));
    }
    Ok(())
}

fn probe_selectors(selectors: &[v1::CounterSelector]) -> Result<Vec<CounterSelector>, Status> {
    selectors
        .iter()
        .enumerate()
        .map(|(i, selector)| -> Result<Option<CounterSelector>, Status> {
            let field = |name: &str| format!("selectors[{i}].{name}");
            let nonempty = |s: &str| (!s.is_empty()).then(|| s.to_owned());
            let at = format!("selectors[{i}]");
            let ifname_len =
                |name: &str| check_length(&at, "interface", name, dpu_proto::names::MAX_IFNAME_LEN);
            let device_len =
                |what: &str, name: &str| check_length(&at, what, name, MAX_DEVICE_NAME);
            match &selector.selector {
                Some(Selector::Rdma(s)) => device_len("RDMA device", &s.device)?,
                Some(Selector::Netdev(v1::NetdevSelector { ifname }))
                | Some(Selector::Tc(v1::TcSelector { ifname })) => ifname_len(ifname)?,
                Some(Selector::Block(s)) => device_len("block device", &s.device)?,
                _ => {}
            }
            let converted = match &selector.selector {
                None => return Err(invalid(&at, "no selector set")),
                Some(Selector::Rdma(s)) => CounterSelector::Rdma {
                    device: nonempty(&s.device),
                    port: (s.port != 0).then_some(s.port),
                },
                Some(Selector::Netdev(s)) => CounterSelector::Netdev {
                    ifname: nonempty(&s.ifname),
                },
                Some(Selector::Tc(s)) => {
                    if s.ifname.is_empty() {
                        return Err(invalid(&field("tc.ifname"), "is required"));
                    }
                    CounterSelector::Tc {
                        ifname: s.ifname.clone(),
                    }
                }
                Some(Selector::Block(s)) => CounterSelector::Block {
                    device: nonempty(&s.device),
                },
                Some(Selector::OvsFlows(s)) => {
                    v1::FlowFilter::try_from(s.filter).map_err(|_| {
                        invalid(
                            &field("ovs_flows.filter"),
                            format!("unknown value {}", s.filter),
                        )
                    })?;
                    return Err(not_yet("Counters OVS flow selector", "ovs: flow dumps"));
                }
                // Served by the storage engine and the OVS backend, not the probe.
                Some(Selector::Volumes(_) | Selector::OvsDatapaths(_)) => return Ok(None),
            };
            converted.validate().map_err(|e| invalid(&at, e))?;
            Ok(Some(converted))
        })
        .filter_map(Result::transpose)
        .collect()
}

/// A probe snapshot on the wire: the one mapping, shared with dpuctl.
pub(crate) use dpu_probe::snapshot_wire::snapshot_to_wire;

#[cfg(test)]
mod tests {
    use super::*;

    fn wire(selector: Selector) -> v1::CounterSelector {
        v1::CounterSelector {
            selector: Some(selector),
        }
    }

    #[test]
    fn datapath_names_are_checked_at_the_edge() {
        let datapath = |name: &str| {
            wire(Selector::OvsDatapaths(v1::OvsDatapathSelector {
                datapath: name.to_owned(),
            }))
        };
        let ok = selectors_from_wire(&[
            datapath(""),
            datapath("system@ovs-system"),
            datapath("system@ovs-system"),
        ])
        .expect("valid");
        assert_eq!(ok.datapaths, [None, Some("system@ovs-system".to_owned())]);
        assert!(
            ok.probe.is_empty(),
            "served by the OVS backend, not the probe"
        );
        for bad in ["../x", "a b", "sys;rm", &"d".repeat(65)] {
            let err = selectors_from_wire(&[datapath(bad)]).expect_err(bad);
            assert_eq!(err.code(), tonic::Code::InvalidArgument, "{bad}");
            assert!(
                err.message()
                    .contains("selectors[0].ovs_datapaths.datapath")
                    || err.message().contains("selectors[0]"),
                "{bad}: {}",
                err.message()
            );
        }
    }

    #[test]
    fn names_that_escape_sysfs_are_invalid_argument() {
        let err = selectors_from_wire(&[wire(Selector::Rdma(v1::RdmaSelector {
            device: "../etc".into(),
            port: 1,
        }))])
        .expect_err("path escape");
        assert_eq!(err.code(), tonic::Code::InvalidArgument);
        assert!(err.message().contains("selectors[0]"), "{}", err.message());
    }

    #[test]
    fn volumes_go_to_the_storage_engine_and_bad_names_are_named() {
        let got = selectors_from_wire(&[
            wire(Selector::Volumes(v1::VolumeSelector::default())),
            wire(Selector::Volumes(v1::VolumeSelector {
                volume: "volumes/r0n1".into(),
            })),
        ])
        .expect("valid");
        assert!(got.probe.is_empty());
        assert_eq!(got.volumes, [None, Some("r0n1".to_owned())]);
        let err = selectors_from_wire(&[wire(Selector::Volumes(v1::VolumeSelector {
            volume: "volumes/../x".into(),
        }))])
        .expect_err("bad name");
        assert!(
            err.message().contains("selectors[0].volumes.volume"),
            "{}",
            err.message()
        );
    }

    #[test]
    fn unbuilt_sources_are_unimplemented_not_empty() {
        let err = selectors_from_wire(&[wire(Selector::OvsFlows(v1::OvsFlowSelector::default()))])
            .expect_err("flows");
        assert_eq!(err.code(), tonic::Code::Unimplemented);
    }

    #[test]
    fn too_many_selectors_are_refused_before_any_is_checked_and_repeats_dropped() {
        let every = wire(Selector::Netdev(v1::NetdevSelector::default()));
        let err = selectors_from_wire(&vec![every.clone(); 20_000]).expect_err("over the cap");
        assert_eq!(err.code(), tonic::Code::InvalidArgument);
        assert!(err
            .message()
            .starts_with("selectors: 20000 selectors, at most 256"));
        let got = selectors_from_wire(&vec![every; 256]).expect("at the cap");
        assert_eq!(got.probe, [CounterSelector::Netdev { ifname: None }]);
        let volume = wire(Selector::Volumes(v1::VolumeSelector {
            volume: "volumes/r0n1".into(),
        }));
        let bare = wire(Selector::Volumes(v1::VolumeSelector {
            volume: "r0n1".into(),
        }));
        let got = selectors_from_wire(&[volume, bare]).expect("valid");
        assert_eq!(got.volumes, [Some("r0n1".to_owned())]);
    }

    #[test]
    fn a_huge_name_is_echoed_once_and_cut() {
        let huge = "a".repeat(200_000);
        for selector in [
            Selector::Netdev(v1::NetdevSelector {
                ifname: huge.clone(),
            }),
            Selector::Tc(v1::TcSelector {
                ifname: huge.clone(),
            }),
            Selector::Rdma(v1::RdmaSelector {
                device: huge.clone(),
                port: 1,
            }),
            Selector::Block(v1::BlockSelector {
                device: huge.clone(),
            }),
            Selector::Volumes(v1::VolumeSelector {
                volume: huge.clone(),
            }),
        ] {
            let err = selectors_from_wire(&[wire(selector)]).expect_err("too long");
            assert_eq!(err.code(), tonic::Code::InvalidArgument);
            assert!(
                err.message().starts_with("selectors[0]"),
                "{}",
                err.message()
            );
            assert!(err.message().len() < 1024, "{}", err.message().len());
            // Volumes are echoed as the whole name, `volumes/` and all.
            assert!(err.message().contains("…\" (2000"), "{}", err.message());
        }
    }

    #[test]
    fn empty_fields_mean_every_object() {
        let got = selectors_from_wire(&[
            wire(Selector::Rdma(v1::RdmaSelector::default())),
            wire(Selector::Netdev(v1::NetdevSelector::default())),
            wire(Selector::Block(v1::BlockSelector::default())),
        ])
        .expect("valid");
        assert_eq!(got.probe, CounterSelector::defaults());
    }
}
