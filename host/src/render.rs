//! What every HTML page the products write shares (the proof page, the fleet page, `roce
//! perf --report`, the experiment page, the demo's review): a foundation below them, so no
//! product imports another to escape its text.

/// HTML-escapes text for element content and attribute values: every page is one
/// self-contained file with interface names, node names and tool output in it, none of
/// which may open a tag.
pub fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}
