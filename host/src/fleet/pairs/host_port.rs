//! What each host brings to its pairs, read once over ssh before any run: the RDMA port of
//! its data interface (device, port, GID index, as `roce perf` would choose them) and that
//! port's line rate.
//!
//! Why before: the runs then pin both sides' devices (`--device`, `--peer-device`), so a
//! host with two NICs is measured on the interface the inventory names and not on whichever
//! GID comes first; and a host that cannot be reached fails once, here, naming ssh, instead
//! of once per pair. The listing is `roce perf`'s own peer GID listing plus one `grep` of
//! the ports' `rate` files: fixed text, no user input in it.

use std::collections::BTreeSet;

use serde::Serialize;

use crate::roce::endpoint::{self, Endpoint, Pin, PEER_GID_LISTING};

/// A port's line rate as its sysfs `rate` says it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PortRate {
    /// Gbit/s.
    pub gbps: f64,
    /// The file's text (`200 Gb/sec (2X NDR)`).
    pub text: String,
}

/// One host's RDMA port for the pairs.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct HostPort {
    /// Device, port and GID index, as `roce perf` uses them.
    pub endpoint: Endpoint,
    /// The port's line rate; None when the kernel gives none.
    pub rate: Option<PortRate>,
}

/// The remote command: `roce perf`'s GID listing, then every port's `rate`.
pub fn listing_command() -> Vec<String> {
    let gids = PEER_GID_LISTING.last().copied().unwrap_or("true");
    vec![
        "sh".to_owned(),
        "-c".to_owned(),
        format!("{gids}; grep -s -H . /sys/class/infiniband/*/ports/*/rate; true"),
    ]
}

const PREFIX: &str = "/sys/class/infiniband/";

/// `DEV/ports/N/<rest>:value` lines of the listing, split.
fn entries(listing: &str) -> impl Iterator<Item = (&str, u32, &str, &str)> {
    listing.lines().filter_map(|line| {
        let rest = line.strip_prefix(PREFIX)?;
        let (path, value) = rest.split_once(':')?;
        let mut parts = path.splitn(4, '/');
        let dev = parts.next()?;
        (parts.next()? == "ports").then_some(())?;
        let port = parts.next()?.parse().ok()?;
        Some((dev, port, parts.next()?, value.trim()))
    })
}

/// The Gbit/s of a sysfs `rate` ("200 Gb/sec (2X NDR)", "2.5 Gb/sec (1X SDR)"). The kernel
/// format dpu-probe's `rdma::ib` reads for local ports; its parser is private to it.
fn rate_gbps(text: &str) -> Option<f64> {
    let (number, _) = text.split_once(" Gb/sec")?;
    number
        .trim()
        .parse()
        .ok()
        .filter(|v: &f64| v.is_finite() && *v > 0.0)
}

/// The host's port from the listing: the one whose GIDs belong to `interface` (the
/// inventory's data interface), else the only RoCE v2 IPv4 GID, as `roce perf` picks.
/// `host` names the host in errors.
pub fn host_port(listing: &str, interface: Option<&str>, host: &str) -> Result<HostPort, String> {
    let mut pin = Pin::default();
    if let Some(interface) = interface {
        let ports: BTreeSet<(&str, u32)> = entries(listing)
            .filter(|(_, _, attr, value)| {
                attr.starts_with("gid_attrs/ndevs/") && *value == interface
            })
            .map(|(dev, port, _, _)| (dev, port))
            .collect();
        let mut ports = ports.into_iter();
        match (ports.next(), ports.next()) {
            (Some((dev, port)), None) => {
                pin.ibdev = Some(dev.to_owned());
                pin.port = Some(port);
            }
            (None, _) => {
                let known: BTreeSet<&str> = entries(listing)
                    .filter(|(_, _, attr, _)| attr.starts_with("gid_attrs/ndevs/"))
                    .map(|(_, _, _, value)| value)
                    .collect();
                return Err(format!(
                    "{host}: no RDMA port has GIDs on interface {interface} (interfaces with GIDs: {})",
                    if known.is_empty() {
                        "none".to_owned()
                    } else {
                        known.into_iter().collect::<Vec<_>>().join(", ")
                    }
                ));
            }
            (Some(a), Some(b)) => {
                return Err(format!(
                "{host}: interface {interface} has GIDs on several RDMA ports ({}/{}, {}/{}, ...)",
                a.0, a.1, b.0, b.1
            ))
            }
        }
    }
    let endpoint = endpoint::peer(listing, &pin, None, host)?;
    let rate = entries(listing)
        .find(|(dev, port, attr, _)| {
            *dev == endpoint.ibdev && *port == endpoint.port && *attr == "rate"
        })
        .and_then(|(_, _, _, text)| {
            Some(PortRate {
                gbps: rate_gbps(text)?,
                text: text.to_owned(),
            })
        });
    Ok(HostPort { endpoint, rate })
}

#[cfg(test)]
mod tests {
    use super::*;

    const TWO_NICS: &str = "\
/sys/class/infiniband/mlx5_0/ports/1/gids/3:0000:0000:0000:0000:0000:ffff:c0a8:0001
/sys/class/infiniband/mlx5_0/ports/1/gid_attrs/types/3:RoCE v2
/sys/class/infiniband/mlx5_0/ports/1/gid_attrs/ndevs/3:ens1f0np0
/sys/class/infiniband/mlx5_1/ports/1/gids/3:0000:0000:0000:0000:0000:ffff:c0a8:0101
/sys/class/infiniband/mlx5_1/ports/1/gid_attrs/types/3:RoCE v2
/sys/class/infiniband/mlx5_1/ports/1/gid_attrs/ndevs/3:ens2f0np0
/sys/class/infiniband/mlx5_0/ports/1/rate:400 Gb/sec (4X NDR)
/sys/class/infiniband/mlx5_1/ports/1/rate:100 Gb/sec (4X EDR)
";

    #[test]
    fn the_inventory_interface_picks_its_port_and_rate() {
        let p = host_port(TWO_NICS, Some("ens2f0np0"), "gpu-01").expect("port");
        assert_eq!(
            (p.endpoint.ibdev.as_str(), p.endpoint.gid_index),
            ("mlx5_1", 3)
        );
        let rate = p.rate.expect("rate");
        assert_eq!(rate.gbps, 100.0);
        assert_eq!(rate.text, "100 Gb/sec (4X EDR)");
        // Without an interface two candidates are ambiguous, as in `roce perf`.
        let err = host_port(TWO_NICS, None, "gpu-01").expect_err("ambiguous");
        assert!(err.contains("several RoCE v2 IPv4 GIDs"), "{err}");
    }

    #[test]
    fn an_interface_without_gids_is_named_with_the_ones_that_have_them() {
        let err = host_port(TWO_NICS, Some("eth0"), "gpu-01").expect_err("no port");
        assert_eq!(
            err,
            "gpu-01: no RDMA port has GIDs on interface eth0 (interfaces with GIDs: ens1f0np0, ens2f0np0)"
        );
    }

    #[test]
    fn a_port_without_a_readable_rate_has_none_not_zero() {
        let listing = TWO_NICS.replace("100 Gb/sec (4X EDR)", "");
        let p = host_port(&listing, Some("ens2f0np0"), "gpu-01").expect("port");
        assert_eq!(p.rate, None);
        assert_eq!(rate_gbps("2.5 Gb/sec (1X SDR)"), Some(2.5));
        assert_eq!(rate_gbps("0 Gb/sec (1X)"), None);
        assert_eq!(rate_gbps("fast"), None);
    }

    #[test]
    fn the_listing_is_roce_perfs_plus_the_rates() {
        let words = listing_command();
        assert_eq!(words[..2], ["sh", "-c"]);
        assert!(words[2].starts_with(PEER_GID_LISTING[2]));
        assert!(words[2].contains("/sys/class/infiniband/*/ports/*/rate"));
    }
}
