//! Errors of the flow-dump parser: a malformed line names its line number, the column, what
//! was expected there and the line itself, so an operator can find it in the raw dump.

use std::fmt;

/// The longest piece of a line an error message quotes; the full line stays in
/// [`FlowParseError::text`].
const QUOTE_LIMIT: usize = 240;

/// A line of `dpctl/dump-flows` output that is not a flow, not a header and not blank.
///
/// Parsing never panics on bad input: it returns this, so one unexpected line from a newer
/// or patched OVS is reported precisely instead of taking the agent down.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("flow dump line {line}, column {column}: expected {expected} in `{}`", Quoted(.text))]
pub struct FlowParseError {
    /// 1-based line number in the dump (1 for a single parsed line).
    pub line: usize,
    /// 1-based byte column where the problem was seen (one past the end for "ended early").
    pub column: usize,
    /// What the parser expected at that column.
    pub expected: &'static str,
    /// The whole offending line, without its line terminator.
    pub text: String,
}

impl FlowParseError {
    /// Builds the error for `text` at byte `offset` (0-based) of line `line`.
    pub(crate) fn new(line: usize, offset: usize, expected: &'static str, text: &str) -> Self {
        Self {
            line,
            column: offset.saturating_add(1),
            expected,
            text: text.to_owned(),
        }
    }
}

/// Quotes a line in an error message, shortened around nothing fancier than its start so a
/// 100 kB garbage line does not flood a log.
struct Quoted<'a>(&'a str);

impl fmt::Display for Quoted<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.0.len() <= QUOTE_LIMIT {
            return f.write_str(self.0);
        }
        let mut cut = QUOTE_LIMIT;
        while !self.0.is_char_boundary(cut) {
            cut -= 1;
        }
        write!(f, "{}... ({} bytes)", &self.0[..cut], self.0.len())
    }
}

/// A `type=` value that `ovs-appctl dpctl/dump-flows` would reject.
///
/// The text follows OVS's own message (`Failed to parse type (x)`), so users see the same
/// wording whether the agent or OVS refused it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("failed to parse flow dump type ({value}): expected a comma list of ovs, tc, dpdk, offloaded, non-offloaded, partially-offloaded, all")]
pub struct DumpTypeError {
    /// The rejected list element.
    pub value: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn message_names_line_column_expectation_and_text() {
        let e = FlowParseError::new(7, 4, "`packets:`", "abc, def");
        assert_eq!(
            e.to_string(),
            "flow dump line 7, column 5: expected `packets:` in `abc, def`"
        );
    }

    #[test]
    fn long_lines_are_shortened_on_a_char_boundary() {
        let text = "é".repeat(500);
        let e = FlowParseError::new(1, 0, "x", &text);
        let msg = e.to_string();
        assert!(msg.ends_with("... (1000 bytes)`"), "{msg}");
        assert_eq!(e.text.len(), 1000);
    }
}
