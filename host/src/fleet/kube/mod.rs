//! Kubernetes as the fleet's engine: discovery of the agent DaemonSet's pods and publishing
//! results onto Nodes.
//!
//! Why: in a cluster the DaemonSet already knows where every agent runs, and the
//! scheduler only steers by what is written on Nodes. [`discover`] turns the agent's pods
//! into [`Target`](crate::fleet::target::Target)s (reporting the pods that are not ready
//! instead of dropping them); [`publish`] writes each node's result as labels and a
//! condition. The RBAC both need is deploy/kubernetes/dpuctl-fleet.yaml; the unit tests
//! hold that manifest to the exact requests this code makes.

mod discovery;
mod error;
mod names;
mod publish;

pub use discovery::{
    discover, target_labels, Discovered, Discovery, NotReadyPod, NODE_LABEL_PREFIX, TOPOLOGY_LABELS,
};
pub use error::KubeError;
pub use publish::{
    publish, NodeConditionMark, NodeMarks, PublishOutcome, FIELD_MANAGER, MAX_MESSAGE_BYTES,
};

#[cfg(test)]
mod tests;
