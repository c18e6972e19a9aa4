//! What Prometheus stores from the agent's scrapes: fixture counters in base units, a
//! change between two scrapes measured by PromQL over the raw samples, an unreadable
//! counter that is absent (never zero) with its source marked down, and label values that
//! need escaping.

use dpu_tests::fixture::{self, set_counter, set_netdev_stat};

use crate::{prerequisites, Served, JOB, SCRAPED};

/// The RDMA port every test reads: `mlx5_0` port 1 of the BlueField-3 fixture.
const PORT: &str = r#"device="mlx5_0",port="1""#;

#[test]
fn prometheus_stores_fixture_counters_in_base_units() {
    prerequisites!();
    let fixture = fixture::bluefield3_tempdir();
    // Values of our own, so a match cannot come from the fixture's defaults: data in
    // 4-byte words (docs/counters.md), a netdev byte counter as it is.
    let rcv_words: u64 = 123_456_789;
    set_counter(&fixture.1, "mlx5_0", 1, "port_rcv_data", rcv_words).expect("set counter");
    set_netdev_stat(&fixture.1, "pf0hpf", "rx_bytes", 987_654_321).expect("set stat");
    let mut served = Served::start(fixture);
    served.scrape();

    served.wait_value(&format!("up{{job=\"{JOB}\"}}"), 1.0);
    served.wait_value(
        &format!("dpu_rdma_port_rcv_data_bytes_total{{{PORT}}}"),
        (4 * rcv_words) as f64,
    );
    // The fixture's own transmit words, converted the same way.
    served.wait_value(
        &format!("dpu_rdma_port_xmit_data_bytes_total{{{PORT}}}"),
        (4 * 2_718_281_828_u64) as f64,
    );
    // Packets are not scaled.
    served.wait_value(
        &format!("dpu_rdma_port_xmit_packets_total{{{PORT}}}"),
        10_485_760.0,
    );
    // A driver (hw_counters) counter of the same port.
    served.wait_value(
        &format!("dpu_rdma_hw_rx_write_requests_total{{{PORT}}}"),
        81_920.0,
    );
    let netdev = served.wait_value(
        r#"dpu_netdev_rx_bytes_total{netdev="pf0hpf"}"#,
        987_654_321.0,
    );
    assert_eq!(
        netdev.labels.get("role").map(String::as_str),
        Some("host_pf"),
        "{netdev:?}"
    );
    served.wait_value(
        r#"dpu_netdev_rx_bytes_total{netdev="p0",role="uplink"}"#,
        1_000_000_000.0,
    );
    // Block: sectors x 512 in bytes, milliseconds in seconds.
    served.wait_value(
        r#"dpu_block_read_bytes_total{device="nvme0n1"}"#,
        (2_457_600_u64 * 512) as f64,
    );
    served.wait_value(
        r#"dpu_block_read_ticks_seconds_total{device="nvme0n1"}"#,
        5.21,
    );
    served.wait_value(r#"dpu_counters_source_up{source="rdma"}"#, 1.0);
    served.wait_value(r#"dpu_counters_source_up{source="netdev"}"#, 1.0);

    let info = served
        .prom()
        .wait_for("dpu_agent_build_info", |s| s.len() == 1, SCRAPED)
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(info[0].value, 1.0, "{info:?}");
    assert_eq!(
        info[0].labels.get("version").map(String::as_str),
        Some(env!("CARGO_PKG_VERSION")),
        "{info:?}"
    );
}

#[test]
fn a_change_between_two_scrapes_is_measured_exactly() {
    prerequisites!();
    let fixture = fixture::bluefield3_tempdir();
    let (before, delta): (u64, u64) = (1_000_000, 250_000);
    set_counter(&fixture.1, "mlx5_0", 1, "port_rcv_data", before).expect("set counter");
    let mut served = Served::start(fixture);
    served.scrape();
    let series = format!("dpu_rdma_port_rcv_data_bytes_total{{{PORT}}}");

    // Prometheus must hold the first value before it changes, and then the second.
    served.wait_value(&series, (4 * before) as f64);
    set_counter(served.root(), "mlx5_0", 1, "port_rcv_data", before + delta).expect("set");
    served.wait_value(&series, (4 * (before + delta)) as f64);

    // Over the raw samples (no extrapolation, unlike rate/increase): the range covers
    // both values, so max - min is the change in bytes, exactly; one change, no reset.
    served.wait_value(
        &format!("max_over_time({series}[5m]) - min_over_time({series}[5m])"),
        (4 * delta) as f64,
    );
    served.wait_value(&format!("changes({series}[5m])"), 1.0);
    served.wait_value(&format!("resets({series}[5m])"), 0.0);
    // A counter that did not change has no change in the same window.
    served.wait_value(
        &format!("changes(dpu_rdma_port_xmit_data_bytes_total{{{PORT}}}[5m])"),
        0.0,
    );
}

#[test]
fn an_unreadable_counter_is_absent_never_zero_and_its_source_is_down() {
    prerequisites!();
    let fixture = fixture::bluefield3_tempdir();
    let words: u64 = 5_000_000;
    set_counter(&fixture.1, "mlx5_0", 1, "port_rcv_data", words).expect("set counter");
    let mut served = Served::start(fixture);
    served.scrape();
    let series = format!("dpu_rdma_port_rcv_data_bytes_total{{{PORT}}}");

    // Control: readable, the source is up and the value is there.
    served.wait_value(r#"dpu_counters_source_up{source="rdma"}"#, 1.0);
    served.wait_value(&series, (4 * words) as f64);

    // The file stops being a counter. Tests run as root, where chmod 000 does not stop a
    // read, and the reader lists regular files only (a directory in its place would just
    // not be a counter), so the file is rewritten in place with what no counter reads as.
    let file = served
        .root()
        .join("sys/class/infiniband/mlx5_0/ports/1/counters/port_rcv_data");
    std::fs::write(&file, "not a number\n").expect("break the counter");

    served.wait_value(r#"dpu_counters_source_up{source="rdma"}"#, 0.0);
    let errors = served
        .prom()
        .wait_for(
            r#"dpu_counters_read_errors_total{source="rdma"}"#,
            |s| s.len() == 1 && s[0].value > 0.0,
            SCRAPED,
        )
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(errors[0].value >= 1.0, "{errors:?}");
    // Absent: Prometheus marked the series stale, and no zero was ever stored for it.
    served
        .prom()
        .wait_for(&series, <[_]>::is_empty, SCRAPED)
        .unwrap_or_else(|e| panic!("the unreadable counter is still served: {e}"));
    served.wait_value(&format!("min_over_time({series}[5m])"), (4 * words) as f64);
    // The readable sources are still served, and still up.
    served.wait_value(r#"dpu_netdev_rx_bytes_total{netdev="p0"}"#, 1_000_000_000.0);
    served.wait_value(r#"dpu_counters_source_up{source="netdev"}"#, 1.0);
    assert_eq!(
        served.prom().query("up").expect("query up")[0].value,
        1.0,
        "a scrape with an unreadable counter still succeeds"
    );

    // Readable again: the source comes back up with the new value.
    set_counter(served.root(), "mlx5_0", 1, "port_rcv_data", words + 1).expect("repair");
    served.wait_value(r#"dpu_counters_source_up{source="rdma"}"#, 1.0);
    served.wait_value(&series, (4 * (words + 1)) as f64);
}

#[test]
fn label_values_that_need_escaping_reach_prometheus_intact() {
    prerequisites!();
    let fixture = fixture::bluefield3_tempdir();
    // Linux accepts any interface name without '/', ':' or whitespace (dev_valid_name):
    // dots and dashes are common (VLANs, bridges), and '"' and '\' must be escaped in a
    // label value.
    let names = [("br-ex.100", 111_u64), ("q\"uo\\te", 222)];
    for (name, value) in names {
        set_netdev_stat(&fixture.1, name, "rx_bytes", value).expect("set stat");
    }
    let mut served = Served::start(fixture);
    served.scrape();
    served.wait_value(r#"dpu_netdev_rx_bytes_total{netdev="br-ex.100"}"#, 111.0);
    let quoted = served.wait_value(r#"dpu_netdev_rx_bytes_total{netdev="q\"uo\\te"}"#, 222.0);
    assert_eq!(quoted.labels["netdev"], "q\"uo\\te", "{quoted:?}");
    // Prometheus read the OpenMetrics answer; the text answer must parse too (exit 1 is
    // a parse error; lint findings, exit 3, are the formats test's business).
    let text = dpu_tests::prometheus::get_metrics(&served.target, None)
        .expect("GET /metrics")
        .body;
    let (code, printed) =
        dpu_tests::prometheus::promtool_check_metrics(&text, served.root()).expect("promtool");
    assert_ne!(code, 1, "promtool cannot parse the text format:\n{printed}");
    let keys = dpu_tests::prometheus::series_keys(&text).expect("parse the text format");
    assert!(
        keys.iter().any(|k| k.contains(r#"netdev="q\"uo\\te""#)),
        "the name does not read back from the text format:\n{text}"
    );
}
