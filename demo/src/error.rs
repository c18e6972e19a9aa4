//! Why a demo could not start (a run that starts ends in a report, whatever its verdict):
//! its own file so both executors' runs return it without importing each other.

use dpu_host::param::ParamError;

use super::local_exec::RunDirError;

/// Why a demo could not start.
#[derive(Debug, thiserror::Error)]
pub enum DemoError {
    /// The plan is invalid (a usage error: exit 2, message as is).
    #[error("{0}")]
    InvalidPlan(String),
    /// A parameter that cannot be run (the run id), named by its field.
    #[error("{0}")]
    Param(#[from] ParamError),
    /// The run's directory could not be created.
    #[error(transparent)]
    RunDir(#[from] RunDirError),
    /// The plan asks for the Kubernetes executor, and this build has none.
    #[error(
        "this dpuctl was built without the Kubernetes executor: rebuild with \
         `cargo build --release -p dpuctl --features kube`, or use --executor local"
    )]
    NoKubeExecutor,
    /// The Kubernetes executor found no cluster to talk to.
    #[cfg(feature = "kube")]
    #[error(transparent)]
    Cluster(#[from] super::kube_exec::ConnectError),
}
