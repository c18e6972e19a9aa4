//! What every handler gets: the global flags and the run's one agent session.

use dpu_host::agent::connect::TlsFiles;
use dpu_host::agent::session::Session;
use dpu_proto::v1::storage_client::StorageClient;
use tonic::transport::Channel;

use crate::cli::{Cli, OutputFormat};

pub(crate) use dpu_host::agent::session::rpc_error;

/// What every handler needs from the global flags: the flags themselves and the one
/// agent session of this run (dialled on first use, then shared by every call).
#[derive(Debug)]
pub(crate) struct Env<'a> {
    pub(crate) cli: &'a Cli,
    pub(crate) session: Session,
}

impl Env<'_> {
    pub(crate) fn json(&self) -> bool {
        self.cli.output == OutputFormat::Json
    }

    /// The session's channel to the agent.
    pub(crate) async fn channel(&self) -> anyhow::Result<Channel> {
        Ok(self.session.agent().channel().await?)
    }

    /// A `dpu.v1.Storage` client on the session's channel, taking the largest answers the
    /// agent sends.
    pub(crate) async fn storage_client(&self) -> anyhow::Result<StorageClient<Channel>> {
        Ok(StorageClient::new(self.channel().await?)
            .max_decoding_message_size(dpu_proto::MAX_MESSAGE_BYTES))
    }
}

/// The client certificate flags, when all three are given.
pub(crate) fn tls_files(cli: &Cli) -> Option<TlsFiles> {
    match (&cli.ca, &cli.cert, &cli.key) {
        (Some(ca), Some(cert), Some(key)) => Some(TlsFiles {
            ca: ca.clone(),
            cert: cert.clone(),
            key: key.clone(),
            name: cli.tls_name.clone(),
        }),
        _ => None,
    }
}
