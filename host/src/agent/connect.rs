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
        /// The socket's path for a `unix:` agent: what [`ConnectError::cause`] looks at to
        /// say whose socket refused this user.
        socket: Option<PathBuf>,
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

/// The most a TLS file may hold: a PEM bundle of a few hundred CA certificates fits with
/// room to spare; `/dev/zero` named as a CA (which grew dpuctl to 23 GiB) does not.
pub const MAX_TLS_FILE_BYTES: u64 = 1 << 20;

/// Reads one TLS file: a regular file only (a device, FIFO or directory is refused before
/// any read, and the open never waits for a FIFO's writer), at most
/// [`MAX_TLS_FILE_BYTES`].
fn read_tls_file(path: &Path) -> std::io::Result<Vec<u8>> {
    use std::io::Read as _;
    use std::os::unix::fs::OpenOptionsExt as _;
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY)
        .open(path)?;
    let meta = file.metadata()?;
    if !meta.is_file() {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            "not a regular file (a device, FIFO or directory is refused)",
        ));
    }
    let too_big = || {
        std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!(
                "larger than {MAX_TLS_FILE_BYTES} bytes: more than PEM certificates or a key \
                 hold"
            ),
        )
    };
    if meta.len() > MAX_TLS_FILE_BYTES {
        return Err(too_big());
    }
    let mut bytes = Vec::with_capacity(usize::try_from(meta.len()).unwrap_or(0));
    // The size can change after the stat: the cap holds whatever the file does.
    file.take(MAX_TLS_FILE_BYTES + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > MAX_TLS_FILE_BYTES {
        return Err(too_big());
    }
    Ok(bytes)
}

impl ClientTls {
    /// Reads the three files, naming the flag of the one that cannot be read; each must be
    /// a regular file of at most [`MAX_TLS_FILE_BYTES`].
    pub fn read(files: &TlsFiles) -> Result<Self, ConnectError> {
        let read = |what: &'static str, path: &Path| {
            read_tls_file(path).map_err(|source| ConnectError::ReadTls {
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
/// [`crate::agent::session::Session`] reads them once.
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
        socket: match agent {
            Endpoint::Unix(path) => Some(path.clone()),
            Endpoint::Tcp { .. } => None,
        },
        source,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn files(ca: &Path, cert: &Path, key: &Path) -> TlsFiles {
        TlsFiles {
            ca: ca.to_owned(),
            cert: cert.to_owned(),
            key: key.to_owned(),
            name: None,
        }
    }

    #[test]
    fn tls_files_must_be_small_regular_files() {
        // Issue 33 §3: `--ca /dev/zero` grew dpuctl until the OOM killer ended it, and a
        // FIFO hung it past every deadline. Both are refused before any read.
        let dir = tempfile::tempdir().expect("tempdir");
        let pem = dir.path().join("ok.pem");
        std::fs::write(&pem, "-----BEGIN CERTIFICATE-----\n").expect("write");
        let fifo = dir.path().join("fifo.pem");
        nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::S_IRWXU).expect("mkfifo");
        let big = dir.path().join("big.pem");
        std::fs::File::create(&big)
            .and_then(|f| f.set_len(MAX_TLS_FILE_BYTES + 1))
            .expect("big file");
        assert!(ClientTls::read(&files(&pem, &pem, &pem)).is_ok());
        for (bad, what, why) in [
            (
                Path::new("/dev/zero"),
                "CA certificate (--ca)",
                "not a regular file",
            ),
            (
                fifo.as_path(),
                "CA certificate (--ca)",
                "not a regular file",
            ),
            (big.as_path(), "CA certificate (--ca)", "larger than"),
            (dir.path(), "CA certificate (--ca)", "not a regular file"),
        ] {
            let err = ClientTls::read(&files(bad, &pem, &pem)).expect_err("refused");
            let ConnectError::ReadTls {
                what: got, source, ..
            } = &err
            else {
                panic!("{err:?}")
            };
            assert_eq!(*got, what);
            assert!(source.to_string().contains(why), "{bad:?}: {source}");
        }
        // The key's flag is named when the key is the bad one.
        let err = ClientTls::read(&files(&pem, &pem, Path::new("/dev/zero"))).expect_err("key");
        assert!(err.to_string().contains("--key"), "{err}");
    }
}
