//! `dpu.v1` counter messages to and from the probe's snapshot model, so snapshots taken by
//! the agent and by `dpuctl` itself are diffed by the same code.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use dpu_probe::counters::CounterSelector;
use dpu_probe::snapshot::{CounterKey, Kind, Sample, Snapshot, Source, SourceError, Unit};
use dpu_proto::v1::{self, counter_selector::Selector};

/// What `dpuctl dpu counters -s` accepts: the probe's selectors, which the agent reads
/// from sysfs and netlink, plus `volume[:ID]`, which its storage backend answers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AgentSelector {
    /// A selector the agent's probe reads.
    Probe(CounterSelector),
    /// One volume (`r0n1` or `volumes/r0n1`), or every volume the agent manages.
    Volume(Option<String>),
}

impl std::str::FromStr for AgentSelector {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        match text.split_once(':') {
            None if text == "volume" => Ok(Self::Volume(None)),
            Some(("volume", id)) if !id.is_empty() => Ok(Self::Volume(Some(
                id.strip_prefix("volumes/").unwrap_or(id).to_owned(),
            ))),
            Some(("volume", _)) => Err(format!("{text:?}: volume: needs an id, e.g. volume:r0n1")),
            _ => text
                .parse::<CounterSelector>()
                .map(Self::Probe)
                .map_err(|e| e.to_string()),
        }
    }
}

impl AgentSelector {
    /// The selector as the agent's API takes it.
    pub fn to_wire(&self) -> v1::CounterSelector {
        match self {
            Self::Probe(selector) => selector_to_wire(selector),
            Self::Volume(id) => v1::CounterSelector {
                selector: Some(Selector::Volumes(v1::VolumeSelector {
                    volume: id
                        .as_ref()
                        .map(|id| format!("volumes/{id}"))
                        .unwrap_or_default(),
                })),
            },
        }
    }
}

/// A probe selector as the agent's request expects it.
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

fn unit(wire: i32) -> Unit {
    match v1::CounterUnit::try_from(wire) {
        Ok(v1::CounterUnit::Bytes) => Unit::Bytes,
        Ok(v1::CounterUnit::Packets) => Unit::Packets,
        Ok(v1::CounterUnit::Operations) => Unit::Operations,
        Ok(v1::CounterUnit::Events) => Unit::Events,
        Ok(v1::CounterUnit::Milliseconds) => Unit::Milliseconds,
        Ok(v1::CounterUnit::Ticks) => Unit::Ticks,
        _ => Unit::Unspecified,
    }
}

/// Unit names for tables.
pub fn unit_name(unit: Unit) -> &'static str {
    match unit {
        Unit::Bytes => "bytes",
        Unit::Packets => "packets",
        Unit::Operations => "ops",
        Unit::Events => "events",
        Unit::Milliseconds => "ms",
        Unit::Ticks => "ticks",
        _ => "-",
    }
}

/// The agent's snapshot in the probe's model. Samples from a source this `dpuctl` does not
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
            unit: unit(s.unit),
            kind: if s.kind == v1::CounterKind::Gauge as i32 {
                Kind::Gauge
            } else {
                Kind::Cumulative
            },
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
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn samples_keep_unit_width_and_scale() {
        let wire = v1::CounterSnapshot {
            monotonic_start_ns: 5,
            monotonic_end_ns: 9,
            boot_id: "b".into(),
            samples: vec![
                v1::CounterSample {
                    source: "rdma".into(),
                    object: "rdmaDevices/mlx5_0/ports/1".into(),
                    counter: "port_rcv_data".into(),
                    value: 40,
                    unit: v1::CounterUnit::Bytes as i32,
                    kind: v1::CounterKind::Cumulative as i32,
                    width_bits: 32,
                    scale: 4,
                },
                v1::CounterSample {
                    source: "quantum".into(),
                    ..Default::default()
                },
            ],
            ..Default::default()
        };
        let snap = snapshot_from_wire(&wire);
        assert_eq!(snap.samples.len(), 1);
        let s = &snap.samples[0];
        assert_eq!(
            (s.value, s.unit, s.width_bits, s.scale),
            (40, Unit::Bytes, 32, 4)
        );
        assert_eq!(snap.skew(), Duration::from_nanos(4));
        assert_eq!(snap.errors.len(), 1, "unknown source reported, not dropped");
    }
}
