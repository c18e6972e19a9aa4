//! Network devices from `/sys/class/net`, with the BlueField representor role decoded
//! from `phys_port_name`.

use crate::root::{link_basename, list_dir, read_attr, read_optional_attr};
use crate::{ProbeError, SysRoot};

/// A network device as sysfs describes it.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct NetdevInfo {
    /// Interface name.
    pub ifname: String,
    /// Kernel interface index.
    pub ifindex: u32,
    /// MAC address as sysfs prints it.
    pub mac_address: String,
    /// MTU in bytes.
    pub mtu: u32,
    /// `operstate` text ("up", "down", "unknown", ...).
    pub operstate: String,
    /// `carrier`; unreadable (EINVAL) while the device is administratively down.
    pub carrier: Option<bool>,
    /// `speed` in Mb/s; absent or negative (-1) when unknown.
    pub speed_mbps: Option<u64>,
    /// Bound driver, from the `device/driver` link.
    pub driver: Option<String>,
    /// Parent PCI function, when the device sits on one.
    pub pci_address: Option<String>,
    /// `phys_port_name` (e.g. "p0", "pf0hpf", "pf0vf1").
    pub phys_port_name: Option<String>,
    /// `phys_switch_id` (hex), shared by every port of one eswitch.
    pub phys_switch_id: Option<String>,
    /// The device sits on an SR-IOV virtual function (`device/physfn` exists): a VF left
    /// in the host, not one of the host's rails.
    pub virtual_function: bool,
}

/// What a port is on a BlueField eswitch, decoded from its `phys_port_name`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RepresentorRole {
    /// `p<N>`: the uplink (physical port).
    Uplink,
    /// `pf<N>hpf`: the host PF.
    HostPf,
    /// `pf<N>vf<M>`: a host VF.
    HostVf,
    /// `pf<N>sf<M>`: a sub-function.
    SubFunction,
}

impl NetdevInfo {
    /// The representor role, if this is a switchdev representor.
    pub fn role(&self) -> Option<RepresentorRole> {
        representor_role(self.phys_port_name.as_deref()?)
    }
}

/// Decodes a `phys_port_name`. Newer kernels prefix external-controller ports with
/// `c<N>` (`c1pf0vf0`); the prefix is ignored the way NVIDIA's udev rules strip it.
pub fn representor_role(phys_port_name: &str) -> Option<RepresentorRole> {
    let name = strip_controller_prefix(phys_port_name);
    if let Some(rest) = name.strip_prefix('p') {
        if is_digits(rest) {
            return Some(RepresentorRole::Uplink);
        }
    }
    let rest = name.strip_prefix("pf")?;
    let digits_end = rest.find(|c: char| !c.is_ascii_digit())?;
    if digits_end == 0 {
        return None;
    }
    match &rest[digits_end..] {
        "hpf" => Some(RepresentorRole::HostPf),
        tail if tail.strip_prefix("vf").is_some_and(is_digits) => Some(RepresentorRole::HostVf),
        tail if tail.strip_prefix("sf").is_some_and(is_digits) => {
            Some(RepresentorRole::SubFunction)
        }
        _ => None,
    }
}

fn strip_controller_prefix(name: &str) -> &str {
    if let Some(rest) = name.strip_prefix('c') {
        let end = rest.find(|c: char| !c.is_ascii_digit()).unwrap_or(0);
        if end > 0 {
            return &rest[end..];
        }
    }
    name
}

fn is_digits(s: &str) -> bool {
    !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit())
}

/// Lists every network device, sorted by name.
pub fn list_netdevs(root: &SysRoot) -> Result<Vec<NetdevInfo>, ProbeError> {
    list_dir(&root.sys("class/net"))?
        .iter()
        .map(|name| read_netdev(root, name))
        .collect()
}

/// Reads one network device; [`ProbeError::NotFound`] when it does not exist.
pub fn read_netdev(root: &SysRoot, ifname: &str) -> Result<NetdevInfo, ProbeError> {
    let dir = root.sys("class/net").join(ifname);
    if !crate::root::is_dir(&dir) {
        return Err(ProbeError::NotFound {
            what: "netdev",
            name: ifname.to_owned(),
            root: root.sys("class/net"),
        });
    }
    let ifindex_path = dir.join("ifindex");
    let ifindex = read_attr(&ifindex_path)?
        .parse()
        .map_err(|_| ProbeError::Format {
            path: ifindex_path,
            detail: "ifindex is not a number".to_owned(),
        })?;
    let mtu_path = dir.join("mtu");
    let mtu = read_attr(&mtu_path)?
        .parse()
        .map_err(|_| ProbeError::Format {
            path: mtu_path,
            detail: "mtu is not a number".to_owned(),
        })?;
    let device = dir.join("device");
    Ok(NetdevInfo {
        ifname: ifname.to_owned(),
        ifindex,
        mac_address: read_optional_attr(&dir.join("address")).unwrap_or_default(),
        mtu,
        operstate: read_optional_attr(&dir.join("operstate"))
            .unwrap_or_else(|| "unknown".to_owned()),
        carrier: read_optional_attr(&dir.join("carrier")).map(|c| c == "1"),
        speed_mbps: read_optional_attr(&dir.join("speed")).and_then(|s| s.parse::<u64>().ok()),
        driver: link_basename(&device.join("driver")),
        pci_address: link_basename(&device).filter(|bdf| looks_like_pci_address(bdf)),
        phys_port_name: read_optional_attr(&dir.join("phys_port_name")),
        phys_switch_id: read_optional_attr(&dir.join("phys_switch_id")),
        virtual_function: crate::root::exists(&device.join("physfn")),
    })
}

/// Reads only a netdev's MTU: RDMA port listings need it for every port, and reading the
/// whole device for one number would be ten files instead of one.
pub fn read_mtu(root: &SysRoot, ifname: &str) -> Option<u32> {
    if ifname.is_empty() {
        return None;
    }
    read_optional_attr(&root.sys("class/net").join(ifname).join("mtu"))?
        .parse()
        .ok()
}

/// True for the canonical sysfs form `dddd:bb:dd.f` with a possible device (0-0x1f) and
/// function (0-7).
pub fn looks_like_pci_address(text: &str) -> bool {
    let b = text.as_bytes();
    let shape = b.len() == 12
        && b[4] == b':'
        && b[7] == b':'
        && b[10] == b'.'
        && [0..4, 5..7, 8..10, 11..12]
            .into_iter()
            .all(|r| b[r].iter().all(u8::is_ascii_hexdigit));
    shape
        && u8::from_str_radix(&text[8..10], 16).is_ok_and(|device| device <= 0x1f)
        && (b'0'..=b'7').contains(&b[11])
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;
    use std::os::unix::fs::symlink;

    #[test]
    fn representor_names_decode_to_roles() {
        use RepresentorRole::*;
        for (name, role) in [
            ("p0", Some(Uplink)),
            ("p1", Some(Uplink)),
            ("pf0hpf", Some(HostPf)),
            ("pf1hpf", Some(HostPf)),
            ("pf0vf0", Some(HostVf)),
            ("pf0vf15", Some(HostVf)),
            ("c1pf0vf0", Some(HostVf)),
            ("pf0sf0", Some(SubFunction)),
            ("pfhpf", None),
            ("pf0vf", None),
            ("eth0", None),
            ("p", None),
        ] {
            assert_eq!(representor_role(name), role, "{name}");
        }
    }

    #[test]
    fn pci_addresses_are_recognised() {
        assert!(looks_like_pci_address("0000:03:00.0"));
        assert!(!looks_like_pci_address("virtio0"));
        assert!(!looks_like_pci_address("0000:03:00.00"));
    }

    #[test]
    fn reads_a_representor_from_a_fixture_tree() {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = SysRoot::new(dir.path());
        let pci = root.sys("devices/pci0000:00/0000:03:00.0");
        fs::create_dir_all(&pci).expect("mkdir");
        fs::create_dir_all(root.sys("bus/pci/drivers/mlx5_core")).expect("mkdir");
        symlink(root.sys("bus/pci/drivers/mlx5_core"), pci.join("driver")).expect("link");
        let net = root.sys("class/net/pf0hpf");
        fs::create_dir_all(&net).expect("mkdir");
        symlink(&pci, net.join("device")).expect("link");
        for (attr, value) in [
            ("ifindex", "7\n"),
            ("mtu", "9000\n"),
            ("address", "02:11:22:33:44:55\n"),
            ("operstate", "up\n"),
            ("carrier", "1\n"),
            ("speed", "-1\n"),
            ("phys_port_name", "pf0hpf\n"),
            ("phys_switch_id", "f4ab580003a1420c\n"),
        ] {
            fs::write(net.join(attr), value).expect("write");
        }

        let all = list_netdevs(&root).expect("list");
        assert_eq!(all.len(), 1);
        let dev = &all[0];
        assert_eq!(dev.ifindex, 7);
        assert_eq!(dev.mtu, 9000);
        assert_eq!(dev.carrier, Some(true));
        assert_eq!(dev.speed_mbps, None, "speed -1 means unknown");
        assert_eq!(dev.driver.as_deref(), Some("mlx5_core"));
        assert_eq!(dev.pci_address.as_deref(), Some("0000:03:00.0"));
        assert_eq!(dev.role(), Some(RepresentorRole::HostPf));

        assert_eq!(read_mtu(&root, "pf0hpf"), Some(9000));
        assert_eq!(read_mtu(&root, "pf0vf9"), None);
        let missing = read_netdev(&root, "pf0vf9").expect_err("absent");
        assert!(matches!(missing, ProbeError::NotFound { .. }), "{missing}");
    }

    #[test]
    fn malformed_mtu_is_a_format_error_naming_the_file() {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = SysRoot::new(dir.path());
        let net = root.sys("class/net/eth0");
        fs::create_dir_all(&net).expect("mkdir");
        fs::write(net.join("ifindex"), "2\n").expect("write");
        fs::write(net.join("mtu"), "lots\n").expect("write");
        let err = read_netdev(&root, "eth0").expect_err("bad mtu");
        assert!(err.to_string().contains("mtu"), "{err}");
    }
}
