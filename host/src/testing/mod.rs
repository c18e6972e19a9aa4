//! Test support other crates' tests share (feature `testing`; always in this crate's own
//! unit tests).
//!
//! Why a feature: a fake written twice drifts twice. The scripted Kubernetes API server
//! served `dpu-host`'s fleet tests and, as a second copy, `dpu-demo`'s executor tests; it
//! lives here once, and `dpu-demo` turns it on through a dev-dependency
//! (`dpu-host = { features = ["testing"] }`), which never reaches a shipped build. It is
//! compiled only with the `kube` feature too, so a test build without Kubernetes compiles
//! no kube-rs.

#[cfg(feature = "kube")]
pub mod kube_api;
