use std::fmt;
use std::str::FromStr;

/// What to read. Names are checked when the selector is built, because they become path
/// components under `/sys`: a name like `../../etc` must never get that far.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CounterSelector {
    /// IB PMA and driver counters of RDMA ports: every device, one device, or one port.
    Rdma {
        /// Device name (`mlx5_0`); `None` for every device.
        device: Option<String>,
        /// Port number; `None` for every port.
        port: Option<u32>,
    },
    /// Link statistics and offload xstats: every netdev or one.
    Netdev {
        /// Interface name; `None` for every netdev.
        ifname: Option<String>,
    },
    /// tc filter statistics on one netdev (ingress and egress).
    Tc {
        /// Interface name.
        ifname: String,
    },
    /// Block device statistics: every NVMe namespace, or one device.
    Block {
        /// Device name (`nvme0n1`); `None` for every NVMe namespace.
        device: Option<String>,
    },
}

/// A selector that names something impossible.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid counter selector {text:?}: {reason}")]
pub struct SelectorError {
    text: String,
    reason: String,
}

impl SelectorError {
    fn new(text: &str, reason: impl Into<String>) -> Self {
        Self {
            text: text.to_owned(),
            reason: reason.into(),
        }
    }
}

/// Longest device name sysfs directories use that we accept (IFNAMSIZ-1 is 15 for
/// netdevs; RDMA and block names are longer-lived but short in practice).
const MAX_NAME: usize = 64;

/// Checks a name that becomes one path component under `/sys`.
pub(crate) fn check_component(kind: &str, name: &str) -> Result<(), String> {
    if name.is_empty() {
        return Err(format!("{kind} name is empty"));
    }
    if name.len() > MAX_NAME {
        return Err(format!("{kind} name is longer than {MAX_NAME} bytes"));
    }
    if name == "." || name == ".." {
        return Err(format!("{kind} name {name:?} is not a device"));
    }
    if let Some(c) = name
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.' | ':' | '@')))
    {
        return Err(format!("{kind} name contains {c:?}"));
    }
    Ok(())
}

impl CounterSelector {
    /// What a snapshot with no selectors reads: every RDMA port, every netdev, every NVMe
    /// namespace. tc is left out because it needs a device and is expensive on hosts with
    /// thousands of filters.
    pub fn defaults() -> Vec<Self> {
        vec![
            Self::Rdma {
                device: None,
                port: None,
            },
            Self::Netdev { ifname: None },
            Self::Block { device: None },
        ]
    }

    /// Checks the names inside a selector built in code or decoded from the wire.
    pub fn validate(&self) -> Result<(), SelectorError> {
        let err = |reason: String| SelectorError::new(&self.to_string(), reason);
        match self {
            Self::Rdma { device, port } => {
                if let Some(device) = device {
                    check_component("RDMA device", device).map_err(err)?;
                } else if port.is_some() {
                    return Err(SelectorError::new(
                        &self.to_string(),
                        "a port needs a device",
                    ));
                }
                if *port == Some(0) {
                    return Err(SelectorError::new(
                        &self.to_string(),
                        "RDMA ports are numbered from 1",
                    ));
                }
            }
            Self::Netdev { ifname: Some(name) } | Self::Tc { ifname: name } => {
                check_ifname(name).map_err(err)?;
            }
            Self::Block {
                device: Some(device),
            } => check_component("block device", device).map_err(err)?,
            Self::Netdev { ifname: None } | Self::Block { device: None } => {}
        }
        Ok(())
    }
}

/// Linux interface names, by the project's one rule (the same as
/// `dpu_proto::names::check_ifname`, pinned by a test with the `wire` feature): 1..=15 bytes
/// of `[A-Za-z0-9_.@-]`, not `.` or `..`, not starting with `-`. Within what the kernel's
/// `dev_valid_name` accepts (no `/`, whitespace or the `:` of aliases), and never read as
/// an option by the tools the names reach (`ip`, `ovs-vsctl`) or acted on by a shell when
/// an operator pastes one from a log.
fn check_ifname(name: &str) -> Result<(), String> {
    if name.is_empty() || name.len() > 15 {
        return Err(format!("interface name {name:?} must be 1 to 15 bytes"));
    }
    if name == "." || name == ".." {
        return Err(format!("{name:?} is not an interface name"));
    }
    if name.starts_with('-') {
        return Err(format!(
            "interface name {name:?} must not start with '-' (tools would read it as an option)"
        ));
    }
    if let Some(c) = name
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_' | '@')))
    {
        return Err(format!("interface name contains {c:?}"));
    }
    Ok(())
}

impl fmt::Display for CounterSelector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Rdma {
                device: None,
                port: _,
            } => f.write_str("rdma"),
            Self::Rdma {
                device: Some(d),
                port: None,
            } => write!(f, "rdma:{d}"),
            Self::Rdma {
                device: Some(d),
                port: Some(p),
            } => write!(f, "rdma:{d}/{p}"),
            Self::Netdev { ifname: None } => f.write_str("netdev"),
            Self::Netdev { ifname: Some(i) } => write!(f, "netdev:{i}"),
            Self::Tc { ifname } => write!(f, "tc:{ifname}"),
            Self::Block { device: None } => f.write_str("block"),
            Self::Block { device: Some(d) } => write!(f, "block:{d}"),
        }
    }
}

/// The command-line form: `rdma`, `rdma:mlx5_0`, `rdma:mlx5_0/1`, `netdev`, `netdev:p0`,
/// `tc:pf0hpf`, `block`, `block:nvme0n1`.
impl FromStr for CounterSelector {
    type Err = SelectorError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let (kind, arg) = match text.split_once(':') {
            Some((kind, arg)) => (kind, Some(arg)),
            None => (text, None),
        };
        let selector = match (kind, arg) {
            ("rdma", None) => Self::Rdma {
                device: None,
                port: None,
            },
            ("rdma", Some(arg)) => {
                let (device, port) = match arg.split_once('/') {
                    Some((device, port)) => {
                        let port = port.parse::<u32>().map_err(|_| {
                            SelectorError::new(text, format!("port {port:?} is not a number"))
                        })?;
                        (device, Some(port))
                    }
                    None => (arg, None),
                };
                Self::Rdma {
                    device: Some(device.to_owned()),
                    port,
                }
            }
            ("netdev", arg) => Self::Netdev {
                ifname: arg.map(str::to_owned),
            },
            ("tc", Some(arg)) => Self::Tc {
                ifname: arg.to_owned(),
            },
            ("tc", None) => {
                return Err(SelectorError::new(text, "tc needs an interface: tc:IFNAME"))
            }
            ("block", arg) => Self::Block {
                device: arg.map(str::to_owned),
            },
            _ => {
                return Err(SelectorError::new(
                    text,
                    "expected rdma[:DEV[/PORT]], netdev[:IF], tc:IF or block[:DEV]",
                ))
            }
        };
        selector.validate()?;
        Ok(selector)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One rule, two crates: the probe's check (which has no `dpu-proto` without `wire`) and the
    /// API's accept and refuse exactly the same names.
    #[cfg(feature = "wire")]
    #[test]
    fn the_probe_and_the_api_share_one_interface_name_rule() {
        let names = [
            "eth0",
            "ens1f0np0",
            "pf0hpf",
            "p0",
            "br-int",
            "vlan.100",
            "a@b",
            "x_y",
            "a",
            "eth+1",
            "-rf",
            "",
            ".",
            "..",
            "a/b",
            "a b",
            "a:1",
            "eth0\n",
            "sixteen_chars_xx",
            "fifteen_chars_x",
            "ünï",
            "a;b",
            "$(x)",
        ];
        for name in names {
            assert_eq!(
                check_ifname(name).is_ok(),
                dpu_proto::names::check_ifname("ifname", name).is_ok(),
                "{name:?}"
            );
        }
    }

    #[test]
    fn parses_and_prints_every_form() {
        for text in [
            "rdma",
            "rdma:mlx5_0",
            "rdma:mlx5_0/1",
            "netdev",
            "netdev:pf0hpf",
            "tc:pf0hpf",
            "block",
            "block:nvme0n1",
        ] {
            let selector: CounterSelector = text.parse().expect(text);
            assert_eq!(selector.to_string(), text);
        }
    }

    #[test]
    fn rejects_names_that_escape_sysfs() {
        for text in [
            "rdma:../../etc",
            "rdma:..",
            "netdev:a/b",
            "netdev:averyveryverylongname",
            "block:nvme0n1/../../x",
            "tc:",
            "tc",
            "rdma:mlx5_0/0",
            "rdma:mlx5_0/x",
            "disk:sda",
        ] {
            let err = text.parse::<CounterSelector>().expect_err(text);
            assert!(err.to_string().contains(text), "{err}");
        }
    }
}
