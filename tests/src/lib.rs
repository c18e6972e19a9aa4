//! Test harness for the mocked gRPC tier: runs the real `dpu-agent` binary on a temp Unix
//! socket (and TCP) against a fixture sysfs tree and a fake SNAP server, and drives it
//! with the real `dpuctl` binary and with generated clients. No root needed.
//!
//! Owns: process management and harnesses for tests (the simulated machine and SNAP come
//! from the shipped `dpu-sim` crate). Must not be a dependency of any shipped crate.

pub mod arm;
pub mod capture;
pub mod command;
pub mod docs;
pub mod fleet;
pub mod harness;
pub mod openai_stub;
pub mod ovs;
pub mod prometheus;
pub mod rpc_server;
pub mod spdk;
pub mod stand_in;

// The machine beneath the agent is simulated by the shipped `dpu-sim` crate; the tests
// keep their paths (`dpu_tests::fixture`, `dpu_tests::fake_snap`).
pub use dpu_sim::{fake_snap, fixture};

/// Marks a test as skipped with a reason. Cargo has no "skipped" state, so the reason is
/// printed and appended to `$DPU_TESTS_SKIP_LOG` (which `.ci/run` prints at the end); with
/// `DPU_TESTS_STRICT=1` (set by CI, which has every prerequisite) a skip is a failure, so
/// nothing is silently passed there.
#[macro_export]
macro_rules! skip {
    ($($reason:tt)+) => {{
        let reason = format!($($reason)+);
        if std::env::var("DPU_TESTS_STRICT").as_deref() == Ok("1") {
            panic!("test prerequisite missing under DPU_TESTS_STRICT=1: {reason}");
        }
        $crate::record_skip(module_path!(), &reason);
        return;
    }};
}

/// Skips a test because the running kernel lacks a feature (a classifier, a module that
/// is not built). CI cannot install a kernel, so this is not a failure under
/// `DPU_TESTS_STRICT=1`; it is a failure under `DPU_TESTS_REQUIRE_KERNEL=1`, which the
/// QEMU lab (a stock Debian kernel with every module) sets. Always logged.
#[macro_export]
macro_rules! skip_kernel_feature {
    ($($reason:tt)+) => {{
        let reason = format!($($reason)+);
        if std::env::var("DPU_TESTS_REQUIRE_KERNEL").as_deref() == Ok("1") {
            panic!("kernel feature missing under DPU_TESTS_REQUIRE_KERNEL=1: {reason}");
        }
        $crate::record_skip(module_path!(), &format!("kernel feature missing: {reason}"));
        return;
    }};
}

/// Whether the test runs with effective uid 0 (from `/proc/self/status`, so no libc
/// binding is needed); the kernel and lab tiers need it.
pub fn running_as_root() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|status| {
            let line = status.lines().find(|l| l.starts_with("Uid:"))?;
            line.split_whitespace().nth(2)?.parse::<u32>().ok()
        })
        == Some(0)
}

/// Prints a skip and appends it to `$DPU_TESTS_SKIP_LOG` when set, so skips are visible
/// even though cargo hides the output of passing tests.
pub fn record_skip(test: &str, reason: &str) {
    use std::io::Write as _;
    eprintln!("SKIPPED: {reason}");
    let thread = std::thread::current();
    let name = thread.name().unwrap_or(test);
    if let Some(path) = std::env::var_os("DPU_TESTS_SKIP_LOG") {
        if let Ok(mut file) = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
        {
            let _ = writeln!(file, "SKIPPED {name}: {reason}");
        }
    }
}
