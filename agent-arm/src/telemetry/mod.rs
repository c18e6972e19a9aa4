//! The agent's own telemetry, at the bottom of the agent: its registry ([`registry`]:
//! calls, backends, reconnects, what a platform team alerts on when the agent goes
//! stale) and the layer that records every gRPC call in it ([`rpc_layer`]). Storage,
//! the backends and the context record into it; only the `/metrics` server
//! ([`crate::metrics`], a peer of the services) reads it out. It imports nothing above
//! it: no service, no scrape.

pub(crate) mod registry;
pub(crate) mod rpc_layer;

pub(crate) use registry::AgentMetrics;
