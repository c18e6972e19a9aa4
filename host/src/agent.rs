//! Connecting to the agent over a Unix socket or TCP.

use std::path::{Path, PathBuf};
use std::time::Duration;

use dpu_proto::Endpoint;
use hyper_util::rt::TokioIo;
use tokio::net::UnixStream;
use tonic::transport::{
    Certificate, Channel, ClientTlsConfig, Endpoint as TonicEndpoint, Identity,
};

/// Why a channel to the agent could not be opened.
#[derive(Debug, thiserror::Error)]
pub enum ConnectError {
    /// One of the TLS files could not be read.
    #[error("cannot read the {what} {}", path.display())]
    ReadTls {
        /// Which file, with its flag.
        what: &'static str,
        /// Its path.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The `--agent` address does not make a URI.
    #[error("invalid agent address {agent}")]
    Address {
        /// The address as given.
        agent: String,
        /// Why.
        #[source]
        source: tonic::transport::Error,
    },
    /// The TLS material was rejected.
    #[error("invalid TLS configuration")]
    TlsConfig(#[source] tonic::transport::Error),
    /// Nothing answered in time, or the handshake failed.
    #[error("cannot reach the agent at {agent}")]
    Unreachable {
        /// The address as given.
        agent: String,
        /// Why.
        #[source]
        source: tonic::transport::Error,
    },
}

/// Mutual TLS towards a `tcp:` agent: the CA that signed the agent's certificate, and the
/// client certificate and key this dpuctl presents.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TlsFiles {
    /// The CA certificate (PEM) the agent's certificate must chain to (`--ca`).
    pub ca: PathBuf,
    /// This client's certificate (PEM, `--cert`).
    pub cert: PathBuf,
    /// This client's private key (PEM, `--key`).
    pub key: PathBuf,
    /// The name to expect in the agent's certificate; default: the host of `--agent`.
    pub name: Option<String>,
}

/// The TLS material of [`TlsFiles`], read once: a session dials with it without touching
/// the files again.
#[derive(Clone)]
pub struct ClientTls {
    ca: Vec<u8>,
    cert: Vec<u8>,
    key: Vec<u8>,
    name: Option<String>,
}

impl std::fmt::Debug for ClientTls {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never the key's bytes.
        f.debug_struct("ClientTls")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

impl ClientTls {
    /// Reads the three files, naming the flag of the one that cannot be read.
    pub fn read(files: &TlsFiles) -> Result<Self, ConnectError> {
        let read = |what: &'static str, path: &Path| {
            std::fs::read(path).map_err(|source| ConnectError::ReadTls {
                what,
                path: path.to_owned(),
                source,
            })
        };
        Ok(Self {
            ca: read("CA certificate (--ca)", &files.ca)?,
            cert: read("client certificate (--cert)", &files.cert)?,
            key: read("client key (--key)", &files.key)?,
            name: files.name.clone(),
        })
    }

    fn config(&self, host: &str) -> ClientTlsConfig {
        ClientTlsConfig::new()
            .ca_certificate(Certificate::from_pem(&self.ca))
            .identity(Identity::from_pem(&self.cert, &self.key))
            .domain_name(self.name.clone().unwrap_or_else(|| host.to_owned()))
    }
}

/// Opens a channel to the agent, failing fast (within `timeout`) when it is unreachable.
/// Reads the TLS files on every call: for one-off connections; a
/// [`crate::session::Session`] reads them once.
pub async fn connect(
    agent: &Endpoint,
    tls: Option<&TlsFiles>,
    timeout: Duration,
) -> Result<Channel, ConnectError> {
    let tls = tls.map(ClientTls::read).transpose()?;
    connect_with(agent, tls.as_ref(), timeout).await
}

/// [`connect`] with the TLS material already read.
pub async fn connect_with(
    agent: &Endpoint,
    tls: Option<&ClientTls>,
    timeout: Duration,
) -> Result<Channel, ConnectError> {
    let channel = match agent {
        Endpoint::Tcp { host, port } => {
            let authority = if host.contains(':') {
                format!("[{host}]:{port}")
            } else {
                format!("{host}:{port}")
            };
            let scheme = if tls.is_some() { "https" } else { "http" };
            let mut endpoint = TonicEndpoint::from_shared(format!("{scheme}://{authority}"))
                .map_err(|source| ConnectError::Address {
                    agent: agent.to_string(),
                    source,
                })?
                .connect_timeout(timeout)
                .timeout(timeout);
            if let Some(tls) = tls {
                endpoint = endpoint
                    .tls_config(tls.config(host))
                    .map_err(ConnectError::TlsConfig)?;
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
    channel.map_err(|source| ConnectError::Unreachable {
        agent: agent.to_string(),
        source,
    })
}
