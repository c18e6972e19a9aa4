//! The streamed-completion half of `demo check-serving`: an incremental Server-Sent Events
//! reader that timestamps every event as it arrives, and the analysis that tells a real
//! token stream from one a proxy held back and released at once (ingress-nginx with
//! `proxy-buffering` on; docs/reference/demo-ecosystem.md §3.4). Kept apart from the
//! HTTP calls so the timing rules are tested on synthetic timings.

use std::time::Duration;

use serde::Serialize;
use serde_json::Value;

/// Fewer content chunks than this say nothing about buffering: a one- or two-token answer
/// arrives "at once" whatever sits in between.
const MIN_CHUNKS_FOR_VERDICT: usize = 3;

/// A stream whose content chunks all arrived within this fraction of the total time...
const MAX_SPREAD_FRACTION: f64 = 0.10;

/// ...after waiting at least this fraction of it for the first one was held back.
const MIN_WAIT_FRACTION: f64 = 0.80;

/// Below this total time, scheduling noise and TCP coalescing dominate and any short
/// stream looks bunched; a proxy that buffers such a stream costs nothing worth flagging.
const MIN_TOTAL: Duration = Duration::from_millis(50);

/// What the stream check found; part of the JSON report.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct StreamReport {
    /// The prompt streamed (the plan's first answer).
    pub prompt: String,
    /// `data:` events received, `[DONE]` included.
    pub events: usize,
    /// Events whose delta carried non-empty content.
    pub content_chunks: usize,
    /// Whether the stream ended with `data: [DONE]` (a cut stream does not).
    pub done: bool,
    /// The joined delta contents.
    pub text: String,
    /// Milliseconds from sending the request to the first content chunk.
    pub first_chunk_ms: Option<f64>,
    /// Milliseconds from sending the request to the last content chunk.
    pub last_chunk_ms: Option<f64>,
    /// Whether the content arrived in one burst at the end (a buffering proxy).
    pub buffered: bool,
    /// Errors reported inside the stream (vLLM sends them as `data: {"error": ...}`
    /// events with HTTP 200, not as a status).
    pub errors: Vec<String>,
}

impl StreamReport {
    /// Every reason the stream fails the check; empty when it passes.
    pub fn problems(&self) -> Vec<String> {
        let mut problems: Vec<String> = self
            .errors
            .iter()
            .map(|e| format!("the streamed completion reported an error: {e}"))
            .collect();
        if !self.done {
            problems.push(
                "the stream ended without `data: [DONE]`: it was cut (a proxy timeout or a \
                 server crash?)"
                    .to_owned(),
            );
        }
        if self.content_chunks == 0 {
            problems.push("the stream carried no content".to_owned());
        }
        if self.buffered {
            problems.push(format!(
                "the stream arrived all at once: a proxy/ingress buffers SSE (nginx: \
                 proxy-buffering off); {} chunks within {:.0} ms after waiting {:.0} ms",
                self.content_chunks,
                self.last_chunk_ms.unwrap_or(0.0) - self.first_chunk_ms.unwrap_or(0.0),
                self.first_chunk_ms.unwrap_or(0.0)
            ));
        }
        problems
    }
}

/// An incremental SSE decoder (the WHATWG event-stream rules that OpenAI-style servers
/// use: `data:` lines joined by newlines, a blank line ends an event, `:` lines are
/// comments). Bytes are fed as they arrive, so each event is stamped with the read that
/// completed it.
#[derive(Debug, Default)]
pub(crate) struct SseDecoder {
    /// Bytes of a line not yet terminated.
    pending: Vec<u8>,
    /// `data` lines of the event being assembled.
    data: Vec<String>,
}

impl SseDecoder {
    /// Feeds bytes; returns the data of every event they complete.
    pub(crate) fn push(&mut self, bytes: &[u8]) -> Vec<String> {
        let mut events = Vec::new();
        for &byte in bytes {
            if byte != b'\n' {
                self.pending.push(byte);
                continue;
            }
            let mut line = std::mem::take(&mut self.pending);
            if line.last() == Some(&b'\r') {
                line.pop();
            }
            if let Some(event) = self.line(&String::from_utf8_lossy(&line)) {
                events.push(event);
            }
        }
        events
    }

    /// Ends the stream: an event not terminated by a blank line still counts, because a
    /// server that forgets the last blank line still sent the data.
    pub(crate) fn finish(&mut self) -> Option<String> {
        let pending = std::mem::take(&mut self.pending);
        if !pending.is_empty() {
            if let Some(event) = self.line(&String::from_utf8_lossy(&pending)) {
                return Some(event);
            }
        }
        self.dispatch()
    }

    /// Handles one line; returns an event when the line ends one.
    fn line(&mut self, line: &str) -> Option<String> {
        if line.is_empty() {
            return self.dispatch();
        }
        if line.starts_with(':') {
            return None;
        }
        let (field, value) = line.split_once(':').unwrap_or((line, ""));
        if field == "data" {
            self.data
                .push(value.strip_prefix(' ').unwrap_or(value).to_owned());
        }
        None
    }

    /// The assembled event, if it had data.
    fn dispatch(&mut self) -> Option<String> {
        if self.data.is_empty() {
            return None;
        }
        Some(std::mem::take(&mut self.data).join("\n"))
    }
}

/// Builds the report from the events as received: each with the time since the request
/// was sent.
pub(crate) fn analyse(prompt: &str, events: &[(Duration, String)]) -> StreamReport {
    let mut report = StreamReport {
        prompt: prompt.to_owned(),
        ..StreamReport::default()
    };
    let mut content_times = Vec::new();
    for (at, data) in events {
        report.events += 1;
        if data.trim() == "[DONE]" {
            report.done = true;
            break;
        }
        let chunk: serde_json::Value = match serde_json::from_str(data) {
            Ok(chunk) => chunk,
            Err(e) => {
                report
                    .errors
                    .push(format!("an event is not JSON ({e}): {}", excerpt(data)));
                continue;
            }
        };
        if let Some(error) = chunk.get("error") {
            report.errors.push(error_message(error));
            continue;
        }
        let content = chunk["choices"][0]["delta"]["content"]
            .as_str()
            .unwrap_or_default();
        if !content.is_empty() {
            report.text.push_str(content);
            content_times.push(*at);
        }
    }
    report.content_chunks = content_times.len();
    report.first_chunk_ms = content_times.first().map(millis);
    report.last_chunk_ms = content_times.last().map(millis);
    report.buffered = buffered(&content_times);
    report
}

/// Whether content chunks arriving at `times` (since the request) were held back and
/// released together: enough chunks, all within [`MAX_SPREAD_FRACTION`] of the total
/// time, the first after waiting [`MIN_WAIT_FRACTION`] of it. A real stream spreads its
/// chunks over the decode time, which is most of the total once the model is warm (the
/// non-streamed answers run first, so prefill is short).
pub(crate) fn buffered(times: &[Duration]) -> bool {
    let (Some(first), Some(last)) = (times.first(), times.last()) else {
        return false;
    };
    if times.len() < MIN_CHUNKS_FOR_VERDICT || *last < MIN_TOTAL {
        return false;
    }
    let total = last.as_secs_f64();
    let spread = last.saturating_sub(*first).as_secs_f64();
    spread < MAX_SPREAD_FRACTION * total && first.as_secs_f64() > MIN_WAIT_FRACTION * total
}

/// A duration in milliseconds, for the report.
fn millis(d: &Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

/// The start of a long text, for messages.
pub(crate) fn excerpt(text: &str) -> String {
    const MAX: usize = 200;
    match text.char_indices().nth(MAX) {
        Some((end, _)) => format!("{}…", &text[..end]),
        None => text.to_owned(),
    }
}

/// `message (code N)` of an error object, or the JSON itself when it has no message.
pub(crate) fn error_message(error: &Value) -> String {
    let message = error
        .get("message")
        .and_then(Value::as_str)
        .map(str::to_owned)
        .unwrap_or_else(|| excerpt(&error.to_string()));
    match error.get("code").filter(|code| !code.is_null()) {
        Some(Value::String(code)) => format!("{message} (code {code})"),
        Some(code) => format!("{message} (code {code})"),
        None => message,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(values: &[u64]) -> Vec<Duration> {
        values.iter().map(|&v| Duration::from_millis(v)).collect()
    }

    #[test]
    fn a_spread_stream_is_not_buffered() {
        // 30 ms apart from the start: a real token stream.
        assert!(!buffered(&ms(&[20, 50, 80, 110, 140, 170])));
        // Slow prefill, then a decode over a third of the time: still a stream.
        assert!(!buffered(&ms(&[600, 700, 800, 900])));
    }

    #[test]
    fn chunks_released_together_at_the_end_are_buffered() {
        assert!(buffered(&ms(&[1000, 1001, 1001, 1002, 1003])));
        assert!(buffered(&ms(&[300, 300, 300])));
    }

    #[test]
    fn too_few_chunks_or_too_little_time_give_no_verdict() {
        assert!(!buffered(&ms(&[1000, 1001])));
        assert!(!buffered(&[]));
        // Everything within 10 ms: a fast local answer, not evidence of a proxy.
        assert!(!buffered(&ms(&[9, 9, 10, 10])));
    }

    #[test]
    fn a_late_first_chunk_with_a_spread_tail_is_not_buffered() {
        // First chunk at 85 % but the rest spread over 15 %: spread fails the rule.
        assert!(!buffered(&ms(&[850, 900, 950, 1000])));
        // Bunched early, then one straggler: the spread fails the rule.
        assert!(!buffered(&ms(&[100, 101, 102, 1000])));
    }

    #[test]
    fn decoder_handles_split_reads_crlf_comments_and_multiline_data() {
        let mut d = SseDecoder::default();
        assert_eq!(d.push(b"data: {\"a\""), Vec::<String>::new());
        assert_eq!(
            d.push(b":1}\r\n\r\n: keep-alive\n\ndata:x\n"),
            ["{\"a\":1}"]
        );
        assert_eq!(d.push(b"data: y\n\nevent: z\ndata: [DONE]"), ["x\ny"]);
        assert_eq!(d.finish().as_deref(), Some("[DONE]"));
        assert_eq!(d.finish(), None);
    }

    fn chunk(content: &str) -> String {
        serde_json::json!({
            "object": "chat.completion.chunk",
            "choices": [{"index": 0, "delta": {"content": content}, "finish_reason": null}]
        })
        .to_string()
    }

    #[test]
    fn analyse_joins_content_and_requires_done() {
        let events = vec![
            (
                Duration::from_millis(10),
                r#"{"choices":[{"delta":{"role":"assistant"}}]}"#.to_owned(),
            ),
            (Duration::from_millis(20), chunk("Hello")),
            (Duration::from_millis(50), chunk(", ")),
            (Duration::from_millis(80), chunk("world")),
            (
                Duration::from_millis(90),
                r#"{"choices":[],"usage":{"total_tokens":3}}"#.to_owned(),
            ),
            (Duration::from_millis(95), "[DONE]".to_owned()),
        ];
        let report = analyse("p", &events);
        assert_eq!(report.text, "Hello, world");
        assert_eq!(report.content_chunks, 3);
        assert_eq!(report.events, 6);
        assert!(report.done);
        assert!(!report.buffered);
        assert_eq!(report.first_chunk_ms, Some(20.0));
        assert_eq!(report.problems(), Vec::<String>::new());

        let cut = analyse("p", &events[..4]);
        assert!(!cut.done);
        assert!(cut.problems()[0].contains("[DONE]"), "{:?}", cut.problems());
    }

    #[test]
    fn analyse_reports_in_stream_errors_and_buffering() {
        let events = vec![
            (
                Duration::from_millis(5),
                r#"{"error":{"message":"boom","code":500}}"#.to_owned(),
            ),
            (Duration::from_millis(6), "[DONE]".to_owned()),
        ];
        let report = analyse("p", &events);
        assert_eq!(report.errors, ["boom (code 500)"]);
        assert!(report.problems().iter().any(|p| p.contains("boom")));

        let at = Duration::from_millis(400);
        let mut events: Vec<_> = ["a", "b", "c", "d"]
            .iter()
            .map(|c| (at, chunk(c)))
            .collect();
        events.push((at, "[DONE]".to_owned()));
        let report = analyse("p", &events);
        assert!(report.buffered);
        let problems = report.problems();
        assert_eq!(problems.len(), 1, "{problems:?}");
        assert!(problems[0].contains("proxy-buffering off"), "{problems:?}");
    }
}
