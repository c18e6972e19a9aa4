//! Datapath flows and the tc filters that hold offloaded ones as `dpu.v1` messages, and
//! every flow's traffic placed by forwarding level. Pure functions, so every mapping is
//! unit-tested without a daemon; what `Switch.ListFlows` answers and `/metrics` sums.

use std::collections::{BTreeMap, HashMap};

use dpu_ovs::flow::{ByLevel, DatapathFlow, DpLayer, FlowForwarding, Offloaded, TcShares, Used};
use dpu_probe::netlink::{TcFilter, TcFilterAction};
use dpu_proto::pbjson_types::Duration;
use dpu_proto::v1;

/// One datapath flow. Key and actions are printed back exactly as OVS wrote them; fields
/// the parser does not model go to `extra_fields`.
pub(crate) fn flow_to_wire(flow: &DatapathFlow<'_>) -> v1::Flow {
    let join = |items: Vec<String>| items.join(",");
    v1::Flow {
        ufid: flow.ufid.map(|u| u.to_string()).unwrap_or_default(),
        r#match: join(flow.key.iter().map(ToString::to_string).collect()),
        in_port: flow.in_port().map(|p| p.to_string()).unwrap_or_default(),
        packets: flow.packets,
        bytes: flow.bytes,
        used: used_to_wire(flow.used),
        tcp_flags: flow.flags.as_deref().unwrap_or_default().to_owned(),
        offloaded: offload_status(flow.offloaded) as i32,
        dp_layer: flow
            .dp
            .as_ref()
            .map(DpLayer::as_str)
            .unwrap_or_default()
            .to_owned(),
        actions: join(flow.actions.iter().map(ToString::to_string).collect()),
        dp_extra_info: flow.dp_extra_info.as_deref().unwrap_or_default().to_owned(),
        extra_fields: flow
            .extra
            .iter()
            .map(|x| (x.name.to_string(), x.value.to_string()))
            .collect(),
        tc_filters: Vec::new(),
        // Placed once the tc filters are joined (`place_by_level`).
        packets_by_level: None,
        bytes_by_level: None,
    }
}

/// `used:`; a negative age (clock rounding in tc) reads as "just now".
fn used_to_wire(used: Used) -> Option<Duration> {
    match used {
        Used::Never => None,
        Used::Millis(ms) => {
            let ms = ms.max(0);
            Some(Duration {
                seconds: ms / 1000,
                // Below 1000 ms * 1e6 < i32::MAX.
                nanos: i32::try_from((ms % 1000) * 1_000_000).unwrap_or(0),
            })
        }
    }
}

fn offload_status(offloaded: Offloaded) -> v1::OffloadStatus {
    match offloaded {
        Offloaded::Yes => v1::OffloadStatus::Offloaded,
        Offloaded::Partial => v1::OffloadStatus::Partial,
        Offloaded::No => v1::OffloadStatus::NotOffloaded,
        Offloaded::Unknown => v1::OffloadStatus::Unspecified,
    }
}

fn offloaded_of(status: i32) -> Offloaded {
    match v1::OffloadStatus::try_from(status) {
        Ok(v1::OffloadStatus::Offloaded) => Offloaded::Yes,
        Ok(v1::OffloadStatus::Partial) => Offloaded::Partial,
        Ok(v1::OffloadStatus::NotOffloaded) => Offloaded::No,
        _ => Offloaded::Unknown,
    }
}

/// What the forwarding-level rule needs of a wire flow.
pub(crate) fn forwarding_of(flow: &v1::Flow) -> FlowForwarding<'_> {
    FlowForwarding {
        layer: (!flow.dp_layer.is_empty()).then(|| DpLayer::parse(&flow.dp_layer)),
        offloaded: offloaded_of(flow.offloaded),
    }
}

fn by_level_to_wire(by: ByLevel) -> v1::TrafficByLevel {
    v1::TrafficByLevel {
        hardware: by.hardware,
        tc_software: by.tc_software,
        datapath: by.datapath,
        unattributed: by.unattributed,
    }
}

/// Places every flow's packets and bytes by the one forwarding-level rule
/// (`dpu_ovs::flow::FlowForwarding`), from its joined tc filters' hardware statistics:
/// call after [`join_tc_filters`].
pub(crate) fn place_by_level(flows: &mut [v1::Flow]) {
    for flow in flows {
        let first_actions: Vec<Option<&v1::TcAction>> = flow
            .tc_filters
            .iter()
            .map(|f| {
                f.actions
                    .iter()
                    .min_by_key(|a| a.order)
                    .filter(|a| a.hw_stats)
            })
            .collect();
        let shares = |of: fn(&v1::TcAction) -> (u64, u64)| {
            TcShares::of_filters(first_actions.iter().map(|a| a.map(of)))
        };
        let packets = shares(|a| (a.hw_packets, a.sw_packets));
        let bytes = shares(|a| (a.hw_bytes, a.sw_bytes));
        let rule = forwarding_of(flow);
        let (packets, bytes) = (
            rule.place(flow.packets, packets),
            rule.place(flow.bytes, bytes),
        );
        flow.packets_by_level = Some(by_level_to_wire(packets));
        flow.bytes_by_level = Some(by_level_to_wire(bytes));
    }
}

/// A tc action cookie read as an OVS ufid: OVS copies the 16-byte `ovs_u128` into the
/// cookie, four u32 words in host order, and prints it with `UUID_FMT` over those words
/// (ovs-netlink.md §1.2). The agent runs on the machine that wrote it, so native order.
pub(crate) fn cookie_ufid(cookie: &[u8]) -> Option<String> {
    let bytes: [u8; 16] = cookie.try_into().ok()?;
    let word = |i: usize| {
        let mut w = [0u8; 4];
        w.copy_from_slice(&bytes[i * 4..i * 4 + 4]);
        u32::from_ne_bytes(w)
    };
    let (a, b, c, d) = (word(0), word(1), word(2), word(3));
    Some(format!(
        "{a:08x}-{:04x}-{:04x}-{:04x}-{:04x}{d:08x}",
        b >> 16,
        b & 0xffff,
        c >> 16,
        c & 0xffff
    ))
}

/// True for a real filter; a dump also lists a per-priority header entry (handle 0, no
/// actions) before a classifier's filters.
pub(crate) fn is_real_filter(filter: &TcFilter) -> bool {
    filter.handle != 0 || !filter.actions.is_empty()
}

/// A tc filter with its per-action counters split into software and hardware.
pub(crate) fn tc_filter_to_wire(netdev: &str, filter: &TcFilter) -> v1::TcFilter {
    let flags = filter.flags.unwrap_or_default();
    let cookie = filter.actions.iter().find_map(|a| a.cookie.as_deref());
    v1::TcFilter {
        netdev: netdev.to_owned(),
        chain: filter.chain,
        priority: u32::from(filter.prio),
        handle: filter.handle,
        skip_hw: flags.skip_hw(),
        skip_sw: flags.skip_sw(),
        in_hw: flags.in_hw(),
        not_in_hw: flags.not_in_hw(),
        in_hw_count: filter.in_hw_count.unwrap_or(0),
        cookie: cookie.map(hex).unwrap_or_default(),
        ufid: cookie.and_then(cookie_ufid).unwrap_or_default(),
        actions: filter.actions.iter().map(action_to_wire).collect(),
    }
}

fn action_to_wire(action: &TcFilterAction) -> v1::TcAction {
    let stats = action.stats;
    let total = stats.map(|s| s.total).unwrap_or_default();
    let hw = stats.and_then(|s| s.hw).unwrap_or_default();
    let sw = stats.map(|s| s.software()).unwrap_or_default();
    v1::TcAction {
        order: u32::from(action.order),
        kind: action.kind.clone(),
        packets: total.packets,
        bytes: total.bytes,
        hw_packets: hw.packets,
        hw_bytes: hw.bytes,
        sw_packets: sw.packets,
        sw_bytes: sw.bytes,
        drops: stats.and_then(|s| s.drops).map_or(0, u64::from),
        hw_stats: stats.is_some_and(|s| s.hw.is_some()),
        installed_sec: action.times.map_or(0, |t| t.installed_ago.as_secs()),
        last_used_sec: action.times.map_or(0, |t| t.last_used_ago.as_secs()),
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Attaches to each flow the tc filters whose cookie is its ufid.
pub(crate) fn join_tc_filters(flows: &mut [v1::Flow], filters: Vec<v1::TcFilter>) {
    let mut by_ufid: HashMap<String, Vec<v1::TcFilter>> = HashMap::new();
    for filter in filters.into_iter().filter(|f| !f.ufid.is_empty()) {
        by_ufid.entry(filter.ufid.clone()).or_default().push(filter);
    }
    for flow in flows.iter_mut().filter(|f| !f.ufid.is_empty()) {
        if let Some(found) = by_ufid.get(&flow.ufid) {
            flow.tc_filters.clone_from(found);
        }
    }
}

/// The netdevs whose tc filters can hold these flows: the in_port of every `dp:tc` flow
/// with a ufid, once each.
pub(crate) fn tc_ports(flows: &[v1::Flow]) -> Vec<String> {
    let ports: BTreeMap<&str, ()> = flows
        .iter()
        .filter(|f| f.dp_layer == "tc" && !f.ufid.is_empty() && !f.in_port.is_empty())
        .map(|f| (f.in_port.as_str(), ()))
        .collect();
    ports.into_keys().map(str::to_owned).collect()
}

#[cfg(test)]
mod tests;
