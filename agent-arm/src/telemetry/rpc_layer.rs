//! Counts and times every gRPC call (`dpu_agent_grpc_requests_total`,
//! `dpu_agent_grpc_request_duration_seconds`), so a platform team sees failing or slow
//! calls without reading logs.
//!
//! It wraps the whole router, outside the non-gRPC guard and the authorization gate:
//! denied calls and streams ended by a shutdown are counted with the code the client got.
//! The duration runs to the response headers; the code is the response's `grpc-status`,
//! from the headers (trailers-only: errors) or else from the trailers, so a stream that
//! fails after its first message is not counted as OK. Label values are bounded: only the
//! methods this agent serves are named, anything else is `other` (or `unknown` when the
//! path is not `/package.Service/Method` at all).

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use http::{Request, Response, StatusCode};
use http_body::Frame;
use tonic::body::Body;
use tonic::Code;
use tower::{Layer, Service};

use super::AgentMetrics;
use crate::grpc_status::grpc_code;
use crate::role::policy;
use crate::service_future::ServiceFuture;

/// The label of a path that is not `/package.Service/Method`.
const UNKNOWN: &str = "unknown";

/// The label of a well-formed service or method this agent does not serve.
const OTHER: &str = "other";

/// Services outside `dpu.v1` that the agent serves, with their methods (as tonic-health
/// and tonic-reflection route them).
const OPEN_SERVICES: &[(&str, &[&str])] = &[
    ("grpc.health.v1.Health", &["Check", "Watch"]),
    (
        "grpc.reflection.v1.ServerReflection",
        &["ServerReflectionInfo"],
    ),
    (
        "grpc.reflection.v1alpha.ServerReflection",
        &["ServerReflectionInfo"],
    ),
];

/// The `service` and `method` labels of a request path: the served ones by name, others
/// folded into `other` and malformed paths into `unknown`, so no client can grow the
/// label set.
pub(crate) fn labels(path: &str) -> (&'static str, String) {
    let Some((service, method)) = path.strip_prefix('/').and_then(|p| p.split_once('/')) else {
        return (UNKNOWN, UNKNOWN.to_owned());
    };
    if service.is_empty() || method.is_empty() || method.contains('/') {
        return (UNKNOWN, UNKNOWN.to_owned());
    }
    if let Some(known) = dpu_proto::SERVICE_NAMES.iter().find(|s| **s == service) {
        // The policy table names every dpu.v1 method (its tests check the API against it).
        let served = policy::required_role(path).is_some();
        return (known, if served { method } else { OTHER }.to_owned());
    }
    match OPEN_SERVICES.iter().find(|(name, _)| *name == service) {
        Some((known, methods)) => {
            let served = methods.contains(&method);
            (known, if served { method } else { OTHER }.to_owned())
        }
        None => (OTHER, OTHER.to_owned()),
    }
}

/// Wraps the router so that every gRPC call is recorded in `metrics`.
#[derive(Debug, Clone)]
pub(crate) struct RpcMetricsLayer {
    metrics: Arc<AgentMetrics>,
}

impl RpcMetricsLayer {
    pub(crate) fn new(metrics: Arc<AgentMetrics>) -> Self {
        Self { metrics }
    }
}

impl<S> Layer<S> for RpcMetricsLayer {
    type Service = RpcMetrics<S>;

    fn layer(&self, inner: S) -> RpcMetrics<S> {
        RpcMetrics {
            inner,
            metrics: Arc::clone(&self.metrics),
        }
    }
}

/// The service [`RpcMetricsLayer`] makes.
#[derive(Debug, Clone)]
pub(crate) struct RpcMetrics<S> {
    inner: S,
    metrics: Arc<AgentMetrics>,
}

impl<S> Service<Request<Body>> for RpcMetrics<S>
where
    S: Service<Request<Body>, Response = Response<Body>>,
    S::Future: Send + 'static,
    S::Error: Send + 'static,
{
    type Response = Response<Body>;
    type Error = S::Error;
    type Future = ServiceFuture<Self::Response, Self::Error>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Request<Body>) -> Self::Future {
        let started = Instant::now();
        let (service, method) = labels(request.uri().path());
        let metrics = Arc::clone(&self.metrics);
        let call = self.inner.call(request);
        Box::pin(async move {
            let result = call.await;
            let call = Call {
                metrics,
                service,
                method,
                elapsed: started.elapsed(),
            };
            let response = match result {
                Ok(response) => response,
                Err(e) => {
                    call.finish(Code::Unknown);
                    return Err(e);
                }
            };
            // Not a gRPC answer (the guard's 415 to a plain HTTP client): nothing to count.
            if response.status() != StatusCode::OK {
                return Ok(response);
            }
            // Trailers-only: the status is already here.
            if let Some(code) = grpc_code(response.headers()) {
                call.finish(code);
                return Ok(response);
            }
            Ok(response.map(|body| {
                Body::new(Recorded {
                    inner: body,
                    call: Some(call),
                })
            }))
        })
    }
}

/// One call waiting for its status; its duration is already taken at the headers.
struct Call {
    metrics: Arc<AgentMetrics>,
    service: &'static str,
    method: String,
    elapsed: Duration,
}

impl Call {
    fn finish(self, code: Code) {
        self.metrics.record_rpc(
            self.service,
            &self.method,
            &format!("{code:?}"),
            self.elapsed,
        );
    }
}

/// A response body that records its call when the trailers carry the status, or as
/// `Cancelled` when it is dropped first (the client went away or reset the stream).
struct Recorded {
    inner: Body,
    call: Option<Call>,
}

impl Recorded {
    fn finish(&mut self, code: Code) {
        if let Some(call) = self.call.take() {
            call.finish(code);
        }
    }
}

impl Drop for Recorded {
    fn drop(&mut self) {
        self.finish(Code::Cancelled);
    }
}

impl http_body::Body for Recorded {
    type Data = <Body as http_body::Body>::Data;
    type Error = <Body as http_body::Body>::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Self::Data>, Self::Error>>> {
        let this = self.get_mut();
        let polled = Pin::new(&mut this.inner).poll_frame(cx);
        match &polled {
            Poll::Ready(Some(Ok(frame))) => {
                if let Some(trailers) = frame.trailers_ref() {
                    this.finish(grpc_code(trailers).unwrap_or(Code::Unknown));
                }
            }
            // An error resets the stream; an end without trailers sends no status at all.
            Poll::Ready(Some(Err(_)) | None) => this.finish(Code::Unknown),
            Poll::Pending => {}
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.inner.size_hint()
    }
}

#[cfg(test)]
mod tests {
    use std::collections::VecDeque;
    use std::convert::Infallible;

    use http::{HeaderMap, HeaderValue};
    use tower::ServiceExt as _;

    use super::*;

    type Bytes = <Body as http_body::Body>::Data;

    #[test]
    fn served_methods_are_named_and_everything_else_is_folded() {
        let cases = [
            (
                "/dpu.v1.Storage/ListSubsystems",
                "dpu.v1.Storage",
                "ListSubsystems",
            ),
            ("/dpu.v1.Counters/Watch", "dpu.v1.Counters", "Watch"),
            ("/dpu.v1.Storage/ListVolumes", "dpu.v1.Storage", "other"),
            (
                "/grpc.health.v1.Health/Check",
                "grpc.health.v1.Health",
                "Check",
            ),
            (
                "/grpc.health.v1.Health/Probe",
                "grpc.health.v1.Health",
                "other",
            ),
            (
                "/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo",
                "grpc.reflection.v1alpha.ServerReflection",
                "ServerReflectionInfo",
            ),
            ("/evil.Service/Anything", "other", "other"),
            ("/dpu.v1.Storage", "unknown", "unknown"),
            ("/dpu.v1.Storage/", "unknown", "unknown"),
            ("//ListVolumes", "unknown", "unknown"),
            ("/dpu.v1.Storage/ListSubsystems/x", "unknown", "unknown"),
            ("/", "unknown", "unknown"),
            ("", "unknown", "unknown"),
        ];
        for (path, service, method) in cases {
            let (s, m) = labels(path);
            assert_eq!((s, m.as_str()), (service, method), "{path}");
        }
    }

    #[test]
    fn the_code_is_read_from_grpc_status() {
        let code = |value: Option<&'static str>| {
            let mut headers = HeaderMap::new();
            if let Some(value) = value {
                headers.insert("grpc-status", HeaderValue::from_static(value));
            }
            grpc_code(&headers)
        };
        assert_eq!(code(None), None);
        assert_eq!(code(Some("0")), Some(Code::Ok));
        assert_eq!(code(Some("5")), Some(Code::NotFound));
        assert_eq!(code(Some("7")), Some(Code::PermissionDenied));
        assert_eq!(code(Some("99")), Some(Code::Unknown));
        assert_eq!(code(Some("x")), None);
        assert_eq!(format!("{:?}", Code::NotFound), "NotFound");
    }

    /// A body that yields `frames`, then ends.
    struct Frames(VecDeque<Frame<Bytes>>);

    impl http_body::Body for Frames {
        type Data = Bytes;
        type Error = tonic::Status;

        fn poll_frame(
            self: Pin<&mut Self>,
            _cx: &mut Context<'_>,
        ) -> Poll<Option<Result<Frame<Bytes>, tonic::Status>>> {
            Poll::Ready(self.get_mut().0.pop_front().map(Ok))
        }
    }

    fn trailers(code: Code) -> HeaderMap {
        let mut map = HeaderMap::new();
        map.insert("grpc-status", HeaderValue::from(code as i32));
        map
    }

    /// What the inner service answers: a status, headers only or in trailers after a
    /// message.
    #[derive(Clone, Copy)]
    enum Answer {
        HeadersOnly(Code),
        Trailers(Code),
        NotGrpc,
    }

    fn answer(answer: Answer) -> Response<Body> {
        match answer {
            Answer::HeadersOnly(code) => tonic::Status::new(code, "no").into_http(),
            Answer::Trailers(code) => Response::new(Body::new(Frames(VecDeque::from([
                Frame::data(Bytes::from_static(b"\0\0\0\0\0")),
                Frame::trailers(trailers(code)),
            ])))),
            Answer::NotGrpc => {
                let mut response = Response::new(Body::empty());
                *response.status_mut() = StatusCode::UNSUPPORTED_MEDIA_TYPE;
                response
            }
        }
    }

    /// Sends one call through the layer and, when `read`, reads the whole response body.
    async fn call(metrics: &Arc<AgentMetrics>, path: &str, reply: Answer, read: bool) {
        use http_body_util::BodyExt as _;
        let inner =
            tower::service_fn(
                move |_: Request<Body>| async move { Ok::<_, Infallible>(answer(reply)) },
            );
        let service = RpcMetricsLayer::new(Arc::clone(metrics)).layer(inner);
        let request = Request::builder()
            .uri(path)
            .body(Body::empty())
            .expect("request");
        let response = service.oneshot(request).await.expect("infallible");
        if read {
            response.into_body().collect().await.expect("body");
        }
    }

    fn text(metrics: &AgentMetrics) -> String {
        let mut out = String::new();
        prometheus_client::encoding::text::encode(&mut out, metrics.registry()).expect("encode");
        out
    }

    #[tokio::test]
    async fn calls_are_counted_with_the_status_the_client_got() {
        let metrics = Arc::new(AgentMetrics::new());
        let list = "/dpu.v1.Storage/ListSubsystems";
        call(&metrics, list, Answer::Trailers(Code::Ok), true).await;
        call(&metrics, list, Answer::Trailers(Code::Ok), true).await;
        call(&metrics, list, Answer::Trailers(Code::Unavailable), true).await;
        call(
            &metrics,
            list,
            Answer::HeadersOnly(Code::PermissionDenied),
            false,
        )
        .await;
        // A stream the client dropped before its status.
        call(
            &metrics,
            "/dpu.v1.Counters/Watch",
            Answer::Trailers(Code::Ok),
            false,
        )
        .await;
        // The guard's 415: not a gRPC call.
        call(&metrics, list, Answer::NotGrpc, false).await;
        call(
            &metrics,
            "/x.Y/Z",
            Answer::HeadersOnly(Code::Unimplemented),
            false,
        )
        .await;
        let out = text(&metrics);
        for line in [
            "dpu_agent_grpc_requests_total{service=\"dpu.v1.Storage\",method=\"ListSubsystems\",code=\"Ok\"} 2",
            "dpu_agent_grpc_requests_total{service=\"dpu.v1.Storage\",method=\"ListSubsystems\",code=\"Unavailable\"} 1",
            "dpu_agent_grpc_requests_total{service=\"dpu.v1.Storage\",method=\"ListSubsystems\",code=\"PermissionDenied\"} 1",
            "dpu_agent_grpc_requests_total{service=\"dpu.v1.Counters\",method=\"Watch\",code=\"Cancelled\"} 1",
            "dpu_agent_grpc_requests_total{service=\"other\",method=\"other\",code=\"Unimplemented\"} 1",
            "dpu_agent_grpc_request_duration_seconds_count{service=\"dpu.v1.Storage\",method=\"ListSubsystems\"} 4",
        ] {
            assert!(out.contains(line), "{line} missing in\n{out}");
        }
    }
}
