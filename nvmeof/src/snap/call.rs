//! Typed calls: a handle method builds one, `timeout` adjusts it, `execute` sends it.

use std::marker::PhantomData;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::de::DeserializeOwned;

use super::bdev::{Iostat, IostatByName, IostatByNames};
use super::SnapError;

/// One SNAP/SPDK call being built; nothing is sent until [`execute`](Self::execute).
#[derive(Debug)]
#[must_use = "a SNAP call does nothing until it is executed"]
pub struct SnapCall<T> {
    request: dpu_jsonrpc::Request,
    socket: PathBuf,
    result: PhantomData<fn() -> T>,
}

impl<T: DeserializeOwned> SnapCall<T> {
    pub(super) fn new(request: dpu_jsonrpc::Request, socket: &Path) -> Self {
        Self {
            request,
            socket: socket.to_owned(),
            result: PhantomData,
        }
    }

    /// Overrides the client's per-call deadline for this call.
    pub fn timeout(mut self, deadline: Duration) -> Self {
        self.request = self.request.timeout(deadline);
        self
    }

    /// Sends the call and decodes the result.
    pub async fn execute(self) -> Result<T, SnapError> {
        let socket = self.socket;
        self.request
            .execute()
            .await
            .map_err(|source| SnapError::Rpc { socket, source })
    }
}

/// Which request form of `bdev_get_iostat` names one bdev. SPDK changed it: `{"name"}` up to
/// v26.01, `{"names": [...]}` from v26.01, and v26.05 dropped `name` (CHANGELOG v26.01,
/// v26.05). Every SPDK a SNAP ships today (DOCA SNAP 4 is built on v24.01) takes only `name`
/// and answers `names` with -32603 "spdk_json_decode_object failed".
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IostatForm {
    /// `{"name": bdev}`: SPDK up to v26.01.
    Name,
    /// `{"names": [bdev]}`: SPDK v26.01 and later (the only form from v26.05).
    Names,
}

impl IostatForm {
    /// The form a release takes: `names` from v26.05 (where `name` is gone), `name` before
    /// (v26.01 takes both) and when the release is unknown.
    pub fn for_release(release: Option<(u32, u32)>) -> Self {
        match release {
            Some(release) if release >= (26, 5) => Self::Names,
            _ => Self::Name,
        }
    }

    fn other(self) -> Self {
        match self {
            Self::Name => Self::Names,
            Self::Names => Self::Name,
        }
    }
}

/// `bdev_get_iostat` for one bdev (or all): sends the form the peer's release takes (asked
/// once with `spdk_get_version`, then kept by the client) and, when the peer refuses the
/// params (-32603 decode failure, or -32602 from a non-SPDK server), tries the other form once
/// and keeps whichever worked.
#[derive(Debug)]
#[must_use = "a SNAP call does nothing until it is executed"]
pub struct IostatCall {
    pub(super) client: super::SnapClient,
    pub(super) name: Option<String>,
    pub(super) timeout: Option<Duration>,
}

/// The codes with which a JSON-RPC server refuses params it cannot decode: SPDK's decoders
/// answer -32603 (`SPDK_JSONRPC_ERROR_INTERNAL_ERROR`, "spdk_json_decode_object failed"),
/// other servers -32602.
fn params_refused(err: &SnapError) -> bool {
    matches!(err.code(), Some(-32603 | -32602))
}

impl IostatCall {
    /// Overrides the client's per-call deadline (for each attempt).
    pub fn timeout(mut self, deadline: Duration) -> Self {
        self.timeout = Some(deadline);
        self
    }

    /// Sends the call (a version query the first time, then twice at most) and decodes the
    /// counters.
    pub async fn execute(mut self) -> Result<Iostat, SnapError> {
        let Some(name) = self.name.take() else {
            return self
                .with_deadline(self.client.call_bare("bdev_get_iostat"))
                .execute()
                .await;
        };
        let form = self.form().await?;
        match self.send(form, &name).await {
            Err(first) if params_refused(&first) => {
                tracing::debug!(error = %first, ?form, "bdev_get_iostat refused this form; trying the other");
                let other = form.other();
                match self.send(other, &name).await {
                    Ok(stats) => {
                        self.client.remember_iostat_form(other);
                        Ok(stats)
                    }
                    Err(_) => Err(first),
                }
            }
            other => other,
        }
    }

    /// The form the client learnt, or the one the peer's release takes.
    async fn form(&self) -> Result<IostatForm, SnapError> {
        if let Some(form) = self.client.iostat_form() {
            return Ok(form);
        }
        let release = match self.client.spdk_get_version().await {
            Ok(version) => version.release(),
            Err(e) if e.is_transient() => return Err(e),
            // A peer without `spdk_get_version` (not SPDK-based): guess, then fall back.
            Err(_) => None,
        };
        let form = IostatForm::for_release(release);
        self.client.remember_iostat_form(form);
        Ok(form)
    }

    async fn send(&self, form: IostatForm, name: &str) -> Result<Iostat, SnapError> {
        let call = match form {
            IostatForm::Name => self.client.call(
                "bdev_get_iostat",
                IostatByName {
                    name: name.to_owned(),
                },
            ),
            IostatForm::Names => self.client.call(
                "bdev_get_iostat",
                IostatByNames {
                    names: vec![name.to_owned()],
                },
            ),
        };
        self.with_deadline(call).execute().await
    }

    fn with_deadline(&self, call: SnapCall<Iostat>) -> SnapCall<Iostat> {
        match self.timeout {
            Some(deadline) => call.timeout(deadline),
            None => call,
        }
    }
}
