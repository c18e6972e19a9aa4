//! The layout of a counter tree: which families a reading's series fall into, in what
//! order, under what names and labels, encoded once per format as a [`Template`] and
//! kept while the tree stays the same. Scrape after scrape the tree is the same (only the
//! values change), so a scrape copies the encoded names and writes the values; a tree that
//! changes at all (a netdev appears or vanishes, a counter is renamed, a representor's role
//! changes) has different [`SeriesId`]s and gets a new layout.
//!
//! The text is prometheus-client's own encoding of the families (with placeholder values
//! cut out again), so names, `# HELP`/`# TYPE`/`# UNIT` lines and label escaping are
//! exactly what the encoder writes.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, PoisonError};

use dpu_probe::snapshot::{CounterKey, Kind, Sample, Unit};
use prometheus_client::collector::Collector;
use prometheus_client::encoding::{prometheus_text, text, DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::gauge::ConstGauge;
use prometheus_client::metrics::MetricType;
use prometheus_client::registry::Registry;

use super::format::Format;
use super::names::{family_of, help_of, labels_of, FamilyKey, Labels, Value};
use super::template::Template;

/// Largest layout the cache keeps (its encoded text in both formats and the series it
/// was built for). A DPU's tree (2 RDMA ports, 66 netdevs: 1,700 series) takes about
/// 0.5 MiB; a tree past this bound is laid out again for every reading rather than held
/// in the agent's 12-16 MiB.
const MAX_CACHED_BYTES: usize = 4 << 20;

/// What names one series: everything its family name, help and labels are made of, and
/// nothing else (not its value). Two readings with equal ids have the same layout.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum SeriesId {
    /// A counter of the probe or of a backend.
    Sample {
        /// Source, object and counter name.
        key: CounterKey,
        /// What the value counts: the family's unit suffix.
        unit: Unit,
        /// Counter or gauge.
        kind: Kind,
        /// The representor role of the object's netdev (its `role` label), or empty.
        role: &'static str,
    },
    /// A series the agent names itself (an uplink's per-priority counter).
    Series {
        /// Its family.
        key: FamilyKey,
        /// The family's help.
        help: &'static str,
        /// Its labels.
        labels: Labels,
    },
}

impl SeriesId {
    /// The series' family, the family's help and the series' labels.
    fn describe(&self) -> (FamilyKey, Cow<'static, str>, Labels) {
        match self {
            Self::Sample {
                key,
                unit,
                kind,
                role,
            } => (
                family_of(key, *unit, *kind),
                Cow::Owned(help_of(key.source, &key.counter)),
                labels_of(key.source, &key.object, role),
            ),
            Self::Series { key, help, labels } => {
                (key.clone(), Cow::Borrowed(*help), labels.clone())
            }
        }
    }
}

/// A reading's series as a layout sees them, without taking them: the series the agent
/// names itself, then its samples with each one's role (`roles[i]` is `samples[i]`'s).
/// The samples stay the reading's, to go back to their sampler; only a new tree's layout
/// copies their names.
#[derive(Debug, Clone, Copy)]
pub(crate) struct SeriesView<'a> {
    /// [`SeriesId::Series`] ids, first in reading order.
    pub(crate) named: &'a [SeriesId],
    /// Then the samples, as [`SeriesId::Sample`] ids.
    pub(crate) samples: &'a [Sample],
    /// Each sample's `role` label.
    pub(crate) roles: &'a [&'static str],
}

impl SeriesView<'_> {
    /// Whether `ids` are exactly these series, in this order (values aside).
    fn is(&self, ids: &[SeriesId]) -> bool {
        if ids.len() != self.named.len() + self.samples.len()
            || self.roles.len() != self.samples.len()
        {
            return false;
        }
        let (named, sampled) = ids.split_at(self.named.len());
        named == self.named
            && sampled.iter().zip(self.samples.iter().zip(self.roles)).all(
                |(id, (sample, role))| match id {
                    SeriesId::Sample {
                        key,
                        unit,
                        kind,
                        role: laid_out,
                    } => {
                        *key == sample.key
                            && *unit == sample.unit
                            && *kind == sample.kind
                            && laid_out == role
                    }
                    SeriesId::Series { .. } => false,
                },
            )
    }

    /// The series as owned ids, for a new layout.
    pub(crate) fn to_ids(self) -> Vec<SeriesId> {
        let mut ids = Vec::with_capacity(self.named.len() + self.samples.len());
        ids.extend_from_slice(self.named);
        ids.extend(
            self.samples
                .iter()
                .zip(self.roles)
                .map(|(sample, role)| SeriesId::Sample {
                    key: sample.key.clone(),
                    unit: sample.unit,
                    kind: sample.kind,
                    role,
                }),
        );
        ids
    }
}

/// Why a layout could not be made; the scrape then fails (HTTP 500) and the next reading
/// tries again.
#[derive(Debug, thiserror::Error)]
pub(crate) enum LayoutError {
    /// The encoder refused the families.
    #[error("the counter families could not be encoded")]
    Encode(#[from] std::fmt::Error),
    /// The encoder wrote a series line this code does not recognize.
    #[error("unexpected series line in family {family}: {line:?}")]
    SeriesLine {
        /// The family.
        family: String,
        /// What was found where the series line was expected.
        line: String,
    },
}

/// One family as the encoder gets it: its series' labels and value slots, sorted by
/// labels.
#[derive(Debug)]
struct FamilyShape {
    key: FamilyKey,
    help: Cow<'static, str>,
    series: Vec<(Labels, usize)>,
}

/// The families of `ids`, in name order, each series once: two counter names that
/// sanitize to one (`rx-x` and `rx_x`) would give a duplicate series, which Prometheus
/// rejects for the whole scrape, so the first one is kept (the sort is stable). Returns
/// the families and the series dropped.
fn shapes(ids: &[SeriesId]) -> (Vec<FamilyShape>, usize) {
    let mut families: BTreeMap<FamilyKey, FamilyShape> = BTreeMap::new();
    for (slot, id) in ids.iter().enumerate() {
        let (key, help, labels) = id.describe();
        families
            .entry(key)
            .or_insert_with_key(|key| FamilyShape {
                key: key.clone(),
                help,
                series: Vec::new(),
            })
            .series
            .push((labels, slot));
    }
    let mut collisions = 0;
    let families: Vec<FamilyShape> = families
        .into_values()
        .map(|mut family| {
            let before = family.series.len();
            family.series.sort_by(|a, b| a.0.cmp(&b.0));
            family
                .series
                .dedup_by(|later, earlier| later.0 == earlier.0);
            collisions += before - family.series.len();
            family
        })
        .collect();
    (families, collisions)
}

/// Encodes one family of `shapes` with the values of its slots.
#[derive(Debug)]
struct FamilyCollector {
    shapes: Arc<Vec<FamilyShape>>,
    family: usize,
    values: Arc<Vec<Value>>,
}

impl Collector for FamilyCollector {
    fn encode(&self, mut encoder: DescriptorEncoder<'_>) -> Result<(), std::fmt::Error> {
        match self.shapes.get(self.family) {
            Some(family) => encode_shape(&mut encoder, family, &self.values),
            None => Ok(()),
        }
    }
}

/// Encodes `family` with the values of its slots.
fn encode_shape(
    encoder: &mut DescriptorEncoder<'_>,
    family: &FamilyShape,
    values: &[Value],
) -> Result<(), std::fmt::Error> {
    let key = &family.key;
    let metric_type = if key.counter {
        MetricType::Counter
    } else {
        MetricType::Gauge
    };
    let unit = key.metric_unit();
    let mut metric =
        encoder.encode_descriptor(&key.stem, &family.help, unit.as_ref(), metric_type)?;
    for (labels, slot) in &family.series {
        let series = metric.encode_family(labels)?;
        let value = values.get(*slot).copied().unwrap_or(Value::Integer(0));
        match (key.counter, value) {
            (true, Value::Integer(v)) => ConstCounter::new(v).encode(series)?,
            (true, Value::Float(v)) => ConstCounter::new(v).encode(series)?,
            (false, Value::Integer(v)) => ConstGauge::new(v).encode(series)?,
            (false, Value::Float(v)) => ConstGauge::new(v).encode(series)?,
        }
    }
    Ok(())
}

/// prometheus-client's encoding of one family in `format`.
fn encode_family(
    format: Format,
    shapes: &Arc<Vec<FamilyShape>>,
    family: usize,
    values: &Arc<Vec<Value>>,
) -> Result<String, std::fmt::Error> {
    let mut registry = Registry::default();
    registry.register_collector(Box::new(FamilyCollector {
        shapes: Arc::clone(shapes),
        family,
        values: Arc::clone(values),
    }));
    let mut out = String::new();
    match format {
        Format::OpenMetrics => text::encode_registry(&mut out, &registry)?,
        Format::Text => prometheus_text::encode(&mut out, &registry)?,
    }
    Ok(out)
}

/// The template of every family in `format`: each family encoded with every value 0,
/// then its last lines (one per series: a series line holds no raw newline, its label
/// values are escaped) cut before the `0`. Splitting from the end leaves everything
/// before the series lines to the header, whatever its help text holds.
fn template(
    format: Format,
    shapes: &Arc<Vec<FamilyShape>>,
    zeros: &Arc<Vec<Value>>,
) -> Result<Template, LayoutError> {
    let mut template = Template::default();
    for (index, family) in shapes.iter().enumerate() {
        let encoded = encode_family(format, shapes, index, zeros)?;
        let mut lines = Vec::with_capacity(family.series.len());
        let mut end = encoded.len();
        for _ in &family.series {
            let body = encoded[..end].strip_suffix('\n').unwrap_or(&encoded[..end]);
            let start = body.rfind('\n').map_or(0, |newline| newline + 1);
            let line = &encoded[start..end];
            let Some(prefix) = line.strip_suffix(" 0\n") else {
                return Err(LayoutError::SeriesLine {
                    family: family.key.stem.clone(),
                    line: line.to_owned(),
                });
            };
            // The prefix keeps its trailing space.
            lines.push(&line[..=prefix.len()]);
            end = start;
        }
        template.push_text(&encoded[..end]);
        for ((_, slot), line) in family.series.iter().zip(lines.iter().rev()) {
            template.push_text(line);
            template.push_value(*slot);
            template.push_text("\n");
        }
    }
    Ok(template)
}

/// A counter tree's families, encoded in both formats with the values cut out.
#[derive(Debug)]
pub(crate) struct Layout {
    /// The series it was built for, in reading order: a reading whose ids are equal gets
    /// this layout.
    ids: Vec<SeriesId>,
    /// The families in Prometheus text 0.0.4.
    text: Template,
    /// The families in OpenMetrics (without `# EOF`: the source health follows them).
    open_metrics: Template,
    /// Series dropped because another had their name and labels.
    collisions: usize,
    /// Series laid out.
    series: usize,
}

impl Layout {
    /// Lays out the series `ids` (a reading's, in reading order: value `i` of the reading
    /// is series `ids[i]`).
    pub(crate) fn build(ids: Vec<SeriesId>) -> Result<Self, LayoutError> {
        let (shapes, collisions) = shapes(&ids);
        let series = shapes.iter().map(|f| f.series.len()).sum();
        let shapes = Arc::new(shapes);
        let zeros = Arc::new(vec![Value::Integer(0); ids.len()]);
        Ok(Self {
            text: template(Format::Text, &shapes, &zeros)?,
            open_metrics: template(Format::OpenMetrics, &shapes, &zeros)?,
            ids,
            collisions,
            series,
        })
    }

    /// The families' text in `format`, values cut out.
    pub(crate) fn template(&self, format: Format) -> &Template {
        match format {
            Format::Text => &self.text,
            Format::OpenMetrics => &self.open_metrics,
        }
    }

    /// Series dropped because another counter already had their name and labels.
    pub(crate) fn collisions(&self) -> usize {
        self.collisions
    }

    /// Series laid out (for the scrape log).
    pub(crate) fn series(&self) -> usize {
        self.series
    }

    /// Bytes held: the templates and the ids' strings.
    fn heap_bytes(&self) -> usize {
        let ids: usize = self
            .ids
            .iter()
            .map(|id| match id {
                SeriesId::Sample { key, .. } => {
                    key.object.capacity()
                        + match &key.counter {
                            Cow::Owned(counter) => counter.capacity(),
                            Cow::Borrowed(_) => 0,
                        }
                }
                SeriesId::Series { labels, .. } => labels
                    .iter()
                    .map(|(_, value)| value.capacity() + std::mem::size_of::<(&str, String)>())
                    .sum(),
            })
            .sum();
        self.text.heap_bytes()
            + self.open_metrics.heap_bytes()
            + self.ids.capacity() * std::mem::size_of::<SeriesId>()
            + ids
    }
}

/// The layout of the latest reading's tree, kept for the next reading (one layout: the
/// agent has one tree).
#[derive(Debug, Default)]
pub(crate) struct LayoutCache {
    /// `None` before the first reading, and after a tree too large to keep.
    last: Mutex<Option<Arc<Layout>>>,
}

impl LayoutCache {
    /// The layout of `series`: the kept one when the tree is the same, else a new one (kept
    /// in its place when within [`MAX_CACHED_BYTES`]).
    pub(crate) fn layout(&self, series: &SeriesView<'_>) -> Result<Arc<Layout>, LayoutError> {
        let mut last = self.last.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(layout) = last.as_ref() {
            if series.is(&layout.ids) {
                return Ok(Arc::clone(layout));
            }
        }
        // Dropped first: the old tree's layout is not held beside the new one.
        *last = None;
        let layout = Arc::new(Layout::build(series.to_ids())?);
        let bytes = layout.heap_bytes();
        if bytes <= MAX_CACHED_BYTES {
            *last = Some(Arc::clone(&layout));
        }
        tracing::debug!(
            series = layout.series(),
            bytes,
            kept = bytes <= MAX_CACHED_BYTES,
            "the counter tree changed: metrics layout built"
        );
        Ok(layout)
    }
}

/// What prometheus-client writes for the series `ids` with `values`, every family in one
/// registry, as the scrape did before layouts were kept: what a layout's output must equal
/// byte for byte.
#[cfg(test)]
pub(crate) fn encoder_reference(ids: &[SeriesId], values: &[Value], format: Format) -> String {
    /// Every family, through one collector.
    #[derive(Debug)]
    struct All(Vec<FamilyShape>, Vec<Value>);
    impl Collector for All {
        fn encode(&self, mut encoder: DescriptorEncoder<'_>) -> Result<(), std::fmt::Error> {
            for family in &self.0 {
                encode_shape(&mut encoder, family, &self.1)?;
            }
            Ok(())
        }
    }
    let all = All(shapes(ids).0, values.to_vec());
    let mut registry = Registry::default();
    registry.register_collector(Box::new(all));
    let mut out = String::new();
    match format {
        Format::OpenMetrics => text::encode_registry(&mut out, &registry),
        Format::Text => prometheus_text::encode(&mut out, &registry),
    }
    .expect("encode");
    out
}
