//! Printing results: proto3 JSON for scripts, tables for people. All data goes to stdout;
//! diagnostics go to stderr.

use std::io::Write as _;

use anyhow::Context as _;
use comfy_table::{presets, ContentArrangement, Table};
use serde::Serialize;

/// Writes a value as pretty JSON followed by a newline.
pub(crate) fn json(value: &impl Serialize) -> anyhow::Result<()> {
    let mut out = std::io::stdout().lock();
    serde_json::to_writer_pretty(&mut out, value).context("cannot write JSON output")?;
    writeln!(out).context("cannot write output")?;
    Ok(())
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

/// Prints a table and a blank separator line.
pub(crate) fn print_table(table: &Table) -> anyhow::Result<()> {
    let mut out = std::io::stdout().lock();
    writeln!(out, "{table}").context("cannot write output")?;
    Ok(())
}

/// Prints a line of text.
pub(crate) fn line(text: &str) -> anyhow::Result<()> {
    writeln!(std::io::stdout().lock(), "{text}").context("cannot write output")
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

/// An empty string as "-" so table cells never look blank by accident.
pub(crate) fn or_dash(text: &str) -> &str {
    if text.is_empty() {
        "-"
    } else {
        text
    }
}
