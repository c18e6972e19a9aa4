//! TLS 1.3 with mandatory client certificates for TCP listeners, built on rustls directly
//! (tonic's own TLS settings cannot pin the protocol version). Handshakes run in their own
//! tasks, bounded in number and time (`crate::edge::accept::tls`), so a slow or hostile client
//! cannot hold up the others' connections; a failed handshake is logged and dropped.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use rustls::pki_types::pem::PemObject as _;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::server::WebPkiClientVerifier;
use rustls::{RootCertStore, ServerConfig};
use tokio_rustls::TlsAcceptor;

use crate::config::SecurityConfig;

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
    #[error("cannot read key {path}")]
    KeyStat {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error(
        "TLS key {path} has mode {mode:04o}: {problem}; refusing to use it \
         (chmod 600 {path}; a Kubernetes Secret volume: defaultMode: 0400)"
    )]
    KeyMode {
        path: PathBuf,
        mode: u32,
        problem: &'static str,
    },
}

/// What is wrong with a private key file's mode, by PostgreSQL's rule for its server key
/// (and ssh's for private keys): nobody but the owner may access it, except that a key
/// owned by root may be readable by its group (Debian's `ssl-cert` convention). `None` when
/// the mode is fine.
fn key_mode_problem(mode: u32, owner_uid: u32) -> Option<&'static str> {
    if mode & 0o007 != 0 {
        Some("other users can access it")
    } else if owner_uid == 0 && mode & 0o030 != 0 {
        Some("its group can write or execute it")
    } else if owner_uid != 0 && mode & 0o070 != 0 {
        Some("its group can access it and root does not own it")
    } else {
        None
    }
}

/// Refuses a key file others can read: the key is this agent's identity to every client
/// of the fleet CA, and a warning in a daemon's log is read too late. Follows symlinks, as
/// a Kubernetes Secret volume's files are.
fn check_key_mode(path: &Path) -> Result<(), TlsError> {
    use std::os::unix::fs::MetadataExt as _;
    let meta = std::fs::metadata(path).map_err(|source| TlsError::KeyStat {
        path: path.to_path_buf(),
        source,
    })?;
    let mode = meta.mode() & 0o7777;
    match key_mode_problem(mode, meta.uid()) {
        Some(problem) => Err(TlsError::KeyMode {
            path: path.to_path_buf(),
            mode,
            problem,
        }),
        None => Ok(()),
    }
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

/// The acceptor for TCP gRPC listeners (ALPN `h2`), or `None` when no TLS files are
/// configured.
pub(crate) fn acceptor(config: &SecurityConfig) -> Result<Option<TlsAcceptor>, TlsError> {
    acceptor_for(config, b"h2")
}

/// The acceptor for the `/metrics` endpoint: the same files and client verification, but
/// ALPN `http/1.1`, the protocol it serves (a scraper offering `h2` first still gets
/// HTTP/1.1 instead of a connection the server cannot speak).
pub(crate) fn http1_acceptor(config: &SecurityConfig) -> Result<Option<TlsAcceptor>, TlsError> {
    acceptor_for(config, b"http/1.1")
}

fn acceptor_for(config: &SecurityConfig, alpn: &[u8]) -> Result<Option<TlsAcceptor>, TlsError> {
    let (Some(cert), Some(key), Some(ca)) = (&config.tls_cert, &config.tls_key, &config.client_ca)
    else {
        return Ok(None);
    };
    let chain = certificates("certificate", cert)?;
    check_key_mode(key)?;
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
    server.alpn_protocols = vec![alpn.to_vec()];
    Ok(Some(TlsAcceptor::from(Arc::new(server))))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_files_others_can_read_are_refused() {
        for (mode, uid) in [
            (0o600, 1000),
            (0o400, 0),
            (0o600, 0),
            (0o640, 0),
            (0o440, 0),
        ] {
            assert_eq!(key_mode_problem(mode, uid), None, "{mode:o} uid {uid}");
        }
        for (mode, uid) in [
            (0o644, 0),
            (0o604, 1000),
            (0o640, 1000),
            (0o660, 0),
            (0o666, 0),
            (0o601, 0),
        ] {
            assert!(
                key_mode_problem(mode, uid).is_some(),
                "{mode:o} uid {uid} must be refused"
            );
        }
    }

    #[test]
    fn the_refusal_names_the_file_and_its_mode() {
        use std::os::unix::fs::PermissionsExt as _;
        let dir = tempfile::tempdir().expect("tempdir");
        let key = dir.path().join("agent.key");
        std::fs::write(&key, "not a key").expect("write");
        std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o644)).expect("chmod");
        let message = check_key_mode(&key).expect_err("0644").to_string();
        assert!(
            message.contains(&key.display().to_string()) && message.contains("0644"),
            "{message}"
        );
        std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o600)).expect("chmod");
        check_key_mode(&key).expect("0600 is fine");
    }
}
