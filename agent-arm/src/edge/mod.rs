//! The connection edge: everything between a socket and a gRPC service. Listeners and
//! their budgets ([`listen`], [`accept`], [`fd_reserve`]: a full TCP listener never starves
//! root's Unix socket, a descriptor shortage never kills the process), one accepted
//! connection ([`conn`]), the guard that answers non-gRPC requests before any service
//! sees them ([`grpc_guard`]), and the health-only listener ([`health_listener`]). The
//! services and the storage/switch domains sit above it and never reach down into a
//! socket themselves.

pub(crate) mod accept;
pub(crate) mod conn;
pub(crate) mod fd_reserve;
pub(crate) mod grpc_guard;
pub(crate) mod health_listener;
pub(crate) mod listen;
