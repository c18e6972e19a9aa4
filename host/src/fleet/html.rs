//! A fleet report as one self-contained HTML page (no scripts, no external files): a
//! square per node coloured by its result (in target order, so that a rack's failures
//! cluster), the failures grouped by cause, the drift from the majority, and the row per
//! node, the most severe first.
//!
//! Why a page: two hundred rows scroll past in a terminal; a grid of squares where the red
//! ones cluster by rack is what a platform team puts in a ticket or a wiki.

use std::fmt::Write as _;

use super::report::{FleetReport, NodeStatus};
use crate::render::escape;

/// The colour a status is drawn in (the same for squares, badges and rows).
fn colour(status: NodeStatus) -> &'static str {
    match status {
        NodeStatus::Pass => "#2da44e",
        NodeStatus::Skip => "#8c959f",
        NodeStatus::Warn => "#d4a72c",
        NodeStatus::Inconclusive => "#8250df",
        NodeStatus::Fail => "#cf222e",
        NodeStatus::Unreachable => "#953800",
        NodeStatus::Cancelled => "#57606a",
    }
}

fn badge(status: NodeStatus) -> String {
    format!(
        "<span class=\"b\" style=\"background:{}\">{}</span>",
        colour(status),
        status.label()
    )
}

/// The page.
pub fn page(report: &FleetReport) -> String {
    let mut grid = String::new();
    for node in &report.nodes {
        let tip = node
            .problems
            .iter()
            .map(|p| format!("{}: {}", p.check, p.detail))
            .collect::<Vec<_>>()
            .join("\n");
        let _ = write!(
            grid,
            "<a href=\"#n-{id}\" class=\"sq\" style=\"background:{c}\" title=\"{name} {label}{sep}{tip}\"></a>",
            id = escape(&node.name),
            c = colour(node.status),
            name = escape(&node.name),
            label = node.status.label(),
            sep = if tip.is_empty() { "" } else { "\n" },
            tip = escape(&tip),
        );
    }
    let summary: String = report
        .counts()
        .iter()
        .map(|(status, n)| format!("<li><b>{n}</b> {}</li>", status.label()))
        .collect();
    let mut groups = String::new();
    for g in &report.groups {
        let _ = write!(
            groups,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td class=\"n\">{}</td><td>{}</td></tr>",
            badge(g.status),
            escape(&g.cause),
            escape(&g.check),
            g.nodes.len(),
            escape(&g.nodes.join(", "))
        );
    }
    let mut drift = String::new();
    for d in &report.drift {
        let odd = d
            .odd
            .iter()
            .map(|(node, value)| format!("{} <code>{}</code>", escape(node), escape(value)))
            .collect::<Vec<_>>()
            .join(", ");
        let _ = write!(
            drift,
            "<tr><td>{}</td><td><code>{}</code></td><td class=\"n\">{}</td><td>{odd}</td></tr>",
            escape(&d.fact),
            escape(&d.majority),
            d.majority_nodes
        );
    }
    let mut rows = String::new();
    for node in report.nodes_by_severity() {
        let problems = node
            .problems
            .iter()
            .map(|p| {
                format!(
                    "{} <code>{}</code> {}",
                    badge(p.status),
                    escape(&p.check),
                    escape(&p.detail)
                )
            })
            .chain(node.skipped.iter().map(|s| escape(s)))
            .collect::<Vec<_>>()
            .join("<br>");
        // The facts the fleet compares (model, firmware, DPU mode, versions): what a
        // one-node `info` page is read for, and the values behind any drift below.
        let facts = node
            .compared
            .iter()
            .map(|(fact, value)| format!("{} <code>{}</code>", escape(fact), escape(value)))
            .collect::<Vec<_>>()
            .join("<br>");
        let _ = write!(
            rows,
            "<tr id=\"n-{id}\"><td>{name}</td><td>{badge}</td><td class=\"n\">{ms:.0}</td><td><code>{agent}</code></td><td>{problems}</td><td>{facts}</td></tr>",
            id = escape(&node.name),
            name = escape(&node.name),
            badge = badge(node.status),
            ms = node.elapsed_ms,
            agent = escape(&node.agent),
        );
    }
    let none = |html: &str, text: &str| {
        if html.is_empty() {
            format!("<p>{text}</p>")
        } else {
            String::new()
        }
    };
    format!(
        "<!DOCTYPE html><html><head><meta charset=\"utf-8\"><title>dpuctl fleet {command}: {headline}</title>\
         <style>body{{font-family:sans-serif;margin:2em;color:#1f2328}}table{{border-collapse:collapse;margin-bottom:1.5em}}\
         td,th{{border:1px solid #d0d7de;padding:4px 8px;text-align:left;vertical-align:top}}\
         td.n{{text-align:right}}.b{{color:#fff;border-radius:3px;padding:1px 5px;font-size:11px}}\
         .sq{{display:inline-block;width:14px;height:14px;margin:1px;border-radius:2px}}\
         ul.s{{list-style:none;padding:0;display:flex;gap:1.5em}}</style></head><body>\
         <h1>dpuctl fleet {command}: {headline}</h1>\
         <p>{targets} node(s) in {secs:.1} s{cancelled}.</p><ul class=\"s\">{summary}</ul>\
         <div>{grid}</div>\
         <h2>Failures by cause</h2>{no_groups}{groups_table}\
         <h2>Drift from the majority</h2>{no_drift}{drift_table}\
         <h2>Nodes</h2><table><tr><th>node</th><th>result</th><th>ms</th><th>agent</th><th>problems</th><th>facts</th></tr>{rows}</table>\
         </body></html>\n",
        command = escape(&report.command),
        headline = report.headline(),
        targets = report.targets,
        secs = report.elapsed_ms / 1e3,
        cancelled = if report.cancelled {
            "; interrupted, the unfinished nodes are CANCELLED"
        } else {
            ""
        },
        no_groups = none(&groups, "No node has a problem."),
        groups_table = if groups.is_empty() {
            String::new()
        } else {
            format!("<table><tr><th>result</th><th>cause</th><th>check</th><th>nodes</th><th>which</th></tr>{groups}</table>")
        },
        no_drift = none(&drift, "Every compared fact agrees on every node."),
        drift_table = if drift.is_empty() {
            String::new()
        } else {
            format!("<table><tr><th>fact</th><th>majority</th><th>nodes</th><th>the others</th></tr>{drift}</table>")
        },
    )
}

#[cfg(test)]
mod tests {
    use super::page;
    use crate::fleet::report::{FleetReport, NodeOutcome, NodeReport, NodeStatus, Problem};

    #[test]
    fn the_page_names_every_node_and_escapes_what_agents_said() {
        let bad = NodeOutcome {
            problems: vec![Problem::new(
                NodeStatus::Fail,
                "dpu.rdma-port",
                "RDMA port not ACTIVE",
                "mlx5_0 port 1 <script>",
            )],
            ..NodeOutcome::default()
        };
        let nodes = [("gpu-01", NodeOutcome::default()), ("gpu-02", bad)]
            .into_iter()
            .map(|(name, o)| NodeReport {
                name: name.into(),
                agent: "unix:/s".into(),
                status: o.status(),
                elapsed_ms: 3.0,
                problems: o.problems,
                facts: serde_json::Value::Null,
                compared: Default::default(),
                skipped: None,
            })
            .collect();
        let html = page(&FleetReport::new("check", nodes, 12.0, false));
        assert!(html.contains("<title>dpuctl fleet check: 1 FAIL, 1 PASS</title>"));
        assert!(html.contains("<h1>dpuctl fleet check: 1 FAIL, 1 PASS</h1>"));
        // The failing node's row comes first although it is second in the inventory.
        let failing = html.find("<tr id=\"n-gpu-02\"").expect("gpu-02's row");
        let passing = html.find("<tr id=\"n-gpu-01\"").expect("gpu-01's row");
        assert!(failing < passing, "the failing node is listed first");
        assert!(html.contains("id=\"n-gpu-01\"") && html.contains("id=\"n-gpu-02\""));
        assert!(html.contains("RDMA port not ACTIVE"));
        assert!(html.contains("&lt;script&gt;") && !html.contains("<script>"));
        assert!(
            !html.contains("src=") && !html.contains("http"),
            "self-contained"
        );
    }

    /// A one-node `info` page has no drift and no problem to show: its node row carries
    /// the facts the fleet compares, escaped.
    #[test]
    fn a_node_row_shows_the_compared_facts() {
        let node = NodeReport {
            name: "dpu-1".into(),
            agent: "unix:/s".into(),
            status: NodeStatus::Pass,
            elapsed_ms: 3.0,
            problems: Vec::new(),
            facts: serde_json::Value::Null,
            compared: [
                ("firmware".to_owned(), "32.41.1000".to_owned()),
                ("model".to_owned(), "BlueField-3 <x>".to_owned()),
            ]
            .into_iter()
            .collect(),
            skipped: None,
        };
        let html = page(&FleetReport::new("info", vec![node], 5.0, false));
        assert!(html.contains("<th>facts</th>"), "{html}");
        assert!(
            html.contains(
                "firmware <code>32.41.1000</code><br>model <code>BlueField-3 &lt;x&gt;</code>"
            ),
            "{html}"
        );
    }
}
