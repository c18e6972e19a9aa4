//! The `grpc-status` a response carries: what the call-metrics layer counts
//! ([`crate::telemetry::rpc_layer`]) and the audit log writes ([`crate::security::layer`]),
//! read one way for both.

use http::HeaderMap;
use tonic::Code;

/// The `grpc-status` in `headers` (response headers or trailers); None when absent or
/// not a number.
pub(crate) fn grpc_code(headers: &HeaderMap) -> Option<Code> {
    headers
        .get("grpc-status")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<i32>().ok())
        .map(Code::from_i32)
}
