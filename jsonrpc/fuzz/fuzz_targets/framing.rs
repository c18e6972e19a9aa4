//! libFuzzer target: the incremental frame splitter (`jsonrpc/src/framing.rs`) fed arbitrary
//! bytes in arbitrary chunks. It must never panic, never hand out a frame bigger than its
//! limit, and, for streams of objects and arrays, yield the same frames however the bytes
//! are split across reads.
//!
//! Input layout: byte 0 picks the frame limit, bytes 1..9 the chunk sizes (cycled), the rest
//! is the stream.
#![no_main]

#[allow(dead_code)]
#[path = "../../src/framing.rs"]
mod framing;

use framing::{FrameDecoder, FrameError};
use libfuzzer_sys::fuzz_target;
use serde_json::Value;

/// Everything a decoder yields until it needs more bytes or fails.
fn drain(dec: &mut FrameDecoder, out: &mut Vec<Value>) -> Result<(), ()> {
    loop {
        match dec.next_frame() {
            Ok(Some(v)) => out.push(v),
            Ok(None) => return Ok(()),
            Err(FrameError::TooLarge { .. } | FrameError::Syntax(_)) => return Err(()),
        }
    }
}

fn structured(v: &Value) -> bool {
    matches!(v, Value::Object(_) | Value::Array(_))
}

fuzz_target!(|data: &[u8]| {
    if data.len() < 9 {
        return;
    }
    let limit = match data[0] % 4 {
        0 => 16,
        1 => 256,
        2 => 4096,
        _ => 1 << 20,
    };
    let sizes: Vec<usize> = data[1..9]
        .iter()
        .map(|&b| usize::from(b % 64) + 1)
        .collect();
    let stream = &data[9..];

    // The whole stream in one read.
    let mut whole = FrameDecoder::new(limit);
    whole.extend(stream);
    let mut whole_frames = Vec::new();
    let whole_ok = drain(&mut whole, &mut whole_frames);

    // The same stream in chunks, draining after each read as the connection does.
    let mut chunked = FrameDecoder::new(limit);
    let mut chunked_frames = Vec::new();
    let mut chunked_ok = Ok(());
    let mut at = 0;
    for size in sizes.iter().cycle() {
        if at >= stream.len() {
            break;
        }
        let end = (at + size).min(stream.len());
        chunked.extend(&stream[at..end]);
        at = end;
        chunked_ok = drain(&mut chunked, &mut chunked_frames);
        if chunked_ok.is_err() {
            break;
        }
    }

    for frame in whole_frames.iter().chain(&chunked_frames) {
        let len = serde_json::to_vec(frame).map_or(0, |v| v.len());
        // Re-encoding never grows compact JSON beyond what was read, except for escapes
        // serde writes differently; a frame must at least not be wildly over the limit.
        assert!(
            len <= limit.saturating_mul(6) + 16,
            "frame of {len} bytes passed a {limit}-byte limit"
        );
    }

    // Top-level scalars are framed by "EOF means more bytes", so a split inside one may
    // change them; objects and arrays must not depend on the split.
    // (A split inside "123" yields 1 then 23: harmless, since a scalar is never a
    // message and is dropped as unattributable, but not comparable.)
    let leftover = &stream[stream.len() - whole.buffered()..];
    let structured_tail = leftover.is_empty() || matches!(leftover[0], b'{' | b'[');
    if whole_ok.is_ok() && whole_frames.iter().all(structured) && structured_tail {
        assert!(
            chunked_ok.is_ok(),
            "chunked decode failed where whole decode did not"
        );
        assert_eq!(
            whole_frames, chunked_frames,
            "frames depend on the read boundaries"
        );
        assert_eq!(whole.buffered(), chunked.buffered());
    }
});
