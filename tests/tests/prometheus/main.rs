//! The prometheus tier: the agent's `GET /metrics` (docs/metrics.md) scraped by Debian's
//! real `prometheus` (a private server per test, started by
//! [`dpu_tests::prometheus::Prometheus`]) and linted by the real `promtool`. What the
//! agent serves is judged by Prometheus's own parser and PromQL: the values of fixture
//! counters after unit conversion, rates over a changing fixture, the absence (not zero)
//! of counters that cannot be read, and the text and OpenMetrics formats.
//!
//! Needs `prometheus` and `promtool` (apt: prometheus); without them each test is skipped
//! with the reason (a failure under `DPU_TESTS_STRICT=1`). No root needed.

mod formats;
mod scrape;

use std::path::{Path, PathBuf};
use std::time::Duration;

use dpu_tests::fake_snap::FakeSnap;
use dpu_tests::harness::{free_tcp_port, AgentOptions, AgentProcess};
use dpu_tests::prometheus::{self, Prometheus, Sample};

/// How long Prometheus may take to show what the agent serves: a few 1 s scrapes.
pub(crate) const SCRAPED: Duration = Duration::from_secs(60);
/// The scrape job's name.
pub(crate) const JOB: &str = "dpu-agent";

/// Skips the test (a failure under `DPU_TESTS_STRICT=1`) when `prometheus` or `promtool`
/// is missing.
macro_rules! prerequisites {
    () => {
        if let Some(reason) = dpu_tests::prometheus::missing_prerequisite() {
            dpu_tests::skip!("{reason}");
        }
    };
}
pub(crate) use prerequisites;

/// An agent serving `/metrics` on loopback TCP over a fixture, with a fake SNAP; Prometheus
/// is started separately ([`Served::scrape`]) so a test can GET the endpoint alone.
pub(crate) struct Served {
    /// Dropped first: stops scraping before the agent goes away.
    pub(crate) prometheus: Option<Prometheus>,
    pub(crate) agent: AgentProcess,
    /// `127.0.0.1:PORT` of the metrics endpoint.
    pub(crate) target: String,
    /// The fixture root the agent reads; tests change counters under it.
    pub(crate) root: PathBuf,
    _snap: FakeSnap,
    _dir: tempfile::TempDir,
}

impl Served {
    /// Starts the agent on the fixture `(dir, root)` (already prepared by the test) with
    /// `[metrics] listen = "tcp:127.0.0.1:PORT"` over plaintext, and waits until the
    /// endpoint answers.
    pub(crate) fn start((dir, root): (tempfile::TempDir, PathBuf)) -> Self {
        let target = format!("127.0.0.1:{}", free_tcp_port());
        let mut options = AgentOptions::new(dir.path(), &root);
        options.config_toml =
            format!("[metrics]\nlisten = \"tcp:{target}\"\n\n[security]\ninsecure_listen = true\n");
        let snap = FakeSnap::start(&options.snap_socket).expect("fake SNAP");
        let agent = AgentProcess::start(&options);
        if let Err(e) = prometheus::wait_for_metrics(&target, Duration::from_secs(20)) {
            panic!("{e}\nagent log:\n{}", agent.log());
        }
        Self {
            prometheus: None,
            agent,
            target,
            root,
            _snap: snap,
            _dir: dir,
        }
    }

    /// Starts a private Prometheus scraping the agent every second.
    pub(crate) fn scrape(&mut self) -> &Prometheus {
        let started = Prometheus::start(&self.target, JOB)
            .unwrap_or_else(|e| panic!("prometheus did not start: {e}"));
        self.prometheus.insert(started)
    }

    /// The running Prometheus ([`Served::scrape`] first).
    pub(crate) fn prom(&self) -> &Prometheus {
        self.prometheus.as_ref().expect("scrape() first")
    }

    /// Waits until `expr` has exactly one series whose value is `want`, and returns it;
    /// the panic carries the last answer, Prometheus's view of the target and the log.
    pub(crate) fn wait_value(&self, expr: &str, want: f64) -> Sample {
        let answer = self
            .prom()
            .wait_for(expr, |s| s.len() == 1 && s[0].value == want, SCRAPED)
            .unwrap_or_else(|e| panic!("want {want}: {e}\nagent log:\n{}", self.agent.log()));
        answer.into_iter().next().expect("one series")
    }

    /// The fixture root.
    pub(crate) fn root(&self) -> &Path {
        &self.root
    }
}
