//! The boxed future the agent's own tower services return (the gRPC guard, the security
//! and metrics layers, the health listener): one definition instead of one per file.

use std::future::Future;
use std::pin::Pin;

/// A `Send` boxed future resolving to `Result<T, E>`: `tower::Service::Future` of a
/// service that wraps another and awaits it.
pub(crate) type ServiceFuture<T, E> = Pin<Box<dyn Future<Output = Result<T, E>> + Send>>;
