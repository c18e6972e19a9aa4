//! Docs that cannot drift, lab tier: every ```` ```sh lab ```` block of `README.md` and
//! `docs/*.md` runs as written (`dpu_tests::docs`; the convention is in
//! `tests/README.md`), in document order, from the repository root with the built
//! `dpuctl` and `dpu-agent` first on `PATH`: the examples bring the lab up themselves
//! (`dpuctl lab up` installs the binaries beside that `dpuctl`), and the lab is taken down
//! afterwards whatever happened.

use dpu_tests::docs;
use dpu_tests::harness::bin_dir;
use dpu_tests::skip;

use crate::LabDown;

#[test]
fn every_lab_example_in_the_docs_runs_as_written() {
    let blocks = docs::marked_blocks("lab");
    assert!(
        !blocks.is_empty(),
        "no ```sh lab block in README.md or docs/*.md: the marking was lost"
    );
    if std::env::var("DPU_TEST_LAB").as_deref() != Ok("1") {
        skip!("the QEMU lab tier runs with DPU_TEST_LAB=1 (boots two VMs, a few minutes)");
    }
    if !dpu_tests::running_as_root() {
        skip!("the QEMU lab needs root (apt for its host tools, network namespaces in the guests)");
    }
    for block in &blocks {
        for need in &block.needs {
            if !docs::on_path(need) {
                skip!("{}:{} needs {need}, not on PATH", block.file, block.line);
            }
        }
    }
    let _down = LabDown::new();
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
    eprintln!("ran {} documented lab examples:", ran.len());
    for location in &ran {
        eprintln!("  {location}");
    }
}
