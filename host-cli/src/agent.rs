//! Connecting to the agent over a Unix socket or TCP.

use std::time::Duration;

use anyhow::Context as _;
use dpu_proto::Endpoint;
use hyper_util::rt::TokioIo;
use tokio::net::UnixStream;
use tonic::transport::{
    Certificate, Channel, ClientTlsConfig, Endpoint as TonicEndpoint, Identity,
};

/// Mutual TLS towards a `tcp:` agent: the CA that signed the agent's certificate, and the
/// client certificate and key this dpuctl presents.
#[derive(Debug, Clone)]
pub(crate) struct TlsFiles {
    pub(crate) ca: std::path::PathBuf,
    pub(crate) cert: std::path::PathBuf,
    pub(crate) key: std::path::PathBuf,
    /// The name to expect in the agent's certificate; default: the host of `--agent`.
    pub(crate) name: Option<String>,
}

fn tls_config(files: &TlsFiles, host: &str) -> anyhow::Result<ClientTlsConfig> {
    let read = |what: &str, path: &std::path::Path| {
        std::fs::read(path).with_context(|| format!("cannot read the {what} {}", path.display()))
    };
    Ok(ClientTlsConfig::new()
        .ca_certificate(Certificate::from_pem(read(
            "CA certificate (--ca)",
            &files.ca,
        )?))
        .identity(Identity::from_pem(
            read("client certificate (--cert)", &files.cert)?,
            read("client key (--key)", &files.key)?,
        ))
        .domain_name(files.name.clone().unwrap_or_else(|| host.to_owned())))
}

/// Opens a channel to the agent, failing fast (within `timeout`) when it is unreachable.
pub(crate) async fn connect(
    agent: &Endpoint,
    tls: Option<&TlsFiles>,
    timeout: Duration,
) -> anyhow::Result<Channel> {
    let channel = match agent {
        Endpoint::Tcp { host, port } => {
            let authority = if host.contains(':') {
                format!("[{host}]:{port}")
            } else {
                format!("{host}:{port}")
            };
            let scheme = if tls.is_some() { "https" } else { "http" };
            let mut endpoint = TonicEndpoint::from_shared(format!("{scheme}://{authority}"))
                .with_context(|| format!("invalid agent address {agent}"))?
                .connect_timeout(timeout)
                .timeout(timeout);
            if let Some(files) = tls {
                endpoint = endpoint
                    .tls_config(tls_config(files, host)?)
                    .context("invalid TLS configuration")?;
            }
            endpoint.connect().await
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
