//! The one scanner every part of the line parser shares: it walks a piece of a flow line,
//! tracks bracket depth and double quotes, and reports where top-level items end.
//!
//! Every offset here is a byte offset into the whole line, and every position the scanner
//! stops at is an ASCII byte, so slicing the line there is always on a character boundary.
//!
//! Two implementations give the same results: [`super::scan_plain`] for lines without
//! quotes and braces (nearly every line OVS prints), which jumps between brackets and
//! commas eight bytes at a time, and [`super::scan_any`], byte by byte, for the others.

pub(crate) use super::scan_item::{trim_ws_end, Item, ListEnd, ScanError};
use super::{scan_any, scan_plain};

/// A flow line as the scanners read it: its text, and whether it is plain, free of `"`,
/// `{` and `}`, so that only brackets and commas can end or nest an item. Checked once
/// per line (a vectorised search), then every scan of the line picks its implementation.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Line<'a> {
    text: &'a str,
    plain: bool,
}

impl<'a> From<&'a str> for Line<'a> {
    fn from(text: &'a str) -> Self {
        Self {
            text,
            plain: memchr::memchr3(b'"', b'{', b'}', text.as_bytes()).is_none(),
        }
    }
}

/// Scans a list of `name` / `name(args)` items separated by top-level `,` starting at `from`,
/// calling `emit` for each. A top-level `, ` ends the list unless `continues(bytes, after)`
/// says the text after it still belongs to the current item. `what` names one item for
/// error messages ("a key field", "an action").
pub(crate) fn scan_list<'a>(
    line: impl Into<Line<'a>>,
    from: usize,
    what: &'static str,
    continues: impl Fn(&[u8], usize) -> bool,
    emit: impl FnMut(Item),
) -> Result<ListEnd, ScanError> {
    let line = line.into();
    if line.plain {
        scan_plain::list(line.text.as_bytes(), from, what, continues, emit)
    } else {
        scan_any::list(line.text.as_bytes(), from, what, continues, emit)
    }
}

/// Finds where a `name:value` field's value ends: at the next top-level `, ` (returned as
/// the comma's offset) or at the end of the line. Commas inside the value are kept.
pub(crate) fn scan_value<'a>(line: impl Into<Line<'a>>, from: usize) -> Result<usize, ScanError> {
    let line = line.into();
    if line.plain {
        scan_plain::value(line.text.as_bytes(), from)
    } else {
        scan_any::value(line.text.as_bytes(), from)
    }
}

/// The offset of the first `(` or `{` of an item that is not inside quotes (where the
/// scanners put [`Item::open`]), or `text.len()` when there is none.
pub(crate) fn first_open(text: &str) -> usize {
    let b = text.as_bytes();
    let mut i = 0;
    while let Some(&c) = b.get(i) {
        match c {
            b'(' | b'{' => return i,
            b'"' => match scan_any::skip_quoted(b, i) {
                Ok(close) => i = close,
                Err(_) => break,
            },
            _ => {}
        }
        i += 1;
    }
    b.len()
}

/// The length of a field name (`[A-Za-z0-9_-]+`) starting at `from`, when it is followed
/// by `:`; `None` when the text there is not `name:`.
pub(crate) fn field_name_len(b: &[u8], from: usize) -> Option<usize> {
    let rest = b.get(from..)?;
    let len = rest
        .iter()
        .position(|&c| !NAME_BYTE[usize::from(c)])
        .unwrap_or(rest.len());
    (len > 0 && rest.get(len) == Some(&b':')).then_some(len)
}

/// The bytes of a field name: `[A-Za-z0-9_-]`.
static NAME_BYTE: [bool; 256] = {
    let mut t = [false; 256];
    let mut c = 0;
    while c < 256 {
        let b = c as u8;
        t[c] = b.is_ascii_alphanumeric() || b == b'_' || b == b'-';
        c += 1;
    }
    t
};

/// Splits `text` at top-level commas (outside brackets and quotes), leniently: used on
/// text the line scanner has already checked.
#[cfg(test)]
pub(crate) fn split_top_level(text: &str) -> impl Iterator<Item = &str> {
    split_sub_fields(text).map(|(item, _)| item)
}

/// Splits `text` at top-level commas like `split_top_level`, and gives each item's first
/// `=` when no `(` comes before it: where a `name=value` sub-field splits (`flags(a=b)`
/// does not). One pass over each item finds both, so walking a key's sub-fields reads
/// every byte once.
pub(crate) fn split_sub_fields(text: &str) -> SubFieldSplit<'_> {
    SubFieldSplit { rest: Some(text) }
}

/// The iterator of [`split_sub_fields`]: each item with the offset of its `=`.
#[derive(Debug, Clone)]
pub(crate) struct SubFieldSplit<'t> {
    /// The text after the last item returned; `None` after the last item.
    rest: Option<&'t str>,
}

impl<'t> Iterator for SubFieldSplit<'t> {
    type Item = (&'t str, Option<usize>);

    fn next(&mut self) -> Option<Self::Item> {
        let s = self.rest?;
        let (end, equals) = top_level_item(s.as_bytes());
        self.rest = s.get(end + 1..);
        Some((s.get(..end).unwrap_or(s), equals))
    }
}

/// The bytes [`top_level_item`] acts on.
static SUB_FIELD_SPECIAL: [bool; 256] = {
    let mut t = [false; 256];
    let special = b"(){}\",=\\";
    let mut i = 0;
    while i < special.len() {
        t[special[i] as usize] = true;
        i += 1;
    }
    t
};

/// Where the first item of `b` ends (its top-level comma, or `b.len()`), and its first `=`
/// when no `(` comes before it. Quotes (with backslash escapes) hide brackets and commas,
/// `{}` nest like `()`, and a stray closing bracket is ignored.
fn top_level_item(b: &[u8]) -> (usize, Option<usize>) {
    let mut depth = 0usize;
    let mut quoted = false;
    // The first `=` or `(` of the item, wherever it is.
    let mut first_sep: Option<usize> = None;
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        if !SUB_FIELD_SPECIAL[usize::from(c)] {
            i += 1;
            continue;
        }
        if matches!(c, b'=' | b'(') && first_sep.is_none() {
            first_sep = Some(i);
        }
        match c {
            b'\\' if quoted => {
                // The escaped byte is skipped, but still counts for `first_sep`.
                i += 1;
                if matches!(b.get(i), Some(b'=' | b'(')) && first_sep.is_none() {
                    first_sep = Some(i);
                }
            }
            b'"' => quoted = !quoted,
            b'(' | b'{' if !quoted => depth += 1,
            b')' | b'}' if !quoted => depth = depth.saturating_sub(1),
            b',' if !quoted && depth == 0 => break,
            _ => {}
        }
        i += 1;
    }
    let equals = first_sep.filter(|&at| b[at] == b'=');
    (i.min(b.len()), equals)
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
