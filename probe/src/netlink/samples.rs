//! Netlink readings as snapshot [`Sample`]s: the resource names and counter names every
//! proof expression refers to.

use super::link::{LinkCounters, LinkStats, LINK_COUNTER_FIELDS};
use super::offload::OffloadStats;
use super::stats::LinkCounterReading;
use super::tc::{TcActionStats, TcFilter};
use crate::snapshot::{Sample, Source, SpareStrings, Unit};

/// The objects' common prefix.
const NETDEV_PREFIX: &str = "netdevs/";
/// How many samples `CPU_HIT` adds to a device.
const CPU_HIT_FIELDS: usize = 4;

/// `netdevs/{ifname}`: the object of a link's counters, shared with the sysfs reader.
pub fn netdev_object(ifname: &str) -> String {
    let mut object = String::with_capacity(NETDEV_PREFIX.len() + ifname.len());
    object.push_str(NETDEV_PREFIX);
    object.push_str(ifname);
    object
}

/// A link's `rtnl_link_stats64` as [`Source::Netdev`] samples named exactly like the
/// kernel fields (`rx_packets`, `tx_bytes`, ...), with the counters' true width (32 when
/// only legacy `IFLA_STATS` was available). Empty when the link reported no counters.
pub fn link_samples(link: &LinkStats) -> Vec<Sample> {
    let Some(counters) = &link.counters else {
        return Vec::new();
    };
    let mut samples = Vec::with_capacity(LINK_COUNTER_FIELDS);
    push_link_counters(&mut samples, netdev_object(&link.ifname), counters);
    samples
}

/// A device's `CPU_HIT` counters as [`Source::NetdevOffload`] samples
/// `cpu_hit_rx_packets`, `cpu_hit_tx_packets`, `cpu_hit_rx_bytes`, `cpu_hit_tx_bytes` on
/// `netdevs/{ifname}`. Empty when the device does not support offload xstats: callers
/// that need the signal check [`OffloadStats::is_supported`] and report its absence.
pub fn offload_samples(ifname: &str, stats: &OffloadStats) -> Vec<Sample> {
    let Some(hit) = &stats.cpu_hit else {
        return Vec::new();
    };
    let mut samples = Vec::with_capacity(CPU_HIT_FIELDS);
    push_cpu_hit(&mut samples, netdev_object(ifname), hit);
    samples
}

/// A [`LinkCounterReading`] as samples on `netdevs/{ifname}`: the link counters as
/// [`link_samples`] names them, then the `CPU_HIT` ones as [`offload_samples`] does.
/// Empty for a reading without either.
pub fn reading_samples(ifname: &str, reading: &LinkCounterReading) -> Vec<Sample> {
    let mut samples = Vec::with_capacity(reading_sample_count(reading));
    samples.extend(device_samples(
        [(ifname, reading)],
        &mut SpareStrings::default(),
    ));
    samples
}

/// The samples of many devices, as [`reading_samples`] names them, device after device.
///
/// An iterator that knows its exact length, rather than a vector: the snapshot's vector
/// reserves once for all of them and each sample is written straight into it. Filling a
/// vector here and handing it over costs a second ~130 KB buffer (1,608 samples on 66
/// links) and its copy, which measured ~40 µs slower per snapshot, mostly in the
/// allocator returning and re-faulting that memory. Each sample's object string is made
/// from `spare` where it has one (see [`SpareStrings`]).
pub(crate) fn device_samples<'a, 's, I>(
    devices: I,
    spare: &'s mut SpareStrings,
) -> DeviceSamples<'a, 's, I::IntoIter>
where
    I: IntoIterator<Item = (&'a str, &'a LinkCounterReading)>,
    I::IntoIter: Clone,
{
    let devices = devices.into_iter();
    let remaining = devices
        .clone()
        .map(|(_, reading)| reading_sample_count(reading))
        .sum();
    DeviceSamples {
        devices,
        spare,
        object: String::new(),
        fields: [EMPTY_FIELD; DEVICE_FIELDS],
        len: 0,
        next: 0,
        remaining,
    }
}

/// One sample to be: family, counter name, value, unit, width.
type Field = (Source, &'static str, u64, Unit, u32);
const EMPTY_FIELD: Field = (Source::Netdev, "", 0, Unit::Packets, 0);
/// The most samples one device becomes.
const DEVICE_FIELDS: usize = LINK_COUNTER_FIELDS + CPU_HIT_FIELDS;

/// The iterator [`device_samples`] returns.
#[derive(Debug)]
pub(crate) struct DeviceSamples<'a, 's, I: Iterator<Item = (&'a str, &'a LinkCounterReading)>> {
    devices: I,
    /// Where each sample's object string comes from.
    spare: &'s mut SpareStrings,
    /// The current device's object, copied into each of its samples' (a buffer reused
    /// from device to device).
    object: String,
    fields: [Field; DEVICE_FIELDS],
    len: usize,
    next: usize,
    remaining: usize,
}

impl<'a, I: Iterator<Item = (&'a str, &'a LinkCounterReading)>> DeviceSamples<'a, '_, I> {
    /// Loads the next device's fields; `false` when there is none.
    fn load_next(&mut self) -> bool {
        let Some((ifname, reading)) = self.devices.next() else {
            return false;
        };
        self.len = 0;
        self.next = 0;
        if let Some(counters) = &reading.counters {
            for (name, value, unit) in counters.field_array() {
                self.fields[self.len] = (Source::Netdev, name, value, unit, counters.width_bits);
                self.len += 1;
            }
        }
        if let Some(hit) = &reading.cpu_hit {
            for (name, value, unit) in cpu_hit_fields(hit) {
                self.fields[self.len] = (Source::NetdevOffload, name, value, unit, 64);
                self.len += 1;
            }
        }
        if self.len > 0 {
            self.object.clear();
            self.object.push_str(NETDEV_PREFIX);
            self.object.push_str(ifname);
        }
        true
    }
}

impl<'a, I: Iterator<Item = (&'a str, &'a LinkCounterReading)>> Iterator
    for DeviceSamples<'a, '_, I>
{
    type Item = Sample;

    fn next(&mut self) -> Option<Sample> {
        while self.next == self.len {
            if !self.load_next() {
                return None;
            }
        }
        let (source, name, value, unit, width) = self.fields[self.next];
        self.next += 1;
        self.remaining = self.remaining.saturating_sub(1);
        let object = self.spare.string(&self.object);
        Some(Sample::cumulative(source, object, name, value, unit).with_width(width))
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.remaining, Some(self.remaining))
    }
}

impl<'a, I: Iterator<Item = (&'a str, &'a LinkCounterReading)>> ExactSizeIterator
    for DeviceSamples<'a, '_, I>
{
}

/// How many samples a reading becomes.
fn reading_sample_count(reading: &LinkCounterReading) -> usize {
    reading.counters.map_or(0, |_| LINK_COUNTER_FIELDS)
        + reading.cpu_hit.map_or(0, |_| CPU_HIT_FIELDS)
}

/// `CPU_HIT`'s four counters, named for the [`Source::NetdevOffload`] family.
fn cpu_hit_fields(hit: &LinkCounters) -> [(&'static str, u64, Unit); CPU_HIT_FIELDS] {
    [
        ("cpu_hit_rx_packets", hit.rx_packets, Unit::Packets),
        ("cpu_hit_tx_packets", hit.tx_packets, Unit::Packets),
        ("cpu_hit_rx_bytes", hit.rx_bytes, Unit::Bytes),
        ("cpu_hit_tx_bytes", hit.tx_bytes, Unit::Bytes),
    ]
}

/// Every counter of `counters` on `object`. The per-sample cost is the two `String`s a
/// [`Sample`] owns: the object is cloned for all but the last sample, which takes it.
fn push_link_counters(out: &mut Vec<Sample>, object: String, counters: &LinkCounters) {
    push_fields(
        out,
        Source::Netdev,
        object,
        counters.width_bits,
        counters.field_array(),
    );
}

fn push_cpu_hit(out: &mut Vec<Sample>, object: String, hit: &LinkCounters) {
    push_fields(out, Source::NetdevOffload, object, 64, cpu_hit_fields(hit));
}

/// Appends one sample per field, all on `object`.
///
/// Written for speed, since a 66-link snapshot makes 1,608 of these: the cost that cannot
/// go is the two `String`s each [`Sample`] owns. Around it: `extend` over a mapped slice
/// (a trusted-length iterator, so the vector is reserved once and written in place,
/// measurably faster than a `push` loop), and the object moved into the last sample
/// instead of cloned.
fn push_fields<const N: usize>(
    out: &mut Vec<Sample>,
    source: Source,
    object: String,
    width_bits: u32,
    fields: [(&'static str, u64, Unit); N],
) {
    let Some((last, rest)) = fields.split_last() else {
        return;
    };
    out.reserve(N);
    out.extend(rest.iter().map(|&(name, value, unit)| {
        Sample::cumulative(source, object.clone(), name, value, unit).with_width(width_bits)
    }));
    let (name, value, unit) = *last;
    out.push(Sample::cumulative(source, object, name, value, unit).with_width(width_bits));
}

/// `netdevs/{ifname}/tc/{ingress|egress|parent-hex}/{prio}/{handle}` with the handle as
/// `0x…`; filters on a chain other than 0 get a `chain-{N}/` segment before the prio, so
/// OVS's recirculation chains never collide with chain 0.
pub fn tc_filter_object(ifname: &str, filter: &TcFilter) -> String {
    let chain = if filter.chain == 0 {
        String::new()
    } else {
        format!("chain-{}/", filter.chain)
    };
    format!(
        "netdevs/{ifname}/tc/{}/{chain}{}/{:#x}",
        filter.parent.segment(),
        filter.prio,
        filter.handle
    )
}

/// A filter's action statistics as [`Source::Tc`] samples: `bytes`, `packets` (total,
/// software plus hardware), `hw_bytes`, `hw_packets` (only when the kernel reported the
/// hardware share), `drops`, `overlimits`. A filter with one action uses
/// [`tc_filter_object`]; with several, each action gets `/actions/{order}` appended
/// (order, not the kernel index, because indices are per action kind and can repeat
/// within a filter). Actions without statistics produce nothing.
pub fn tc_samples(ifname: &str, filter: &TcFilter) -> Vec<Sample> {
    let base = tc_filter_object(ifname, filter);
    let several = filter.actions.len() > 1;
    let mut samples = Vec::new();
    for action in &filter.actions {
        let Some(stats) = &action.stats else {
            continue;
        };
        let object = if several {
            format!("{base}/actions/{}", action.order)
        } else {
            base.clone()
        };
        push_action(&mut samples, &object, stats);
    }
    samples
}

fn push_action(samples: &mut Vec<Sample>, object: &str, stats: &TcActionStats) {
    let counter = |name: &'static str, value: u64, unit: Unit, width: u32| {
        Sample::cumulative(Source::Tc, object, name, value, unit).with_width(width)
    };
    samples.push(counter("bytes", stats.total.bytes, Unit::Bytes, 64));
    samples.push(counter(
        "packets",
        stats.total.packets,
        Unit::Packets,
        stats.total.packets_width,
    ));
    if let Some(hw) = &stats.hw {
        samples.push(counter("hw_bytes", hw.bytes, Unit::Bytes, 64));
        samples.push(counter(
            "hw_packets",
            hw.packets,
            Unit::Packets,
            hw.packets_width,
        ));
    }
    if let Some(drops) = stats.drops {
        samples.push(counter("drops", u64::from(drops), Unit::Events, 32));
    }
    if let Some(overlimits) = stats.overlimits {
        samples.push(counter(
            "overlimits",
            u64::from(overlimits),
            Unit::Events,
            32,
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::netlink::{LinkCounters, TcCounts, TcFilterAction, TcParent};

    fn link(counters: Option<LinkCounters>) -> LinkStats {
        LinkStats {
            ifindex: 4,
            ifname: "p0".into(),
            flags: 1,
            operstate: "up".into(),
            mtu: Some(1500),
            phys_port_name: Some("p0".into()),
            counters,
        }
    }

    #[test]
    fn link_samples_use_kernel_names_units_and_width() {
        let counters = LinkCounters {
            width_bits: 32,
            rx_packets: 5,
            tx_bytes: 980,
            rx_dropped: 1,
            ..LinkCounters::default()
        };
        let samples = link_samples(&link(Some(counters)));
        assert_eq!(samples.len(), 24);
        let get = |name: &str| {
            samples
                .iter()
                .find(|s| s.key.counter == name)
                .unwrap_or_else(|| panic!("{name}"))
        };
        assert_eq!(get("rx_packets").value, 5);
        assert_eq!(get("rx_packets").unit, Unit::Packets);
        assert_eq!(get("tx_bytes").unit, Unit::Bytes);
        assert_eq!(get("rx_dropped").unit, Unit::Events);
        assert!(samples.iter().all(|s| s.key.object == "netdevs/p0"
            && s.key.source == Source::Netdev
            && s.width_bits == 32));
        assert!(link_samples(&link(None)).is_empty());
    }

    #[test]
    fn offload_samples_only_when_supported() {
        let hit = LinkCounters {
            width_bits: 64,
            rx_packets: 3,
            tx_bytes: 200,
            ..LinkCounters::default()
        };
        let stats = OffloadStats {
            ifindex: 4,
            cpu_hit: Some(hit),
        };
        let samples = offload_samples("pf0vf0", &stats);
        let names: Vec<_> = samples.iter().map(|s| s.key.counter.as_ref()).collect();
        assert_eq!(
            names,
            [
                "cpu_hit_rx_packets",
                "cpu_hit_tx_packets",
                "cpu_hit_rx_bytes",
                "cpu_hit_tx_bytes"
            ]
        );
        assert_eq!(samples[0].value, 3);
        assert_eq!(samples[3].value, 200);
        assert!(samples
            .iter()
            .all(|s| s.key.source == Source::NetdevOffload && s.key.object == "netdevs/pf0vf0"));
        let unsupported = OffloadStats {
            ifindex: 5,
            cpu_hit: None,
        };
        assert!(offload_samples("veth0", &unsupported).is_empty());
    }

    #[test]
    fn readings_become_link_then_cpu_hit_samples_with_an_exact_length() {
        let counters = LinkCounters {
            width_bits: 64,
            rx_packets: 7,
            rx_nohandler: 2,
            ..LinkCounters::default()
        };
        let hit = LinkCounters {
            width_bits: 64,
            tx_bytes: 200,
            ..LinkCounters::default()
        };
        let representor = LinkCounterReading {
            ifindex: 3,
            counters: Some(counters),
            cpu_hit: Some(hit),
        };
        let samples = reading_samples("pf0vf0", &representor);
        assert_eq!(samples.len(), 28);
        assert!(samples.iter().all(|s| s.key.object == "netdevs/pf0vf0"));
        let names: Vec<_> = samples.iter().map(|s| s.key.counter.as_ref()).collect();
        assert_eq!(names[0], "rx_packets");
        assert_eq!(names[23], "rx_nohandler");
        assert_eq!(
            &names[24..],
            [
                "cpu_hit_rx_packets",
                "cpu_hit_tx_packets",
                "cpu_hit_rx_bytes",
                "cpu_hit_tx_bytes"
            ]
        );
        assert_eq!(
            (samples[0].value, samples[0].key.source),
            (7, Source::Netdev)
        );
        assert_eq!(
            (samples[27].value, samples[27].key.source),
            (200, Source::NetdevOffload)
        );
        assert!(samples.iter().all(|s| s.width_bits == 64));

        // The same samples as the converters of the two-dump path.
        let link = LinkStats {
            ifname: "pf0vf0".into(),
            counters: Some(counters),
            ..link(None)
        };
        let offload = OffloadStats {
            ifindex: 3,
            cpu_hit: Some(hit),
        };
        let mut two_dumps = link_samples(&link);
        two_dumps.extend(offload_samples("pf0vf0", &offload));
        assert_eq!(samples, two_dumps);

        let bare = LinkCounterReading {
            ifindex: 4,
            counters: None,
            cpu_hit: None,
        };
        let legacy = LinkCounterReading {
            ifindex: 5,
            counters: Some(LinkCounters {
                width_bits: 32,
                ..counters
            }),
            cpu_hit: None,
        };
        let devices = [("pf0vf0", &representor), ("gone", &bare), ("old0", &legacy)];
        let mut spare = SpareStrings::default();
        let iter = device_samples(devices, &mut spare);
        assert_eq!(iter.size_hint(), (28 + 24, Some(28 + 24)), "exact");
        let all: Vec<Sample> = iter.collect();
        assert_eq!(all.len(), 28 + 24);
        assert_eq!(all[..28], samples[..], "the same as one device alone");
        assert!(all.iter().all(|s| s.key.object != "netdevs/gone"));
        let old: Vec<_> = all
            .iter()
            .filter(|s| s.key.object == "netdevs/old0")
            .collect();
        assert_eq!(old.len(), 24);
        assert!(
            old.iter().all(|s| s.width_bits == 32),
            "the legacy width is kept"
        );
        assert_eq!(
            old[23].key.object, "netdevs/old0",
            "the last sample takes the object"
        );
        assert!(reading_samples("gone", &bare).is_empty());
    }

    fn action(order: u16, stats: Option<TcActionStats>) -> TcFilterAction {
        TcFilterAction {
            order,
            kind: "gact".into(),
            index: Some(1),
            cookie: None,
            in_hw_count: None,
            stats,
            times: None,
        }
    }

    fn filter(chain: u32, actions: Vec<TcFilterAction>) -> TcFilter {
        TcFilter {
            ifindex: 4,
            parent: TcParent::Ingress,
            kind: "flower".into(),
            prio: 2,
            protocol: 0x0800,
            handle: 1,
            chain,
            flags: None,
            in_hw_count: None,
            actions,
        }
    }

    fn stats(hw: Option<TcCounts>) -> TcActionStats {
        TcActionStats {
            total: TcCounts {
                bytes: 840,
                packets: 10,
                packets_width: 64,
            },
            hw,
            drops: Some(0),
            overlimits: Some(0),
        }
    }

    #[test]
    fn one_action_filter_counters_sit_on_the_filter() {
        let hw = TcCounts {
            bytes: 756,
            packets: 9,
            packets_width: 32,
        };
        let samples = tc_samples("pf0vf0", &filter(0, vec![action(1, Some(stats(Some(hw))))]));
        let names: Vec<_> = samples.iter().map(|s| s.key.counter.as_ref()).collect();
        assert_eq!(
            names,
            [
                "bytes",
                "packets",
                "hw_bytes",
                "hw_packets",
                "drops",
                "overlimits"
            ]
        );
        assert!(samples.iter().all(
            |s| s.key.object == "netdevs/pf0vf0/tc/ingress/2/0x1" && s.key.source == Source::Tc
        ));
        assert_eq!((samples[1].value, samples[1].width_bits), (10, 64));
        assert_eq!((samples[3].value, samples[3].width_bits), (9, 32));
        assert_eq!(samples[4].unit, Unit::Events);
    }

    #[test]
    fn several_actions_get_their_own_objects_and_chains_a_segment() {
        let f = filter(
            5,
            vec![
                action(1, Some(stats(None))),
                action(2, Some(stats(None))),
                action(3, None),
            ],
        );
        let samples = tc_samples("p0", &f);
        assert_eq!(
            samples.len(),
            8,
            "no hw_* without BASIC_HW, nothing for action 3"
        );
        assert_eq!(
            samples[0].key.object,
            "netdevs/p0/tc/ingress/chain-5/2/0x1/actions/1"
        );
        assert_eq!(
            samples[4].key.object,
            "netdevs/p0/tc/ingress/chain-5/2/0x1/actions/2"
        );
        let mut egress = filter(0, Vec::new());
        egress.parent = TcParent::Handle(0x1_0000);
        assert_eq!(
            tc_filter_object("p0", &egress),
            "netdevs/p0/tc/00010000/2/0x1"
        );
    }
}
