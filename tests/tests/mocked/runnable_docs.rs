//! Docs that cannot drift: every ```` ```sh mocked ```` block of `README.md` and
//! `docs/*.md` runs here as written (`dpu_tests::docs`; the convention is in
//! `tests/README.md`), in document order, against one agent on the BlueField-3 fixture
//! with the fake SNAP (which serves any remote, so the README's `storage expose` of
//! `192.0.2.10` works). `dpuctl` finds the agent through `DPUCTL_AGENT`; host-side
//! commands (`dpuctl check`) read the BlueField-3 host fixture, because the `dpuctl` on
//! the examples' `PATH` is a two-line wrapper adding `--sys-root` to the built binary, and
//! `dpu-sim` is the built simulator (the README's quick start starts its own agent). The
//! examples run in an empty directory holding `plan.toml`, a copy of
//! `demo/src/example_plan.toml` (the plan the demo's docs point to).

use std::os::unix::fs::PermissionsExt as _;

use dpu_tests::docs;
use dpu_tests::fixture;
use dpu_tests::harness::bin_dir;
use dpu_tests::skip;

use crate::Lab;

#[test]
fn every_mocked_example_in_the_docs_runs_as_written() {
    let blocks = docs::marked_blocks("mocked");
    assert!(
        !blocks.is_empty(),
        "no ```sh mocked block in README.md or docs/*.md: the marking was lost"
    );
    for block in &blocks {
        assert!(
            !block.commands.is_empty(),
            "{}:{}: a marked block without commands",
            block.file,
            block.line
        );
        for need in &block.needs {
            if !docs::on_path(need) {
                skip!("{}:{} needs {need}, not on PATH", block.file, block.line);
            }
        }
    }

    let lab = Lab::start();
    let (_host_dir, host_root) = fixture::bluefield3_host_tempdir();
    let work = tempfile::tempdir().expect("tempdir");
    let cwd = work.path().join("cwd");
    std::fs::create_dir(&cwd).expect("mkdir");
    std::fs::copy(
        docs::repo_root().join("demo/src/example_plan.toml"),
        cwd.join("plan.toml"),
    )
    .expect("copy the example plan");
    let path_dir = work.path().join("bin");
    std::fs::create_dir(&path_dir).expect("mkdir");
    let wrapper = path_dir.join("dpuctl");
    std::fs::write(
        &wrapper,
        format!(
            "#!/bin/sh\nexec '{}' --sys-root '{}' \"$@\"\n",
            bin_dir().join("dpuctl").display(),
            host_root.display()
        ),
    )
    .expect("write the dpuctl wrapper");
    std::fs::set_permissions(&wrapper, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    // The simulator as built; it finds `dpu-agent` beside its own (resolved) path.
    std::os::unix::fs::symlink(bin_dir().join("dpu-sim"), path_dir.join("dpu-sim"))
        .expect("link dpu-sim onto the examples' PATH");

    let agent = lab.agent.endpoint();
    let envs = [("DPUCTL_AGENT", agent.as_str()), ("NO_COLOR", "1")];
    let mut ran = Vec::new();
    for block in &blocks {
        let out = docs::run_block(block, &cwd, &path_dir, &envs);
        if !out.status.success() {
            eprintln!("agent log:\n{}", lab.agent.log());
        }
        docs::assert_block_ran(block, &out);
        let stdout = String::from_utf8_lossy(&out.stdout);
        let shown: String = stdout.chars().take(1500).collect();
        eprintln!("--- {}:{} printed:\n{shown}", block.file, block.line);
        ran.extend(block.commands.iter().map(|c| block.location(c)));
    }
    eprintln!("ran {} documented examples:", ran.len());
    for location in &ran {
        eprintln!("  {location}");
    }
}
