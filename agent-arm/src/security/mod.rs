//! Who may call the agent, and what they may do.
//!
//! - **Authentication**: Unix-socket callers are identified by their peer credentials
//!   (`SO_PEERCRED`); TCP listeners require TLS 1.3 ([`tls`]) with a client certificate signed by
//!   the configured CA, unless `insecure_listen` (or `--insecure-listen`) allows plaintext,
//!   which is logged as a warning at start.
//! - **Authorization**: one policy table ([`crate::role::policy`]) says which role each RPC needs; the
//!   caller's role comes from the configuration (Unix uids, certificate names). A method
//!   without an entry is denied.
//! - **Audit**: every call that needs the operator role is logged with the caller, the
//!   method and the outcome (target `audit`).

pub(crate) mod layer;
pub(crate) mod tls;

use std::fmt;
use std::net::SocketAddr;

use tonic::transport::server::{TcpConnectInfo, TlsConnectInfo, UdsConnectInfo};

use crate::config::SecurityConfig;
use crate::role::Role;

/// The most bytes of a request an audit record keeps: every request a person writes fits
/// whole (an exposure spec is a few hundred bytes), and a hostile one (a 200 KB string)
/// cannot make each record as large as itself.
pub(crate) const AUDIT_REQUEST_MAX: usize = 4096;

/// Logs a state-changing request (target `audit`), inside the call's span, cut to
/// [`AUDIT_REQUEST_MAX`] bytes with its length; the authorization layer logs the same
/// call's caller and outcome.
pub(crate) fn audit_request<T: fmt::Debug>(request: &tonic::Request<T>) {
    let text = format!("{:?}", request.get_ref());
    tracing::info!(
        target: "audit",
        request = %audit_text(&text),
        "operator request"
    );
}

/// `text` whole when it fits [`AUDIT_REQUEST_MAX`], else its start on a character
/// boundary and how long it was.
fn audit_text(text: &str) -> std::borrow::Cow<'_, str> {
    if text.len() <= AUDIT_REQUEST_MAX {
        return std::borrow::Cow::Borrowed(text);
    }
    let mut cut = AUDIT_REQUEST_MAX;
    while !text.is_char_boundary(cut) {
        cut -= 1;
    }
    std::borrow::Cow::Owned(format!("{}… ({} bytes)", &text[..cut], text.len()))
}

/// The caller of one request, as far as the transport says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Caller {
    /// A local process on the Unix socket.
    Unix { uid: u32, pid: Option<i32> },
    /// A verified TLS client: the names in its certificate (subject CN, DNS SANs).
    Tls {
        names: Vec<String>,
        addr: Option<SocketAddr>,
    },
    /// A plaintext TCP peer (only with `insecure_listen`).
    InsecureTcp { addr: Option<SocketAddr> },
    /// The transport gave nothing (cannot happen with the agent's listeners).
    Unknown,
}

impl fmt::Display for Caller {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Unix {
                uid,
                pid: Some(pid),
            } => write!(f, "unix uid={uid} pid={pid}"),
            Self::Unix { uid, pid: None } => write!(f, "unix uid={uid}"),
            Self::Tls { names, addr } => write!(
                f,
                "tls {} from {}",
                names.join(","),
                addr.map_or_else(|| "?".to_owned(), |a| a.to_string())
            ),
            Self::InsecureTcp { addr } => write!(
                f,
                "plaintext tcp from {}",
                addr.map_or_else(|| "?".to_owned(), |a| a.to_string())
            ),
            Self::Unknown => f.write_str("unknown"),
        }
    }
}

/// The names a client certificate vouches for: the subject's common names and DNS SANs.
fn certificate_names(der: &[u8]) -> Vec<String> {
    let Ok((_, cert)) = x509_parser::parse_x509_certificate(der) else {
        return Vec::new();
    };
    let mut names: Vec<String> = cert
        .subject()
        .iter_common_name()
        .filter_map(|cn| cn.as_str().ok().map(str::to_owned))
        .collect();
    if let Ok(Some(san)) = cert.subject_alternative_name() {
        for name in &san.value.general_names {
            if let x509_parser::extensions::GeneralName::DNSName(dns) = name {
                names.push((*dns).to_owned());
            }
        }
    }
    names
}

impl Caller {
    /// Reads the caller from a request's extensions (set by tonic's connection layer).
    pub(crate) fn of<B>(request: &http::Request<B>) -> Self {
        let ext = request.extensions();
        if let Some(info) = ext.get::<UdsConnectInfo>() {
            return match info.peer_cred {
                Some(cred) => Self::Unix {
                    uid: cred.uid(),
                    pid: cred.pid(),
                },
                None => Self::Unknown,
            };
        }
        if let Some(info) = ext.get::<TlsConnectInfo<TcpConnectInfo>>() {
            let names = info
                .peer_certs()
                .and_then(|certs| certs.first().map(|c| certificate_names(c.as_ref())))
                .unwrap_or_default();
            return Self::Tls {
                names,
                addr: info.get_ref().remote_addr(),
            };
        }
        if let Some(info) = ext.get::<TcpConnectInfo>() {
            return Self::InsecureTcp {
                addr: info.remote_addr(),
            };
        }
        Self::Unknown
    }

    /// A TLS client from its verified leaf certificate (DER), for listeners that are not
    /// tonic's (the metrics endpoint).
    pub(crate) fn tls_peer(leaf: Option<&[u8]>, addr: Option<SocketAddr>) -> Self {
        Self::Tls {
            names: leaf.map(certificate_names).unwrap_or_default(),
            addr,
        }
    }

    /// The caller's role under `config`.
    pub(crate) fn role(&self, config: &SecurityConfig) -> Role {
        match self {
            Self::Unix { uid: 0, .. } => Role::Operator,
            Self::Unix { uid, .. } if config.operator_uids.contains(uid) => Role::Operator,
            Self::Unix { .. } => config.unix_role,
            Self::Tls { names, .. } => {
                let listed = |list: &[String]| {
                    list.iter()
                        .any(|entry| entry == "*" || names.iter().any(|n| n == entry))
                };
                if listed(&config.operators) {
                    Role::Operator
                } else if listed(&config.viewers) {
                    Role::Viewer
                } else {
                    Role::None
                }
            }
            Self::InsecureTcp { .. } => config.insecure_role,
            Self::Unknown => Role::None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_audit_record_keeps_a_small_request_whole_and_cuts_a_huge_one() {
        assert_eq!(
            audit_text("ApplyExposure { id: \"a\" }"),
            "ApplyExposure { id: \"a\" }"
        );
        let huge = format!("Request {{ name: {:?} }}", "é".repeat(100_000));
        let cut = audit_text(&huge);
        assert!(cut.len() < AUDIT_REQUEST_MAX + 32, "{}", cut.len());
        assert!(
            cut.ends_with(&format!("… ({} bytes)", huge.len())),
            "{}",
            &cut[cut.len() - 40..]
        );
    }

    #[test]
    fn roles_follow_the_configuration() {
        let config = SecurityConfig {
            operator_uids: vec![1000],
            operators: vec!["fleet-admin".to_owned()],
            viewers: vec!["*".to_owned()],
            ..SecurityConfig::default()
        };
        let unix = |uid| Caller::Unix { uid, pid: None };
        assert_eq!(unix(0).role(&config), Role::Operator);
        assert_eq!(unix(1000).role(&config), Role::Operator);
        assert_eq!(unix(1001).role(&config), Role::Viewer);
        let tls = |name: &str| Caller::Tls {
            names: vec![name.to_owned()],
            addr: None,
        };
        assert_eq!(tls("fleet-admin").role(&config), Role::Operator);
        assert_eq!(tls("dashboard").role(&config), Role::Viewer);
        let strict = SecurityConfig::default();
        assert_eq!(tls("dashboard").role(&strict), Role::None);
        assert_eq!(
            Caller::InsecureTcp { addr: None }.role(&strict),
            Role::Viewer
        );
        assert_eq!(Caller::Unknown.role(&config), Role::None);
    }
}
