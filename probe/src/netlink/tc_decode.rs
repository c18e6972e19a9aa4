//! Decoding `RTM_NEWTFILTER` answers into [`TcFilter`]s, including what
//! netlink-packet-route leaves raw: `TCA_STATS_PKT64` (which belongs to the `BASIC` or
//! `BASIC_HW` attribute before it, as in iproute2 `parse_packets64` and OVS
//! `nl_parse_action_stats`) and the per-kind `tcf_t` times.

use std::time::Duration;

use netlink_packet_core::{Nla, NLA_TYPE_MASK};
use netlink_packet_route::tc::{
    TcAction, TcActionAttribute, TcActionOption, TcAttribute, TcFilterBpfOption,
    TcFilterFlowerOption, TcFilterMatchAllOption, TcFilterU32Option, TcMessage, TcOption, TcStats2,
    TcStatsBasic,
};

use super::tc::{
    TcActionStats, TcActionTimes, TcCounts, TcFilter, TcFilterAction, TcFilterFlags, TcParent,
};

/// `TCA_STATS_PAD`: alignment filler between 64-bit attributes.
const TCA_STATS_PAD: u16 = 6;
/// `TCA_STATS_PKT64`: the 64-bit packet count of the preceding basic attribute.
const TCA_STATS_PKT64: u16 = 8;
/// `USER_HZ`: the unit of `tcf_t` (`jiffies_to_clock_t`); 100 on every Linux ABI this
/// agent runs on (x86_64, aarch64).
const USER_HZ: u64 = 100;

/// Decodes one filter message.
pub(crate) fn filter_from_message(message: &TcMessage) -> TcFilter {
    let header = &message.header;
    let mut filter = TcFilter {
        ifindex: u32::try_from(header.index).unwrap_or_default(),
        parent: TcParent::from_raw(u32::from(header.parent)),
        kind: String::new(),
        prio: (header.info >> 16) as u16,
        protocol: u16::from_be((header.info & 0xffff) as u16),
        handle: u32::from(header.handle),
        chain: 0,
        flags: None,
        in_hw_count: None,
        actions: Vec::new(),
    };
    for attribute in &message.attributes {
        match attribute {
            TcAttribute::Kind(kind) => filter.kind.clone_from(kind),
            TcAttribute::Chain(chain) => filter.chain = *chain,
            TcAttribute::Options(options) => {
                for option in options {
                    apply_option(&mut filter, option);
                }
            }
            _ => {}
        }
    }
    filter
}

/// Takes flags, hardware count and actions from the classifiers that have them.
fn apply_option(filter: &mut TcFilter, option: &TcOption) {
    let flags = |bits: u32| Some(TcFilterFlags { bits });
    match option {
        TcOption::Flower(TcFilterFlowerOption::Flags(bits)) => filter.flags = flags(*bits),
        TcOption::Flower(TcFilterFlowerOption::InHwCount(n)) => filter.in_hw_count = Some(*n),
        TcOption::Flower(TcFilterFlowerOption::Actions(actions))
        | TcOption::U32(TcFilterU32Option::Action(actions))
        | TcOption::MatchAll(TcFilterMatchAllOption::Action(actions)) => {
            filter.actions.extend(actions.iter().map(action_from));
        }
        TcOption::U32(TcFilterU32Option::Flags(bits))
        | TcOption::Bpf(TcFilterBpfOption::FlagsGeneric(bits)) => {
            filter.flags = flags(bits.bits());
        }
        TcOption::MatchAll(TcFilterMatchAllOption::Flags(bits)) => filter.flags = flags(*bits),
        _ => {}
    }
}

fn action_from(action: &TcAction) -> TcFilterAction {
    let kind = action
        .attributes
        .iter()
        .find_map(|a| match a {
            TcActionAttribute::Kind(kind) => Some(kind.clone()),
            _ => None,
        })
        .unwrap_or_default();
    let mut out = TcFilterAction {
        order: action.tab,
        kind,
        index: None,
        cookie: None,
        in_hw_count: None,
        stats: None,
        times: None,
    };
    for attribute in &action.attributes {
        match attribute {
            TcActionAttribute::Index(index) => out.index = Some(*index),
            TcActionAttribute::Cookie(cookie) => out.cookie = Some(cookie.clone()),
            TcActionAttribute::InHwCount(n) => out.in_hw_count = Some(*n),
            TcActionAttribute::Stats(stats) => out.stats = action_stats(stats),
            TcActionAttribute::Options(options) => out.times = action_times(&out.kind, options),
            _ => {}
        }
    }
    out
}

/// Which counter a following `TCA_STATS_PKT64` widens.
#[derive(Clone, Copy)]
enum Slot {
    Basic,
    Hw,
}

fn action_stats(stats: &[TcStats2]) -> Option<TcActionStats> {
    let counts = |b: &TcStatsBasic| TcCounts {
        bytes: b.bytes,
        packets: u64::from(b.packets),
        packets_width: 32,
    };
    let (mut total, mut hw, mut queue) = (None, None, None);
    let mut last = None;
    for stat in stats {
        match stat {
            TcStats2::Basic(b) => {
                total = Some(counts(b));
                last = Some(Slot::Basic);
            }
            TcStats2::BasicHw(b) => {
                hw = Some(counts(b));
                last = Some(Slot::Hw);
            }
            TcStats2::Queue(q) => {
                queue = Some((q.drops, q.overlimits));
                last = None;
            }
            TcStats2::Other(nla) if nla.kind() & NLA_TYPE_MASK == TCA_STATS_PAD => {}
            TcStats2::Other(nla) if nla.kind() & NLA_TYPE_MASK == TCA_STATS_PKT64 => {
                let target = match last {
                    Some(Slot::Basic) => total.as_mut(),
                    Some(Slot::Hw) => hw.as_mut(),
                    None => None,
                };
                match (target, read_u64(nla)) {
                    (Some(counts), Some(packets)) => {
                        counts.packets = packets;
                        counts.packets_width = 64;
                    }
                    _ => tracing::debug!("TCA_STATS_PKT64 without a preceding basic stats"),
                }
                last = None;
            }
            _ => last = None,
        }
    }
    Some(TcActionStats {
        total: total?,
        hw,
        drops: queue.map(|(drops, _)| drops),
        overlimits: queue.map(|(_, overlimits)| overlimits),
    })
}

/// The `*_TM` attribute number inside `TCA_ACT_OPTIONS`, per action kind (the uapi
/// `tc_act/tc_*.h` enums). Unknown kinds report no times rather than a guess.
fn tm_attribute(kind: &str) -> Option<u16> {
    match kind {
        "gact" | "mirred" | "pedit" | "vlan" | "tunnel_key" | "skbedit" | "sample" | "mpls" => {
            Some(1)
        }
        "nat" | "csum" | "ct" => Some(2),
        "police" => Some(6),
        _ => None,
    }
}

fn action_times(kind: &str, options: &[TcActionOption]) -> Option<TcActionTimes> {
    let tm = tm_attribute(kind)?;
    let option = options
        .iter()
        .find(|o| o.kind() & NLA_TYPE_MASK == tm && o.value_len() == 32)?;
    let mut raw = [0u8; 32];
    option.emit_value(&mut raw);
    let field = |i: usize| {
        let mut word = [0u8; 8];
        word.copy_from_slice(&raw[i * 8..i * 8 + 8]);
        u64::from_ne_bytes(word)
    };
    // struct tcf_t { install, lastuse, expires, firstuse }
    let ticks = |t: u64| Duration::from_millis(t.saturating_mul(1000 / USER_HZ));
    let first = field(3);
    Some(TcActionTimes {
        installed_ago: ticks(field(0)),
        last_used_ago: ticks(field(1)),
        first_used_ago: (first != 0).then(|| ticks(first)),
    })
}

fn read_u64(nla: &impl Nla) -> Option<u64> {
    if nla.value_len() != 8 {
        return None;
    }
    let mut raw = [0u8; 8];
    nla.emit_value(&mut raw);
    Some(u64::from_ne_bytes(raw))
}

#[cfg(test)]
mod tests;
