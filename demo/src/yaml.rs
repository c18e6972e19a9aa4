//! A small YAML emitter for `serde_json::Value`, for `--dry-run` output that people read
//! and pipe into `kubectl apply -f -`.
//!
//! Why not a crate: `serde_yaml` is archived and `serde_yaml_ng` still sits on the archived
//! `unsafe-libyaml`. `serde-saphyr` (what kube-rs moved to) was written off when this
//! workspace promised Rust 1.85; it promises 1.89 now, which saphyr needs, so moving to it
//! is open (it brings a YAML parser stack for what is only emitting here). Emitting (not
//! parsing) the JSON subset of YAML is small when
//! every scalar that could be read back as anything but the same string is double-quoted:
//! plain style is used only for strings that are unambiguous under both YAML 1.1
//! (PyYAML, older Go parsers: `on`/`yes`/`no` are booleans there) and YAML 1.2. The tests
//! round-trip the output through PyYAML.

use std::fmt::Write as _;

use serde_json::Value;

/// Several objects as one multi-document stream, each document starting with `---`.
pub fn to_yaml(objects: &[Value]) -> String {
    let mut out = String::new();
    for object in objects {
        out.push_str("---\n");
        document(&mut out, object);
    }
    out
}

/// One value as a YAML document body (no `---`).
pub fn document(out: &mut String, value: &Value) {
    match value {
        Value::Object(map) if !map.is_empty() => mapping(out, map, 0, false),
        Value::Array(items) if !items.is_empty() => sequence(out, items, 0),
        scalar => {
            out.push_str(&inline(scalar));
            out.push('\n');
        }
    }
}

/// A block mapping at `indent` spaces; each line ends with a newline. `after_dash`: the
/// first entry continues a sequence item's `- ` line instead of starting its own.
fn mapping(
    out: &mut String,
    map: &serde_json::Map<String, Value>,
    indent: usize,
    after_dash: bool,
) {
    for (index, (key, value)) in map.iter().enumerate() {
        if index > 0 || !after_dash {
            pad(out, indent);
        }
        out.push_str(&string(key));
        out.push(':');
        child(out, value, indent);
    }
}

/// A block sequence at `indent` spaces.
fn sequence(out: &mut String, items: &[Value], indent: usize) {
    for item in items {
        pad(out, indent);
        match item {
            Value::Object(map) if !map.is_empty() => {
                out.push_str("- ");
                mapping(out, map, indent + 2, true);
            }
            Value::Array(inner) if !inner.is_empty() => {
                out.push_str("-\n");
                sequence(out, inner, indent + 2);
            }
            scalar => {
                out.push_str("- ");
                out.push_str(&inline(scalar));
                out.push('\n');
            }
        }
    }
}

/// The value after `key:`: inline for scalars and empty collections, otherwise on the
/// following lines, indented by two more spaces.
fn child(out: &mut String, value: &Value, indent: usize) {
    match value {
        Value::Object(map) if !map.is_empty() => {
            out.push('\n');
            mapping(out, map, indent + 2, false);
        }
        Value::Array(items) if !items.is_empty() => {
            out.push('\n');
            sequence(out, items, indent + 2);
        }
        scalar => {
            out.push(' ');
            out.push_str(&inline(scalar));
            out.push('\n');
        }
    }
}

/// A scalar or an empty collection on one line.
fn inline(value: &Value) -> String {
    match value {
        Value::Null => "null".to_owned(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => number(n),
        Value::String(s) => string(s),
        Value::Array(_) => "[]".to_owned(),
        Value::Object(_) => "{}".to_owned(),
    }
}

/// A number that reads back as the same kind: floats always have a '.' (PyYAML reads
/// `1e5` as a string and `2` as an integer).
fn number(n: &serde_json::Number) -> String {
    if n.is_f64() {
        let f = n.as_f64().unwrap_or(0.0);
        let text = f.to_string();
        if text.contains(['.', 'e', 'E']) || !f.is_finite() {
            text
        } else {
            format!("{text}.0")
        }
    } else {
        n.to_string()
    }
}

/// A string, plain when unambiguous, otherwise double-quoted.
fn string(s: &str) -> String {
    if plain_ok(s) {
        s.to_owned()
    } else {
        quoted(s)
    }
}

/// Words that YAML 1.1 or 1.2 resolves to booleans or null in plain style.
const RESERVED: &[&str] = &["y", "n", "yes", "no", "true", "false", "on", "off", "null"];

/// Whether `s` can be written plain and read back as the same string: it starts with a
/// letter or '/', uses only characters without YAML meaning, and is not a keyword.
/// Deliberately narrower than YAML allows; anything else is quoted.
fn plain_ok(s: &str) -> bool {
    let mut chars = s.chars();
    let Some(first) = chars.next() else {
        return false;
    };
    (first.is_ascii_alphabetic() || first == '/')
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | '/'))
        && !RESERVED.contains(&s.to_ascii_lowercase().as_str())
}

/// A double-quoted scalar. Escapes what YAML does not allow raw in double quotes or would
/// read as a line break: '"', '\\', C0 and C1 controls, DEL, U+2028/2029, BOM and the
/// non-characters U+FFFE/FFFF.
fn quoted(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            c if c.is_control()
                || matches!(
                    c,
                    '\u{2028}' | '\u{2029}' | '\u{feff}' | '\u{fffe}' | '\u{ffff}'
                ) =>
            {
                // is_control covers C0, DEL and C1 (U+0080-U+009F); all fit in \uXXXX.
                let _ = write!(out, "\\u{:04x}", u32::from(c));
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// Appends `indent` spaces.
fn pad(out: &mut String, indent: usize) {
    out.extend(std::iter::repeat_n(' ', indent));
}

#[cfg(test)]
pub mod tests;
