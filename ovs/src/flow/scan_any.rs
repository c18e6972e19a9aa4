//! The byte-at-a-time list and value scanners, for lines that hold quotes or braces (see
//! [`super::scan`]): every `(){}",` byte is looked at, quotes hide everything up to their
//! closing quote, and `{}` nest like `()`. They are also the reference the plain-line
//! scanners are tested against.

use super::scan_item::{trim_ws_end, Item, ListEnd, ScanError, AFTER_GROUP, STRAY_CLOSE, UNCLOSED};

/// The bytes the scanners act on; every other byte is skipped with one table lookup.
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

/// The offset of the `"` closing the quote that opens at `open` (backslash escapes).
pub(crate) fn skip_quoted(b: &[u8], open: usize) -> Result<usize, ScanError> {
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

/// [`super::scan::scan_list`] for any line.
pub(crate) fn list(
    b: &[u8],
    from: usize,
    what: &'static str,
    continues: impl Fn(&[u8], usize) -> bool,
    mut emit: impl FnMut(Item),
) -> Result<ListEnd, ScanError> {
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
        return Err(ScanError::at(b.len(), UNCLOSED));
    }
    let end = trim_ws_end(b, start, b.len());
    if start >= end {
        return Err(ScanError::at(b.len(), what));
    }
    emit(Item { start, end, open });
    Ok(ListEnd::End)
}

/// [`super::scan::scan_value`] for any line.
pub(crate) fn value(b: &[u8], from: usize) -> Result<usize, ScanError> {
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
        return Err(ScanError::at(b.len(), UNCLOSED));
    }
    Ok(b.len())
}
