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

use dpu_probe::rdma::counters::{
    device_object, port_object, read_device_hw_counters, read_port_counters,
};
use dpu_probe::snapshot::{diff, Collector, Sample, Snapshot, Source, Unit};
use dpu_probe::SysRoot;

use super::endpoint::Endpoint;
use super::local_run::run_measured;
use crate::accounting::deltas::{first_counter, sum, Movement};

/// One port's RDMA counters at one moment, as a probe snapshot, so that before and after
/// go through the one accounting engine ([`crate::accounting::deltas`]).
#[derive(Debug, Clone)]
pub struct PortReading {
    /// The port's counters (and its device's `hw_counters`).
    pub snapshot: Snapshot,
    /// Where they were read.
    pub source: CounterSource,
}

/// What a port's counters did between two readings: packets and bytes, sent plus received.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RdmaMovement {
    /// Packets sent plus received.
    pub packets: Movement,
    /// Bytes sent plus received (the PMA data counters, in bytes); absent on soft-RoCE.
    pub bytes: Movement,
}

impl RdmaMovement {
    /// Why the movement is unknown, when a counter broke between the readings.
    pub fn inconclusive(&self) -> Option<&str> {
        self.packets
            .inconclusive()
            .or_else(|| self.bytes.inconclusive())
    }
}

/// Where the totals came from, for the report.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum CounterSource {
    /// `/sys/class/infiniband/DEV/ports/N/{counters,hw_counters}`.
    Sysfs,
    /// `rdma -j statistic show link DEV/N` (RDMA netlink).
    RdmaNetlink,
    /// Nothing readable.
    None,
}

const TX_PACKETS: [&str; 2] = ["port_xmit_packets", "sent_pkts"];
const RX_PACKETS: [&str; 2] = ["port_rcv_packets", "rcvd_pkts"];
const DATA: [&str; 2] = ["port_xmit_data", "port_rcv_data"];

/// The movement of the port between `before` and `after`.
pub fn movement(before: &PortReading, after: &PortReading) -> RdmaMovement {
    let d = diff(&before.snapshot, &after.snapshot);
    RdmaMovement {
        packets: first_counter(&d, &TX_PACKETS).plus(first_counter(&d, &RX_PACKETS)),
        bytes: sum(&d, |c| {
            c.unit == Unit::Bytes && DATA.contains(&&*c.key.counter)
        }),
    }
}

fn has_packets(snapshot: &Snapshot) -> bool {
    let has = |names: &[&str]| {
        snapshot
            .samples
            .iter()
            .any(|s| names.contains(&&*s.key.counter))
    };
    has(&TX_PACKETS) && has(&RX_PACKETS)
}

/// Reads the counters of `ep` under `root`, falling back to RDMA netlink.
pub fn read_port(root: &SysRoot, ep: &Endpoint) -> PortReading {
    let mut collector = Collector::start(root);
    collector.record(
        Source::Rdma,
        &port_object(&ep.ibdev, ep.port),
        read_port_counters(root, &ep.ibdev, ep.port),
    );
    collector.record(
        Source::RdmaHw,
        &device_object(&ep.ibdev),
        read_device_hw_counters(root, &ep.ibdev),
    );
    let snapshot = collector.finish();
    if has_packets(&snapshot) {
        return PortReading {
            snapshot,
            source: CounterSource::Sysfs,
        };
    }
    let mut collector = Collector::start(root);
    let samples = read_netlink(ep);
    let found = samples.is_some();
    collector.extend(samples.unwrap_or_default());
    let netlink = collector.finish();
    if found {
        PortReading {
            snapshot: netlink,
            source: CounterSource::RdmaNetlink,
        }
    } else {
        PortReading {
            snapshot,
            source: CounterSource::None,
        }
    }
}

/// `rdma -j statistic show link DEV/PORT`: one JSON object per port, counters as keys.
fn read_netlink(ep: &Endpoint) -> Option<Vec<Sample>> {
    let link = format!("{}/{}", ep.ibdev, ep.port);
    let run = run_measured(
        "rdma",
        &["-j", "statistic", "show", "link", &link],
        Duration::from_secs(10),
    )
    .ok()
    .filter(|r| r.status_success)?;
    parse_rdma_statistic(&run.stdout, &port_object(&ep.ibdev, ep.port))
}

/// Parses `rdma -j statistic show link ...` output into the port's packet counters
/// (named as in sysfs, so the same rules read them); None without packet counters.
pub fn parse_rdma_statistic(json: &str, object: &str) -> Option<Vec<Sample>> {
    let value: serde_json::Value = serde_json::from_str(json).ok()?;
    let port = value.as_array()?.first()?.as_object()?;
    let samples: Vec<Sample> = TX_PACKETS
        .iter()
        .chain(RX_PACKETS.iter())
        .filter_map(|name| {
            let v = port.get(*name)?.as_u64()?;
            Some(Sample::cumulative(
                Source::RdmaHw,
                object.to_owned(),
                *name,
                v,
                Unit::Packets,
            ))
        })
        .collect();
    let names: Vec<&str> = samples.iter().map(|s| &*s.key.counter).collect();
    let has = |list: &[&str]| list.iter().any(|n| names.contains(n));
    (has(&TX_PACKETS) && has(&RX_PACKETS)).then_some(samples)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rdma_tool_json_gives_soft_roce_packets() {
        let json = r#"[{"ifindex":1,"ifname":"rxe0","port":1,"sent_pkts":32516,"rcvd_pkts":1016,"duplicate_request":0}]"#;
        let samples = parse_rdma_statistic(json, "rdmaDevices/rxe0/ports/1").expect("samples");
        let total: u64 = samples.iter().map(|s| s.value).sum();
        assert_eq!(total, 33532);
        assert_eq!(
            parse_rdma_statistic(r#"[{"ifname":"x","port":1}]"#, "o"),
            None
        );
        assert_eq!(parse_rdma_statistic("not json", "o"), None);
    }
}
