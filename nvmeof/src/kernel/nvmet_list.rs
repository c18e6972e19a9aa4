//! A read-only snapshot of the nvmet configfs tree, for reporting and for reconciling
//! the agent's desired state against what the kernel has.

use std::path::Path;

use super::configfs::{list_names, read_attr, read_optional};
use super::nvmet::namespace_device_path;
use super::{ConfigFs, KernelError, Nvmet};

/// Everything nvmet has configured.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct NvmetState {
    /// Subsystems, sorted by NQN.
    pub subsystems: Vec<SubsystemState>,
    /// Ports, sorted by id.
    pub ports: Vec<PortState>,
    /// Host NQNs under `hosts/`, sorted.
    pub hosts: Vec<String>,
}

/// One subsystem.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SubsystemState {
    /// Its NQN.
    pub nqn: String,
    /// `attr_allow_any_host`.
    pub allow_any_host: bool,
    /// Hosts linked in `allowed_hosts/`, sorted.
    pub allowed_hosts: Vec<String>,
    /// Namespaces, sorted by NSID.
    pub namespaces: Vec<NamespaceState>,
}

/// One namespace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NamespaceState {
    /// The NSID.
    pub nsid: u32,
    /// The backing device; empty when unset.
    pub device_path: String,
    /// `enable`.
    pub enabled: bool,
    /// `device_uuid`, when the attribute exists.
    pub uuid: Option<String>,
}

/// One port.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PortState {
    /// The port id.
    pub id: u16,
    /// `addr_trtype` as the kernel shows it (empty when unset).
    pub transport: String,
    /// `addr_adrfam` (empty when unset).
    pub family: String,
    /// `addr_traddr`.
    pub traddr: String,
    /// `addr_trsvcid`.
    pub trsvcid: String,
    /// NQNs linked in `subsystems/`, sorted.
    pub subsystems: Vec<String>,
}

impl<C: ConfigFs> Nvmet<C> {
    /// Reads the whole tree; [`KernelError::Unsupported`] when nvmet is not there.
    /// Entries whose names are not numbers where the kernel only allows numbers
    /// (namespaces, ports) are reported as a format error rather than skipped.
    pub fn list(&self) -> Result<NvmetState, KernelError> {
        self.require_root()?;
        let subsystems_dir = self.root.join("subsystems");
        let subsystems = list_names(&subsystems_dir)?
            .into_iter()
            .map(|nqn| read_subsystem(&subsystems_dir.join(&nqn), nqn))
            .collect::<Result<_, _>>()?;
        let ports_dir = self.root.join("ports");
        let mut ports = list_names(&ports_dir)?
            .into_iter()
            .map(|id| read_port(&ports_dir.join(&id), &id))
            .collect::<Result<Vec<_>, _>>()?;
        ports.sort_by_key(|p| p.id);
        Ok(NvmetState {
            subsystems,
            ports,
            hosts: list_names(&self.root.join("hosts"))?,
        })
    }
}

fn number<T: std::str::FromStr>(dir: &Path, name: &str) -> Result<T, KernelError> {
    name.parse().map_err(|_| KernelError::Format {
        path: dir.join(name),
        detail: "directory name is not a number".to_owned(),
    })
}

fn read_subsystem(dir: &Path, nqn: String) -> Result<SubsystemState, KernelError> {
    let ns_dir = dir.join("namespaces");
    let mut namespaces = list_names(&ns_dir)?
        .into_iter()
        .map(|name| {
            let path = ns_dir.join(&name);
            Ok(NamespaceState {
                nsid: number(&ns_dir, &name)?,
                device_path: namespace_device_path(&path)?,
                enabled: read_attr(&path.join("enable"))? == "1",
                uuid: read_optional(&path.join("device_uuid"))?,
            })
        })
        .collect::<Result<Vec<_>, KernelError>>()?;
    namespaces.sort_by_key(|n| n.nsid);
    Ok(SubsystemState {
        allow_any_host: read_attr(&dir.join("attr_allow_any_host"))? == "1",
        allowed_hosts: list_names(&dir.join("allowed_hosts"))?,
        namespaces,
        nqn,
    })
}

fn read_port(dir: &Path, id: &str) -> Result<PortState, KernelError> {
    let parent = dir.parent().unwrap_or(dir);
    Ok(PortState {
        id: number(parent, id)?,
        transport: read_attr(&dir.join("addr_trtype"))?,
        family: read_attr(&dir.join("addr_adrfam"))?,
        traddr: read_attr(&dir.join("addr_traddr"))?,
        trsvcid: read_attr(&dir.join("addr_trsvcid"))?,
        subsystems: list_names(&dir.join("subsystems"))?,
    })
}
