//! Discovery against the scripted API server: pagination followed on pods and nodes, the
//! pods that cannot be asked reported with their reason, Node labels mapped, RBAC denials
//! named, and invalid settings refused before any request.

use std::collections::BTreeMap;
use std::path::PathBuf;

use dpu_proto::Endpoint;
use http::Method;
use serde_json::{json, Value};

use super::super::{discover, target_labels, Discovery, KubeError, NotReadyPod};
use super::objects::{agent_pod, forbidden, node_metadata_list};
use crate::agent::connect::TlsFiles;
use crate::testing::kube_api::{fake, list, requests, status, Answer, Seen};

const PODS: &str = "/api/v1/namespaces/dpu-system/pods";
const NODES: &str = "/api/v1/nodes";
const SELECTOR: &str = "app.kubernetes.io/name=dpu-agent";

fn tls() -> TlsFiles {
    TlsFiles {
        ca: PathBuf::from("/etc/dpuctl/tls/ca.crt"),
        cert: PathBuf::from("/etc/dpuctl/tls/tls.crt"),
        key: PathBuf::from("/etc/dpuctl/tls/tls.key"),
        name: Some("dpu-agent".to_owned()),
    }
}

fn discovery(page_size: u32) -> Discovery {
    Discovery {
        namespace: "dpu-system".to_owned(),
        label_selector: SELECTOR.to_owned(),
        agent_port: 50051,
        tls: Some(tls()),
        page_size,
    }
}

/// A pod whose container waits in CrashLoopBackOff.
fn crash_looping(name: &str, node: &str) -> Value {
    let mut pod = agent_pod(name, Some(node), "Running", false, Some("10.0.0.3"));
    pod["status"]["containerStatuses"] = json!([{"name": "dpu-agent", "image": "dpu-agent",
        "imageID": "", "ready": false, "restartCount": 7,
        "state": {"waiting": {"reason": "CrashLoopBackOff",
            "message": "back-off 5m0s restarting failed container"}}}]);
    pod
}

/// Two pages of pods and two pages of nodes.
fn two_pages(request: &Seen) -> Answer {
    match (request.path.as_str(), request.param("continue")) {
        (PODS, None) => list(
            "Pod",
            vec![
                agent_pod(
                    "dpu-agent-a",
                    Some("dpu-01"),
                    "Running",
                    true,
                    Some("10.0.0.1"),
                ),
                agent_pod("dpu-agent-b", None, "Pending", false, None),
            ],
            Some("pods-page-2"),
        ),
        (PODS, Some("pods-page-2")) => list(
            "Pod",
            vec![
                agent_pod(
                    "dpu-agent-c",
                    Some("dpu-02"),
                    "Running",
                    true,
                    Some("fd00::2"),
                ),
                crash_looping("dpu-agent-d", "dpu-03"),
                agent_pod("dpu-agent-e", Some("dpu-04"), "Running", true, None),
            ],
            None,
        ),
        (NODES, None) => node_metadata_list(
            &[(
                "dpu-01",
                json!({"topology.kubernetes.io/zone": "z1", "dpu-offload/rack": "r07",
                    "dpu-offload/rail": "0", "kubernetes.io/hostname": "dpu-01"}),
            )],
            Some("nodes-page-2"),
        ),
        (NODES, Some("nodes-page-2")) => node_metadata_list(
            &[
                ("dpu-02", json!({"topology.kubernetes.io/zone": "z2"})),
                ("gpu-host-9", json!({"dpu-offload/rack": "r99"})),
            ],
            None,
        ),
        _ => status(404, "NotFound", "unexpected request"),
    }
}

#[tokio::test]
async fn discovery_follows_continue_and_reports_the_pods_it_cannot_ask() {
    let (client, log) = fake(two_pages);
    let found = discover(&client, &discovery(2))
        .await
        .expect("discovery succeeds");

    let names: Vec<&str> = found.targets.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["dpu-01", "dpu-02"]);
    let first = &found.targets[0];
    assert_eq!(
        first.agent,
        Endpoint::Tcp {
            host: "10.0.0.1".to_owned(),
            port: 50051
        }
    );
    assert_eq!(first.node.as_deref(), Some("dpu-01"));
    assert_eq!(first.tls, Some(tls()));
    let expected: BTreeMap<String, String> = [("zone", "z1"), ("rack", "r07"), ("rail", "0")]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect();
    assert_eq!(first.labels, expected);
    // IPv6 pod IPs stay bare: the endpoint adds the brackets when it dials.
    assert_eq!(
        found.targets[1].agent,
        Endpoint::Tcp {
            host: "fd00::2".to_owned(),
            port: 50051
        }
    );
    assert_eq!(found.targets[1].label("zone"), Some("z2"));

    assert_eq!(
        found.not_ready,
        [
            NotReadyPod {
                pod: "dpu-agent-b".to_owned(),
                node: None,
                phase: "Pending".to_owned(),
                reason: "not scheduled to a node".to_owned(),
            },
            NotReadyPod {
                pod: "dpu-agent-d".to_owned(),
                node: Some("dpu-03".to_owned()),
                phase: "Running".to_owned(),
                reason: "CrashLoopBackOff: back-off 5m0s restarting failed container".to_owned(),
            },
            NotReadyPod {
                pod: "dpu-agent-e".to_owned(),
                node: Some("dpu-04".to_owned()),
                phase: "Running".to_owned(),
                reason: "Ready but no pod IP".to_owned(),
            },
        ]
    );

    let seen = requests(&log);
    let asked: Vec<(Method, &str, Option<&str>)> = seen
        .iter()
        .map(|s| (s.method.clone(), s.path.as_str(), s.param("continue")))
        .collect();
    assert_eq!(
        asked,
        [
            (Method::GET, PODS, None),
            (Method::GET, PODS, Some("pods-page-2")),
            (Method::GET, NODES, None),
            (Method::GET, NODES, Some("nodes-page-2")),
        ]
    );
    for pods in &seen[..2] {
        assert_eq!(pods.param("labelSelector"), Some(SELECTOR));
        assert_eq!(pods.param("limit"), Some("2"));
    }
    for nodes in &seen[2..] {
        assert_eq!(nodes.param("limit"), Some("2"));
        assert_eq!(nodes.param("labelSelector"), None);
        let accept = nodes.accept.as_deref().unwrap_or("");
        assert!(
            accept.contains("as=PartialObjectMetadataList"),
            "nodes are listed metadata-only: {accept}"
        );
    }
}

#[tokio::test]
async fn a_terminating_pod_and_a_surge_duplicate_are_reported_not_targets() {
    let (client, log) = fake(|request| match request.path.as_str() {
        PODS => {
            let mut old = agent_pod(
                "dpu-agent-old",
                Some("dpu-01"),
                "Running",
                true,
                Some("10.0.0.1"),
            );
            let mut new = agent_pod(
                "dpu-agent-new",
                Some("dpu-01"),
                "Running",
                true,
                Some("10.0.0.1"),
            );
            new["metadata"]["creationTimestamp"] = json!("2025-06-01T00:00:00Z");
            old["metadata"]["creationTimestamp"] = json!("2025-01-01T00:00:00Z");
            let mut leaving = agent_pod(
                "dpu-agent-x",
                Some("dpu-02"),
                "Running",
                true,
                Some("10.0.0.2"),
            );
            leaving["metadata"]["deletionTimestamp"] = json!("2025-06-01T00:00:00Z");
            list("Pod", vec![old, leaving, new], None)
        }
        NODES => node_metadata_list(&[], None),
        _ => status(404, "NotFound", "unexpected request"),
    });
    let found = discover(&client, &discovery(500))
        .await
        .expect("discovery succeeds");
    assert_eq!(found.targets.len(), 1);
    assert_eq!(found.targets[0].name, "dpu-01");
    // A node missing from the node list still is a target, with no labels.
    assert!(found.targets[0].labels.is_empty());
    let reasons: Vec<(&str, &str)> = found
        .not_ready
        .iter()
        .map(|p| (p.pod.as_str(), p.reason.as_str()))
        .collect();
    assert_eq!(
        reasons,
        [
            (
                "dpu-agent-old",
                "another ready agent pod (dpu-agent-new) serves the node"
            ),
            ("dpu-agent-x", "Terminating"),
        ]
    );
    assert_eq!(requests(&log)[0].param("limit"), Some("500"));
}

#[tokio::test]
async fn no_ready_pod_means_no_node_list() {
    let (client, log) = fake(|request| match request.path.as_str() {
        PODS => list(
            "Pod",
            vec![agent_pod("dpu-agent-b", None, "Pending", false, None)],
            None,
        ),
        _ => forbidden("list", "nodes", "nodes", "at the cluster scope"),
    });
    let found = discover(&client, &discovery(500))
        .await
        .expect("discovery succeeds");
    assert!(found.targets.is_empty());
    assert_eq!(found.not_ready.len(), 1);
    assert_eq!(requests(&log).len(), 1, "only the pods were listed");
}

#[tokio::test]
async fn rbac_denial_on_list_pods_names_verb_resource_and_service_account() {
    let (client, _log) =
        fake(|_| forbidden("list", "pods", "pods", "in the namespace \"dpu-system\""));
    let error = discover(&client, &discovery(500))
        .await
        .expect_err("a 403 fails discovery");
    let KubeError::Forbidden {
        verb,
        resource,
        who,
        ..
    } = &error
    else {
        panic!("not a Forbidden error: {error:?}");
    };
    assert_eq!((*verb, *resource), ("list", "pods"));
    assert_eq!(
        who.as_deref(),
        Some("service account dpu-system/dpuctl-fleet")
    );
    let text = error.to_string();
    for part in [
        "list pods -l app.kubernetes.io/name=dpu-agent in namespace dpu-system",
        "forbidden for service account dpu-system/dpuctl-fleet",
        "verb \"list\" on \"pods\"",
    ] {
        assert!(text.contains(part), "{part:?} not in {text:?}");
    }
    assert!(
        std::error::Error::source(&error).is_some(),
        "the API error is kept as the source"
    );
}

#[tokio::test]
async fn rbac_denial_on_list_nodes_is_named_too_and_other_errors_are_not_blamed_on_rbac() {
    let (client, _log) = fake(|request| match request.path.as_str() {
        PODS => list(
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
        _ => forbidden("list", "nodes", "nodes", "at the cluster scope"),
    });
    let error = discover(&client, &discovery(500))
        .await
        .expect_err("a 403 on nodes fails discovery");
    assert!(
        matches!(
            error,
            KubeError::Forbidden {
                verb: "list",
                resource: "nodes",
                ..
            }
        ),
        "{error:?}"
    );

    // The negative control: a server error is an Api error, not an RBAC denial.
    let (client, _log) = fake(|_| status(500, "InternalError", "etcd is down"));
    let error = discover(&client, &discovery(500))
        .await
        .expect_err("a 500 fails discovery");
    assert!(matches!(error, KubeError::Api { .. }), "{error:?}");
    assert!(!error.to_string().contains("forbidden"), "{error}");
}

/// A change that makes the discovery settings invalid.
type Spoil = fn(&mut Discovery);

#[tokio::test]
async fn invalid_settings_are_refused_without_a_request() {
    let cases: [(Spoil, &str); 4] = [
        (|d| d.namespace = "DPU_System".to_owned(), "namespace"),
        (|d| d.label_selector = " ".to_owned(), "label selector"),
        (|d| d.agent_port = 0, "agent port"),
        (|d| d.page_size = 0, "page size"),
    ];
    for (spoil, what) in cases {
        let (client, log) = fake(|_| list("Pod", vec![], None));
        let mut settings = discovery(500);
        spoil(&mut settings);
        let error = discover(&client, &settings)
            .await
            .expect_err("invalid settings are refused");
        assert!(
            matches!(&error, KubeError::Invalid { what: w, .. } if *w == what),
            "{what}: {error:?}"
        );
        assert!(requests(&log).is_empty(), "{what}: a request was sent");
    }
    // The negative control: the valid settings do send the list.
    let (client, log) = fake(|_| list("Pod", vec![], None));
    discover(&client, &discovery(500))
        .await
        .expect("valid settings");
    assert_eq!(requests(&log).len(), 1);
}

#[test]
fn node_labels_map_to_short_target_labels() {
    let node: BTreeMap<String, String> = [
        ("topology.kubernetes.io/zone", "z1"),
        ("topology.kubernetes.io/region", "eu"),
        ("dpu-offload/rack", "r07"),
        ("dpu-offload/name", "shadow"),
        ("kubernetes.io/hostname", "dpu-01"),
        ("example.com/rack", "other"),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v.to_owned()))
    .collect();
    let labels = target_labels(&node);
    let keys: Vec<&str> = labels.keys().map(String::as_str).collect();
    assert_eq!(keys, ["rack", "region", "zone"]);
    assert_eq!(labels["rack"], "r07");
}
