//! The Grafana dashboard (deploy/grafana/dpu-agent-dashboard.json) asks only for metrics
//! the agent exports: every `dpu_*` name in a query is documented in docs/metrics.md, and
//! every one the mocked BlueField-3 fixture can produce is in a real scrape of the agent's
//! `GET /metrics`. The agent has a fake SNAP with one exposed volume, so the storage panels
//! are checked against a real scrape too. The few that need objects the fixture lacks (OVS,
//! tc filters, congestion and per-priority counters, cpu_hit) are listed with the reason,
//! and must stay absent from the scrape so that the list cannot go stale.

use std::collections::BTreeSet;
use std::time::Duration;

use dpu_tests::harness::free_tcp_port;
use dpu_tests::prometheus::wait_for_metrics;
use serde_json::Value;
use tonic_health::pb::{health_client::HealthClient, HealthCheckRequest};

use crate::host_session::expose_volume;
use crate::Lab;

const DASHBOARD: &str = include_str!("../../../deploy/grafana/dpu-agent-dashboard.json");
const METRICS_DOC: &str = include_str!("../../../docs/metrics.md");

/// Dashboard names the mocked fixture cannot produce, and why.
const NOT_IN_FIXTURE: &[(&str, &str)] = &[
    (
        "dpu_rdma_hw_np_ecn_marked_roce_packets_total",
        "congestion counters: the fixture's switchdev port has none, as the kernel's vports",
    ),
    (
        "dpu_rdma_hw_np_cnp_sent_total",
        "congestion counters, as above",
    ),
    (
        "dpu_rdma_hw_rp_cnp_handled_total",
        "congestion counters, as above",
    ),
    (
        "dpu_netdev_prio_pause_total",
        "per-priority statistics: read with the ethtool ioctl on live systems only",
    ),
    (
        "dpu_netdev_prio_discards_total",
        "per-priority statistics, as above",
    ),
    ("dpu_ovs_flow_packets", "OVS is disabled in the mocked tier"),
    ("dpu_ovs_flows", "OVS is disabled in the mocked tier"),
    (
        "dpu_netdev_offload_cpu_hit_rx_packets_total",
        "cpu_hit is netlink offload xstats, which a sysfs fixture has no netlink for",
    ),
    (
        "dpu_tc_packets_total",
        "no tc filters on the fixture's netdevs",
    ),
    (
        "dpu_tc_hw_packets_total",
        "no tc filters on the fixture's netdevs",
    ),
];

/// Every `dpu_[A-Za-z0-9_]+` token in `text`.
fn metric_tokens(text: &str, into: &mut BTreeSet<String>) {
    let bytes = text.as_bytes();
    let mut i = 0;
    while let Some(at) = text[i..].find("dpu_") {
        let start = i + at;
        // Part of a longer identifier (`xdpu_`): not a name of ours.
        let inside = start > 0 && is_name_char(bytes[start - 1]);
        let mut end = start + 4;
        while end < bytes.len() && is_name_char(bytes[end]) {
            end += 1;
        }
        if !inside && end > start + 4 {
            into.insert(text[start..end].to_owned());
        }
        i = end;
    }
}

fn is_name_char(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}

/// The metric names of every query of a dashboard: each panel target's `expr`, through
/// rows and nested panels, and each template variable's query.
fn dashboard_names(dashboard: &Value) -> BTreeSet<String> {
    fn walk(panels: &Value, into: &mut BTreeSet<String>) {
        for panel in panels.as_array().into_iter().flatten() {
            for target in panel["targets"].as_array().into_iter().flatten() {
                if let Some(expr) = target["expr"].as_str() {
                    metric_tokens(expr, into);
                }
            }
            walk(&panel["panels"], into);
        }
    }
    let mut names = BTreeSet::new();
    walk(&dashboard["panels"], &mut names);
    for variable in dashboard["templating"]["list"]
        .as_array()
        .into_iter()
        .flatten()
    {
        match &variable["query"] {
            Value::String(query) => metric_tokens(query, &mut names),
            query => {
                if let Some(query) = query["query"].as_str() {
                    metric_tokens(query, &mut names);
                }
            }
        }
    }
    names
}

/// What docs/metrics.md documents: the names it spells out (a histogram's `_bucket`,
/// `_sum` and `_count` with it), and the counters-table rule `dpu_{source}_{counter}
/// [_{unit}]_total` applied to the counter names it mentions (`port_xmit_data`).
#[derive(Debug)]
struct Documented {
    names: BTreeSet<String>,
    sources: Vec<String>,
    counters: BTreeSet<String>,
}

impl Documented {
    fn parse(doc: &str) -> Self {
        let mut names = BTreeSet::new();
        metric_tokens(doc, &mut names);
        // Code spans: `rdma` in the table's first column, `port_xmit_data` in the text.
        let spans: Vec<&str> = doc.split('`').skip(1).step_by(2).collect();
        let counters = spans
            .iter()
            .filter(|s| !s.is_empty() && s.bytes().all(is_name_char) && !s.starts_with("dpu_"))
            .map(|s| (*s).to_owned())
            .collect();
        let sources = doc
            .lines()
            .filter_map(|line| line.strip_prefix("| `"))
            .filter(|rest| rest.contains("(") && rest.contains("| `dpu_"))
            .filter_map(|rest| rest.split('`').next())
            .filter(|source| !source.starts_with("dpu_"))
            .map(str::to_owned)
            .collect();
        Self {
            names,
            sources,
            counters,
        }
    }

    /// Whether `name` is documented: spelled out, or made by the counters' naming rule
    /// from a documented source and counter.
    fn documents(&self, name: &str) -> bool {
        if self.names.contains(name) {
            return true;
        }
        if let Some(stem) = ["_bucket", "_sum", "_count"]
            .iter()
            .find_map(|suffix| name.strip_suffix(suffix))
        {
            if self.names.contains(stem) {
                return true;
            }
        }
        self.sources.iter().any(|source| {
            let Some(rest) = name.strip_prefix(&format!("dpu_{source}_")) else {
                return false;
            };
            let rest = rest.strip_suffix("_total").unwrap_or(rest);
            [rest, strip(rest, "_bytes"), strip(rest, "_seconds")]
                .iter()
                .any(|counter| self.counters.contains(*counter))
        })
    }

    /// Whether `name` follows the counters' rule for a documented source, whatever the
    /// counter: such a name is documented by the rule once a scrape shows it.
    fn has_counter_source(&self, name: &str) -> bool {
        self.sources
            .iter()
            .any(|source| name.starts_with(&format!("dpu_{source}_")))
    }
}

fn strip<'a>(name: &'a str, suffix: &str) -> &'a str {
    name.strip_suffix(suffix).unwrap_or(name)
}

/// The sample names of an exposition (the Prometheus text format), and the `_bucket`,
/// `_sum` and `_count` of each histogram family it types.
fn exported_names(text: &str) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    for line in text.lines() {
        if let Some(typed) = line.strip_prefix("# TYPE ") {
            if let Some(family) = typed.strip_suffix(" histogram") {
                for suffix in ["_bucket", "_sum", "_count"] {
                    names.insert(format!("{family}{suffix}"));
                }
            }
            continue;
        }
        if line.starts_with('#') || line.is_empty() {
            continue;
        }
        let end = line.find(['{', ' ']).unwrap_or(line.len());
        names.insert(line[..end].to_owned());
    }
    names
}

/// What is wrong with the names a dashboard queries, one line per problem: the checking
/// function of the test, also run on a dashboard that must fail.
fn problems(
    wanted: &BTreeSet<String>,
    docs: &Documented,
    scrape: &BTreeSet<String>,
    not_in_fixture: &[(&str, &str)],
) -> Vec<String> {
    let mut problems = Vec::new();
    for name in wanted {
        let exempt = not_in_fixture.iter().find(|(n, _)| n == name);
        let in_scrape = scrape.contains(name);
        let documented = docs.documents(name) || (in_scrape && docs.has_counter_source(name));
        if !documented {
            problems.push(format!("{name}: not documented in docs/metrics.md"));
        }
        match (exempt, in_scrape) {
            (None, false) => problems.push(format!(
                "{name}: not in the scrape of the mocked agent (and not listed as needing \
                 what the fixture lacks)"
            )),
            (Some((_, why)), true) => problems.push(format!(
                "{name}: listed as absent from the fixture ({why}) but the scrape has it: \
                 drop it from NOT_IN_FIXTURE"
            )),
            _ => {}
        }
    }
    for (name, _) in not_in_fixture {
        if !wanted.contains(*name) {
            problems.push(format!(
                "{name}: in NOT_IN_FIXTURE but no dashboard query uses it"
            ));
        }
    }
    problems
}

/// An agent on the BlueField-3 fixture and a fake SNAP with one exposed volume, with
/// `/metrics` on a free loopback port, one gRPC call made (so the call counters and the
/// latency histogram have samples), and two scrapes' worth of names (the first snapshot's
/// duration is recorded by then).
async fn scrape_of_mocked_agent() -> (BTreeSet<String>, Lab) {
    let port = free_tcp_port();
    let lab = Lab::start_with(|options| {
        options.config_toml = format!(
            "[security]\ninsecure_listen = true\n[metrics]\nlisten = \"tcp:127.0.0.1:{port}\"\n"
        );
    });
    expose_volume(&lab);
    HealthClient::new(lab.agent.channel().await)
        .check(HealthCheckRequest {
            service: String::new(),
        })
        .await
        .expect("a health check");
    let target = format!("127.0.0.1:{port}");
    let mut names = BTreeSet::new();
    for _ in 0..2 {
        let target = target.clone();
        // The blocking client must not run on the runtime's thread.
        let exposition =
            tokio::task::spawn_blocking(move || wait_for_metrics(&target, Duration::from_secs(30)))
                .await
                .expect("scrape task")
                .unwrap_or_else(|e| panic!("{e}\n{}", lab.agent.log()));
        names.extend(exported_names(&exposition.body));
    }
    (names, lab)
}

#[tokio::test]
async fn every_dashboard_query_names_a_documented_exported_metric() {
    let dashboard: Value = serde_json::from_str(DASHBOARD).expect("the dashboard is JSON");
    let wanted = dashboard_names(&dashboard);
    assert!(
        wanted.len() > 20,
        "the extractor found the queries: {wanted:?}"
    );
    let docs = Documented::parse(METRICS_DOC);
    assert!(
        docs.sources.iter().any(|s| s == "rdma_hw") && docs.sources.len() >= 7,
        "the counters table's sources: {:?}",
        docs.sources
    );
    let (scrape, lab) = scrape_of_mocked_agent().await;
    // The storage panels are checked, not exempted: the volume's counters are in the scrape
    // under the names the dashboard asks for.
    for name in ["dpu_volume_read_bytes_total", "dpu_volume_read_ops_total"] {
        assert!(
            scrape.contains(name) && wanted.contains(name),
            "{name}: in the scrape {} and in the dashboard {}",
            scrape.contains(name),
            wanted.contains(name)
        );
    }
    let found = problems(&wanted, &docs, &scrape, NOT_IN_FIXTURE);
    assert!(
        found.is_empty(),
        "the dashboard asks for what the agent does not export:\n{}\n\nscrape names: \
         {scrape:?}\nagent log:\n{}",
        found.join("\n"),
        lab.agent.log()
    );
}

/// The negative control: the same extractor and checking function report a dashboard
/// whose query names a metric that nobody exports or documents, and a documented one the
/// scrape lacks that is not listed as needing what the fixture lacks.
#[test]
fn a_query_for_a_metric_not_exported_is_reported() {
    let dashboard: Value = serde_json::from_str(
        r#"{"panels": [{"type": "row", "panels": [{"targets": [
            {"expr": "sum(rate(dpu_made_up_widgets_total{instance=~\"$instance\"}[5m]))"},
            {"expr": "rate(dpu_volume_read_ops_total[5m]) / rate(dpu_block_read_ios_total[5m])"}
        ]}]}]}"#,
    )
    .expect("JSON");
    let wanted = dashboard_names(&dashboard);
    assert_eq!(
        wanted.iter().map(String::as_str).collect::<Vec<_>>(),
        [
            "dpu_block_read_ios_total",
            "dpu_made_up_widgets_total",
            "dpu_volume_read_ops_total"
        ]
    );
    let docs = Documented::parse(METRICS_DOC);
    let scrape: BTreeSet<String> = ["dpu_block_read_ios_total".to_owned()].into();
    let found = problems(&wanted, &docs, &scrape, &[]);
    assert!(
        found
            .iter()
            .any(|p| p.starts_with("dpu_made_up_widgets_total: not documented")),
        "{found:?}"
    );
    assert!(
        found
            .iter()
            .any(|p| p.starts_with("dpu_made_up_widgets_total: not in the scrape")),
        "{found:?}"
    );
    assert!(
        found
            .iter()
            .any(|p| p.starts_with("dpu_volume_read_ops_total: not in the scrape")),
        "{found:?}"
    );
    assert!(
        !found
            .iter()
            .any(|p| p.starts_with("dpu_block_read_ios_total")),
        "{found:?}"
    );
    // The rule documents a counter the text names, not any name with a source prefix.
    assert!(docs.documents("dpu_rdma_port_xmit_data_bytes_total"));
    assert!(!docs.documents("dpu_rdma_hw_made_up_total"));
}
