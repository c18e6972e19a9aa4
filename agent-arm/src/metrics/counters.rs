//! One scrape's counters, grouped into Prometheus families: the probe's snapshot, the
//! storage volumes, the OVS flow levels, and which sources could be read. Built once per
//! reading and encoded for every scrape that shares it (in either text format).

use std::collections::BTreeMap;
use std::sync::Arc;

use dpu_probe::snapshot::{Sample, Source};
use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::gauge::ConstGauge;
use prometheus_client::metrics::MetricType;

use super::names::{family_of, help_of, labels_of, FamilyKey, Labels, Value};
use super::ovs_levels::FlowLevels;

/// The series of one family.
#[derive(Debug)]
struct FamilyData {
    help: String,
    series: Vec<(Labels, Value)>,
}

/// Everything one reading produced, ready to encode.
#[derive(Debug, Default)]
pub(crate) struct Reading {
    families: BTreeMap<FamilyKey, FamilyData>,
    /// Each source read, and whether every object of it was.
    source_up: BTreeMap<&'static str, bool>,
    /// Series dropped because another counter already had their name and labels.
    pub(crate) collisions: usize,
    flows: Option<FlowLevels>,
}

impl Reading {
    /// Marks `source` as read: up, unless [`Self::read_named`] already marked it not fully read.
    pub(crate) fn read(&mut self, source: Source) {
        self.source_up.entry(source.as_str()).or_insert(true);
    }

    /// Marks the named source (one that is not a probe snapshot source, e.g. `ethtool`)
    /// as read, or as not fully read.
    pub(crate) fn read_named(&mut self, source: &'static str, complete: bool) {
        let up = self.source_up.entry(source).or_insert(true);
        *up &= complete;
    }

    /// Every source this reading read or tried to, by wire name.
    pub(crate) fn sources(&self) -> impl Iterator<Item = &'static str> + '_ {
        self.source_up.keys().copied()
    }

    /// Adds one series that does not come from a probe sample.
    pub(crate) fn add_series(&mut self, key: FamilyKey, help: &str, labels: Labels, value: u64) {
        self.families
            .entry(key)
            .or_insert_with(|| FamilyData {
                help: help.to_owned(),
                series: Vec::new(),
            })
            .series
            .push((labels, Value::Integer(value)));
    }

    /// Adds samples; `role_of` gives a netdev's representor role.
    pub(crate) fn add_samples(&mut self, samples: &[Sample], role_of: &dyn Fn(&str) -> String) {
        for sample in samples {
            let (key, value) = family_of(sample);
            let labels = labels_of(sample.key.source, &sample.key.object, role_of);
            self.families
                .entry(key)
                .or_insert_with(|| FamilyData {
                    help: help_of(sample.key.source, &sample.key.counter),
                    series: Vec::new(),
                })
                .series
                .push((labels, value));
        }
        // Two kernel names that sanitize to one (`rx-x` and `rx_x`) would give a
        // duplicate series, which Prometheus rejects for the whole scrape: the first read
        // is kept (the sort is stable).
        for family in self.families.values_mut() {
            let before = family.series.len();
            family.series.sort_by(|a, b| a.0.cmp(&b.0));
            family
                .series
                .dedup_by(|later, earlier| later.0 == earlier.0);
            self.collisions += before - family.series.len();
        }
    }

    /// The OVS flow levels, when they were read.
    pub(crate) fn set_flows(&mut self, flows: FlowLevels) {
        self.flows = Some(flows);
    }

    /// Series in this reading (for the scrape log).
    pub(crate) fn series(&self) -> usize {
        self.families.values().map(|f| f.series.len()).sum()
    }
}

/// Encodes a shared [`Reading`] as a registry collector.
#[derive(Debug)]
pub(crate) struct ReadingCollector(pub(crate) Arc<Reading>);

impl Collector for ReadingCollector {
    fn encode(&self, mut encoder: DescriptorEncoder<'_>) -> Result<(), std::fmt::Error> {
        let reading = &self.0;
        for (key, family) in &reading.families {
            let unit = key.metric_unit();
            let metric_type = if key.counter {
                MetricType::Counter
            } else {
                MetricType::Gauge
            };
            let mut metric =
                encoder.encode_descriptor(&key.stem, &family.help, unit.as_ref(), metric_type)?;
            for (labels, value) in &family.series {
                let series = metric.encode_family(labels)?;
                match (key.counter, *value) {
                    (true, Value::Integer(v)) => ConstCounter::new(v).encode(series)?,
                    (true, Value::Float(v)) => ConstCounter::new(v).encode(series)?,
                    (false, Value::Integer(v)) => ConstGauge::new(v).encode(series)?,
                    (false, Value::Float(v)) => ConstGauge::new(v).encode(series)?,
                }
            }
        }
        if !reading.source_up.is_empty() {
            let mut metric = encoder.encode_descriptor(
                "dpu_counters_source_up",
                "1 when every object of the source was read in this scrape, 0 when one was not (its counters are then absent, never zero)",
                None,
                MetricType::Gauge,
            )?;
            for (source, up) in &reading.source_up {
                let labels = [("source", *source)];
                ConstGauge::new(i64::from(*up)).encode(metric.encode_family(&labels)?)?;
            }
        }
        if let Some(flows) = &reading.flows {
            flows.encode(&mut encoder)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use dpu_probe::snapshot::Unit;
    use prometheus_client::registry::Registry;

    fn text(reading: Reading) -> String {
        let mut registry = Registry::default();
        registry.register_collector(Box::new(ReadingCollector(Arc::new(reading))));
        let mut out = String::new();
        prometheus_client::encoding::text::encode(&mut out, &registry).expect("encode");
        out
    }

    #[test]
    fn samples_become_typed_families_with_units_labels_and_source_health() {
        let mut reading = Reading::default();
        reading.read(Source::Rdma);
        reading.read(Source::Netdev);
        reading.read_named("netdev", false);
        reading.add_samples(
            &[
                Sample::cumulative(
                    Source::Rdma,
                    "rdmaDevices/mlx5_0/ports/1",
                    "port_rcv_data",
                    25,
                    Unit::Bytes,
                )
                .scaled(4),
                Sample::cumulative(Source::Netdev, "netdevs/p0", "rx_packets", 7, Unit::Packets),
                Sample::cumulative(Source::Netdev, "netdevs/p0", "rx-packets", 8, Unit::Packets),
            ],
            &|_| "uplink".to_owned(),
        );
        assert_eq!(
            reading.collisions, 1,
            "rx-packets is dpu_netdev_rx_packets too"
        );
        let out = text(reading);
        assert!(
            out.contains("# TYPE dpu_rdma_port_rcv_data_bytes counter\n"),
            "{out}"
        );
        assert!(
            out.contains("# UNIT dpu_rdma_port_rcv_data_bytes bytes\n"),
            "{out}"
        );
        assert!(
            out.contains("dpu_rdma_port_rcv_data_bytes_total{device=\"mlx5_0\",port=\"1\"} 100\n"),
            "{out}"
        );
        assert!(
            out.contains("dpu_netdev_rx_packets_total{netdev=\"p0\",role=\"uplink\"} 7\n"),
            "{out}"
        );
        assert!(
            !out.contains("} 8\n"),
            "the colliding series is dropped: {out}"
        );
        assert!(
            out.contains("dpu_counters_source_up{source=\"netdev\"} 0\n"),
            "{out}"
        );
        assert!(
            out.contains("dpu_counters_source_up{source=\"rdma\"} 1\n"),
            "{out}"
        );
    }

    #[test]
    fn label_values_are_escaped() {
        let mut reading = Reading::default();
        reading.add_samples(
            &[Sample::cumulative(
                Source::Volume,
                "volumes/a\"b\\c",
                "read_ops",
                1,
                Unit::Operations,
            )],
            &|_| String::new(),
        );
        let out = text(reading);
        assert!(
            out.contains("dpu_volume_read_ops_total{volume=\"a\\\"b\\\\c\"} 1"),
            "{out}"
        );
    }
}
