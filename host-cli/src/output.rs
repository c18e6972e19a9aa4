//! Printing results: proto3 JSON for scripts, tables for people. All data goes to stdout;
//! diagnostics go to stderr.
//!
//! Everything printed for people passes [`printable`]: agents, inventories, plans and tools'
//! output are text from outside, and a terminal obeys the control sequences in it (clear the
//! screen, retitle the window, rewrite the line). JSON escapes them itself.

use std::borrow::Cow;
use std::fmt::Write as _;
use std::io::Write as _;

use anyhow::Context as _;
use comfy_table::{presets, ContentArrangement, Table};
use serde::Serialize;

/// Stdout's reader went away (EPIPE: `dpuctl -o json … | head`). Nothing more can be
/// printed, so the command stops, and `main` ends quietly with [`Exit::ReaderGone`]
/// instead of printing a "Broken pipe" error: what `ls | head` users expect.
///
/// [`Exit::ReaderGone`]: crate::exit::Exit::ReaderGone
#[derive(Debug)]
pub(crate) struct StdoutClosed;

impl std::fmt::Display for StdoutClosed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("the reader of stdout went away")
    }
}

impl std::error::Error for StdoutClosed {}

/// The error for a failed write to stdout: [`StdoutClosed`] for a reader that went away,
/// "cannot write output" with the cause for anything else (a full disk).
pub(crate) fn write_error(err: std::io::Error) -> anyhow::Error {
    if err.kind() == std::io::ErrorKind::BrokenPipe {
        anyhow::Error::new(StdoutClosed)
    } else {
        anyhow::Error::new(err).context("cannot write output")
    }
}

/// Whether `err` is a reader of stdout that went away (anywhere in its chain).
pub(crate) fn is_stdout_closed(err: &anyhow::Error) -> bool {
    err.chain().any(|link| link.is::<StdoutClosed>())
}

/// Writes a value as pretty JSON followed by a newline.
/// The whole document is made before the first byte is written, so a value that cannot be
/// serialised is an error on stderr, never a truncated document on stdout.
pub(crate) fn json(value: &impl Serialize) -> anyhow::Result<()> {
    let mut text = serde_json::to_vec_pretty(value).context("cannot encode the JSON output")?;
    text.push(b'\n');
    let mut out = std::io::stdout().lock();
    out.write_all(&text)
        .and_then(|()| out.flush())
        .map_err(write_error)
}

/// A table with a header row, laid out to the terminal width.
pub(crate) fn table<const N: usize>(header: [&str; N]) -> Table {
    let mut table = Table::new();
    table
        .load_preset(presets::UTF8_FULL_CONDENSED)
        .set_content_arrangement(ContentArrangement::Dynamic)
        .set_header(header);
    table
}

/// Whether `c` must not reach a terminal as is: every control character but newline and
/// tab (ESC, BEL, CR, backspace, DEL, the C1 set with CSI and OSC), and the Unicode
/// bidirectional controls that reorder what is shown (U+202A..U+202E, U+2066..U+2069,
/// U+200E, U+200F, U+061C).
fn is_unprintable(c: char) -> bool {
    (c.is_control() && c != '\n' && c != '\t')
        || matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' | '\u{200e}' | '\u{200f}' | '\u{061c}')
}

/// `text` with every character a terminal would obey shown escaped (`\x1b`, `\u{202e}`),
/// so no agent answer, inventory line or tool output can take over the operator's terminal.
/// Borrowed when there is nothing to escape (almost always).
pub(crate) fn printable(text: &str) -> Cow<'_, str> {
    if !text.chars().any(is_unprintable) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if !is_unprintable(c) {
            out.push(c);
        } else if let Ok(byte) = u8::try_from(u32::from(c)) {
            let _ = write!(out, "\\x{byte:02x}");
        } else {
            let _ = write!(out, "\\u{{{:x}}}", u32::from(c));
        }
    }
    Cow::Owned(out)
}

/// Prints a table and a blank separator line, every cell through [`printable`].
pub(crate) fn print_table(table: &Table) -> anyhow::Result<()> {
    let mut table = table.clone();
    let clean = |row: &comfy_table::Row| -> Vec<String> {
        row.cell_iter()
            .map(|cell| printable(&cell.content()).into_owned())
            .collect()
    };
    if let Some(header) = table.header().map(clean) {
        table.set_header(header);
    }
    for row in table.row_iter_mut() {
        *row = comfy_table::Row::from(clean(row));
    }
    let mut out = std::io::stdout().lock();
    writeln!(out, "{table}")
        .and_then(|()| out.flush())
        .map_err(write_error)
}

/// Prints a line of text, through [`printable`].
pub(crate) fn line(text: &str) -> anyhow::Result<()> {
    let mut out = std::io::stdout().lock();
    writeln!(out, "{}", printable(text))
        .and_then(|()| out.flush())
        .map_err(write_error)
}

/// Prints a diagnostic line on stderr, through [`printable`]. Best effort: a closed stderr
/// has nobody to tell.
pub(crate) fn diag(text: &str) {
    let _ = writeln!(std::io::stderr().lock(), "{}", printable(text));
}

/// Prints diagnostic text on stderr without ending the line, through [`printable`].
pub(crate) fn diag_part(text: &str) {
    let mut err = std::io::stderr().lock();
    let _ = write!(err, "{}", printable(text));
    let _ = err.flush();
}

/// Formats a protobuf Duration for people ("3h 2m 1s").
pub(crate) fn duration(d: Option<&dpu_proto::pbjson_types::Duration>) -> String {
    match d {
        Some(d) if d.seconds >= 0 => {
            humantime::format_duration(std::time::Duration::from_secs(d.seconds.unsigned_abs()))
                .to_string()
        }
        _ => "-".to_owned(),
    }
}

/// An enum field for people: its name without the type's prefix (`OPER_STATE_UP` → `up`);
/// a value this dpuctl does not know (a newer agent's) as `unknown(5)`, never as
/// "unspecified", so the reader sees that something new was said.
pub(crate) fn enum_label<E: TryFrom<i32>>(
    value: i32,
    name: fn(&E) -> &'static str,
    prefix: &str,
) -> String {
    match E::try_from(value) {
        Ok(known) => dpu_host::agent::health::enum_name(name(&known), prefix),
        Err(_) => format!("unknown({value})"),
    }
}

/// A counter value for a table, its digits grouped by thousands ("1,234,567"): a 12-digit
/// byte count is unreadable otherwise. Tables only; JSON keeps plain numbers for scripts.
pub(crate) fn grouped(value: u64) -> String {
    let digits = value.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// An empty string as "-" so table cells never look blank by accident.
pub(crate) fn or_dash(text: &str) -> &str {
    if text.is_empty() {
        "-"
    } else {
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn terminal_controls_from_outside_are_shown_escaped() {
        assert!(matches!(printable("mlx5_0 p0\tup\n"), Cow::Borrowed(_)));
        // Clear screen, an OSC window title ended by BEL, a carriage return, C1 CSI, DEL.
        assert_eq!(
            printable("a\x1b[2Jb\x1b]0;owned\x07c\rd\u{9b}e\x7f"),
            "a\\x1b[2Jb\\x1b]0;owned\\x07c\\x0dd\\x9be\\x7f"
        );
        // A right-to-left override would reorder the rest of the line.
        assert_eq!(printable("ok\u{202e}kcab"), "ok\\u{202e}kcab");
        assert!(!printable("\x1b\x07\u{202e}").chars().any(is_unprintable));
    }

    #[test]
    fn counter_values_are_grouped_by_thousands() {
        assert_eq!(grouped(0), "0");
        assert_eq!(grouped(999), "999");
        assert_eq!(grouped(1000), "1,000");
        assert_eq!(grouped(1_234_567), "1,234,567");
        assert_eq!(grouped(12_566_370_612), "12,566,370,612");
        assert_eq!(grouped(u64::MAX), "18,446,744,073,709,551,615");
    }

    #[test]
    fn an_enum_value_this_build_does_not_know_reads_as_its_number() {
        use dpu_proto::v1::DpuMode;
        assert_eq!(
            enum_label(DpuMode::Dpu as i32, DpuMode::as_str_name, "DPU_MODE_"),
            dpu_host::agent::health::enum_name(DpuMode::Dpu.as_str_name(), "DPU_MODE_")
        );
        assert_eq!(
            enum_label(99, DpuMode::as_str_name, "DPU_MODE_"),
            "unknown(99)"
        );
    }
}
