//! The emitter's output is checked two ways: exact text for the layout people read, and a
//! round trip through PyYAML (a YAML 1.1 parser, the stricter one about `on`/`yes`) for
//! correctness on awkward strings. Without python3 and PyYAML the round trip is skipped
//! with a note on stderr; Debian's `python3-yaml` provides it.

use super::*;
use serde_json::json;
use std::io::Write as _;
use std::process::{Command, Stdio};

/// Parses a YAML stream with PyYAML and returns its documents as JSON values, or `None`
/// when python3 or PyYAML is not installed.
pub fn pyyaml_load_all(yaml: &str) -> Option<Vec<Value>> {
    let script = "import sys, json, yaml\n\
                  json.dump(list(yaml.safe_load_all(sys.stdin.read())), sys.stdout)";
    let mut child = Command::new("python3")
        .args(["-c", script])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .ok()?;
    child
        .stdin
        .take()?
        .write_all(yaml.as_bytes())
        .unwrap_or_else(|e| panic!("write to python3: {e}"));
    let output = child.wait_with_output().ok()?;
    let stderr = String::from_utf8_lossy(&output.stderr);
    if stderr.contains("No module named 'yaml'") {
        eprintln!("note: PyYAML is not installed; YAML round trip skipped");
        return None;
    }
    assert!(
        output.status.success(),
        "PyYAML rejected the output:\n{stderr}\n{yaml}"
    );
    Some(serde_json::from_slice(&output.stdout).unwrap_or_else(|e| panic!("{e}")))
}

#[test]
fn block_layout() {
    let value = json!({
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "vllm-demo", "labels": {"app.kubernetes.io/managed-by": "dpuctl"}},
        "spec": {
            "ports": [{"name": "http", "port": 8000}],
            "selector": {},
            "args": ["--port", "8000", "on"],
            "matrix": [[1, 2], []],
        }
    });
    let expected = "\
---
apiVersion: v1
kind: Service
metadata:
  labels:
    app.kubernetes.io/managed-by: dpuctl
  name: vllm-demo
spec:
  args:
    - \"--port\"
    - \"8000\"
    - \"on\"
  matrix:
    -
      - 1
      - 2
    - []
  ports:
    - name: http
      port: 8000
  selector: {}
";
    assert_eq!(to_yaml(&[value]), expected);
}

#[test]
fn scalars_keep_their_type() {
    let cases = [
        (json!(null), "null"),
        (json!(true), "true"),
        (json!(7), "7"),
        (json!(-7), "-7"),
        (json!(2.0), "2.0"),
        (json!(0.25), "0.25"),
        (json!("7"), "\"7\""),
        (json!("yes"), "\"yes\""),
        (json!("Off"), "\"Off\""),
        (json!(""), "\"\""),
        (json!("nvidia.com/gpu"), "nvidia.com/gpu"),
        (json!("a: b"), "\"a: b\""),
        (json!("tab\there"), "\"tab\\there\""),
    ];
    for (value, text) in cases {
        let mut out = String::new();
        document(&mut out, &value);
        assert_eq!(out, format!("{text}\n"), "{value}");
    }
}

/// Strings that trip YAML emitters: indicators, keywords of YAML 1.1 and 1.2, numbers in
/// every base, dates, comments, line breaks, control characters and non-ASCII text.
const AWKWARD: &[&str] = &[
    "",
    " ",
    " lead",
    "trail ",
    "a: b",
    "a:b",
    "a #b",
    "#x",
    "- x",
    "-",
    "--",
    "---",
    "...",
    "?",
    "? x",
    ":",
    "[x]",
    "{x}",
    "*a",
    "&a",
    "!t",
    "%x",
    "@x",
    "`x",
    "|",
    ">",
    "'",
    "\"",
    "\\",
    "\n",
    "a\nb",
    "a\r\nb",
    "\t",
    "\u{7}",
    "\u{7f}",
    "\u{85}",
    "\u{a0}",
    "\u{2028}",
    "\u{2029}",
    "\u{feff}",
    "\u{fffe}",
    "é",
    "日本語",
    "🚀",
    "y",
    "Y",
    "n",
    "N",
    "yes",
    "No",
    "ON",
    "off",
    "true",
    "False",
    "null",
    "Null",
    "~",
    "NULL",
    "0",
    "-1",
    "+1",
    "1.5",
    "1e3",
    "1E3",
    "0x10",
    "0o7",
    "012",
    "0b1",
    "1_000",
    ".5",
    ".inf",
    "-.inf",
    ".nan",
    "NaN",
    "Infinity",
    "1:20",
    "190:20:30",
    "2026-11-30",
    "2026-11-30T05:00:00Z",
    "<<",
    "=",
    "a,b",
    "key=value",
    "$(HOME)",
    "http://x/y?z#w",
    "/dev/shm",
    "C:\\x",
];

#[test]
fn awkward_strings_round_trip_through_pyyaml() {
    let strings: Vec<Value> = AWKWARD.iter().map(|s| json!(s)).collect();
    let keyed: serde_json::Map<String, Value> = AWKWARD
        .iter()
        .map(|s| ((*s).to_owned(), json!(s)))
        .collect();
    let docs = [
        Value::Array(strings),
        Value::Object(keyed),
        json!({"nested": [{"a": [[], {}, [1, [2.5, "x"]]], "b": {"c": null}}], "n": 1.0}),
        json!("top-level scalar"),
        json!([]),
    ];
    let yaml = to_yaml(&docs);
    if let Some(back) = pyyaml_load_all(&yaml) {
        assert_eq!(back, docs, "{yaml}");
    }
}
