//! `dpuctl fleet ...`: the single-node commands asked of every node of a fleet at once.
//!
//! Why: a platform team has a rack, then a cluster, not one BlueField. Finding the one bad
//! node among two hundred takes asking all of them concurrently (one that hangs or refuses
//! never hides the others), grouping the failures by cause, and showing where a node
//! differs from the majority.
//!
//! Owns: the [`target`]s and where they come from ([`inventory`] files, [`select`]ion,
//! Kubernetes discovery behind the `kube` feature, nodes that are [`not_ready`]), the
//! bounded concurrent [`runner`] and its [`deadline`] policy, the
//! per-node operations, the aggregated report, the RoCE pair tests and publishing results
//! to Kubernetes. Like the rest of this library it neither prints nor parses argv.

pub mod deadline;
pub mod dpu_checks;
pub mod dpu_facts;
pub mod experiment;
pub mod health_causes;
pub mod html;
pub mod inventory;
#[cfg(feature = "kube")]
pub mod kube;
pub mod not_ready;
pub mod on_host;
pub mod ops;
pub mod pairs;
#[cfg(feature = "kube")]
pub mod publish_marks;
pub mod report;
pub mod runner;
pub mod select;
pub mod target;
pub mod textfile;
