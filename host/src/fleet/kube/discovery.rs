//! Kubernetes discovery: the fleet is the agent DaemonSet's pods. Each Running and Ready
//! pod with a node and an address becomes a [`Target`] named after its Node; every other
//! pod is reported as a [`NotReadyPod`], because a node whose agent is down is exactly the
//! node a fleet check must not silently forget.
//!
//! The DaemonSet uses `hostNetwork`, so a pod's IP is its node's IP and the agent's TCP
//! listener is reached there. The Node labels that place a node (zone, region, and the
//! `dpu-offload/` ones such as rack and rail) come from one paginated, metadata-only list
//! of the Nodes, so a 2,000-node cluster costs a few requests, not one per node.

use std::collections::{BTreeMap, HashMap};
use std::time::Duration;

use dpu_proto::Endpoint;
use k8s_openapi::api::core::v1::{Node, Pod, PodCondition, PodStatus};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::api::{Api, ListParams, ObjectList};
use kube::Client;

use super::error::{bounded, KubeError};
use super::names;
use crate::agent::connect::TlsFiles;
use crate::fleet::target::Target;

/// Upper bound of one list request: the API server answers in milliseconds, so this only
/// catches a dead connection.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);

/// Node label prefix whose labels become target labels with the prefix dropped
/// (`dpu-offload/rack=r07` becomes `rack=r07`), so `--select rack=r07` and the RoCE pair
/// groups read the same whether the fleet came from an inventory or from Kubernetes.
pub const NODE_LABEL_PREFIX: &str = "dpu-offload/";

/// Well-known topology labels kept as target labels, under their short names.
pub const TOPOLOGY_LABELS: [(&str, &str); 2] = [
    ("topology.kubernetes.io/zone", "zone"),
    ("topology.kubernetes.io/region", "region"),
];

/// Where the agent's pods are and how to reach them.
#[derive(Debug, Clone)]
pub struct Discovery {
    /// The DaemonSet's namespace.
    pub namespace: String,
    /// The label selector of its pods, e.g. `app.kubernetes.io/name=dpu-agent`.
    pub label_selector: String,
    /// The agent's gRPC TCP port on each node (50051).
    pub agent_port: u16,
    /// Mutual TLS towards every agent, copied into every target.
    pub tls: Option<TlsFiles>,
    /// Objects per list request (`limit`, following `continue`), e.g. 500: bounds the
    /// API server's work and the size of each answer.
    pub page_size: u32,
}

/// What discovery found: the nodes to ask, and the agent pods that cannot be asked.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Discovered {
    /// One per node with a Running and Ready agent pod, sorted by name.
    pub targets: Vec<Target>,
    /// The agent pods left out, and why, sorted by pod name.
    pub not_ready: Vec<NotReadyPod>,
}

/// An agent pod that is not a target, reported so the node it should serve is not lost.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NotReadyPod {
    /// The pod's name.
    pub pod: String,
    /// The node it is scheduled to; `None` when not scheduled.
    pub node: Option<String>,
    /// The pod's phase (`Pending`, `Running`, `Failed`, ...; `Unknown` when absent).
    pub phase: String,
    /// Why it is left out, e.g. `CrashLoopBackOff: back-off 5m0s restarting ...`,
    /// `not scheduled to a node`, `Terminating`.
    pub reason: String,
}

/// Lists the agent pods (paginated with `limit`/`continue`), keeps the Running and Ready
/// ones with a pod IP and a node, and maps each to a [`Target`] named after its Node,
/// reached at `tcp:<podIP>:<agent_port>`, labelled from the Node (see
/// [`NODE_LABEL_PREFIX`], [`TOPOLOGY_LABELS`]). The other pods come back in
/// [`Discovered::not_ready`]. Needs `list pods` in the namespace and `list nodes`.
pub async fn discover(client: &Client, discovery: &Discovery) -> Result<Discovered, KubeError> {
    validate(discovery)?;
    let pods_api: Api<Pod> = Api::namespaced(client.clone(), &discovery.namespace);
    let action = || {
        format!(
            "list pods -l {} in namespace {}",
            discovery.label_selector, discovery.namespace
        )
    };
    let pods = all_pages(discovery.page_size, |params| {
        let params = params.labels(&discovery.label_selector);
        let pods_api = &pods_api;
        async move {
            let list = pods_api.list(&params);
            bounded(action, "list", "pods", REQUEST_TIMEOUT, list).await
        }
    })
    .await?;

    let mut ready = Vec::new();
    let mut not_ready = Vec::new();
    for pod in pods {
        match judge(&pod) {
            Ok(pod) => ready.push(pod),
            Err(pod) => not_ready.push(pod),
        }
    }
    // Two ready agents on one node (a surge rollout): the newest serves it, the other is
    // reported, so a node's name stays unique in the fleet.
    ready.sort_by(|a, b| {
        a.node
            .cmp(&b.node)
            .then_with(|| b.created.cmp(&a.created))
            .then_with(|| a.name.cmp(&b.name))
    });
    let mut chosen: Vec<ReadyPod> = Vec::new();
    for pod in ready {
        match chosen.last() {
            Some(kept) if kept.node == pod.node => not_ready.push(NotReadyPod {
                reason: format!("another ready agent pod ({}) serves the node", kept.name),
                pod: pod.name,
                node: Some(pod.node),
                phase: "Running".to_owned(),
            }),
            _ => chosen.push(pod),
        }
    }
    not_ready.sort_by(|a, b| a.pod.cmp(&b.pod));

    let labels = if chosen.is_empty() {
        HashMap::new()
    } else {
        node_labels(client, discovery.page_size).await?
    };
    let targets = chosen
        .into_iter()
        .map(|pod| {
            let mut target = Target::new(
                pod.node.clone(),
                Endpoint::Tcp {
                    host: pod.ip,
                    port: discovery.agent_port,
                },
            );
            target.tls = discovery.tls.clone();
            target.labels = labels.get(&pod.node).map(target_labels).unwrap_or_default();
            target.node = Some(pod.node);
            target
        })
        .collect();
    Ok(Discovered { targets, not_ready })
}

/// Refuses a discovery that could never list the right pods, before any request.
fn validate(discovery: &Discovery) -> Result<(), KubeError> {
    let invalid = |what, value: &dyn ToString, problem: String| KubeError::Invalid {
        what,
        value: value.to_string(),
        problem,
    };
    names::dns_label(&discovery.namespace)
        .map_err(|problem| invalid("namespace", &discovery.namespace, problem))?;
    if discovery.label_selector.trim().is_empty() {
        return Err(invalid(
            "label selector",
            &discovery.label_selector,
            "empty: every pod of the namespace would be taken for an agent".to_owned(),
        ));
    }
    if discovery.agent_port == 0 {
        return Err(invalid(
            "agent port",
            &discovery.agent_port,
            "must be 1..=65535".to_owned(),
        ));
    }
    if discovery.page_size == 0 {
        return Err(invalid(
            "page size",
            &discovery.page_size,
            "must be at least 1 (0 would ask for everything in one answer)".to_owned(),
        ));
    }
    Ok(())
}

/// A pod that can be asked: its name, node, IP and creation time.
struct ReadyPod {
    name: String,
    node: String,
    ip: String,
    created: Option<Time>,
}

/// Whether a pod can be asked, or why not.
fn judge(pod: &Pod) -> Result<ReadyPod, NotReadyPod> {
    let name = pod.metadata.name.clone().unwrap_or_default();
    let node = pod
        .spec
        .as_ref()
        .and_then(|s| s.node_name.clone())
        .filter(|n| !n.is_empty());
    let status = pod.status.clone().unwrap_or_default();
    let phase = status.phase.clone().unwrap_or_else(|| "Unknown".to_owned());
    let not_ready = |reason: String| NotReadyPod {
        pod: name.clone(),
        node: node.clone(),
        phase: phase.clone(),
        reason,
    };
    if pod.metadata.deletion_timestamp.is_some() {
        return Err(not_ready("Terminating".to_owned()));
    }
    let Some(node_name) = node.clone() else {
        let why = condition(&status, "PodScheduled")
            .and_then(|c| c.message.clone())
            .map(|m| format!("not scheduled to a node: {m}"))
            .unwrap_or_else(|| "not scheduled to a node".to_owned());
        return Err(not_ready(why));
    };
    if phase != "Running" {
        return Err(not_ready(waiting_reason(&status).unwrap_or_else(|| {
            status
                .reason
                .clone()
                .or(status.message.clone())
                .unwrap_or_else(|| format!("phase {phase}"))
        })));
    }
    let ready = condition(&status, "Ready").is_some_and(|c| c.status == "True");
    if !ready {
        let why = waiting_reason(&status).unwrap_or_else(|| {
            condition(&status, "Ready")
                .map(|c| join(c.reason.as_deref(), c.message.as_deref()))
                .filter(|s| !s.is_empty())
                .unwrap_or_else(|| "not Ready".to_owned())
        });
        return Err(not_ready(why));
    }
    let Some(ip) = status.pod_ip.clone().filter(|ip| !ip.is_empty()) else {
        return Err(not_ready("Ready but no pod IP".to_owned()));
    };
    Ok(ReadyPod {
        name,
        node: node_name,
        ip,
        created: pod.metadata.creation_timestamp.clone(),
    })
}

/// The pod condition of `kind`.
fn condition<'a>(status: &'a PodStatus, kind: &str) -> Option<&'a PodCondition> {
    status.conditions.as_ref()?.iter().find(|c| c.type_ == kind)
}

/// The first container's waiting or terminated reason (`CrashLoopBackOff: ...`,
/// `ImagePullBackOff: ...`, `Error: exit code 2`): what an operator looks at first.
fn waiting_reason(status: &PodStatus) -> Option<String> {
    let containers = status.container_statuses.as_ref()?;
    containers.iter().find_map(|c| {
        let state = c.state.as_ref()?;
        if let Some(waiting) = &state.waiting {
            return Some(join(waiting.reason.as_deref(), waiting.message.as_deref()));
        }
        let terminated = state.terminated.as_ref()?;
        let reason = terminated.reason.as_deref().unwrap_or("Terminated");
        Some(format!("{reason}: exit code {}", terminated.exit_code))
    })
}

/// `reason: message`, either part optional.
fn join(reason: Option<&str>, message: Option<&str>) -> String {
    match (reason, message) {
        (Some(r), Some(m)) if !m.is_empty() => format!("{r}: {m}"),
        (Some(r), _) => r.to_owned(),
        (None, Some(m)) => m.to_owned(),
        (None, None) => String::new(),
    }
}

/// Every Node's labels, by node name, from a paginated metadata-only list (the Node's
/// status, with its image list, is never transferred).
async fn node_labels(
    client: &Client,
    page_size: u32,
) -> Result<HashMap<String, BTreeMap<String, String>>, KubeError> {
    let api: Api<Node> = Api::all(client.clone());
    let nodes = all_pages(page_size, |params| {
        let api = &api;
        async move {
            let list = api.list_metadata(&params);
            bounded(
                || "list nodes".to_owned(),
                "list",
                "nodes",
                REQUEST_TIMEOUT,
                list,
            )
            .await
        }
    })
    .await?;
    Ok(nodes
        .into_iter()
        .filter_map(|node| {
            Some((
                node.metadata.name?,
                node.metadata.labels.unwrap_or_default(),
            ))
        })
        .collect())
}

/// Every item of a list, `page_size` per request, following `continue` to the last page.
async fn all_pages<T, F, Fut>(page_size: u32, mut fetch: F) -> Result<Vec<T>, KubeError>
where
    // kube-rs's ObjectList requires it.
    T: Clone,
    F: FnMut(ListParams) -> Fut,
    Fut: std::future::Future<Output = Result<ObjectList<T>, KubeError>>,
{
    let mut items = Vec::new();
    let mut token: Option<String> = None;
    loop {
        let mut params = ListParams::default().limit(page_size);
        if let Some(token) = &token {
            params = params.continue_token(token);
        }
        let page = fetch(params).await?;
        items.extend(page.items);
        token = page.metadata.continue_.filter(|t| !t.is_empty());
        if token.is_none() {
            return Ok(items);
        }
    }
}

/// The target labels of a Node's labels: [`TOPOLOGY_LABELS`] under their short names and
/// the [`NODE_LABEL_PREFIX`] ones with the prefix dropped. `name` is skipped: it means the
/// target's own name to `--select`.
pub fn target_labels(node_labels: &BTreeMap<String, String>) -> BTreeMap<String, String> {
    let mut labels = BTreeMap::new();
    for (key, value) in node_labels {
        let short = TOPOLOGY_LABELS
            .iter()
            .find(|(full, _)| full == key)
            .map(|(_, short)| *short)
            .or_else(|| key.strip_prefix(NODE_LABEL_PREFIX));
        if let Some(short) = short.filter(|s| !s.is_empty() && *s != "name") {
            labels.insert(short.to_owned(), value.clone());
        }
    }
    labels
}
