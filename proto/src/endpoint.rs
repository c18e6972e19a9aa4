//! Agent endpoints: `unix:PATH` or `tcp:HOST:PORT`, the one syntax both the agent's
//! `--listen` and `dpuctl --agent` accept.

use std::fmt;
use std::path::PathBuf;
use std::str::FromStr;

/// Where the agent listens or where a client reaches it.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Endpoint {
    /// A Unix stream socket path (local callers, identified by peer credentials).
    Unix(PathBuf),
    /// A TCP host and port; IPv6 literals are written in brackets (`tcp:[::1]:50051`).
    Tcp {
        /// Host name or IP literal without brackets.
        host: String,
        /// Port, 1..=65535 (0 is allowed only for listening: pick a free port).
        port: u16,
    },
}

/// Why an endpoint string was rejected.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid endpoint {input:?}: {reason} (expected unix:PATH or tcp:HOST:PORT)")]
pub struct EndpointError {
    input: String,
    reason: &'static str,
}

impl FromStr for Endpoint {
    type Err = EndpointError;

    fn from_str(input: &str) -> Result<Self, Self::Err> {
        let err = |reason| EndpointError {
            input: input.to_owned(),
            reason,
        };
        if let Some(path) = input.strip_prefix("unix:") {
            // Accept the gRPC URI spelling unix:///abs/path as well as unix:/abs/path.
            let path = path.strip_prefix("//").unwrap_or(path);
            if path.is_empty() {
                return Err(err("empty socket path"));
            }
            if path.contains('\0') {
                return Err(err("socket path contains a NUL byte"));
            }
            // ESC, BEL, CR ...: a path no one names by hand, and one that would reach a
            // terminal in every message that names the agent.
            if path.chars().any(char::is_control) {
                return Err(err("socket path contains a control character"));
            }
            // sun_path is 108 bytes including the terminating NUL.
            if path.len() > 107 {
                return Err(err("socket path longer than 107 bytes"));
            }
            return Ok(Self::Unix(PathBuf::from(path)));
        }
        let Some(rest) = input.strip_prefix("tcp:") else {
            return Err(err("unknown scheme"));
        };
        let rest = rest.strip_prefix("//").unwrap_or(rest);
        let (host, port) = rest.rsplit_once(':').ok_or_else(|| err("missing :PORT"))?;
        let port: u16 = port
            .parse()
            .map_err(|_| err("port is not a number in 0..=65535"))?;
        let host = match host.strip_prefix('[') {
            Some(inner) => inner
                .strip_suffix(']')
                .ok_or_else(|| err("unbalanced '[' in IPv6 host"))?,
            None if host.contains(':') => return Err(err("IPv6 hosts must be in brackets")),
            None => host,
        };
        if host.is_empty() {
            return Err(err("empty host"));
        }
        if !host
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | ':' | '_' | '%'))
        {
            return Err(err("host contains characters not allowed in a host name"));
        }
        Ok(Self::Tcp {
            host: host.to_owned(),
            port,
        })
    }
}

impl fmt::Display for Endpoint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Unix(path) => write!(f, "unix:{}", path.display()),
            Self::Tcp { host, port } if host.contains(':') => write!(f, "tcp:[{host}]:{port}"),
            Self::Tcp { host, port } => write!(f, "tcp:{host}:{port}"),
        }
    }
}

/// The agent's default Unix socket; the systemd unit and `dpuctl` agree on it.
pub const DEFAULT_AGENT_SOCKET: &str = "/run/dpu-agent/dpu-agent.sock";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_prints_both_kinds() {
        for (text, canonical) in [
            ("unix:/run/a.sock", "unix:/run/a.sock"),
            ("unix:///run/a.sock", "unix:/run/a.sock"),
            ("tcp:127.0.0.1:50051", "tcp:127.0.0.1:50051"),
            ("tcp:[::1]:50051", "tcp:[::1]:50051"),
            ("tcp:dpu-01.lab:0", "tcp:dpu-01.lab:0"),
        ] {
            let endpoint: Endpoint = text.parse().expect(text);
            assert_eq!(endpoint.to_string(), canonical);
        }
    }

    #[test]
    fn rejects_malformed_endpoints_with_a_reason() {
        for (text, reason) in [
            ("http://x:1", "unknown scheme"),
            ("unix:", "empty socket path"),
            ("tcp:host", "missing :PORT"),
            ("tcp:host:99999", "port"),
            ("tcp:::1:80", "brackets"),
            ("tcp::80", "empty host"),
            ("tcp:a;b:80", "host contains"),
            ("unix:/run/a\x1b[2J.sock", "control character"),
            ("tcp:a\x07:80", "host contains"),
        ] {
            let err = text.parse::<Endpoint>().expect_err(text);
            assert!(err.to_string().contains(reason), "{text}: {err}");
        }
        let long = format!("unix:/{}", "a".repeat(120));
        assert!(long.parse::<Endpoint>().is_err());
    }
}
