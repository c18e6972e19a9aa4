//! Filters built with netlink-packet-route's own types, emitted to kernel wire format and
//! parsed back, so every test runs the same decoding as a real dump.

use super::*;
use netlink_packet_core::DefaultNla;
use netlink_packet_route::tc::{TcHandle, TcHeader, TcStatsQueue, TcU32OptionFlags};
use netlink_packet_route::RouteNetlinkMessage;

const ETH_P_IP: u16 = 0x0800;

fn round_trip(message: TcMessage) -> TcMessage {
    match super::super::tests::wire::round_trip(RouteNetlinkMessage::NewTrafficFilter(message)) {
        RouteNetlinkMessage::NewTrafficFilter(m) => m,
        other => panic!("unexpected {other:?}"),
    }
}

fn header(prio: u16, handle: u32) -> TcHeader {
    TcHeader {
        index: 7,
        handle: TcHandle::from(handle),
        parent: TcHandle::from(TcParent::INGRESS_RAW),
        info: u32::from(prio) << 16 | u32::from(ETH_P_IP.to_be()),
        ..TcHeader::default()
    }
}

fn basic(bytes: u64, packets: u32) -> TcStatsBasic {
    let mut b = TcStatsBasic::default();
    b.bytes = bytes;
    b.packets = packets;
    b
}

fn queue(drops: u32, overlimits: u32) -> TcStats2 {
    let mut q = TcStatsQueue::default();
    q.drops = drops;
    q.overlimits = overlimits;
    TcStats2::Queue(q)
}

fn pkt64(packets: u64) -> TcStats2 {
    TcStats2::Other(DefaultNla::new(
        TCA_STATS_PKT64,
        packets.to_ne_bytes().to_vec(),
    ))
}

/// `struct tcf_t` in USER_HZ ticks.
fn tm(kind: u16, install: u64, lastuse: u64, firstuse: u64) -> TcActionOption {
    let mut raw = Vec::new();
    for v in [install, lastuse, 0, firstuse] {
        raw.extend_from_slice(&v.to_ne_bytes());
    }
    TcActionOption::Other(DefaultNla::new(kind, raw))
}

fn action(order: u16, attributes: Vec<TcActionAttribute>) -> TcAction {
    let mut a = TcAction::default();
    a.tab = order;
    a.attributes = attributes;
    a
}

fn flower(prio: u16, handle: u32, options: Vec<TcFilterFlowerOption>) -> TcMessage {
    let mut m = TcMessage::default();
    m.header = header(prio, handle);
    m.attributes = vec![
        TcAttribute::Kind("flower".into()),
        TcAttribute::Chain(0),
        TcAttribute::Options(options.into_iter().map(TcOption::Flower).collect()),
    ];
    round_trip(m)
}

#[test]
fn offloaded_flower_filter_with_hw_stats_and_cookie() {
    let ufid = vec![0xde, 0xad, 0xbe, 0xef, 0, 1, 2, 3];
    let gact = action(
        1,
        vec![
            TcActionAttribute::Kind("gact".into()),
            TcActionAttribute::Options(vec![tm(1, 4200, 0, 4000)]),
            TcActionAttribute::Index(2),
            TcActionAttribute::Stats(vec![
                TcStats2::Basic(basic(1_029_000, 10_500)),
                TcStats2::BasicHw(basic(1_028_916, 10_499)),
                queue(1, 2),
            ]),
            TcActionAttribute::Cookie(ufid.clone()),
        ],
    );
    let m = flower(
        10,
        1,
        vec![
            TcFilterFlowerOption::Flags(TcFilterFlags::IN_HW),
            TcFilterFlowerOption::InHwCount(1),
            TcFilterFlowerOption::Actions(vec![gact]),
        ],
    );
    let f = filter_from_message(&m);
    assert_eq!(
        (f.ifindex, f.parent, f.kind.as_str()),
        (7, TcParent::Ingress, "flower")
    );
    assert_eq!(
        (f.prio, f.protocol, f.handle, f.chain),
        (10, ETH_P_IP, 1, 0)
    );
    let flags = f.flags.expect("flags");
    assert!(flags.in_hw() && !flags.not_in_hw() && !flags.skip_hw() && !flags.skip_sw());
    assert_eq!(f.in_hw_count, Some(1));

    let a = &f.actions[0];
    assert_eq!((a.order, a.kind.as_str(), a.index), (1, "gact", Some(2)));
    assert_eq!(a.cookie.as_deref(), Some(&ufid[..]));
    assert_eq!(a.cookie_hex().as_deref(), Some("deadbeef00010203"));
    let s = a.stats.expect("stats");
    assert_eq!(
        (s.total.bytes, s.total.packets, s.total.packets_width),
        (1_029_000, 10_500, 32)
    );
    let hw = s.hw.expect("hw");
    assert_eq!((hw.bytes, hw.packets), (1_028_916, 10_499));
    assert_eq!((s.software().bytes, s.software().packets), (84, 1));
    assert_eq!((s.drops, s.overlimits), (Some(1), Some(2)));
    let t = a.times.expect("times");
    assert_eq!(t.installed_ago, Duration::from_secs(42));
    assert_eq!(t.last_used_ago, Duration::ZERO);
    assert_eq!(t.first_used_ago, Some(Duration::from_secs(40)));
}

#[test]
fn software_only_flower_filter_is_not_in_hw() {
    let gact = action(
        1,
        vec![
            TcActionAttribute::Kind("gact".into()),
            TcActionAttribute::Options(vec![tm(1, 100, 50, 0)]),
            TcActionAttribute::Stats(vec![
                TcStats2::Basic(basic(420, 5)),
                TcStats2::BasicHw(basic(0, 0)),
                queue(0, 0),
            ]),
        ],
    );
    let m = flower(
        20,
        2,
        vec![
            TcFilterFlowerOption::Flags(TcFilterFlags::SKIP_HW | TcFilterFlags::NOT_IN_HW),
            TcFilterFlowerOption::Actions(vec![gact]),
        ],
    );
    let f = filter_from_message(&m);
    let flags = f.flags.expect("flags");
    assert!(flags.skip_hw() && flags.not_in_hw() && !flags.in_hw());
    assert_eq!(f.in_hw_count, None);
    let s = f.actions[0].stats.expect("stats");
    assert_eq!(s.hw.map(|h| (h.bytes, h.packets)), Some((0, 0)));
    assert_eq!(s.software().packets, 5);
    let t = f.actions[0].times.expect("times");
    assert_eq!(t.first_used_ago, None, "never used");
    assert_eq!(t.last_used_ago, Duration::from_millis(500));
}

#[test]
fn pkt64_widens_the_basic_attribute_before_it() {
    let big = 5_000_000_000_u64;
    let mirred = action(
        2,
        vec![
            TcActionAttribute::Kind("mirred".into()),
            TcActionAttribute::Stats(vec![
                TcStats2::Other(DefaultNla::new(TCA_STATS_PAD, Vec::new())),
                TcStats2::Basic(basic(big * 100, u32::MAX)),
                TcStats2::Other(DefaultNla::new(TCA_STATS_PAD, Vec::new())),
                pkt64(big),
                TcStats2::BasicHw(basic(big * 90, u32::MAX)),
                pkt64(big - 7),
            ]),
        ],
    );
    let m = flower(1, 3, vec![TcFilterFlowerOption::Actions(vec![mirred])]);
    let f = filter_from_message(&m);
    assert_eq!(f.flags, None, "no TCA_FLOWER_FLAGS sent");
    let s = f.actions[0].stats.expect("stats");
    assert_eq!((s.total.packets, s.total.packets_width), (big, 64));
    let hw = s.hw.expect("hw");
    assert_eq!((hw.packets, hw.packets_width), (big - 7, 64));
    assert_eq!((s.drops, s.overlimits), (None, None));
    assert_eq!(f.actions[0].times, None, "no TCA_MIRRED_TM sent");
}

#[test]
fn u32_filters_report_flags_and_actions_and_headers_have_none() {
    let mirred = action(
        1,
        vec![
            TcActionAttribute::Kind("mirred".into()),
            TcActionAttribute::Stats(vec![TcStats2::Basic(basic(840, 10))]),
        ],
    );
    let mut m = TcMessage::default();
    m.header = header(10, 0x800_0800);
    m.attributes = vec![
        TcAttribute::Kind("u32".into()),
        TcAttribute::Options(vec![
            TcOption::U32(TcFilterU32Option::Flags(
                TcU32OptionFlags::SkipHw | TcU32OptionFlags::NotInHw,
            )),
            TcOption::U32(TcFilterU32Option::Action(vec![mirred])),
        ]),
    ];
    let f = filter_from_message(&round_trip(m));
    assert_eq!((f.kind.as_str(), f.handle), ("u32", 0x800_0800));
    assert!(f.flags.is_some_and(|fl| fl.skip_hw() && fl.not_in_hw()));
    assert_eq!(f.actions.len(), 1);
    assert_eq!(
        f.actions[0].stats.map(|s| s.hw),
        Some(None),
        "no BASIC_HW: unknown split"
    );

    let mut head = TcMessage::default();
    head.header = header(10, 0);
    head.attributes = vec![TcAttribute::Kind("u32".into()), TcAttribute::Chain(3)];
    let f = filter_from_message(&round_trip(head));
    assert_eq!((f.handle, f.chain, f.flags), (0, 3, None));
    assert!(f.actions.is_empty());
}

#[test]
fn an_action_without_basic_stats_has_no_stats() {
    let a = action(
        1,
        vec![
            TcActionAttribute::Kind("ct".into()),
            TcActionAttribute::Stats(vec![queue(0, 0)]),
        ],
    );
    let m = flower(1, 1, vec![TcFilterFlowerOption::Actions(vec![a])]);
    assert_eq!(filter_from_message(&m).actions[0].stats, None);
}
