//! Wire mapping for counters: `dpu.v1` selectors to the probe's selectors (validating
//! every name), and probe snapshots to `dpu.v1.CounterSnapshot`.

use std::time::UNIX_EPOCH;

use dpu_probe::counters::CounterSelector;
use dpu_probe::snapshot::{Kind, Snapshot, Source, Unit};
use dpu_proto::pbjson_types::Timestamp;
use dpu_proto::v1::{self, counter_selector::Selector};
use tonic::Status;

use super::status::{invalid, not_yet};

/// Checks and converts the request's selectors. OVS flow and volume counters belong to
/// backends that are not built yet: asking for them is `UNIMPLEMENTED`, never an empty
/// answer that looks like "no traffic".
pub(crate) fn selectors_from_wire(
    selectors: &[v1::CounterSelector],
) -> Result<Vec<CounterSelector>, Status> {
    selectors
        .iter()
        .enumerate()
        .map(|(i, selector)| {
            let field = |name: &str| format!("selectors[{i}].{name}");
            let nonempty = |s: &str| (!s.is_empty()).then(|| s.to_owned());
            let converted = match &selector.selector {
                None => return Err(invalid(&format!("selectors[{i}]"), "no selector set")),
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
                Some(Selector::Volumes(_)) => {
                    return Err(not_yet(
                        "Counters volume selector",
                        "nvmeof: storage backends",
                    ))
                }
            };
            converted
                .validate()
                .map_err(|e| invalid(&format!("selectors[{i}]"), e))?;
            Ok(converted)
        })
        .collect()
}

fn unit(unit: Unit) -> v1::CounterUnit {
    match unit {
        Unit::Bytes => v1::CounterUnit::Bytes,
        Unit::Packets => v1::CounterUnit::Packets,
        Unit::Operations => v1::CounterUnit::Operations,
        Unit::Events => v1::CounterUnit::Events,
        Unit::Milliseconds => v1::CounterUnit::Milliseconds,
        Unit::Ticks => v1::CounterUnit::Ticks,
        _ => v1::CounterUnit::Unspecified,
    }
}

fn kind(kind: Kind) -> v1::CounterKind {
    match kind {
        Kind::Cumulative => v1::CounterKind::Cumulative,
        Kind::Gauge => v1::CounterKind::Gauge,
    }
}

/// The selector a source error is reported under, so a client can match it to its
/// request.
fn error_selector(source: Source, object: &str) -> v1::CounterSelector {
    let last = object.rsplit('/').next().unwrap_or(object).to_owned();
    let selector = match source {
        Source::Rdma | Source::RdmaHw => Selector::Rdma(v1::RdmaSelector {
            device: object
                .strip_prefix("rdmaDevices/")
                .and_then(|rest| rest.split('/').next())
                .unwrap_or_default()
                .to_owned(),
            port: 0,
        }),
        Source::Tc => Selector::Tc(v1::TcSelector {
            ifname: object
                .strip_prefix("netdevs/")
                .and_then(|rest| rest.split('/').next())
                .unwrap_or_default()
                .to_owned(),
        }),
        Source::Block => Selector::Block(v1::BlockSelector { device: last }),
        _ => Selector::Netdev(v1::NetdevSelector {
            ifname: object
                .strip_prefix("netdevs/")
                .and_then(|rest| rest.split('/').next())
                .unwrap_or_default()
                .to_owned(),
        }),
    };
    v1::CounterSelector {
        selector: Some(selector),
    }
}

/// A probe snapshot on the wire.
pub(crate) fn snapshot_to_wire(snapshot: &Snapshot) -> v1::CounterSnapshot {
    let taken_at = snapshot
        .taken_at
        .duration_since(UNIX_EPOCH)
        .ok()
        .map(|d| Timestamp {
            seconds: i64::try_from(d.as_secs()).unwrap_or(i64::MAX),
            nanos: i32::try_from(d.subsec_nanos()).unwrap_or(0),
        });
    let nanos = |d: std::time::Duration| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX);
    v1::CounterSnapshot {
        taken_at,
        monotonic_start_ns: nanos(snapshot.monotonic_start),
        monotonic_end_ns: nanos(snapshot.monotonic_end),
        boot_id: snapshot.boot_id.clone().unwrap_or_default(),
        samples: snapshot
            .samples
            .iter()
            .map(|s| v1::CounterSample {
                source: s.key.source.as_str().to_owned(),
                object: s.key.object.clone(),
                counter: s.key.counter.to_string(),
                value: s.value,
                unit: unit(s.unit).into(),
                kind: kind(s.kind).into(),
                width_bits: s.width_bits,
                scale: s.scale,
            })
            .collect(),
        errors: snapshot
            .errors
            .iter()
            .map(|e| v1::SourceError {
                selector: Some(error_selector(e.source, &e.object)),
                message: format!("{} {}: {}", e.source, e.object, e.message),
            })
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn wire(selector: Selector) -> v1::CounterSelector {
        v1::CounterSelector {
            selector: Some(selector),
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
    fn unbuilt_sources_are_unimplemented_not_empty() {
        let err = selectors_from_wire(&[wire(Selector::Volumes(v1::VolumeSelector::default()))])
            .expect_err("volumes");
        assert_eq!(err.code(), tonic::Code::Unimplemented);
    }

    #[test]
    fn empty_fields_mean_every_object() {
        let got = selectors_from_wire(&[
            wire(Selector::Rdma(v1::RdmaSelector::default())),
            wire(Selector::Netdev(v1::NetdevSelector::default())),
            wire(Selector::Block(v1::BlockSelector::default())),
        ])
        .expect("valid");
        assert_eq!(got, CounterSelector::defaults());
    }
}
