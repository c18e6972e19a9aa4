//! The one place that installs the tracing subscriber (libraries only emit events).

use std::io::IsTerminal as _;

use anyhow::Context as _;
use tracing_subscriber::EnvFilter;

use crate::config::{LogConfig, LogFormat};

/// Logs go to stderr, where systemd's journal picks them up. `RUST_LOG`, when set, wins
/// over the configured level so an operator can raise verbosity without editing files.
pub(crate) fn init(log: &LogConfig) -> anyhow::Result<()> {
    let filter = match std::env::var("RUST_LOG") {
        Ok(env) if !env.is_empty() => {
            EnvFilter::try_new(&env).with_context(|| format!("invalid RUST_LOG filter {env:?}"))?
        }
        _ => EnvFilter::try_new(&log.level)
            .with_context(|| format!("invalid log level {:?}", log.level))?,
    };
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        // Colour codes only for a person at a terminal, never into journald or a file.
        .with_ansi(std::io::stderr().is_terminal());
    match log.format {
        LogFormat::Text => builder.try_init(),
        LogFormat::Json => builder.json().try_init(),
    }
    .map_err(|e| anyhow::anyhow!("cannot install log subscriber: {e}"))
}
