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
use std::sync::{Arc, Mutex};
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

pub use bdev::{
    AddressFamilyParam, AttachController, BdevInfo, BdevIostat, Iostat, NvmeController,
    NvmeControllerPath, PathHost, TransportId, TransportType,
};
pub use call::{IostatCall, IostatForm, SnapCall};
pub use emulation::{
    default_serial, ControllerParams, ControllerRef, EmulatedFunction, NamespaceIds, NvmeEmulation,
    SubsystemParams, DEFAULT_MODEL_NUMBER,
};
pub use error::{SnapError, SnapErrorKind};
pub use snap3::{
    Snap3ControllerCreate, Snap3ControllerCreated, Snap3ControllerInfo, Snap3EmulationManager,
    Snap3NamespaceAttach, Snap3Subsystem, Snap3SubsystemInfo,
};
pub use snap4::{
    ControllerCreate, ControllerCreated, EmulationFunctionInfo, EmulationVfInfo, Ignored,
    NamespaceCreate, NamespaceInfo, SubsystemController, SubsystemInfo,
};
pub use unverified::{ControllerInfo, SubsystemCreate, STATE_STARTED};

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

/// `spdk_get_version`'s answer: the human-readable version and, since SPDK v19.10, its
/// parts (`lib/rpc/rpc.c`).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct SpdkVersion {
    /// E.g. `SPDK v24.01` or `SPDK v24.01.1-pre git sha1 …`, as SNAP reports it.
    pub version: String,
    /// The numeric parts, when the peer sends them.
    #[serde(default)]
    pub fields: Option<SpdkVersionFields>,
}

/// The `fields` object of `spdk_get_version`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
pub struct SpdkVersionFields {
    /// Year of the release, e.g. 24.
    pub major: u32,
    /// Month of the release, e.g. 1.
    #[serde(default)]
    pub minor: u32,
}

impl SpdkVersion {
    /// The release as (year, month), from `fields` or else parsed from the text; request
    /// forms that changed between releases are chosen from it (see [`IostatForm`]).
    pub fn release(&self) -> Option<(u32, u32)> {
        if let Some(fields) = self.fields {
            return Some((fields.major, fields.minor));
        }
        let text = self
            .version
            .split_whitespace()
            .find_map(|w| w.strip_prefix('v'))?;
        let mut parts = text.split(['.', '-']);
        let major = parts.next()?.parse().ok()?;
        let minor = parts.next()?.parse().ok()?;
        Some((major, minor))
    }
}

/// Talks to SNAP or SPDK over its JSON-RPC 2.0 socket; cheap to clone, shares one connection
/// and what it learnt about the peer (the `bdev_get_iostat` form it accepts).
#[derive(Debug, Clone)]
pub struct SnapClient {
    rpc: Client,
    iostat_form: Arc<Mutex<Option<IostatForm>>>,
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
        Self {
            rpc,
            iostat_form: Arc::new(Mutex::new(None)),
        }
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

    /// The `bdev_get_iostat` form this peer was found to take, once known.
    pub fn iostat_form(&self) -> Option<IostatForm> {
        *self
            .iostat_form
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn remember_iostat_form(&self, form: IostatForm) {
        *self
            .iostat_form
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(form);
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

    #[test]
    fn releases_from_fields_or_text_choose_the_iostat_form() {
        let version = |text: &str| SpdkVersion {
            version: text.to_owned(),
            fields: None,
        };
        assert_eq!(version("SPDK v24.01").release(), Some((24, 1)));
        assert_eq!(
            version("SPDK v24.01.1-pre git sha1 3a2b1c").release(),
            Some((24, 1))
        );
        assert_eq!(version("SNAP").release(), None);
        let with_fields = SpdkVersion {
            version: "custom".to_owned(),
            fields: Some(SpdkVersionFields {
                major: 26,
                minor: 5,
            }),
        };
        assert_eq!(with_fields.release(), Some((26, 5)));
        assert_eq!(IostatForm::for_release(Some((24, 1))), IostatForm::Name);
        assert_eq!(IostatForm::for_release(Some((26, 1))), IostatForm::Name);
        assert_eq!(IostatForm::for_release(Some((26, 5))), IostatForm::Names);
        assert_eq!(IostatForm::for_release(None), IostatForm::Name);
    }

    /// A peer that answers `spdk_get_version` with `version` and accepts only the
    /// `bdev_get_iostat` form `accepts`, refusing the other as SPDK does (-32603). Returns
    /// the methods and params it saw.
    async fn iostat_peer(
        listener: UnixListener,
        version: &'static str,
        accepts: &'static str,
        calls: usize,
    ) -> Vec<Value> {
        let (mut stream, _) = listener.accept().await.expect("accept");
        let mut buf = Vec::new();
        let mut seen = Vec::new();
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
            seen.push(request.clone());
            let reply = match request["method"].as_str() {
                Some("spdk_get_version") => {
                    json!({"jsonrpc":"2.0","id":request["id"],"result":{"version":version}})
                }
                _ if request["params"].get(accepts).is_some() => json!({
                    "jsonrpc":"2.0","id":request["id"],
                    "result":{"tick_rate":1000,"ticks":5,"bdevs":[{"name":"r0n1","bytes_read":4096,
                        "num_read_ops":1,"bytes_written":0,"num_write_ops":0}]}
                }),
                _ => json!({"jsonrpc":"2.0","id":request["id"],
                    "error":{"code":-32603,"message":"spdk_json_decode_object failed"}}),
            };
            stream
                .write_all(reply.to_string().as_bytes())
                .await
                .expect("write");
        }
        seen
    }

    #[tokio::test]
    async fn iostat_sends_name_to_spdk_24_01_and_remembers_it() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("spdk.sock");
        let listener = UnixListener::bind(&path).expect("bind");
        let peer = tokio::spawn(iostat_peer(listener, "SPDK v24.01", "name", 3));
        let snap = SnapClient::new(&path);
        for _ in 0..2 {
            let stats = snap
                .bdev_get_iostat(Some("r0n1"))
                .execute()
                .await
                .expect("iostat");
            assert_eq!(stats.bdevs[0].bytes_read, 4096);
        }
        let seen = peer.await.expect("peer");
        // One version query, then `name` each time: never the `names` that v24.01 refuses.
        assert_eq!(seen[0]["method"], "spdk_get_version");
        assert_eq!(seen[1]["params"], json!({"name":"r0n1"}));
        assert_eq!(seen[2]["params"], json!({"name":"r0n1"}));
        assert_eq!(snap.iostat_form(), Some(IostatForm::Name));
    }

    #[tokio::test]
    async fn iostat_falls_back_on_a_decode_failure_and_keeps_the_working_form() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("spdk.sock");
        let listener = UnixListener::bind(&path).expect("bind");
        // A peer claiming v24.01 that takes only `names` (a vendor backport): the first
        // form is refused with -32603, the other is tried once and then kept.
        let peer = tokio::spawn(iostat_peer(listener, "SPDK v24.01", "names", 4));
        let snap = SnapClient::new(&path);
        snap.bdev_get_iostat(Some("r0n1"))
            .execute()
            .await
            .expect("after fallback");
        snap.bdev_get_iostat(Some("r0n1"))
            .execute()
            .await
            .expect("remembered");
        let seen = peer.await.expect("peer");
        assert_eq!(seen[1]["params"], json!({"name":"r0n1"}));
        assert_eq!(seen[2]["params"], json!({"names":["r0n1"]}));
        assert_eq!(seen[3]["params"], json!({"names":["r0n1"]}));
        assert_eq!(snap.iostat_form(), Some(IostatForm::Names));
    }

    #[tokio::test]
    async fn iostat_sends_names_to_spdk_26_05() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("spdk.sock");
        let listener = UnixListener::bind(&path).expect("bind");
        let peer = tokio::spawn(iostat_peer(listener, "SPDK v26.05", "names", 2));
        let snap = SnapClient::new(&path);
        snap.bdev_get_iostat(Some("r0n1"))
            .execute()
            .await
            .expect("iostat");
        let seen = peer.await.expect("peer");
        assert_eq!(seen[1]["params"], json!({"names":["r0n1"]}));
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
