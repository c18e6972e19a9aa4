//! Tests of the kubernetes executor against the scripted API server the fleet's tests use
//! too (`dpu_host::testing::kube_api`; docs/reference/demo-ecosystem.md §2.5). The
//! poll interval is shortened so every test ends in well under a second. This file holds
//! the fake and the create/readiness/cleanup/connect tests; the training waits are in
//! `kube_exec_training.rs`.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use dpu_host::testing::kube_api::{fake_in, Answer, Log, Seen};
use http::Method;
use serde_json::{json, Value};

use super::super::kube_exec::{api_resource, KubeError, KubeExecutor};
use super::super::plan::ClusterSection;

pub(super) use dpu_host::testing::kube_api::{calls, list, ok, status, text};

/// Namespace of every test.
pub(super) const NS: &str = "demo";
/// Job name of every test.
pub(super) const JOB: &str = "dpuctl-train-r1";
/// PyTorchJob collection path.
pub(super) const PYTORCHJOBS: &str = "/apis/kubeflow.org/v1/namespaces/demo/pytorchjobs";
/// Pod collection path.
pub(super) const PODS: &str = "/api/v1/namespaces/demo/pods";

/// An executor whose client talks to the scripted API server (`dpu_host::testing`, the one
/// the fleet's tests use) instead of a cluster, `answer` answering from each request's
/// method and path; and the log of requests it made.
pub(super) fn fake(
    answer: impl Fn(&Method, &str) -> Answer + Send + 'static,
) -> (KubeExecutor, Log) {
    let (client, log) = fake_in(NS, move |seen: &Seen| answer(&seen.method, &seen.path));
    let executor =
        KubeExecutor::with_client(client, NS).with_poll_interval(Duration::from_millis(5));
    (executor, log)
}

/// A PyTorchJob with these conditions (type, status, message).
pub(super) fn job(conditions: &[(&str, &str, &str)]) -> Value {
    let conditions: Vec<Value> = conditions
        .iter()
        .map(|(t, s, m)| json!({"type": t, "status": s, "message": m, "reason": format!("PyTorchJob{t}")}))
        .collect();
    json!({"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob",
        "metadata": {"name": JOB, "namespace": NS}, "status": {"conditions": conditions}})
}

/// A PyTorchJob pod of `replica` type with the given status.
pub(super) fn pod(name: &str, replica: &str, status: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": NS, "labels": {
            "training.kubeflow.org/job-name": JOB,
            "training.kubeflow.org/replica-type": replica}},
        "spec": {"containers": [{"name": "pytorch", "image": "trainer"}]},
        "status": status})
}

#[tokio::test]
async fn create_posts_to_the_kinds_collection() {
    let (executor, seen) = fake(|_, _| (201, job(&[])));
    let object = job(&[]);
    let created = executor
        .apply(&object)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(created, format!("PyTorchJob/{JOB}"));
    assert_eq!(calls(&seen), vec![(Method::POST, PYTORCHJOBS.to_owned())]);
}

#[tokio::test]
async fn create_of_an_existing_name_is_refused_with_its_owner() {
    let (executor, seen) = fake(|method, _| match *method {
        Method::POST => status(
            409,
            "AlreadyExists",
            "pytorchjobs \"dpuctl-train-r1\" already exists",
        ),
        _ => {
            let mut existing = job(&[]);
            existing["metadata"]["labels"] = json!({"dpuctl/run-id": "r0"});
            ok(existing)
        }
    });
    let error = executor
        .apply(&job(&[]))
        .await
        .expect_err("the call should have failed");
    match &error {
        KubeError::AlreadyExists {
            kind, name, owner, ..
        } => {
            assert_eq!((kind.as_str(), name.as_str()), ("PyTorchJob", JOB));
            assert_eq!(owner.as_deref(), Some("r0"));
        }
        other => panic!("expected AlreadyExists, got {other:?}"),
    }
    assert!(
        error
            .to_string()
            .contains("demo/dpuctl-train-r1 already exists"),
        "{error}"
    );
    assert!(error.to_string().contains("run r0"), "{error}");
    assert_eq!(
        calls(&seen),
        vec![
            (Method::POST, PYTORCHJOBS.to_owned()),
            (Method::GET, format!("{PYTORCHJOBS}/{JOB}"))
        ]
    );
}

#[tokio::test]
async fn unknown_kinds_are_refused_before_any_request() {
    let (executor, seen) = fake(|_, _| ok(json!({})));
    let object = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}});
    let error = executor
        .apply(&object)
        .await
        .expect_err("the call should have failed");
    assert!(
        matches!(error, KubeError::UnsupportedKind { .. }),
        "{error:?}"
    );
    assert!(calls(&seen).is_empty());
}

#[tokio::test]
async fn deployment_readiness_waits_for_available_replicas() {
    let polls = Arc::new(Mutex::new(0));
    let count = Arc::clone(&polls);
    let (executor, seen) = fake(move |_, _| {
        let mut n = count.lock().expect("lock poisoned by a failed test");
        *n += 1;
        let available = if *n < 3 { 1 } else { 2 };
        ok(
            json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "vllm"},
            "status": {"availableReplicas": available}}),
        )
    });
    let seconds = executor
        .wait_deployment_ready("vllm", 2, Duration::from_secs(5))
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(seconds < 1.0);
    assert_eq!(
        calls(&seen)[0],
        (
            Method::GET,
            "/apis/apps/v1/namespaces/demo/deployments/vllm".to_owned()
        )
    );
    assert_eq!(calls(&seen).len(), 3);

    let (executor, _) = fake(|_, _| {
        ok(
            json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "vllm"},
            "status": {"availableReplicas": 1}}),
        )
    });
    let error = executor
        .wait_deployment_ready("vllm", 2, Duration::from_millis(100))
        .await
        .expect_err("the call should have failed");
    assert!(error.contains("1/2 replicas available"), "{error}");
}

#[tokio::test]
async fn cleanup_deletes_by_label_selector_and_skips_missing_crds() {
    let selector = "app.kubernetes.io/managed-by=dpuctl,dpuctl/run-id=r1";
    let (executor, seen) = fake(|method, path| match (method.clone(), path) {
        (Method::GET, PYTORCHJOBS) => list("PyTorchJob", vec![job(&[])], None),
        (Method::GET, p) if p.ends_with("/trainjobs") => status(
            404,
            "NotFound",
            "the server could not find the requested resource",
        ),
        (Method::GET, "/api/v1/namespaces/demo/services") => list(
            "Service",
            vec![json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "vllm"}})],
            None,
        ),
        (Method::GET, _) => list("Object", vec![], None),
        _ => ok(json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success"})),
    });
    let deleted = executor
        .cleanup(selector, true, false)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        deleted,
        vec![format!("PyTorchJob/{JOB}"), "Service/vllm".to_owned()]
    );
    let seen = seen.lock().expect("lock poisoned by a failed test");
    let lists: Vec<&Seen> = seen.iter().filter(|s| s.method == Method::GET).collect();
    assert_eq!(lists.len(), 5);
    for list in lists {
        assert_eq!(list.param("labelSelector"), Some(selector), "{list:?}");
    }
    let deletes: Vec<&str> = seen
        .iter()
        .filter(|s| s.method == Method::DELETE)
        .map(|s| s.path.as_str())
        .collect();
    assert_eq!(
        deletes,
        vec![
            format!("{PYTORCHJOBS}/{JOB}").as_str(),
            "/api/v1/namespaces/demo/services/vllm"
        ]
    );
}

#[tokio::test]
async fn cleanup_keeps_serving_and_jobs_when_asked() {
    let (executor, seen) = fake(|_, _| list("Object", vec![], None));
    let deleted = executor
        .cleanup("dpuctl/run-id=r1", false, true)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(deleted.is_empty());
    assert!(calls(&seen).is_empty());
}

#[test]
fn core_and_grouped_api_versions_map_to_paths() {
    let service = api_resource("v1", "Service").unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        (service.group.as_str(), service.plural.as_str()),
        ("", "services")
    );
    let ingress = api_resource("networking.k8s.io/v1", "Ingress").unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        (ingress.group.as_str(), ingress.plural.as_str()),
        ("networking.k8s.io", "ingresses")
    );
    assert!(api_resource("", "Service").is_err());
}

/// A kubeconfig with two contexts on an unreachable server: connecting reads the
/// file and builds the TLS client without any request.
const KUBECONFIG: &str = "apiVersion: v1
kind: Config
clusters:
- name: c1
  cluster:
    server: https://127.0.0.1:6443
users:
- name: u1
  user:
    token: not-a-real-token
contexts:
- name: first
  context: {cluster: c1, user: u1}
- name: second
  context: {cluster: c1, user: u1, namespace: other}
current-context: first
";

#[tokio::test]
async fn connect_uses_the_plans_kubeconfig_context_and_namespace() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let path = dir.path().join("config");
    std::fs::write(&path, KUBECONFIG).unwrap_or_else(|e| panic!("{e}"));
    let mut cluster = ClusterSection {
        kubeconfig: Some(path),
        context: Some("second".to_owned()),
        namespace: NS.to_owned(),
    };
    let executor = KubeExecutor::connect(&cluster)
        .await
        .unwrap_or_else(|e| panic!("{e:#}"));
    assert_eq!(executor.namespace, NS);

    cluster.context = Some("third".to_owned());
    let error = KubeExecutor::connect(&cluster)
        .await
        .expect_err("an unknown context must be refused");
    assert!(
        format!("{error:#}").contains("loading context third from"),
        "{error:#}"
    );
}
