//! The RBAC of deploy/kubernetes/dpuctl-fleet.yaml grants exactly what discovery and
//! publishing use: every request the code makes against the scripted API server is
//! mapped to the (scope, resource, verb) RBAC checks it against, and that set must equal
//! the manifest's rules, so a new request without its grant (a 403 in the field) or a
//! grant no request needs (privilege for nothing) fails here.

use std::collections::BTreeSet;

use http::Method;
use serde_json::json;

use super::super::{discover, publish, Discovery, NodeConditionMark, NodeMarks};
use super::objects::{agent_pod, node, node_metadata_list};
use crate::testing::kube_api::{fake, list, ok, requests, Seen};

const MANIFEST: &str = include_str!("../../../../../deploy/kubernetes/dpuctl-fleet.yaml");

/// One RBAC permission: `namespace` (a Role's) or `cluster` (a ClusterRole's), the
/// resource (with its subresource) and the verb.
type Grant = (String, String, String);

/// The values of a one-line flow list, `key: ["a", "b"]`.
fn flow_list(line: &str, key: &str) -> Option<Vec<String>> {
    let rest = line
        .trim()
        .trim_start_matches("- ")
        .strip_prefix(key)?
        .strip_prefix(':')?
        .trim();
    let inner = rest.strip_prefix('[')?.strip_suffix(']')?;
    Some(
        inner
            .split(',')
            .map(|v| v.trim().trim_matches('"').to_owned())
            .filter(|v| !v.is_empty() || inner.contains("\"\""))
            .collect(),
    )
}

/// Every grant of the manifest's Roles and ClusterRoles; panics on a rule this reader
/// cannot follow (a non-core API group, a multi-line list), so none is skipped silently.
fn manifest_grants(manifest: &str) -> BTreeSet<Grant> {
    let mut grants = BTreeSet::new();
    for document in manifest.split("\n---\n") {
        let kind = document
            .lines()
            .find_map(|l| l.strip_prefix("kind: "))
            .unwrap_or("");
        let scope = match kind {
            "Role" => "namespace",
            "ClusterRole" => "cluster",
            _ => continue,
        };
        let mut resources: Option<Vec<String>> = None;
        for line in document.lines() {
            if let Some(groups) = flow_list(line, "apiGroups") {
                assert_eq!(groups, [""], "only the core API group is used: {line}");
            }
            if let Some(list) = flow_list(line, "resources") {
                resources = Some(list);
            }
            if let Some(verbs) = flow_list(line, "verbs") {
                let resources = resources.take().expect("resources before verbs");
                for resource in &resources {
                    for verb in &verbs {
                        grants.insert((scope.to_owned(), resource.clone(), verb.clone()));
                    }
                }
            }
            let trimmed = line.trim();
            assert!(
                !(trimmed.starts_with("resources:") || trimmed.starts_with("verbs:"))
                    || trimmed.contains('['),
                "rules are written as one-line lists: {line}"
            );
        }
    }
    grants
}

/// The RBAC permission a request needs.
fn needed(request: &Seen) -> Grant {
    let grant = |scope: &str, resource: &str, verb: &str| {
        (scope.to_owned(), resource.to_owned(), verb.to_owned())
    };
    let parts: Vec<&str> = request.path.trim_start_matches('/').split('/').collect();
    match (request.method.clone(), parts.as_slice()) {
        (Method::GET, ["api", "v1", "namespaces", _, "pods"]) => grant("namespace", "pods", "list"),
        (Method::GET, ["api", "v1", "nodes"]) => grant("cluster", "nodes", "list"),
        (Method::GET, ["api", "v1", "nodes", _]) => grant("cluster", "nodes", "get"),
        (Method::PATCH, ["api", "v1", "nodes", _]) => grant("cluster", "nodes", "patch"),
        (Method::PATCH, ["api", "v1", "nodes", _, "status"]) => {
            grant("cluster", "nodes/status", "patch")
        }
        _ => panic!("a request the RBAC map does not know: {request:?}"),
    }
}

/// What discovery and a full publish (labels and condition) ask of the API server.
async fn used_grants() -> BTreeSet<Grant> {
    let (client, log) = fake(|request| match request.path.as_str() {
        "/api/v1/namespaces/dpu-system/pods" => list(
            "Pod",
            vec![agent_pod(
                "dpu-agent-a",
                Some("dpu-01"),
                "Running",
                true,
                Some("10.0.0.1"),
            )],
            None,
        ),
        "/api/v1/nodes" => node_metadata_list(&[("dpu-01", json!({}))], None),
        _ => ok(node("dpu-01", vec![])),
    });
    let discovery = Discovery {
        namespace: "dpu-system".to_owned(),
        label_selector: "app.kubernetes.io/name=dpu-agent".to_owned(),
        agent_port: 50051,
        tls: None,
        page_size: 500,
    };
    discover(&client, &discovery).await.expect("discovery");
    let marks = NodeMarks {
        node: "dpu-01".to_owned(),
        labels: [("dpu-offload/check".to_owned(), "PASS".to_owned())].into(),
        condition: Some(NodeConditionMark {
            kind: "DpuOffloadHealthy".to_owned(),
            healthy: true,
            reason: "ChecksPassed".to_owned(),
            message: "ok".to_owned(),
        }),
    };
    let outcomes = publish(&client, &[marks], 1).await;
    assert!(outcomes[0].result.is_ok(), "{outcomes:?}");
    requests(&log).iter().map(needed).collect()
}

#[tokio::test]
async fn the_manifest_grants_exactly_what_the_code_asks() {
    let used = used_grants().await;
    let granted = manifest_grants(MANIFEST);
    assert_eq!(
        granted, used,
        "deploy/kubernetes/dpuctl-fleet.yaml's rules differ from the requests made"
    );

    // The negative controls: one grant more, or one fewer, is noticed.
    let wider = MANIFEST.replace(
        "verbs: [\"list\", \"get\", \"patch\"]",
        "verbs: [\"list\", \"get\", \"patch\", \"watch\"]",
    );
    assert_ne!(wider, MANIFEST, "the nodes rule was found");
    assert_ne!(manifest_grants(&wider), used);
    let narrower = MANIFEST.replace("resources: [\"nodes/status\"]", "resources: []");
    assert_ne!(narrower, MANIFEST, "the nodes/status rule was found");
    assert_ne!(manifest_grants(&narrower), used);
}
