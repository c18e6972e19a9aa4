//! libFuzzer target: what a peer can send after framing. Every frame is classified in both
//! dialects (`jsonrpc/src/message.rs`) and replies are turned into results; nothing may
//! panic. Server calls are answered, and the answer must encode. Separately, a request
//! encoded from fuzzed method/params must decode back to the same method and params.
#![no_main]

#[allow(dead_code)]
#[path = "../../src/error.rs"]
mod error;
#[allow(dead_code)]
#[path = "../../src/framing.rs"]
mod framing;
#[allow(dead_code)]
#[path = "../../src/message.rs"]
mod message;

use error::Error;
use libfuzzer_sys::fuzz_target;
use message::{classify, encode_answer, encode_request, Incoming, Version};
use serde_json::Value;

fuzz_target!(|data: &[u8]| {
    let mut dec = framing::FrameDecoder::new(1 << 20);
    dec.extend(data);
    while let Ok(Some(value)) = dec.next_frame() {
        for version in [Version::V1, Version::V2] {
            match classify(version, value.clone()) {
                Incoming::Reply { id, outcome } => {
                    let _ = outcome
                        .into_result("fuzz_method", id)
                        .map_err(|e| e.to_string());
                }
                Incoming::Call { method, params, id } => {
                    let answer = encode_answer(version, &method, params, id);
                    assert!(serde_json::to_vec(&answer).is_ok());
                }
                Incoming::Notification(n) => {
                    let _ = (n.method.len(), n.params);
                }
                Incoming::Unattributable { detail } => {
                    let _ = detail.len();
                }
            }
        }
        // Round trip: a request we encode from this value must come back as itself.
        if let Some(method) = value.get("method").and_then(Value::as_str) {
            let params = value.get("params");
            for version in [Version::V1, Version::V2] {
                match encode_request(version, method, params, 7) {
                    Ok(bytes) => {
                        let back: Value = serde_json::from_slice(&bytes).expect("our own JSON");
                        match classify(version, back) {
                            Incoming::Call {
                                method: m,
                                params: p,
                                id,
                            } => {
                                assert_eq!(m, method);
                                assert_eq!(id, Value::from(7));
                                let sent = params.cloned().unwrap_or(match version {
                                    Version::V1 => Value::Array(Vec::new()),
                                    Version::V2 => Value::Null,
                                });
                                // V2 omits absent params; V2 with explicit null sends null.
                                assert_eq!(p, sent);
                            }
                            other => panic!("our request classified as {other:?}"),
                        }
                    }
                    Err(Error::InvalidParams { .. }) => {
                        assert!(
                            version == Version::V1
                                && !matches!(params, None | Some(Value::Array(_)))
                        );
                    }
                    Err(e) => panic!("encode failed: {e}"),
                }
            }
        }
    }
});
