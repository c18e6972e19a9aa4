//! Reading `/sys/class/infiniband`: [`RdmaDeviceInfo`], its [`RdmaPortInfo`]s and their
//! [`GidEntry`] tables. Apart from `rdma.rs` so that the GID selection in `gid.rs`, which
//! walks these devices, does not import the module that re-exports it.

use std::net::{IpAddr, Ipv6Addr};

use crate::rdma::counters::is_unavailable;
use crate::root::{link_basename, list_dir, read_attr, read_optional_attr};
use crate::{ProbeError, SysRoot};

/// An RDMA device with its ports.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct RdmaDeviceInfo {
    /// Device name, e.g. "mlx5_0", "rxe0".
    pub ibdev: String,
    /// `node_type` text, e.g. "1: CA".
    pub node_type: Option<String>,
    /// `node_guid`.
    pub node_guid: Option<String>,
    /// `sys_image_guid`.
    pub sys_image_guid: Option<String>,
    /// `fw_ver`.
    pub firmware_version: Option<String>,
    /// `hca_type` (mlx5: "MT" + PCI device id in decimal, "MT41692" for BlueField-3).
    pub hca_type: Option<String>,
    /// `board_id` (PSID).
    pub board_id: Option<String>,
    /// The PCI function behind the device (`device` link); none for soft-RoCE.
    pub pci_address: Option<String>,
    /// Ports, by number.
    pub ports: Vec<RdmaPortInfo>,
}

/// One RDMA port.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct RdmaPortInfo {
    /// Port number (1-based).
    pub port: u32,
    /// The number from `state` ("4: ACTIVE" -> 4).
    pub state: u32,
    /// `state` text after the number.
    pub state_text: String,
    /// `phys_state` verbatim.
    pub phys_state: String,
    /// `rate` verbatim, e.g. "100 Gb/sec (4X EDR)".
    pub rate: String,
    /// Rate in Gbit/s parsed from `rate`.
    pub rate_gbps: Option<f64>,
    /// `link_layer`: "Ethernet", "InfiniBand".
    pub link_layer: String,
    /// Non-empty GID entries.
    pub gids: Vec<GidEntry>,
}

impl RdmaPortInfo {
    /// The netdev the port is bound to (RoCE), from the first GID that names one.
    pub fn netdev(&self) -> Option<&str> {
        self.gids.iter().find_map(|g| g.netdev.as_deref())
    }
}

/// A GID table entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GidEntry {
    /// Table index.
    pub index: u32,
    /// The GID as sysfs prints it.
    pub gid: String,
    /// `gid_attrs/types/N`: "IB/RoCE v1" or "RoCE v2"; absent if unreadable.
    pub gid_type: Option<String>,
    /// `gid_attrs/ndevs/N`; reading an empty entry fails with EINVAL, hence optional.
    pub netdev: Option<String>,
    /// The address inside the GID: IPv4 for IPv4-mapped GIDs, else IPv6.
    pub ip: Option<IpAddr>,
}

/// Lists RDMA devices, sorted by name; an absent `/sys/class/infiniband` means none.
pub fn list_rdma_devices(root: &SysRoot) -> Result<Vec<RdmaDeviceInfo>, ProbeError> {
    list_dir(&root.sys("class/infiniband"))?
        .iter()
        .map(|name| read_rdma_device(root, name))
        .collect()
}

/// Reads one RDMA device; [`ProbeError::NotFound`] when it does not exist.
pub fn read_rdma_device(root: &SysRoot, ibdev: &str) -> Result<RdmaDeviceInfo, ProbeError> {
    let dir = root.sys("class/infiniband").join(ibdev);
    if !crate::root::is_dir(&dir) {
        return Err(ProbeError::NotFound {
            what: "RDMA device",
            name: ibdev.to_owned(),
            root: root.sys("class/infiniband"),
        });
    }
    let mut ports = Vec::new();
    for port in list_dir(&dir.join("ports"))? {
        let Ok(number) = port.parse::<u32>() else {
            continue;
        };
        ports.push(read_port(&dir.join("ports").join(&port), number)?);
    }
    ports.sort_by_key(|p| p.port);
    let attr = |name: &str| read_optional_attr(&dir.join(name));
    Ok(RdmaDeviceInfo {
        ibdev: ibdev.to_owned(),
        node_type: attr("node_type"),
        node_guid: attr("node_guid"),
        sys_image_guid: attr("sys_image_guid"),
        firmware_version: attr("fw_ver"),
        hca_type: attr("hca_type"),
        board_id: attr("board_id"),
        pci_address: link_basename(&dir.join("device"))
            .filter(|bdf| crate::netdev::looks_like_pci_address(bdf)),
        ports,
    })
}

fn read_port(dir: &std::path::Path, port: u32) -> Result<RdmaPortInfo, ProbeError> {
    let state_path = dir.join("state");
    let state_line = read_attr(&state_path)?;
    let (state, state_text) = split_numbered(&state_line).ok_or_else(|| ProbeError::Format {
        path: state_path,
        detail: format!("expected \"<n>: <STATE>\", got {state_line:?}"),
    })?;
    let rate = read_optional_attr(&dir.join("rate")).unwrap_or_default();
    let mut gids = Vec::new();
    for index in list_dir(&dir.join("gids"))? {
        let Ok(n) = index.parse::<u32>() else {
            continue;
        };
        let gid_path = dir.join("gids").join(&index);
        let gid = match crate::root::read_text(&gid_path) {
            Ok(text) => text.trim().to_owned(),
            // Kernels print zeros for empty entries; older ones may refuse the read.
            Err(e) if is_unavailable(&e) => continue,
            Err(e) => return Err(ProbeError::read(gid_path, e)),
        };
        if is_empty_gid(&gid) {
            continue;
        }
        gids.push(GidEntry {
            index: n,
            ip: parse_gid_ip(&gid),
            gid,
            gid_type: read_optional_attr(&dir.join("gid_attrs/types").join(&index)),
            netdev: read_optional_attr(&dir.join("gid_attrs/ndevs").join(&index)),
        });
    }
    gids.sort_by_key(|g| g.index);
    Ok(RdmaPortInfo {
        port,
        state,
        state_text: state_text.to_owned(),
        phys_state: read_optional_attr(&dir.join("phys_state")).unwrap_or_default(),
        rate_gbps: parse_rate_gbps(&rate),
        rate,
        link_layer: read_optional_attr(&dir.join("link_layer")).unwrap_or_default(),
        gids,
    })
}

/// Splits "4: ACTIVE" into (4, "ACTIVE").
fn split_numbered(text: &str) -> Option<(u32, &str)> {
    let (number, rest) = text.split_once(':')?;
    Some((number.trim().parse().ok()?, rest.trim()))
}

/// Parses the leading number of "100 Gb/sec (4X EDR)".
fn parse_rate_gbps(rate: &str) -> Option<f64> {
    let (number, unit) = rate.split_once(' ')?;
    unit.starts_with("Gb/sec")
        .then(|| number.parse().ok())
        .flatten()
}

/// Empty and reserved entries read as all zeros; the default link-local prefix with a
/// zero interface id is also unused (`show_gids` skips both).
fn is_empty_gid(gid: &str) -> bool {
    match gid.parse::<Ipv6Addr>() {
        Ok(addr) => addr.is_unspecified() || addr == Ipv6Addr::new(0xfe80, 0, 0, 0, 0, 0, 0, 0),
        Err(_) => gid.chars().all(|c| c == '0' || c == ':'),
    }
}

fn parse_gid_ip(gid: &str) -> Option<IpAddr> {
    let addr: Ipv6Addr = gid.parse().ok()?;
    Some(match addr.to_ipv4_mapped() {
        Some(v4) => IpAddr::V4(v4),
        None => IpAddr::V6(addr),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;

    fn write(path: std::path::PathBuf, text: &str) {
        fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        fs::write(path, text).expect("write");
    }

    #[test]
    fn reads_ports_and_gid_table_skipping_empty_entries() {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = SysRoot::new(dir.path());
        let dev = root.sys("class/infiniband/mlx5_0");
        write(dev.join("hca_type"), "MT41692\n");
        write(dev.join("fw_ver"), "32.38.1002\n");
        let port = dev.join("ports/1");
        write(port.join("state"), "4: ACTIVE\n");
        write(port.join("phys_state"), "5: LinkUp\n");
        write(port.join("rate"), "100 Gb/sec (4X EDR)\n");
        write(port.join("link_layer"), "Ethernet\n");
        write(
            port.join("gids/0"),
            "fe80:0000:0000:0000:0a11:22ff:fe33:4455\n",
        );
        write(port.join("gid_attrs/types/0"), "IB/RoCE v1\n");
        write(port.join("gid_attrs/ndevs/0"), "ens1f0np0\n");
        write(
            port.join("gids/3"),
            "0000:0000:0000:0000:0000:ffff:c0a8:0101\n",
        );
        write(port.join("gid_attrs/types/3"), "RoCE v2\n");
        write(port.join("gid_attrs/ndevs/3"), "ens1f0np0\n");
        // An empty entry: all zeros, and its ndev attribute is unreadable.
        write(
            port.join("gids/4"),
            "0000:0000:0000:0000:0000:0000:0000:0000\n",
        );

        let devices = list_rdma_devices(&root).expect("list");
        assert_eq!(devices.len(), 1);
        let port = &devices[0].ports[0];
        assert_eq!((port.state, port.state_text.as_str()), (4, "ACTIVE"));
        assert_eq!(port.rate_gbps, Some(100.0));
        assert_eq!(port.gids.len(), 2, "{:?}", port.gids);
        let v2 = &port.gids[1];
        assert_eq!(v2.index, 3);
        assert_eq!(v2.gid_type.as_deref(), Some("RoCE v2"));
        assert_eq!(v2.ip, Some("192.168.1.1".parse().expect("ip")));
        assert_eq!(port.netdev(), Some("ens1f0np0"));
    }

    #[test]
    fn malformed_state_names_the_file() {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = SysRoot::new(dir.path());
        write(root.sys("class/infiniband/rxe0/ports/1/state"), "ACTIVE\n");
        let err = read_rdma_device(&root, "rxe0").expect_err("bad state");
        assert!(err.to_string().contains("state"), "{err}");
        let err = read_rdma_device(&root, "mlx5_9").expect_err("absent");
        assert!(matches!(err, ProbeError::NotFound { .. }));
    }
}
