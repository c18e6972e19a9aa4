//! The authorization gate in front of every service, and the audit log of what operators
//! did. It runs before any handler: a denied call never reaches a backend.

use std::sync::Arc;
use std::task::{Context, Poll};

use tonic::body::Body;
use tonic::Status;
use tower::{Layer, Service};

use super::Caller;
use crate::config::SecurityConfig;
use crate::role::policy;
use crate::role::Role;
use crate::service_future::ServiceFuture;

/// Wraps the router: authorize, then audit operator calls.
#[derive(Debug, Clone)]
pub(crate) struct AuthLayer {
    config: Arc<SecurityConfig>,
}

impl AuthLayer {
    pub(crate) fn new(config: &SecurityConfig) -> Self {
        Self {
            config: Arc::new(config.clone()),
        }
    }
}

impl<S> Layer<S> for AuthLayer {
    type Service = Auth<S>;

    fn layer(&self, inner: S) -> Auth<S> {
        Auth {
            inner,
            config: Arc::clone(&self.config),
        }
    }
}

/// The service [`AuthLayer`] makes.
#[derive(Debug, Clone)]
pub(crate) struct Auth<S> {
    inner: S,
    config: Arc<SecurityConfig>,
}

/// The gRPC status code of a finished unary call: errors are sent as headers
/// ("trailers-only"), success as a trailer, so no `grpc-status` header means OK.
fn outcome(response: &http::Response<Body>) -> String {
    match crate::grpc_status::grpc_code(response.headers()) {
        None | Some(tonic::Code::Ok) => "OK".to_owned(),
        Some(code) => format!("{code:?}"),
    }
}

impl<S> Service<http::Request<Body>> for Auth<S>
where
    S: Service<http::Request<Body>, Response = http::Response<Body>> + Clone + Send + 'static,
    S::Future: Send + 'static,
    S::Error: Send + 'static,
{
    type Response = http::Response<Body>;
    type Error = S::Error;
    type Future = ServiceFuture<Self::Response, Self::Error>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: http::Request<Body>) -> Self::Future {
        let path = request.uri().path().to_owned();
        let caller = Caller::of(&request);
        let role = caller.role(&self.config);
        let needed = policy::required_role(&path);
        let denial = match needed {
            None => Some(format!("{path}: no policy entry, so nobody may call it")),
            Some(needed) if role < needed => Some(format!(
                "{path} needs the {} role; {caller} has {}",
                needed.as_str(),
                role.as_str()
            )),
            Some(_) => None,
        };
        if let Some(reason) = denial {
            if needed != Some(Role::Viewer) {
                tracing::warn!(target: "audit", %caller, method = %path, outcome = "PermissionDenied", "denied");
            }
            let response = Status::permission_denied(reason).into_http();
            return Box::pin(async move { Ok(response) });
        }
        // The clone that was made ready is the one to call (tower's readiness contract).
        let clone = self.inner.clone();
        let mut inner = std::mem::replace(&mut self.inner, clone);
        let audited = needed == Some(Role::Operator);
        Box::pin(async move {
            let response = inner.call(request).await?;
            if audited {
                tracing::info!(target: "audit", %caller, method = %path, outcome = %outcome(&response), "operator call");
            }
            Ok(response)
        })
    }
}
