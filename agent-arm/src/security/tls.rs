//! TLS 1.3 with mandatory client certificates for TCP listeners, built on rustls directly
//! (tonic's own TLS settings cannot pin the protocol version). Handshakes run in their own
//! tasks, so a slow or hostile client cannot hold up the others' connections; a failed
//! handshake is logged and dropped.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use rustls::pki_types::pem::PemObject as _;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::server::WebPkiClientVerifier;
use rustls::{RootCertStore, ServerConfig};
use tokio::net::{TcpListener, TcpStream};
use tokio_rustls::server::TlsStream;
use tokio_rustls::TlsAcceptor;
use tokio_stream::wrappers::ReceiverStream;

use crate::config::SecurityConfig;

/// How long a client has to finish its handshake.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// Handshakes in progress that may queue before new connections wait.
const PENDING: usize = 64;

/// Why the TLS configuration cannot be used.
#[derive(Debug, thiserror::Error)]
pub(crate) enum TlsError {
    #[error("cannot read {what} {path}")]
    Pem {
        what: &'static str,
        path: PathBuf,
        #[source]
        source: rustls::pki_types::pem::Error,
    },
    #[error("{path} holds no certificate")]
    Empty { path: PathBuf },
    #[error("invalid TLS setup")]
    Rustls(#[source] rustls::Error),
    #[error("invalid client CA {path}")]
    Verifier {
        path: PathBuf,
        #[source]
        source: rustls::server::VerifierBuilderError,
    },
}

fn certificates(what: &'static str, path: &Path) -> Result<Vec<CertificateDer<'static>>, TlsError> {
    let pem = |source| TlsError::Pem {
        what,
        path: path.to_path_buf(),
        source,
    };
    let certs = CertificateDer::pem_file_iter(path)
        .map_err(pem)?
        .collect::<Result<Vec<_>, _>>()
        .map_err(pem)?;
    if certs.is_empty() {
        return Err(TlsError::Empty {
            path: path.to_path_buf(),
        });
    }
    Ok(certs)
}

/// The acceptor for TCP listeners, or `None` when no TLS files are configured.
pub(crate) fn acceptor(config: &SecurityConfig) -> Result<Option<TlsAcceptor>, TlsError> {
    let (Some(cert), Some(key), Some(ca)) = (&config.tls_cert, &config.tls_key, &config.client_ca)
    else {
        return Ok(None);
    };
    let chain = certificates("certificate", cert)?;
    let key = PrivateKeyDer::from_pem_file(key).map_err(|source| TlsError::Pem {
        what: "key",
        path: key.clone(),
        source,
    })?;
    let mut roots = RootCertStore::empty();
    for ca_cert in certificates("client CA", ca)? {
        roots.add(ca_cert).map_err(TlsError::Rustls)?;
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let verifier =
        WebPkiClientVerifier::builder_with_provider(Arc::new(roots), Arc::clone(&provider))
            .build()
            .map_err(|source| TlsError::Verifier {
                path: ca.clone(),
                source,
            })?;
    let mut server = ServerConfig::builder_with_provider(provider)
        .with_protocol_versions(&[&rustls::version::TLS13])
        .map_err(TlsError::Rustls)?
        .with_client_cert_verifier(verifier)
        .with_single_cert(chain, key)
        .map_err(TlsError::Rustls)?;
    server.alpn_protocols = vec![b"h2".to_vec()];
    Ok(Some(TlsAcceptor::from(Arc::new(server))))
}

/// Accepts TCP connections and yields those whose TLS handshake succeeded.
pub(crate) fn incoming(
    listener: TcpListener,
    acceptor: TlsAcceptor,
) -> ReceiverStream<std::io::Result<TlsStream<TcpStream>>> {
    let (tx, rx) = tokio::sync::mpsc::channel(PENDING);
    tokio::spawn(async move {
        loop {
            // Stop accepting (and close the port) as soon as the server stops reading.
            let accepted = tokio::select! {
                () = tx.closed() => return,
                accepted = listener.accept() => accepted,
            };
            let (stream, peer) = match accepted {
                Ok(accepted) => accepted,
                Err(e) => {
                    tracing::warn!(error = %e, "TCP accept failed");
                    continue;
                }
            };
            let (acceptor, tx) = (acceptor.clone(), tx.clone());
            tokio::spawn(async move {
                match tokio::time::timeout(HANDSHAKE_TIMEOUT, acceptor.accept(stream)).await {
                    Ok(Ok(tls)) => {
                        let _ = tx.send(Ok(tls)).await;
                    }
                    Ok(Err(e)) => tracing::warn!(%peer, error = %e, "TLS handshake refused"),
                    Err(_) => tracing::warn!(%peer, "TLS handshake timed out"),
                }
            });
        }
    });
    ReceiverStream::new(rx)
}
