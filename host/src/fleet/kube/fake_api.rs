//! A scripted API server for the discovery and publishing tests: kube-rs's client runs over
//! a tower-test mock service, and a task answers each request from a function of what was
//! asked, recording every request in full (method, path, decoded query, content type,
//! accept header, body), so tests assert the requests as well as the results.

use std::sync::{Arc, Mutex};

use http::{Method, Request, Response};
use kube::client::Body;
use serde_json::{json, Value};

/// One request the fake API server answered.
#[derive(Debug, Clone)]
pub(super) struct Seen {
    /// HTTP method.
    pub(super) method: Method,
    /// URI path.
    pub(super) path: String,
    /// Query parameters, percent-decoded, in order.
    pub(super) query: Vec<(String, String)>,
    /// `Content-Type`, when sent.
    pub(super) content_type: Option<String>,
    /// `Accept`, when sent.
    pub(super) accept: Option<String>,
    /// The body as JSON (`Null` when empty).
    pub(super) body: Value,
}

impl Seen {
    /// The value of query parameter `key`.
    pub(super) fn param(&self, key: &str) -> Option<&str> {
        self.query
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }
}

/// The fake's answer: status code and JSON body.
pub(super) type Answer = (u16, Value);

/// The log of requests, shared with the answering task.
pub(super) type Log = Arc<Mutex<Vec<Seen>>>;

/// A client whose requests `answer` answers, and the log of what it asked.
pub(super) fn fake(answer: impl Fn(&Seen) -> Answer + Send + 'static) -> (kube::Client, Log) {
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
            let content_type = header("content-type");
            let accept = header("accept");
            let method = parts.method.clone();
            let path = parts.uri.path().to_owned();
            let query = decode(parts.uri.query().unwrap_or(""));
            let bytes = body
                .collect_bytes()
                .await
                .expect("the request body is readable");
            let body = if bytes.is_empty() {
                Value::Null
            } else {
                serde_json::from_slice(&bytes).expect("request bodies are JSON")
            };
            let request = Seen {
                method,
                path,
                query,
                content_type,
                accept,
                body,
            };
            let (code, body) = answer(&request);
            seen.lock()
                .expect("lock poisoned by a failed test")
                .push(request);
            let response = Response::builder()
                .status(code)
                .header("content-type", "application/json")
                .body(Body::from(body.to_string().into_bytes()))
                .expect("the fake's status codes are valid");
            send.send_response(response);
        }
    });
    (kube::Client::new(service, "default"), log)
}

/// The requests seen so far.
pub(super) fn requests(log: &Log) -> Vec<Seen> {
    log.lock().expect("lock poisoned by a failed test").clone()
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

/// A 200 answer.
pub(super) fn ok(value: Value) -> Answer {
    (200, value)
}

/// An API error, as the API server sends it.
pub(super) fn status(code: u16, reason: &str, message: &str) -> Answer {
    let body = json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
        "message": message, "reason": reason, "code": code});
    (code, body)
}

/// The API server's RBAC denial of `verb` on `resource` for the fleet's service account,
/// worded as the API server words it; `subject` is `pods` or `nodes "dpu-07"`, `scope`
/// `in the namespace "dpu-system"` or `at the cluster scope`.
pub(super) fn forbidden(verb: &str, resource: &str, subject: &str, scope: &str) -> Answer {
    let message = format!(
        "{subject} is forbidden: User \"system:serviceaccount:dpu-system:dpuctl-fleet\" \
         cannot {verb} resource \"{resource}\" in API group \"\" {scope}"
    );
    status(403, "Forbidden", &message)
}

/// A list answer of `kind` with `items` and, when more pages follow, `continue`.
pub(super) fn list(kind: &str, items: Vec<Value>, next: Option<&str>) -> Answer {
    let mut metadata = json!({"resourceVersion": "1000"});
    if let Some(next) = next {
        metadata["continue"] = json!(next);
    }
    ok(
        json!({"apiVersion": "v1", "kind": format!("{kind}List"), "metadata": metadata, "items": items}),
    )
}

/// A metadata-only list of Nodes (what `list_metadata` asks for): names and labels.
pub(super) fn node_metadata_list(nodes: &[(&str, Value)], next: Option<&str>) -> Answer {
    let items: Vec<Value> = nodes
        .iter()
        .map(|(name, labels)| {
            json!({"apiVersion": "meta.k8s.io/v1", "kind": "PartialObjectMetadata",
                "metadata": {"name": name, "labels": labels}})
        })
        .collect();
    let mut metadata = json!({"resourceVersion": "1000"});
    if let Some(next) = next {
        metadata["continue"] = json!(next);
    }
    ok(
        json!({"apiVersion": "meta.k8s.io/v1", "kind": "PartialObjectMetadataList",
        "metadata": metadata, "items": items}),
    )
}

/// An agent pod on `node` (None: not scheduled) with this phase, readiness and IP.
pub(super) fn agent_pod(
    name: &str,
    node: Option<&str>,
    phase: &str,
    ready: bool,
    ip: Option<&str>,
) -> Value {
    let mut spec = json!({"containers": [{"name": "dpu-agent", "image": "dpu-agent"}],
        "hostNetwork": true});
    if let Some(node) = node {
        spec["nodeName"] = json!(node);
    }
    let mut status = json!({"phase": phase, "conditions": [
        {"type": "Ready", "status": if ready { "True" } else { "False" }}]});
    if let Some(ip) = ip {
        status["podIP"] = json!(ip);
    }
    json!({"apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": "dpu-system",
            "creationTimestamp": "2025-01-01T00:00:00Z",
            "labels": {"app.kubernetes.io/name": "dpu-agent"}},
        "spec": spec, "status": status})
}

/// A Node with these conditions (`{type, status, lastTransitionTime, ...}` values).
pub(super) fn node(name: &str, conditions: Vec<Value>) -> Value {
    json!({"apiVersion": "v1", "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
        "status": {"conditions": conditions}})
}
