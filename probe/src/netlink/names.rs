//! Interface names for stats answers, without a link dump per snapshot.
//!
//! `RTM_NEWSTATS` answers carry an ifindex, not a name, and the name map comes from a link
//! dump, the slow one (~500 µs on 66 links). [`LinkNames`] keeps the map between snapshots
//! and rebuilds it only when it may be wrong: when link notifications arrived
//! ([`RouteStats::link_events`]), when nobody could watch, or when a stats dump answered
//! for an ifindex the map does not hold. The decisions are pure functions
//! ([`LinkNames::stale_before_dump`], [`LinkNames::stale_after_dump`]) so they are tested
//! without a kernel.

use std::collections::HashMap;

use super::error::NetlinkError;
use super::link::LinkStats;
use super::link_events::LinkEvents;
use super::route_stats::RouteStats;
use super::stats::LinkCounterReading;

/// The ifindex → interface name map of one namespace, kept across snapshots and refreshed
/// from [`RouteStats::links`] only when it may be stale.
///
/// Use: [`prepare`](Self::prepare) before the counters dump, [`confirm`](Self::confirm)
/// after it, then [`name`](Self::name). The map is exact for a dump that `prepare` and
/// `confirm` bracket: a link change in between shows up as a notification (or as an
/// ifindex the map lacks) at `confirm`, which refreshes the map; the counters themselves
/// stay those of the dump.
#[derive(Debug, Default)]
pub struct LinkNames {
    names: HashMap<u32, String>,
    /// Whether `names` reflects every notification drained so far.
    valid: bool,
    /// How many link dumps refreshed the map: what the tests and benchmarks check.
    refreshes: u64,
}

impl LinkNames {
    /// An empty map, refreshed on first use.
    pub fn new() -> Self {
        Self::default()
    }

    /// Whether the map must be refreshed before the counters dump: always, unless it was
    /// filled before and the watch reports nothing since.
    pub fn stale_before_dump(&self, events: LinkEvents) -> bool {
        !self.valid || events != LinkEvents::Quiet
    }

    /// Whether the map must be refreshed after the counters dump: when notifications
    /// arrived during it, or it answered for an ifindex the map lacks (a link created
    /// between the refresh and the dump). [`LinkEvents::Unknown`] alone does not count
    /// here: a reader that cannot watch was just refreshed by
    /// [`stale_before_dump`](Self::stale_before_dump).
    pub fn stale_after_dump(&self, events: LinkEvents, readings: &[LinkCounterReading]) -> bool {
        !self.valid
            || matches!(events, LinkEvents::Changed | LinkEvents::Overflowed)
            || readings
                .iter()
                .any(|r| !self.names.contains_key(&r.ifindex))
    }

    /// Replaces the map with the links of a dump.
    pub fn replace(&mut self, links: &[LinkStats]) {
        self.names.clear();
        self.names
            .extend(links.iter().map(|link| (link.ifindex, link.ifname.clone())));
        self.valid = true;
        self.refreshes += 1;
    }

    /// Forgets that the map is current (a new socket, a failed refresh): the next
    /// [`prepare`](Self::prepare) refreshes it whatever the watch says.
    pub fn invalidate(&mut self) {
        self.valid = false;
    }

    /// Reads link events and refreshes the map if it may be stale: the step before a
    /// counters dump, so the dump itself is not delayed by a link dump.
    pub fn prepare<S: RouteStats + ?Sized>(&mut self, stats: &mut S) -> Result<(), NetlinkError> {
        let events = stats.link_events()?;
        if self.stale_before_dump(events) {
            self.refresh(stats)?;
        }
        Ok(())
    }

    /// Reads link events again after a counters dump and refreshes the map if a link
    /// changed meanwhile or the dump named an unknown ifindex.
    pub fn confirm<S: RouteStats + ?Sized>(
        &mut self,
        stats: &mut S,
        readings: &[LinkCounterReading],
    ) -> Result<(), NetlinkError> {
        let events = stats.link_events()?;
        if self.stale_after_dump(events, readings) {
            self.refresh(stats)?;
        }
        Ok(())
    }

    fn refresh<S: RouteStats + ?Sized>(&mut self, stats: &mut S) -> Result<(), NetlinkError> {
        // Whatever was drained is only accounted for once the dump succeeds.
        self.valid = false;
        let links = stats.links()?;
        self.replace(&links);
        Ok(())
    }

    /// The name of a link, when the map has it.
    pub fn name(&self, ifindex: u32) -> Option<&str> {
        self.names.get(&ifindex).map(String::as_str)
    }

    /// The ifindex of a link by name, when the map has it.
    pub fn ifindex(&self, ifname: &str) -> Option<u32> {
        self.names
            .iter()
            .find_map(|(index, name)| (name == ifname).then_some(*index))
    }

    /// How many links the map holds.
    pub fn len(&self) -> usize {
        self.names.len()
    }

    /// Whether the map holds no link (never filled, or an empty namespace).
    pub fn is_empty(&self) -> bool {
        self.names.is_empty()
    }

    /// How many times the map was rebuilt from a link dump: lets tests and benchmarks
    /// prove that quiet snapshots do not dump links.
    pub fn refreshes(&self) -> u64 {
        self.refreshes
    }
}

#[cfg(test)]
mod tests {
    use std::collections::VecDeque;

    use super::*;
    use crate::netlink::{OffloadStats, TcFilter, TcParent};

    fn link(ifindex: u32, ifname: &str) -> LinkStats {
        LinkStats {
            ifindex,
            ifname: ifname.to_owned(),
            flags: 0,
            operstate: "up".to_owned(),
            mtu: None,
            phys_port_name: None,
            counters: None,
        }
    }

    fn reading(ifindex: u32) -> LinkCounterReading {
        LinkCounterReading {
            ifindex,
            counters: None,
            cpu_hit: None,
        }
    }

    /// A namespace whose link set and watch answers the test scripts.
    #[derive(Default)]
    struct Fake {
        links: Vec<LinkStats>,
        events: VecDeque<LinkEvents>,
        link_dumps: u32,
        fail_links: bool,
    }

    impl RouteStats for Fake {
        fn links(&mut self) -> Result<Vec<LinkStats>, NetlinkError> {
            self.link_dumps += 1;
            if self.fail_links {
                return Err(NetlinkError::DumpInterrupted {
                    request: "RTM_GETLINK dump".to_owned(),
                    attempts: 3,
                });
            }
            Ok(self.links.clone())
        }

        fn offload_stats(&mut self) -> Result<Vec<OffloadStats>, NetlinkError> {
            Ok(Vec::new())
        }

        fn tc_filters(&mut self, _: u32, _: TcParent) -> Result<Vec<TcFilter>, NetlinkError> {
            Ok(Vec::new())
        }

        fn link_events(&mut self) -> Result<LinkEvents, NetlinkError> {
            Ok(self.events.pop_front().unwrap_or(LinkEvents::Quiet))
        }
    }

    #[test]
    fn decisions_before_the_dump() {
        let mut names = LinkNames::new();
        for events in [
            LinkEvents::Quiet,
            LinkEvents::Changed,
            LinkEvents::Overflowed,
            LinkEvents::Unknown,
        ] {
            assert!(names.stale_before_dump(events), "never filled: {events:?}");
        }
        names.replace(&[link(1, "lo")]);
        assert!(!names.stale_before_dump(LinkEvents::Quiet));
        assert!(names.stale_before_dump(LinkEvents::Changed));
        assert!(names.stale_before_dump(LinkEvents::Overflowed));
        assert!(names.stale_before_dump(LinkEvents::Unknown));
        names.invalidate();
        assert!(names.stale_before_dump(LinkEvents::Quiet));
    }

    #[test]
    fn decisions_after_the_dump() {
        let mut names = LinkNames::new();
        names.replace(&[link(1, "lo"), link(2, "p0")]);
        let known = [reading(1), reading(2)];
        assert!(!names.stale_after_dump(LinkEvents::Quiet, &known));
        assert!(
            !names.stale_after_dump(LinkEvents::Unknown, &known),
            "a reader without a watch was refreshed just before"
        );
        assert!(names.stale_after_dump(LinkEvents::Changed, &known));
        assert!(names.stale_after_dump(LinkEvents::Overflowed, &known));
        assert!(
            names.stale_after_dump(LinkEvents::Quiet, &[reading(1), reading(3)]),
            "ifindex 3 is not in the map"
        );
        assert!(
            !names.stale_after_dump(LinkEvents::Quiet, &[reading(2)]),
            "a link missing from the dump (deleted) needs no name"
        );
    }

    #[test]
    fn quiet_snapshots_dump_links_once_and_changes_refresh() {
        let mut fake = Fake {
            links: vec![link(1, "lo"), link(2, "p0")],
            events: [LinkEvents::Unknown].into(),
            ..Fake::default()
        };
        let mut names = LinkNames::new();
        let dump = [reading(1), reading(2)];
        for _ in 0..5 {
            names.prepare(&mut fake).expect("prepare");
            names.confirm(&mut fake, &dump).expect("confirm");
        }
        assert_eq!((fake.link_dumps, names.refreshes()), (1, 1));
        assert_eq!(names.name(2), Some("p0"));
        assert_eq!(names.ifindex("p0"), Some(2));
        assert_eq!(names.len(), 2);

        // A rename announced before the snapshot.
        fake.links[1].ifname = "uplink".to_owned();
        fake.events.push_back(LinkEvents::Changed);
        names.prepare(&mut fake).expect("prepare");
        names.confirm(&mut fake, &dump).expect("confirm");
        assert_eq!(fake.link_dumps, 2);
        assert_eq!((names.name(2), names.ifindex("p0")), (Some("uplink"), None));

        // A link created between the refresh and the dump: the dump names it.
        fake.links.push(link(3, "pf0vf0"));
        names.prepare(&mut fake).expect("prepare");
        names
            .confirm(&mut fake, &[reading(1), reading(2), reading(3)])
            .expect("confirm");
        assert_eq!(fake.link_dumps, 3);
        assert_eq!(names.name(3), Some("pf0vf0"));

        // A change announced during the dump.
        fake.links.pop();
        fake.events
            .extend([LinkEvents::Quiet, LinkEvents::Overflowed]);
        names.prepare(&mut fake).expect("prepare");
        names.confirm(&mut fake, &dump).expect("confirm");
        assert_eq!(fake.link_dumps, 4);
        assert_eq!(names.name(3), None, "deleted");
    }

    #[test]
    fn a_reader_without_a_watch_refreshes_once_per_snapshot() {
        /// Implements only what the trait requires: `link_events` is the default.
        struct Unwatched(u32);
        impl RouteStats for Unwatched {
            fn links(&mut self) -> Result<Vec<LinkStats>, NetlinkError> {
                self.0 += 1;
                Ok(vec![link(1, "lo")])
            }
            fn offload_stats(&mut self) -> Result<Vec<OffloadStats>, NetlinkError> {
                Ok(Vec::new())
            }
            fn tc_filters(&mut self, _: u32, _: TcParent) -> Result<Vec<TcFilter>, NetlinkError> {
                Ok(Vec::new())
            }
        }
        let mut fake = Unwatched(0);
        assert_eq!(fake.link_events().expect("default"), LinkEvents::Unknown);
        let mut names = LinkNames::new();
        for _ in 0..3 {
            names.prepare(&mut fake).expect("prepare");
            names.confirm(&mut fake, &[reading(1)]).expect("confirm");
        }
        assert_eq!(fake.0, 3);
    }

    #[test]
    fn a_failed_refresh_leaves_the_map_stale_until_one_succeeds() {
        let mut fake = Fake {
            links: vec![link(1, "lo")],
            ..Fake::default()
        };
        let mut names = LinkNames::new();
        names.prepare(&mut fake).expect("first fill");
        fake.fail_links = true;
        fake.events.push_back(LinkEvents::Changed);
        names.prepare(&mut fake).expect_err("dump fails");
        // The notification was consumed, but the map still counts as stale.
        assert!(names.stale_before_dump(LinkEvents::Quiet));
        fake.fail_links = false;
        fake.links.push(link(2, "p0"));
        names.prepare(&mut fake).expect("refreshed");
        assert_eq!(names.name(2), Some("p0"));
    }
}
