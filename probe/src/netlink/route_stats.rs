//! [`RouteStats`], the netlink readings a counter snapshot needs, as a trait so that tests
//! and the agent can substitute canned readings for [`RouteSocket`](super::RouteSocket).
//! A leaf of the readers it names rather than part of `netlink/mod.rs`, so that
//! [`LinkNames`](super::LinkNames) and `RouteSocket`, which use it, need not import the
//! module that re-exports them.

use super::error::NetlinkError;
use super::link::LinkStats;
use super::link_events::LinkEvents;
use super::offload::OffloadStats;
use super::stats::LinkCounterReading;
use super::tc::{TcFilter, TcParent};

/// The netlink readings a counter snapshot needs, one kernel round trip (a dump) per
/// call. Synchronous because the snapshot engine is: callers on an async runtime run it
/// in `spawn_blocking`. One trait for every family so a fake can serve a whole snapshot
/// in tests.
///
/// The snapshot engine reads counters with [`link_counters`](Self::link_counters) and
/// names them from a [`LinkNames`](super::LinkNames) map that it refreshes with [`links`](Self::links) only
/// when [`link_events`](Self::link_events) says links changed. A fake needs only the three
/// required methods: the defaults then dump links on every snapshot, which is correct,
/// only slower.
pub trait RouteStats {
    /// Every link of the namespace with its counters, from one `RTM_GETLINK` dump: a
    /// 66-interface BlueField takes one round trip, not 66.
    fn links(&mut self) -> Result<Vec<LinkStats>, NetlinkError>;

    /// Offload xstats of every device, from one `RTM_GETSTATS` dump. Devices without
    /// `CPU_HIT` support are listed with [`OffloadStats::cpu_hit`] `None`, never as an
    /// error for the whole dump.
    fn offload_stats(&mut self) -> Result<Vec<OffloadStats>, NetlinkError>;

    /// The filters (every chain) of one device under one parent, with per-action stats.
    /// A device without that qdisc, or without any filter, answers an empty list.
    fn tc_filters(&mut self, ifindex: u32, parent: TcParent)
        -> Result<Vec<TcFilter>, NetlinkError>;

    /// Every device's `rtnl_link_stats64` and `CPU_HIT` offload xstats, by ifindex: the
    /// counters of a snapshot. [`RouteSocket`](super::RouteSocket) reads them with one `RTM_GETSTATS` dump
    /// (`IFLA_STATS_LINK_64 | IFLA_STATS_LINK_OFFLOAD_XSTATS`), ~15x cheaper than a link
    /// dump, with both families of a device read back to back.
    ///
    /// The default joins [`links`](Self::links) and
    /// [`offload_stats`](Self::offload_stats) on ifindex: the same readings from two
    /// dumps, so the link counters may be the 32-bit legacy ones (`width_bits` says so)
    /// and the two families are not read at the same instant.
    fn link_counters(&mut self) -> Result<Vec<LinkCounterReading>, NetlinkError> {
        let links = self.links()?;
        let offload = self.offload_stats()?;
        Ok(links
            .iter()
            .map(|link| LinkCounterReading {
                ifindex: link.ifindex,
                counters: link.counters,
                cpu_hit: offload
                    .iter()
                    .find(|o| o.ifindex == link.ifindex)
                    .and_then(|o| o.cpu_hit),
            })
            .collect())
    }

    /// Whether links were added, removed, renamed or changed since the previous call,
    /// without blocking: what tells a [`LinkNames`](super::LinkNames) map whether it is still exact.
    /// [`RouteSocket`](super::RouteSocket) watches the `RTNLGRP_LINK` notifications of its namespace with a
    /// second socket; its first call starts the watch and answers
    /// [`LinkEvents::Unknown`].
    ///
    /// The default answers [`LinkEvents::Unknown`] every time: a reader that does not
    /// watch cannot promise that nothing changed, so names are refreshed every snapshot.
    fn link_events(&mut self) -> Result<LinkEvents, NetlinkError> {
        Ok(LinkEvents::Unknown)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::netlink::LinkCounters;

    /// Implements only the required methods, so the defaults are what is tested.
    struct TwoDumps;

    impl RouteStats for TwoDumps {
        fn links(&mut self) -> Result<Vec<LinkStats>, NetlinkError> {
            let link = |ifindex, ifname: &str, rx_packets: Option<u64>| LinkStats {
                ifindex,
                ifname: ifname.to_owned(),
                flags: 0,
                operstate: "up".to_owned(),
                mtu: None,
                phys_port_name: None,
                counters: rx_packets.map(|rx_packets| LinkCounters {
                    width_bits: 32,
                    rx_packets,
                    ..LinkCounters::default()
                }),
            };
            Ok(vec![
                link(1, "lo", Some(4)),
                link(2, "pf0vf0", Some(9)),
                link(3, "bare", None),
            ])
        }

        fn offload_stats(&mut self) -> Result<Vec<OffloadStats>, NetlinkError> {
            let hit = LinkCounters {
                width_bits: 64,
                rx_packets: 2,
                ..LinkCounters::default()
            };
            Ok(vec![
                OffloadStats {
                    ifindex: 2,
                    cpu_hit: Some(hit),
                },
                OffloadStats {
                    ifindex: 1,
                    cpu_hit: None,
                },
            ])
        }

        fn tc_filters(&mut self, _: u32, _: TcParent) -> Result<Vec<TcFilter>, NetlinkError> {
            Ok(Vec::new())
        }
    }

    #[test]
    fn the_default_counters_join_both_dumps_on_ifindex_and_the_default_watch_is_unknown() {
        let readings = TwoDumps.link_counters().expect("readings");
        let summary: Vec<_> = readings
            .iter()
            .map(|r| {
                (
                    r.ifindex,
                    r.counters.map(|c| (c.rx_packets, c.width_bits)),
                    r.cpu_hit.map(|c| c.rx_packets),
                )
            })
            .collect();
        assert_eq!(
            summary,
            [
                (1, Some((4, 32)), None),
                (2, Some((9, 32)), Some(2)),
                (3, None, None)
            ]
        );
        assert_eq!(
            TwoDumps.link_events().expect("default"),
            LinkEvents::Unknown
        );
    }
}
