//! Docs that cannot drift, lab tier: every ```` ```sh lab ```` block of `README.md` and
//! `docs/*.md` runs as written (`dpu_tests::docs`; the convention is in
//! `tests/README.md`), in document order, from the repository root with the built
//! `dpuctl` and `dpu-agent` first on `PATH`. The examples bring the lab up themselves
//! (`dpuctl lab up`) and take it down (`dpuctl lab down`); they run last on the boot the
//! tier's other checks used (one boot per tier, issue 32), where `dpuctl lab up` finds the
//! lab up with the same binaries and says so, as it would for a reader who had brought it
//! up already.

use dpu_tests::docs;
use dpu_tests::harness::bin_dir;
use dpu_tests::skip;

use crate::Lab;

/// The marked blocks, found in the tree (checked on every run, with or without a lab).
#[test]
fn the_docs_have_lab_examples() {
    assert!(
        !docs::marked_blocks("lab").is_empty(),
        "no ```sh lab block in README.md or docs/*.md: the marking was lost"
    );
}

/// Runs every lab block on `lab`, which the last of them takes down.
pub(crate) fn every_lab_example_in_the_docs_runs_as_written(_lab: &Lab) {
    let blocks = docs::marked_blocks("lab");
    for block in &blocks {
        for need in &block.needs {
            if !docs::on_path(need) {
                skip!("{}:{} needs {need}, not on PATH", block.file, block.line);
            }
        }
    }
    let root = docs::repo_root();
    let mut ran = Vec::new();
    for block in &blocks {
        let started = std::time::Instant::now();
        let out = docs::run_block(block, &root, bin_dir(), &[("NO_COLOR", "1")]);
        docs::assert_block_ran(block, &out);
        crate::shown(&format!(
            "--- {}:{} ran in {:.1}s and printed:\n{}",
            block.file,
            block.line,
            started.elapsed().as_secs_f64(),
            String::from_utf8_lossy(&out.stdout)
        ));
        ran.extend(block.commands.iter().map(|c| block.location(c)));
    }
    crate::shown(&format!("ran {} documented lab examples:", ran.len()));
    for location in &ran {
        crate::shown(&format!("  {location}"));
    }
}
