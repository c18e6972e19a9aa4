//! The agent's one way to write an error with its causes. Services (for status messages),
//! the storage engine (for rollback reports and logs) and the health checks all need it;
//! it lives here, below all of them, so that storage does not import services to get it.

/// Formats an error with its sources on one line, "cannot read /sys/x: Permission denied",
/// so a remote reader (a gRPC status, a log line) sees the errno and not only the outer
/// context.
pub(crate) fn error_chain(err: &dyn std::error::Error) -> String {
    let mut text = err.to_string();
    let mut source = err.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, thiserror::Error)]
    #[error("cannot read /sys/x")]
    struct Outer(#[source] std::io::Error);

    #[test]
    fn every_cause_is_written_in_order() {
        let err = Outer(std::io::Error::other("Permission denied"));
        assert_eq!(error_chain(&err), "cannot read /sys/x: Permission denied");
        assert_eq!(error_chain(&err.0), "Permission denied");
    }
}
