//! The outermost layer of every router: requests that are not gRPC are answered HTTP 415
//! (as the gRPC over HTTP/2 spec says: a plain HTTP client must not mistake a gRPC error,
//! sent with status 200, for success), and response streams still open when the agent
//! shuts down end at once with UNAVAILABLE "shutting down" instead of holding SIGTERM for
//! the whole grace period.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use crate::service_future::ServiceFuture;
use http::{HeaderMap, HeaderValue, Request, Response, StatusCode};
use http_body::Frame;
use tokio::sync::watch;
use tonic::body::Body;
use tower::{Layer, Service};

/// Makes [`GrpcGuard`]s; `shutdown` turns true when the agent stops.
#[derive(Debug, Clone)]
pub(crate) struct GrpcGuardLayer {
    shutdown: watch::Receiver<bool>,
}

impl GrpcGuardLayer {
    pub(crate) fn new(shutdown: watch::Receiver<bool>) -> Self {
        Self { shutdown }
    }
}

impl<S> Layer<S> for GrpcGuardLayer {
    type Service = GrpcGuard<S>;

    fn layer(&self, inner: S) -> GrpcGuard<S> {
        GrpcGuard {
            inner,
            shutdown: self.shutdown.clone(),
        }
    }
}

/// The service [`GrpcGuardLayer`] makes.
#[derive(Debug, Clone)]
pub(crate) struct GrpcGuard<S> {
    inner: S,
    shutdown: watch::Receiver<bool>,
}

/// `application/grpc`, alone or followed by `+codec` or parameters (case-insensitive);
/// not `application/grpc-web`, which this server does not speak.
fn is_grpc(headers: &HeaderMap) -> bool {
    const GRPC: &[u8] = b"application/grpc";
    let Some(value) = headers.get(http::header::CONTENT_TYPE) else {
        return false;
    };
    let value = value.as_bytes();
    value.len() >= GRPC.len()
        && value[..GRPC.len()].eq_ignore_ascii_case(GRPC)
        && matches!(value.get(GRPC.len()), None | Some(b'+' | b';'))
}

fn unsupported_media_type() -> Response<Body> {
    let mut response = Response::new(Body::empty());
    *response.status_mut() = StatusCode::UNSUPPORTED_MEDIA_TYPE;
    response.headers_mut().insert(
        http::header::ACCEPT,
        HeaderValue::from_static("application/grpc"),
    );
    response
}

impl<S> Service<Request<Body>> for GrpcGuard<S>
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
        if !is_grpc(request.headers()) {
            return Box::pin(std::future::ready(Ok(unsupported_media_type())));
        }
        let call = self.inner.call(request);
        let shutdown = self.shutdown.clone();
        Box::pin(async move {
            let response = call.await?;
            Ok(response.map(|body| Body::new(EndOnShutdown::new(body, shutdown))))
        })
    }
}

/// A response body that, once the agent shuts down, ends with UNAVAILABLE the next time
/// it has nothing ready: between messages, never inside one. Unary responses are ready at
/// once and finish as they are.
struct EndOnShutdown {
    inner: Body,
    shutdown: Pin<Box<dyn Future<Output = ()> + Send>>,
    ended: bool,
}

impl EndOnShutdown {
    fn new(inner: Body, mut shutdown: watch::Receiver<bool>) -> Self {
        Self {
            inner,
            shutdown: Box::pin(async move {
                // An error means the sender is gone, which also means stop.
                let _ = shutdown.wait_for(|stop| *stop).await;
            }),
            ended: false,
        }
    }
}

fn shutting_down() -> HeaderMap {
    let mut trailers = HeaderMap::new();
    trailers.insert(
        "grpc-status",
        HeaderValue::from(tonic::Code::Unavailable as i32),
    );
    trailers.insert("grpc-message", HeaderValue::from_static("shutting down"));
    trailers
}

impl http_body::Body for EndOnShutdown {
    type Data = <Body as http_body::Body>::Data;
    type Error = <Body as http_body::Body>::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Self::Data>, Self::Error>>> {
        let this = self.get_mut();
        if this.ended {
            return Poll::Ready(None);
        }
        match Pin::new(&mut this.inner).poll_frame(cx) {
            Poll::Ready(frame) => Poll::Ready(frame),
            Poll::Pending => match this.shutdown.as_mut().poll(cx) {
                Poll::Ready(()) => {
                    this.ended = true;
                    Poll::Ready(Some(Ok(Frame::trailers(shutting_down()))))
                }
                Poll::Pending => Poll::Pending,
            },
        }
    }

    fn is_end_stream(&self) -> bool {
        self.ended || self.inner.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        if self.ended {
            http_body::SizeHint::with_exact(0)
        } else {
            self.inner.size_hint()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_grpc_content_types_pass() {
        let check = |value: Option<&'static str>| {
            let mut headers = HeaderMap::new();
            if let Some(value) = value {
                headers.insert(http::header::CONTENT_TYPE, HeaderValue::from_static(value));
            }
            is_grpc(&headers)
        };
        for ok in [
            "application/grpc",
            "application/grpc+proto",
            "Application/GRPC+json",
            "application/grpc;charset=utf-8",
        ] {
            assert!(check(Some(ok)), "{ok}");
        }
        for bad in [
            "text/plain",
            "application/grpc-web",
            "application/grpcx",
            "application/json",
            "",
        ] {
            assert!(!check(Some(bad)), "{bad}");
        }
        assert!(!check(None));
    }

    #[tokio::test]
    async fn a_pending_stream_ends_with_unavailable_on_shutdown() {
        use http_body::Body as _;
        let (tx, rx) = watch::channel(false);
        // A body that never yields: a Watch between two samples.
        let never = Body::new(http_body_util_pending());
        let mut body = EndOnShutdown::new(never, rx);
        let poll =
            std::future::poll_fn(|cx| Poll::Ready(Pin::new(&mut body).poll_frame(cx).is_pending()));
        assert!(poll.await, "pending before shutdown");
        tx.send(true).expect("send");
        let frame = std::future::poll_fn(|cx| Pin::new(&mut body).poll_frame(cx))
            .await
            .expect("a frame")
            .expect("ok");
        let trailers = frame.into_trailers().expect("trailers");
        assert_eq!(trailers["grpc-status"], "14");
        assert_eq!(trailers["grpc-message"], "shutting down");
        assert!(body.is_end_stream());
    }

    /// A body that is always pending.
    fn http_body_util_pending() -> Pending {
        Pending
    }

    struct Pending;

    impl http_body::Body for Pending {
        type Data = <Body as http_body::Body>::Data;
        type Error = <Body as http_body::Body>::Error;

        fn poll_frame(
            self: Pin<&mut Self>,
            _cx: &mut Context<'_>,
        ) -> Poll<Option<Result<Frame<Self::Data>, Self::Error>>> {
            Poll::Pending
        }
    }
}
