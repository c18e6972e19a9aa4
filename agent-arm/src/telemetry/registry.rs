//! The agent's own metrics (docs/metrics.md, "The agent itself"): what a platform team
//! alerts on when the agent goes stale, fails calls or loses a backend. One
//! [`AgentMetrics`] per process, shared by `Arc` through the [`AgentContext`]; every
//! recording method is a few atomic operations, safe on any task.
//!
//! [`AgentContext`]: crate::context::AgentContext

use std::time::Duration;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{exponential_buckets, Histogram};
use prometheus_client::metrics::info::Info;
use prometheus_client::registry::{Registry, Unit};

/// `service` and `method` of a gRPC call plus its final `code` (`OK`, `NotFound`, ...).
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RpcLabels {
    service: String,
    method: String,
    code: String,
}

/// `service` and `method` of a gRPC call.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct MethodLabels {
    service: String,
    method: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct BackendLabels {
    backend: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ResultLabels {
    result: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct SharedLabels {
    shared: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct SourceLabels {
    source: &'static str,
}

fn seconds_histogram() -> Histogram {
    // 100 µs .. ~52 s: a cached unary call to a SNAP apply that waits for firmware.
    Histogram::new(exponential_buckets(0.0001, 2.0, 20))
}

/// The agent's registry and handles to every family in it.
#[derive(Debug)]
pub(crate) struct AgentMetrics {
    registry: Registry,
    grpc_requests: Family<RpcLabels, Counter>,
    grpc_duration: Family<MethodLabels, Histogram, fn() -> Histogram>,
    backend_up: Family<BackendLabels, Gauge>,
    backend_reconnects: Family<BackendLabels, Counter>,
    reconcile_runs: Counter,
    reconcile_failures: Counter,
    state_file_writes: Family<ResultLabels, Counter>,
    snapshot_duration: Histogram,
    snapshot_skew: Gauge<f64, std::sync::atomic::AtomicU64>,
    scrapes: Family<SharedLabels, Counter>,
    read_errors: Family<SourceLabels, Counter>,
}

impl AgentMetrics {
    /// Registers every family, with the agent's version as `dpu_agent_build_info`.
    pub(crate) fn new() -> Self {
        let mut registry = Registry::default();
        let grpc_requests = Family::<RpcLabels, Counter>::default();
        let grpc_duration: Family<MethodLabels, Histogram, fn() -> Histogram> =
            Family::new_with_constructor(seconds_histogram);
        let backend_up = Family::<BackendLabels, Gauge>::default();
        let backend_reconnects = Family::<BackendLabels, Counter>::default();
        let reconcile_runs = Counter::default();
        let reconcile_failures = Counter::default();
        let state_file_writes = Family::<ResultLabels, Counter>::default();
        let snapshot_duration = seconds_histogram();
        let snapshot_skew = Gauge::<f64, std::sync::atomic::AtomicU64>::default();
        let scrapes = Family::<SharedLabels, Counter>::default();
        let read_errors = Family::<SourceLabels, Counter>::default();
        registry.register(
            "dpu_agent_build",
            "The running agent's version",
            Info::new(vec![("version", crate::version::AGENT_VERSION)]),
        );
        registry.register(
            "dpu_agent_grpc_requests",
            "gRPC calls answered, by service, method and final status code",
            grpc_requests.clone(),
        );
        registry.register_with_unit(
            "dpu_agent_grpc_request_duration",
            "Time from a gRPC call's arrival to its response headers",
            Unit::Seconds,
            grpc_duration.clone(),
        );
        registry.register(
            "dpu_agent_backend_up",
            "1 while the backend answers its health probe, 0 while it does not",
            backend_up.clone(),
        );
        registry.register(
            "dpu_agent_backend_reconnects",
            "Times a backend that was down answered again",
            backend_reconnects.clone(),
        );
        registry.register(
            "dpu_agent_storage_reconcile_runs",
            "Background storage reconciliations run",
            reconcile_runs.clone(),
        );
        registry.register(
            "dpu_agent_storage_reconcile_failures",
            "Background storage reconciliations that left the backend unlike the desired state",
            reconcile_failures.clone(),
        );
        registry.register(
            "dpu_agent_state_file_writes",
            "Writes of the desired-state file, by result",
            state_file_writes.clone(),
        );
        registry.register_with_unit(
            "dpu_counters_snapshot_duration",
            "Time one counter snapshot took to read, for gRPC and scrapes alike",
            Unit::Seconds,
            snapshot_duration.clone(),
        );
        registry.register_with_unit(
            "dpu_counters_snapshot_skew",
            "The last snapshot's skew: time between its first and its last counter read",
            Unit::Seconds,
            snapshot_skew.clone(),
        );
        registry.register(
            "dpu_agent_metrics_scrapes",
            "Scrapes of /metrics answered; shared=true when the scrape reused a reading in progress",
            scrapes.clone(),
        );
        registry.register(
            "dpu_counters_read_errors",
            "Counter objects that could not be read, by source",
            read_errors.clone(),
        );
        Self {
            registry,
            grpc_requests,
            grpc_duration,
            backend_up,
            backend_reconnects,
            reconcile_runs,
            reconcile_failures,
            state_file_writes,
            snapshot_duration,
            snapshot_skew,
            scrapes,
            read_errors,
        }
    }

    /// The registry to encode with the scrape's counters.
    pub(crate) fn registry(&self) -> &Registry {
        &self.registry
    }

    /// One finished gRPC call: `code` as tonic's `Code` debug name (`Ok`, `NotFound`).
    pub(crate) fn record_rpc(&self, service: &str, method: &str, code: &str, elapsed: Duration) {
        self.grpc_requests
            .get_or_create(&RpcLabels {
                service: service.to_owned(),
                method: method.to_owned(),
                code: code.to_owned(),
            })
            .inc();
        self.grpc_duration
            .get_or_create(&MethodLabels {
                service: service.to_owned(),
                method: method.to_owned(),
            })
            .observe(elapsed.as_secs_f64());
    }

    /// A backend's latest health probe; a down → up change counts as a reconnect (the
    /// first probe, up or down, is not one).
    pub(crate) fn set_backend_up(&self, backend: &str, up: bool) {
        let labels = BackendLabels {
            backend: backend.to_owned(),
        };
        // Created at 0 on the first probe, so a rate over it is defined from the start.
        let first = self.backend_reconnects.get(&labels).is_none();
        let reconnects = self.backend_reconnects.get_or_create(&labels);
        let previous = self.backend_up.get_or_create(&labels).set(i64::from(up));
        if up && previous == 0 && !first {
            reconnects.inc();
        }
    }

    /// One background reconciliation, and whether it left the backend as desired.
    pub(crate) fn reconcile_finished(&self, ok: bool) {
        self.reconcile_runs.inc();
        if !ok {
            self.reconcile_failures.inc();
        }
    }

    /// One write of the desired-state file.
    pub(crate) fn state_file_written(&self, ok: bool) {
        self.state_file_writes
            .get_or_create(&ResultLabels {
                result: if ok { "ok" } else { "error" },
            })
            .inc();
    }

    /// One snapshot read (gRPC or scrape): how long it took and its skew.
    pub(crate) fn snapshot_taken(&self, duration: Duration, skew: Duration) {
        self.snapshot_duration.observe(duration.as_secs_f64());
        self.snapshot_skew.set(skew.as_secs_f64());
    }

    /// One answered scrape; `shared` when it reused a reading already in progress.
    pub(crate) fn scrape_answered(&self, shared: bool) {
        self.scrapes
            .get_or_create(&SharedLabels {
                shared: if shared { "true" } else { "false" },
            })
            .inc();
    }

    /// `objects` of `source` (its wire name) could not be read in one snapshot.
    pub(crate) fn read_errors(&self, source: &'static str, objects: u64) {
        self.read_errors
            .get_or_create(&SourceLabels { source })
            .inc_by(objects);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(metrics: &AgentMetrics) -> String {
        let mut out = String::new();
        prometheus_client::encoding::text::encode(&mut out, metrics.registry()).expect("encode");
        out
    }

    #[test]
    fn a_backend_that_comes_back_counts_one_reconnect_and_its_first_probe_none() {
        let metrics = AgentMetrics::new();
        metrics.set_backend_up("snap", true);
        assert!(text(&metrics).contains("dpu_agent_backend_reconnects_total{backend=\"snap\"} 0"));
        metrics.set_backend_up("snap", false);
        metrics.set_backend_up("snap", true);
        metrics.set_backend_up("snap", true);
        let out = text(&metrics);
        assert!(
            out.contains("dpu_agent_backend_reconnects_total{backend=\"snap\"} 1"),
            "{out}"
        );
        assert!(
            out.contains("dpu_agent_backend_up{backend=\"snap\"} 1"),
            "{out}"
        );
    }

    #[test]
    fn rpc_calls_are_counted_by_code_and_timed_by_method() {
        let metrics = AgentMetrics::new();
        metrics.record_rpc(
            "dpu.v1.Storage",
            "ListVolumes",
            "Ok",
            Duration::from_millis(3),
        );
        metrics.record_rpc(
            "dpu.v1.Storage",
            "ListVolumes",
            "Unavailable",
            Duration::from_secs(5),
        );
        let out = text(&metrics);
        assert!(out.contains(
            "dpu_agent_grpc_requests_total{service=\"dpu.v1.Storage\",method=\"ListVolumes\",code=\"Unavailable\"} 1"
        ), "{out}");
        assert!(out.contains(
            "dpu_agent_grpc_request_duration_seconds_count{service=\"dpu.v1.Storage\",method=\"ListVolumes\"} 2"
        ), "{out}");
        assert!(out.contains("dpu_agent_build_info{version=\""), "{out}");
    }
}
