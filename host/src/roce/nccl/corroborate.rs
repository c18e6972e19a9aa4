//! The second witness for an NCCL run: the local RDMA ports' counters around it. NCCL's
//! log can say `NET/IB` while the bytes went through another HCA, or say nothing useful;
//! the RDMA counters (which TCP never moves, reference §1.2) settle it (reference §3.4
//! "diagnosis recipe", step 2).

use dpu_probe::rdma::list_rdma_devices;
use dpu_probe::SysRoot;
use serde::Serialize;

use super::super::endpoint::Endpoint;
use super::super::rdma_evidence::{movement, read_port, PortReading};
use super::transport::NcclTransport;
use super::NcclResults;
use crate::accounting::deltas::Movement;

/// Under this many packets the RDMA ports count as still: NVMe-oF keep-alives and
/// connection management move a few.
pub const STILL_PACKETS: u64 = 200;
/// Over this many packets the ports count as having carried a collective (a 1 MiB
/// all-reduce over 20 iterations is thousands of packets at MTU 4096), whatever its size:
/// below it, background traffic could be all there was.
pub const MOVED_PACKETS: u64 = 1000;
/// The largest payload one RoCE/InfiniBand packet carries (the 4096-byte IB MTU): no
/// collective moves its bytes in fewer packets than bytes / this.
pub const MAX_PAYLOAD_BYTES: u64 = 4096;

/// What nccl-tests' own numbers say this host's ports must at least have carried: the
/// threshold for "agrees" grows with the run, so a 16 GiB all-reduce is not confirmed by
/// the few thousand packets a 1 MiB one needs (issue 31: fixed thresholds confirmed any
/// run that moved 1,000 packets).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct CollectiveFloor {
    /// One rank's bus bytes over the timed collectives ([`NcclResults::bus_bytes`]).
    pub bus_bytes: u64,
    /// The fewest packets this host's ports carry for them: half the bus bytes (a node's
    /// network link carries at least one rank's share of a ring or tree collective; half
    /// leaves room for the algorithm NCCL chose) at the largest payload a packet holds.
    pub packets: u64,
}

impl CollectiveFloor {
    /// The floor of a parsed nccl-tests table.
    pub fn of(results: &NcclResults) -> Self {
        let bus_bytes = results.bus_bytes();
        Self {
            bus_bytes,
            packets: bus_bytes / 2 / MAX_PAYLOAD_BYTES,
        }
    }
}

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
    /// What the nccl-tests table says the ports must at least have carried; None for a
    /// log without the table (the fixed thresholds alone then judge).
    pub floor: Option<CollectiveFloor>,
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
/// collective's bytes cannot have been counted. With the run's `floor`, NET/IB agrees
/// only when the ports carried at least that many packets (and [`MOVED_PACKETS`]), and
/// contradicts when they carried fewer.
pub fn corroborate(
    before: &[(String, PortReading)],
    after: &[(String, PortReading)],
    transport: NcclTransport,
    named: &[String],
    floor: Option<CollectiveFloor>,
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
            floor,
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
            floor,
            verdict: "inconclusive",
            reason: format!("the RDMA counters cannot count this run: {why}"),
        };
    }
    let needed = floor.map_or(0, |f| f.packets);
    let (verdict, reason) = match (transport, packets) {
        (_, None) => ("unknown", "no local RDMA port has packet counters".to_owned()),
        (NcclTransport::Ib, Some(p)) if p >= MOVED_PACKETS.max(needed) => (
            "agrees",
            match floor {
                Some(f) => format!(
                    "NET/IB, and the RDMA ports carried {p} packets, at least the {} that \
                     nccl-tests' {} bus bytes need",
                    f.packets, f.bus_bytes
                ),
                None => format!("NET/IB, and the RDMA ports carried {p} packets"),
            },
        ),
        (NcclTransport::Ib, Some(p)) if p >= STILL_PACKETS && p < needed => (
            "contradicts",
            format!(
                "NCCL says NET/IB and nccl-tests moved {} bus bytes, which need at least {} \
                 packets on these ports, but they carried only {p}: most of the collective \
                 went elsewhere (another HCA than the ones counted, intra-node P2P, or not \
                 this host)",
                floor.map_or(0, |f| f.bus_bytes),
                needed
            ),
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
            format!(
                "{p} RDMA packets: too few to confirm a collective, too many to call the \
                 ports still{}",
                match floor {
                    Some(f) if f.packets < MOVED_PACKETS => format!(
                        " (the run's {} bus bytes are too few to tell from background: \
                         larger sizes, e.g. -e 128M, or more iterations settle it)",
                        f.bus_bytes
                    ),
                    _ => String::new(),
                }
            ),
        ),
    };
    Corroboration {
        ports,
        packets,
        floor,
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
                    read: dpu_probe::snapshot::ReadReport::default(),
                },
                source: super::super::super::rdma_evidence::CounterSource::Sysfs,
            },
        )]
    }

    #[test]
    fn the_counters_confirm_or_contradict_the_log() {
        assert_eq!(
            corroborate(&snap(10), &snap(50_010), NcclTransport::Ib, &[], None).verdict,
            "agrees"
        );
        assert_eq!(
            corroborate(&snap(10), &snap(30), NcclTransport::Ib, &[], None).verdict,
            "contradicts"
        );
        assert_eq!(
            corroborate(&snap(10), &snap(30), NcclTransport::Socket, &[], None).verdict,
            "agrees"
        );
        assert_eq!(
            corroborate(&snap(10), &snap(90_000), NcclTransport::Socket, &[], None).verdict,
            "contradicts"
        );
        assert_eq!(
            corroborate(&snap(0), &snap(500), NcclTransport::Ib, &[], None).verdict,
            "unknown"
        );
        assert_eq!(
            corroborate(&[], &[], NcclTransport::Ib, &[], None).verdict,
            "unknown"
        );
    }

    #[test]
    fn the_threshold_grows_with_what_nccl_tests_moved() {
        // Issue 31: a 16 GiB all-reduce "agreed" with NET/IB on the 50,000 packets of
        // some other traffic, because the threshold was 1,000 packets whatever the run.
        let big = CollectiveFloor {
            bus_bytes: 16 << 30,
            packets: (16 << 30) / 2 / MAX_PAYLOAD_BYTES,
        };
        let c = corroborate(&snap(10), &snap(50_010), NcclTransport::Ib, &[], Some(big));
        assert_eq!(c.verdict, "contradicts", "{}", c.reason);
        assert!(
            c.reason.contains("2097152") && c.reason.contains("only 50000"),
            "{}",
            c.reason
        );
        // The negative control: the same run whose packets did go through these ports.
        let c = corroborate(
            &snap(10),
            &snap(2_100_010),
            NcclTransport::Ib,
            &[],
            Some(big),
        );
        assert_eq!(c.verdict, "agrees", "{}", c.reason);
        // A run too small to tell from background stays unknown above the still line,
        // saying how to settle it; its floor never lowers the fixed one.
        let tiny = CollectiveFloor {
            bus_bytes: 1 << 20,
            packets: 128,
        };
        let c = corroborate(&snap(0), &snap(500), NcclTransport::Ib, &[], Some(tiny));
        assert_eq!(c.verdict, "unknown", "{}", c.reason);
        assert!(c.reason.contains("-e 128M"), "{}", c.reason);
        assert_eq!(
            corroborate(&snap(0), &snap(1_000), NcclTransport::Ib, &[], Some(tiny)).verdict,
            "agrees"
        );
        // NET/Socket is judged on stillness alone.
        assert_eq!(
            corroborate(&snap(0), &snap(30), NcclTransport::Socket, &[], Some(big)).verdict,
            "agrees"
        );
    }

    #[test]
    fn the_floor_comes_from_the_table_and_its_iterations() {
        use crate::roce::nccl::parse_results;
        let results =
            parse_results(crate::roce::nccl::tests::ALL_REDUCE_CURRENT).expect("the sample parses");
        assert_eq!((results.iters, results.agg_iters), (Some(20), None));
        // 134217728 B: 46.70 GB/s x 2874.1 us + 46.76 x 2870.3 (the 8 B row is 0.00 GB/s),
        // 20 times.
        let per = (46.70 * 2874.1 + 46.76 * 2870.3) * 1e3;
        let floor = CollectiveFloor::of(&results);
        assert_eq!(floor.bus_bytes, (per * 20.0) as u64);
        assert_eq!(floor.packets, floor.bus_bytes / 2 / 4096);
        let header = "# nThread 1 nGpus 8 minBytes 8 maxBytes 8589934592 step: 2(factor) \
                      warmup iters: 5 iters: 50 agg iters: 4 validation: 1 graph: 0\n";
        let with_agg = parse_results(&format!(
            "{header}{}",
            crate::roce::nccl::tests::ALL_REDUCE_OLD
        ))
        .expect("parses");
        assert_eq!((with_agg.iters, with_agg.agg_iters), (Some(50), Some(4)));
        let one = (3.19 * 493.2 + 3.21 * 489.1) * 1e3;
        assert_eq!(with_agg.bus_bytes(), (one * 200.0) as u64);
        // No header: each row counted once, still a floor.
        let bare = parse_results(crate::roce::nccl::tests::ALL_REDUCE_OLD).expect("parses");
        assert_eq!(bare.bus_bytes(), one as u64);
    }

    #[test]
    fn a_reset_or_vanished_port_is_inconclusive_not_a_still_port() {
        // NET/Socket with a port whose counter reset mid-run: saturating subtraction read
        // 0 packets and "agreed" with the TCP fallback.
        let reset = corroborate(&snap(50_000), &snap(12), NcclTransport::Socket, &[], None);
        assert_eq!(reset.verdict, "inconclusive", "{}", reset.reason);
        assert_eq!(reset.packets, None);
        assert!(reset.reason.contains("reset"), "{}", reset.reason);
        let gone = corroborate(&snap(10), &[], NcclTransport::Ib, &[], None);
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
            corroborate(&snap(10), &snap(50_010), NcclTransport::Ib, &named, None).verdict,
            "agrees"
        );
        // NCCL named a device this host's counters do not have: cannot be counted here.
        let elsewhere = named_ports(&["mlx5_4:1/RoCE".to_owned()]);
        let c = corroborate(
            &snap(10),
            &snap(50_010),
            NcclTransport::Ib,
            &elsewhere,
            None,
        );
        assert_eq!(c.verdict, "inconclusive", "{}", c.reason);
        assert!(
            c.reason.contains("mlx5_4/1") && c.reason.contains("mlx5_0/1"),
            "{}",
            c.reason
        );
    }
}
