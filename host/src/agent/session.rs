//! One session per command run: the agent connection (the endpoint, the TLS files read
//! once, the timeout, one channel) and the machine the run reads (its sys root).
//!
//! Why one: a proof measures between snapshots, and a dial inside the measurement window
//! (a new TCP or Unix connection, a TLS handshake, three PEM files re-read) is both slow and
//! noise. The channel is opened on first use and reused; tonic's `Channel` is a cheap handle
//! onto one HTTP/2 connection (reconnecting by itself if the agent restarts).

use std::path::{Path, PathBuf};
use std::time::Duration;

use dpu_probe::SysRoot;
use dpu_proto::Endpoint;
use tokio::sync::OnceCell;
use tonic::transport::Channel;

use crate::agent::connect::{connect_with, ClientTls, ConnectError, TlsFiles};

/// Why the agent could not be reached or a call failed, with the call's name.
#[derive(Debug, thiserror::Error)]
pub enum AgentError {
    /// The channel could not be opened (or the TLS files could not be read).
    #[error(transparent)]
    Connect(#[from] ConnectError),
    /// The agent answered a call with an error status. The status is said once, as
    /// [`status_text`]; it is not the error's source, because tonic's own text for it
    /// repeats the message (`code: '…', message: "…"`) after ours.
    #[error("{rpc} failed: {}", status_text(status))]
    Rpc {
        /// The method, as `Service.Method`.
        rpc: &'static str,
        /// The agent's answer.
        status: tonic::Status,
    },
}

/// A gRPC status for people, said once: "the agent's message (InvalidArgument)"; the
/// code's description when the agent sent no message. The code name is the one tonic
/// and grpcurl print, which scripts and docs match on.
pub fn status_text(status: &tonic::Status) -> String {
    let code = status.code();
    if status.message().is_empty() {
        format!("{} ({code:?})", code.description())
    } else {
        format!("{} ({code:?})", status.message())
    }
}

/// Turns a gRPC status into an error that reads well: which call, the code, the agent's
/// message. For `map_err` at each call site.
pub fn rpc_error(rpc: &'static str) -> impl Fn(tonic::Status) -> AgentError {
    move |status| AgentError::Rpc { rpc, status }
}

/// The connection to one agent: its endpoint, the TLS files (read once), the per-call
/// timeout and the one channel every call shares.
///
/// Why apart from [`Session`]: a fleet node, a proof's far-end witness and the demo's
/// storage target are agents to ask, not the machine this run reads; what asks only an
/// agent takes this, and cannot read a sys root it was never given.
#[derive(Debug)]
pub struct AgentConnection {
    endpoint: Endpoint,
    tls: Option<TlsFiles>,
    timeout: Duration,
    /// The TLS material, read from the files on first use.
    client_tls: OnceCell<ClientTls>,
    channel: OnceCell<Channel>,
}

impl AgentConnection {
    /// A connection towards `endpoint`; nothing is opened or read until first use.
    pub fn new(endpoint: Endpoint, tls: Option<TlsFiles>, timeout: Duration) -> Self {
        Self {
            endpoint,
            tls,
            timeout,
            client_tls: OnceCell::new(),
            channel: OnceCell::new(),
        }
    }

    /// A connection to another agent with this one's TLS files and timeout (a proof's far
    /// end, the demo's storage target).
    pub fn to(&self, endpoint: Endpoint) -> Self {
        Self::new(endpoint, self.tls.clone(), self.timeout)
    }

    /// The agent's channel, dialled on the first call and shared by every later one. A failed
    /// dial is not remembered: the next call tries again.
    pub async fn channel(&self) -> Result<Channel, AgentError> {
        self.channel
            .get_or_try_init(|| async {
                let tls = match &self.tls {
                    Some(files) => Some(
                        self.client_tls
                            .get_or_try_init(|| async { ClientTls::read(files) })
                            .await?,
                    ),
                    None => None,
                };
                Ok::<_, AgentError>(connect_with(&self.endpoint, tls, self.timeout).await?)
            })
            .await
            .cloned()
    }

    /// The agent this connection talks to.
    pub fn endpoint(&self) -> &Endpoint {
        &self.endpoint
    }

    /// The client certificate files, when the connection uses mutual TLS.
    pub fn tls_files(&self) -> Option<&TlsFiles> {
        self.tls.as_ref()
    }

    /// The per-call limit: connecting, and each RPC.
    pub fn timeout(&self) -> Duration {
        self.timeout
    }
}

/// One command run on this machine: the agent it asks and the machine it reads (the sys
/// root). What a proof, the host checklist and the demo take: they count on both sides.
#[derive(Debug)]
pub struct Session {
    agent: AgentConnection,
    sys_root: PathBuf,
}

impl Session {
    /// A run asking `agent` and reading the machine under `sys_root` (`/` on a real host).
    pub fn new(agent: AgentConnection, sys_root: impl Into<PathBuf>) -> Self {
        Self {
            agent,
            sys_root: sys_root.into(),
        }
    }

    /// The agent this run asks.
    pub fn agent(&self) -> &AgentConnection {
        &self.agent
    }

    /// The directory sysfs and procfs are read under (`/` on a real host; a fixture tree
    /// in tests).
    pub fn sys_root_path(&self) -> &Path {
        &self.sys_root
    }

    /// [`Self::sys_root_path`] as the probe's root.
    pub fn sys_root(&self) -> SysRoot {
        SysRoot::new(&self.sys_root)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rejected_call_says_the_agents_message_once_with_the_code_name() {
        let err = rpc_error("Storage.CreateRemoteController")(tonic::Status::invalid_argument(
            "spec.subnqn: \"bogus\" is not an NQN",
        ));
        let text = dpu_probe::error_chain(&err);
        assert_eq!(
            text,
            "Storage.CreateRemoteController failed: spec.subnqn: \"bogus\" is not an NQN \
             (InvalidArgument)"
        );
        assert_eq!(text.matches("bogus").count(), 1, "{text}");
        // No message: the code's description stands in for it.
        assert_eq!(
            status_text(&tonic::Status::new(tonic::Code::Unavailable, "")),
            "The service is currently unavailable (Unavailable)"
        );
    }
}
