//! `--metrics-file`: a check run leaves node_exporter a textfile whose state sets say what
//! each check reached, the same as the JSON says, and a file it cannot write is an error
//! (exit 2) that names it instead of a silent success.

use dpu_tests::fixture;
use dpu_tests::harness::dpuctl;
use serde_json::Value;

#[test]
fn check_writes_each_result_as_a_state_set_matching_the_json() {
    let (_dir, root) = fixture::bluefield3_host_tempdir();
    let root = root.to_str().expect("utf-8 path");
    let out_dir = tempfile::tempdir().expect("tempdir");
    let prom = out_dir.path().join("dpu.prom");
    let prom_arg = prom.to_str().expect("utf-8 path");
    let out = dpuctl(&[
        "--sys-root",
        root,
        "-o",
        "json",
        "check",
        "--no-agent",
        "--metrics-file",
        prom_arg,
    ]);
    assert_eq!(out.status.code(), Some(1), "the fixture's x8 link fails");
    let results: Value = serde_json::from_slice(&out.stdout).expect("JSON");
    let text = std::fs::read_to_string(&prom).expect("the metrics file");
    let results = results.as_array().expect("a list");
    assert!(!results.is_empty());
    for r in results {
        let (id, status) = (
            r["id"].as_str().expect("id"),
            r["status"].as_str().expect("status"),
        );
        // Per-port checks name their rail, so each rail's result is its own series.
        let rail = r["subject"]
            .as_str()
            .map_or(String::new(), |rail| format!(",rail=\"{rail}\""));
        for state in ["pass", "warn", "fail", "skip"] {
            let want = u8::from(state == status);
            let line =
                format!("dpu_check_status{{check=\"{id}\"{rail},status=\"{state}\"}} {want}");
            assert!(
                text.lines().any(|l| l == line),
                "missing {line:?} in:\n{text}"
            );
        }
    }
    assert!(
        text.contains("dpu_check_last_run_timestamp_seconds "),
        "{text}"
    );
    // Only the file itself is left in the directory (the temporary one was renamed).
    assert_eq!(std::fs::read_dir(out_dir.path()).expect("list").count(), 1);

    // Negative control: a directory that does not exist is an error naming the path.
    let missing = out_dir.path().join("no-such-dir/dpu.prom");
    let out = dpuctl(&[
        "--sys-root",
        root,
        "check",
        "--no-agent",
        "--metrics-file",
        missing.to_str().expect("utf-8 path"),
    ]);
    assert_eq!(
        out.status.code(),
        Some(2),
        "a metrics file that cannot be written is an error"
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("no-such-dir"), "{stderr}");
}
