//! `dpuctl demo check-serving` against the OpenAI-compatible stub: a healthy stream
//! passes, and each way a deployment goes wrong (buffering ingress, wrong served model,
//! drifted answers, a server that never gets ready) fails with exit 1 and says why.

use std::path::PathBuf;

use dpu_tests::harness::dpuctl;
use dpu_tests::openai_stub::{self, StubConfig, StubTls};

const MODEL: &str = "demo-qlora";
const PROMPT: &str = "What does a BlueField DPU offload?";
const ANSWER: &str = "It offloads networking, storage and security from the host CPU.";

/// A minimal valid plan for the local executor, in a temp dir kept alive by the guard.
fn plan() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().expect("tempdir");
    let text = format!(
        r#"
[executor]
kind = "local"
work_dir = "runs"

[storage]
agent = "unix:/run/dpu-agent/dpu-agent.sock"
exposure = "disk0"
mount_point = "/mnt/nvme-demo"
shared_path = "/mnt/nvme-demo/shared"

[[storage.manifest]]
path = "datasets/sample.jsonl"
bytes = 10
sha256 = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"

[communication]
nodes = ["localhost"]
nccl_tests = ["all_reduce_perf"]

[training]
api = "pytorchjob"
image = "trainer:latest"
command = ["python", "train.py"]
workers = 1
gpus_per_worker = 0
timeout = "5m"

[merge]
command = ["python", "merge.py"]
fingerprint = "out/fingerprint.json"
archive = "archive/fingerprint.json"
rel_tolerance = 0.02

[serving]
image = "vllm/vllm-openai:v0.11.0"
gpus_per_replica = 0
model = "{MODEL}"
model_path = "/models/merged"
service_name = "vllm-demo"

[[serving.answers]]
prompt = "{PROMPT}"
expect = "{ANSWER}"
min_similarity = 0.8
"#
    );
    let path = dir.path().join("plan.toml");
    std::fs::write(&path, text).expect("write plan");
    (dir, path)
}

/// Runs `check-serving -o json` against `url`; exit code, parsed JSON, stderr.
fn check(url: &str, extra: &[&str]) -> (Option<i32>, serde_json::Value, String) {
    let (_dir, plan) = plan();
    let plan = plan.to_str().expect("utf-8 temp path");
    let mut args = vec![
        "-o",
        "json",
        "demo",
        "check-serving",
        "--plan",
        plan,
        "--url",
        url,
    ];
    args.extend_from_slice(extra);
    let out = dpuctl(&args);
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    let json = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "no JSON ({e}): stdout {:?}, stderr {stderr}",
            String::from_utf8_lossy(&out.stdout)
        )
    });
    (out.status.code(), json, stderr)
}

/// The report's problems joined, for assertions.
fn problems(json: &serde_json::Value) -> String {
    json["problems"]
        .as_array()
        .map(|p| {
            p.iter()
                .filter_map(|v| v.as_str())
                .collect::<Vec<_>>()
                .join("\n")
        })
        .unwrap_or_default()
}

#[test]
fn a_healthy_streaming_server_passes() {
    let stub = openai_stub::start(StubConfig::new(MODEL).answer(PROMPT, ANSWER));
    let (code, json, stderr) = check(&stub.url(), &[]);
    assert_eq!(code, Some(0), "{json:#}\n{stderr}");
    assert_eq!(json["passed"], true, "{json:#}");
    assert_eq!(json["listed_models"][0], MODEL);
    assert_eq!(json["answers"][0]["similarity"], 1.0);
    let stream = &json["stream"];
    assert!(stream["content_chunks"].as_u64() >= Some(3), "{stream:#}");
    assert_eq!(stream["buffered"], false, "{stream:#}");
    assert_eq!(stream["done"], true);
    assert_eq!(stream["text"], ANSWER);
}

#[test]
fn the_table_says_passed() {
    let stub = openai_stub::start(StubConfig::new(MODEL).answer(PROMPT, ANSWER));
    let (_dir, plan) = plan();
    let plan = plan.to_str().expect("utf-8 temp path");
    let out = dpuctl(&[
        "demo",
        "check-serving",
        "--plan",
        plan,
        "--url",
        &stub.url(),
    ]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}");
    for needle in ["health", "stream", "similarity 1.00", "serving: PASSED"] {
        assert!(stdout.contains(needle), "{needle} missing:\n{stdout}");
    }
}

#[test]
fn a_buffered_stream_fails_and_names_proxy_buffering() {
    let mut config = StubConfig::new(MODEL).answer(PROMPT, ANSWER);
    config.buffer_stream = true;
    let stub = openai_stub::start(config);
    let (code, json, stderr) = check(&stub.url(), &[]);
    assert_eq!(code, Some(1), "{json:#}\n{stderr}");
    assert_eq!(json["passed"], false);
    assert_eq!(json["stream"]["buffered"], true, "{json:#}");
    let problems = problems(&json);
    assert!(problems.contains("proxy-buffering off"), "{problems}");
    // The answers themselves were fine.
    assert_eq!(json["answers"][0]["passed"], true);
}

#[test]
fn a_wrong_served_model_fails_naming_the_model() {
    let mut config = StubConfig::new(MODEL).answer(PROMPT, ANSWER);
    config.wrong_model = true;
    let stub = openai_stub::start(config);
    let (code, json, _) = check(&stub.url(), &[]);
    assert_eq!(code, Some(1), "{json:#}");
    let problems = problems(&json);
    assert!(
        problems.contains(&format!("model \"{MODEL}\" is not served")),
        "{problems}"
    );
    assert!(problems.contains("demo-qlora-other"), "{problems}");
}

#[test]
fn a_drifted_answer_fails_naming_prompt_and_similarity() {
    let stub = openai_stub::start(
        StubConfig::new(MODEL).answer(PROMPT, "Bananas are a good source of potassium."),
    );
    let (code, json, _) = check(&stub.url(), &[]);
    assert_eq!(code, Some(1), "{json:#}");
    let problems = problems(&json);
    assert!(problems.contains(PROMPT), "{problems}");
    assert!(problems.contains("similarity 0."), "{problems}");
    assert!(json["answers"][0]["similarity"].as_f64() < Some(0.8));
}

#[test]
fn a_server_that_never_gets_ready_fails_after_the_health_timeout() {
    let mut config = StubConfig::new(MODEL).answer(PROMPT, ANSWER);
    config.health_delay = std::time::Duration::from_secs(60);
    let stub = openai_stub::start(config);
    let started = std::time::Instant::now();
    let (code, json, _) = check(&stub.url(), &["--health-timeout", "1"]);
    assert_eq!(code, Some(1), "{json:#}");
    assert!(started.elapsed() < std::time::Duration::from_secs(20));
    let problems = problems(&json);
    assert!(
        problems.contains("/health did not answer 200 within 1s"),
        "{problems}"
    );
    assert!(problems.contains("503"), "{problems}");
    assert!(json["ready_after_s"].is_null());
}

#[test]
fn nothing_listening_counts_as_not_ready() {
    let port = dpu_tests::harness::free_tcp_port();
    let (code, json, _) = check(
        &format!("http://127.0.0.1:{port}"),
        &["--health-timeout", "1"],
    );
    assert_eq!(code, Some(1), "{json:#}");
    let problems = problems(&json);
    assert!(problems.contains("did not answer 200"), "{problems}");
}

#[test]
fn an_invalid_plan_is_a_usage_error_naming_the_problem() {
    let (dir, plan) = plan();
    let text = std::fs::read_to_string(&plan).expect("read plan");
    std::fs::write(
        &plan,
        text.replace("min_similarity = 0.8", "min_similarity = 2.0"),
    )
    .expect("write plan");
    let out = dpuctl(&[
        "demo",
        "check-serving",
        "--plan",
        plan.to_str().expect("utf-8"),
        "--url",
        "http://127.0.0.1:9",
    ]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("serving.answers[0].min_similarity"),
        "{stderr}"
    );
    drop(dir);
}

#[test]
fn https_with_the_ingress_ca_passes_and_without_it_fails_at_once() {
    let certs = tempfile::tempdir().expect("tempdir");
    let dir = certs.path();
    crate::security::ca(dir, "ingress-ca");
    crate::security::issue(dir, "ingress-ca", "localhost", "serverAuth");
    let mut config = StubConfig::new(MODEL).answer(PROMPT, ANSWER);
    config.tls = Some(StubTls {
        cert: dir.join("localhost.crt"),
        key: dir.join("localhost.key"),
    });
    let stub = openai_stub::start(config);
    let url = format!("https://localhost:{}/", stub.addr().port());
    let ca = dir.join("ingress-ca.crt");
    let (code, json, stderr) = check(&url, &["--ca", ca.to_str().expect("utf-8")]);
    assert_eq!(code, Some(0), "{json:#}\n{stderr}");
    assert_eq!(json["stream"]["buffered"], false, "{json:#}");

    // Without the CA: a certificate problem, reported without waiting out /health.
    let started = std::time::Instant::now();
    let (code, json, _) = check(&url, &[]);
    assert_eq!(code, Some(1), "{json:#}");
    let problems = problems(&json);
    assert!(problems.contains("TLS failed"), "{problems}");
    assert!(problems.contains("--ca"), "{problems}");
    assert!(started.elapsed() < std::time::Duration::from_secs(30));
}
