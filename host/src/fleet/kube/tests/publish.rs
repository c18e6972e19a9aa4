//! Publishing against the scripted API server: the label merge patch and the condition's
//! strategic merge patch on the status subresource (bodies, content types, field
//! manager), the transition time kept while the status holds, one node's RBAC denial
//! leaving the others published, and invalid marks refused without a request.

use std::collections::BTreeMap;

use http::Method;
use k8s_openapi::api::core::v1::NodeCondition;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;
use serde_json::{json, Value};

use super::super::publish::next_condition;
use super::super::{
    publish, KubeError, NodeConditionMark, NodeMarks, FIELD_MANAGER, MAX_MESSAGE_BYTES,
};
use super::objects::{forbidden, node};
use crate::testing::kube_api::{fake, ok, requests, status, Answer, Seen};

/// A transition time far in the past, which a kept transition must still show.
const SINCE: &str = "2020-01-01T00:00:00Z";

fn marks(node: &str, check: &str, healthy: bool) -> NodeMarks {
    NodeMarks {
        node: node.to_owned(),
        labels: BTreeMap::from([("dpu-offload/check".to_owned(), check.to_owned())]),
        condition: Some(NodeConditionMark {
            kind: "DpuOffloadHealthy".to_owned(),
            healthy,
            reason: if healthy {
                "ChecksPassed"
            } else {
                "ChecksFailed"
            }
            .to_owned(),
            message: format!("dpuctl fleet check: {check}"),
        }),
    }
}

/// The Node as the fake holds it: healthy since [`SINCE`], next to the kubelet's Ready.
fn healthy_node(name: &str) -> Value {
    node(
        name,
        vec![
            json!({"type": "Ready", "status": "True", "reason": "KubeletReady",
                "lastHeartbeatTime": SINCE, "lastTransitionTime": SINCE}),
            json!({"type": "DpuOffloadHealthy", "status": "True", "reason": "ChecksPassed",
                "lastHeartbeatTime": SINCE, "lastTransitionTime": SINCE}),
        ],
    )
}

/// Answers like an API server that holds [`healthy_node`]s and accepts every patch.
fn accepting(request: &Seen) -> Answer {
    let name = request
        .path
        .strip_prefix("/api/v1/nodes/")
        .map(|rest| rest.trim_end_matches("/status"))
        .unwrap_or_default();
    ok(healthy_node(name))
}

/// The requests made for `node`, as (method, path).
fn calls_for(seen: &[Seen], node: &str) -> Vec<(Method, String)> {
    let path = format!("/api/v1/nodes/{node}");
    seen.iter()
        .filter(|s| s.path == path || s.path == format!("{path}/status"))
        .map(|s| (s.method.clone(), s.path.clone()))
        .collect()
}

/// The one request for `node` with this method and path suffix.
fn request<'a>(seen: &'a [Seen], node: &str, method: Method, suffix: &str) -> &'a Seen {
    let path = format!("/api/v1/nodes/{node}{suffix}");
    let found: Vec<&Seen> = seen
        .iter()
        .filter(|s| s.method == method && s.path == path)
        .collect();
    assert_eq!(found.len(), 1, "{method} {path}: {found:?}");
    found[0]
}

/// The condition sent in a status patch.
fn sent_condition(patch: &Seen) -> &Value {
    let conditions = patch.body["status"]["conditions"]
        .as_array()
        .expect("the status patch carries conditions");
    assert_eq!(
        conditions.len(),
        1,
        "only our condition is sent: {conditions:?}"
    );
    &conditions[0]
}

#[tokio::test]
async fn labels_are_merge_patched_and_the_condition_strategic_merged_on_status() {
    let (client, log) = fake(accepting);
    let outcomes = publish(
        &client,
        &[
            marks("dpu-01", "PASS", true),
            marks("dpu-02", "FAIL", false),
        ],
        4,
    )
    .await;
    let nodes: Vec<&str> = outcomes.iter().map(|o| o.node.as_str()).collect();
    assert_eq!(
        nodes,
        ["dpu-01", "dpu-02"],
        "outcomes in the order of the marks"
    );
    for outcome in &outcomes {
        assert!(outcome.result.is_ok(), "{outcome:?}");
    }

    let seen = requests(&log);
    for node in ["dpu-01", "dpu-02"] {
        assert_eq!(
            calls_for(&seen, node),
            [
                (Method::PATCH, format!("/api/v1/nodes/{node}")),
                (Method::GET, format!("/api/v1/nodes/{node}")),
                (Method::PATCH, format!("/api/v1/nodes/{node}/status")),
            ]
        );
    }
    let labels = request(&seen, "dpu-01", Method::PATCH, "");
    assert_eq!(
        labels.content_type.as_deref(),
        Some("application/merge-patch+json")
    );
    assert_eq!(
        labels.body,
        json!({"metadata": {"labels": {"dpu-offload/check": "PASS"}}}),
        "only our labels are sent"
    );
    assert_eq!(labels.param("fieldManager"), Some(FIELD_MANAGER));

    let status_patch = request(&seen, "dpu-01", Method::PATCH, "/status");
    assert_eq!(
        status_patch.content_type.as_deref(),
        Some("application/strategic-merge-patch+json"),
        "conditions merge by type, keeping the kubelet's"
    );
    assert_eq!(status_patch.param("fieldManager"), Some(FIELD_MANAGER));
    let healthy = sent_condition(status_patch);
    assert_eq!(healthy["type"], "DpuOffloadHealthy");
    assert_eq!(healthy["status"], "True");
    assert_eq!(healthy["reason"], "ChecksPassed");
    assert_eq!(healthy["message"], "dpuctl fleet check: PASS");
    // Status unchanged (True before, True now): the transition time is kept, the
    // heartbeat is new.
    assert_eq!(healthy["lastTransitionTime"], SINCE);
    assert_ne!(healthy["lastHeartbeatTime"], SINCE);

    // The negative control: dpu-02 went True -> False, so its transition time is new.
    let failed = sent_condition(request(&seen, "dpu-02", Method::PATCH, "/status"));
    assert_eq!(failed["status"], "False");
    assert_eq!(failed["reason"], "ChecksFailed");
    assert_ne!(failed["lastTransitionTime"], SINCE);
    assert_eq!(failed["lastTransitionTime"], failed["lastHeartbeatTime"]);
}

#[tokio::test]
async fn rbac_denial_on_one_node_fails_that_node_only() {
    let (client, log) = fake(|request| {
        if request.method == Method::PATCH && request.path == "/api/v1/nodes/dpu-02" {
            forbidden("patch", "nodes", "nodes \"dpu-02\"", "at the cluster scope")
        } else {
            accepting(request)
        }
    });
    let all = [
        marks("dpu-01", "PASS", true),
        marks("dpu-02", "PASS", true),
        marks("dpu-03", "PASS", true),
    ];
    let outcomes = publish(&client, &all, 1).await;
    assert!(outcomes[0].result.is_ok(), "{:?}", outcomes[0]);
    assert!(outcomes[2].result.is_ok(), "{:?}", outcomes[2]);
    let error = outcomes[1].result.as_ref().expect_err("dpu-02 is denied");
    assert!(
        matches!(
            error,
            KubeError::Forbidden {
                verb: "patch",
                resource: "nodes",
                ..
            }
        ),
        "{error:?}"
    );
    let text = error.to_string();
    assert!(
        text.starts_with(
            "label node dpu-02: forbidden for service account dpu-system/dpuctl-fleet"
        ),
        "{text}"
    );

    let seen = requests(&log);
    assert_eq!(
        calls_for(&seen, "dpu-02"),
        [(Method::PATCH, "/api/v1/nodes/dpu-02".to_owned())],
        "after the denied label patch nothing more is tried for the node"
    );
    for node in ["dpu-01", "dpu-03"] {
        assert_eq!(calls_for(&seen, node).len(), 3, "{node} fully published");
    }
}

#[tokio::test]
async fn rbac_denial_on_the_status_subresource_names_nodes_status() {
    let (client, _log) = fake(|request| {
        if request.path.ends_with("/status") {
            forbidden(
                "patch",
                "nodes/status",
                "nodes \"dpu-01\"",
                "at the cluster scope",
            )
        } else {
            accepting(request)
        }
    });
    let outcomes = publish(&client, &[marks("dpu-01", "PASS", true)], 8).await;
    let error = outcomes[0].result.as_ref().expect_err("denied");
    assert!(
        matches!(
            error,
            KubeError::Forbidden {
                verb: "patch",
                resource: "nodes/status",
                ..
            }
        ),
        "{error:?}"
    );
    assert!(error
        .to_string()
        .starts_with("set condition DpuOffloadHealthy on node dpu-01: forbidden"));
}

#[tokio::test]
async fn invalid_marks_are_refused_without_a_request_and_the_rest_go_on() {
    let mut bad_value = marks("dpu-01", "not ok", false);
    bad_value.condition = None;
    let mut reserved_key = marks("dpu-02", "PASS", true);
    reserved_key
        .labels
        .insert("kubernetes.io/hostname".to_owned(), "evil".to_owned());
    let mut bad_reason = marks("dpu-03", "FAIL", false);
    if let Some(condition) = &mut bad_reason.condition {
        condition.reason = "checks failed".to_owned();
    }
    let bad_node = marks("DPU_04", "PASS", true);
    let good = marks("dpu-05", "PASS", true);
    let (client, log) = fake(accepting);
    let outcomes = publish(
        &client,
        &[bad_value, reserved_key, bad_reason, bad_node, good],
        2,
    )
    .await;

    let error = |i: usize| {
        outcomes[i]
            .result
            .as_ref()
            .expect_err("refused")
            .to_string()
    };
    assert_eq!(
        error(0),
        "node dpu-01: label dpu-offload/check=\"not ok\": value: ' ' is not allowed in a \
         value: letters, digits, '-', '_' and '.' only"
    );
    assert!(
        matches!(&outcomes[1].result, Err(KubeError::InvalidLabel { key, .. }) if key == "kubernetes.io/hostname"),
        "{:?}",
        outcomes[1]
    );
    assert!(
        matches!(
            &outcomes[2].result,
            Err(KubeError::InvalidCondition {
                field: "reason",
                ..
            })
        ),
        "{:?}",
        outcomes[2]
    );
    assert!(
        matches!(
            &outcomes[3].result,
            Err(KubeError::Invalid {
                what: "node name",
                ..
            })
        ),
        "{:?}",
        outcomes[3]
    );
    assert!(outcomes[4].result.is_ok(), "{:?}", outcomes[4]);

    let seen = requests(&log);
    let nodes: Vec<&str> = seen.iter().map(|s| s.path.as_str()).collect();
    assert!(
        nodes.iter().all(|p| p.starts_with("/api/v1/nodes/dpu-05")),
        "only the valid node was sent anything: {nodes:?}"
    );
    assert_eq!(seen.len(), 3);
}

#[tokio::test]
async fn labels_only_needs_no_read_and_parallel_zero_still_publishes() {
    let (client, log) = fake(accepting);
    let mut only_labels = marks("dpu-01", "PASS", true);
    only_labels.condition = None;
    let outcomes = publish(&client, &[only_labels], 0).await;
    assert!(outcomes[0].result.is_ok(), "{:?}", outcomes[0]);
    assert_eq!(
        calls_for(&requests(&log), "dpu-01"),
        [(Method::PATCH, "/api/v1/nodes/dpu-01".to_owned())]
    );
}

#[tokio::test]
async fn a_server_error_is_not_reported_as_rbac() {
    let (client, _log) = fake(|_| status(500, "InternalError", "etcd is down"));
    let outcomes = publish(&client, &[marks("dpu-01", "PASS", true)], 1).await;
    let error = outcomes[0].result.as_ref().expect_err("500 fails");
    assert!(matches!(error, KubeError::Api { .. }), "{error:?}");
}

fn time(text: &str) -> Time {
    Time(text.parse::<Timestamp>().expect("a valid timestamp"))
}

#[test]
fn the_transition_time_moves_only_when_the_status_changes() {
    let mark = marks("dpu-01", "PASS", true)
        .condition
        .expect("the marks have a condition");
    let before = NodeCondition {
        type_: "DpuOffloadHealthy".to_owned(),
        status: "True".to_owned(),
        last_transition_time: Some(time(SINCE)),
        last_heartbeat_time: Some(time(SINCE)),
        ..NodeCondition::default()
    };
    let now = time("2025-06-01T12:00:00Z");
    let same = next_condition(Some(&before), &mark, now.clone());
    assert_eq!(same.last_transition_time, Some(time(SINCE)));
    assert_eq!(same.last_heartbeat_time, Some(now.clone()));

    let flipped = NodeCondition {
        status: "False".to_owned(),
        ..before
    };
    let changed = next_condition(Some(&flipped), &mark, now.clone());
    assert_eq!(changed.last_transition_time, Some(now.clone()));
    let first = next_condition(None, &mark, now.clone());
    assert_eq!(first.last_transition_time, Some(now));
}

#[test]
fn a_long_message_is_cut_on_a_character_boundary() {
    let mut mark = marks("dpu-01", "PASS", true)
        .condition
        .expect("the marks have a condition");
    mark.message = "é".repeat(MAX_MESSAGE_BYTES);
    let condition = next_condition(None, &mark, time(SINCE));
    let message = condition.message.expect("a message");
    assert!(message.len() <= MAX_MESSAGE_BYTES, "{}", message.len());
    assert!(message.ends_with('…'));
    mark.message = "short".to_owned();
    assert_eq!(
        next_condition(None, &mark, time(SINCE)).message.as_deref(),
        Some("short")
    );
}
