//! Why a Kubernetes call of the fleet failed, typed so dpuctl can tell a missing RBAC grant
//! (fix the manifest) from a value we refused to send (fix the caller) from a cluster that
//! did not answer.

use std::time::Duration;

/// An error of discovery or publishing.
#[derive(Debug, thiserror::Error)]
pub enum KubeError {
    /// The API server's RBAC refused the call (HTTP 403). Kept apart from [`Self::Api`]
    /// because the fix is always the same: grant `verb` on `resource` to the identity
    /// named, as deploy/kubernetes/dpuctl-fleet.yaml does.
    #[error(
        "{action}: forbidden{}: RBAC must grant verb \"{verb}\" on \"{resource}\" \
         (deploy/kubernetes/dpuctl-fleet.yaml has the rules)",
        who_text(.who)
    )]
    Forbidden {
        /// What was attempted, e.g. `list pods in namespace dpu-system`.
        action: String,
        /// The RBAC verb the call needs (`list`, `get`, `patch`).
        verb: &'static str,
        /// The RBAC resource it needs (`pods`, `nodes`, `nodes/status`).
        resource: &'static str,
        /// Who the API server says was refused, when its message names them:
        /// `service account NS/NAME` or `user "NAME"`.
        who: Option<String>,
        /// kube-rs's error, with the API server's Status (boxed: it is large, and
        /// every `Result` of this module would carry its size).
        #[source]
        source: Box<kube::Error>,
    },
    /// The API server refused for another reason, or the connection failed.
    #[error("{action}")]
    Api {
        /// What was attempted.
        action: String,
        /// kube-rs's error, with the API server's Status when there was one (boxed).
        #[source]
        source: Box<kube::Error>,
    },
    /// The API server did not answer in time.
    #[error("{action}: no answer within {}s", .after.as_secs())]
    Timeout {
        /// What was attempted.
        action: String,
        /// How long we waited.
        after: Duration,
    },
    /// A label we were asked to publish breaks Kubernetes' rules; nothing was sent for
    /// that node, since the API server would refuse the whole patch anyway.
    #[error("node {node}: label {key}={value:?}: {problem}")]
    InvalidLabel {
        /// The node the label was for.
        node: String,
        /// The label's key.
        key: String,
        /// The label's value.
        value: String,
        /// Which rule it breaks.
        problem: String,
    },
    /// A node condition we were asked to publish breaks the rules of conditions;
    /// nothing was sent for that node.
    #[error("node {node}: condition {field} {value:?}: {problem}")]
    InvalidCondition {
        /// The node the condition was for.
        node: String,
        /// `type` or `reason`.
        field: &'static str,
        /// The value refused.
        value: String,
        /// Which rule it breaks.
        problem: String,
    },
    /// A name given to discovery or publishing is not one Kubernetes can have (a node
    /// name, a namespace) or a setting is out of range; refused before any request.
    #[error("{what} {value:?}: {problem}")]
    Invalid {
        /// What the value is, e.g. `node name`, `namespace`, `page size`.
        what: &'static str,
        /// The value refused.
        value: String,
        /// Which rule it breaks.
        problem: String,
    },
    /// The task publishing one node ended without an answer (it panicked or was
    /// cancelled); the other nodes are unaffected.
    #[error("node {node}: publishing task failed")]
    Task {
        /// The node.
        node: String,
        /// Tokio's account of it.
        #[source]
        source: tokio::task::JoinError,
    },
}

/// ` for service account NS/NAME`, or nothing when the server did not say who.
fn who_text(who: &Option<String>) -> String {
    who.as_ref()
        .map(|who| format!(" for {who}"))
        .unwrap_or_default()
}

/// Classifies a failed call: an RBAC denial names the verb and resource it needs and the
/// identity refused; anything else keeps kube-rs's error under `action`.
pub(super) fn api_error(
    action: String,
    verb: &'static str,
    resource: &'static str,
    source: kube::Error,
) -> KubeError {
    match &source {
        kube::Error::Api(status) if status.code == 403 => KubeError::Forbidden {
            action,
            verb,
            resource,
            who: refused_identity(&status.message),
            source: Box::new(source),
        },
        _ => KubeError::Api {
            action,
            source: Box::new(source),
        },
    }
}

/// The identity in an RBAC denial's message (`... User "system:serviceaccount:NS:NAME"
/// cannot list resource ...`), as `service account NS/NAME` or `user "NAME"`.
pub(super) fn refused_identity(message: &str) -> Option<String> {
    let (_, rest) = message.split_once("User \"")?;
    let (user, _) = rest.split_once('"')?;
    match user.strip_prefix("system:serviceaccount:") {
        Some(account) => {
            let (namespace, name) = account.split_once(':')?;
            Some(format!("service account {namespace}/{name}"))
        }
        None => Some(format!("user \"{user}\"")),
    }
}

/// Runs one request bounded by `after`, classifying its error with [`api_error`].
pub(super) async fn bounded<T>(
    action: impl Fn() -> String,
    verb: &'static str,
    resource: &'static str,
    after: Duration,
    fut: impl std::future::Future<Output = Result<T, kube::Error>>,
) -> Result<T, KubeError> {
    match tokio::time::timeout(after, fut).await {
        Ok(Ok(value)) => Ok(value),
        Ok(Err(source)) => Err(api_error(action(), verb, resource, source)),
        Err(_) => Err(KubeError::Timeout {
            action: action(),
            after,
        }),
    }
}
