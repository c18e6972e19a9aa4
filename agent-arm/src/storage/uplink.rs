//! The DPU uplinks a remote controller's traffic crosses: for each of its addresses, the
//! interface the kernel routes it out of (`ip route get ADDR`, one `RTM_GETROUTE` in the
//! agent's network namespace). SNAP's and the kernel's NVMe/TCP initiators open ordinary
//! sockets, so the kernel's route decision is the interface whose counters receive the
//! target's bytes; `dpuctl prove storage` counts them as an NVMe/TCP remote's transport
//! line.
//!
//! Only on the live system: under a fixture sys root the kernel's routes are this
//! machine's, not the fixture's, so the answer is empty (the proof then notes the uplink
//! as not accounted) rather than a real interface of the wrong machine.

use std::net::IpAddr;
use std::path::Path;

use dpu_probe::netlink::{NetlinkError, RouteSocket, RouteStats};
use dpu_probe::SysRoot;
use dpu_proto::v1;

/// Whether route lookups answer for the machine the agent describes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum RouteLookup {
    /// The agent reads the live system (`--sys-root /`): ask the kernel.
    Live,
    /// A fixture or mounted image: there is no kernel to ask.
    Unavailable,
}

impl RouteLookup {
    /// Live for the root `/`, unavailable for any other.
    pub(crate) fn of(root: &SysRoot) -> Self {
        if root.path() == Path::new("/") {
            Self::Live
        } else {
            Self::Unavailable
        }
    }
}

/// Every transport address of a remote controller, first path first.
fn addresses(spec: &v1::RemoteControllerSpec) -> Vec<IpAddr> {
    std::iter::once(spec.traddr.as_str())
        .chain(spec.extra_paths.iter().map(|p| p.traddr.as_str()))
        .filter_map(|a| a.parse().ok())
        .collect()
}

/// The interfaces `spec`'s addresses are routed out of, each once, in address order;
/// empty under [`RouteLookup::Unavailable`]. A failed lookup is logged and leaves its
/// address out: a listing never fails over a route.
pub(crate) async fn uplinks(lookup: RouteLookup, spec: &v1::RemoteControllerSpec) -> Vec<String> {
    if lookup == RouteLookup::Unavailable {
        return Vec::new();
    }
    let targets = addresses(spec);
    if targets.is_empty() {
        return Vec::new();
    }
    match tokio::task::spawn_blocking(move || resolve(&targets)).await {
        Ok(Ok(names)) => names,
        Ok(Err(e)) => {
            tracing::warn!(error = %e, "route lookup for a remote controller's uplink failed");
            Vec::new()
        }
        Err(e) => {
            tracing::warn!(error = %e, "route lookup task failed");
            Vec::new()
        }
    }
}

/// The kernel's answer for each target, as interface names, each once.
fn resolve(targets: &[IpAddr]) -> Result<Vec<String>, NetlinkError> {
    let mut socket = RouteSocket::open()?;
    let mut indexes = Vec::new();
    for target in targets {
        if let Some(index) = socket.output_interface_to(*target)? {
            if !indexes.contains(&index) {
                indexes.push(index);
            }
        }
    }
    if indexes.is_empty() {
        return Ok(Vec::new());
    }
    let links = socket.links()?;
    Ok(indexes
        .iter()
        .filter_map(|index| links.iter().find(|l| l.ifindex == *index))
        .map(|l| l.ifname.clone())
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(traddr: &str) -> v1::RemoteControllerSpec {
        v1::RemoteControllerSpec {
            traddr: traddr.to_owned(),
            ..Default::default()
        }
    }

    #[tokio::test]
    async fn a_local_target_is_reached_through_lo_on_the_live_system() {
        assert_eq!(uplinks(RouteLookup::Live, &spec("127.0.0.1")).await, ["lo"]);
    }

    #[tokio::test]
    async fn a_fixture_root_names_no_uplink_even_for_a_routable_address() {
        assert!(uplinks(RouteLookup::Unavailable, &spec("127.0.0.1"))
            .await
            .is_empty());
    }

    #[tokio::test]
    async fn two_addresses_behind_one_interface_name_it_once() {
        let mut two = spec("127.0.0.1");
        two.extra_paths.push(v1::NvmePathAddress {
            traddr: "127.0.0.2".to_owned(),
            trsvcid: 4420,
        });
        assert_eq!(uplinks(RouteLookup::Live, &two).await, ["lo"]);
    }

    #[test]
    fn an_unparsable_address_is_left_out() {
        assert!(addresses(&spec("not-an-address")).is_empty());
    }
}
