//! The two answers of `GET /metrics` (docs/metrics.md, "Turning it on"): the Prometheus
//! text format 0.0.4 for a client that does not ask for OpenMetrics (`curl`, `promtool`),
//! clean under `promtool check metrics`; OpenMetrics 1.0 for one that does (Prometheus),
//! ending with `# EOF`; and both carrying the same series.

use dpu_tests::fixture;
use dpu_tests::prometheus::{get_metrics, promtool_check_metrics, series_keys};

use crate::{prerequisites, Served};

/// The `Accept` header Prometheus 2.42 sends on every scrape.
const PROMETHEUS_ACCEPT: &str = "application/openmetrics-text;version=1.0.0,\
     application/openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1";

#[test]
fn the_text_format_passes_promtool_and_openmetrics_ends_with_eof() {
    prerequisites!();
    let served = Served::start(fixture::bluefield3_tempdir());
    // One scrape first, so the scrape counter's series exists in both answers below.
    get_metrics(&served.target, None).expect("first GET");

    let text = get_metrics(&served.target, None).expect("GET without Accept");
    assert_eq!(text.status, 200, "{text:?}");
    assert!(
        text.content_type.starts_with("text/plain") && text.content_type.contains("0.0.4"),
        "a client that does not ask for OpenMetrics gets the text format 0.0.4, not {:?}",
        text.content_type
    );
    assert!(!text.body.contains("# EOF"), "{}", text.body);
    // Not an empty answer that lints clean: the fixture's counters are in it.
    assert!(
        text.body.contains("dpu_rdma_port_rcv_data_bytes_total{"),
        "{}",
        text.body
    );
    let (code, printed) = promtool_check_metrics(&text.body, served.root()).expect("promtool");
    assert_eq!(
        (code, printed.trim()),
        (0, ""),
        "promtool check metrics found problems in:\n{}",
        text.body
    );

    for accept in ["application/openmetrics-text", PROMETHEUS_ACCEPT] {
        let open = get_metrics(&served.target, Some(accept)).expect("GET with OpenMetrics");
        assert_eq!(open.status, 200, "{open:?}");
        assert!(
            open.content_type
                .starts_with("application/openmetrics-text"),
            "Accept: {accept} answered with {:?}",
            open.content_type
        );
        assert!(
            open.body.ends_with("# EOF\n"),
            "OpenMetrics must end with '# EOF':\n{}",
            open.body
        );
        assert_eq!(
            open.body.matches("# EOF").count(),
            1,
            "one '# EOF', at the end:\n{}",
            open.body
        );
        let (text_keys, open_keys) = (
            series_keys(&text.body).expect("parse the text format"),
            series_keys(&open.body).expect("parse OpenMetrics"),
        );
        let only_text: Vec<_> = text_keys.difference(&open_keys).collect();
        let only_open: Vec<_> = open_keys.difference(&text_keys).collect();
        assert!(
            only_text.is_empty() && only_open.is_empty(),
            "both formats carry the same series; only in text: {only_text:?}; \
             only in OpenMetrics: {only_open:?}"
        );
    }
}
