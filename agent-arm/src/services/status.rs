//! Mapping errors to gRPC statuses, in one place so every service answers alike.

use std::fmt::Display;

use dpu_probe::ProbeError;

use crate::errors::error_chain;
use tonic::Status;

/// Quotes a request value in an error message, cut to [`dpu_proto::echo::ECHO_MAX`]
/// bytes on a character boundary with its real length: `"aaaa…" (200000 bytes)`. The one
/// helper for echoes: the API's name parsers use the same function, so every message cuts
/// alike.
pub(crate) use dpu_proto::echo;

/// The longest status message the agent sends. The message travels percent-encoded in the
/// `grpc-message` header, which can triple it; 2 KiB stays at most 6 KiB, under the 8 KiB
/// that stock gRPC clients accept for a whole header block (grpc-core's default), so a
/// client always sees the agent's code rather than its own `RESOURCE_EXHAUSTED`.
pub(crate) const MAX_STATUS_MESSAGE: usize = 2048;

/// Cuts a status message to [`MAX_STATUS_MESSAGE`] bytes on a character boundary, saying
/// how long it was. Every status this module builds passes through here, so text from a
/// domain crate (a reason that quotes a value, a backend's reply) is bounded too.
pub(crate) fn bounded(message: String) -> String {
    if message.len() <= MAX_STATUS_MESSAGE {
        return message;
    }
    let mut cut = MAX_STATUS_MESSAGE - 32;
    while !message.is_char_boundary(cut) {
        cut -= 1;
    }
    format!("{}… ({} bytes)", &message[..cut], message.len())
}

/// `INVALID_ARGUMENT` naming the request field, e.g. "name: resource name ... does not
/// match". The message always starts with `{field}:`; values in `err` should be quoted
/// with [`echo()`], and the whole is [`bounded`] whatever `err` holds.
pub(crate) fn invalid(field: &str, err: impl Display) -> Status {
    Status::invalid_argument(bounded(format!("{field}: {err}")))
}

/// `RESOURCE_EXHAUSTED` naming the request field whose size would make the agent do too
/// much work or build too large an answer; like [`invalid`], it starts with `{field}:`.
pub(crate) fn too_much(field: &str, err: impl Display) -> Status {
    Status::resource_exhausted(bounded(format!("{field}: {err}")))
}

/// Builds a closure for `map_err` that reports `field` as invalid.
pub(crate) fn invalid_field<E: Display>(field: &'static str) -> impl Fn(E) -> Status {
    move |err| invalid(field, err)
}

/// Requires a sub-message to be present.
pub(crate) fn required<'a, T>(field: &str, value: Option<&'a T>) -> Result<&'a T, Status> {
    value.ok_or_else(|| invalid(field, "is required"))
}

/// The longest `ApplyOptions.timeout` accepted: a caller waiting longer for a backend has
/// a daemon problem, not a slow change.
pub(crate) const MAX_APPLY_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(600);

/// `ApplyOptions.timeout`, checked: absent, or within (0 s, [`MAX_APPLY_TIMEOUT`]].
pub(crate) fn apply_timeout(
    options: &dpu_proto::v1::ApplyOptions,
) -> Result<Option<std::time::Duration>, Status> {
    let Some(d) = &options.timeout else {
        return Ok(None);
    };
    let timeout = u64::try_from(d.seconds)
        .ok()
        .zip(u32::try_from(d.nanos).ok())
        .map(|(secs, nanos)| std::time::Duration::new(secs, nanos))
        .ok_or_else(|| invalid("options.timeout", "must not be negative"))?;
    if timeout.is_zero() || timeout > MAX_APPLY_TIMEOUT {
        return Err(invalid(
            "options.timeout",
            format!("{timeout:?} is outside (0s, {MAX_APPLY_TIMEOUT:?}]"),
        ));
    }
    Ok(Some(timeout))
}

/// `UNIMPLEMENTED` for an RPC whose backend is not built yet, naming the area that will
/// provide it. Never a fake value: callers must be able to tell "not there" from "empty".
pub(crate) fn not_yet(rpc: &str, area: &str) -> Status {
    Status::unimplemented(format!(
        "{rpc} is not implemented in this agent version (area: {area})"
    ))
}

/// Maps a reader error: a missing object is `NOT_FOUND`, anything else `INTERNAL` with the
/// whole error chain so the operator sees which file failed.
pub(crate) fn from_probe(err: ProbeError) -> Status {
    match err {
        ProbeError::NotFound { .. } => Status::not_found(bounded(err.to_string())),
        other => Status::internal(bounded(error_chain(&other))),
    }
}

/// Runs blocking sysfs reads off the async workers.
pub(crate) async fn blocking<T, F>(f: F) -> Result<T, Status>
where
    F: FnOnce() -> Result<T, ProbeError> + Send + 'static,
    T: Send + 'static,
{
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| Status::internal(format!("reader task failed: {e}")))?
        .map_err(from_probe)
}

/// The one mapping of a storage backend failure to a gRPC status, with the whole chain.
pub(crate) fn from_backend(err: &crate::storage::backend::BackendError) -> Status {
    backend_status(err, err.describe())
}

fn backend_status(err: &crate::storage::backend::BackendError, text: String) -> Status {
    use crate::storage::backend::FailureKind;
    let text = bounded(text);
    match err.kind {
        FailureKind::AlreadyExists | FailureKind::Conflict => Status::already_exists(text),
        FailureKind::NotFound => Status::not_found(text),
        FailureKind::Busy | FailureKind::Unsupported => Status::failed_precondition(text),
        FailureKind::Unavailable => Status::unavailable(text),
        FailureKind::Invalid => Status::invalid_argument(text),
        FailureKind::Other => Status::internal(text),
    }
}

/// The one mapping of the storage domain's errors to gRPC statuses.
impl From<crate::storage::error::StorageError> for Status {
    fn from(err: crate::storage::error::StorageError) -> Self {
        use crate::storage::error::StorageError;
        match &err {
            StorageError::NotFound(text) => Status::not_found(bounded(text.clone())),
            StorageError::AlreadyExists(text) => Status::already_exists(bounded(text.clone())),
            StorageError::FailedPrecondition(text) => {
                Status::failed_precondition(bounded(text.clone()))
            }
            StorageError::Backend { source, .. } => backend_status(source, err.to_string()),
            StorageError::Deadline { .. } => Status::deadline_exceeded(bounded(err.to_string())),
            StorageError::Save(_) => Status::internal(bounded(error_chain(&err))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn echo_cuts_long_values_and_keeps_short_ones() {
        assert_eq!(echo("pf0hpf"), "\"pf0hpf\"");
        let cut = echo(&"a".repeat(200_000));
        assert!(cut.ends_with("…\" (200000 bytes)"), "{cut}");
        assert!(cut.len() < 300, "{}", cut.len());
    }

    #[test]
    fn every_message_is_bounded_and_starts_with_its_field() {
        let status = invalid("selectors[0]", "x".repeat(400_000));
        assert_eq!(status.code(), tonic::Code::InvalidArgument);
        assert!(status.message().starts_with("selectors[0]: xxx"));
        assert!(status.message().len() <= MAX_STATUS_MESSAGE);
        assert!(
            status.message().ends_with("… (400014 bytes)"),
            "{}",
            &status.message()[status.message().len() - 40..]
        );
        let status = too_much("selectors", "20000 selectors");
        assert_eq!(status.code(), tonic::Code::ResourceExhausted);
        assert_eq!(status.message(), "selectors: 20000 selectors");
    }

    #[test]
    fn bounded_never_splits_a_character() {
        let text = "é".repeat(MAX_STATUS_MESSAGE);
        let cut = bounded(text);
        assert!(cut.len() <= MAX_STATUS_MESSAGE);
        assert!(cut.ends_with(&format!("… ({} bytes)", 2 * MAX_STATUS_MESSAGE)));
        let short = "short".to_owned();
        assert_eq!(bounded(short.clone()), short);
    }
}
