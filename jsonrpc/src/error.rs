//! Everything a JSON-RPC call can fail with.

use std::io;
use std::path::PathBuf;
use std::time::Duration;

use serde_json::Value;

/// Why a call failed. Callers map these to their own errors (for the agent: gRPC status
/// codes), so transport trouble, a server-side refusal and a broken peer stay distinguishable;
/// [`Error::is_transient`] says which ones are worth retrying.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The socket could not be reached (missing, refused, or the connect timed out), e.g.
    /// SNAP or ovsdb-server is not running (yet).
    #[error("cannot connect to JSON-RPC socket {}", path.display())]
    Connect {
        /// The socket path.
        path: PathBuf,
        /// The connect error (`TimedOut` for the connect timeout).
        #[source]
        source: io::Error,
    },
    /// Reading or writing the established connection failed.
    #[error("I/O error on the JSON-RPC connection during {method}")]
    Io {
        /// The method whose call was cut off.
        method: String,
        /// The socket error.
        #[source]
        source: io::Error,
    },
    /// No reply within the call's deadline; the call was abandoned (a late reply is dropped).
    #[error("{method} got no reply within {after:?}")]
    Timeout {
        /// The method that timed out.
        method: String,
        /// The deadline that expired.
        after: Duration,
    },
    /// The connection ended before the reply arrived; the next call reconnects.
    #[error("connection closed before {method} got a reply: {reason}")]
    ConnectionClosed {
        /// The method left without a reply.
        method: String,
        /// What ended the connection.
        reason: String,
    },
    /// A JSON-RPC 2.0 server (SPDK, SNAP) refused the call.
    #[error("{method} failed with JSON-RPC error {code}: {message}")]
    Rpc {
        /// The refused method.
        method: String,
        /// The error code, e.g. -32601 method not found, -32602 invalid params, or a negative
        /// errno from SPDK.
        code: i64,
        /// The server's message.
        message: String,
        /// Optional extra detail from the server.
        data: Option<Value>,
    },
    /// A JSON-RPC 1.0 server (OVSDB, unixctl) refused the call; its error may be a string or
    /// an object, so it is kept as sent.
    #[error("{method} failed: {error}")]
    RpcV1 {
        /// The refused method.
        method: String,
        /// The reply's non-null `error` member.
        error: Value,
    },
    /// The params could not be serialized to JSON.
    #[error("cannot encode the params of {method}")]
    Encode {
        /// The method being called.
        method: String,
        /// The serializer's error.
        #[source]
        source: serde_json::Error,
    },
    /// The params do not fit the protocol (JSON-RPC 1.0 needs an array).
    #[error("invalid params for {method}: {detail}")]
    InvalidParams {
        /// The method being called.
        method: String,
        /// What is wrong with them.
        detail: String,
    },
    /// The result did not deserialize into the type the caller asked for.
    #[error("cannot decode the result of {method}")]
    Decode {
        /// The method whose result was undecodable.
        method: String,
        /// The deserializer's error.
        #[source]
        source: serde_json::Error,
    },
    /// The peer broke the protocol (wrong `jsonrpc` version, malformed error, invalid JSON).
    #[error("JSON-RPC protocol violation: {detail}")]
    Protocol {
        /// What the peer did wrong.
        detail: String,
    },
    /// A recording client in capture mode refused to send a method not on its allow-list
    /// ([`Recorder::allowing`](crate::Recorder::allowing)); nothing was sent.
    #[error("{method} is not on the capture's allow-list of read-only methods: not sent")]
    NotAllowed {
        /// The refused method.
        method: String,
    },
    /// A recording client in capture mode refused to send a call its params check found
    /// not read-only ([`Recorder::checking_params`](crate::Recorder::checking_params));
    /// nothing was sent.
    #[error("{method} refused in capture mode, it is not read-only: {reason}; not sent")]
    NotReadOnly {
        /// The refused method.
        method: String,
        /// Why, in the check's words (e.g. the first operation that is not a `select`).
        reason: String,
    },
    /// One incoming message exceeded the configured maximum; the connection was dropped
    /// rather than buffering without bound.
    #[error("JSON-RPC message exceeds the {limit}-byte frame limit")]
    FrameTooLarge {
        /// The configured limit in bytes.
        limit: usize,
    },
}

impl Error {
    /// True when the same call may succeed if retried later: the peer was unreachable, the
    /// connection broke, or it was too slow. Server refusals and protocol errors are final.
    pub fn is_transient(&self) -> bool {
        matches!(
            self,
            Self::Connect { .. }
                | Self::Io { .. }
                | Self::Timeout { .. }
                | Self::ConnectionClosed { .. }
        )
    }
}
