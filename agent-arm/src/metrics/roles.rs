//! The switchdev representors of the tree and their roles (the `role` label of netdev and
//! tc series), from `phys_port_name` only, read afresh for every reading: a netdev's
//! role changes without the netdev changing (an uplink gets one when the eswitch enters
//! switchdev mode), so no role is kept from one reading to the next.
//!
//! Read the cheap way, since every scrape pays it: the directory is listed once per
//! reading, and each netdev's `phys_port_name` is opened once (relative to the listed
//! directory) and then re-read at every reading with one `pread` at offset 0 into a stack
//! buffer, which sysfs answers with the attribute's current value. A kept descriptor is
//! for one directory entry (its name and inode number as listed): a netdev that goes,
//! comes back or is renamed onto another's name has another inode, so its file is
//! opened again, and a descriptor whose read fails, or whose file is no longer linked (a
//! fixture's directory removed and made again), is dropped and the file opened again.

use std::collections::HashMap;
use std::fs::File;
use std::os::fd::AsFd as _;
use std::os::unix::fs::{DirEntryExt as _, FileExt as _, MetadataExt as _};

use dpu_probe::netdev::{representor_role, RepresentorRole};
use dpu_probe::SysRoot;
use nix::fcntl::{openat, OFlag};
use nix::sys::stat::Mode;

/// Longest `phys_port_name` read: the kernel's are at most `IFNAMSIZ` (16) bytes.
const MAX_PORT_NAME: usize = 64;

/// A netdev's `phys_port_name`, kept open for the directory entry it was opened through.
#[derive(Debug)]
struct KeptFile {
    /// The entry's inode number when the file was opened.
    inode: u64,
    file: File,
}

/// Reads the representors' roles under one root, keeping each `phys_port_name` open from
/// one reading to the next (see the module doc). Lives with the scrape's sampler.
#[derive(Debug, Default)]
pub(crate) struct RoleReader {
    /// By netdev name; only the netdevs listed at the last reading.
    kept: HashMap<String, KeptFile>,
}

impl RoleReader {
    /// The switchdev representors under `root` and their roles, sorted by netdev name.
    pub(crate) fn read(&mut self, root: &SysRoot) -> Vec<(String, RepresentorRole)> {
        let dir_path = root.sys("class/net");
        let Ok(entries) = std::fs::read_dir(&dir_path) else {
            self.kept.clear();
            return Vec::new();
        };
        // Opened only when a file has to be opened (a new netdev, a failed read).
        let mut dir: Option<File> = None;
        let mut kept = HashMap::with_capacity(self.kept.len());
        let mut roles = Vec::new();
        let mut text = [0u8; MAX_PORT_NAME];
        for entry in entries.filter_map(Result::ok) {
            let Ok(name) = entry.file_name().into_string() else {
                continue;
            };
            let inode = entry.ino();
            let mut len = None;
            if let Some(old) = self.kept.remove(&name).filter(|old| old.inode == inode) {
                len = read_linked(&old.file, &mut text);
                if len.is_some() {
                    kept.insert(name.clone(), old);
                }
            }
            if len.is_none() {
                if dir.is_none() {
                    dir = File::open(&dir_path).ok();
                }
                if let Some(file) = dir.as_ref().and_then(|dir| open_port_name(dir, &name)) {
                    len = read_linked(&file, &mut text);
                    kept.insert(name.clone(), KeptFile { inode, file });
                }
            }
            if let Some(role) = len.and_then(|len| role_of(&text, len)) {
                roles.push((name, role));
            }
        }
        // Netdevs not listed this time are gone: their descriptors close here.
        self.kept = kept;
        roles.sort_by(|a, b| a.0.cmp(&b.0));
        roles
    }
}

/// The bytes read from offset 0 of `file` into `text`; `None` when the read fails (sysfs:
/// the netdev went, or it has no `phys_port_name`) or the file is no longer linked into
/// the tree (a fixture's file replaced or its directory removed: a directory made again
/// under the same name may reuse the inode number, so the listing cannot tell).
fn read_linked(file: &File, text: &mut [u8; MAX_PORT_NAME]) -> Option<usize> {
    let len = file.read_at(text, 0).ok()?;
    (file.metadata().ok()?.nlink() > 0).then_some(len)
}

/// `NAME/phys_port_name` opened relative to `dir`; `None` when absent.
fn open_port_name(dir: &File, name: &str) -> Option<File> {
    let flags = OFlag::O_RDONLY | OFlag::O_CLOEXEC;
    let path = format!("{name}/phys_port_name");
    openat(dir.as_fd(), path.as_str(), flags, Mode::empty())
        .ok()
        .map(File::from)
}

/// The role the first `len` bytes of `text` (a `phys_port_name`) name; `None` when they
/// fill the buffer (longer than any interface's name) or name no representor.
fn role_of(text: &[u8; MAX_PORT_NAME], len: usize) -> Option<RepresentorRole> {
    // sysfs gives a whole attribute to the first read, and a small fixture file comes
    // whole too.
    if len >= text.len() {
        return None;
    }
    representor_role(std::str::from_utf8(&text[..len]).ok()?.trim())
}

/// The `role` label of a representor.
pub(crate) fn role_name(role: RepresentorRole) -> &'static str {
    match role {
        RepresentorRole::Uplink => "uplink",
        RepresentorRole::HostPf => "host_pf",
        RepresentorRole::HostVf => "host_vf",
        RepresentorRole::SubFunction => "sub_function",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn roles_come_from_phys_port_name_and_follow_changes() {
        let dir = tempfile::tempdir().expect("tempdir");
        let net = dir.path().join("sys/class/net");
        for (name, port) in [("p0", Some("p0")), ("pf0hpf", Some("pf0hpf")), ("lo", None)] {
            std::fs::create_dir_all(net.join(name)).expect("mkdir");
            if let Some(port) = port {
                std::fs::write(net.join(name).join("phys_port_name"), format!("{port}\n"))
                    .expect("write");
            }
        }
        let root = SysRoot::new(dir.path());
        let mut reader = RoleReader::default();
        assert_eq!(
            reader.read(&root),
            vec![
                ("p0".to_owned(), RepresentorRole::Uplink),
                ("pf0hpf".to_owned(), RepresentorRole::HostPf),
            ]
        );
        // A role that changes, a netdev that goes and one that comes: read afresh.
        std::fs::write(net.join("p0/phys_port_name"), "pf0vf3\n").expect("write");
        std::fs::remove_dir_all(net.join("pf0hpf")).expect("rm");
        std::fs::create_dir_all(net.join("pf1sf2")).expect("mkdir");
        std::fs::write(net.join("pf1sf2/phys_port_name"), "pf1sf2").expect("write");
        assert_eq!(
            reader.read(&root),
            vec![
                ("p0".to_owned(), RepresentorRole::HostVf),
                ("pf1sf2".to_owned(), RepresentorRole::SubFunction),
            ]
        );
        assert_eq!(role_name(RepresentorRole::SubFunction), "sub_function");
    }

    #[test]
    fn kept_files_follow_renames_replacements_and_recreated_netdevs() {
        let dir = tempfile::tempdir().expect("tempdir");
        let net = dir.path().join("sys/class/net");
        let write = |name: &str, port: &str| {
            std::fs::create_dir_all(net.join(name)).expect("mkdir");
            std::fs::write(net.join(name).join("phys_port_name"), port).expect("write");
        };
        write("p0", "p0\n");
        write("pf0hpf", "pf0hpf\n");
        let root = SysRoot::new(dir.path());
        let mut reader = RoleReader::default();
        let read = |reader: &mut RoleReader| reader.read(&root);
        let uplink_and_host_pf = vec![
            ("p0".to_owned(), RepresentorRole::Uplink),
            ("pf0hpf".to_owned(), RepresentorRole::HostPf),
        ];
        assert_eq!(read(&mut reader), uplink_and_host_pf);
        assert_eq!(reader.kept.len(), 2, "both files are kept open");

        // The two netdevs swap names: each name's kept file is the other netdev's now.
        std::fs::rename(net.join("p0"), net.join("tmp")).expect("rename");
        std::fs::rename(net.join("pf0hpf"), net.join("p0")).expect("rename");
        std::fs::rename(net.join("tmp"), net.join("pf0hpf")).expect("rename");
        assert_eq!(
            read(&mut reader),
            vec![
                ("p0".to_owned(), RepresentorRole::HostPf),
                ("pf0hpf".to_owned(), RepresentorRole::Uplink),
            ]
        );

        // A file replaced by another (written aside, renamed over it).
        let aside = net.join("p0/phys_port_name.new");
        std::fs::write(&aside, "pf0vf7\n").expect("write");
        std::fs::rename(&aside, net.join("p0/phys_port_name")).expect("rename");
        // A netdev removed and made again under its name (the inode number may be reused).
        std::fs::remove_dir_all(net.join("pf0hpf")).expect("rm");
        write("pf0hpf", "pf1sf3\n");
        assert_eq!(
            read(&mut reader),
            vec![
                ("p0".to_owned(), RepresentorRole::HostVf),
                ("pf0hpf".to_owned(), RepresentorRole::SubFunction),
            ]
        );

        // A netdev that goes closes its file; one without `phys_port_name` keeps none.
        std::fs::remove_dir_all(net.join("pf0hpf")).expect("rm");
        std::fs::create_dir_all(net.join("lo")).expect("mkdir");
        assert_eq!(
            read(&mut reader),
            vec![("p0".to_owned(), RepresentorRole::HostVf)]
        );
        assert_eq!(reader.kept.len(), 1);
    }
}
