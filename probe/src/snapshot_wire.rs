//! The one mapping between the probe's snapshot model and `dpu.v1` (feature `wire`): the
//! agent encodes with it, dpuctl decodes with it, and one table of units and kinds serves
//! both, so the two halves cannot drift apart. Validation of what a client sends stays
//! with the agent's service (it owns the status codes).
//!
//! Above both the snapshot model and the counter selectors it maps (a file of its own,
//! beside [`crate::fabric_wire`], so `snapshot/` never imports `counters/`).

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use dpu_proto::pbjson_types::Timestamp;
use dpu_proto::v1::{self, counter_selector::Selector};

use crate::counters::CounterSelector;
use crate::snapshot::{
    CounterKey, Kind, ReadReport, ReadWindow, Sample, Snapshot, Source, SourceError,
    SourceErrorKind, Unit,
};

/// Every unit with its wire value: the one table both directions read.
const UNITS: [(Unit, v1::CounterUnit); 7] = [
    (Unit::Unspecified, v1::CounterUnit::Unspecified),
    (Unit::Bytes, v1::CounterUnit::Bytes),
    (Unit::Packets, v1::CounterUnit::Packets),
    (Unit::Operations, v1::CounterUnit::Operations),
    (Unit::Events, v1::CounterUnit::Events),
    (Unit::Milliseconds, v1::CounterUnit::Milliseconds),
    (Unit::Ticks, v1::CounterUnit::Ticks),
];

/// A unit on the wire.
pub fn unit_to_wire(unit: Unit) -> v1::CounterUnit {
    UNITS
        .iter()
        .find(|(u, _)| *u == unit)
        .map_or(v1::CounterUnit::Unspecified, |(_, w)| *w)
}

/// A wire unit in the model; an unknown value (a newer agent) is `Unspecified`.
pub fn unit_from_wire(wire: i32) -> Unit {
    UNITS
        .iter()
        .find(|(_, w)| *w as i32 == wire)
        .map_or(Unit::Unspecified, |(u, _)| *u)
}

/// A kind on the wire.
pub fn kind_to_wire(kind: Kind) -> v1::CounterKind {
    match kind {
        Kind::Cumulative => v1::CounterKind::Cumulative,
        Kind::Gauge => v1::CounterKind::Gauge,
    }
}

/// A wire kind in the model: only an explicit gauge is a gauge (deltas of a gauge are
/// never computed, so guessing "gauge" would hide growth).
pub fn kind_from_wire(wire: i32) -> Kind {
    if wire == v1::CounterKind::Gauge as i32 {
        Kind::Gauge
    } else {
        Kind::Cumulative
    }
}

/// Every source error kind with its wire value: the one table both directions read.
const ERROR_KINDS: [(SourceErrorKind, v1::SourceErrorKind); 3] = [
    (
        SourceErrorKind::Unspecified,
        v1::SourceErrorKind::Unspecified,
    ),
    (SourceErrorKind::NotFound, v1::SourceErrorKind::NotFound),
    (SourceErrorKind::Unreadable, v1::SourceErrorKind::Unreadable),
];

/// A source error's kind on the wire.
pub fn error_kind_to_wire(kind: SourceErrorKind) -> v1::SourceErrorKind {
    ERROR_KINDS
        .iter()
        .find(|(k, _)| *k == kind)
        .map_or(v1::SourceErrorKind::Unspecified, |(_, w)| *w)
}

/// A wire source error kind in the model: an older agent's (0) and a newer agent's
/// unknown value are both `Unspecified`, which no client may take for "not found".
pub fn error_kind_from_wire(wire: i32) -> SourceErrorKind {
    ERROR_KINDS
        .iter()
        .find(|(_, w)| *w as i32 == wire)
        .map_or(SourceErrorKind::Unspecified, |(k, _)| *k)
}

/// One sample on the wire.
pub fn sample_to_wire(s: &Sample) -> v1::CounterSample {
    v1::CounterSample {
        source: s.key.source.as_str().to_owned(),
        object: s.key.object.clone(),
        counter: s.key.counter.to_string(),
        value: s.value,
        unit: unit_to_wire(s.unit).into(),
        kind: kind_to_wire(s.kind).into(),
        width_bits: s.width_bits,
        scale: s.scale,
    }
}

/// A probe selector as the agent's request carries it.
pub fn selector_to_wire(selector: &CounterSelector) -> v1::CounterSelector {
    let selector = match selector {
        CounterSelector::Rdma { device, port } => Selector::Rdma(v1::RdmaSelector {
            device: device.clone().unwrap_or_default(),
            port: port.unwrap_or(0),
        }),
        CounterSelector::Netdev { ifname } => Selector::Netdev(v1::NetdevSelector {
            ifname: ifname.clone().unwrap_or_default(),
        }),
        CounterSelector::Tc { ifname } => Selector::Tc(v1::TcSelector {
            ifname: ifname.clone(),
        }),
        CounterSelector::Block { device } => Selector::Block(v1::BlockSelector {
            device: device.clone().unwrap_or_default(),
        }),
    };
    v1::CounterSelector {
        selector: Some(selector),
    }
}

/// The selector a source error is reported under, so a client can match it to its
/// request: an RDMA port's error carries its port (`rdma:mlx5_0/9` comes back as
/// device `mlx5_0`, port 9), a device's carries port 0.
pub fn error_selector(source: Source, object: &str) -> v1::CounterSelector {
    let last = object.rsplit('/').next().unwrap_or(object).to_owned();
    let ifname = || {
        object
            .strip_prefix("netdevs/")
            .and_then(|rest| rest.split('/').next())
            .unwrap_or_default()
            .to_owned()
    };
    let selector = match source {
        Source::Rdma | Source::RdmaHw => {
            let mut parts = object
                .strip_prefix("rdmaDevices/")
                .unwrap_or_default()
                .split('/');
            let device = parts.next().unwrap_or_default().to_owned();
            let port = match (parts.next(), parts.next()) {
                (Some("ports"), Some(port)) => port.parse().unwrap_or(0),
                _ => 0,
            };
            Selector::Rdma(v1::RdmaSelector { device, port })
        }
        Source::Tc => Selector::Tc(v1::TcSelector { ifname: ifname() }),
        Source::Block => Selector::Block(v1::BlockSelector { device: last }),
        Source::Volume => Selector::Volumes(v1::VolumeSelector {
            volume: object.to_owned(),
        }),
        Source::OvsDatapath => Selector::OvsDatapaths(v1::OvsDatapathSelector {
            datapath: object
                .strip_prefix("datapaths/")
                .unwrap_or_default()
                .to_owned(),
        }),
        _ => Selector::Netdev(v1::NetdevSelector { ifname: ifname() }),
    };
    v1::CounterSelector {
        selector: Some(selector),
    }
}

/// A probe snapshot on the wire.
pub fn snapshot_to_wire(snapshot: &Snapshot) -> v1::CounterSnapshot {
    let taken_at = snapshot
        .taken_at
        .duration_since(UNIX_EPOCH)
        .ok()
        .map(|d| Timestamp {
            seconds: i64::try_from(d.as_secs()).unwrap_or(i64::MAX),
            nanos: i32::try_from(d.subsec_nanos()).unwrap_or(0),
        });
    let nanos = |d: Duration| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX);
    v1::CounterSnapshot {
        taken_at,
        monotonic_start_ns: nanos(snapshot.monotonic_start),
        monotonic_end_ns: nanos(snapshot.monotonic_end),
        boot_id: snapshot.boot_id.clone().unwrap_or_default(),
        samples: snapshot.samples.iter().map(sample_to_wire).collect(),
        errors: snapshot
            .errors
            .iter()
            .map(|e| v1::SourceError {
                selector: Some(error_selector(e.source, &e.object)),
                message: format!("{} {}: {}", e.source, e.object, e.message),
                kind: error_kind_to_wire(e.kind).into(),
            })
            .collect(),
        windows: snapshot
            .read
            .windows
            .iter()
            .map(|w| v1::ReadWindow {
                source: w.source.as_str().to_owned(),
                start_ns: nanos(w.start),
                end_ns: nanos(w.end),
            })
            .collect(),
        preempted: snapshot.read.preempted,
        attempts: snapshot.read.attempts,
    }
}

/// The agent's snapshot in the probe's model. Samples from a source this build does not
/// know (a newer agent) are kept as errors rather than dropped, so nothing vanishes
/// silently.
pub fn snapshot_from_wire(wire: &v1::CounterSnapshot) -> Snapshot {
    let taken_at = wire
        .taken_at
        .as_ref()
        .and_then(|t| {
            let secs = u64::try_from(t.seconds).ok()?;
            let nanos = u32::try_from(t.nanos).ok()?;
            UNIX_EPOCH.checked_add(Duration::new(secs, nanos))
        })
        .unwrap_or(SystemTime::UNIX_EPOCH);
    let mut samples = Vec::with_capacity(wire.samples.len());
    let mut errors: Vec<SourceError> = Vec::new();
    for s in &wire.samples {
        let Some(source) = Source::from_wire(&s.source) else {
            errors.push(SourceError {
                source: Source::Netdev,
                object: s.object.clone(),
                message: format!("unknown counter source {:?} from the agent", s.source),
                kind: SourceErrorKind::Unreadable,
            });
            continue;
        };
        samples.push(Sample {
            key: CounterKey {
                source,
                object: s.object.clone(),
                counter: s.counter.clone().into(),
            },
            value: s.value,
            unit: unit_from_wire(s.unit),
            kind: kind_from_wire(s.kind),
            width_bits: s.width_bits,
            scale: s.scale.max(1),
        });
    }
    Snapshot {
        taken_at,
        monotonic_start: Duration::from_nanos(wire.monotonic_start_ns),
        monotonic_end: Duration::from_nanos(wire.monotonic_end_ns),
        boot_id: (!wire.boot_id.is_empty()).then(|| wire.boot_id.clone()),
        samples,
        errors,
        read: ReadReport {
            // A window of a source this build does not know is left out: it only
            // explains the skew, which the snapshot's own bounds already give.
            windows: wire
                .windows
                .iter()
                .filter_map(|w| {
                    Some(ReadWindow {
                        source: Source::from_wire(&w.source)?,
                        start: Duration::from_nanos(w.start_ns),
                        end: Duration::from_nanos(w.end_ns),
                    })
                })
                .collect(),
            preempted: wire.preempted,
            attempts: wire.attempts,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_unit_and_kind_survives_the_round_trip() {
        for (unit, _) in UNITS {
            assert_eq!(unit_from_wire(unit_to_wire(unit) as i32), unit);
        }
        for kind in [Kind::Cumulative, Kind::Gauge] {
            assert_eq!(kind_from_wire(kind_to_wire(kind) as i32), kind);
        }
        assert_eq!(unit_from_wire(9999), Unit::Unspecified);
    }

    #[test]
    fn every_error_kind_survives_the_round_trip_and_an_old_agent_is_unspecified() {
        for (kind, _) in ERROR_KINDS {
            assert_eq!(error_kind_from_wire(error_kind_to_wire(kind) as i32), kind);
        }
        // An agent that predates the field sends 0; a newer one may send a value this
        // build does not know. Neither may read as "not found".
        let old = v1::SourceError {
            selector: None,
            message: "netdev netdevs/x: no such interface".to_owned(),
            ..Default::default()
        };
        assert_eq!(error_kind_from_wire(old.kind), SourceErrorKind::Unspecified);
        assert_eq!(error_kind_from_wire(99), SourceErrorKind::Unspecified);
    }

    #[test]
    fn an_error_is_reported_under_the_selector_that_names_its_object() {
        let rdma = |device: &str, port: u32| {
            Some(Selector::Rdma(v1::RdmaSelector {
                device: device.to_owned(),
                port,
            }))
        };
        let cases = [
            (
                Source::Rdma,
                "rdmaDevices/mlx5_0/ports/9",
                rdma("mlx5_0", 9),
            ),
            (Source::RdmaHw, "rdmaDevices/mlx5_0", rdma("mlx5_0", 0)),
            (Source::Rdma, "rdmaDevices", rdma("", 0)),
            (
                Source::Netdev,
                "netdevs/pf0hpf",
                Some(Selector::Netdev(v1::NetdevSelector {
                    ifname: "pf0hpf".to_owned(),
                })),
            ),
            (
                Source::Block,
                "blockDevices/nvme9n1",
                Some(Selector::Block(v1::BlockSelector {
                    device: "nvme9n1".to_owned(),
                })),
            ),
        ];
        for (source, object, want) in cases {
            assert_eq!(error_selector(source, object).selector, want, "{object}");
        }
    }

    #[test]
    fn a_snapshot_survives_the_round_trip_and_unknown_sources_are_errors() {
        let snapshot = Snapshot {
            taken_at: UNIX_EPOCH + Duration::from_secs(1_700_000_000),
            monotonic_start: Duration::from_nanos(5),
            monotonic_end: Duration::from_nanos(9),
            boot_id: Some("b".to_owned()),
            samples: vec![
                Sample::cumulative(
                    Source::Rdma,
                    "rdmaDevices/mlx5_0/ports/1",
                    "port_rcv_data",
                    40,
                    Unit::Bytes,
                )
                .with_width(32)
                .scaled(4),
                Sample::gauge(Source::Netdev, "netdevs/p0", "mtu", 9000, Unit::Unspecified),
                Sample::cumulative(Source::Volume, "volumes/r0n1", "bytes_read", 7, Unit::Bytes),
            ],
            errors: Vec::new(),
            read: ReadReport {
                windows: vec![ReadWindow {
                    source: Source::Rdma,
                    start: Duration::from_nanos(5),
                    end: Duration::from_nanos(9),
                }],
                preempted: true,
                attempts: 2,
            },
        };
        let mut wire = snapshot_to_wire(&snapshot);
        assert_eq!(snapshot_from_wire(&wire), snapshot);
        wire.samples.push(v1::CounterSample {
            source: "quantum".into(),
            ..Default::default()
        });
        let back = snapshot_from_wire(&wire);
        assert_eq!(back.samples.len(), 3);
        assert_eq!(back.errors.len(), 1, "unknown source reported, not dropped");
        assert_eq!(back.skew(), Duration::from_nanos(4));
    }
}
