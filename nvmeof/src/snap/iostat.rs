//! `bdev_get_iostat`: [`IostatCall`], the call that sends whichever param form the peer takes
//! and falls back to the other once, and the [`SnapClient`] method that builds it. Apart
//! from `bdev.rs` so that the arrow runs one way: this file uses the bdev answer and param
//! types, `bdev.rs` knows nothing of the call.

use std::time::Duration;

use super::bdev::{Iostat, IostatByName, IostatByNames};
use super::call::SnapCall;
use super::client::SnapClient;
use super::error::SnapError;
use super::iostat_form::IostatForm;

/// `bdev_get_iostat` for one bdev (or all): sends the form the peer's release takes (asked
/// once with `spdk_get_version`, then kept by the client) and, when the peer refuses the
/// params (-32603 decode failure, or -32602 from a non-SPDK server), tries the other form once
/// and keeps whichever worked.
#[derive(Debug)]
#[must_use = "a SNAP call does nothing until it is executed"]
pub struct IostatCall {
    pub(super) client: SnapClient,
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

impl SnapClient {
    /// `bdev_get_iostat` for `name` (or every bdev), in whichever param form the peer takes.
    pub fn bdev_get_iostat(&self, name: Option<&str>) -> IostatCall {
        IostatCall {
            client: self.clone(),
            name: name.map(str::to_owned),
            timeout: None,
        }
    }
}
