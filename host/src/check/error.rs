//! Why `dpuctl check` could not judge: the host facts' thread failed, or the interfaces or
//! devices it was asked about name nothing on this host. (An agent that cannot be reached is
//! a finding of the check, not an error.)

/// Why [`super::run`] stopped without results.
#[derive(Debug, thiserror::Error)]
pub enum CheckError {
    /// The blocking thread that reads the host's facts panicked or was cancelled.
    #[error("reading the host's facts failed")]
    FactsThread(#[source] tokio::task::JoinError),
    /// An interface or device asked about names nothing on this host: bad input, refused
    /// before the agent is asked. The text is the one the facts give, naming it.
    #[error("{0}")]
    Selection(String),
}
