//! Transcripts: every call a recording [`Client`](crate::Client) makes, the request exactly
//! as it was sent and the answer it got, kept in order so a capture can write them out and
//! a fake server can answer from them later (docs/hardware.md, "JSON-RPC transcripts").
//!
//! The recorder sits in the client, not in a proxy, so a transcript holds exactly what the
//! project asked and nothing else. In capture mode ([`Recorder::allowing`]) it also refuses,
//! before anything is sent, every method not on the caller's allow-list: a capture of a
//! production SNAP must never change it. This module knows no method names; the allow-list
//! is the caller's.

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex, PoisonError};

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use crate::Error;

/// One call and its answer, one line of a `.jsonl` transcript.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Exchange {
    /// Which reading of the capture made the call (see [`Recorder::set_reading`]); 0 when
    /// the recorder was never told.
    pub reading: u32,
    /// The method called, also inside `request`; here so a reader need not dig.
    pub method: String,
    /// The request object exactly as encoded on the wire (`jsonrpc`, `method`, `params`
    /// when sent, `id`).
    pub request: Value,
    /// The peer's reply as the client decoded it: `{"jsonrpc":"2.0","id":…,"result":…}`
    /// or `{…,"error":{"code","message","data"?}}` (JSON-RPC 1.0: `result` and `error`).
    /// Member order and whitespace are not the peer's. A call that got no reply at all
    /// (timeout, connection lost) has `{"failure": "<what happened>"}` instead.
    pub response: Value,
}

impl Exchange {
    /// The request's `params` (`Value::Null` when none were sent): with [`method`](Self::method)
    /// the key a replay answers by.
    pub fn params(&self) -> &Value {
        self.request.get("params").unwrap_or(&Value::Null)
    }

    /// True when the peer answered with an error object (a refusal, not a transport failure).
    pub fn is_error(&self) -> bool {
        self.response.get("error").is_some_and(|e| !e.is_null())
    }
}

/// Collects the [`Exchange`]s of every client it is given to; cheap to clone (clones share
/// one transcript).
#[derive(Debug, Clone, Default)]
pub struct Recorder {
    inner: Arc<Mutex<RecorderState>>,
}

#[derive(Debug, Default)]
struct RecorderState {
    allowed: Option<BTreeSet<String>>,
    check: Option<ParamsCheck>,
    reading: u32,
    exchanges: Vec<Exchange>,
    refused: Vec<String>,
}

impl Recorder {
    /// A recorder that records every call and refuses none.
    pub fn new() -> Self {
        Self::default()
    }

    /// Capture mode: a call of a method not in `methods` is refused with
    /// [`Error::NotAllowed`] before anything is sent, and noted in [`refused`](Self::refused).
    pub fn allowing<S: AsRef<str>>(methods: &[S]) -> Self {
        let recorder = Self::default();
        recorder.lock().allowed = Some(methods.iter().map(|m| m.as_ref().to_owned()).collect());
        recorder
    }

    /// Capture mode for peers whose methods are not read-only by name alone (an OVSDB
    /// `transact` may select or insert): `check` is asked with the method and the params
    /// about to be sent, after the allow-list, and an `Err(reason)` refuses the call with
    /// [`Error::NotReadOnly`] before anything is sent. The rule is the caller's: this crate
    /// knows no method.
    pub fn checking_params(
        self,
        check: impl Fn(&str, &Value) -> Result<(), String> + Send + Sync + 'static,
    ) -> Self {
        self.lock().check = Some(ParamsCheck(Arc::new(check)));
        self
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, RecorderState> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Marks the calls from now on as made during reading `reading` (a capture reads twice).
    pub fn set_reading(&self, reading: u32) {
        self.lock().reading = reading;
    }

    /// Everything recorded so far, in the order the answers came.
    pub fn exchanges(&self) -> Vec<Exchange> {
        self.lock().exchanges.clone()
    }

    /// The calls refused so far, in order: the method when it was not on the allow-list,
    /// `method: reason` when the params check refused it.
    pub fn refused(&self) -> Vec<String> {
        self.lock().refused.clone()
    }

    /// `Err(NotAllowed)` when `method` may not be sent (capture mode, not on the list),
    /// `Err(NotReadOnly)` when the params check refuses `params` (`Null`: none sent).
    pub(crate) fn admit(&self, method: &str, params: &Value) -> Result<(), Error> {
        let mut state = self.lock();
        if state
            .allowed
            .as_ref()
            .is_some_and(|allowed| !allowed.contains(method))
        {
            state.refused.push(method.to_owned());
            return Err(Error::NotAllowed {
                method: method.to_owned(),
            });
        }
        let verdict = state
            .check
            .as_ref()
            .map_or(Ok(()), |c| (c.0)(method, params));
        verdict.map_err(|reason| {
            state.refused.push(format!("{method}: {reason}"));
            Error::NotReadOnly {
                method: method.to_owned(),
                reason,
            }
        })
    }

    /// Records one call: the encoded request and what came of it.
    pub(crate) fn record(&self, method: &str, request: &[u8], outcome: Result<&Value, &Error>) {
        let request = serde_json::from_slice(request)
            .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(request).into_owned()));
        let id = request.get("id").cloned().unwrap_or(Value::Null);
        let v2 = request.get("jsonrpc").is_some();
        let response = match outcome {
            Ok(result) if v2 => json!({"jsonrpc": "2.0", "id": id, "result": result}),
            Ok(result) => json!({"id": id, "result": result, "error": null}),
            Err(Error::Rpc {
                code,
                message,
                data,
                ..
            }) => {
                let mut error = json!({"code": code, "message": message});
                if let Some(data) = data {
                    error["data"] = data.clone();
                }
                json!({"jsonrpc": "2.0", "id": id, "error": error})
            }
            Err(Error::RpcV1 { error, .. }) => {
                json!({"id": id, "result": null, "error": error})
            }
            Err(other) => json!({"failure": other.to_string()}),
        };
        let mut state = self.lock();
        let reading = state.reading;
        state.exchanges.push(Exchange {
            reading,
            method: method.to_owned(),
            request,
            response,
        });
    }
}

/// The caller's read-only rule on params ([`Recorder::checking_params`]).
#[derive(Clone)]
struct ParamsCheck(Arc<CheckFn>);

type CheckFn = dyn Fn(&str, &Value) -> Result<(), String> + Send + Sync;

impl std::fmt::Debug for ParamsCheck {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ParamsCheck(..)")
    }
}

/// Writes `exchanges` as a transcript: one JSON object per line.
pub fn to_jsonl(exchanges: &[Exchange]) -> String {
    let mut out = String::new();
    for exchange in exchanges {
        // An Exchange is plain JSON values and strings: serializing cannot fail.
        out.push_str(&serde_json::to_string(exchange).unwrap_or_default());
        out.push('\n');
    }
    out
}

/// Reads a transcript written by [`to_jsonl`]; blank lines are skipped, a line that is not
/// an exchange is an error naming its number.
pub fn from_jsonl(text: &str) -> Result<Vec<Exchange>, TranscriptError> {
    text.lines()
        .enumerate()
        .filter(|(_, line)| !line.trim().is_empty())
        .map(|(i, line)| {
            serde_json::from_str(line).map_err(|source| TranscriptError {
                line: i + 1,
                source,
            })
        })
        .collect()
}

/// A transcript line that is not an [`Exchange`].
#[derive(Debug, thiserror::Error)]
#[error("transcript line {line} is not a JSON-RPC exchange")]
pub struct TranscriptError {
    /// 1-based line number.
    pub line: usize,
    /// What the parser said.
    #[source]
    pub source: serde_json::Error,
}
