//! Publishing fleet results onto Kubernetes Nodes: labels a nodeAffinity can match (keep
//! training pods off a node whose `dpu-offload/check` is `FAIL`) and a node condition
//! that `kubectl describe node` shows next to the kubelet's own.
//!
//! Labels go in a JSON merge patch of `metadata.labels` holding only our keys: every other
//! label is left as it is, no `resourceVersion` is needed (no conflict with the kubelet or
//! a controller labelling the node at the same time), and it needs only `patch nodes`.
//! Server-side apply would also remove keys we stopped sending, but it answers 409 when
//! another manager (someone's `kubectl label`) owns one of our keys, unless forced, and
//! forcing silently takes ownership; a fleet run should neither fail nor do that.
//!
//! The condition goes through the status subresource (`nodes/status`, the only way to
//! write a Node's status) as a strategic merge patch: Node conditions merge by `type`, so
//! the kubelet's conditions and other tools' (node-problem-detector's) stay. A JSON merge
//! patch would replace the whole list. `lastTransitionTime` is kept while the status stays
//! the same (read from the Node first, which needs `get nodes`), so "unhealthy since" is
//! true; `lastHeartbeatTime` is set on every publish. Both patches carry the field
//! manager [`FIELD_MANAGER`], so `kubectl get node -o yaml --show-managed-fields` says who
//! wrote them.

use std::collections::{BTreeMap, HashMap};
use std::time::Duration;

use k8s_openapi::api::core::v1::{Node, NodeCondition};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;
use kube::api::{Api, Patch, PatchParams};
use kube::Client;
use serde_json::json;
use tokio::task::JoinSet;

use super::error::{bounded, KubeError};
use super::names;

/// The field manager of every patch: how the Node's managedFields name dpuctl.
pub const FIELD_MANAGER: &str = "dpuctl-fleet";

/// Upper bound of one request (read, label patch, status patch).
const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);

/// Longest condition message sent (metav1.Condition's limit); a longer one is cut on a
/// character boundary and ends with `…`.
pub const MAX_MESSAGE_BYTES: usize = 32 * 1024;

/// What to write onto one Node.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeMarks {
    /// The Node's name.
    pub node: String,
    /// Labels to set, e.g. `dpu-offload/check` = `PASS`; other labels are untouched.
    pub labels: BTreeMap<String, String>,
    /// The condition to set; `None` leaves the Node's status alone.
    pub condition: Option<NodeConditionMark>,
}

/// One node condition, named after its healthy state: `status` is `True` when healthy.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeConditionMark {
    /// The condition type, e.g. `DpuOffloadHealthy`.
    pub kind: String,
    /// Whether the node is healthy: the condition's status `True`/`False`.
    pub healthy: bool,
    /// CamelCase reason, e.g. `ChecksPassed`, `AgentUnreachable`.
    pub reason: String,
    /// A sentence for `kubectl describe node`.
    pub message: String,
}

/// How publishing one node went.
#[derive(Debug)]
pub struct PublishOutcome {
    /// The Node's name.
    pub node: String,
    /// `Ok` when its labels and condition were written.
    pub result: Result<(), KubeError>,
}

/// Applies every node's marks, at most `parallel` nodes at once (at least one), one
/// failure never stopping the others. Outcomes come back in the order of `marks`. Per
/// node: labels first, then the condition; the first failure ends that node's turn.
/// Marks that break Kubernetes' rules are refused without a request. Needs `patch nodes`,
/// and with a condition `get nodes` and `patch nodes/status`.
pub async fn publish(client: &Client, marks: &[NodeMarks], parallel: usize) -> Vec<PublishOutcome> {
    let permits = std::sync::Arc::new(tokio::sync::Semaphore::new(parallel.max(1)));
    let mut tasks = JoinSet::new();
    let mut index_of = HashMap::new();
    for (index, mark) in marks.iter().enumerate() {
        let client = client.clone();
        let permits = std::sync::Arc::clone(&permits);
        let mark = mark.clone();
        let task = tasks.spawn(async move {
            // The semaphore is never closed: the permit is always granted.
            let _permit = permits.acquire_owned().await.ok();
            publish_one(&client, &mark).await
        });
        index_of.insert(task.id(), index);
    }
    let mut results: Vec<Option<Result<(), KubeError>>> = marks.iter().map(|_| None).collect();
    while let Some(joined) = tasks.join_next_with_id().await {
        let (id, result) = match joined {
            Ok((id, result)) => (id, result),
            Err(source) => {
                let id = source.id();
                let node = index_of
                    .get(&id)
                    .and_then(|i| marks.get(*i))
                    .map(|m| m.node.clone())
                    .unwrap_or_default();
                (id, Err(KubeError::Task { node, source }))
            }
        };
        if let Some(slot) = index_of.get(&id).and_then(|i| results.get_mut(*i)) {
            *slot = Some(result);
        }
    }
    marks
        .iter()
        .zip(results)
        .map(|(mark, result)| PublishOutcome {
            node: mark.node.clone(),
            // Every task was joined above; a missing slot cannot happen, and reads as a
            // cancelled task rather than a success if it ever did.
            result: result.unwrap_or_else(|| {
                Err(KubeError::Invalid {
                    what: "node",
                    value: mark.node.clone(),
                    problem: "its publishing task never finished".to_owned(),
                })
            }),
        })
        .collect()
}

/// Labels, then the condition, of one node.
async fn publish_one(client: &Client, mark: &NodeMarks) -> Result<(), KubeError> {
    validate(mark)?;
    let node = &mark.node;
    let api: Api<Node> = Api::all(client.clone());
    let params = PatchParams {
        field_manager: Some(FIELD_MANAGER.to_owned()),
        ..PatchParams::default()
    };
    if !mark.labels.is_empty() {
        let body = json!({"metadata": {"labels": mark.labels}});
        bounded(
            || format!("label node {node}"),
            "patch",
            "nodes",
            REQUEST_TIMEOUT,
            api.patch(node, &params, &Patch::Merge(&body)),
        )
        .await?;
    }
    if let Some(mark) = &mark.condition {
        let current = bounded(
            || format!("get node {node}"),
            "get",
            "nodes",
            REQUEST_TIMEOUT,
            api.get(node),
        )
        .await?;
        let previous = current
            .status
            .as_ref()
            .and_then(|s| s.conditions.as_ref())
            .and_then(|c| c.iter().find(|c| c.type_ == mark.kind));
        let condition = next_condition(previous, mark, Time(Timestamp::now()));
        let body = json!({"status": {"conditions": [condition]}});
        bounded(
            || format!("set condition {} on node {node}", mark.kind),
            "patch",
            "nodes/status",
            REQUEST_TIMEOUT,
            api.patch_status(node, &params, &Patch::Strategic(&body)),
        )
        .await?;
    }
    Ok(())
}

/// The condition to write: `lastTransitionTime` kept from `previous` when the status is
/// unchanged, `now` otherwise; `lastHeartbeatTime` always `now`.
pub(super) fn next_condition(
    previous: Option<&NodeCondition>,
    mark: &NodeConditionMark,
    now: Time,
) -> NodeCondition {
    let status = if mark.healthy { "True" } else { "False" };
    let transition = previous
        .filter(|p| p.status == status)
        .and_then(|p| p.last_transition_time.clone())
        .unwrap_or_else(|| now.clone());
    NodeCondition {
        type_: mark.kind.clone(),
        status: status.to_owned(),
        reason: Some(mark.reason.clone()),
        message: Some(cut(&mark.message, MAX_MESSAGE_BYTES)),
        last_heartbeat_time: Some(now),
        last_transition_time: Some(transition),
    }
}

/// `text` cut to at most `max` bytes on a character boundary, ending with `…` when cut.
fn cut(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_owned();
    }
    let ellipsis = '…';
    let mut end = max.saturating_sub(ellipsis.len_utf8());
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}{ellipsis}", &text[..end])
}

/// Refuses marks the API server would refuse (or that would overwrite what Kubernetes
/// owns), naming the value, before anything of the node is sent.
fn validate(mark: &NodeMarks) -> Result<(), KubeError> {
    names::dns_subdomain(&mark.node).map_err(|problem| KubeError::Invalid {
        what: "node name",
        value: mark.node.clone(),
        problem,
    })?;
    for (key, value) in &mark.labels {
        names::label_key(key)
            .map_err(|problem| format!("key: {problem}"))
            .and_then(|()| names::label_value(value).map_err(|p| format!("value: {p}")))
            .map_err(|problem| KubeError::InvalidLabel {
                node: mark.node.clone(),
                key: key.clone(),
                value: value.clone(),
                problem,
            })?;
    }
    if let Some(condition) = &mark.condition {
        let invalid = |field, value: &str, problem| KubeError::InvalidCondition {
            node: mark.node.clone(),
            field,
            value: value.to_owned(),
            problem,
        };
        names::condition_type(&condition.kind)
            .map_err(|problem| invalid("type", &condition.kind, problem))?;
        names::condition_reason(&condition.reason)
            .map_err(|problem| invalid("reason", &condition.reason, problem))?;
    }
    Ok(())
}
