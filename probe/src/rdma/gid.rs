//! Which GID index RoCE v2 over IPv4 uses on a netdev, and which one tools would pick
//! on their own (reference §1.4 and §3.1).

use std::net::{IpAddr, Ipv4Addr};

use super::devices::{list_rdma_devices, GidEntry};
use crate::{ProbeError, SysRoot};

/// The RoCE version of a GID entry: v1 entries are link-layer only, v2 entries are routable
/// UDP/IP, and tools pick different ones by default.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum GidType {
    /// `IB/RoCE v1` (also plain InfiniBand GIDs).
    IbRoceV1,
    /// `RoCE v2`.
    RoceV2,
}

impl GidType {
    /// Parses `gid_attrs/types/N` (`IB/RoCE v1`, `RoCE v2`; case of the `v` ignored the
    /// way `show_gids` does).
    pub fn parse(text: &str) -> Option<Self> {
        let lower = text.trim().to_ascii_lowercase();
        if lower.ends_with("v2") {
            Some(Self::RoceV2)
        } else if lower.ends_with("v1") {
            Some(Self::IbRoceV1)
        } else {
            None
        }
    }
}

impl GidEntry {
    /// The parsed RoCE version; `None` when the type attribute was unreadable or unknown.
    pub fn roce_version(&self) -> Option<GidType> {
        self.gid_type.as_deref().and_then(GidType::parse)
    }

    /// The IPv4 address of an IPv4-mapped GID.
    pub fn ipv4(&self) -> Option<Ipv4Addr> {
        match self.ip? {
            IpAddr::V4(v4) => Some(v4),
            IpAddr::V6(_) => None,
        }
    }

    /// Whether this is the entry RoCE v2 over IPv4 uses (what NCCL and perftest want by
    /// default: RoCE v2, `AF_INET`).
    pub fn is_roce_v2_ipv4(&self) -> bool {
        self.roce_version() == Some(GidType::RoceV2) && self.ipv4().is_some()
    }
}

/// A GID entry together with the port it belongs to, as found by a netdev search.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GidCandidate {
    /// RDMA device.
    pub ibdev: String,
    /// Port number.
    pub port: u32,
    /// The entry.
    pub entry: GidEntry,
}

/// Every non-empty GID entry bound to `netdev`, on every RDMA device and port, sorted by
/// device, port and index. A check compares these with what tools would pick: the table
/// changes when addresses or VLANs change, so an index must never be hard-coded.
pub fn gid_candidates(root: &SysRoot, netdev: &str) -> Result<Vec<GidCandidate>, ProbeError> {
    let mut out = Vec::new();
    for device in list_rdma_devices(root)? {
        for port in device.ports {
            out.extend(
                port.gids
                    .into_iter()
                    .filter(|g| g.netdev.as_deref() == Some(netdev))
                    .map(|entry| GidCandidate {
                        ibdev: device.ibdev.clone(),
                        port: port.port,
                        entry,
                    }),
            );
        }
    }
    Ok(out)
}

/// The RoCE v2 IPv4 GID of `netdev`: the index to pass explicitly (`perftest -x`,
/// `NCCL_IB_GID_INDEX`). With several (secondary addresses), the lowest index; `None`
/// when the netdev has no IPv4 address or no RoCE v2 entry.
pub fn find_roce_v2_ipv4_gid(
    root: &SysRoot,
    netdev: &str,
) -> Result<Option<GidCandidate>, ProbeError> {
    Ok(gid_candidates(root, netdev)?
        .into_iter()
        .find(|c| c.entry.is_roce_v2_ipv4()))
}

/// The index perftest picks without `-x` in current master (reference §3.1): IPv4 +100,
/// not link-local +10, RoCE v2 +2 / v1 +1, highest score wins. Ties go to the lowest
/// index (UNVERIFIED). Lets a check warn when the automatic choice differs from
/// [`find_roce_v2_ipv4_gid`]; releases up to 26.04 use older logic.
pub fn perftest_default_gid_index(gids: &[GidEntry]) -> Option<u32> {
    let score = |g: &GidEntry| {
        let family = if g.ipv4().is_some() { 100 } else { 0 };
        let link_local =
            matches!(g.ip, Some(IpAddr::V6(v6)) if v6.segments()[0] & 0xffc0 == 0xfe80);
        let scope = if link_local { 0 } else { 10 };
        let version = match g.roce_version() {
            Some(GidType::RoceV2) => 2,
            Some(GidType::IbRoceV1) => 1,
            None => 0,
        };
        family + scope + version
    };
    let mut best: Option<(u32, u32)> = None;
    for g in gids {
        let s = score(g);
        if best.is_none_or(|(_, top)| s > top) {
            best = Some((g.index, s));
        }
    }
    best.map(|(index, _)| index)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rdma::read_rdma_device;
    use crate::testing::SysTree;
    use std::fs;

    /// Two ports' worth of GIDs: v1/v2 link-local and IPv4 on `ens1f0np0`, a VLAN with its
    /// own IPv4, a secondary IPv4, and an empty entry.
    fn gid_tree() -> (SysTree, SysRoot) {
        let tree = SysTree::new();
        let port = "sys/class/infiniband/mlx5_0/ports/1";
        tree.attrs(port, &[("state", "4: ACTIVE")]);
        for (index, gid, kind, ndev) in [
            (
                "0",
                "fe80:0000:0000:0000:0a11:22ff:fe33:4455",
                "IB/RoCE v1",
                "ens1f0np0",
            ),
            (
                "1",
                "fe80:0000:0000:0000:0a11:22ff:fe33:4455",
                "RoCE v2",
                "ens1f0np0",
            ),
            (
                "2",
                "0000:0000:0000:0000:0000:ffff:c0a8:6401",
                "IB/RoCE v1",
                "ens1f0np0",
            ),
            (
                "3",
                "0000:0000:0000:0000:0000:ffff:c0a8:6401",
                "RoCE v2",
                "ens1f0np0",
            ),
            (
                "5",
                "0000:0000:0000:0000:0000:ffff:0a0a:0001",
                "RoCE v2",
                "ens1f0np0.100",
            ),
            (
                "7",
                "0000:0000:0000:0000:0000:ffff:c0a8:6409",
                "RoCE v2",
                "ens1f0np0",
            ),
        ] {
            tree.attrs(
                port,
                &[
                    (&format!("gids/{index}"), gid),
                    (&format!("gid_attrs/types/{index}"), kind),
                    (&format!("gid_attrs/ndevs/{index}"), ndev),
                ],
            );
        }
        // Empty entry: zeros, attributes absent (EINVAL on a real kernel).
        tree.attrs(
            port,
            &[("gids/4", "0000:0000:0000:0000:0000:0000:0000:0000")],
        );
        let root = tree.root();
        (tree, root)
    }

    #[test]
    fn gid_types_parse_like_show_gids() {
        assert_eq!(GidType::parse("IB/RoCE v1"), Some(GidType::IbRoceV1));
        assert_eq!(GidType::parse("RoCE v2\n"), Some(GidType::RoceV2));
        assert_eq!(GidType::parse("RoCE V2"), Some(GidType::RoceV2));
        assert_eq!(GidType::parse(""), None);
        assert_eq!(GidType::parse("iWARP"), None);
    }

    #[test]
    fn finds_the_roce_v2_ipv4_gid_and_lists_every_candidate() {
        let (_dir, root) = gid_tree();
        let found = find_roce_v2_ipv4_gid(&root, "ens1f0np0")
            .expect("read")
            .expect("found");
        assert_eq!((found.ibdev.as_str(), found.port), ("mlx5_0", 1));
        assert_eq!(found.entry.index, 3);
        assert_eq!(found.entry.ipv4(), Some(Ipv4Addr::new(192, 168, 100, 1)));

        let all = gid_candidates(&root, "ens1f0np0").expect("read");
        let indexes: Vec<_> = all.iter().map(|c| c.entry.index).collect();
        assert_eq!(
            indexes,
            [0, 1, 2, 3, 7],
            "the VLAN and the empty entry are not"
        );
        let v2_ipv4: Vec<_> = all
            .iter()
            .filter(|c| c.entry.is_roce_v2_ipv4())
            .map(|c| c.entry.index)
            .collect();
        assert_eq!(v2_ipv4, [3, 7], "a secondary address is a second candidate");

        let vlan = find_roce_v2_ipv4_gid(&root, "ens1f0np0.100").expect("read");
        assert_eq!(vlan.map(|c| c.entry.index), Some(5));
        assert_eq!(find_roce_v2_ipv4_gid(&root, "eth9").expect("read"), None);
    }

    #[test]
    fn perftest_scoring_picks_the_first_best_entry() {
        let (_dir, root) = gid_tree();
        let device = read_rdma_device(&root, "mlx5_0").expect("read");
        let gids = &device.ports[0].gids;
        assert_eq!(perftest_default_gid_index(gids), Some(3));
        let v6_only: Vec<_> = gids
            .iter()
            .filter(|g| g.ipv4().is_none())
            .cloned()
            .collect();
        assert_eq!(perftest_default_gid_index(&v6_only), Some(1), "v2 beats v1");
        assert_eq!(perftest_default_gid_index(&[]), None);
    }

    #[test]
    fn unreadable_gid_entries_are_skipped() {
        let (_dir, root) = gid_tree();
        let lo_speed = std::path::Path::new("/sys/class/net/lo/speed");
        let einval = fs::read_to_string(lo_speed)
            .err()
            .is_some_and(|e| e.raw_os_error() == Some(nix::errno::Errno::EINVAL as i32));
        if !einval {
            return; // No EINVAL source on this host; the zero-GID case is covered above.
        }
        let gids = root.sys("class/infiniband/mlx5_0/ports/1/gids");
        std::os::unix::fs::symlink(lo_speed, gids.join("6")).expect("link");
        let device = read_rdma_device(&root, "mlx5_0").expect("EINVAL entry skipped");
        assert_eq!(device.ports[0].gids.len(), 6);
    }
}
