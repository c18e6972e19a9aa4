//! Replay of a captured JSON-RPC transcript (`dpuctl capture --snap-socket`, the bundle's
//! `jsonrpc/NAME.jsonl`): a [`FakeSnap`](super::FakeSnap) started with
//! [`FakeSnap::start_replaying`](super::FakeSnap::start_replaying) answers a request whose
//! method and params were recorded with the recorded answer (its result, or its error
//! object as the peer sent it), and anything else with [`NOT_CAPTURED_CODE`] naming the
//! request: nothing is made up, the fake's own state is not consulted.
//!
//! A transcript line is `{"reading", "method", "request", "response"}` (the format is
//! `dpu_jsonrpc::Exchange`'s, read here as plain JSON so the simulator needs no JSON-RPC
//! client). Readings play in order: the first request of a (method, params) gets the
//! answer of the first reading that has it, the next one the next reading's, and the last
//! answer repeats from then on; [`Replay::pin`] holds every answer at one reading instead.

use serde_json::Value;

/// The JSON-RPC error code of a request the transcript has no answer for (in JSON-RPC's
/// range for server errors, unlike any code SPDK or SNAP send).
pub const NOT_CAPTURED_CODE: i64 = -32098;

/// The recorded answers of one (method, params).
#[derive(Debug, Clone)]
struct Recorded {
    method: String,
    params: Value,
    /// (reading, response object) in transcript order.
    answers: Vec<(u32, Value)>,
    /// How many requests of it were answered so far.
    asked: usize,
}

/// A transcript ready to answer from.
#[derive(Debug, Clone, Default)]
pub struct Replay {
    recorded: Vec<Recorded>,
    pinned: Option<u32>,
}

/// Why a transcript cannot be replayed.
#[derive(Debug, thiserror::Error)]
pub enum ReplayError {
    /// A line is not JSON.
    #[error("transcript line {line} is not JSON")]
    NotJson {
        /// 1-based.
        line: usize,
        /// The parser's error.
        #[source]
        source: serde_json::Error,
    },
    /// A line lacks a member of an exchange.
    #[error("transcript line {line} has no {member}: not a JSON-RPC exchange")]
    Missing {
        /// 1-based.
        line: usize,
        /// `method`, `request` or `response`.
        member: &'static str,
    },
}

impl Replay {
    /// Parses a `.jsonl` transcript; blank lines are skipped.
    pub fn from_jsonl(text: &str) -> Result<Self, ReplayError> {
        let mut replay = Self::default();
        for (index, line) in text.lines().enumerate() {
            if line.trim().is_empty() {
                continue;
            }
            let line_no = index + 1;
            let exchange: Value =
                serde_json::from_str(line).map_err(|source| ReplayError::NotJson {
                    line: line_no,
                    source,
                })?;
            let member = |name: &'static str| {
                exchange
                    .get(name)
                    .filter(|v| !v.is_null())
                    .ok_or(ReplayError::Missing {
                        line: line_no,
                        member: name,
                    })
            };
            let method = member("method")?.as_str().unwrap_or_default().to_owned();
            let params = member("request")?
                .get("params")
                .cloned()
                .unwrap_or(Value::Null);
            let response = member("response")?.clone();
            let reading = exchange["reading"].as_u64().unwrap_or(0) as u32;
            match replay
                .recorded
                .iter_mut()
                .find(|r| r.method == method && r.params == params)
            {
                Some(recorded) => recorded.answers.push((reading, response)),
                None => replay.recorded.push(Recorded {
                    method,
                    params,
                    answers: vec![(reading, response)],
                    asked: 0,
                }),
            }
        }
        Ok(replay)
    }

    /// How many distinct (method, params) the transcript answers.
    pub fn len(&self) -> usize {
        self.recorded.len()
    }

    /// True when the transcript answers nothing.
    pub fn is_empty(&self) -> bool {
        self.recorded.is_empty()
    }

    /// Answers every request from reading `reading` from now on (`None`: in order again).
    pub fn pin(&mut self, reading: Option<u32>) {
        self.pinned = reading;
    }

    /// The recorded response object for `method` with `params` (`None`: no params), or the
    /// error to answer instead: (code, message).
    pub fn answer(&mut self, method: &str, params: Option<&Value>) -> Result<Value, (i64, String)> {
        let params = params.cloned().unwrap_or(Value::Null);
        let pinned = self.pinned;
        let not_captured = |why: String| {
            Err((
                NOT_CAPTURED_CODE,
                format!(
                    "not captured: {method} with params {params} {why} (replaying a transcript)"
                ),
            ))
        };
        let Some(recorded) = self
            .recorded
            .iter_mut()
            .find(|r| r.method == method && r.params == params)
        else {
            return not_captured("is not in the transcript".to_owned());
        };
        let response = match pinned {
            Some(reading) => match recorded.answers.iter().find(|(r, _)| *r == reading) {
                Some((_, response)) => response.clone(),
                None => return not_captured(format!("was not asked in reading {reading}")),
            },
            None => {
                let at = recorded.asked.min(recorded.answers.len() - 1);
                recorded.asked += 1;
                recorded.answers[at].1.clone()
            }
        };
        match response.get("failure") {
            Some(failure) => not_captured(format!("got no answer when captured: {failure}")),
            None => Ok(response),
        }
    }
}
