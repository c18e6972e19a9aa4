//! The list and value scanners for plain lines, free of `"`, `{` and `}` (see
//! [`super::scan`]). They give exactly the results of [`super::scan_any`], but follow the
//! shape of an item (`name`, then maybe one bracket group, then `,`) and jump between the
//! bytes that can matter: brackets and commas outside a group, brackets only inside one.
//! That keeps the work per key field to a few word-at-a-time searches and well-predicted
//! branches, where a byte loop paid a mispredicted branch at each of the dozens of
//! brackets and commas of a line.

use super::bytes::next_bracket_or_comma;
use super::scan_item::{trim_ws_end, Item, ListEnd, ScanError, AFTER_GROUP, STRAY_CLOSE, UNCLOSED};

/// The offset of the `)` closing the group opened at `open`.
fn close_group(b: &[u8], open: usize) -> Result<usize, ScanError> {
    let mut depth = 1usize;
    let mut i = open;
    loop {
        i = next_bracket_or_comma(b, i + 1, false);
        match b.get(i) {
            None => return Err(ScanError::at(b.len(), UNCLOSED)),
            Some(b'(') => depth += 1,
            Some(_) => {
                depth -= 1;
                if depth == 0 {
                    return Ok(i);
                }
            }
        }
    }
}

/// [`super::scan::scan_list`] for a plain line.
pub(crate) fn list(
    b: &[u8],
    from: usize,
    what: &'static str,
    continues: impl Fn(&[u8], usize) -> bool,
    mut emit: impl FnMut(Item),
) -> Result<ListEnd, ScanError> {
    let mut start = from;
    let mut open: Option<usize> = None;
    let mut closed = false;
    let mut i = from;
    loop {
        i = next_bracket_or_comma(b, i, true);
        match b.get(i) {
            None => break,
            Some(b'(') => {
                open.get_or_insert(i);
                i = close_group(b, i)? + 1;
                // After the item's bracket group only the list separator may follow, and
                // it is handled right here, without searching for it.
                match b.get(i) {
                    None => break,
                    Some(b',') => closed = true,
                    Some(_) => return Err(ScanError::at(i, AFTER_GROUP)),
                }
            }
            Some(b')') => return Err(ScanError::at(i, STRAY_CLOSE)),
            Some(_) => {}
        }
        // A top-level comma at `i`.
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
        i += 1;
    }
    let end = trim_ws_end(b, start, b.len());
    if start >= end {
        return Err(ScanError::at(b.len(), what));
    }
    emit(Item { start, end, open });
    Ok(ListEnd::End)
}

/// [`super::scan::scan_value`] for a plain line.
pub(crate) fn value(b: &[u8], from: usize) -> Result<usize, ScanError> {
    let mut i = from;
    loop {
        i = next_bracket_or_comma(b, i, true);
        match b.get(i) {
            None => return Ok(b.len()),
            Some(b'(') => i = close_group(b, i)?,
            Some(b')') => return Err(ScanError::at(i, STRAY_CLOSE)),
            Some(_) if b.get(i + 1) == Some(&b' ') => return Ok(i),
            Some(_) => {}
        }
        i += 1;
    }
}
