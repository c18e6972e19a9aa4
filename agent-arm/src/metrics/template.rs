//! A counter tree's scrape text with the values cut out: every `# HELP`/`# TYPE`/`# UNIT`
//! line and every series' name and labels, encoded once when the tree's layout is built,
//! then copied with the reading's values written between the cuts at every scrape. A
//! scrape of an unchanged tree then costs what copying its text costs, not what naming,
//! labelling, escaping and sorting 1,700 series costs.

use super::names::Value;

/// Where a value goes: the end of the literal text before it, and the value's slot in the
/// reading.
#[derive(Debug, Clone, Copy)]
struct Cut {
    /// Byte offset in [`Template::text`] where the value is written.
    at: usize,
    /// Index into the reading's values.
    slot: usize,
}

/// The text of the counter families in one format, values cut out.
#[derive(Debug, Default)]
pub(crate) struct Template {
    /// Headers, series names with their labels and the trailing space, and newlines.
    text: String,
    /// In text order.
    cuts: Vec<Cut>,
}

impl Template {
    /// Appends literal text (headers, a series' name and labels).
    pub(crate) fn push_text(&mut self, text: &str) {
        self.text.push_str(text);
    }

    /// Marks the place of `slot`'s value: right after the text pushed so far.
    pub(crate) fn push_value(&mut self, slot: usize) {
        self.cuts.push(Cut {
            at: self.text.len(),
            slot,
        });
    }

    /// The number of bytes a rendering takes besides its values: for sizing the answer.
    pub(crate) fn text_len(&self) -> usize {
        self.text.len()
    }

    /// Appends the text with `values` (indexed by slot) in their places.
    pub(crate) fn write(&self, out: &mut String, values: &[Value]) {
        let mut from = 0;
        for cut in &self.cuts {
            out.push_str(&self.text[from..cut.at]);
            // A slot outside `values` cannot happen (a layout is used only with the
            // reading whose series it was built from); written as NaN rather than panic.
            write_value(out, values.get(cut.slot).copied());
            from = cut.at;
        }
        out.push_str(&self.text[from..]);
    }

    /// Bytes held, for the cache's memory bound.
    pub(crate) fn heap_bytes(&self) -> usize {
        self.text.capacity() + self.cuts.capacity() * std::mem::size_of::<Cut>()
    }
}

/// A sample value as prometheus-client writes it in both text formats: an integer in
/// decimal, a float as the shortest decimal that reads back as the same number (`1.5`,
/// `0.001`, `12.0`).
fn write_value(out: &mut String, value: Option<Value>) {
    match value {
        Some(Value::Integer(v)) => push_u64(out, v),
        Some(Value::Float(v)) if v.is_finite() => {
            use std::fmt::Write as _;
            // `{:?}` is the shortest round-trip form with a `.0` on whole numbers, as the
            // encoder's `dtoa` writes it for every value a counter in seconds can take
            // (1 ms to 2^53 ms); writing to a String cannot fail.
            let _ = write!(out, "{v:?}");
        }
        Some(Value::Float(v)) if v.is_nan() => out.push_str("NaN"),
        Some(Value::Float(v)) if v > 0.0 => out.push_str("+Inf"),
        Some(Value::Float(_)) => out.push_str("-Inf"),
        None => out.push_str("NaN"),
    }
}

/// `v` in decimal, without the formatting machinery (one call per series per scrape).
fn push_u64(out: &mut String, mut v: u64) {
    let mut digits = [0u8; 20];
    let mut start = digits.len();
    loop {
        start -= 1;
        // `v % 10` is below 10: the cast cannot truncate.
        #[allow(clippy::cast_possible_truncation)]
        let digit = (v % 10) as u8;
        digits[start] = b'0' + digit;
        v /= 10;
        if v == 0 {
            break;
        }
    }
    // Only ASCII digits were written.
    out.push_str(std::str::from_utf8(&digits[start..]).unwrap_or("0"));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_go_between_the_cuts() {
        let mut template = Template::default();
        template.push_text("# TYPE a counter\na_total{x=\"1\"} ");
        template.push_value(1);
        template.push_text("\na_total{x=\"2\"} ");
        template.push_value(0);
        template.push_text("\n");
        let mut out = String::new();
        template.write(&mut out, &[Value::Integer(7), Value::Float(1.5)]);
        assert_eq!(
            out,
            "# TYPE a counter\na_total{x=\"1\"} 1.5\na_total{x=\"2\"} 7\n"
        );
    }

    #[test]
    fn integers_are_written_in_decimal() {
        for v in [0, 1, 9, 10, 99, 100, 12_345, u64::from(u32::MAX), u64::MAX] {
            let mut out = String::new();
            push_u64(&mut out, v);
            assert_eq!(out, v.to_string());
        }
    }

    #[test]
    fn floats_keep_a_fraction_and_non_finite_values_are_named() {
        let written = |v: f64| {
            let mut out = String::new();
            write_value(&mut out, Some(Value::Float(v)));
            out
        };
        assert_eq!(written(1.5), "1.5");
        assert_eq!(written(12.0), "12.0");
        assert_eq!(written(0.001), "0.001");
        assert_eq!(written(f64::INFINITY), "+Inf");
        assert_eq!(written(f64::NAN), "NaN");
    }
}
