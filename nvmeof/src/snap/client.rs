//! [`SnapClient`], the handle on one SNAP/SPDK JSON-RPC socket, with the calls every dialect
//! shares (`spdk_get_version`, `rpc_get_methods`) and the plumbing the method files use to
//! build typed calls. The method families (`bdev.rs`, `snap3.rs`, `snap4.rs`, `iostat.rs`,
//! `emulation.rs`) add their own `impl SnapClient` blocks; keeping the type out of
//! `snap/mod.rs` lets them name it without importing the module that re-exports them.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use dpu_jsonrpc::{Client, ClientOptions};
use serde::de::DeserializeOwned;
use serde::Serialize;

use super::call::SnapCall;
use super::dialect::SnapDialect;
use super::error::SnapError;
use super::iostat_form::IostatForm;
use super::version::SpdkVersion;

/// `snap_rpc.py`'s default call timeout; emulation calls can legitimately take seconds.
const DEFAULT_CALL_TIMEOUT: Duration = Duration::from_secs(60);

/// Talks to SNAP or SPDK over its JSON-RPC 2.0 socket; cheap to clone, shares one connection
/// and what it learnt about the peer (the `bdev_get_iostat` form it accepts).
#[derive(Debug, Clone)]
pub struct SnapClient {
    rpc: Client,
    iostat_form: Arc<Mutex<Option<IostatForm>>>,
}

impl SnapClient {
    /// A client for the socket at `socket` (usually [`DEFAULT_SNAP_SOCKET`](super::DEFAULT_SNAP_SOCKET)); connects lazily.
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

    pub(super) fn remember_iostat_form(&self, form: IostatForm) {
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
    pub(super) fn call<T: DeserializeOwned>(
        &self,
        method: &str,
        params: impl Serialize,
    ) -> SnapCall<T> {
        SnapCall::new(self.rpc.request(method).params(params), self.socket())
    }

    /// Starts a typed call of `method` without params.
    pub(super) fn call_bare<T: DeserializeOwned>(&self, method: &str) -> SnapCall<T> {
        SnapCall::new(self.rpc.request(method), self.socket())
    }
}
