//! One scrape's counters: the probe's snapshot, the storage volumes, the OVS flow levels,
//! and which sources could be read. Built once per reading as ids and values, laid out
//! through the [`LayoutCache`] (the names and labels of an unchanged tree are encoded
//! once, not per reading), and encoded for every scrape that shares it (in either text
//! format).

use std::collections::BTreeMap;
use std::sync::Arc;

use dpu_probe::snapshot::{Sample, Source};
use prometheus_client::collector::Collector;
use prometheus_client::encoding::{prometheus_text, text, DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::gauge::ConstGauge;
use prometheus_client::metrics::MetricType;
use prometheus_client::registry::Registry;

use super::format::Format;
use super::layout::{Layout, LayoutCache, LayoutError, SeriesId, SeriesView};
use super::names::{netdev_of, value_of, FamilyKey, Labels, Value};
use super::ovs_levels::FlowLevels;

/// What one reading produced, before it is laid out: the series the agent names itself
/// with their values, then every sample (kept whole: their names are compared with the
/// kept layout's, not moved into it, so the samples can go back to the sampler that read
/// them), and the health of the sources.
#[derive(Debug, Default)]
pub(crate) struct Reading {
    /// [`Self::add_series`]'s series, first in reading order, and their values.
    series: Vec<SeriesId>,
    series_values: Vec<Value>,
    /// [`Self::add_samples`]' samples, after them in reading order, and each one's
    /// netdev's representor role (the same length).
    samples: Vec<Sample>,
    roles: Vec<&'static str>,
    health: Health,
}

/// The part of a reading encoded apart from the counter families, at every scrape: which
/// sources were read, and the OVS flow levels.
#[derive(Debug, Default)]
struct Health {
    /// Each source read, and whether every object of it was.
    source_up: BTreeMap<&'static str, bool>,
    flows: Option<FlowLevels>,
}

impl Reading {
    /// Marks `source` as read: up, unless [`Self::read_named`] already marked it not fully read.
    pub(crate) fn read(&mut self, source: Source) {
        self.health.source_up.entry(source.as_str()).or_insert(true);
    }

    /// Marks the named source (one that is not a probe snapshot source, e.g. `ethtool`)
    /// as read, or as not fully read.
    pub(crate) fn read_named(&mut self, source: &'static str, complete: bool) {
        let up = self.health.source_up.entry(source).or_insert(true);
        *up &= complete;
    }

    /// Every source this reading read or tried to, by wire name.
    pub(crate) fn sources(&self) -> impl Iterator<Item = &'static str> + '_ {
        self.health.source_up.keys().copied()
    }

    /// Adds one series that does not come from a probe sample.
    pub(crate) fn add_series(
        &mut self,
        key: FamilyKey,
        help: &'static str,
        labels: Labels,
        value: u64,
    ) {
        self.series.push(SeriesId::Series { key, help, labels });
        self.series_values.push(Value::Integer(value));
    }

    /// Adds samples (keeping them, not copying their names); `role_of` gives a netdev's
    /// representor role (empty when it has none). The first vector added is kept as it
    /// is, so a snapshot's samples go back to its sampler in their own vector.
    pub(crate) fn add_samples(
        &mut self,
        samples: Vec<Sample>,
        role_of: &dyn Fn(&str) -> &'static str,
    ) {
        let first = self.samples.len();
        if self.samples.is_empty() && samples.capacity() >= self.samples.capacity() {
            self.samples = samples;
        } else {
            self.samples.extend(samples);
        }
        self.roles.reserve(self.samples.len() - first);
        // A netdev's counters come together: its role is looked up once for them.
        let mut last: Option<(&str, &'static str)> = None;
        for sample in &self.samples[first..] {
            let role = match netdev_of(sample.key.source, &sample.key.object) {
                None => "",
                Some(ifname) => match last {
                    Some((name, role)) if name == ifname => role,
                    _ => {
                        let role = role_of(ifname);
                        last = Some((ifname, role));
                        role
                    }
                },
            };
            self.roles.push(role);
        }
    }

    /// The OVS flow levels, when they were read.
    pub(crate) fn set_flows(&mut self, flows: FlowLevels) {
        self.health.flows = Some(flows);
    }

    /// The reading laid out: through `layouts`, which keeps the layout of an unchanged
    /// tree from one reading to the next. The samples come back with it, their values
    /// taken, for their sampler to build the next snapshot in
    /// (`Sampler::recycle_samples`).
    pub(crate) fn lay_out(self, layouts: &LayoutCache) -> (Readout, Vec<Sample>) {
        let mut values = self.series_values;
        values.reserve(self.samples.len());
        values.extend(self.samples.iter().map(|s| value_of(s.value, s.unit)));
        let layout = layouts.layout(&SeriesView {
            named: &self.series,
            samples: &self.samples,
            roles: &self.roles,
        });
        let readout = Readout {
            layout,
            values,
            health: self.health,
        };
        (readout, self.samples)
    }

    /// Every series' id and value in reading order, as a layout gets them.
    #[cfg(test)]
    pub(crate) fn ids_and_values(&self) -> (Vec<SeriesId>, Vec<Value>) {
        let view = SeriesView {
            named: &self.series,
            samples: &self.samples,
            roles: &self.roles,
        };
        let mut values = self.series_values.clone();
        values.extend(self.samples.iter().map(|s| value_of(s.value, s.unit)));
        (view.to_ids(), values)
    }

    /// The same series and values, without the health.
    #[cfg(test)]
    pub(crate) fn series_copy(&self) -> Self {
        Self {
            series: self.series.clone(),
            series_values: self.series_values.clone(),
            samples: self.samples.clone(),
            roles: self.roles.clone(),
            health: Health::default(),
        }
    }
}

/// A reading ready to encode, shared by the scrapes that arrive while it is the latest.
#[derive(Debug)]
pub(crate) struct Readout {
    layout: Result<Arc<Layout>, LayoutError>,
    values: Vec<Value>,
    health: Health,
}

impl Readout {
    /// Series dropped because another counter already had their name and labels.
    pub(crate) fn collisions(&self) -> usize {
        self.layout.as_ref().map_or(0, |layout| layout.collisions())
    }

    /// Series in this reading (for the scrape log).
    pub(crate) fn series(&self) -> usize {
        self.layout.as_ref().map_or(0, |layout| layout.series())
    }

    /// Why the reading could not be laid out, if it could not.
    pub(crate) fn layout_error(&self) -> Option<&LayoutError> {
        self.layout.as_ref().err()
    }

    /// Roughly the bytes an encoding takes, to size the answer once.
    pub(crate) fn encoded_len(&self, format: Format) -> usize {
        let text = self
            .layout
            .as_ref()
            .map_or(0, |layout| layout.template(format).text_len());
        // Values (up to 20 digits, most far fewer) and the source health.
        text + self.values.len() * 12 + 4096
    }

    /// Appends the counter families and the sources' health in `format` (without the
    /// OpenMetrics `# EOF`).
    pub(crate) fn encode(self: &Arc<Self>, format: Format, out: &mut String) -> std::fmt::Result {
        let layout = self.layout.as_ref().map_err(|_| std::fmt::Error)?;
        layout.template(format).write(out, &self.values);
        let mut registry = Registry::default();
        registry.register_collector(Box::new(HealthCollector(Arc::clone(self))));
        match format {
            Format::OpenMetrics => text::encode_registry(out, &registry),
            Format::Text => prometheus_text::encode(out, &registry),
        }
    }
}

/// Encodes a shared [`Readout`]'s source health and flow levels as a registry collector.
#[derive(Debug)]
struct HealthCollector(Arc<Readout>);

impl Collector for HealthCollector {
    fn encode(&self, mut encoder: DescriptorEncoder<'_>) -> Result<(), std::fmt::Error> {
        let health = &self.0.health;
        if !health.source_up.is_empty() {
            let mut metric = encoder.encode_descriptor(
                "dpu_counters_source_up",
                "1 when every object of the source was read in this scrape, 0 when one was not (its counters are then absent, never zero)",
                None,
                MetricType::Gauge,
            )?;
            for (source, up) in &health.source_up {
                let labels = [("source", *source)];
                ConstGauge::new(i64::from(*up)).encode(metric.encode_family(&labels)?)?;
            }
        }
        if let Some(flows) = &health.flows {
            flows.encode(&mut encoder)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests;
