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
        .with_ansi(ansi_wanted(
            std::env::var_os("NO_COLOR").as_deref(),
            std::io::stderr().is_terminal(),
        ));
    match log.format {
        LogFormat::Text => builder.try_init(),
        LogFormat::Json => builder.json().try_init(),
    }
    .map_err(|e| anyhow::anyhow!("cannot install log subscriber: {e}"))
}

/// Colour codes only for a person at a terminal who has not set `NO_COLOR` (no-color.org:
/// any non-empty value), never into journald or a file. An explicit `with_ansi(true)`
/// would override tracing-subscriber's own `NO_COLOR` check, so it is made here.
fn ansi_wanted(no_color: Option<&std::ffi::OsStr>, stderr_is_terminal: bool) -> bool {
    stderr_is_terminal && no_color.is_none_or(|v| v.is_empty())
}

#[cfg(test)]
mod tests {
    use std::ffi::OsStr;

    use super::ansi_wanted;

    #[test]
    fn colour_only_at_a_terminal_without_no_color() {
        assert!(ansi_wanted(None, true));
        assert!(ansi_wanted(Some(OsStr::new("")), true));
        assert!(!ansi_wanted(Some(OsStr::new("1")), true));
        assert!(!ansi_wanted(None, false));
    }
}
