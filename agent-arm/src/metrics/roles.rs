//! The switchdev representors of the tree and their roles (the `role` label of netdev and
//! tc series), from `phys_port_name` only, read afresh for every reading: a netdev's
//! role changes without the netdev changing (an uplink gets one when the eswitch enters
//! switchdev mode), so no role is kept from one reading to the next.
//!
//! Read the cheap way, since every scrape pays it: each `phys_port_name` is opened
//! relative to the listed directory (no walk from `/` per netdev) and read once into a
//! stack buffer (no size probe, no second read for the end of file, no heap string).

use std::fs::File;
use std::io::Read as _;
use std::os::fd::AsFd as _;

use dpu_probe::netdev::{representor_role, RepresentorRole};
use dpu_probe::SysRoot;
use nix::fcntl::{openat, OFlag};
use nix::sys::stat::Mode;

/// Longest `phys_port_name` read: the kernel's are at most `IFNAMSIZ` (16) bytes.
const MAX_PORT_NAME: usize = 64;

/// The switchdev representors under `root` and their roles, sorted by netdev name.
pub(crate) fn representor_roles(root: &SysRoot) -> Vec<(String, RepresentorRole)> {
    let dir_path = root.sys("class/net");
    let (Ok(entries), Ok(dir)) = (std::fs::read_dir(&dir_path), File::open(&dir_path)) else {
        return Vec::new();
    };
    let mut path = String::new();
    let mut roles: Vec<(String, RepresentorRole)> = entries
        .filter_map(Result::ok)
        .filter_map(|entry| {
            let name = entry.file_name().into_string().ok()?;
            path.clear();
            path.push_str(&name);
            path.push_str("/phys_port_name");
            Some((name, read_role(&dir, &path)?))
        })
        .collect();
    roles.sort_by(|a, b| a.0.cmp(&b.0));
    roles
}

/// The role a `phys_port_name` at `path` (relative to `dir`) names; `None` when it is
/// absent, unreadable (a netdev without one answers `EOPNOTSUPP`) or not a representor's.
fn read_role(dir: &File, path: &str) -> Option<RepresentorRole> {
    let flags = OFlag::O_RDONLY | OFlag::O_CLOEXEC;
    let mut file = File::from(openat(dir.as_fd(), path, flags, Mode::empty()).ok()?);
    let mut text = [0u8; MAX_PORT_NAME];
    // sysfs gives a whole attribute to the first read, and a small fixture file comes
    // whole too; a name filling the buffer is longer than any interface's.
    let len = file.read(&mut text).ok()?;
    if len == text.len() {
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
        assert_eq!(
            representor_roles(&root),
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
            representor_roles(&root),
            vec![
                ("p0".to_owned(), RepresentorRole::HostVf),
                ("pf1sf2".to_owned(), RepresentorRole::SubFunction),
            ]
        );
        assert_eq!(role_name(RepresentorRole::SubFunction), "sub_function");
    }
}
