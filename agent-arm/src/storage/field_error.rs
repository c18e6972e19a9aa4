//! A field of a storage spec that cannot be used, and why: what every spec decoder
//! (remote controllers, their extra paths, functions) refuses with, so the service maps
//! one type to INVALID_ARGUMENT naming the field. And the one default a transport address
//! takes.

/// The port NVMe-oF targets listen on unless told otherwise (NVMe-oF 1.1 §7.4.9).
pub(crate) const DEFAULT_TRSVCID: u16 = 4420;

/// A field of a spec that cannot be used, and why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{field}: {reason}")]
pub(crate) struct FieldError {
    /// The field's path below the spec, e.g. `reconnect_delay_sec` or
    /// `extra_paths[0].traddr`.
    pub(crate) field: std::borrow::Cow<'static, str>,
    pub(crate) reason: String,
}

pub(crate) fn bad(
    field: impl Into<std::borrow::Cow<'static, str>>,
    reason: impl Into<String>,
) -> FieldError {
    FieldError {
        field: field.into(),
        reason: reason.into(),
    }
}
