//! `dpuctl demo training-storage --plan FILE`: the course chapter's end-to-end demo
//! (storage ready → communication verified → Kubeflow training → merge → vLLM serving →
//! review and cleanup), driven by one plan file ([`plan`]). [`run`] takes the steps in
//! order with the accounting of the whole run around them; the local executor
//! ([`local_exec`]) runs them as processes here, the Kubernetes one (feature `kube`)
//! creates the objects [`k8s_objects`] builds (printed as YAML by [`yaml`] for
//! `--dry-run`, labelled with a [`run_id`] so cleanup finds them). Storage
//! ([`storage_step`]) and serving ([`serving`]) checks are the same for both.

pub mod error;
pub mod fingerprint;
pub mod k8s_objects;
#[cfg(feature = "kube")]
pub mod kube_exec;
#[cfg(feature = "kube")]
mod kube_exec_diagnose;
#[cfg(feature = "kube")]
pub mod kube_exec_training;
#[cfg(feature = "kube")]
mod kube_run;
pub mod local_exec;
pub mod params;
pub mod plan;
pub mod report;
pub mod review_html;
pub mod run;
pub mod run_id;
pub mod serving;
mod serving_error;
mod serving_stream;
pub mod step_report;
pub mod steps;
pub mod storage_step;
pub mod yaml;

#[cfg(test)]
mod tests;
