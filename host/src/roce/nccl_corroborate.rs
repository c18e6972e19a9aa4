//! The second witness for an NCCL run: the local RDMA ports' counters around it. NCCL's
//! log can say `NET/IB` while the bytes went through another HCA, or say nothing useful;
//! the RDMA counters (which TCP never moves, reference §1.2) settle it (reference §3.4
//! "diagnosis recipe", step 2).

use dpu_probe::rdma::list_rdma_devices;
use dpu_probe::SysRoot;
use serde::Serialize;

use super::endpoint::Endpoint;
use super::nccl_transport::NcclTransport;
use super::rdma_evidence::{movement, read_port, PortReading};
use crate::accounting::deltas::Movement;

/// Under this many packets the RDMA ports count as still: NVMe-oF keep-alives and
/// connection management move a few.
pub const STILL_PACKETS: u64 = 200;
/// Over this many packets the ports count as having carried a collective (a 1 MiB
/// all-reduce over 20 iterations is thousands of packets at MTU 4096).
pub const MOVED_PACKETS: u64 = 1000;

/// Every local RDMA port's counters, in a stable order.
pub fn snapshot(root: &SysRoot) -> Vec<(String, PortReading)> {
    let Ok(devices) = list_rdma_devices(root) else {
        return Vec::new();
    };
    devices
        .into_iter()
        .flat_map(|d| {
            let ibdev = d.ibdev;
            d.ports.into_iter().map(move |p| (ibdev.clone(), p.port))
        })
        .map(|(ibdev, port)| {
            let ep = Endpoint {
                ibdev: ibdev.clone(),
                port,
                gid_index: 0,
                ipv4: None,
                netdev: None,
            };
            (format!("{ibdev}/{port}"), read_port(root, &ep))
        })
        .collect()
}

/// What the counters say about the transport NCCL reported.
#[derive(Debug, Clone, Serialize)]
pub struct Corroboration {
    /// Packets sent + received per RDMA port during the run (ports without counters
    /// are absent).
    pub ports: Vec<(String, u64)>,
    /// Their sum; None when no port has packet counters.
    pub packets: Option<u64>,
    /// `agrees`, `contradicts`, `unknown`, or `inconclusive` (a port's counters reset,
    /// vanished or appeared during the run: the count is unknown, not zero).
    pub verdict: &'static str,
    /// Why, in words.
    pub reason: String,
}

/// The RDMA ports (`mlx5_0/1`) of the devices NCCL named (`mlx5_0:1/RoCE`,
/// `mlx5_1:1:0/IB` with a rail): the ones a collective over NET/IB used.
pub fn named_ports(ib_devices: &[String]) -> Vec<String> {
    ib_devices
        .iter()
        .filter_map(|d| {
            let device = d.split('/').next()?;
            let mut parts = device.split(':');
            let (ibdev, port) = (parts.next()?, parts.next()?);
            (!ibdev.is_empty() && port.parse::<u32>().is_ok()).then(|| format!("{ibdev}/{port}"))
        })
        .collect()
}

/// Compares two [`snapshot`]s with the transport NCCL reported, counting only the ports
/// of the devices NCCL named (`named`, from [`named_ports`]; every port when it named
/// none). A named port this host does not have makes the count inconclusive: the
/// collective's bytes cannot have been counted.
pub fn corroborate(
    before: &[(String, PortReading)],
    after: &[(String, PortReading)],
    transport: NcclTransport,
    named: &[String],
) -> Corroboration {
    let mut ports: Vec<(String, u64)> = Vec::new();
    let mut broken: Option<String> = None;
    let counted = |name: &String| named.is_empty() || named.contains(name);
    if let Some(missing) = named
        .iter()
        .find(|n| !before.iter().chain(after).any(|(have, _)| have == *n))
    {
        let have: Vec<&str> = before.iter().map(|(n, _)| n.as_str()).collect();
        return Corroboration {
            ports,
            packets: None,
            verdict: "inconclusive",
            reason: format!(
                "NCCL used {missing}, which this host has no counters for (it has: {}): the \
                 collective's packets cannot be counted here",
                if have.is_empty() {
                    "no RDMA port".to_owned()
                } else {
                    have.join(", ")
                }
            ),
        };
    }
    let names = before
        .iter()
        .map(|(n, _)| n)
        .chain(after.iter().map(|(n, _)| n))
        .filter(|n| counted(n));
    let mut seen = std::collections::BTreeSet::new();
    for name in names {
        if !seen.insert(name) {
            continue;
        }
        fn find<'a>(list: &'a [(String, PortReading)], name: &str) -> Option<&'a PortReading> {
            list.iter().find(|(n, _)| n == name).map(|(_, r)| r)
        }
        let moved = match (find(before, name), find(after, name)) {
            (Some(b), Some(a)) => movement(b, a).packets,
            (Some(_), None) => Movement::Inconclusive(format!("{name} vanished during the run")),
            (None, Some(_)) => Movement::Inconclusive(format!("{name} appeared during the run")),
            (None, None) => Movement::Absent,
        };
        match moved {
            Movement::Moved(p) => ports.push((name.clone(), p)),
            Movement::Absent => {}
            Movement::Inconclusive(why) => {
                broken.get_or_insert(why);
            }
        }
    }
    let packets = (!ports.is_empty()).then(|| ports.iter().map(|(_, v)| v).sum::<u64>());
    if let Some(why) = broken {
        return Corroboration {
            ports,
            packets: None,
            verdict: "inconclusive",
            reason: format!("the RDMA counters cannot count this run: {why}"),
        };
    }
    let (verdict, reason) = match (transport, packets) {
        (_, None) => ("unknown", "no local RDMA port has packet counters".to_owned()),
        (NcclTransport::Ib, Some(p)) if p >= MOVED_PACKETS => (
            "agrees",
            format!("NET/IB, and the RDMA ports carried {p} packets"),
        ),
        (NcclTransport::Ib, Some(p)) if p < STILL_PACKETS => (
            "contradicts",
            format!(
                "NCCL says NET/IB but the local RDMA ports moved only {p} packets: the data \
                 went elsewhere (another HCA than the ones counted, intra-node P2P, or not \
                 this host)"
            ),
        ),
        (NcclTransport::Socket, Some(p)) if p < STILL_PACKETS => (
            "agrees",
            format!("NET/Socket, and the RDMA ports stayed still ({p} packets): the collective went over TCP"),
        ),
        (NcclTransport::Socket, Some(p)) if p >= MOVED_PACKETS => (
            "contradicts",
            format!(
                "NCCL says NET/Socket but the RDMA ports moved {p} packets: other RDMA \
                 traffic ran at the same time, so the counters cannot confirm the fallback"
            ),
        ),
        (_, Some(p)) => (
            "unknown",
            format!("{p} RDMA packets: too few to confirm a collective, too many to call the ports still"),
        ),
    };
    Corroboration {
        ports,
        packets,
        verdict,
        reason,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn snap(p: u64) -> Vec<(String, PortReading)> {
        use dpu_probe::snapshot::{Sample, Snapshot, Source, Unit};
        let sample = |name: &'static str, v| {
            Sample::cumulative(
                Source::Rdma,
                "rdmaDevices/mlx5_0/ports/1",
                name,
                v,
                Unit::Packets,
            )
        };
        vec![(
            "mlx5_0/1".to_owned(),
            PortReading {
                snapshot: Snapshot {
                    taken_at: std::time::SystemTime::UNIX_EPOCH,
                    monotonic_start: std::time::Duration::ZERO,
                    monotonic_end: std::time::Duration::ZERO,
                    boot_id: Some("b".to_owned()),
                    samples: vec![
                        sample("port_xmit_packets", p),
                        sample("port_rcv_packets", 0),
                    ],
                    errors: Vec::new(),
                },
                source: super::super::rdma_evidence::CounterSource::Sysfs,
            },
        )]
    }

    #[test]
    fn the_counters_confirm_or_contradict_the_log() {
        assert_eq!(
            corroborate(&snap(10), &snap(50_010), NcclTransport::Ib, &[]).verdict,
            "agrees"
        );
        assert_eq!(
            corroborate(&snap(10), &snap(30), NcclTransport::Ib, &[]).verdict,
            "contradicts"
        );
        assert_eq!(
            corroborate(&snap(10), &snap(30), NcclTransport::Socket, &[]).verdict,
            "agrees"
        );
        assert_eq!(
            corroborate(&snap(10), &snap(90_000), NcclTransport::Socket, &[]).verdict,
            "contradicts"
        );
        assert_eq!(
            corroborate(&snap(0), &snap(500), NcclTransport::Ib, &[]).verdict,
            "unknown"
        );
        assert_eq!(
            corroborate(&[], &[], NcclTransport::Ib, &[]).verdict,
            "unknown"
        );
    }

    #[test]
    fn a_reset_or_vanished_port_is_inconclusive_not_a_still_port() {
        // NET/Socket with a port whose counter reset mid-run: saturating subtraction read
        // 0 packets and "agreed" with the TCP fallback.
        let reset = corroborate(&snap(50_000), &snap(12), NcclTransport::Socket, &[]);
        assert_eq!(reset.verdict, "inconclusive", "{}", reset.reason);
        assert_eq!(reset.packets, None);
        assert!(reset.reason.contains("reset"), "{}", reset.reason);
        let gone = corroborate(&snap(10), &[], NcclTransport::Ib, &[]);
        assert_eq!(gone.verdict, "inconclusive");
        assert!(gone.reason.contains("vanished"), "{}", gone.reason);
    }

    #[test]
    fn only_the_ports_nccl_named_are_counted() {
        // Issue 31 §6: every local port was summed, so another HCA's traffic confirmed a
        // collective NCCL ran elsewhere.
        assert_eq!(
            named_ports(&["mlx5_0:1/RoCE".to_owned(), "mlx5_1:1:0/IB".to_owned()]),
            ["mlx5_0/1", "mlx5_1/1"]
        );
        let named = named_ports(&["mlx5_0:1/RoCE".to_owned()]);
        assert_eq!(
            corroborate(&snap(10), &snap(50_010), NcclTransport::Ib, &named).verdict,
            "agrees"
        );
        // NCCL named a device this host's counters do not have: cannot be counted here.
        let elsewhere = named_ports(&["mlx5_4:1/RoCE".to_owned()]);
        let c = corroborate(&snap(10), &snap(50_010), NcclTransport::Ib, &elsewhere);
        assert_eq!(c.verdict, "inconclusive", "{}", c.reason);
        assert!(
            c.reason.contains("mlx5_4/1") && c.reason.contains("mlx5_0/1"),
            "{}",
            c.reason
        );
    }
}
