//! The two JSON-RPC dialects on the wire: encoding requests, classifying what the peer sends.
//!
//! SPDK and SNAP speak JSON-RPC 2.0 (storage.md §2.2, §3.1); ovsdb-server and the
//! ovs-vswitchd unixctl socket speak JSON-RPC 1.0, where a reply always carries both `result`
//! and `error` and the server may send its own `echo` requests and `update` notifications
//! (ovs-netlink.md §2.1, §2.4). Everything dialect-specific lives here so the connection code
//! is the same for both.

use serde::Serialize;
use serde_json::{json, Value};

use crate::Error;

/// Which JSON-RPC dialect a [`Client`](crate::Client) speaks; it decides the request shape and
/// how replies are validated.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Version {
    /// JSON-RPC 1.0 as used by OVSDB (RFC 7047) and ovs-vswitchd unixctl: `params` is always
    /// an array, replies carry `result` and `error`, the server may send `echo` and
    /// notifications.
    V1,
    /// JSON-RPC 2.0 as used by SPDK and NVIDIA SNAP: `"jsonrpc":"2.0"`, `params` omitted when
    /// empty, errors are `{code, message, data?}` objects.
    #[default]
    V2,
}

/// A message the server sent without being asked (`id` null or absent), for example an OVSDB
/// `update` for a monitor; delivered to every [`Client::notifications`](crate::Client::notifications)
/// subscriber because no pending call owns it.
#[derive(Debug, Clone, PartialEq)]
pub struct Notification {
    /// The notification's method, e.g. `update` or `update2`.
    pub method: String,
    /// Its params exactly as sent (`Value::Null` when absent).
    pub params: Value,
}

/// A classified incoming message.
#[derive(Debug)]
pub(crate) enum Incoming {
    /// A reply to one of our calls.
    Reply { id: u64, outcome: ReplyOutcome },
    /// A request the server wants answered (OVSDB `echo`).
    Call {
        method: String,
        params: Value,
        id: Value,
    },
    /// A message nobody has to answer.
    Notification(Notification),
    /// Something that cannot be matched to a call (no usable id, not an object).
    Unattributable { detail: String },
}

/// What a reply says about its call, before the method name is attached.
#[derive(Debug)]
pub(crate) enum ReplyOutcome {
    Success(Value),
    RpcError {
        code: i64,
        message: String,
        data: Option<Value>,
    },
    RpcErrorV1(Value),
    /// The reply broke the protocol (wrong version, malformed error, no result).
    Invalid(String),
}

impl ReplyOutcome {
    /// Turns the outcome into the caller's result, naming the method in any error.
    pub(crate) fn into_result(self, method: &str, id: u64) -> Result<Value, Error> {
        let method = method.to_owned();
        match self {
            Self::Success(v) => Ok(v),
            Self::RpcError {
                code,
                message,
                data,
            } => Err(Error::Rpc {
                method,
                code,
                message,
                data,
            }),
            Self::RpcErrorV1(error) => Err(Error::RpcV1 { method, error }),
            Self::Invalid(detail) => Err(Error::Protocol {
                detail: format!("reply to {method} (id {id}): {detail}"),
            }),
        }
    }
}

#[derive(Serialize)]
struct RequestV2<'a> {
    jsonrpc: &'static str,
    method: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    params: Option<&'a Value>,
    id: u64,
}

#[derive(Serialize)]
struct RequestV1<'a> {
    method: &'a str,
    params: &'a Value,
    id: u64,
}

/// Serializes one request in the dialect's shape.
pub(crate) fn encode_request(
    version: Version,
    method: &str,
    params: Option<&Value>,
    id: u64,
) -> Result<Vec<u8>, Error> {
    let encoded = match version {
        Version::V2 => serde_json::to_vec(&RequestV2 {
            jsonrpc: "2.0",
            method,
            params,
            id,
        }),
        Version::V1 => {
            let empty = Value::Array(Vec::new());
            let params = match params {
                None => &empty,
                Some(p @ Value::Array(_)) => p,
                Some(other) => {
                    return Err(Error::InvalidParams {
                        method: method.to_owned(),
                        detail: format!("JSON-RPC 1.0 params must be an array, got {other}"),
                    })
                }
            };
            serde_json::to_vec(&RequestV1 { method, params, id })
        }
    };
    encoded.map_err(|source| Error::Encode {
        method: method.to_owned(),
        source,
    })
}

/// Serializes the answer to a server-initiated call: `echo` gets its params back (RFC 7047
/// §4.1.11), anything else is refused so the server is never left waiting.
pub(crate) fn encode_answer(version: Version, method: &str, params: Value, id: Value) -> Value {
    match (version, method) {
        (Version::V1, "echo") => json!({"result": params, "error": null, "id": id}),
        (Version::V1, _) => json!({"result": null, "error": "unknown method", "id": id}),
        (Version::V2, _) => json!({
            "jsonrpc": "2.0",
            "error": {"code": -32601, "message": "Method not found"},
            "id": id,
        }),
    }
}

/// Sorts an incoming value into reply, server call, notification or noise.
pub(crate) fn classify(version: Version, value: Value) -> Incoming {
    let Value::Object(mut obj) = value else {
        return Incoming::Unattributable {
            detail: format!("expected a JSON object, got {}", kind(&value)),
        };
    };
    if let Some(Value::String(method)) = obj.remove("method") {
        let params = obj.remove("params").unwrap_or(Value::Null);
        return match obj.remove("id") {
            None | Some(Value::Null) => Incoming::Notification(Notification { method, params }),
            Some(id) => Incoming::Call { method, params, id },
        };
    }
    let Some(id) = obj.get("id").and_then(Value::as_u64) else {
        return Incoming::Unattributable {
            detail: format!(
                "reply without a usable id (id {}, error {})",
                obj.get("id").unwrap_or(&Value::Null),
                obj.get("error").unwrap_or(&Value::Null)
            ),
        };
    };
    let outcome = match version {
        Version::V2 => outcome_v2(obj),
        Version::V1 => outcome_v1(obj),
    };
    Incoming::Reply { id, outcome }
}

fn outcome_v2(mut obj: serde_json::Map<String, Value>) -> ReplyOutcome {
    match obj.get("jsonrpc") {
        Some(Value::String(v)) if v == "2.0" => {}
        other => {
            return ReplyOutcome::Invalid(format!(
                "expected \"jsonrpc\":\"2.0\", got {}",
                other.map_or_else(|| "no jsonrpc member".to_owned(), Value::to_string)
            ))
        }
    }
    match obj.remove("error") {
        None | Some(Value::Null) => {}
        Some(error) => {
            let code = error.get("code").and_then(Value::as_i64);
            let message = error.get("message").and_then(Value::as_str);
            return match (code, message) {
                (Some(code), Some(message)) => ReplyOutcome::RpcError {
                    code,
                    message: message.to_owned(),
                    data: error.get("data").cloned(),
                },
                _ => ReplyOutcome::Invalid(format!("malformed error object {error}")),
            };
        }
    }
    match obj.remove("result") {
        Some(result) => ReplyOutcome::Success(result),
        None => ReplyOutcome::Invalid("reply has neither result nor error".to_owned()),
    }
}

fn outcome_v1(mut obj: serde_json::Map<String, Value>) -> ReplyOutcome {
    match obj.remove("error") {
        None | Some(Value::Null) => {}
        Some(error) => return ReplyOutcome::RpcErrorV1(error),
    }
    match obj.remove("result") {
        Some(result) => ReplyOutcome::Success(result),
        None => ReplyOutcome::Invalid("reply has neither result nor error".to_owned()),
    }
}

fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn encoded(version: Version, params: Option<&Value>) -> Value {
        let bytes = encode_request(version, "m", params, 7).expect("encodes");
        serde_json::from_slice(&bytes).expect("valid json")
    }

    #[test]
    fn v2_request_omits_absent_params() {
        assert_eq!(
            encoded(Version::V2, None),
            json!({"jsonrpc":"2.0","method":"m","id":7})
        );
        assert_eq!(
            encoded(Version::V2, Some(&json!({"name":"x"}))),
            json!({"jsonrpc":"2.0","method":"m","id":7,"params":{"name":"x"}})
        );
    }

    #[test]
    fn v1_request_always_has_array_params() {
        assert_eq!(
            encoded(Version::V1, None),
            json!({"method":"m","params":[],"id":7})
        );
        assert_eq!(
            encoded(Version::V1, Some(&json!(["Open_vSwitch"]))),
            json!({"method":"m","params":["Open_vSwitch"],"id":7})
        );
        let err = encode_request(Version::V1, "m", Some(&json!({"a":1})), 7)
            .expect_err("object params are not JSON-RPC 1.0");
        assert!(matches!(err, Error::InvalidParams { .. }), "{err:?}");
    }

    #[test]
    fn v1_reply_with_string_or_object_error() {
        for error in [
            json!("unknown"),
            json!({"error":"syntax error","details":"x"}),
        ] {
            let msg = json!({"result": null, "error": error.clone(), "id": 3});
            match classify(Version::V1, msg) {
                Incoming::Reply {
                    id: 3,
                    outcome: ReplyOutcome::RpcErrorV1(e),
                } => assert_eq!(e, error),
                other => panic!("unexpected {other:?}"),
            }
        }
    }

    #[test]
    fn v2_reply_without_version_is_invalid() {
        let msg = json!({"result": true, "id": 1});
        assert!(matches!(
            classify(Version::V2, msg),
            Incoming::Reply {
                id: 1,
                outcome: ReplyOutcome::Invalid(_)
            }
        ));
    }

    #[test]
    fn v2_parse_error_with_null_id_is_unattributable() {
        let msg =
            json!({"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}});
        assert!(matches!(
            classify(Version::V2, msg),
            Incoming::Unattributable { .. }
        ));
    }

    #[test]
    fn server_messages_are_calls_or_notifications() {
        assert!(matches!(
            classify(
                Version::V1,
                json!({"method":"echo","params":[],"id":"echo"})
            ),
            Incoming::Call { .. }
        ));
        assert!(matches!(
            classify(
                Version::V1,
                json!({"method":"update","params":[1],"id":null})
            ),
            Incoming::Notification(_)
        ));
    }

    #[test]
    fn echo_answer_returns_the_params() {
        assert_eq!(
            encode_answer(Version::V1, "echo", json!(["x"]), json!("echo")),
            json!({"result":["x"],"error":null,"id":"echo"})
        );
    }
}
