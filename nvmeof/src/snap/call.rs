//! Typed calls: a handle method builds one, `timeout` adjusts it, `execute` sends it.
//! [`SnapCall`] is the plain one; [`IostatCall`](super::IostatCall), which needs a client
//! to retry with, is in `iostat.rs`.

use std::marker::PhantomData;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::de::DeserializeOwned;

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
