//! The serving step of `dpuctl demo training-storage`, also runnable alone as
//! `dpuctl demo check-serving`: is the OpenAI-compatible server (vLLM) up, does it serve
//! the plan's model, does that model still give the archived answers, and does a streamed
//! completion reach us as a stream. Talks plain HTTP through reqwest with lenient JSON
//! (`serde_json::Value`), because vLLM adds fields and renames others between releases
//! (docs/reference/demo-ecosystem.md §3.2, §3.5).

use std::path::PathBuf;
use std::time::{Duration, Instant};

use reqwest::{Client, StatusCode};
use serde::Serialize;
use serde_json::{json, Value};

use super::plan::{Answer, Plan};
pub use super::serving_error::ServingError;
use super::serving_stream::{self, error_message, excerpt, SseDecoder, StreamReport};

/// Enough tokens to compare a short archived answer, few enough to keep the check fast
/// on a CPU build of vLLM.
const MAX_TOKENS: u32 = 64;

/// Pause between `/health` polls.
const HEALTH_POLL: Duration = Duration::from_millis(250);

/// Generation is slower than an agent call: completions get at least this long.
const MIN_REQUEST_TIMEOUT: Duration = Duration::from_secs(60);

/// What to check and how patiently; built from the plan and the flags.
#[derive(Debug, Clone)]
pub struct ServingCheck {
    /// Base URL of the server (`http://127.0.0.1:8000`, `https://vllm.lab.example/`).
    pub base_url: String,
    /// The served model name that `/v1/models` must list.
    pub model: String,
    /// Archived answers to reproduce; the first is also streamed.
    pub answers: Vec<Answer>,
    /// How long `/health` may take to answer 200 (vLLM loads the model first).
    pub health_timeout: Duration,
    /// Limit on each request once the server is up (the streamed one included, body and all).
    pub request_timeout: Duration,
    /// An extra CA (PEM) to trust, for an ingress with a lab certificate.
    pub ca: Option<PathBuf>,
}

/// The outcome of every check, in order; the JSON output of `check-serving`.
#[derive(Debug, Clone, Default, Serialize)]
pub struct ServingReport {
    /// The URL checked.
    pub base_url: String,
    /// The model asked for.
    pub model: String,
    /// Whether every check passed (`problems` is empty).
    pub passed: bool,
    /// Seconds until `/health` answered 200; absent when it never did.
    pub ready_after_s: Option<f64>,
    /// Model ids `/v1/models` listed; absent when it was not reached.
    pub listed_models: Option<Vec<String>>,
    /// One entry per archived answer asked.
    pub answers: Vec<AnswerReport>,
    /// The streamed completion; absent when the checks stopped before it.
    pub stream: Option<StreamReport>,
    /// Every failure, as a sentence that says what to look at.
    pub problems: Vec<String>,
}

/// One archived answer compared with what the server says now.
#[derive(Debug, Clone, Serialize)]
pub struct AnswerReport {
    /// The prompt sent.
    pub prompt: String,
    /// The archived answer.
    pub expect: String,
    /// What the server answered; absent when the request failed.
    pub got: Option<String>,
    /// [`similarity`] of `got` and `expect`, 0..=1.
    pub similarity: Option<f64>,
    /// The plan's threshold.
    pub min_similarity: f64,
    /// Whether the similarity reached the threshold.
    pub passed: bool,
}

/// Runs every check; failures become `problems`, never errors, so the report always says
/// how far the server got. Stops early when later checks cannot mean anything (server
/// not up, model not served).
pub async fn check(c: &ServingCheck) -> ServingReport {
    match http_client(c) {
        Ok(client) => check_with(c, &client).await,
        Err(e) => finish(ServingReport {
            base_url: c.base_url.clone(),
            model: c.model.clone(),
            problems: vec![dpu_probe::error_chain(&e)],
            ..ServingReport::default()
        }),
    }
}

/// The HTTP client: rustls with the system roots plus `ca`, HTTP/1.1 (what a streaming
/// ingress is configured for), connect timeouts bounded by the request timeout.
pub fn http_client(c: &ServingCheck) -> Result<Client, ServingError> {
    // reqwest is built with `rustls-no-provider` (ring, like the rest of the workspace);
    // an error only means a provider is installed already.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let mut builder = Client::builder().connect_timeout(c.request_timeout);
    if is_loopback(&c.base_url) {
        builder = builder.no_proxy();
    }
    if let Some(ca) = &c.ca {
        let pem = std::fs::read(ca).map_err(|source| ServingError::ReadCa {
            path: ca.clone(),
            source,
        })?;
        let certs =
            reqwest::Certificate::from_pem_bundle(&pem).map_err(|source| ServingError::NotPem {
                path: ca.clone(),
                source,
            })?;
        if certs.is_empty() {
            return Err(ServingError::NoCertificate { path: ca.clone() });
        }
        builder = builder.tls_certs_merge(certs);
    }
    builder.build().map_err(ServingError::Client)
}

/// Whether `url` points at this machine (the local executor's server). Such a server is
/// never reached through the `HTTP(S)_PROXY` a lab machine may set for the outside.
fn is_loopback(url: &str) -> bool {
    let Some(host) = reqwest::Url::parse(url)
        .ok()
        .and_then(|u| u.host_str().map(str::to_owned))
    else {
        return false;
    };
    host.eq_ignore_ascii_case("localhost")
        || host
            .trim_start_matches('[')
            .trim_end_matches(']')
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

/// [`check`] with a given client.
async fn check_with(c: &ServingCheck, client: &Client) -> ServingReport {
    let mut report = ServingReport {
        base_url: c.base_url.clone(),
        model: c.model.clone(),
        ..ServingReport::default()
    };
    match wait_healthy(c, client).await {
        Ok(after) => report.ready_after_s = Some(after.as_secs_f64()),
        Err(problem) => {
            report.problems.push(problem);
            return finish(report);
        }
    }
    match list_models(c, client).await {
        Ok(ids) => {
            let served = ids.contains(&c.model);
            if !served {
                report.problems.push(format!(
                    "model {:?} is not served; /v1/models lists {ids:?} (check \
                     --served-model-name against serving.model)",
                    c.model
                ));
            }
            report.listed_models = Some(ids);
            if !served {
                return finish(report);
            }
        }
        Err(problem) => {
            report.problems.push(problem);
            return finish(report);
        }
    }
    for answer in &c.answers {
        let (entry, problem) = ask(c, client, answer).await;
        report.answers.push(entry);
        report.problems.extend(problem);
    }
    if let Some(first) = c.answers.first() {
        match stream(c, client, &first.prompt).await {
            Ok(stream) => {
                report.problems.extend(stream.problems());
                report.stream = Some(stream);
            }
            Err(problem) => report.problems.push(problem),
        }
    }
    finish(report)
}

/// Sets `passed` from `problems`.
fn finish(mut report: ServingReport) -> ServingReport {
    report.passed = report.problems.is_empty();
    report
}

/// `{base}/{path}`, whether or not the base ends in a slash (ingress URLs often do).
fn url(c: &ServingCheck, path: &str) -> String {
    format!("{}/{path}", c.base_url.trim_end_matches('/'))
}

/// A reqwest error with its causes ("connection refused" is in the chain, not the top).
fn describe(e: reqwest::Error) -> String {
    dpu_probe::error_chain(&e)
}

/// Polls `/health` until 200 or the timeout; returns the time it took. Refused
/// connections and 503 both mean "not yet": vLLM only listens once the model is loaded,
/// and answers 503 when its engine died.
async fn wait_healthy(c: &ServingCheck, client: &Client) -> Result<Duration, String> {
    let started = Instant::now();
    let deadline = started + c.health_timeout;
    let health = url(c, "health");
    loop {
        let remaining = deadline.saturating_duration_since(Instant::now());
        let limit = c.request_timeout.min(remaining).max(HEALTH_POLL);
        let last = match client.get(&health).timeout(limit).send().await {
            Ok(resp) if resp.status() == StatusCode::OK => return Ok(started.elapsed()),
            Ok(resp) => format!("HTTP {}", resp.status()),
            // A certificate the client rejects will not become acceptable by waiting.
            Err(e) if is_tls_failure(&e) => {
                return Err(format!(
                    "{health}: TLS failed: {} (give the ingress CA with --ca)",
                    describe(e)
                ))
            }
            Err(e) => describe(e),
        };
        if Instant::now() >= deadline {
            return Err(format!(
                "{health} did not answer 200 within {}s (last: {last}); is the server \
                 running and the model loaded?",
                c.health_timeout.as_secs_f64()
            ));
        }
        tokio::time::sleep(HEALTH_POLL.min(deadline.saturating_duration_since(Instant::now())))
            .await;
    }
}

/// Whether a TLS handshake or certificate check failed somewhere in the error chain.
/// hyper-rustls nests the rustls error in `io::Error`s, whose `source` skips the error
/// they wrap, so those are unwrapped with `get_ref`.
fn is_tls_failure(e: &reqwest::Error) -> bool {
    let mut next: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(error) = next {
        if error.is::<rustls::Error>() {
            return true;
        }
        next = match error.downcast_ref::<std::io::Error>() {
            Some(io) => io
                .get_ref()
                .map(|inner| inner as &(dyn std::error::Error + 'static)),
            None => error.source(),
        };
    }
    false
}

/// Sends a request and returns its JSON body; any failure as a problem sentence naming
/// `what`.
async fn json_call(request: reqwest::RequestBuilder, what: &str) -> Result<Value, String> {
    let resp = request
        .send()
        .await
        .map_err(|e| format!("{what} failed: {}", describe(e)))?;
    let status = resp.status();
    let body = resp
        .text()
        .await
        .map_err(|e| format!("{what}: reading the answer failed: {}", describe(e)))?;
    let value: Option<Value> = serde_json::from_str(&body).ok();
    if !status.is_success() {
        let detail = value
            .as_ref()
            .map(error_body_message)
            .unwrap_or_else(|| excerpt(&body));
        return Err(format!("{what} answered HTTP {status}: {detail}"));
    }
    value.ok_or_else(|| {
        format!(
            "{what} answered something that is not JSON: {}",
            excerpt(&body)
        )
    })
}

/// The message of an error body in either shape vLLM has used: `{"error": {...}}`
/// (current, OpenAI's) or `{"object": "error", "message": ...}` (older releases).
fn error_body_message(body: &Value) -> String {
    match body.get("error") {
        Some(error) => error_message(error),
        None => error_message(body),
    }
}

/// The model ids `/v1/models` lists.
async fn list_models(c: &ServingCheck, client: &Client) -> Result<Vec<String>, String> {
    let request = client.get(url(c, "v1/models")).timeout(c.request_timeout);
    let body = json_call(request, "GET /v1/models").await?;
    let data = body["data"].as_array().ok_or_else(|| {
        format!(
            "GET /v1/models answered without a \"data\" list: {}",
            excerpt(&body.to_string())
        )
    })?;
    Ok(data
        .iter()
        .filter_map(|card| card["id"].as_str().map(str::to_owned))
        .collect())
}

/// The chat completion request: greedy decoding with a fixed seed, the least drift vLLM
/// offers (outputs are still not bit-reproducible, §3.4).
fn completion_request(model: &str, prompt: &str, stream: bool) -> Value {
    json!({
        "model": model,
        "messages": [{"role": "user", "content": prompt}],
        "temperature": 0,
        "seed": 0,
        "max_tokens": MAX_TOKENS,
        "stream": stream,
    })
}

/// Asks one archived prompt (not streamed) and compares the answer.
async fn ask(c: &ServingCheck, client: &Client, answer: &Answer) -> (AnswerReport, Option<String>) {
    let mut entry = AnswerReport {
        prompt: answer.prompt.clone(),
        expect: answer.expect.clone(),
        got: None,
        similarity: None,
        min_similarity: answer.min_similarity,
        passed: false,
    };
    let request = client
        .post(url(c, "v1/chat/completions"))
        .timeout(c.request_timeout)
        .json(&completion_request(&c.model, &answer.prompt, false));
    let what = format!("the completion of {:?}", answer.prompt);
    let body = match json_call(request, &what).await {
        Ok(body) => body,
        Err(problem) => return (entry, Some(problem)),
    };
    let Some(got) = body["choices"][0]["message"]["content"].as_str() else {
        let problem = format!(
            "{what} has no choices[0].message.content: {}",
            excerpt(&body.to_string())
        );
        return (entry, Some(problem));
    };
    let score = similarity(got, &answer.expect);
    entry.got = Some(got.to_owned());
    entry.similarity = Some(score);
    entry.passed = score >= answer.min_similarity;
    let problem = (!entry.passed).then(|| {
        format!(
            "the answer to {:?} differs from the archive: similarity {score:.2} < {:.2}; \
             got {:?}, expected {:?}",
            answer.prompt,
            answer.min_similarity,
            excerpt(got),
            excerpt(&answer.expect)
        )
    });
    (entry, problem)
}

/// Streams one completion, timestamping each event as it arrives.
async fn stream(c: &ServingCheck, client: &Client, prompt: &str) -> Result<StreamReport, String> {
    let what = format!("the streamed completion of {prompt:?}");
    let started = Instant::now();
    let mut resp = client
        .post(url(c, "v1/chat/completions"))
        .timeout(c.request_timeout)
        .header(reqwest::header::ACCEPT, "text/event-stream")
        .json(&completion_request(&c.model, prompt, true))
        .send()
        .await
        .map_err(|e| format!("{what} failed: {}", describe(e)))?;
    let status = resp.status();
    if !status.is_success() {
        let body = resp.text().await.unwrap_or_default();
        let detail = serde_json::from_str::<Value>(&body)
            .map(|v| error_body_message(&v))
            .unwrap_or_else(|_| excerpt(&body));
        return Err(format!("{what} answered HTTP {status}: {detail}"));
    }
    let mut decoder = SseDecoder::default();
    let mut events = Vec::new();
    loop {
        match resp.chunk().await {
            Ok(Some(bytes)) => {
                let at = started.elapsed();
                events.extend(decoder.push(&bytes).into_iter().map(|data| (at, data)));
            }
            Ok(None) => break,
            // What arrived still says something (e.g. no [DONE]); the error says why.
            Err(e) => {
                let mut report = serving_stream::analyse(prompt, &events);
                report
                    .errors
                    .push(format!("reading the stream failed: {}", describe(e)));
                return Ok(report);
            }
        }
    }
    let at = started.elapsed();
    events.extend(decoder.finish().map(|data| (at, data)));
    Ok(serving_stream::analyse(prompt, &events))
}

/// How close an answer is to the archived one, 0..=1: normalised Levenshtein similarity
/// of the two texts after lowercasing, turning punctuation into spaces and collapsing
/// whitespace. Chosen over token-set measures because it penalises both missing and
/// extra text (an answer that rambles on after the archived sentence scores 1.0 on a
/// token set), while case, punctuation and line-wrapping drift cost nothing; the
/// threshold then reads as "the fraction of characters unchanged".
pub fn similarity(got: &str, expect: &str) -> f64 {
    strsim::normalized_levenshtein(&normalise(got), &normalise(expect))
}

/// Lowercase words separated by single spaces.
fn normalise(text: &str) -> String {
    text.to_lowercase()
        .split(|ch: char| !ch.is_alphanumeric())
        .filter(|word| !word.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
}

/// `dpuctl demo check-serving` as parameters.
#[derive(Debug, Clone)]
pub struct CheckServing {
    /// The demo plan: its `[serving]` model and archived answers are checked.
    pub plan: PathBuf,
    /// Check this base URL instead of the plan's.
    pub url: Option<String>,
    /// How long to wait for `/health` to answer 200.
    pub health_timeout: Duration,
    /// A CA certificate (PEM) to trust for an HTTPS ingress, besides the system roots.
    pub ca: Option<PathBuf>,
    /// The caller's per-request limit (raised to what generation needs).
    pub request_timeout: Duration,
}

/// `dpuctl demo check-serving`: the plan's serving checks against a running server. An
/// error is a usage problem (bad plan, URL or CA); a failed check is in the report.
pub async fn check_serving_command(args: &CheckServing) -> Result<ServingReport, ServingError> {
    let plan = Plan::load(&args.plan)?;
    let Some(base_url) = args.url.clone().or_else(|| plan.serving_url()) else {
        return Err(ServingError::NoUrl {
            plan: args.plan.clone(),
        });
    };
    if !(base_url.starts_with("http://") || base_url.starts_with("https://")) {
        return Err(ServingError::NotHttp(base_url));
    }
    let c = ServingCheck {
        base_url,
        model: plan.serving.model.clone(),
        answers: plan.serving.answers.clone(),
        health_timeout: args.health_timeout,
        request_timeout: args.request_timeout.max(MIN_REQUEST_TIMEOUT),
        ca: args.ca.clone(),
    };
    // A bad --ca is a usage error (exit 2), not a failed check.
    let client = http_client(&c)?;
    Ok(check_with(&c, &client).await)
}

#[cfg(test)]
mod tests;
