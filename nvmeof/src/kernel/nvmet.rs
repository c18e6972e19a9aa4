//! The nvmet target through configfs: idempotent `ensure_*` and `remove_*` operations on
//! hosts, subsystems, namespaces and ports (layout: `docs/reference/storage.md` §4.1).
//!
//! Each `ensure_*` validates everything first, then converges the tree and reports a
//! [`Change`]; if it fails half-way it removes what it created in that call (directories,
//! links) and, when something could not be undone, says what in
//! [`KernelError::Incomplete`]. Attribute values it overwrote are not restored.

use std::path::{Path, PathBuf};

use super::configfs::{list_names, present, read_attr};
use super::nvmet_spec::{NamespaceSpec, PortSpec, SubsystemSpec};
use super::validate;
use super::{Change, ConfigFs, KernelConfigFs, KernelError, KernelPaths};
use crate::nqn::Nqn;

/// The nvmet configfs tree. Generic over [`ConfigFs`] so tests run on a fake tree.
#[derive(Debug)]
pub struct Nvmet<C: ConfigFs = KernelConfigFs> {
    pub(crate) root: PathBuf,
    pub(crate) fs: C,
}

impl Nvmet<KernelConfigFs> {
    /// The target at `paths.configfs_nvmet` on the real configfs.
    pub fn new(paths: &KernelPaths) -> Self {
        Self::with_configfs(paths, KernelConfigFs)
    }
}

/// One thing an `ensure_*` did that a rollback must undo or report.
enum Step {
    /// A directory this call created.
    Created(PathBuf),
    /// A link this call created.
    Linked(PathBuf),
    /// A namespace that was enabled and this call disabled.
    Disabled(PathBuf),
}

impl<C: ConfigFs> Nvmet<C> {
    /// The target at `paths.configfs_nvmet`, changed through `fs`.
    pub fn with_configfs(paths: &KernelPaths, fs: C) -> Self {
        Self {
            root: paths.configfs_nvmet.clone(),
            fs,
        }
    }

    /// Makes sure `hosts/<hostnqn>` exists (needed before a subsystem can allow the host).
    pub fn ensure_host(&self, hostnqn: &str) -> Result<Change, KernelError> {
        let nqn = validate::nqn("hostnqn", hostnqn)?;
        self.require_root()?;
        let mut steps = Vec::new();
        let r = self.mkdir_if_missing(&self.host_dir(&nqn), &mut steps);
        self.finish(r, steps)
    }

    /// Makes the subsystem match `spec`: directory, host access (creating missing
    /// `hosts/` entries) and, when given, serial and model.
    pub fn ensure_subsystem(&self, spec: &SubsystemSpec) -> Result<Change, KernelError> {
        let nqn = validate::nqn("nqn", &spec.nqn)?;
        let hosts = spec
            .allowed_hosts
            .iter()
            .map(|h| validate::nqn("allowed_hosts", h))
            .collect::<Result<Vec<_>, _>>()?;
        if let Some(serial) = &spec.serial {
            validate::serial(serial)?;
        }
        if let Some(model) = &spec.model {
            validate::model(model)?;
        }
        self.require_root()?;
        let mut steps = Vec::new();
        let r = self.apply_subsystem(&nqn, &hosts, spec, &mut steps);
        self.finish(r, steps)
    }

    fn apply_subsystem(
        &self,
        nqn: &Nqn,
        hosts: &[Nqn],
        spec: &SubsystemSpec,
        steps: &mut Vec<Step>,
    ) -> Result<bool, KernelError> {
        let dir = self.subsystem_dir(nqn);
        let mut changed = self.mkdir_if_missing(&dir, steps)?;
        let links = dir.join("allowed_hosts");
        let current = list_names(&links)?;
        let wanted = |name: &String| hosts.iter().any(|h| h.as_str() == name);
        // The kernel refuses links while allow_any_host=1 and allow_any_host=1 while links
        // exist, so the order depends on the direction of the change.
        if !hosts.is_empty() {
            changed |= self.set_attr(&dir.join("attr_allow_any_host"), "0")?;
        }
        for name in current.iter().filter(|n| !wanted(n)) {
            self.unlink(&links.join(name))?;
            changed = true;
        }
        if hosts.is_empty() {
            changed |= self.set_attr(&dir.join("attr_allow_any_host"), "1")?;
        }
        for host in hosts
            .iter()
            .filter(|h| !current.iter().any(|c| c == h.as_str()))
        {
            let host_dir = self.host_dir(host);
            self.mkdir_if_missing(&host_dir, steps)?;
            let link = links.join(host.as_str());
            self.fs
                .symlink(&host_dir, &link)
                .map_err(|e| KernelError::io("symlink", &link, e))?;
            steps.push(Step::Linked(link));
            changed = true;
        }
        if let Some(serial) = &spec.serial {
            changed |= self.set_attr(&dir.join("attr_serial"), serial)?;
        }
        if let Some(model) = &spec.model {
            changed |= self.set_attr(&dir.join("attr_model"), model)?;
        }
        Ok(changed)
    }

    /// Makes namespace `spec.nsid` of subsystem `nqn` exist, point at `spec.device_path`
    /// and be enabled. A namespace enabled on another device (or UUID) is disabled,
    /// rewritten and re-enabled, because the kernel only accepts those writes while it is
    /// disabled.
    pub fn ensure_namespace(&self, nqn: &str, spec: &NamespaceSpec) -> Result<Change, KernelError> {
        let nqn = validate::nqn("nqn", nqn)?;
        validate::nsid(spec.nsid)?;
        let device = validate::device_path(&spec.device_path)?;
        if let Some(uuid) = &spec.uuid {
            validate::uuid(uuid)?;
        }
        self.require_root()?;
        let subsystem = self.subsystem_dir(&nqn);
        if !subsystem.is_dir() {
            return Err(KernelError::NotFound {
                what: "subsystem",
                path: subsystem,
            });
        }
        if !device.exists() {
            return Err(KernelError::NotFound {
                what: "backing device",
                path: device.to_owned(),
            });
        }
        let mut steps = Vec::new();
        let r = self.apply_namespace(&self.namespace_dir(&nqn, spec.nsid), spec, &mut steps);
        self.finish(r, steps)
    }

    fn apply_namespace(
        &self,
        dir: &Path,
        spec: &NamespaceSpec,
        steps: &mut Vec<Step>,
    ) -> Result<bool, KernelError> {
        let mut changed = self.mkdir_if_missing(dir, steps)?;
        let enable = dir.join("enable");
        let mut enabled = read_attr(&enable)? == "1";
        let path_differs = namespace_device_path(dir)? != spec.device_path;
        let uuid_differs = match &spec.uuid {
            Some(uuid) => !read_attr(&dir.join("device_uuid"))?.eq_ignore_ascii_case(uuid),
            None => false,
        };
        if enabled && (path_differs || uuid_differs) {
            self.write(&enable, "0")?;
            steps.push(Step::Disabled(dir.to_owned()));
            enabled = false;
        }
        if path_differs {
            self.write(&dir.join("device_path"), &spec.device_path)?;
        }
        if let (true, Some(uuid)) = (uuid_differs, &spec.uuid) {
            self.write(&dir.join("device_uuid"), uuid)?;
        }
        if !enabled {
            self.write(&enable, "1")?;
            changed = true;
        }
        Ok(changed)
    }

    /// Makes port `spec.id` exist with `spec`'s transport and address. An address change
    /// on a port with linked subsystems is refused as busy: the kernel makes the address
    /// read-only while the port is enabled, i.e. while anything is linked.
    pub fn ensure_port(&self, spec: &PortSpec) -> Result<Change, KernelError> {
        let attrs = spec.attributes()?;
        self.require_root()?;
        let dir = self.port_dir(spec.id);
        let mut steps = Vec::new();
        let r = self.apply_port(&dir, &attrs, &mut steps);
        self.finish(r, steps)
    }

    fn apply_port(
        &self,
        dir: &Path,
        attrs: &[(&str, String)],
        steps: &mut Vec<Step>,
    ) -> Result<bool, KernelError> {
        let created = self.mkdir_if_missing(dir, steps)?;
        let mut differing = Vec::new();
        for (name, value) in attrs {
            let path = dir.join(name);
            if read_attr(&path)? != *value {
                differing.push((path, value));
            }
        }
        let linked = list_names(&dir.join("subsystems"))?;
        if !differing.is_empty() && !linked.is_empty() {
            return Err(KernelError::Busy {
                path: dir.to_owned(),
                reason: format!(
                    "its address can only change while no subsystem is linked; linked: {}",
                    linked.join(", ")
                ),
            });
        }
        for (path, value) in &differing {
            self.write(path, value)?;
        }
        Ok(created || !differing.is_empty())
    }

    /// Exports subsystem `nqn` on port `port_id` (the kernel enables the port on its first
    /// link).
    pub fn link_subsystem(&self, port_id: u16, nqn: &str) -> Result<Change, KernelError> {
        let nqn = validate::nqn("nqn", nqn)?;
        self.require_root()?;
        let port = self.port_dir(port_id);
        let subsystem = self.subsystem_dir(&nqn);
        for (what, path) in [("port", &port), ("subsystem", &subsystem)] {
            if !path.is_dir() {
                return Err(KernelError::NotFound {
                    what,
                    path: path.clone(),
                });
            }
        }
        let link = port.join("subsystems").join(nqn.as_str());
        if present(&link) {
            return Ok(Change::Unchanged);
        }
        self.fs
            .symlink(&subsystem, &link)
            .map_err(|e| KernelError::io("symlink", &link, e))?;
        Ok(Change::Changed)
    }

    /// Stops exporting subsystem `nqn` on port `port_id`.
    pub fn unlink_subsystem(&self, port_id: u16, nqn: &str) -> Result<Change, KernelError> {
        let nqn = validate::nqn("nqn", nqn)?;
        self.require_root()?;
        let link = self.port_dir(port_id).join("subsystems").join(nqn.as_str());
        if !present(&link) {
            return Ok(Change::Unchanged);
        }
        self.unlink(&link)?;
        Ok(Change::Changed)
    }

    /// Removes port `port_id`; refused as busy while subsystems are linked to it.
    pub fn remove_port(&self, port_id: u16) -> Result<Change, KernelError> {
        self.require_root()?;
        let dir = self.port_dir(port_id);
        if !present(&dir) {
            return Ok(Change::Unchanged);
        }
        let linked = list_names(&dir.join("subsystems"))?;
        if !linked.is_empty() {
            return Err(KernelError::Busy {
                path: dir,
                reason: format!("subsystems linked: {}", linked.join(", ")),
            });
        }
        self.rmdir(&dir)?;
        Ok(Change::Changed)
    }

    /// Disables and removes namespace `nsid` of subsystem `nqn`.
    pub fn remove_namespace(&self, nqn: &str, nsid: u32) -> Result<Change, KernelError> {
        let nqn = validate::nqn("nqn", nqn)?;
        validate::nsid(nsid)?;
        self.require_root()?;
        let dir = self.namespace_dir(&nqn, nsid);
        if !present(&dir) {
            return Ok(Change::Unchanged);
        }
        self.remove_namespace_dir(&dir)?;
        Ok(Change::Changed)
    }

    fn remove_namespace_dir(&self, dir: &Path) -> Result<(), KernelError> {
        let enable = dir.join("enable");
        if read_attr(&enable)? == "1" {
            self.write(&enable, "0")?;
        }
        self.rmdir(dir)
    }

    /// Removes subsystem `nqn` and its host access links. Without `cascade` it is refused
    /// as busy while it has namespaces or a port exports it; with `cascade` those are
    /// unlinked and removed first.
    pub fn remove_subsystem(&self, nqn: &str, cascade: bool) -> Result<Change, KernelError> {
        let nqn = validate::nqn("nqn", nqn)?;
        self.require_root()?;
        let dir = self.subsystem_dir(&nqn);
        if !present(&dir) {
            return Ok(Change::Unchanged);
        }
        let namespaces = list_names(&dir.join("namespaces"))?;
        let port_links: Vec<PathBuf> = list_names(&self.root.join("ports"))?
            .into_iter()
            .map(|p| {
                self.root
                    .join("ports")
                    .join(p)
                    .join("subsystems")
                    .join(nqn.as_str())
            })
            .filter(|link| present(link))
            .collect();
        if !cascade && (!namespaces.is_empty() || !port_links.is_empty()) {
            let ports: Vec<String> = port_links.iter().map(|l| l.display().to_string()).collect();
            return Err(KernelError::Busy {
                path: dir,
                reason: format!(
                    "namespaces [{}], port links [{}]",
                    namespaces.join(", "),
                    ports.join(", ")
                ),
            });
        }
        for link in &port_links {
            self.unlink(link)?;
        }
        let hosts = dir.join("allowed_hosts");
        for host in list_names(&hosts)? {
            self.unlink(&hosts.join(host))?;
        }
        for nsid in namespaces {
            self.remove_namespace_dir(&dir.join("namespaces").join(nsid))?;
        }
        self.rmdir(&dir)?;
        Ok(Change::Changed)
    }

    /// Removes `hosts/<hostnqn>`; refused as busy while a subsystem still allows it.
    pub fn remove_host(&self, hostnqn: &str) -> Result<Change, KernelError> {
        let nqn = validate::nqn("hostnqn", hostnqn)?;
        self.require_root()?;
        let dir = self.host_dir(&nqn);
        if !present(&dir) {
            return Ok(Change::Unchanged);
        }
        let users: Vec<String> = list_names(&self.root.join("subsystems"))?
            .into_iter()
            .filter(|s| {
                present(
                    &self
                        .root
                        .join("subsystems")
                        .join(s)
                        .join("allowed_hosts")
                        .join(nqn.as_str()),
                )
            })
            .collect();
        if !users.is_empty() {
            return Err(KernelError::Busy {
                path: dir,
                reason: format!("allowed by subsystems: {}", users.join(", ")),
            });
        }
        self.rmdir(&dir)?;
        Ok(Change::Changed)
    }

    pub(crate) fn require_root(&self) -> Result<(), KernelError> {
        if self.root.is_dir() {
            Ok(())
        } else {
            Err(KernelError::Unsupported {
                path: self.root.clone(),
                hint: "nvmet module not loaded or configfs not mounted \
                       (modprobe nvmet; mount -t configfs none /sys/kernel/config)",
            })
        }
    }

    fn subsystem_dir(&self, nqn: &Nqn) -> PathBuf {
        self.root.join("subsystems").join(nqn.as_str())
    }

    fn namespace_dir(&self, nqn: &Nqn, nsid: u32) -> PathBuf {
        self.subsystem_dir(nqn)
            .join("namespaces")
            .join(nsid.to_string())
    }

    fn host_dir(&self, nqn: &Nqn) -> PathBuf {
        self.root.join("hosts").join(nqn.as_str())
    }

    fn port_dir(&self, id: u16) -> PathBuf {
        self.root.join("ports").join(id.to_string())
    }

    fn mkdir_if_missing(&self, dir: &Path, steps: &mut Vec<Step>) -> Result<bool, KernelError> {
        if present(dir) {
            return Ok(false);
        }
        self.fs
            .mkdir(dir)
            .map_err(|e| KernelError::io("mkdir", dir, e))?;
        steps.push(Step::Created(dir.to_owned()));
        Ok(true)
    }

    fn write(&self, path: &Path, value: &str) -> Result<(), KernelError> {
        self.fs
            .write_attr(path, value)
            .map_err(|e| KernelError::io("write", path, e))
    }

    /// Writes `value` unless the attribute already shows it; true if it wrote.
    fn set_attr(&self, path: &Path, value: &str) -> Result<bool, KernelError> {
        if read_attr(path)? == value {
            return Ok(false);
        }
        self.write(path, value)?;
        Ok(true)
    }

    fn unlink(&self, link: &Path) -> Result<(), KernelError> {
        self.fs
            .unlink(link)
            .map_err(|e| KernelError::io("unlink", link, e))
    }

    fn rmdir(&self, dir: &Path) -> Result<(), KernelError> {
        self.fs
            .rmdir(dir)
            .map_err(|e| KernelError::io("rmdir", dir, e))
    }

    /// Turns an `apply_*` result into the public one, rolling back on failure.
    fn finish(
        &self,
        r: Result<bool, KernelError>,
        steps: Vec<Step>,
    ) -> Result<Change, KernelError> {
        let error = match r {
            Ok(changed) => return Ok(Change::from_bool(changed)),
            Err(e) => e,
        };
        let mut left = Vec::new();
        for step in steps.into_iter().rev() {
            match step {
                Step::Created(dir) => {
                    if let Err(e) = self.rmdir(&dir) {
                        left.push(format!("{} ({e})", dir.display()));
                    }
                }
                Step::Linked(link) => {
                    if let Err(e) = self.unlink(&link) {
                        left.push(format!("{} ({e})", link.display()));
                    }
                }
                Step::Disabled(dir) => {
                    left.push(format!("{} (was enabled, left disabled)", dir.display()));
                }
            }
        }
        tracing::warn!(%error, ?left, "nvmet change failed and was rolled back");
        if left.is_empty() {
            Err(error)
        } else {
            Err(KernelError::Incomplete {
                source: Box::new(error),
                left,
            })
        }
    }
}

/// A namespace's `device_path`; the kernel shows an unset one as `(null)` (a `%s` of NULL).
pub(crate) fn namespace_device_path(dir: &Path) -> Result<String, KernelError> {
    let value = read_attr(&dir.join("device_path"))?;
    Ok(if value == "(null)" {
        String::new()
    } else {
        value
    })
}
