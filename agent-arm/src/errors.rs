//! The agent's one way to write an error with its causes. Services (for status messages),
//! the storage engine (for rollback reports and logs) and the health checks all need it;
//! it is named here, below all of them, so that storage does not import services to get
//! it.

/// Formats an error with its sources on one line (the workspace's one helper, from
/// `dpu-probe`, which the agent already depends on for every machine read).
pub(crate) use dpu_probe::error_chain;

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
