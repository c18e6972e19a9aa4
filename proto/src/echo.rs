//! The one way a value from a request is quoted back in an error message.
//!
//! Error text travels in the `grpc-message` header, and stock gRPC clients refuse header
//! blocks over 8-16 KiB: a hostile 200 KB name echoed in full turns a clean
//! `INVALID_ARGUMENT` into the client's own `RESOURCE_EXHAUSTED`, and carries the bytes
//! into every log line on the way. So every echo is quoted like `{:?}` (control characters
//! escaped) and cut to [`ECHO_MAX`] bytes on a character boundary, saying how long the
//! value really was: `"aaaa…" (200000 bytes)`. The agent's status helpers and the name
//! parsers here use this one function, so every message cuts the same way.

/// The most bytes of quoted text an echo keeps. Longer than any value that can be valid
/// (an NQN is at most 223 bytes, an id 63, an interface name 15), so a value that is
/// merely wrong is shown whole and only one that is too long anyway is cut.
pub const ECHO_MAX: usize = 256;

/// `value` quoted as `{:?}` would, or, when that is longer than [`ECHO_MAX`] bytes, its
/// first characters quoted, an ellipsis inside the quotes and the value's length in bytes:
/// `"aaaa…" (200000 bytes)`.
pub fn echo(value: &str) -> String {
    let mut width = 0;
    let mut cut = None;
    for (at, c) in value.char_indices() {
        // What `{:?}` writes for the character, or a little more (it escapes a quote or a
        // combining mark in fewer places than `char::escape_debug`).
        width += c.escape_debug().map(char::len_utf8).sum::<usize>();
        if width > ECHO_MAX {
            cut = Some(at);
            break;
        }
    }
    match cut {
        None => format!("{value:?}"),
        Some(at) => {
            let quoted = format!("{:?}", &value[..at]);
            let open = quoted.strip_suffix('"').unwrap_or(&quoted);
            format!("{open}…\" ({} bytes)", value.len())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_values_are_quoted_whole_like_debug() {
        assert_eq!(echo("eth0"), "\"eth0\"");
        assert_eq!(echo("a\0b\n"), format!("{:?}", "a\0b\n"));
        assert_eq!(echo(""), "\"\"");
        let exact = "a".repeat(ECHO_MAX);
        assert_eq!(echo(&exact), format!("{exact:?}"));
    }

    #[test]
    fn long_values_are_cut_and_say_their_length() {
        let long = "a".repeat(200_000);
        let echoed = echo(&long);
        assert_eq!(
            echoed,
            format!("\"{}…\" (200000 bytes)", "a".repeat(ECHO_MAX))
        );
        assert!(echoed.len() < ECHO_MAX + 32, "{}", echoed.len());
    }

    #[test]
    fn cuts_fall_on_character_boundaries_and_escapes_count() {
        // Two-byte characters: the cut never splits one.
        let wide = "é".repeat(1000);
        let echoed = echo(&wide);
        assert!(echoed.ends_with("…\" (2000 bytes)"), "{echoed}");
        assert!(echoed.len() <= ECHO_MAX + 32, "{}", echoed.len());
        // Control characters are escaped to up to six bytes each (`\u{1}`); the bound is
        // on what is written.
        let controls = "\u{1}".repeat(1000);
        let echoed = echo(&controls);
        assert!(echoed.starts_with("\"\\u{1}"), "{echoed}");
        assert!(echoed.len() <= ECHO_MAX + 32, "{}", echoed.len());
        assert!(echoed.ends_with("…\" (1000 bytes)"), "{echoed}");
    }
}
