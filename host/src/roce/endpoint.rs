//! Which RDMA device, port and GID index each side of `roce perf` uses. Both sides always
//! get `-x` explicitly (perftest versions pick different defaults, reference §3.1 and
//! perftest issue #44): the RoCE v2 entry with an IPv4-mapped address, found locally in
//! sysfs through `dpu_probe` and on the peer from one fixed listing read over ssh.

use std::collections::BTreeMap;
use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use dpu_probe::rdma::{list_rdma_devices, GidEntry};
use dpu_probe::SysRoot;

/// One side's RDMA endpoint.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Endpoint {
    /// RDMA device (`-d`).
    pub ibdev: String,
    /// Port (`-i`).
    pub port: u32,
    /// GID index (`-x`).
    pub gid_index: u32,
    /// The IPv4 address inside that GID.
    pub ipv4: Option<Ipv4Addr>,
    /// The netdev the GID belongs to.
    pub netdev: Option<String>,
}

impl fmt::Display for Endpoint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{} gid {}", self.ibdev, self.port, self.gid_index)?;
        if let Some(ip) = self.ipv4 {
            write!(f, " ({ip}")?;
            if let Some(n) = &self.netdev {
                write!(f, " on {n}")?;
            }
            write!(f, ")")?;
        }
        Ok(())
    }
}

/// What the user pinned for one side.
#[derive(Debug, Clone, Default)]
pub struct Pin {
    /// `--device` / `--peer-device`.
    pub ibdev: Option<String>,
    /// `--ib-port` / `--peer-ib-port`.
    pub port: Option<u32>,
    /// `--gid-index` / `--peer-gid-index`.
    pub gid_index: Option<u32>,
}

/// A GID table row from either side.
#[derive(Debug, Clone)]
struct Row {
    ibdev: String,
    port: u32,
    entry: GidEntry,
}

/// Picks one endpoint: the pinned device/port/index when given, else the only RoCE v2
/// IPv4 entry, else the one whose address is `prefer` (the address the peer is reached
/// at). `side` names the side in errors ("local", "peer target").
fn choose(
    rows: Vec<Row>,
    pin: &Pin,
    prefer: Option<IpAddr>,
    side: &str,
) -> Result<Endpoint, String> {
    let rows: Vec<Row> = rows
        .into_iter()
        .filter(|r| pin.ibdev.as_ref().is_none_or(|d| d == &r.ibdev))
        .filter(|r| pin.port.is_none_or(|p| p == r.port))
        .collect();
    let endpoint = |r: &Row| Endpoint {
        ibdev: r.ibdev.clone(),
        port: r.port,
        gid_index: r.entry.index,
        ipv4: r.entry.ipv4(),
        netdev: r.entry.netdev.clone(),
    };
    if let Some(index) = pin.gid_index {
        let hits: Vec<&Row> = rows.iter().filter(|r| r.entry.index == index).collect();
        return match hits.as_slice() {
            [one] => Ok(endpoint(one)),
            [] => Err(format!(
                "{side}: no GID index {index}{} (a non-empty entry is needed)",
                pin.ibdev
                    .as_ref()
                    .map(|d| format!(" on {d}"))
                    .unwrap_or_default()
            )),
            _ => Err(format!(
                "{side}: GID index {index} exists on several devices; name one with the device flag"
            )),
        };
    }
    let v2: Vec<&Row> = rows.iter().filter(|r| r.entry.is_roce_v2_ipv4()).collect();
    match v2.as_slice() {
        [one] => Ok(endpoint(one)),
        [] => {
            Err(format!(
            "{side}: no RoCE v2 GID with an IPv4 address{}: give the interface an IPv4 address, \
             or pin a device and GID index",
            pin.ibdev.as_ref().map(|d| format!(" on {d}")).unwrap_or_default()
        ))
        }
        many => {
            if let Some(hit) = many
                .iter()
                .find(|r| prefer.is_some() && r.entry.ip == prefer)
            {
                return Ok(endpoint(hit));
            }
            let list: Vec<String> = many.iter().map(|r| endpoint(r).to_string()).collect();
            Err(format!(
                "{side}: several RoCE v2 IPv4 GIDs ({}); pin one with the device and GID index flags",
                list.join("; ")
            ))
        }
    }
}

/// The local endpoint, from sysfs under `root`.
pub fn local(root: &SysRoot, pin: &Pin) -> Result<Endpoint, String> {
    let devices =
        list_rdma_devices(root).map_err(|e| format!("local: reading RDMA devices: {e}"))?;
    if devices.is_empty() {
        return Err("local: no RDMA device (nothing under /sys/class/infiniband)".to_owned());
    }
    if let Some(d) = &pin.ibdev {
        if !devices.iter().any(|x| &x.ibdev == d) {
            let names: Vec<&str> = devices.iter().map(|x| x.ibdev.as_str()).collect();
            return Err(format!(
                "local: no RDMA device {d} (there are: {})",
                names.join(", ")
            ));
        }
    }
    let rows = devices
        .into_iter()
        .flat_map(|d| {
            let ibdev = d.ibdev;
            d.ports.into_iter().flat_map(move |p| {
                let ibdev = ibdev.clone();
                p.gids.into_iter().map(move |entry| Row {
                    ibdev: ibdev.clone(),
                    port: p.port,
                    entry,
                })
            })
        })
        .collect();
    choose(rows, pin, None, "local")
}

/// The fixed listing run on the peer: every GID, its type and netdev, as `path:value`
/// lines (`grep -H`). Empty `ndevs` entries fail to read and are silently skipped.
pub const PEER_GID_LISTING: &[&str] = &[
    "sh",
    "-c",
    "for p in /sys/class/infiniband/*/ports/*; do [ -d \"$p/gids\" ] && grep -s -H . \"$p\"/gids/* \"$p\"/gid_attrs/types/* \"$p\"/gid_attrs/ndevs/*; done; true",
];

/// The peer endpoint, from the output of [`PEER_GID_LISTING`].
pub fn peer(
    listing: &str,
    pin: &Pin,
    address: Option<IpAddr>,
    side: &str,
) -> Result<Endpoint, String> {
    // (device, port, index) -> (gid, type, netdev)
    type Slot = (Option<String>, Option<String>, Option<String>);
    let mut table: BTreeMap<(String, u32, u32), Slot> = BTreeMap::new();
    for line in listing.lines() {
        let Some(rest) = line.strip_prefix("/sys/class/infiniband/") else {
            continue;
        };
        let Some((path, value)) = rest.split_once(':') else {
            continue;
        };
        let parts: Vec<&str> = path.split('/').collect();
        let (dev, port, kind, index) = match parts.as_slice() {
            [dev, "ports", port, "gids", index] => (*dev, *port, "gid", *index),
            [dev, "ports", port, "gid_attrs", "types", index] => (*dev, *port, "type", *index),
            [dev, "ports", port, "gid_attrs", "ndevs", index] => (*dev, *port, "ndev", *index),
            _ => continue,
        };
        let (Ok(port), Ok(index)) = (port.parse::<u32>(), index.parse::<u32>()) else {
            continue;
        };
        let slot = table.entry((dev.to_owned(), port, index)).or_default();
        let value = Some(value.trim().to_owned());
        match kind {
            "gid" => slot.0 = value,
            "type" => slot.1 = value,
            _ => slot.2 = value,
        }
    }
    if table.is_empty() {
        return Err(format!(
            "{side}: no RDMA device (nothing under /sys/class/infiniband)"
        ));
    }
    let rows = table
        .into_iter()
        .filter_map(|((ibdev, port, index), (gid, gid_type, netdev))| {
            let gid = gid?;
            let addr: Ipv6Addr = gid.parse().ok()?;
            if addr.is_unspecified() {
                return None;
            }
            let ip = match addr.to_ipv4_mapped() {
                Some(v4) => IpAddr::V4(v4),
                None => IpAddr::V6(addr),
            };
            Some(Row {
                ibdev,
                port,
                entry: GidEntry {
                    index,
                    gid,
                    gid_type,
                    netdev,
                    ip: Some(ip),
                },
            })
        })
        .collect();
    choose(rows, pin, address, side)
}

#[cfg(test)]
mod tests {
    use super::*;

    const LISTING: &str = "\
/sys/class/infiniband/rxe0/ports/1/gids/0:fe80:0000:0000:0000:5054:00ff:fe1a:0001
/sys/class/infiniband/rxe0/ports/1/gids/1:0000:0000:0000:0000:0000:ffff:0a0a:0001
/sys/class/infiniband/rxe0/ports/1/gids/2:0000:0000:0000:0000:0000:0000:0000:0000
/sys/class/infiniband/rxe0/ports/1/gid_attrs/types/0:RoCE v2
/sys/class/infiniband/rxe0/ports/1/gid_attrs/types/1:RoCE v2
/sys/class/infiniband/rxe0/ports/1/gid_attrs/ndevs/0:t0
/sys/class/infiniband/rxe0/ports/1/gid_attrs/ndevs/1:t0
";

    #[test]
    fn the_peer_roce_v2_ipv4_entry_is_chosen() {
        let ep = peer(LISTING, &Pin::default(), None, "peer").expect("endpoint");
        assert_eq!((ep.ibdev.as_str(), ep.port, ep.gid_index), ("rxe0", 1, 1));
        assert_eq!(ep.ipv4, Some(Ipv4Addr::new(10, 10, 0, 1)));
        assert_eq!(ep.netdev.as_deref(), Some("t0"));
    }

    #[test]
    fn several_candidates_prefer_the_peer_address_or_ask_for_a_pin() {
        let two = format!(
            "{LISTING}/sys/class/infiniband/mlx5_0/ports/1/gids/3:0000:0000:0000:0000:0000:ffff:c0a8:0001\n\
             /sys/class/infiniband/mlx5_0/ports/1/gid_attrs/types/3:RoCE v2\n"
        );
        let err = peer(&two, &Pin::default(), None, "peer x").expect_err("ambiguous");
        assert!(err.contains("several RoCE v2 IPv4 GIDs"), "{err}");
        let ep = peer(
            &two,
            &Pin::default(),
            Some("192.168.0.1".parse().expect("ip")),
            "peer",
        )
        .expect("by address");
        assert_eq!((ep.ibdev.as_str(), ep.gid_index), ("mlx5_0", 3));
        let pinned = Pin {
            ibdev: Some("rxe0".into()),
            ..Pin::default()
        };
        assert_eq!(
            peer(&two, &pinned, None, "peer").expect("pinned").ibdev,
            "rxe0"
        );
    }

    #[test]
    fn missing_entries_and_devices_are_named() {
        let err = peer("", &Pin::default(), None, "peer target").expect_err("none");
        assert!(err.contains("peer target: no RDMA device"), "{err}");
        let v1_only = LISTING.replace("types/1:RoCE v2", "types/1:IB/RoCE v1");
        let err = peer(&v1_only, &Pin::default(), None, "peer").expect_err("v1");
        assert!(err.contains("no RoCE v2 GID with an IPv4 address"), "{err}");
        let pin = Pin {
            gid_index: Some(7),
            ..Pin::default()
        };
        let err = peer(LISTING, &pin, None, "peer").expect_err("index");
        assert!(err.contains("no GID index 7"), "{err}");
    }
}
