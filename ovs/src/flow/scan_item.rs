//! What both scanners ([`super::scan_plain`], [`super::scan_any`]) report and share: the
//! items they find, how a list ended, why a scan stopped, and the whitespace rule. Kept
//! apart from [`super::scan`], which picks a scanner per line, so the scanners depend on
//! this file and not on their dispatcher.

/// Why a scan stopped early: the byte offset in the line and what was expected there.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ScanError {
    /// Byte offset in the line where the problem was seen.
    pub(crate) offset: usize,
    /// What the parser expected at that offset (a noun phrase for the error message).
    pub(crate) expected: &'static str,
}

impl ScanError {
    pub(crate) const fn at(offset: usize, expected: &'static str) -> Self {
        Self { offset, expected }
    }
}

/// One item of a comma-separated list such as the match key or the actions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Item {
    /// First byte of the item.
    pub(crate) start: usize,
    /// One past the last byte of the item.
    pub(crate) end: usize,
    /// Offset of the item's first top-level `(` or `{`, when it has one.
    pub(crate) open: Option<usize>,
}

/// How a list ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ListEnd {
    /// At a top-level `, ` whose offset (of the comma) is given.
    CommaSpace(usize),
    /// At the end of the line.
    End,
}

pub(crate) const AFTER_GROUP: &str = "`,` or the end of the item after `)`";
pub(crate) const STRAY_CLOSE: &str = "no closing bracket without an opening one";
pub(crate) const UNCLOSED: &str = "a closing `)` before the end of the line";

/// `end` moved back over trailing ASCII whitespace, not below `start`: items and values
/// drop trailing whitespace exactly as a whole line does, so a flow prints back the same
/// whatever position an item ends up in.
pub(crate) fn trim_ws_end(b: &[u8], start: usize, mut end: usize) -> usize {
    while end > start && b[end - 1].is_ascii_whitespace() {
        end -= 1;
    }
    end
}
