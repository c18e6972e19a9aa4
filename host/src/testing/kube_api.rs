//! A scripted Kubernetes API server: kube-rs's client runs over a tower-test mock service,
//! and a task answers each request from a function of what was asked, recording every
//! request in full (method, path, decoded query, content type, accept header, body), so a
//! test asserts the requests as well as the results.
//!
//! What it holds to the real server: the `Status` body of an API error (kind, reason,
//! code, message, as `kubectl` prints them), list answers with `metadata.continue` for
//! paging, JSON answers typed `application/json` and a text answer (a pod's log) sent as
//! text. What it does not model: watches, server-side apply's merge, admission.

use std::sync::{Arc, Mutex};

use http::{Method, Request, Response};
use kube::client::Body;
use serde_json::{json, Value};

/// One request the fake API server answered.
#[derive(Debug, Clone)]
pub struct Seen {
    /// HTTP method.
    pub method: Method,
    /// URI path.
    pub path: String,
    /// Query parameters, percent-decoded, in order.
    pub query: Vec<(String, String)>,
    /// `Content-Type`, when sent.
    pub content_type: Option<String>,
    /// `Accept`, when sent.
    pub accept: Option<String>,
    /// The body as JSON (`Null` when empty).
    pub body: Value,
}

impl Seen {
    /// The value of query parameter `key`.
    pub fn param(&self, key: &str) -> Option<&str> {
        self.query
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }
}

/// The fake's answer: status code and body. A JSON string (`Value::String`) is sent as
/// plain text, the way the API server sends a pod's log; anything else as JSON.
pub type Answer = (u16, Value);

/// The log of requests, shared with the answering task.
pub type Log = Arc<Mutex<Vec<Seen>>>;

/// A client in namespace `default` whose requests `answer` answers, and the log of what it
/// asked. Must be called inside a tokio runtime (the answering task is spawned on it).
pub fn fake(answer: impl Fn(&Seen) -> Answer + Send + 'static) -> (kube::Client, Log) {
    fake_in("default", answer)
}

/// [`fake`] with `namespace` as the client's default namespace.
pub fn fake_in(
    namespace: &str,
    answer: impl Fn(&Seen) -> Answer + Send + 'static,
) -> (kube::Client, Log) {
    let (service, mut handle) = tower_test::mock::pair::<Request<Body>, Response<Body>>();
    let log: Log = Arc::new(Mutex::new(Vec::new()));
    let seen = Arc::clone(&log);
    tokio::spawn(async move {
        while let Some((request, send)) = handle.next_request().await {
            let (parts, body) = request.into_parts();
            let header = |name: &str| {
                parts
                    .headers
                    .get(name)
                    .and_then(|v| v.to_str().ok())
                    .map(str::to_owned)
            };
            let bytes = body
                .collect_bytes()
                .await
                .expect("the request body is readable");
            let request = Seen {
                content_type: header("content-type"),
                accept: header("accept"),
                method: parts.method.clone(),
                path: parts.uri.path().to_owned(),
                query: decode(parts.uri.query().unwrap_or("")),
                body: if bytes.is_empty() {
                    Value::Null
                } else {
                    serde_json::from_slice(&bytes).expect("request bodies are JSON")
                },
            };
            let (code, body) = answer(&request);
            seen.lock()
                .expect("lock poisoned by a failed test")
                .push(request);
            let (content_type, bytes) = match body {
                Value::String(text) => ("text/plain", text.into_bytes()),
                json => ("application/json", json.to_string().into_bytes()),
            };
            let response = Response::builder()
                .status(code)
                .header("content-type", content_type)
                .body(Body::from(bytes))
                .expect("the fake's status codes are valid");
            send.send_response(response);
        }
    });
    (kube::Client::new(service, namespace), log)
}

/// The requests seen so far.
pub fn requests(log: &Log) -> Vec<Seen> {
    log.lock().expect("lock poisoned by a failed test").clone()
}

/// Methods and paths of the requests seen so far, for exact-sequence assertions.
pub fn calls(log: &Log) -> Vec<(Method, String)> {
    log.lock()
        .expect("lock poisoned by a failed test")
        .iter()
        .map(|s| (s.method.clone(), s.path.clone()))
        .collect()
}

/// Splits and percent-decodes a query string.
fn decode(query: &str) -> Vec<(String, String)> {
    query
        .split('&')
        .filter(|pair| !pair.is_empty())
        .map(|pair| {
            let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
            (unescape(key), unescape(value))
        })
        .collect()
}

/// Percent-decodes one component (`+` is a space).
fn unescape(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'%' if i + 2 < bytes.len() => {
                let hex = std::str::from_utf8(&bytes[i + 1..i + 3]).expect("ASCII query");
                out.push(u8::from_str_radix(hex, 16).expect("percent escape"));
                i += 3;
            }
            b'+' => {
                out.push(b' ');
                i += 1;
            }
            b => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8(out).expect("UTF-8 query")
}

/// A 200 answer with a JSON body.
pub fn ok(value: Value) -> Answer {
    (200, value)
}

/// A 200 answer with a text body (a pod's log).
pub fn text(body: &str) -> Answer {
    (200, Value::String(body.to_owned()))
}

/// An API error, as the API server sends it (a `Status` object).
pub fn status(code: u16, reason: &str, message: &str) -> Answer {
    let body = json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
        "message": message, "reason": reason, "code": code});
    (code, body)
}

/// A list answer of `kind` with `items` and, when more pages follow, `continue`.
pub fn list(kind: &str, items: Vec<Value>, next: Option<&str>) -> Answer {
    let mut metadata = json!({"resourceVersion": "1000"});
    if let Some(next) = next {
        metadata["continue"] = json!(next);
    }
    ok(
        json!({"apiVersion": "v1", "kind": format!("{kind}List"), "metadata": metadata, "items": items}),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn queries_are_split_and_percent_decoded() {
        assert_eq!(
            decode("labelSelector=app%3Ddpu-agent%2Ctier+a&limit=500&watch"),
            vec![
                (
                    "labelSelector".to_owned(),
                    "app=dpu-agent,tier a".to_owned()
                ),
                ("limit".to_owned(), "500".to_owned()),
                ("watch".to_owned(), String::new()),
            ]
        );
        assert!(decode("").is_empty());
    }
}
