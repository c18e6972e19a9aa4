//! The local RDMA port's traffic counters, read before and after each benchmark run: the
//! evidence that a run really went over RDMA (they move by at least the payload) or did
//! not (a TCP run leaves them still). These counters count RDMA traffic only: mlx5's PMA
//! `counters/` are built from the vport's IB/RoCE counters (TCP on the same port does not
//! move them), soft-RoCE's `sent_pkts`/`rcvd_pkts` count only its own packets
//! (reference §1.2 and §4).
//!
//! sysfs first. Where the port's `hw_counters/` are not visible (a soft-RoCE device seen
//! from another network namespace shows no `hw_counters` in sysfs), the same values come
//! from RDMA netlink through iproute2's `rdma -j statistic show link DEV/PORT`.

use std::time::Duration;

use dpu_probe::rdma_counters::{read_device_hw_counters, read_port_counters};
use dpu_probe::snapshot::Unit;
use dpu_probe::SysRoot;

use super::endpoint::Endpoint;
use super::local_run::run_measured;

/// Packet and byte totals (transmitted + received) of one port at one moment.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize)]
pub(crate) struct RdmaTotals {
    /// Packets sent plus received; None when the port has no packet counter.
    pub(crate) packets: Option<u64>,
    /// Bytes sent plus received (PMA data counters × 4); None when absent (soft-RoCE).
    pub(crate) bytes: Option<u64>,
}

/// Where the totals came from, for the report.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum CounterSource {
    /// `/sys/class/infiniband/DEV/ports/N/{counters,hw_counters}`.
    Sysfs,
    /// `rdma -j statistic show link DEV/N` (RDMA netlink).
    RdmaNetlink,
    /// Nothing readable.
    None,
}

const TX_PACKETS: [&str; 2] = ["port_xmit_packets", "sent_pkts"];
const RX_PACKETS: [&str; 2] = ["port_rcv_packets", "rcvd_pkts"];

fn sum_pair(get: impl Fn(&str) -> Option<u64>, tx: &[&str], rx: &[&str]) -> Option<u64> {
    let first = |names: &[&str]| names.iter().find_map(|n| get(n));
    Some(first(tx)?.saturating_add(first(rx)?))
}

/// Reads the totals of `ep` under `root`, falling back to RDMA netlink.
pub(crate) fn read_totals(root: &SysRoot, ep: &Endpoint) -> (RdmaTotals, CounterSource) {
    let mut samples = read_port_counters(root, &ep.ibdev, ep.port).unwrap_or_default();
    samples.extend(read_device_hw_counters(root, &ep.ibdev).unwrap_or_default());
    let get = |name: &str| {
        samples
            .iter()
            .find(|s| s.key.counter == name)
            .map(|s| s.value)
    };
    let bytes = samples
        .iter()
        .filter(|s| {
            s.unit == Unit::Bytes
                && (s.key.counter == "port_xmit_data" || s.key.counter == "port_rcv_data")
        })
        .map(|s| s.value)
        .reduce(u64::saturating_add);
    let totals = RdmaTotals {
        packets: sum_pair(get, &TX_PACKETS, &RX_PACKETS),
        bytes,
    };
    if totals.packets.is_some() {
        return (totals, CounterSource::Sysfs);
    }
    match read_netlink(ep) {
        Some(t) => (t, CounterSource::RdmaNetlink),
        None => (totals, CounterSource::None),
    }
}

/// `rdma -j statistic show link DEV/PORT`: one JSON object per port, counters as keys.
fn read_netlink(ep: &Endpoint) -> Option<RdmaTotals> {
    let link = format!("{}/{}", ep.ibdev, ep.port);
    let run = run_measured(
        "rdma",
        &["-j", "statistic", "show", "link", &link],
        Duration::from_secs(10),
    )
    .ok()
    .filter(|r| r.status_success)?;
    parse_rdma_statistic(&run.stdout)
}

/// Parses `rdma -j statistic show link ...` output.
pub(crate) fn parse_rdma_statistic(json: &str) -> Option<RdmaTotals> {
    let value: serde_json::Value = serde_json::from_str(json).ok()?;
    let port = value.as_array()?.first()?;
    let get = |name: &str| port.get(name).and_then(serde_json::Value::as_u64);
    Some(RdmaTotals {
        packets: sum_pair(get, &TX_PACKETS, &RX_PACKETS),
        bytes: None,
    })
    .filter(|t| t.packets.is_some())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rdma_tool_json_gives_soft_roce_packets() {
        let json = r#"[{"ifindex":1,"ifname":"rxe0","port":1,"sent_pkts":32516,"rcvd_pkts":1016,"duplicate_request":0}]"#;
        assert_eq!(
            parse_rdma_statistic(json),
            Some(RdmaTotals {
                packets: Some(33532),
                bytes: None
            })
        );
        assert_eq!(parse_rdma_statistic(r#"[{"ifname":"x","port":1}]"#), None);
        assert_eq!(parse_rdma_statistic("not json"), None);
    }
}
