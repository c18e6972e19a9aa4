//! How a probe sample becomes a Prometheus series: the family name (with the unit suffix
//! Prometheus conventions ask for), the base-unit value, and the labels decoded from the
//! sample's object path. The one place these rules live, so the names docs/metrics.md
//! documents are the names a scrape shows.

use dpu_probe::snapshot::{CounterKey, Kind, Source, Unit};
use prometheus_client::registry::Unit as MetricUnit;

/// A series' family: the name without `_total` or the unit (prometheus-client appends
/// both), its unit, and whether it is a counter.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) struct FamilyKey {
    /// `dpu_netdev_rx` for `dpu_netdev_rx_bytes_total`.
    pub(crate) stem: String,
    /// `Some("bytes")` or `Some("seconds")`: the base unit in the name and `# UNIT`.
    pub(crate) unit: Option<&'static str>,
    /// A counter (`_total`), else a gauge.
    pub(crate) counter: bool,
}

impl FamilyKey {
    /// The unit as prometheus-client wants it.
    pub(crate) fn metric_unit(&self) -> Option<MetricUnit> {
        match self.unit {
            Some("bytes") => Some(MetricUnit::Bytes),
            Some("seconds") => Some(MetricUnit::Seconds),
            _ => None,
        }
    }

    /// The name a query uses for the family's samples: `dpu_netdev_rx_bytes_total`.
    #[cfg(test)]
    pub(crate) fn sample_name(&self) -> String {
        let mut name = self.stem.clone();
        if let Some(unit) = self.unit {
            name.push('_');
            name.push_str(unit);
        }
        if self.counter {
            name.push_str("_total");
        }
        name
    }
}

/// A sample's value in base units: integers stay integers (bytes, packets), milliseconds
/// become fractional seconds.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Value {
    Integer(u64),
    Float(f64),
}

/// A sample's value in base units: milliseconds become fractional seconds, everything
/// else stays the integer the probe read. Kept apart from [`family_of`]: a scrape of an
/// unchanged counter tree needs only the values (the names come from the cached layout).
pub(crate) fn value_of(value: u64, unit: Unit) -> Value {
    match unit {
        // Precision: a u64 of milliseconds as f64 is exact up to 2^53 ms (285,000 years).
        #[allow(clippy::cast_precision_loss)]
        Unit::Milliseconds => Value::Float(value as f64 / 1000.0),
        _ => Value::Integer(value),
    }
}

/// The family a counter belongs to, given its unit and kind.
pub(crate) fn family_of(key: &CounterKey, unit: Unit, kind: Kind) -> FamilyKey {
    let counter = kind == Kind::Cumulative;
    let source = key.source.as_str();
    let name = sanitize(&key.counter);
    // The unit is said once, at the end: a word naming it inside the counter's name
    // (SPDK's `bytes_read`) is dropped, so `bytes_read` reads `dpu_volume_read_bytes_total`
    // beside `read_ops`, not `dpu_volume_bytes_read_bytes_total`.
    let (stem, unit) = match unit {
        Unit::Bytes => (
            family_stem(source, &without_words(&name, &["bytes"])),
            Some("bytes"),
        ),
        Unit::Milliseconds => (
            family_stem(source, &without_words(&name, &["ms", "seconds"])),
            Some("seconds"),
        ),
        _ => (family_stem(source, &name), None),
    };
    // A counter whose kernel name ends in `_total` would end in `_total_total`.
    let stem = if counter {
        strip_suffix(stem, "_total")
    } else {
        stem
    };
    FamilyKey {
        stem,
        unit,
        counter,
    }
}

fn strip_suffix(name: String, suffix: &str) -> String {
    match name.strip_suffix(suffix) {
        Some(stem) if !stem.is_empty() => stem.to_owned(),
        _ => name,
    }
}

/// `dpu_{source}_{counter}`, or `dpu_{source}` when the counter was only its unit (a tc
/// action's `bytes`).
fn family_stem(source: &str, counter: &str) -> String {
    if counter.is_empty() {
        format!("dpu_{source}")
    } else {
        format!("dpu_{source}_{counter}")
    }
}

/// `name` without the `_`-separated words in `words`: `bytes_read` → `read`,
/// `rx_bytes` → `rx`, `bytes` → ``.
fn without_words(name: &str, words: &[&str]) -> String {
    name.split('_')
        .filter(|word| !words.contains(word))
        .collect::<Vec<_>>()
        .join("_")
}

/// Metric names are `[a-zA-Z_:][a-zA-Z0-9_:]*`; driver counter names are close to that
/// already (`rx_vport_rdma_unicast_bytes`), but nothing guarantees it. `:` is reserved
/// for recording rules, so it becomes `_` too.
fn sanitize(counter: &str) -> String {
    counter
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect()
}

/// Labels of one series: (name, value), in a fixed order per source.
pub(crate) type Labels = Vec<(&'static str, String)>;

/// The netdev whose switchdev representor role labels a sample's series (`role`): the
/// interface of a netdev or tc object, `None` for every other object. A series' labels
/// depend on its source, its object and this netdev's role, nothing else.
pub(crate) fn netdev_of(source: Source, object: &str) -> Option<&str> {
    match source {
        Source::Netdev | Source::NetdevOffload | Source::Tc => {
            let rest = object.strip_prefix("netdevs/")?;
            Some(rest.split_once('/').map_or(rest, |(ifname, _)| ifname))
        }
        _ => None,
    }
}

/// The labels a sample's object path names, plus `role` for netdev families: `role` is
/// the switchdev representor role of [`netdev_of`] the object (empty for other netdevs).
pub(crate) fn labels_of(source: Source, object: &str, role: &str) -> Labels {
    let parts: Vec<&str> = object.split('/').collect();
    match (source, parts.as_slice()) {
        (Source::Rdma | Source::RdmaHw, ["rdmaDevices", device, "ports", port]) => {
            vec![
                ("device", (*device).to_owned()),
                ("port", (*port).to_owned()),
            ]
        }
        (Source::Rdma | Source::RdmaHw, ["rdmaDevices", device]) => {
            vec![("device", (*device).to_owned()), ("port", String::new())]
        }
        (Source::Netdev | Source::NetdevOffload, ["netdevs", ifname]) => {
            vec![("netdev", (*ifname).to_owned()), ("role", role.to_owned())]
        }
        (Source::Tc, ["netdevs", ifname, "tc", direction, rest @ ..]) => {
            tc_labels(ifname, direction, rest, role)
        }
        (Source::Block, ["blockDevices", device]) => vec![("device", (*device).to_owned())],
        (Source::OvsDatapath, ["datapaths", datapath]) => {
            vec![("datapath", (*datapath).to_owned())]
        }
        (Source::Volume, ["volumes", id @ ..]) if !id.is_empty() => {
            vec![("volume", id.join("/"))]
        }
        // An object this code does not know: kept whole, so nothing is dropped silently.
        _ => vec![("object", object.to_owned())],
    }
}

/// `netdevs/{if}/tc/{dir}/[chain-N/]{prio}/{handle}[/actions/{order}]`.
fn tc_labels(ifname: &str, direction: &str, rest: &[&str], role: &str) -> Labels {
    let (chain, rest) = match rest.split_first() {
        Some((first, tail)) if first.starts_with("chain-") => {
            (first.trim_start_matches("chain-").to_owned(), tail)
        }
        _ => ("0".to_owned(), rest),
    };
    let part = |i: usize| rest.get(i).map_or_else(String::new, |s| (*s).to_owned());
    let action = match rest.get(2..4) {
        Some(["actions", order]) => (*order).to_owned(),
        _ => String::new(),
    };
    vec![
        ("netdev", ifname.to_owned()),
        ("role", role.to_owned()),
        ("direction", direction.to_owned()),
        ("chain", chain),
        ("prio", part(0)),
        ("handle", part(1)),
        ("action", action),
    ]
}

/// The help text of a counter family: where the counter comes from.
pub(crate) fn help_of(source: Source, counter: &str) -> String {
    let from = match source {
        Source::Rdma => "RDMA port counter (IB PMA, ports/N/counters)",
        Source::RdmaHw => "RDMA driver counter (hw_counters)",
        Source::Netdev => "Link statistic (rtnl_link_stats64)",
        Source::NetdevOffload => "Offload xstat (IFLA_OFFLOAD_XSTATS_CPU_HIT: not offloaded)",
        Source::Tc => "tc filter action statistic",
        Source::OvsFlow => "OVS datapath flow statistic",
        Source::Volume => "Storage volume I/O counter (storage backend)",
        Source::Block => "Block device statistic (/sys/block/*/stat)",
        Source::OvsDatapath => "OVS datapath lookup statistic (dpctl/show)",
        _ => "Counter",
    };
    format!("{from} {counter}, in base units (docs/counters.md)")
}

#[cfg(test)]
mod tests {
    use super::*;
    use dpu_probe::snapshot::Sample;

    fn family(sample: &Sample) -> FamilyKey {
        family_of(&sample.key, sample.unit, sample.kind)
    }

    fn name(source: Source, counter: &'static str, unit: Unit) -> String {
        family(&Sample::cumulative(source, "x", counter, 1, unit)).sample_name()
    }

    #[test]
    fn names_carry_one_unit_suffix_and_total() {
        assert_eq!(
            name(Source::Netdev, "rx_bytes", Unit::Bytes),
            "dpu_netdev_rx_bytes_total"
        );
        assert_eq!(
            name(Source::Rdma, "port_rcv_data", Unit::Bytes),
            "dpu_rdma_port_rcv_data_bytes_total"
        );
        assert_eq!(
            name(Source::Rdma, "port_rcv_packets", Unit::Packets),
            "dpu_rdma_port_rcv_packets_total"
        );
        assert_eq!(
            name(Source::Block, "read_ticks", Unit::Milliseconds),
            "dpu_block_read_ticks_seconds_total"
        );
        assert_eq!(
            name(Source::OvsDatapath, "lookups_missed", Unit::Packets),
            "dpu_ovs_datapath_lookups_missed_total"
        );
        assert_eq!(
            name(Source::RdmaHw, "weird-name.x", Unit::Events),
            "dpu_rdma_hw_weird_name_x_total"
        );
        // SPDK's iostat names put the unit first: it is said once, at the end.
        assert_eq!(
            name(Source::Volume, "bytes_read", Unit::Bytes),
            "dpu_volume_read_bytes_total"
        );
        assert_eq!(
            name(Source::Volume, "bytes_written", Unit::Bytes),
            "dpu_volume_written_bytes_total"
        );
        assert_eq!(name(Source::Tc, "bytes", Unit::Bytes), "dpu_tc_bytes_total");
        assert_eq!(
            name(Source::Block, "time_in_queue_ms", Unit::Milliseconds),
            "dpu_block_time_in_queue_seconds_total"
        );
        let gauge = Sample::gauge(Source::Block, "x", "in_flight", 3, Unit::Operations);
        assert_eq!(family(&gauge).sample_name(), "dpu_block_in_flight");
    }

    #[test]
    fn milliseconds_become_seconds_and_scaled_words_stay_bytes() {
        let ticks = Sample::cumulative(Source::Block, "x", "read_ticks", 1500, Unit::Milliseconds);
        assert_eq!(value_of(ticks.value, ticks.unit), Value::Float(1.5));
        // port_rcv_data is 4-byte words in sysfs: the probe has already scaled it.
        let words =
            Sample::cumulative(Source::Rdma, "x", "port_rcv_data", 10, Unit::Bytes).scaled(4);
        assert_eq!(value_of(words.value, words.unit), Value::Integer(40));
    }

    #[test]
    fn objects_decode_to_labels() {
        let role = "host_pf";
        assert_eq!(netdev_of(Source::Netdev, "netdevs/pf0hpf"), Some("pf0hpf"));
        assert_eq!(
            netdev_of(Source::Tc, "netdevs/pf0hpf/tc/ingress/1/2"),
            Some("pf0hpf")
        );
        assert_eq!(netdev_of(Source::Rdma, "rdmaDevices/mlx5_0/ports/1"), None);
        assert_eq!(
            labels_of(Source::Rdma, "rdmaDevices/mlx5_0/ports/1", ""),
            vec![("device", "mlx5_0".to_owned()), ("port", "1".to_owned())]
        );
        assert_eq!(
            labels_of(Source::Netdev, "netdevs/pf0hpf", role),
            vec![
                ("netdev", "pf0hpf".to_owned()),
                ("role", "host_pf".to_owned())
            ]
        );
        let tc = labels_of(
            Source::Tc,
            "netdevs/pf0hpf/tc/ingress/chain-2/1/3/actions/1",
            role,
        );
        assert_eq!(
            tc,
            vec![
                ("netdev", "pf0hpf".to_owned()),
                ("role", "host_pf".to_owned()),
                ("direction", "ingress".to_owned()),
                ("chain", "2".to_owned()),
                ("prio", "1".to_owned()),
                ("handle", "3".to_owned()),
                ("action", "1".to_owned()),
            ]
        );
        assert_eq!(
            labels_of(Source::Volume, "volumes/nvme-remote-a", ""),
            vec![("volume", "nvme-remote-a".to_owned())]
        );
        assert_eq!(
            labels_of(Source::Block, "somewhere/else", ""),
            vec![("object", "somewhere/else".to_owned())]
        );
    }
}
