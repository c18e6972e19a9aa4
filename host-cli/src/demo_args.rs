//! The flags of `dpuctl demo ...`, next to the code that uses them.

use std::path::PathBuf;

use clap::{Args, ValueEnum};

/// Which executor runs the plan's steps (overrides `[executor] kind`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum ExecutorChoice {
    /// Processes on this machine: no Kubernetes, no Kubeflow (labs and CI).
    Local,
    /// Kubeflow and vLLM objects in a cluster (needs a dpuctl built with `--features kube`).
    Kubernetes,
}

impl From<ExecutorChoice> for dpu_demo::plan::ExecutorKind {
    fn from(choice: ExecutorChoice) -> Self {
        match choice {
            ExecutorChoice::Local => Self::Local,
            ExecutorChoice::Kubernetes => Self::Kubernetes,
        }
    }
}

/// `demo training-storage` flags.
#[derive(Debug, Args)]
pub(crate) struct TrainingStorageArgs {
    /// The demo plan (TOML; see examples/demo/plan-local.toml and docs/demo.md).
    #[arg(long, value_name = "FILE")]
    pub(crate) plan: PathBuf,
    /// Print the plan and every Kubernetes object it would create, as YAML; run nothing.
    #[arg(long)]
    pub(crate) dry_run: bool,
    /// Run the steps with this executor instead of the plan's.
    #[arg(long, value_enum)]
    pub(crate) executor: Option<ExecutorChoice>,
    /// Write the review (chapter 12.4) as one self-contained HTML page.
    #[arg(long, value_name = "FILE.html")]
    pub(crate) report: Option<PathBuf>,
    /// A run id to reuse (labels and work directory); default: the start time.
    #[arg(long)]
    pub(crate) run_id: Option<String>,
}

/// `demo check-serving` flags.
#[derive(Debug, Args)]
pub(crate) struct CheckServingArgs {
    /// The demo plan: its `[serving]` model and archived answers are checked.
    #[arg(long, value_name = "FILE")]
    pub(crate) plan: PathBuf,
    /// Check this base URL instead of the one the plan gives.
    #[arg(long)]
    pub(crate) url: Option<String>,
    /// Seconds to wait for `/health` to answer 200.
    #[arg(long, default_value_t = 300)]
    pub(crate) health_timeout: u64,
    /// A CA certificate (PEM) to trust for an HTTPS ingress, besides the system roots.
    #[arg(long, value_name = "FILE")]
    pub(crate) ca: Option<PathBuf>,
}
