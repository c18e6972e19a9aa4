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

/// `bdev_get_iostat` for one bdev (or all): tries the `names` form (SPDK ≥ 26.01), and on
/// "Invalid parameters" (-32602) falls back to the older `name` form (SPDK ≤ 25.09).
#[derive(Debug)]
#[must_use = "a SNAP call does nothing until it is executed"]
pub struct IostatCall {
    pub(super) client: super::SnapClient,
    pub(super) name: Option<String>,
    pub(super) timeout: Option<Duration>,
}

impl IostatCall {
    /// Overrides the client's per-call deadline (for each attempt).
    pub fn timeout(mut self, deadline: Duration) -> Self {
        self.timeout = Some(deadline);
        self
    }

    /// Sends the call (twice at most) and decodes the counters.
    pub async fn execute(mut self) -> Result<Iostat, SnapError> {
        let Some(name) = self.name.take() else {
            return self
                .with_deadline(self.client.call_bare("bdev_get_iostat"))
                .execute()
                .await;
        };
        let names = IostatByNames {
            names: vec![name.clone()],
        };
        let first = self.with_deadline(self.client.call("bdev_get_iostat", names));
        match first.execute().await {
            Err(e) if e.code() == Some(-32602) => {
                tracing::debug!(error = %e, "bdev_get_iostat rejected `names`; retrying with `name`");
                let call = self.client.call("bdev_get_iostat", IostatByName { name });
                self.with_deadline(call).execute().await
            }
            other => other,
        }
    }

    fn with_deadline(&self, call: SnapCall<Iostat>) -> SnapCall<Iostat> {
        match self.timeout {
            Some(deadline) => call.timeout(deadline),
            None => call,
        }
    }
}
