//! Where a key is in a TOML file, and which key is at a position: the two directions every
//! located configuration error needs. The key path says *what* (stable, greppable, what the
//! tests assert) and line/column says *where* (what an editor jumps to). The TOML
//! deserializer gives a byte span but not the key; validation gives the key but no span.
//! Both are recovered from toml's spanned document tree ([`toml::de::DeTable`]).
//!
//! A foundation: the demo's plan and the experiment plan both locate their errors with it,
//! each in its own error type.

use std::ops::Range;

use toml::de::{DeTable, DeValue};
use toml::Spanned;

/// A toml deserialization error as a key path, a message and, when the error has a span, a
/// 1-based (line, column).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TomlProblem {
    /// The key path at the error's position (`storage.manifest[2].sha256`); for a missing
    /// field, the field itself; empty for the document as a whole.
    pub key: String,
    /// What toml says is wrong (a missing field: that the key is required).
    pub message: String,
    /// 1-based line and column, when toml gave a span.
    pub position: Option<(usize, usize)>,
}

/// Locates a toml deserialization error of `text`: its key path and position.
pub fn locate_toml_error(text: &str, error: &toml::de::Error) -> TomlProblem {
    let mut message = error.message().trim().to_owned();
    let mut key = String::new();
    let mut position = None;
    if let Some(span) = error.span() {
        position = Some(line_column(text, span.start));
        if let Ok(doc) = DeTable::parse(text) {
            key = key_at(doc.get_ref(), span.start);
        }
    }
    // "missing field `image`" points at the enclosing table; name the field itself.
    if let Some(field) = message
        .strip_prefix("missing field `")
        .and_then(|rest| rest.strip_suffix('`'))
    {
        key = join(&key, field);
        message = "missing; this key is required".to_owned();
    }
    TomlProblem {
        key,
        message,
        position,
    }
}

/// The parsed document of one file, for finding where many keys are.
#[derive(Debug)]
pub struct KeyPositions<'a> {
    text: &'a str,
    doc: Option<Spanned<DeTable<'a>>>,
}

impl<'a> KeyPositions<'a> {
    /// Parses `text` once; a file that does not parse locates nothing.
    pub fn parse(text: &'a str) -> Self {
        Self {
            text,
            doc: DeTable::parse(text).ok(),
        }
    }

    /// The 1-based (line, column) of the deepest part of `key` present in the file (a
    /// missing key points at its table), if any part is.
    pub fn of(&self, key: &str) -> Option<(usize, usize)> {
        let doc = self.doc.as_ref()?;
        offset_of(doc.get_ref(), key).map(|offset| line_column(self.text, offset))
    }
}

/// 1-based line and character column of a byte offset.
pub fn line_column(text: &str, offset: usize) -> (usize, usize) {
    let offset = offset.min(text.len());
    let before = text.get(..offset).unwrap_or(text);
    let line = before.matches('\n').count() + 1;
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    let column = before.get(line_start..).map_or(0, |s| s.chars().count()) + 1;
    (line, column)
}

/// The key path of the deepest key or value whose span contains `offset`.
fn key_at(table: &DeTable<'_>, offset: usize) -> String {
    let mut path = String::new();
    descend_table(table, offset, &mut path);
    path
}

/// One step of [`key_at`] through a table.
fn descend_table(table: &DeTable<'_>, offset: usize, path: &mut String) {
    for (key, value) in table.iter() {
        if contains(&key.span(), offset) {
            *path = join(path, key.get_ref());
            return;
        }
        if contains(&value.span(), offset) {
            *path = join(path, key.get_ref());
            descend_value(value, offset, path);
            return;
        }
    }
    // Tables written as `[a]` headers have a value span that covers the header only, so
    // an offset inside their body is found by trying each child table in turn.
    for (key, value) in table.iter() {
        if let DeValue::Table(child) = value.get_ref() {
            let mut sub = String::new();
            descend_table(child, offset, &mut sub);
            if !sub.is_empty() {
                *path = join(&join(path, key.get_ref()), &sub);
                return;
            }
        }
        if let DeValue::Array(items) = value.get_ref() {
            for (index, item) in items.iter().enumerate() {
                let mut sub = String::new();
                if let DeValue::Table(child) = item.get_ref() {
                    descend_table(child, offset, &mut sub);
                }
                if !sub.is_empty() || contains(&item.span(), offset) {
                    let here = format!("{}[{index}]", join(path, key.get_ref()));
                    *path = if sub.is_empty() {
                        here
                    } else {
                        join(&here, &sub)
                    };
                    return;
                }
            }
        }
    }
}

/// One step of [`key_at`] into a value already known to contain `offset`.
fn descend_value(value: &Spanned<DeValue<'_>>, offset: usize, path: &mut String) {
    match value.get_ref() {
        DeValue::Table(table) => descend_table(table, offset, path),
        DeValue::Array(items) => {
            if let Some((index, item)) = items
                .iter()
                .enumerate()
                .find(|(_, item)| contains(&item.span(), offset))
            {
                path.push_str(&format!("[{index}]"));
                descend_value(item, offset, path);
            }
        }
        _ => {}
    }
}

/// Byte offset of the deepest existing part of a key path such as `a.b[2].c`.
fn offset_of(table: &DeTable<'_>, key: &str) -> Option<usize> {
    let mut best = None;
    let mut current_table = Some(table);
    for segment in key.split('.').filter(|s| !s.is_empty()) {
        let (name, indices) = split_indices(segment);
        let Some((found_key, found)) = current_table.and_then(|t| {
            t.iter()
                .find(|(k, _)| k.get_ref().as_ref() == name)
                .map(|(k, v)| (k.span().start, v))
        }) else {
            break;
        };
        best = Some(found_key);
        let mut current = Some(found);
        for index in indices {
            let item = match current.map(Spanned::get_ref) {
                Some(DeValue::Array(items)) => items.get(index),
                _ => None,
            };
            match item {
                Some(item) => {
                    best = Some(item.span().start);
                    current = Some(item);
                }
                None => {
                    current = None;
                    break;
                }
            }
        }
        current_table = match current.map(Spanned::get_ref) {
            Some(DeValue::Table(t)) => Some(t),
            _ => None,
        };
    }
    best
}

/// `manifest[2][0]` → (`manifest`, [2, 0]); malformed indices are ignored.
fn split_indices(segment: &str) -> (&str, Vec<usize>) {
    let (name, rest) = segment.split_once('[').map_or((segment, ""), |(n, _)| {
        (n, segment.get(n.len()..).unwrap_or(""))
    });
    let indices = rest
        .split(['[', ']'])
        .filter_map(|part| part.parse().ok())
        .collect();
    (name, indices)
}

/// Whether a byte span contains an offset (an empty span contains its start).
fn contains(span: &Range<usize>, offset: usize) -> bool {
    span.start <= offset && (offset < span.end || offset == span.start)
}

/// `a` + `b` → `a.b`, without a leading dot at the top level.
fn join(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_owned()
    } else {
        format!("{path}.{key}")
    }
}
