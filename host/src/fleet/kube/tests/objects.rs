//! The fleet's Kubernetes objects and answers for the scripted API server
//! (`crate::testing::kube_api`): RBAC denials worded as the API server words them,
//! metadata-only Node lists, agent pods and Nodes.

use serde_json::{json, Value};

use crate::testing::kube_api::{ok, status, Answer};

/// The API server's RBAC denial of `verb` on `resource` for the fleet's service account,
/// worded as the API server words it; `subject` is `pods` or `nodes "dpu-07"`, `scope`
/// `in the namespace "dpu-system"` or `at the cluster scope`.
pub(super) fn forbidden(verb: &str, resource: &str, subject: &str, scope: &str) -> Answer {
    let message = format!(
        "{subject} is forbidden: User \"system:serviceaccount:dpu-system:dpuctl-fleet\" \
         cannot {verb} resource \"{resource}\" in API group \"\" {scope}"
    );
    status(403, "Forbidden", &message)
}

/// A metadata-only list of Nodes (what `list_metadata` asks for): names and labels.
pub(super) fn node_metadata_list(nodes: &[(&str, Value)], next: Option<&str>) -> Answer {
    let items: Vec<Value> = nodes
        .iter()
        .map(|(name, labels)| {
            json!({"apiVersion": "meta.k8s.io/v1", "kind": "PartialObjectMetadata",
                "metadata": {"name": name, "labels": labels}})
        })
        .collect();
    let mut metadata = json!({"resourceVersion": "1000"});
    if let Some(next) = next {
        metadata["continue"] = json!(next);
    }
    ok(
        json!({"apiVersion": "meta.k8s.io/v1", "kind": "PartialObjectMetadataList",
        "metadata": metadata, "items": items}),
    )
}

/// An agent pod on `node` (None: not scheduled) with this phase, readiness and IP.
pub(super) fn agent_pod(
    name: &str,
    node: Option<&str>,
    phase: &str,
    ready: bool,
    ip: Option<&str>,
) -> Value {
    let mut spec = json!({"containers": [{"name": "dpu-agent", "image": "dpu-agent"}],
        "hostNetwork": true});
    if let Some(node) = node {
        spec["nodeName"] = json!(node);
    }
    let mut status = json!({"phase": phase, "conditions": [
        {"type": "Ready", "status": if ready { "True" } else { "False" }}]});
    if let Some(ip) = ip {
        status["podIP"] = json!(ip);
    }
    json!({"apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": "dpu-system",
            "creationTimestamp": "2025-01-01T00:00:00Z",
            "labels": {"app.kubernetes.io/name": "dpu-agent"}},
        "spec": spec, "status": status})
}

/// A Node with these conditions (`{type, status, lastTransitionTime, ...}` values).
pub(super) fn node(name: &str, conditions: Vec<Value>) -> Value {
    json!({"apiVersion": "v1", "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
        "status": {"conditions": conditions}})
}
