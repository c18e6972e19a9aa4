//! `dpuctl demo training-storage --plan FILE`: the course chapter's end-to-end demo
//! (storage ready → communication verified → Kubeflow training → merge → vLLM serving →
//! review and cleanup), driven by one plan file. This module holds the parts that need no
//! cluster: the plan ([`plan`]) and the Kubernetes objects built from it
//! ([`k8s_objects`], printed as YAML by [`yaml`] for `--dry-run`, labelled with a
//! [`run_id`] so cleanup finds them), so they are tested without one.

pub(crate) mod args;
pub(crate) mod k8s_objects;
pub(crate) mod plan;
mod plan_spans;
mod plan_validate;
pub(crate) mod run;
pub(crate) mod run_id;
pub(crate) mod serving;
pub(crate) mod yaml;
