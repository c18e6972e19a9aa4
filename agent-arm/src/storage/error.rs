//! [`StorageError`]: why a storage change or query was refused or failed, in the storage
//! domain's own terms. The Storage service maps it to a gRPC status in one place
//! (`services::status::from_storage`); nothing below the service edge knows about gRPC.

use super::backend::BackendError;
use super::desired::Key;
use super::store::StoreError;

/// A refused or failed storage operation.
#[derive(Debug, thiserror::Error)]
pub(crate) enum StorageError {
    /// The object the request names is not in the desired state.
    #[error("{0}")]
    NotFound(String),
    /// An object of that name exists with another spec.
    #[error("{0}")]
    AlreadyExists(String),
    /// The request is valid but the document forbids it now (in use, owned by an exposure,
    /// parent missing).
    #[error("{0}")]
    FailedPrecondition(String),
    /// The backend refused or failed a step of the change for `object`; `outcome` says
    /// what the rollback achieved (empty when nothing had been changed).
    #[error("{object}: {}{}", source.describe(), rollback_text(outcome))]
    Backend {
        object: Key,
        source: BackendError,
        outcome: String,
    },
    /// The backend did not finish within the change's deadline; rolled back as `outcome`.
    #[error(
        "the backend did not finish the change within {deadline:?}{}",
        rollback_text(outcome)
    )]
    Deadline {
        deadline: std::time::Duration,
        outcome: String,
    },
    /// The desired state could not be written.
    #[error("cannot save the storage state")]
    Save(#[source] StoreError),
}

fn rollback_text(outcome: &str) -> String {
    if outcome.is_empty() {
        String::new()
    } else {
        format!("; {outcome}")
    }
}

impl StorageError {
    /// A refusal because the document forbids the change now.
    pub(crate) fn precondition(text: impl Into<String>) -> Self {
        Self::FailedPrecondition(text.into())
    }

    /// A refusal because the named object is missing.
    pub(crate) fn not_found(text: impl Into<String>) -> Self {
        Self::NotFound(text.into())
    }

    /// A refusal because the name is taken by another spec.
    pub(crate) fn already_exists(text: impl Into<String>) -> Self {
        Self::AlreadyExists(text.into())
    }
}
