//! What a caller asks of `demo training-storage`.

use std::path::PathBuf;

use super::plan::ExecutorKind;

/// `dpuctl demo training-storage` as parameters.
#[derive(Debug, Clone)]
pub struct TrainingStorage {
    /// The demo plan (TOML).
    pub plan: PathBuf,
    /// Resolve the plan and list every object; run nothing.
    pub dry_run: bool,
    /// Run with this executor instead of the plan's.
    pub executor: Option<ExecutorKind>,
    /// Where the caller will write the HTML review (named in the review step's notes).
    pub report: Option<PathBuf>,
    /// A run id to reuse; default: the start time.
    pub run_id: Option<String>,
    /// A CA certificate to trust for an HTTPS ingress (the serving checks).
    pub ingress_ca: Option<PathBuf>,
}
