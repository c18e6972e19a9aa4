//! Test harness for the mocked gRPC tier: runs the real `dpu-agent` binary on a temp Unix
//! socket (and TCP) against a fixture sysfs tree and a fake SNAP server, and drives it
//! with the real `dpuctl` binary and with generated clients. No root needed.
//!
//! Owns: process management, fixtures and fakes for tests. Must not be a dependency of
//! any shipped crate.

pub mod fake_snap;
pub mod fixture;
pub mod harness;

/// Marks a test as skipped with a reason. Cargo has no "skipped" state, so the reason is
/// printed; with `DPU_TESTS_STRICT=1` (set by CI, which has every prerequisite) a skip is
/// a failure, so nothing is silently passed there.
#[macro_export]
macro_rules! skip {
    ($($reason:tt)+) => {{
        let reason = format!($($reason)+);
        if std::env::var("DPU_TESTS_STRICT").as_deref() == Ok("1") {
            panic!("test prerequisite missing under DPU_TESTS_STRICT=1: {reason}");
        }
        eprintln!("SKIPPED: {reason}");
        return;
    }};
}
