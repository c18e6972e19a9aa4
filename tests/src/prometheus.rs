//! A private Prometheus for the `prometheus` tier: Debian's real `prometheus` binary,
//! started on a free loopback port with its own configuration and TSDB directory,
//! scraping one target every second, queried over its HTTP API. The judge of the agent's
//! `GET /metrics` (docs/metrics.md) is then Prometheus's own parser, storage and PromQL,
//! not a parser of ours.
//!
//! Never uses the system's Prometheus: Debian's package may start one on `:9090` at
//! install time, and a test that queried it would read someone else's data.
//!
//! HTTP client: `reqwest`'s blocking client. It is already the workspace's HTTP client
//! (dpu-host's serving checks), so only its `blocking` feature is new, and it gives a
//! synchronous API that a `Drop` and a plain `#[test]` can call; a raw hyper-util client
//! would need the `client-legacy` feature, which rebuilds tonic and everything above it.
//! A blocking client must not be called from inside a tokio runtime (it runs its own):
//! tests that also speak gRPC call these helpers outside `block_on`.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::Read as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use serde_json::Value;
use tempfile::TempDir;

use crate::harness::free_tcp_port;

/// How long Prometheus may take to answer `/-/ready` after it starts.
const READY_TIMEOUT: Duration = Duration::from_secs(60);
/// The timeout of one HTTP request to Prometheus or to a scrape target.
const HTTP_TIMEOUT: Duration = Duration::from_secs(10);
/// The programs the tier runs: the server, and `promtool` for the format lint.
const PROGRAMS: [&str; 2] = ["prometheus", "promtool"];

/// Why the tier cannot run here (a program that is not installed), or None.
pub fn missing_prerequisite() -> Option<String> {
    PROGRAMS
        .iter()
        .find(|p| program_on_path(p).is_none())
        .map(|p| format!("`{p}` is not installed (apt: prometheus)"))
}

/// The full path of `program` on `PATH`, if it is there and is a file.
pub fn program_on_path(program: &str) -> Option<PathBuf> {
    std::env::var_os("PATH").and_then(|path| {
        std::env::split_paths(&path)
            .map(|dir| dir.join(program))
            .find(|candidate| candidate.is_file())
    })
}

/// One series of an instant-vector answer: its labels (including `__name__` when the
/// expression keeps it) and its value.
#[derive(Debug, Clone, PartialEq)]
pub struct Sample {
    /// The series' labels, sorted by name.
    pub labels: BTreeMap<String, String>,
    /// The sample value (Prometheus stores float64: integers below 2^53 are exact).
    pub value: f64,
}

/// A running private Prometheus, killed and its directory removed on drop.
#[derive(Debug)]
pub struct Prometheus {
    child: Child,
    base: String,
    job: String,
    log: PathBuf,
    // Holds the config, the TSDB and the log; removed last.
    _dir: TempDir,
}

/// The harness's HTTP client, built once (it owns a thread and a runtime).
fn client() -> &'static reqwest::blocking::Client {
    static CLIENT: OnceLock<reqwest::blocking::Client> = OnceLock::new();
    CLIENT.get_or_init(|| {
        // The workspace's reqwest has rustls without a bundled crypto provider; plain HTTP
        // never uses it, but building a client needs one installed.
        let _ = tokio_rustls::rustls::crypto::ring::default_provider().install_default();
        reqwest::blocking::Client::builder()
            .timeout(HTTP_TIMEOUT)
            .no_proxy()
            .build()
            .expect("build the HTTP client")
    })
}

impl Prometheus {
    /// Starts Prometheus scraping `http://{target}/metrics` (`target` is `host:port`) as
    /// job `job` every second, and waits until it is ready. On failure, the error holds
    /// Prometheus's log.
    pub fn start(target: &str, job: &str) -> Result<Self, String> {
        // The port was free a moment ago; another process may take it before Prometheus
        // binds it, so a start that fails is tried on a new port.
        let mut last = String::new();
        for _ in 0..3 {
            match Self::try_start(target, job) {
                Ok(prometheus) => return Ok(prometheus),
                Err(e) => last = e,
            }
        }
        Err(last)
    }

    fn try_start(target: &str, job: &str) -> Result<Self, String> {
        let dir = tempfile::tempdir().map_err(|e| format!("tempdir: {e}"))?;
        let config = dir.path().join("prometheus.yml");
        std::fs::write(&config, scrape_config(target, job))
            .map_err(|e| format!("write {}: {e}", config.display()))?;
        let port = free_tcp_port();
        let log = dir.path().join("prometheus.log");
        let log_file = File::create(&log).map_err(|e| format!("create the log: {e}"))?;
        let err_file = log_file.try_clone().map_err(|e| e.to_string())?;
        let child = Command::new("prometheus")
            .arg(format!("--config.file={}", config.display()))
            .arg(format!(
                "--storage.tsdb.path={}",
                dir.path().join("data").display()
            ))
            .arg(format!("--web.listen-address=127.0.0.1:{port}"))
            .current_dir(dir.path())
            .stdin(Stdio::null())
            .stdout(log_file)
            .stderr(err_file)
            .spawn()
            .map_err(|e| format!("spawn prometheus: {e}"))?;
        let mut prometheus = Self {
            child,
            base: format!("http://127.0.0.1:{port}"),
            job: job.to_owned(),
            log,
            _dir: dir,
        };
        prometheus.wait_ready()?;
        Ok(prometheus)
    }

    fn wait_ready(&mut self) -> Result<(), String> {
        let deadline = Instant::now() + READY_TIMEOUT;
        loop {
            if let Ok(Some(status)) = self.child.try_wait() {
                return Err(format!("prometheus exited with {status}:\n{}", self.log()));
            }
            let ready = client()
                .get(format!("{}/-/ready", self.base))
                .send()
                .is_ok_and(|r| r.status().is_success());
            if ready {
                return Ok(());
            }
            if Instant::now() > deadline {
                return Err(format!(
                    "prometheus not ready after {READY_TIMEOUT:?}:\n{}",
                    self.log()
                ));
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// The job name of the scrape configuration (the `job` label of every series).
    pub fn job(&self) -> &str {
        &self.job
    }

    /// `http://127.0.0.1:PORT`, the server's address.
    pub fn base_url(&self) -> &str {
        &self.base
    }

    /// Evaluates the PromQL `expr` now (`/api/v1/query`). A scalar answer is one sample
    /// without labels; an error names the expression and carries Prometheus's message.
    pub fn query(&self, expr: &str) -> Result<Vec<Sample>, String> {
        let mut url = reqwest::Url::parse(&format!("{}/api/v1/query", self.base))
            .map_err(|e| format!("query URL: {e}"))?;
        url.query_pairs_mut().append_pair("query", expr);
        let response = client()
            .get(url)
            .send()
            .map_err(|e| format!("query {expr:?}: {e}"))?;
        let status = response.status();
        let body = response
            .text()
            .map_err(|e| format!("query {expr:?}: read the answer: {e}"))?;
        let json: Value = serde_json::from_str(&body)
            .map_err(|e| format!("query {expr:?}: HTTP {status}, not JSON ({e}): {body}"))?;
        if json["status"] != "success" {
            return Err(format!(
                "query {expr:?}: HTTP {status}: {} {}",
                json["errorType"], json["error"]
            ));
        }
        parse_result(&json["data"]).map_err(|e| format!("query {expr:?}: {e}: {body}"))
    }

    /// Evaluates `expr` every 250 ms until `done` accepts the answer, and returns that
    /// answer; after `timeout`, an error with the last answer (or query error), the
    /// target's scrape health and Prometheus's log.
    pub fn wait_for(
        &self,
        expr: &str,
        done: impl Fn(&[Sample]) -> bool,
        timeout: Duration,
    ) -> Result<Vec<Sample>, String> {
        let deadline = Instant::now() + timeout;
        loop {
            let answer = self.query(expr);
            if let Ok(samples) = &answer {
                if done(samples) {
                    return answer;
                }
            }
            if Instant::now() > deadline {
                return Err(format!(
                    "{expr:?} not as expected after {timeout:?}; last answer: {answer:?}\n\
                     target: {}\nprometheus log:\n{}",
                    self.targets(),
                    self.log()
                ));
            }
            std::thread::sleep(Duration::from_millis(250));
        }
    }

    /// The scrape targets' health and last error (`/api/v1/targets`), for failure
    /// messages: why `up` is 0 is written there.
    pub fn targets(&self) -> String {
        let answer = client()
            .get(format!("{}/api/v1/targets", self.base))
            .send()
            .and_then(|r| r.text());
        match answer {
            Ok(body) => match serde_json::from_str::<Value>(&body) {
                Ok(json) => json["data"]["activeTargets"]
                    .as_array()
                    .map(|targets| {
                        targets
                            .iter()
                            .map(|t| {
                                format!(
                                    "{} health={} lastError={}",
                                    t["scrapeUrl"], t["health"], t["lastError"]
                                )
                            })
                            .collect::<Vec<_>>()
                            .join("; ")
                    })
                    .unwrap_or(body),
                Err(_) => body,
            },
            Err(e) => format!("(targets not readable: {e})"),
        }
    }

    /// Everything Prometheus logged so far.
    pub fn log(&self) -> String {
        let mut text = String::new();
        if let Ok(mut f) = File::open(&self.log) {
            let _ = f.read_to_string(&mut text);
        }
        text
    }
}

impl Drop for Prometheus {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The configuration: one job scraping `target` every second. The timeout must not
/// exceed the interval; a debug-build agent answers in milliseconds.
fn scrape_config(target: &str, job: &str) -> String {
    format!(
        "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n  evaluation_interval: 1s\n\
         scrape_configs:\n  - job_name: {job:?}\n    scrape_interval: 1s\n    \
         scrape_timeout: 1s\n    metrics_path: /metrics\n    static_configs:\n      \
         - targets: [{target:?}]\n"
    )
}

/// The `data` of a query answer as samples: a vector's series, or a scalar.
fn parse_result(data: &Value) -> Result<Vec<Sample>, String> {
    match data["resultType"].as_str() {
        Some("vector") => data["result"]
            .as_array()
            .ok_or("a vector without a result list")?
            .iter()
            .map(|series| {
                let labels = series["metric"]
                    .as_object()
                    .ok_or("a series without labels")?
                    .iter()
                    .map(|(k, v)| (k.clone(), v.as_str().unwrap_or_default().to_owned()))
                    .collect();
                Ok(Sample {
                    labels,
                    value: parse_value(&series["value"])?,
                })
            })
            .collect(),
        Some("scalar") => Ok(vec![Sample {
            labels: BTreeMap::new(),
            value: parse_value(&data["result"])?,
        }]),
        other => Err(format!("unexpected result type {other:?}")),
    }
}

/// `[time, "value"]`: Prometheus sends the value as a string (`"NaN"`, `"+Inf"` too).
fn parse_value(pair: &Value) -> Result<f64, String> {
    let text = pair[1].as_str().ok_or("a sample without a value")?;
    match text {
        "+Inf" => Ok(f64::INFINITY),
        "-Inf" => Ok(f64::NEG_INFINITY),
        _ => text
            .parse()
            .map_err(|e| format!("value {text:?} is not a number: {e}")),
    }
}

/// One answer of a metrics endpoint.
#[derive(Debug, Clone)]
pub struct Exposition {
    /// The HTTP status.
    pub status: u16,
    /// The `Content-Type` header ("" when absent).
    pub content_type: String,
    /// The body.
    pub body: String,
}

/// `GET http://{target}/metrics`, with `Accept: {accept}` when given (none: what `curl`
/// and `promtool` send, the Prometheus text format).
pub fn get_metrics(target: &str, accept: Option<&str>) -> Result<Exposition, String> {
    let mut request = client().get(format!("http://{target}/metrics"));
    if let Some(accept) = accept {
        request = request.header(reqwest::header::ACCEPT, accept);
    }
    let response = request
        .send()
        .map_err(|e| format!("GET http://{target}/metrics: {e}"))?;
    let status = response.status().as_u16();
    let content_type = response
        .headers()
        .get(reqwest::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_owned();
    let body = response
        .text()
        .map_err(|e| format!("GET http://{target}/metrics: read the body: {e}"))?;
    Ok(Exposition {
        status,
        content_type,
        body,
    })
}

/// Waits until `GET http://{target}/metrics` answers 200 (the agent binds its metrics
/// listener after its gRPC socket), and returns that answer.
pub fn wait_for_metrics(target: &str, timeout: Duration) -> Result<Exposition, String> {
    let deadline = Instant::now() + timeout;
    loop {
        let answer = get_metrics(target, None);
        if let Ok(exposition) = &answer {
            if exposition.status == 200 {
                return answer;
            }
        }
        if Instant::now() > deadline {
            return Err(format!(
                "http://{target}/metrics not answering 200 after {timeout:?}: {answer:?}"
            ));
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// `promtool check metrics` on `text` (its standard input): the exit status and what it
/// printed. Exit 0 means it parsed and found no lint problem.
pub fn promtool_check_metrics(text: &str, dir: &Path) -> Result<(i32, String), String> {
    let input = dir.join("metrics-for-promtool.txt");
    std::fs::write(&input, text).map_err(|e| format!("write {}: {e}", input.display()))?;
    let output = Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(File::open(&input).map_err(|e| e.to_string())?)
        .output()
        .map_err(|e| format!("run promtool: {e}"))?;
    let printed = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    Ok((output.status.code().unwrap_or(-1), printed))
}

/// The series of an exposition text (either format) as `name{sorted labels}` keys,
/// without values, comments or OpenMetrics `_created` lines: what two answers must agree
/// on when they carry the same samples.
pub fn series_keys(text: &str) -> Result<std::collections::BTreeSet<String>, String> {
    let mut keys = std::collections::BTreeSet::new();
    for line in text.lines() {
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let (name, labels) = parse_series(line).map_err(|e| format!("{e}: {line:?}"))?;
        if name.ends_with("_created") {
            continue;
        }
        let labels: Vec<String> = labels.iter().map(|(k, v)| format!("{k}={v:?}")).collect();
        keys.insert(format!("{name}{{{}}}", labels.join(",")));
    }
    Ok(keys)
}

/// One sample line of an exposition text, its value kept as printed (a counter past 2^53
/// stays exact, unlike a query answer's float).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExposedSample {
    /// The metric name (`dpu_netdev_rx_bytes_total`).
    pub name: String,
    /// The labels, values unescaped, sorted by name.
    pub labels: BTreeMap<String, String>,
    /// The value as printed.
    pub value: String,
}

/// The samples of an exposition text (either format), comments left out: for comparing
/// series values with what another interface answered.
pub fn exposed_samples(text: &str) -> Result<Vec<ExposedSample>, String> {
    text.lines()
        .filter(|line| !line.is_empty() && !line.starts_with('#'))
        .map(|line| {
            let (name, labels) = parse_series(line).map_err(|e| format!("{e}: {line:?}"))?;
            // After the labels (the last `}`: only quoted label values may hold one, and
            // nothing after the block does) or the name, the value then an optional
            // timestamp.
            let after = match line.rfind('}') {
                Some(close) => &line[close + 1..],
                None => &line[name.len()..],
            };
            let value = after
                .split_whitespace()
                .next()
                .ok_or_else(|| format!("no value: {line:?}"))?;
            Ok(ExposedSample {
                name,
                labels,
                value: value.to_owned(),
            })
        })
        .collect()
}

/// Splits a sample line into its name and its labels (values unescaped), sorted.
fn parse_series(line: &str) -> Result<(String, BTreeMap<String, String>), String> {
    let name_end = line.find(['{', ' ']).ok_or("no value")?;
    let name = line[..name_end].to_owned();
    let mut labels = BTreeMap::new();
    if line[name_end..].starts_with('{') {
        let mut chars = line[name_end + 1..].chars();
        loop {
            let mut key = String::new();
            let c = loop {
                match chars.next() {
                    Some('=') => break '=',
                    Some('}') => break '}',
                    Some(',') | Some(' ') => {}
                    Some(c) => key.push(c),
                    None => return Err("unterminated labels".to_owned()),
                }
            };
            if c == '}' {
                break;
            }
            if chars.next() != Some('"') {
                return Err(format!("label {key} without a quoted value"));
            }
            let mut value = String::new();
            loop {
                match chars.next() {
                    Some('\\') => match chars.next() {
                        Some('n') => value.push('\n'),
                        Some(c) => value.push(c),
                        None => return Err("unterminated escape".to_owned()),
                    },
                    Some('"') => break,
                    Some(c) => value.push(c),
                    None => return Err("unterminated label value".to_owned()),
                }
            }
            labels.insert(key, value);
        }
    }
    Ok((name, labels))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exposed_samples_keep_names_labels_and_values_as_printed() {
        let text = "# TYPE a counter\na_total{b=\"x\\\"y\",a=\"1\"} 9007199254740993\nc 1\n# EOF\n";
        let found = exposed_samples(text).expect("parse");
        assert_eq!(found.len(), 2);
        assert_eq!(found[0].name, "a_total");
        assert_eq!(found[0].labels["b"], "x\"y");
        assert_eq!(found[0].value, "9007199254740993");
        assert_eq!(
            (found[1].name.as_str(), found[1].value.as_str()),
            ("c", "1")
        );
        assert!(
            exposed_samples("d{e=\"1\"}\n").is_err(),
            "a line without a value"
        );
    }

    #[test]
    fn series_keys_sort_labels_and_unescape_values() {
        let text = "# TYPE a counter\na_total{b=\"x\\\"y\",a=\"1\"} 3\nc 1\nd_created 5\n# EOF\n";
        let keys = series_keys(text).expect("parse");
        let keys: Vec<&str> = keys.iter().map(String::as_str).collect();
        assert_eq!(keys, ["a_total{a=\"1\",b=\"x\\\"y\"}", "c{}"]);
    }

    #[test]
    fn query_answers_parse_as_vectors_and_scalars() {
        let vector: Value = serde_json::from_str(
            r#"{"resultType":"vector","result":[{"metric":{"job":"a"},"value":[1.5,"7000000"]}]}"#,
        )
        .expect("json");
        let samples = parse_result(&vector).expect("vector");
        assert_eq!(samples.len(), 1);
        assert_eq!(samples[0].labels["job"], "a");
        assert_eq!(samples[0].value, 7_000_000.0);
        let scalar: Value =
            serde_json::from_str(r#"{"resultType":"scalar","result":[1.5,"+Inf"]}"#).expect("json");
        assert_eq!(
            parse_result(&scalar).expect("scalar")[0].value,
            f64::INFINITY
        );
    }
}
