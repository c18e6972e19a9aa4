//! [`Reading`] and [`Readout`]: samples become typed families, a kept layout serves new
//! values and a changed tree is laid out again, byte for byte what prometheus-client writes.

use super::*;
use crate::metrics::layout::encoder_reference;
use dpu_probe::snapshot::Unit;

fn text(readout: Readout) -> String {
    let mut out = String::new();
    Arc::new(readout)
        .encode(Format::OpenMetrics, &mut out)
        .expect("encode");
    out
}

#[test]
fn samples_become_typed_families_with_units_labels_and_source_health() {
    let mut reading = Reading::default();
    reading.read(Source::Rdma);
    reading.read(Source::Netdev);
    reading.read_named("netdev", false);
    reading.add_samples(
        vec![
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
        &|_| "uplink",
    );
    let readout = reading.lay_out(&LayoutCache::default()).0;
    assert_eq!(
        readout.collisions(),
        1,
        "rx-packets is dpu_netdev_rx_packets too"
    );
    let out = text(readout);
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
        vec![Sample::cumulative(
            Source::Volume,
            "volumes/a\"b\\c",
            "read_ops",
            1,
            Unit::Operations,
        )],
        &|_| "",
    );
    let out = text(reading.lay_out(&LayoutCache::default()).0);
    assert!(
        out.contains("dpu_volume_read_ops_total{volume=\"a\\\"b\\\\c\"} 1"),
        "{out}"
    );
}

/// Counters of every shape a scrape meets: scaled bytes, a netdev with a role, a tc
/// action, milliseconds as seconds, a gauge, escaped label values, a per-priority
/// series, and two names that collide.
fn varied() -> Reading {
    let mut reading = Reading::default();
    reading.add_series(
        FamilyKey {
            stem: "dpu_netdev_prio".to_owned(),
            unit: Some("bytes"),
            counter: true,
        },
        "Per-priority driver statistic",
        vec![("netdev", "p0".to_owned()), ("priority", "3".to_owned())],
        5,
    );
    reading.add_samples(
        vec![
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
            Sample::cumulative(Source::Netdev, "netdevs/pf0vf0", "rx_bytes", 9, Unit::Bytes),
            Sample::cumulative(
                Source::Tc,
                "netdevs/pf0vf0/tc/ingress/chain-2/1/3/actions/1",
                "packets",
                11,
                Unit::Packets,
            ),
            Sample::cumulative(
                Source::Block,
                "blockDevices/nvme0n1",
                "read_ticks",
                1500,
                Unit::Milliseconds,
            ),
            Sample::cumulative(
                Source::Block,
                "blockDevices/nvme0n1",
                "io_ticks",
                7,
                Unit::Milliseconds,
            ),
            Sample::gauge(
                Source::Block,
                "blockDevices/nvme0n1",
                "in_flight",
                3,
                Unit::Operations,
            ),
            // A help line holding a newline (OpenMetrics writes it raw) must not
            // move the cut of a series.
            Sample::cumulative(
                Source::RdmaHw,
                "rdmaDevices/mlx5_0/ports/1",
                "odd\nname 0",
                4,
                Unit::Events,
            ),
            Sample::cumulative(
                Source::Volume,
                "volumes/a\"b\\c\nd",
                "bytes_read",
                u64::MAX,
                Unit::Bytes,
            ),
        ],
        &|ifname| if ifname == "p0" { "uplink" } else { "host_vf" },
    );
    reading
}

#[test]
fn a_layout_writes_what_the_encoder_writes() {
    let reading = varied();
    let (ids, values) = reading.ids_and_values();
    let readout = reading.lay_out(&LayoutCache::default()).0;
    let layout = readout.layout.as_ref().expect("laid out");
    for format in [Format::Text, Format::OpenMetrics] {
        let mut out = String::new();
        layout.template(format).write(&mut out, &values);
        assert_eq!(out, encoder_reference(&ids, &values, format), "{format:?}");
    }
    let mut out = String::new();
    layout.template(Format::Text).write(&mut out, &values);
    assert!(
        out.contains("# TYPE dpu_block_read_ticks_seconds_total counter\n"),
        "{out}"
    );
    assert!(
        out.contains("dpu_block_read_ticks_seconds_total{device=\"nvme0n1\"} 1.5\n"),
        "{out}"
    );
    assert!(
        out.contains("dpu_block_io_ticks_seconds_total{device=\"nvme0n1\"} 0.007\n"),
        "{out}"
    );
    assert!(
        out.contains(
            "dpu_volume_read_bytes_total{volume=\"a\\\"b\\\\c\\nd\"} 18446744073709551615\n"
        ),
        "{out}"
    );
}

/// Both encodings of `reading` through `layouts`, checked against a layout made
/// afresh, and the layout used.
fn encode_through(layouts: &LayoutCache, reading: Reading) -> (String, Arc<Layout>) {
    let fresh = reading.series_copy();
    let readout = Arc::new(reading.lay_out(layouts).0);
    let fresh = Arc::new(fresh.lay_out(&LayoutCache::default()).0);
    let mut both = String::new();
    for format in [Format::Text, Format::OpenMetrics] {
        let (mut out, mut expected) = (String::new(), String::new());
        readout.encode(format, &mut out).expect("encode");
        fresh.encode(format, &mut expected).expect("encode");
        assert_eq!(out, expected, "{format:?}: the kept layout is stale");
        both.push_str(&out);
    }
    let layout = Arc::clone(readout.layout.as_ref().expect("laid out"));
    (both, layout)
}

/// A DPU-like tree: `netdevs` (name, role) with `counters`, values from `base`.
fn tree(netdevs: &[(&str, &'static str)], counters: &[&'static str], base: u64) -> Reading {
    let mut reading = Reading::default();
    let mut samples = Vec::new();
    for (n, (ifname, _)) in netdevs.iter().enumerate() {
        for (c, counter) in counters.iter().enumerate() {
            let value = base + 100 * n as u64 + c as u64;
            samples.push(Sample::cumulative(
                Source::Netdev,
                format!("netdevs/{ifname}"),
                *counter,
                value,
                Unit::Packets,
            ));
        }
    }
    let roles: Vec<(String, &'static str)> = netdevs
        .iter()
        .map(|(ifname, role)| ((*ifname).to_owned(), *role))
        .collect();
    reading.add_samples(samples, &|ifname| {
        roles
            .iter()
            .find(|(name, _)| name == ifname)
            .map_or("", |(_, role)| role)
    });
    reading
}

#[test]
fn a_kept_layout_serves_new_values_and_a_changed_tree_is_laid_out_again() {
    let layouts = LayoutCache::default();
    let counters = ["rx_packets", "tx_packets"];
    let two = [("p0", "uplink"), ("pf0vf0", "host_vf")];
    let (first, layout) = encode_through(&layouts, tree(&two, &counters, 1000));
    assert!(
        first.contains("dpu_netdev_rx_packets_total{netdev=\"pf0vf0\",role=\"host_vf\"} 1100\n")
    );

    // Same tree, new values: the same layout, the new values.
    let (again, kept) = encode_through(&layouts, tree(&two, &counters, 5000));
    assert!(
        Arc::ptr_eq(&layout, &kept),
        "an unchanged tree keeps its layout"
    );
    assert!(
        again.contains("dpu_netdev_rx_packets_total{netdev=\"pf0vf0\",role=\"host_vf\"} 5100\n")
    );
    assert!(!again.contains(" 1100\n"), "{again}");

    // A netdev appears.
    let three = [
        ("p0", "uplink"),
        ("pf0vf0", "host_vf"),
        ("pf0vf1", "host_vf"),
    ];
    let (grown, new) = encode_through(&layouts, tree(&three, &counters, 1000));
    assert!(!Arc::ptr_eq(&kept, &new), "a new netdev gets a new layout");
    assert!(
        grown.contains("dpu_netdev_tx_packets_total{netdev=\"pf0vf1\",role=\"host_vf\"} 1201\n")
    );

    // A netdev vanishes.
    let (shrunk, _) = encode_through(&layouts, tree(&[("p0", "uplink")], &counters, 1000));
    assert!(!shrunk.contains("pf0vf"), "{shrunk}");

    // A counter is renamed.
    let renamed = ["rx_packets", "tx_frames"];
    let (out, _) = encode_through(&layouts, tree(&two, &renamed, 1000));
    assert!(out.contains("dpu_netdev_tx_frames_total{netdev=\"p0\",role=\"uplink\"} 1001\n"));
    assert!(!out.contains("tx_packets"), "{out}");

    // A representor's role changes (same netdevs, same counters).
    let moved = [("p0", "uplink"), ("pf0vf0", "host_pf")];
    let (out, _) = encode_through(&layouts, tree(&moved, &renamed, 1000));
    assert!(out.contains("dpu_netdev_rx_packets_total{netdev=\"pf0vf0\",role=\"host_pf\"} 1100\n"));
    assert!(!out.contains("host_vf"), "{out}");
}
