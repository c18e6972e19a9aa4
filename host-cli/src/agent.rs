//! Connecting to the agent over a Unix socket or TCP.

use std::time::Duration;

use anyhow::Context as _;
use dpu_proto::Endpoint;
use hyper_util::rt::TokioIo;
use tokio::net::UnixStream;
use tonic::transport::{Channel, Endpoint as TonicEndpoint};

/// Opens a channel to the agent, failing fast (within `timeout`) when it is unreachable.
pub(crate) async fn connect(agent: &Endpoint, timeout: Duration) -> anyhow::Result<Channel> {
    let channel = match agent {
        Endpoint::Tcp { host, port } => {
            let authority = if host.contains(':') {
                format!("[{host}]:{port}")
            } else {
                format!("{host}:{port}")
            };
            TonicEndpoint::from_shared(format!("http://{authority}"))
                .with_context(|| format!("invalid agent address {agent}"))?
                .connect_timeout(timeout)
                .timeout(timeout)
                .connect()
                .await
        }
        Endpoint::Unix(path) => {
            let path = path.clone();
            // The URI is required by the API but unused: the connector dials the socket.
            TonicEndpoint::from_static("http://dpu-agent.invalid")
                .connect_timeout(timeout)
                .timeout(timeout)
                .connect_with_connector(tower::service_fn(move |_| {
                    let path = path.clone();
                    async move { UnixStream::connect(path).await.map(TokioIo::new) }
                }))
                .await
        }
    };
    channel.map_err(|e| anyhow::Error::new(e).context(format!("cannot reach the agent at {agent}")))
}
