//! Client for the NVIDIA SNAP / SPDK JSON-RPC socket (storage.md §2, §3).
//!
//! SNAP 4 (DOCA SNAP, BlueField-3), SNAP 3 (mlnx_snap, BlueField-2) and plain SPDK share the
//! transport and the standard SPDK methods but name the NVMe emulation methods differently,
//! so the agent asks `rpc_get_methods` which dialect it is talking to before it acts.
//!
//! Every typed operation is a method on [`SnapClient`] returning a [`SnapCall`] (set a
//! `timeout`, then `execute`): standard SPDK bdev methods in `bdev.rs`, DOCA SNAP `nvme_*` in
//! `snap4.rs`, mlnx_snap `subsystem_nvme_*`/`controller_nvme_*` in `snap3.rs`, and
//! [`NvmeEmulation`] dispatching between the two. Keys the reference marks UNVERIFIED live in
//! [`unverified`]. Errors keep SNAP's code and message ([`SnapError::kind`] classifies them).

use std::path::{Path, PathBuf};
use std::time::Duration;

use dpu_jsonrpc::{Client, ClientOptions};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

mod bdev;
mod call;
mod emulation;
mod error;
mod snap3;
mod snap4;
pub mod unverified;

pub use bdev::{AddressFamilyParam, AttachController, BdevInfo, BdevIostat, Iostat, TransportType};
pub use call::{IostatCall, SnapCall};
pub use emulation::{ControllerRef, EmulatedFunction, NvmeEmulation};
pub use error::{SnapError, SnapErrorKind};
pub use snap3::{
    Snap3ControllerCreate, Snap3ControllerCreated, Snap3ControllerInfo, Snap3NamespaceAttach,
    Snap3Subsystem, Snap3SubsystemInfo,
};
pub use snap4::{
    ControllerCreate, ControllerCreated, Ignored, NamespaceCreate, NamespaceInfo,
    SubsystemController, SubsystemInfo,
};
pub use unverified::{ControllerInfo, SubsystemCreate};

/// Where SNAP and SPDK listen unless told otherwise (`SPDK_DEFAULT_RPC_ADDR`).
pub const DEFAULT_SNAP_SOCKET: &str = "/var/tmp/spdk.sock";

/// `snap_rpc.py`'s default call timeout; emulation calls can legitimately take seconds.
const DEFAULT_CALL_TIMEOUT: Duration = Duration::from_secs(60);

/// Which method family the peer implements, decided from its method list.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SnapDialect {
    /// DOCA SNAP 4: `nvme_subsystem_create`, `nvme_controller_create`, ...
    Snap4,
    /// mlnx_snap 3: `subsystem_nvme_create`, `controller_nvme_create`, ...
    Snap3,
    /// SPDK without SNAP's NVMe emulation (a lab target or a plain `spdk_tgt`).
    PlainSpdk,
}

impl SnapDialect {
    /// Decides the dialect from `rpc_get_methods`' answer.
    pub fn from_methods<S: AsRef<str>>(methods: &[S]) -> Self {
        let has = |name: &str| methods.iter().any(|m| m.as_ref() == name);
        if has("nvme_subsystem_create") {
            Self::Snap4
        } else if has("subsystem_nvme_create") {
            Self::Snap3
        } else {
            Self::PlainSpdk
        }
    }
}

/// `spdk_get_version`'s answer; the only stable field is the human-readable version.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct SpdkVersion {
    /// E.g. `SPDK v23.01`, as SNAP reports it.
    pub version: String,
}

/// Talks to SNAP or SPDK over its JSON-RPC 2.0 socket; cheap to clone, shares one connection.
#[derive(Debug, Clone)]
pub struct SnapClient {
    rpc: Client,
}

impl SnapClient {
    /// A client for the socket at `socket` (usually [`DEFAULT_SNAP_SOCKET`]); connects lazily.
    pub fn new(socket: impl Into<PathBuf>) -> Self {
        let options = ClientOptions {
            call_timeout: DEFAULT_CALL_TIMEOUT,
            ..ClientOptions::v2()
        };
        Self::with_client(Client::new(socket, options))
    }

    /// Wraps an existing JSON-RPC client (custom timeouts or frame limits).
    pub fn with_client(rpc: Client) -> Self {
        Self { rpc }
    }

    /// The socket this client talks to.
    pub fn socket(&self) -> &Path {
        self.rpc.path()
    }

    /// `spdk_get_version`: which SPDK the peer is built on (also a cheap liveness probe).
    pub async fn spdk_get_version(&self) -> Result<SpdkVersion, SnapError> {
        self.rpc
            .request("spdk_get_version")
            .execute()
            .await
            .map_err(|e| self.error(e))
    }

    /// `rpc_get_methods`: every method the peer currently accepts.
    pub async fn rpc_get_methods(&self) -> Result<Vec<String>, SnapError> {
        self.rpc
            .request("rpc_get_methods")
            .execute()
            .await
            .map_err(|e| self.error(e))
    }

    /// Asks the peer for its methods and decides which SNAP dialect it speaks.
    pub async fn dialect(&self) -> Result<SnapDialect, SnapError> {
        let methods = self.rpc_get_methods().await?;
        let dialect = SnapDialect::from_methods(&methods);
        tracing::debug!(?dialect, methods = methods.len(), "detected SNAP dialect");
        Ok(dialect)
    }

    fn error(&self, source: dpu_jsonrpc::Error) -> SnapError {
        SnapError::Rpc {
            socket: self.socket().to_owned(),
            source,
        }
    }

    /// Starts a typed call of `method` with `params`; the result decodes into `T`.
    fn call<T: DeserializeOwned>(&self, method: &str, params: impl Serialize) -> SnapCall<T> {
        SnapCall::new(self.rpc.request(method).params(params), self.socket())
    }

    /// Starts a typed call of `method` without params.
    fn call_bare<T: DeserializeOwned>(&self, method: &str) -> SnapCall<T> {
        SnapCall::new(self.rpc.request(method), self.socket())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{json, Value};
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::UnixListener;

    #[test]
    fn dialect_from_method_list() {
        let snap4 = [
            "rpc_get_methods",
            "nvme_subsystem_create",
            "bdev_get_iostat",
        ];
        assert_eq!(SnapDialect::from_methods(&snap4), SnapDialect::Snap4);
        let snap3 = ["subsystem_nvme_create", "controller_nvme_create"];
        assert_eq!(SnapDialect::from_methods(&snap3), SnapDialect::Snap3);
        let spdk = ["bdev_nvme_attach_controller", "nvmf_create_subsystem"];
        assert_eq!(SnapDialect::from_methods(&spdk), SnapDialect::PlainSpdk);
        assert_eq!(
            SnapDialect::from_methods::<&str>(&[]),
            SnapDialect::PlainSpdk
        );
    }

    /// Answers each request on one connection from `answer`, after checking it has the
    /// JSON-RPC 2.0 shape with no params (both methods take none).
    async fn serve(listener: UnixListener, answer: fn(&str) -> Value, calls: usize) {
        let (mut stream, _) = listener.accept().await.expect("accept");
        let mut buf = Vec::new();
        for _ in 0..calls {
            let request = loop {
                let mut values = serde_json::Deserializer::from_slice(&buf).into_iter::<Value>();
                if let Some(Ok(v)) = values.next() {
                    let end = values.byte_offset();
                    buf.drain(..end);
                    break v;
                }
                let mut chunk = [0_u8; 1024];
                let n = stream.read(&mut chunk).await.expect("read");
                assert_ne!(n, 0, "client hung up");
                buf.extend_from_slice(&chunk[..n]);
            };
            assert_eq!(request["jsonrpc"], "2.0");
            assert!(request.get("params").is_none(), "{request}");
            let method = request["method"].as_str().expect("method");
            let reply = json!({"jsonrpc":"2.0","id":request["id"],"result":answer(method)});
            stream
                .write_all(reply.to_string().as_bytes())
                .await
                .expect("write");
        }
    }

    #[tokio::test]
    async fn version_methods_and_dialect_over_the_socket() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("spdk.sock");
        let listener = UnixListener::bind(&path).expect("bind");
        let server = tokio::spawn(serve(
            listener,
            |method| match method {
                "spdk_get_version" => json!({"version":"SPDK v23.01","fields":{"major":23}}),
                _ => json!([
                    "spdk_get_version",
                    "rpc_get_methods",
                    "nvme_subsystem_create"
                ]),
            },
            3,
        ));
        let snap = SnapClient::new(&path);
        let version = snap.spdk_get_version().await.expect("version");
        assert_eq!(version.version, "SPDK v23.01");
        let methods = snap.rpc_get_methods().await.expect("methods");
        assert_eq!(methods.len(), 3);
        assert_eq!(snap.dialect().await.expect("dialect"), SnapDialect::Snap4);
        server.await.expect("server passes");
    }

    #[tokio::test]
    async fn missing_socket_is_transient_and_names_it() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("absent.sock");
        let err = SnapClient::new(&path)
            .spdk_get_version()
            .await
            .expect_err("no SNAP");
        assert!(err.is_transient());
        assert!(err.to_string().contains("absent.sock"), "{err}");
    }
}
