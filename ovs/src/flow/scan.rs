//! The one byte scanner every part of the line parser shares: it walks a piece of a flow line,
//! tracks bracket depth and double quotes, and reports where top-level items end.
//!
//! Every offset here is a byte offset into the whole line, and every position the scanner
//! stops at is an ASCII byte, so slicing the line there is always on a character boundary.

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

/// The bytes the scanners act on; every other byte is skipped with one table lookup,
/// which keeps the scan near memory speed on 500-byte flow lines.
static SPECIAL: [bool; 256] = {
    let mut t = [false; 256];
    t[b'(' as usize] = true;
    t[b')' as usize] = true;
    t[b'{' as usize] = true;
    t[b'}' as usize] = true;
    t[b'"' as usize] = true;
    t[b',' as usize] = true;
    t
};

const AFTER_GROUP: &str = "`,` or the end of the item after `)`";
const STRAY_CLOSE: &str = "no closing bracket without an opening one";

/// The offset of the `"` closing the quote that opens at `open` (backslash escapes).
fn skip_quoted(b: &[u8], open: usize) -> Result<usize, ScanError> {
    let mut j = open + 1;
    loop {
        match b.get(j) {
            None => return Err(ScanError::at(open, "a closing `\"` for this quote")),
            Some(b'\\') => j += 2,
            Some(b'"') => return Ok(j),
            Some(_) => j += 1,
        }
    }
}

/// Scans a list of `name` / `name(args)` items separated by top-level `,` starting at `from`,
/// calling `emit` for each. A top-level `, ` ends the list unless `continues(bytes, after)`
/// says the text after it still belongs to the current item. `what` names one item for
/// error messages ("a key field", "an action").
pub(crate) fn scan_list(
    line: &str,
    from: usize,
    what: &'static str,
    continues: impl Fn(&[u8], usize) -> bool,
    mut emit: impl FnMut(Item),
) -> Result<ListEnd, ScanError> {
    let b = line.as_bytes();
    let mut i = from;
    let mut depth = 0usize;
    let mut start = from;
    let mut open: Option<usize> = None;
    let mut closed = false;
    while i < b.len() {
        let c = b[i];
        if !SPECIAL[usize::from(c)] {
            i += 1;
            continue;
        }
        match c {
            b'(' | b'{' => {
                if depth == 0 {
                    open.get_or_insert(i);
                }
                depth += 1;
            }
            b')' | b'}' => {
                if depth == 0 {
                    return Err(ScanError::at(i, STRAY_CLOSE));
                }
                depth -= 1;
                if depth == 0 {
                    // After the item's bracket group only the list separator may follow.
                    if b.get(i + 1).is_some_and(|&n| n != b',') {
                        return Err(ScanError::at(i + 1, AFTER_GROUP));
                    }
                    closed = true;
                }
            }
            b'"' => i = skip_quoted(b, i)?,
            b',' if depth == 0 => {
                let space = b.get(i + 1) == Some(&b' ');
                if !space || !continues(b, i + 2) {
                    let end = trim_ws_end(b, start, i);
                    if start == end {
                        return Err(ScanError::at(i, what));
                    }
                    emit(Item { start, end, open });
                    if space {
                        return Ok(ListEnd::CommaSpace(i));
                    }
                    start = i + 1;
                    open = None;
                    closed = false;
                } else if closed {
                    return Err(ScanError::at(i, AFTER_GROUP));
                }
            }
            _ => {}
        }
        i += 1;
    }
    if depth > 0 {
        return Err(ScanError::at(
            b.len(),
            "a closing `)` before the end of the line",
        ));
    }
    let end = trim_ws_end(b, start, b.len());
    if start >= end {
        return Err(ScanError::at(b.len(), what));
    }
    emit(Item { start, end, open });
    Ok(ListEnd::End)
}

/// Finds where a `name:value` field's value ends: at the next top-level `, ` (returned as
/// the comma's offset) or at the end of the line. Commas inside the value are kept.
pub(crate) fn scan_value(line: &str, from: usize) -> Result<usize, ScanError> {
    let b = line.as_bytes();
    let mut i = from;
    let mut depth = 0usize;
    while i < b.len() {
        let c = b[i];
        if !SPECIAL[usize::from(c)] {
            i += 1;
            continue;
        }
        match c {
            b'(' | b'{' => depth += 1,
            b')' | b'}' => {
                if depth == 0 {
                    return Err(ScanError::at(i, STRAY_CLOSE));
                }
                depth -= 1;
            }
            b'"' => i = skip_quoted(b, i)?,
            b',' if depth == 0 && b.get(i + 1) == Some(&b' ') => return Ok(i),
            _ => {}
        }
        i += 1;
    }
    if depth > 0 {
        return Err(ScanError::at(
            b.len(),
            "a closing `)` before the end of the line",
        ));
    }
    Ok(b.len())
}

/// `end` moved back over trailing ASCII whitespace, not below `start`: items and values
/// drop trailing whitespace exactly as a whole line does, so a flow prints back the same
/// whatever position an item ends up in.
pub(crate) fn trim_ws_end(b: &[u8], start: usize, mut end: usize) -> usize {
    while end > start && b[end - 1].is_ascii_whitespace() {
        end -= 1;
    }
    end
}

/// The length of a field name (`[A-Za-z0-9_-]+`) starting at `from`, when it is followed
/// by `:`; `None` when the text there is not `name:`.
pub(crate) fn field_name_len(b: &[u8], from: usize) -> Option<usize> {
    let rest = b.get(from..)?;
    let len = rest
        .iter()
        .position(|&c| !(c.is_ascii_alphanumeric() || c == b'_' || c == b'-'))
        .unwrap_or(rest.len());
    (len > 0 && rest.get(len) == Some(&b':')).then_some(len)
}

/// Splits `text` at top-level commas (outside brackets and quotes), leniently: used on
/// text the line scanner has already checked.
pub(crate) fn split_top_level(text: &str) -> impl Iterator<Item = &str> {
    let mut rest = Some(text);
    std::iter::from_fn(move || {
        let s = rest?;
        let b = s.as_bytes();
        let mut depth = 0usize;
        let mut quoted = false;
        let mut i = 0;
        while i < b.len() {
            match b[i] {
                b'\\' if quoted => i += 1,
                b'"' => quoted = !quoted,
                b'(' | b'{' if !quoted => depth += 1,
                b')' | b'}' if !quoted => depth = depth.saturating_sub(1),
                b',' if !quoted && depth == 0 => {
                    rest = s.get(i + 1..);
                    return s.get(..i);
                }
                _ => {}
            }
            i += 1;
        }
        rest = None;
        Some(s)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn items(line: &str) -> Result<(Vec<&str>, ListEnd), ScanError> {
        let mut out = Vec::new();
        let end = scan_list(
            line,
            0,
            "an item",
            |_, _| false,
            |it| {
                out.push(&line[it.start..it.end]);
            },
        )?;
        Ok((out, end))
    }

    #[test]
    fn splits_top_level_commas_only() {
        let (v, end) = items("a(1,2),b,c(d(e,f)), rest").expect("scans");
        assert_eq!(v, ["a(1,2)", "b", "c(d(e,f))"]);
        assert_eq!(end, ListEnd::CommaSpace(18));
    }

    #[test]
    fn reports_unbalanced_and_empty_items() {
        assert_eq!(items("a(1").err().map(|e| e.offset), Some(3));
        assert_eq!(items("a)").err().map(|e| e.offset), Some(1));
        assert_eq!(items("a,,b").err().map(|e| e.expected), Some("an item"));
        assert_eq!(items("a(1)b").err().map(|e| e.offset), Some(4));
        assert_eq!(items("a(\"x").err().map(|e| e.offset), Some(2));
    }

    #[test]
    fn quotes_hide_separators() {
        let (v, _) = items("u(\"a,b), c\"),d").expect("scans");
        assert_eq!(v, ["u(\"a,b), c\")", "d"]);
    }

    #[test]
    fn value_scan_keeps_inner_commas() {
        assert_eq!(scan_value("x(1,2), y", 0), Ok(6));
        assert_eq!(scan_value("a,b", 0), Ok(3));
        assert_eq!(field_name_len(b"dp-extra-info:x", 0), Some(13));
        assert_eq!(field_name_len(b"ct(x:y)", 0), None);
        let parts: Vec<_> = split_top_level("src=1,dst=2,flags(-df+csum)").collect();
        assert_eq!(parts, ["src=1", "dst=2", "flags(-df+csum)"]);
    }
}
