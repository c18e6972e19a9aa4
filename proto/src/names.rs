//! Resource names of the `dpu.v1` API (AIP-122 style relative names).
//!
//! Both sides parse names with these functions so that the agent rejects exactly what the
//! CLI would reject, with the same message. Only the *structure* is checked here: which
//! collections exist, which characters an id may contain, numeric ranges. Semantic checks
//! that need domain knowledge (NQN syntax, addresses) live with their domain crates.

use std::fmt;

use crate::echo;

/// Why a resource name was rejected. The message names the offending part, because it
/// goes straight into an `INVALID_ARGUMENT` status the user reads.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NameError {
    /// The name is empty.
    #[error("resource name is empty; expected {expected}")]
    Empty {
        /// The expected pattern.
        expected: &'static str,
    },
    /// The name does not match the collection pattern.
    #[error("resource name {name} does not match {expected}")]
    Pattern {
        /// The offending name, quoted and cut by [`crate::echo()`].
        name: String,
        /// The expected pattern.
        expected: &'static str,
    },
    /// One id inside the name is invalid.
    #[error("invalid {what} {value} in resource name: {reason}")]
    Id {
        /// Which id (e.g. "nsid", "ifname").
        what: &'static str,
        /// The offending value, quoted and cut by [`crate::echo()`].
        value: String,
        /// What is wrong with it.
        reason: String,
    },
}

/// Longest resource name accepted. Keeps a hostile client from making the agent carry
/// megabyte-sized names through logs and backends.
pub const MAX_NAME_LEN: usize = 512;

/// Longest Linux network interface name (IFNAMSIZ - 1).
pub const MAX_IFNAME_LEN: usize = 15;

/// Highest valid NVMe namespace id (0 and 0xFFFFFFFF are reserved).
pub const MAX_NSID: u32 = 0xFFFF_FFFE;

/// `subsystems/{nqn}`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SubsystemName {
    /// The subsystem NQN, structurally checked only.
    pub nqn: String,
}

/// `subsystems/{nqn}/namespaces/{nsid}`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NamespaceName {
    /// Parent subsystem.
    pub subsystem: SubsystemName,
    /// Namespace id, 1..=[`MAX_NSID`].
    pub nsid: u32,
}

/// `subsystems/{nqn}/controllers/{id}`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ControllerName {
    /// Parent subsystem.
    pub subsystem: SubsystemName,
    /// Client-chosen controller id.
    pub id: String,
}

/// A name in a flat collection such as `remoteControllers/{id}`, `exposures/{id}`,
/// `volumes/{bdev}`, `netdevs/{ifname}`, `rdmaDevices/{ibdev}`, `bridges/{bridge}`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FlatName {
    /// The id after the collection prefix.
    pub id: String,
}

/// `bridges/{bridge}/ports/{port}`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PortName {
    /// The bridge.
    pub bridge: String,
    /// The port.
    pub port: String,
}

const SUBSYSTEM_PATTERN: &str = "subsystems/{nqn}";
const NAMESPACE_PATTERN: &str = "subsystems/{nqn}/namespaces/{nsid}";
const CONTROLLER_PATTERN: &str = "subsystems/{nqn}/controllers/{id}";
const PORT_PATTERN: &str = "bridges/{bridge}/ports/{port}";

/// The flat collections of the API and the rule for their ids.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Collection {
    /// `remoteControllers/{id}`: client-chosen id.
    RemoteControllers,
    /// `exposures/{id}`: client-chosen id.
    Exposures,
    /// `volumes/{bdev}`: a backend block device name.
    Volumes,
    /// `netdevs/{ifname}`: a Linux interface name.
    Netdevs,
    /// `rdmaDevices/{ibdev}`: an RDMA device name.
    RdmaDevices,
    /// `bridges/{bridge}`: an OVS bridge name (also a netdev name).
    Bridges,
    /// `virtioBlkControllers/{id}`: client-chosen id.
    VirtioBlkControllers,
}

impl Collection {
    /// The collection's path segment.
    pub const fn segment(self) -> &'static str {
        match self {
            Self::RemoteControllers => "remoteControllers",
            Self::Exposures => "exposures",
            Self::Volumes => "volumes",
            Self::Netdevs => "netdevs",
            Self::RdmaDevices => "rdmaDevices",
            Self::Bridges => "bridges",
            Self::VirtioBlkControllers => "virtioBlkControllers",
        }
    }

    const fn pattern(self) -> &'static str {
        match self {
            Self::RemoteControllers => "remoteControllers/{id}",
            Self::Exposures => "exposures/{id}",
            Self::Volumes => "volumes/{bdev}",
            Self::Netdevs => "netdevs/{ifname}",
            Self::RdmaDevices => "rdmaDevices/{ibdev}",
            Self::Bridges => "bridges/{bridge}",
            Self::VirtioBlkControllers => "virtioBlkControllers/{id}",
        }
    }

    /// Checks an id for this collection.
    pub fn check_id(self, id: &str) -> Result<(), NameError> {
        match self {
            Self::RemoteControllers | Self::Exposures | Self::VirtioBlkControllers => {
                check_client_id("id", id)
            }
            Self::Volumes => check_token("bdev", id, 255),
            Self::RdmaDevices => check_token("ibdev", id, 63),
            Self::Netdevs => check_ifname("ifname", id),
            Self::Bridges => check_ifname("bridge", id),
        }
    }

    /// Parses `{segment}/{id}`.
    pub fn parse(self, name: &str) -> Result<FlatName, NameError> {
        let rest = strip_collection(name, self.segment(), self.pattern())?;
        if rest.contains('/') {
            return Err(pattern_error(name, self.pattern()));
        }
        self.check_id(rest)?;
        Ok(FlatName {
            id: rest.to_owned(),
        })
    }

    /// Formats `{segment}/{id}`.
    pub fn format(self, id: &str) -> String {
        format!("{}/{id}", self.segment())
    }
}

impl SubsystemName {
    /// Parses `subsystems/{nqn}`.
    pub fn parse(name: &str) -> Result<Self, NameError> {
        let rest = strip_collection(name, "subsystems", SUBSYSTEM_PATTERN)?;
        if rest.contains('/') {
            return Err(pattern_error(name, SUBSYSTEM_PATTERN));
        }
        check_nqn_structure(rest)?;
        Ok(Self {
            nqn: rest.to_owned(),
        })
    }
}

impl fmt::Display for SubsystemName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "subsystems/{}", self.nqn)
    }
}

impl NamespaceName {
    /// Parses `subsystems/{nqn}/namespaces/{nsid}`.
    pub fn parse(name: &str) -> Result<Self, NameError> {
        let (subsystem, child, id) = split_child(name, NAMESPACE_PATTERN)?;
        if child != "namespaces" {
            return Err(pattern_error(name, NAMESPACE_PATTERN));
        }
        Ok(Self {
            subsystem,
            nsid: parse_nsid(id)?,
        })
    }
}

impl fmt::Display for NamespaceName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/namespaces/{}", self.subsystem, self.nsid)
    }
}

impl ControllerName {
    /// Parses `subsystems/{nqn}/controllers/{id}`.
    pub fn parse(name: &str) -> Result<Self, NameError> {
        let (subsystem, child, id) = split_child(name, CONTROLLER_PATTERN)?;
        if child != "controllers" {
            return Err(pattern_error(name, CONTROLLER_PATTERN));
        }
        check_client_id("controller id", id)?;
        Ok(Self {
            subsystem,
            id: id.to_owned(),
        })
    }
}

impl fmt::Display for ControllerName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/controllers/{}", self.subsystem, self.id)
    }
}

impl PortName {
    /// Parses `bridges/{bridge}/ports/{port}`.
    pub fn parse(name: &str) -> Result<Self, NameError> {
        let rest = strip_collection(name, "bridges", PORT_PATTERN)?;
        let mut parts = rest.split('/');
        match (parts.next(), parts.next(), parts.next(), parts.next()) {
            (Some(bridge), Some("ports"), Some(port), None) => {
                check_ifname("bridge", bridge)?;
                check_ifname("port", port)?;
                Ok(Self {
                    bridge: bridge.to_owned(),
                    port: port.to_owned(),
                })
            }
            _ => Err(pattern_error(name, PORT_PATTERN)),
        }
    }
}

/// Parses an NVMe namespace id in decimal, 1..=[`MAX_NSID`].
pub fn parse_nsid(text: &str) -> Result<u32, NameError> {
    let nsid: u32 = text.parse().map_err(|_| NameError::Id {
        what: "nsid",
        value: echo(text),
        reason: "not a decimal number".to_owned(),
    })?;
    check_nsid(nsid)?;
    Ok(nsid)
}

/// Checks an NVMe namespace id range.
pub fn check_nsid(nsid: u32) -> Result<(), NameError> {
    if nsid == 0 || nsid > MAX_NSID {
        return Err(NameError::Id {
            what: "nsid",
            value: echo(&nsid.to_string()),
            reason: format!("must be between 1 and {MAX_NSID}"),
        });
    }
    Ok(())
}

/// Checks a client-chosen id: 1-63 characters of `[A-Za-z0-9_-]`, starting with a letter.
/// Narrow on purpose: ids become backend object names and file names.
pub fn check_client_id(what: &'static str, id: &str) -> Result<(), NameError> {
    let err = |reason: &str| NameError::Id {
        what,
        value: echo(id),
        reason: reason.to_owned(),
    };
    if id.is_empty() || id.len() > 63 {
        return Err(err("must be 1-63 characters"));
    }
    if !id.starts_with(|c: char| c.is_ascii_alphabetic()) {
        return Err(err("must start with a letter"));
    }
    if !id
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
    {
        return Err(err("may contain only letters, digits, '_' and '-'"));
    }
    Ok(())
}

/// Checks a Linux interface name: 1-15 bytes of `[A-Za-z0-9_.@-]`, not "." or "..", and
/// not starting with '-' — within what the kernel's `dev_valid_name` accepts (minus the
/// ':' that aliases use), and never read as an option by `ovs-vsctl`, `ovs-appctl` or `ip`
/// (a bridge named `-rf`).
pub fn check_ifname(what: &'static str, name: &str) -> Result<(), NameError> {
    let err = |reason: &str| NameError::Id {
        what,
        value: echo(name),
        reason: reason.to_owned(),
    };
    if name.is_empty() || name.len() > MAX_IFNAME_LEN {
        return Err(err("must be 1-15 bytes"));
    }
    if name == "." || name == ".." {
        return Err(err("must not be '.' or '..'"));
    }
    if name.starts_with('-') {
        return Err(err(
            "must not start with '-' (tools would read it as an option)",
        ));
    }
    if !name
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.' | '@'))
    {
        return Err(err(
            "may contain only letters, digits, '_', '-', '.' and '@'",
        ));
    }
    Ok(())
}

/// A token such as an SPDK bdev or RDMA device name: printable ASCII without '/',
/// whitespace or shell/JSON-significant quoting characters.
fn check_token(what: &'static str, value: &str, max: usize) -> Result<(), NameError> {
    let err = |reason: String| NameError::Id {
        what,
        value: echo(value),
        reason,
    };
    if value.is_empty() || value.len() > max {
        return Err(err(format!("must be 1-{max} characters")));
    }
    if value == "." || value == ".." {
        return Err(err("must not be '.' or '..'".to_owned()));
    }
    if !value
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.' | ':'))
    {
        return Err(err(
            "may contain only letters, digits, '_', '-', '.' and ':'".to_owned(),
        ));
    }
    Ok(())
}

/// Structural NQN check used inside names: non-empty, at most 223 bytes (NVMe base spec
/// NQN limit), printable ASCII without '/' or whitespace. Full NQN syntax is checked by
/// the storage layer.
fn check_nqn_structure(nqn: &str) -> Result<(), NameError> {
    let err = |reason: &str| NameError::Id {
        what: "nqn",
        value: echo(nqn),
        reason: reason.to_owned(),
    };
    if nqn.is_empty() {
        return Err(err("is empty"));
    }
    if nqn.len() > 223 {
        return Err(err("is longer than 223 bytes"));
    }
    if !nqn.chars().all(|c| c.is_ascii_graphic() && c != '/') {
        return Err(err(
            "may contain only printable ASCII without '/' or spaces",
        ));
    }
    Ok(())
}

fn strip_collection<'a>(
    name: &'a str,
    segment: &str,
    expected: &'static str,
) -> Result<&'a str, NameError> {
    if name.is_empty() {
        return Err(NameError::Empty { expected });
    }
    if name.len() > MAX_NAME_LEN {
        return Err(pattern_error(name, expected));
    }
    name.strip_prefix(segment)
        .and_then(|rest| rest.strip_prefix('/'))
        .ok_or_else(|| pattern_error(name, expected))
}

fn split_child<'a>(
    name: &'a str,
    expected: &'static str,
) -> Result<(SubsystemName, &'a str, &'a str), NameError> {
    let rest = strip_collection(name, "subsystems", expected)?;
    let mut parts = rest.split('/');
    match (parts.next(), parts.next(), parts.next(), parts.next()) {
        (Some(nqn), Some(child), Some(id), None) => {
            check_nqn_structure(nqn)?;
            Ok((
                SubsystemName {
                    nqn: nqn.to_owned(),
                },
                child,
                id,
            ))
        }
        _ => Err(pattern_error(name, expected)),
    }
}

fn pattern_error(name: &str, expected: &'static str) -> NameError {
    NameError::Pattern {
        name: echo(name),
        expected,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const NQN: &str = "nqn.2022-10.io.nvda.nvme:0";

    #[test]
    fn namespace_names_round_trip() {
        let name = format!("subsystems/{NQN}/namespaces/7");
        let parsed = NamespaceName::parse(&name).expect("valid");
        assert_eq!(parsed.subsystem.nqn, NQN);
        assert_eq!(parsed.nsid, 7);
        assert_eq!(parsed.to_string(), name);
    }

    #[test]
    fn namespace_ids_outside_the_nvme_range_are_rejected() {
        for bad in ["0", "4294967295", "-1", "x", ""] {
            let err =
                NamespaceName::parse(&format!("subsystems/{NQN}/namespaces/{bad}")).expect_err(bad);
            assert!(err.to_string().contains("nsid"), "{err}");
        }
    }

    #[test]
    fn controller_name_must_use_the_controllers_collection() {
        assert!(ControllerName::parse(&format!("subsystems/{NQN}/controllers/c1")).is_ok());
        let err = ControllerName::parse(&format!("subsystems/{NQN}/namespaces/c1"))
            .expect_err("wrong collection");
        assert!(matches!(err, NameError::Pattern { .. }), "{err}");
    }

    #[test]
    fn nqn_with_slash_or_space_or_overlong_is_rejected() {
        assert!(SubsystemName::parse("subsystems/nqn.a/b").is_err());
        assert!(SubsystemName::parse("subsystems/nqn a").is_err());
        let long = format!("subsystems/nqn.{}", "a".repeat(230));
        let err = SubsystemName::parse(&long).expect_err("too long");
        assert!(err.to_string().contains("223"), "{err}");
    }

    #[test]
    fn flat_collections_check_their_ids() {
        assert_eq!(
            Collection::Netdevs.parse("netdevs/pf0hpf").expect("ok").id,
            "pf0hpf"
        );
        for bad in [
            "netdevs/",
            "netdevs/a/b",
            "netdevs/..",
            "netdevs/averyveryverylongname",
            "netdevs/eth0;reboot",
            "rdmaDevices/mlx5_0",
        ] {
            assert!(Collection::Netdevs.parse(bad).is_err(), "{bad} accepted");
        }
        assert!(Collection::RemoteControllers
            .parse("remoteControllers/r0")
            .is_ok());
        assert!(Collection::RemoteControllers
            .parse("remoteControllers/0r")
            .is_err());
        assert_eq!(
            Collection::VirtioBlkControllers
                .parse("virtioBlkControllers/vm1-disk")
                .expect("ok")
                .id,
            "vm1-disk"
        );
        for bad in [
            "virtioBlkControllers/1vm",
            "virtioBlkControllers/vm/1",
            "remoteControllers/vm1",
        ] {
            assert!(
                Collection::VirtioBlkControllers.parse(bad).is_err(),
                "{bad} accepted"
            );
        }
    }

    #[test]
    fn port_names_parse_both_parts() {
        let port = PortName::parse("bridges/ovsbr1/ports/pf0hpf").expect("ok");
        assert_eq!(
            (port.bridge.as_str(), port.port.as_str()),
            ("ovsbr1", "pf0hpf")
        );
        assert!(PortName::parse("bridges/ovsbr1/pf0hpf").is_err());
    }

    #[test]
    fn empty_and_huge_names_are_rejected_with_the_pattern() {
        let err = SubsystemName::parse("").expect_err("empty");
        assert!(err.to_string().contains("subsystems/{nqn}"), "{err}");
        let huge = "subsystems/".to_owned() + &"x".repeat(10_000);
        let err = SubsystemName::parse(&huge).expect_err("huge");
        let text = err.to_string();
        assert!(
            text.len() < crate::echo::ECHO_MAX + 100,
            "error echoes the whole input"
        );
        assert!(text.contains("…\" (10011 bytes)"), "{text}");
        // An over-long id given on its own (not inside a name) is cut the same way.
        let err = check_ifname("bridge", &"b".repeat(200_000)).expect_err("huge");
        let text = err.to_string();
        assert!(text.len() < crate::echo::ECHO_MAX + 100, "{}", text.len());
        assert!(text.contains("…\" (200000 bytes)"), "{text}");
    }

    #[test]
    fn interface_names_may_not_look_like_options() {
        for name in ["-rf", "-", "--help"] {
            let err = check_ifname("bridge", name).expect_err(name);
            assert!(err.to_string().contains("must not start with '-'"), "{err}");
            assert!(Collection::Bridges
                .parse(&format!("bridges/{name}"))
                .is_err());
        }
        for name in ["br-ex", "pf0vf0", "ovs-system", "br_0.1", "vlan@eth0"] {
            check_ifname("bridge", name).expect(name);
        }
    }
}
