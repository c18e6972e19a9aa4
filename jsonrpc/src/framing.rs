//! Delimiter-free framing: cut a byte stream into consecutive JSON values.
//!
//! SPDK, SNAP and OVS write JSON values back to back with no length prefix and no newline
//! (storage.md §2.2, ovs-netlink.md §2.1), so the only way to find a message boundary is to
//! parse. Re-parsing the whole buffer with serde_json after every read would cost O(n²) for a
//! large reply (an OVSDB monitor dump, a flow dump) arriving in many chunks, so a resumable
//! structural scanner (brackets, strings, escapes) finds where an object or array ends in
//! O(n) total, and serde_json's `StreamDeserializer` then decodes exactly that frame once.
//! Top-level scalars (never valid messages, but legal JSON) go straight to serde_json, with
//! "EOF while parsing" meaning "need more bytes".

use serde_json::Value;

/// Why the byte stream cannot be framed any further; the connection must be dropped.
#[derive(Debug)]
pub(crate) enum FrameError {
    /// One value grew past the configured maximum.
    TooLarge {
        /// The configured maximum frame size in bytes.
        limit: usize,
    },
    /// The peer sent bytes that are not JSON.
    Syntax(serde_json::Error),
}

/// Incremental decoder: feed it bytes, take complete JSON values out.
#[derive(Debug)]
pub(crate) struct FrameDecoder {
    buf: Vec<u8>,
    max_frame: usize,
    /// Bytes of `buf` already scanned for the current frame.
    scanned: usize,
    depth: usize,
    in_string: bool,
    escaped: bool,
}

impl FrameDecoder {
    /// A decoder that refuses any single value larger than `max_frame` bytes.
    pub(crate) fn new(max_frame: usize) -> Self {
        Self {
            buf: Vec::new(),
            max_frame,
            scanned: 0,
            depth: 0,
            in_string: false,
            escaped: false,
        }
    }

    /// Appends bytes read from the socket.
    pub(crate) fn extend(&mut self, bytes: &[u8]) {
        self.buf.extend_from_slice(bytes);
    }

    /// Bytes buffered but not yet returned as a value (a partial frame at EOF).
    pub(crate) fn buffered(&self) -> usize {
        self.buf.len()
    }

    /// Returns the next complete value, `Ok(None)` when more bytes are needed.
    pub(crate) fn next_frame(&mut self) -> Result<Option<Value>, FrameError> {
        if self.scanned == 0 {
            let ws = self
                .buf
                .iter()
                .take_while(|b| b.is_ascii_whitespace())
                .count();
            self.buf.drain(..ws);
        }
        match self.buf.first() {
            None => Ok(None),
            Some(b'{' | b'[') => self.next_structured(),
            Some(_) => self.next_scalar(),
        }
    }

    fn next_structured(&mut self) -> Result<Option<Value>, FrameError> {
        let Some(end) = self.scan() else {
            self.check_size(self.buf.len())?;
            return Ok(None);
        };
        self.check_size(end)?;
        let mut values = serde_json::Deserializer::from_slice(&self.buf[..end]).into_iter();
        let value = match values.next() {
            Some(Ok(value)) => value,
            Some(Err(e)) => return Err(FrameError::Syntax(e)),
            // The scanner only stops on a closing bracket, so the slice is never empty.
            None => return Ok(None),
        };
        self.buf.drain(..end);
        self.reset_scan();
        Ok(Some(value))
    }

    fn next_scalar(&mut self) -> Result<Option<Value>, FrameError> {
        let mut values = serde_json::Deserializer::from_slice(&self.buf).into_iter::<Value>();
        match values.next() {
            Some(Ok(value)) => {
                let end = values.byte_offset();
                self.check_size(end)?;
                self.buf.drain(..end);
                Ok(Some(value))
            }
            Some(Err(e)) if e.is_eof() => {
                self.check_size(self.buf.len())?;
                Ok(None)
            }
            Some(Err(e)) => Err(FrameError::Syntax(e)),
            None => Ok(None),
        }
    }

    /// Advances the scanner; returns the end offset of the first value once it is complete.
    fn scan(&mut self) -> Option<usize> {
        for (i, &b) in self.buf.iter().enumerate().skip(self.scanned) {
            if self.in_string {
                if self.escaped {
                    self.escaped = false;
                } else if b == b'\\' {
                    self.escaped = true;
                } else if b == b'"' {
                    self.in_string = false;
                }
                continue;
            }
            match b {
                b'"' => self.in_string = true,
                b'{' | b'[' => self.depth += 1,
                b'}' | b']' => {
                    self.depth = self.depth.saturating_sub(1);
                    if self.depth == 0 {
                        return Some(i + 1);
                    }
                }
                _ => {}
            }
        }
        self.scanned = self.buf.len();
        None
    }

    fn reset_scan(&mut self) {
        self.scanned = 0;
        self.depth = 0;
        self.in_string = false;
        self.escaped = false;
    }

    fn check_size(&self, len: usize) -> Result<(), FrameError> {
        if len > self.max_frame {
            return Err(FrameError::TooLarge {
                limit: self.max_frame,
            });
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn drain(dec: &mut FrameDecoder) -> Vec<Value> {
        let mut out = Vec::new();
        while let Some(v) = dec.next_frame().expect("valid stream") {
            out.push(v);
        }
        out
    }

    #[test]
    fn values_back_to_back_without_delimiter() {
        let mut dec = FrameDecoder::new(1024);
        dec.extend(br#"{"a":1}{"b":[2,3]} [4] "s" 5 "#);
        assert_eq!(
            drain(&mut dec),
            vec![
                json!({"a":1}),
                json!({"b":[2,3]}),
                json!([4]),
                json!("s"),
                json!(5)
            ]
        );
    }

    #[test]
    fn every_split_point_yields_the_same_values() {
        let stream = br#"{"s":"}{\"]\\","n":[{"x":null}]}{"t":"\u007b"}"#;
        let expected = vec![json!({"s":"}{\"]\\","n":[{"x":null}]}), json!({"t":"{"})];
        for split in 0..=stream.len() {
            let mut dec = FrameDecoder::new(1024);
            dec.extend(&stream[..split]);
            let mut got = drain(&mut dec);
            dec.extend(&stream[split..]);
            got.extend(drain(&mut dec));
            assert_eq!(got, expected, "split at {split}");
            assert_eq!(dec.buffered(), 0);
        }
    }

    #[test]
    fn one_byte_at_a_time() {
        let stream = br#"{"result":{"k":"v {[ \" x"},"id":7}"#;
        let mut dec = FrameDecoder::new(1024);
        let mut got = Vec::new();
        for b in stream {
            dec.extend(&[*b]);
            got.extend(drain(&mut dec));
        }
        assert_eq!(got, vec![json!({"result":{"k":"v {[ \" x"},"id":7})]);
    }

    #[test]
    fn incomplete_frame_over_limit_is_rejected() {
        let mut dec = FrameDecoder::new(16);
        dec.extend(br#"{"result":"0123456789"#);
        assert!(matches!(
            dec.next_frame(),
            Err(FrameError::TooLarge { limit: 16 })
        ));
    }

    #[test]
    fn complete_frame_over_limit_is_rejected() {
        let mut dec = FrameDecoder::new(16);
        dec.extend(br#"{"result":"0123456789"}"#);
        assert!(matches!(
            dec.next_frame(),
            Err(FrameError::TooLarge { limit: 16 })
        ));
    }

    #[test]
    fn garbage_is_a_syntax_error() {
        let mut dec = FrameDecoder::new(1024);
        dec.extend(b"{\"a\" 1}");
        assert!(matches!(dec.next_frame(), Err(FrameError::Syntax(_))));
        let mut dec = FrameDecoder::new(1024);
        dec.extend(b"hello");
        assert!(matches!(dec.next_frame(), Err(FrameError::Syntax(_))));
    }

    #[test]
    fn partial_scalar_waits_for_more_bytes() {
        let mut dec = FrameDecoder::new(1024);
        dec.extend(b"\"abc");
        assert!(matches!(dec.next_frame(), Ok(None)));
        dec.extend(b"\"");
        assert_eq!(drain(&mut dec), vec![json!("abc")]);
    }
}
